/* The containerd step: the OSC's criConfig as containerd's config.toml and
 * certs.d/<upstream>/hosts.toml (lib/node/criconfig.h renders them), as
 * gardener-node-agent's ReconcileContainerdConfig and
 * ReconcileContainerdRegistries do (Gardener
 * pkg/nodeagent/controller/operatingsystemconfig/containerd.go). */
#ifndef CCE_CONTAINERD_H
#define CCE_CONTAINERD_H

#include <stdbool.h>

#include "osc.h"

#define CONTAINERD_BIN "/usr/bin/containerd"
#define CONTAINERD_UNIT "containerd.service"
#define CONTAINERD_VERSION_TIMEOUT_MS 10000

/* Nothing when new has no criConfig. Otherwise asks containerd_bin
 * ("containerd --version", a child with a deadline, see child.h) which
 * configuration version it reads, writes CRI_CONFIG_FILE and one hosts.toml
 * per registry below rootfd (atomically, 0644, only when the bytes differ;
 * conf.d and certs.d created 0755) and removes the hosts.toml of registries
 * old had and new has not. *ret_restart: containerd must be restarted,
 * because config.toml was written or because the two models' config.toml
 * differ (so a re-run after a crash between the write and the restart
 * still restarts it); never for hosts.toml alone (containerd reads it at
 * each pull; GNA's changes.go) nor on a reconcile that changes nothing
 * (Gardener #11120). Plugins
 * (criConfig.containerd.plugins) are not supported: everything else is
 * written, then the step fails naming them. On failure returns -errno and
 * *ret_error (free()) says why in one line; logs each file written and
 * each error. */
int containerd_apply(int rootfd, const char *containerd_bin, const struct osc *old, const struct osc *new,
		     bool *ret_restart, char **ret_error);

#endif
