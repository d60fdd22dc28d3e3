/* The kubelet's bootstrap kubeconfig, as gardener-node-agent's
 * KubeletBootstrapKubeconfig bootstrapper writes it (gardener/gardener
 * pkg/nodeagent/bootstrappers/kubelet_bootstrap_kubeconfig.go) and its OSC
 * reconciler removes it (pkg/nodeagent/controller/operatingsystemconfig/
 * reconciler.go, "node registered"): node-agent names the server, the CA
 * file and the bootstrap token file in desired.json (kubeletBootstrap);
 * cloud-config-exec, as root, writes /var/lib/kubelet/kubeconfig-bootstrap
 * (0600, user kubelet-bootstrap) before the units step starts the kubelet,
 * only while the token exists and neither /var/lib/kubelet/kubeconfig-real
 * nor /var/lib/kubelet/pki/kubelet-client-current.pem does; once node-agent
 * reports the Node registered, it removes the kubeconfig and the token. */
#ifndef CCE_KUBELET_H
#define CCE_KUBELET_H

#include <stddef.h>

#include "desired.h"

#define KUBELET_BOOTSTRAP_KUBECONFIG "/var/lib/kubelet/kubeconfig-bootstrap"

/* Checks a bootstrap token file's content ("<6>.<16>" of [a-z0-9], trailing
 * whitespace dropped; bootstrap.kubernetes.io token format). Pure. On
 * success *ret is a new string. -EINVAL otherwise (the user data's
 * "<<BOOTSTRAP_TOKEN>>" placeholder included). */
int kubelet_token_parse(const char *data, size_t len, char **ret);

/* The kubeconfig text (pure); server and ca_file are written as quoted
 * YAML strings and must not contain quotes, backslashes or control
 * characters (desired_parse() guarantees it). */
int kubelet_bootstrap_render(const char *server, const char *ca_file, const char *token, char **ret);

/* The step: writes or removes below rootfd as described above. Returns 1
 * when something was written or removed, 0 when nothing was to do, -errno
 * when writing failed (logged). */
int kubelet_bootstrap_apply(int rootfd, const struct desired *d);

#endif
