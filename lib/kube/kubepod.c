/* The Pods of a Node; see kubepod.h. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "kube.h"
#include "kubepod.h"

void kube_pod_refs_free(struct kube_pod_ref *refs, size_t n)
{
	for (size_t i = 0; refs && i < n; i++) {
		free(refs[i].ns);
		free(refs[i].name);
	}
	free(refs);
}

/* The string member key of obj (an object or NULL): NULL when absent, not a
 * string, or null. */
static const char *string_of(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool is_object_or_absent(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return !v || cJSON_IsNull(v) || cJSON_IsObject(v);
}

int kube_pod_list_on_node(const char *data, size_t len, const char *node, struct kube_pod_ref **ret, size_t *n,
			  const char **err)
{
	*ret = NULL;
	*n = 0;
	_cleanup_(cJSON_Deletep) cJSON *j = jsonx_parse(data, len);
	if (!cJSON_IsObject(j))
		return jsonx_fail(err, "not a JSON object", -EINVAL);
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
	/* The stand-in may omit kind; a different one is not a PodList. */
	if (kind && !(cJSON_IsString(kind) && strcmp(kind->valuestring, "PodList") == 0))
		return jsonx_fail(err, "kind", -EINVAL);
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(j, "items");
	if (items && !cJSON_IsNull(items) && !cJSON_IsArray(items))
		return jsonx_fail(err, "items", -EINVAL);
	size_t total = (size_t)cJSON_GetArraySize(items), k = 0;
	struct kube_pod_ref *refs = NULL;
	const cJSON *it;
	int r = 0;
	cJSON_ArrayForEach(it, items)
	{
		if (!cJSON_IsObject(it) || !is_object_or_absent(it, "metadata") || !is_object_or_absent(it, "spec")) {
			r = jsonx_fail(err, "items[]", -EINVAL);
			break;
		}
		const cJSON *meta = cJSON_GetObjectItemCaseSensitive(it, "metadata");
		const cJSON *spec = cJSON_GetObjectItemCaseSensitive(it, "spec");
		const char *bound = string_of(spec, "nodeName");
		if (!bound || strcmp(bound, node) != 0)
			continue;
		const char *ns = string_of(meta, "namespace"), *name = string_of(meta, "name");
		if (!ns || strlen(ns) > KUBE_NAMESPACE_MAX || !kube_name_is_valid(ns) || strchr(ns, '.')) {
			r = jsonx_fail(err, "items[].metadata.namespace", ns && strlen(ns) > KUBE_NAMESPACE_MAX ? -EMSGSIZE : -EINVAL);
			break;
		}
		if (!name || strlen(name) > KUBE_NAME_MAX || !kube_name_is_valid(name)) {
			r = jsonx_fail(err, "items[].metadata.name", name && strlen(name) > KUBE_NAME_MAX ? -EMSGSIZE : -EINVAL);
			break;
		}
		if (k >= KUBE_POD_LIST_MAX) {
			r = jsonx_fail(err, "items (too many Pods)", -E2BIG);
			break;
		}
		if (!refs && !(refs = calloc(total < KUBE_POD_LIST_MAX ? total : KUBE_POD_LIST_MAX, sizeof(*refs)))) {
			r = -ENOMEM;
			break;
		}
		refs[k].ns = strdup(ns);
		refs[k].name = strdup(name);
		k++;
		if (!refs[k - 1].ns || !refs[k - 1].name) {
			r = -ENOMEM;
			break;
		}
	}
	if (r < 0) {
		kube_pod_refs_free(refs, k);
		return r;
	}
	*ret = refs;
	*n = k;
	return 0;
}

int kube_pod_list_query(const char *node, char *buf, size_t len)
{
	if (!node || !kube_name_is_valid(node))
		return -EINVAL;
	int w = snprintf(buf, len, "fieldSelector=spec.nodeName%%3D%s", node);
	return w < 0 || (size_t)w >= len ? -ENOBUFS : 0;
}

int kube_pod_path(const char *ns, const char *name, char *buf, size_t len)
{
	if (!ns || !name || !kube_name_is_valid(ns) || !kube_name_is_valid(name))
		return -EINVAL;
	int w = snprintf(buf, len, "/api/v1/namespaces/%s/pods/%s", ns, name);
	return w < 0 || (size_t)w >= len ? -ENOBUFS : 0;
}
