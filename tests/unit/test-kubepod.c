/* Unit tests for lib/kube/kubepod.c: the Pods of a Node from a PodList (the
 * answer to a list by field selector spec.nodeName), items of other Nodes
 * skipped, bad lists refused naming the field; the query and a Pod's path. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubepod.h"

static int parse(const char *s, struct kube_pod_ref **p, size_t *n, const char **err)
{
	return kube_pod_list_on_node(s, strlen(s), "node-1", p, n, err);
}

static void list(void **state)
{
	struct kube_pod_ref *p;
	size_t n;
	const char *err = NULL;
	/* As the real API server answers (trimmed): two of ours, one of
	 * another Node (a server ignoring the selector), one unscheduled. */
	const char *ok = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"77\"},"
			 "\"items\":[{\"metadata\":{\"name\":\"calico-node-x2b9k\",\"namespace\":\"kube-system\","
			 "\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":\"calico-node\"}]},"
			 "\"spec\":{\"nodeName\":\"node-1\"},\"status\":{\"phase\":\"Running\"}},"
			 "{\"metadata\":{\"name\":\"web-0\",\"namespace\":\"shop\"},\"spec\":{\"nodeName\":\"node-2\"}},"
			 "{\"metadata\":{\"name\":\"pending\",\"namespace\":\"shop\"},\"spec\":{}},"
			 "{\"metadata\":{\"name\":\"kube-proxy-node-1\",\"namespace\":\"kube-system\"},"
			 "\"spec\":{\"nodeName\":\"node-1\"}}]}";
	assert_int_equal(parse(ok, &p, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(p[0].ns, "kube-system");
	assert_string_equal(p[0].name, "calico-node-x2b9k");
	assert_string_equal(p[1].name, "kube-proxy-node-1");
	kube_pod_refs_free(p, n);
	/* None: an empty list, null items, no items. */
	assert_int_equal(parse("{\"kind\":\"PodList\",\"items\":[]}", &p, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_null(p);
	assert_int_equal(parse("{\"kind\":\"PodList\",\"items\":null}", &p, &n, &err), 0);
	assert_int_equal(parse("{\"items\":[]}  \n", &p, &n, &err), 0);
	/* Not a PodList. */
	assert_int_equal(parse("{\"kind\":\"NodeList\",\"items\":[]}", &p, &n, &err), -EINVAL);
	assert_string_equal(err, "kind");
	assert_int_equal(parse("{\"kind\":\"PodList\",\"items\":{}}", &p, &n, &err), -EINVAL);
	assert_string_equal(err, "items");
	assert_int_equal(parse("[]", &p, &n, &err), -EINVAL);
	assert_int_equal(parse("{\"kind\":\"PodList\"} x", &p, &n, &err), -EINVAL);
	assert_int_equal(parse("{\"kind\":\"PodList\",\"items\":[1]}", &p, &n, &err), -EINVAL);
	assert_string_equal(err, "items[]");
	assert_int_equal(parse("{\"items\":[{\"metadata\":[],\"spec\":{\"nodeName\":\"node-1\"}}]}", &p, &n, &err),
			 -EINVAL);
	/* An item of ours without a usable name or namespace: the whole list
	 * is refused (nothing deleted, nothing labelled). */
	assert_int_equal(parse("{\"items\":[{\"metadata\":{\"name\":\"a\"},\"spec\":{\"nodeName\":\"node-1\"}}]}", &p,
			       &n, &err),
			 -EINVAL);
	assert_string_equal(err, "items[].metadata.namespace");
	assert_int_equal(parse("{\"items\":[{\"metadata\":{\"name\":\"a/../b\",\"namespace\":\"x\"},"
			       "\"spec\":{\"nodeName\":\"node-1\"}}]}",
			       &p, &n, &err),
			 -EINVAL);
	assert_string_equal(err, "items[].metadata.name");
	assert_int_equal(parse("{\"items\":[{\"metadata\":{\"name\":\"a\",\"namespace\":\"a.b\"},"
			       "\"spec\":{\"nodeName\":\"node-1\"}}]}",
			       &p, &n, &err),
			 -EINVAL);
	char big[512];
	snprintf(big, sizeof(big),
		 "{\"items\":[{\"metadata\":{\"name\":\"a\",\"namespace\":\"%064d\"},\"spec\":{\"nodeName\":\"node-1\"}}]}",
		 0);
	assert_int_equal(parse(big, &p, &n, &err), -EMSGSIZE);
	/* An invalid item of another Node does not matter. */
	assert_int_equal(parse("{\"items\":[{\"metadata\":{\"name\":\"A B\"},\"spec\":{\"nodeName\":\"node-2\"}}]}", &p,
			       &n, &err),
			 0);
	assert_int_equal(n, 0);
}

static void too_many(void **state)
{
	size_t cap = (KUBE_POD_LIST_MAX + 1) * 80 + 64, off = 0;
	char *s = malloc(cap);
	assert_non_null(s);
	off += (size_t)snprintf(s + off, cap - off, "{\"items\":[");
	for (unsigned i = 0; i <= KUBE_POD_LIST_MAX; i++)
		off += (size_t)snprintf(s + off, cap - off,
					"%s{\"metadata\":{\"name\":\"p%u\",\"namespace\":\"n\"},\"spec\":{\"nodeName\":\"node-1\"}}",
					i ? "," : "", i);
	snprintf(s + off, cap - off, "]}");
	struct kube_pod_ref *p;
	size_t n;
	assert_int_equal(parse(s, &p, &n, NULL), -E2BIG);
	free(s);
}

static void query_and_path(void **state)
{
	char buf[128];
	assert_int_equal(kube_pod_list_query("node-1", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fieldSelector=spec.nodeName%3Dnode-1");
	assert_int_equal(kube_pod_list_query("Node 1", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(kube_pod_list_query(NULL, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(kube_pod_list_query("node-1", buf, 10), -ENOBUFS);
	/* The longest Node name fits the 320 bytes agent/podsweep.c gives it. */
	char node[254], q[320];
	memset(node, 'n', 253);
	node[253] = '\0';
	node[63] = node[127] = node[191] = '.';
	assert_int_equal(kube_pod_list_query(node, q, sizeof(q)), 0);
	assert_int_equal(strlen(q), strlen("fieldSelector=spec.nodeName%3D") + 253);
	assert_int_equal(kube_pod_path("kube-system", "calico-node-x", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/api/v1/namespaces/kube-system/pods/calico-node-x");
	assert_int_equal(kube_pod_path("kube-system", "../x", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(kube_pod_path("a", "b", buf, 8), -ENOBUFS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(list),
		cmocka_unit_test(too_many),
		cmocka_unit_test(query_and_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
