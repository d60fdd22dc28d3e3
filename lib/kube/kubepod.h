/* The Pods of a Node, for in-place updates (agent/podsweep.h): the answer
 * to a list of Pods by field selector spec.nodeName, as gardener-node-agent
 * reads it before it deletes the Pods remaining on its Node (gardener/
 * gardener pkg/nodeagent/controller/operatingsystemconfig/reconciler.go
 * deleteRemainingPods). */
#ifndef NA_KUBE_KUBEPOD_H
#define NA_KUBE_KUBEPOD_H

#include <stddef.h>

/* At most this many Pods in one list (the kubelet's maxPods is 110 by
 * default; Gardener allows a few hundred). More is refused (-E2BIG), not
 * cut short: a partial sweep would label the node as if it were done. */
#define KUBE_POD_LIST_MAX 4096u
/* A namespace is a DNS-1123 label. */
#define KUBE_NAMESPACE_MAX 63u

struct kube_pod_ref {
	char *ns;
	char *name;
};

/* A PodList answering GET /api/v1/pods?fieldSelector=spec.nodeName=<node>:
 * the namespace and name of each item whose spec.nodeName is node, into a
 * new array *ret of *n entries (NULL and 0 for none). Items bound elsewhere
 * (a server ignoring the selector) are skipped: they are never ours to
 * delete. Returns 0, -EINVAL/-EMSGSIZE for anything that is not a PodList
 * or an item of ours without a valid namespace or name (err names the
 * field), -E2BIG beyond KUBE_POD_LIST_MAX items of ours, -ENOMEM. Pure. */
int kube_pod_list_on_node(const char *data, size_t len, const char *node, struct kube_pod_ref **ret, size_t *n,
			  const char **err);

void kube_pod_refs_free(struct kube_pod_ref *refs, size_t n);

/* The query of that list for node (a valid Node name, kube_name_is_valid())
 * into buf: "fieldSelector=spec.nodeName%3D<node>". -EINVAL for an invalid
 * name, -ENOBUFS when buf is too small. */
int kube_pod_list_query(const char *node, char *buf, size_t len);

/* The path of a Pod, "/api/v1/namespaces/<ns>/pods/<name>", into buf; both
 * must be valid names (-EINVAL), -ENOBUFS when buf is too small. */
int kube_pod_path(const char *ns, const char *name, char *buf, size_t len);

#endif
