/* Unit tests for agent/annotate.c without a network: what the Node patch
 * carries (the checksum annotation and version label only once applied,
 * the stock labels, the host keys; nothing the Node already shows), the
 * record of the Node the patch is computed against, and when no patch is
 * started (one in flight, a backoff running, nothing missing). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "kube.h"
#include "log.h"
#include "../../agent/annotate.h"

static char node_name[] = "node-a";
static char *name_slot = node_name;
static struct annotate_want asked;
static unsigned wants;

static void want(void *userdata, struct annotate_want *w)
{
	*w = asked;
	wants++;
}

static void done(void *userdata, uint64_t now, bool contact, const char *error)
{
	fail(); /* no request is ever started here */
}

static const struct annotate_ops ops = { .want = want, .done = done };

static const char *value_of(const struct kube_patch_entry *e, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(e[i].key, key) == 0)
			return e[i].value;
	return NULL;
}

static void entries(void **state)
{
	struct annotate n = {};
	struct kube_patch_entry ann[ANNOTATE_ANN_MAX], lab[ANNOTATE_LAB_MAX];
	size_t n_ann, n_lab;
	annotate_init(&n, &name_slot, false, &ops, NULL);
	struct annotate_want w = {
		.applied = false,
		.checksum = "c1",
		.k8s_version = "1.31.1",
		.worker_role = true,
		.zone = "eu-1a",
		.host_keys = "ssh-ed25519 AAAA",
	};
	/* Not applied yet: only the labels and keys that do not depend on it. */
	annotate_entries(&n, &w, ann, &n_ann, lab, &n_lab);
	assert_int_equal(n_ann, 1);
	assert_string_equal(value_of(ann, n_ann, KUBE_ANN_SSH_HOST_KEYS), "ssh-ed25519 AAAA");
	assert_int_equal(n_lab, 2);
	assert_string_equal(value_of(lab, n_lab, KUBE_LABEL_WORKER_ROLE), "");
	assert_string_equal(value_of(lab, n_lab, KUBE_LABEL_ZONE), "eu-1a");

	/* Applied: the checksum and the version too. */
	w.applied = true;
	annotate_entries(&n, &w, ann, &n_ann, lab, &n_lab);
	assert_int_equal(n_ann, 2);
	assert_string_equal(value_of(ann, n_ann, KUBE_ANN_NODE_CHECKSUM), "c1");
	assert_int_equal(n_lab, 3);
	assert_string_equal(value_of(lab, n_lab, KUBE_LABEL_K8S_VERSION), "1.31.1");

	/* The Node shows all of it: nothing to patch. */
	struct kube_node k = {
		.resource_version = (char[]){ "42" },
		.applied_checksum = (char[]){ "c1" },
		.kubernetes_version = (char[]){ "1.31.1" },
		.worker_role = (char[]){ "" },
		.zone = (char[]){ "eu-1a" },
		.ssh_host_keys = (char[]){ "ssh-ed25519 AAAA" },
	};
	assert_int_equal(annotate_record(&n, &k), 0);
	assert_string_equal(n.rv, "42");
	annotate_entries(&n, &w, ann, &n_ann, lab, &n_lab);
	assert_int_equal(n_ann, 0);
	assert_int_equal(n_lab, 0);

	/* Another zone, keys gone from the host, no stock data: the zone
	 * only (a key annotation is never removed, a role never set). */
	w.zone = "eu-1b";
	w.host_keys = NULL;
	w.worker_role = false;
	k.worker_role = NULL;
	assert_int_equal(annotate_record(&n, &k), 0);
	assert_null(n.worker_role);
	annotate_entries(&n, &w, ann, &n_ann, lab, &n_lab);
	assert_int_equal(n_ann, 0);
	assert_int_equal(n_lab, 1);
	assert_string_equal(value_of(lab, n_lab, KUBE_LABEL_ZONE), "eu-1b");

	/* No version known: no version label. */
	w.zone = "eu-1a";
	w.k8s_version = NULL;
	k.kubernetes_version = NULL;
	assert_int_equal(annotate_record(&n, &k), 0);
	annotate_entries(&n, &w, ann, &n_ann, lab, &n_lab);
	assert_int_equal(n_ann + n_lab, 0);
	annotate_done(&n);
	assert_null(n.rv);
	assert_null(n.applied_checksum);
}

/* The in-place update's label and annotations (nodeupdate.h): set when
 * they differ, removed only when the Node has them, nothing when it shows
 * what is wanted. */
static void in_place(void **state)
{
	struct annotate n = {};
	struct kube_patch_entry ann[ANNOTATE_ANN_MAX], lab[ANNOTATE_LAB_MAX];
	size_t n_ann, n_lab;
	annotate_init(&n, &name_slot, false, &ops, NULL);
	struct annotate_want w = { .checksum = "c1", .updating_os = "1877.3" };
	annotate_entries(&n, &w, ann, &n_ann, lab, &n_lab);
	assert_int_equal(n_ann, 1);
	assert_int_equal(n_lab, 0);
	assert_string_equal(value_of(ann, n_ann, KUBE_ANN_UPDATING_OS_VERSION), "1877.3");

	/* Failed: the label and the reason. */
	w = (struct annotate_want){ .checksum = "c1", .update_result = "failed", .failed_reason = "rolled back" };
	annotate_entries(&n, &w, ann, &n_ann, lab, &n_lab);
	assert_int_equal(n_ann, 1);
	assert_int_equal(n_lab, 1);
	assert_string_equal(value_of(lab, n_lab, KUBE_LABEL_UPDATE_RESULT), "failed");
	assert_string_equal(value_of(ann, n_ann, KUBE_ANN_UPDATE_FAILED_REASON), "rolled back");
	struct kube_node k = {
		.resource_version = (char[]){ "9" },
		.update_result = (char[]){ "failed" },
		.update_failed_reason = (char[]){ "rolled back" },
		.updating_os_version = (char[]){ "1877.3" },
	};
	assert_int_equal(annotate_record(&n, &k), 0);
	annotate_entries(&n, &w, ann, &n_ann, lab, &n_lab);
	assert_int_equal(n_ann + n_lab, 0);

	/* Successful: the label, both annotations removed (value NULL). */
	w = (struct annotate_want){ .checksum = "c1", .update_result = "successful", .failed_reason_remove = true,
				    .updating_os_remove = true };
	annotate_entries(&n, &w, ann, &n_ann, lab, &n_lab);
	assert_int_equal(n_lab, 1);
	assert_string_equal(value_of(lab, n_lab, KUBE_LABEL_UPDATE_RESULT), "successful");
	assert_int_equal(n_ann, 2);
	assert_null(value_of(ann, n_ann, KUBE_ANN_UPDATE_FAILED_REASON));
	assert_null(value_of(ann, n_ann, KUBE_ANN_UPDATING_OS_VERSION));
	assert_true(strcmp(ann[0].key, KUBE_ANN_UPDATE_FAILED_REASON) == 0 ||
		    strcmp(ann[1].key, KUBE_ANN_UPDATE_FAILED_REASON) == 0);
	k = (struct kube_node){ .resource_version = (char[]){ "10" }, .update_result = (char[]){ "successful" } };
	assert_int_equal(annotate_record(&n, &k), 0);
	annotate_entries(&n, &w, ann, &n_ann, lab, &n_lab);
	assert_int_equal(n_ann + n_lab, 0);
	annotate_done(&n);
	assert_null(n.update_result);
}

/* Nothing is started, and no client is touched (http is NULL), while a
 * patch is in flight, during a backoff, or when the Node shows everything,
 * a done restart request included when the Node carries none. */
static void nothing_due(void **state)
{
	struct annotate n = {};
	struct annotate_want w = { .applied = true, .checksum = "c1", .restart_done = true, .restart_invalid = true };
	struct kube_node k = { .resource_version = (char[]){ "7" }, .applied_checksum = (char[]){ "c1" } };
	annotate_init(&n, &name_slot, true, &ops, NULL);
	assert_int_equal(annotate_record(&n, &k), 0);
	assert_int_equal(annotate_start(&n, NULL, &w, 1000), 0);

	/* Something missing, but not yet due or already in flight. */
	w.checksum = "c2";
	n.wake_at = 5000;
	assert_int_equal(annotate_start(&n, NULL, &w, 4999), 0);
	n.wake_at = 0;
	n.req = (struct http_request *)&n; /* never dereferenced: in flight */
	assert_int_equal(annotate_start(&n, NULL, &w, 4999), 0);
	n.req = NULL;
	n.has_restart = true;
	n.wake_at = UINT64_MAX;
	assert_int_equal(annotate_start(&n, NULL, &w, 4999), 0);
	assert_int_equal(wants, 0); /* the agent is asked only when an answer comes */
	annotate_cancel(&n);        /* nothing in flight: nothing to do */
	assert_null(n.req);
	annotate_done(&n);
}

int main(void)
{
	log_open("test-agent-annotate", LOG_TARGET_STDERR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(entries),
		cmocka_unit_test(in_place),
		cmocka_unit_test(nothing_due),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
