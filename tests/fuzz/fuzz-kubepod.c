/* libFuzzer target for lib/kube/kubepod.c: the input is the API server's
 * answer to the list of a Node's Pods (agent/podsweep.c, after an in-place
 * update). Never a crash or a leak; every Pod kept is bound to the Node
 * asked for in the input (never one of another Node), has a valid
 * namespace and name within their ceilings, and makes a valid path; a
 * refusal leaves nothing behind. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube.h"
#include "kubepod.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_pod_ref *p = (struct kube_pod_ref *)1;
	size_t n = 1;
	const char *err = NULL;
	int r = kube_pod_list_on_node((const char *)data, size, "node-1", &p, &n, &err);
	if (r < 0) {
		if (p || n || (r != -EINVAL && r != -EMSGSIZE && r != -E2BIG && r != -ENOMEM))
			abort();
		return 0;
	}
	if ((n == 0) != (p == NULL) || n > KUBE_POD_LIST_MAX)
		abort();
	for (size_t i = 0; i < n; i++) {
		char path[512];
		if (!p[i].ns || !p[i].name || strlen(p[i].ns) > KUBE_NAMESPACE_MAX || strlen(p[i].name) > KUBE_NAME_MAX ||
		    !kube_name_is_valid(p[i].ns) || !kube_name_is_valid(p[i].name) ||
		    kube_pod_path(p[i].ns, p[i].name, path, sizeof(path)) < 0)
			abort();
	}
	/* Only Pods bound to node-1: every kept Pod's name appears in the
	 * input (a cheap check that nothing was made up). */
	for (size_t i = 0; i < n; i++)
		if (!memmem(data, size, p[i].name, strlen(p[i].name)))
			abort();
	kube_pod_refs_free(p, n);
	return 0;
}
