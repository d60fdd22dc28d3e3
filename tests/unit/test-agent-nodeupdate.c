/* Unit tests for agent/nodeupdate.c: the handshake's answer from the Node
 * (condition InPlaceUpdate/ReadyForUpdate, or the label "failed"), what the
 * Node should show for each state the executor reports (gardener's
 * patchNodeUpdateSuccessful, patchNodeUpdateFailed, updateOSInPlace), the
 * checksum held while the update is not over, and the rotations asked for
 * once per update. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "kube.h"
#include "log.h"
#include "result.h"
#include "../../agent/nodeupdate.h"

/* result.json's inPlaceUpdate read into a report. */
static void from_result(void **state)
{
	struct nodeupdate_report r;
	struct result res = { .generation = 7 };
	nodeupdate_report_from(NULL, true, &r);
	assert_int_equal(r.state, NODEUPDATE_NONE);
	nodeupdate_report_from(&res, true, &r);
	assert_int_equal(r.state, NODEUPDATE_NONE);
	res.inplace = (struct result_inplace){ .present = true, .kinds = INPLACE_OS_VERSION | INPLACE_SA_KEY_ROTATION,
					       .state = INPLACE_STATE_FAILED, .reason = (char[]){ "rolled back" },
					       .os_desired = (char[]){ "1877.4" }, .os_running = (char[]){ "1443.3" } };
	nodeupdate_report_from(&res, false, &r);
	assert_int_equal(r.state, NODEUPDATE_FAILED);
	assert_int_equal(r.kinds, INPLACE_OS_VERSION | INPLACE_SA_KEY_ROTATION);
	assert_string_equal(r.reason, "rolled back");
	assert_string_equal(r.os_version, "1877.4");
	assert_int_equal(r.generation, 7);
	assert_false(r.current);
	res.inplace.state = INPLACE_STATE_WAITING;
	nodeupdate_report_from(&res, true, &r);
	assert_int_equal(r.state, NODEUPDATE_WAITING);
	res.inplace.state = 99;
	nodeupdate_report_from(&res, true, &r);
	assert_int_equal(r.state, NODEUPDATE_NONE);
}

static void handshake(void **state)
{
	struct nodeupdate u = {};
	struct kube_node k = {};
	assert_false(nodeupdate_node(&u, &k));
	assert_false(nodeupdate_ready(&u));
	k.ready_for_update = true;
	assert_true(nodeupdate_node(&u, &k));
	assert_true(nodeupdate_ready(&u));
	assert_false(nodeupdate_node(&u, &k)); /* no change */
	/* The label "failed" alone: retried without a new handshake. */
	k.ready_for_update = false;
	k.update_result = (char[]){ "failed" };
	assert_false(nodeupdate_node(&u, &k));
	assert_true(nodeupdate_ready(&u));
	k.update_result = (char[]){ "successful" };
	assert_true(nodeupdate_node(&u, &k));
	assert_false(nodeupdate_ready(&u));
	/* The Node gone. */
	k.ready_for_update = true;
	nodeupdate_node(&u, &k);
	assert_true(nodeupdate_node(&u, NULL));
	assert_false(nodeupdate_ready(&u));
}

static void results(void **state)
{
	struct nodeupdate u = {};
	struct nodeupdate_want w;
	struct nodeupdate_report r = { .state = NODEUPDATE_WAITING, .kinds = INPLACE_OS_VERSION,
				       .os_version = "1877.3", .generation = 4, .current = true };
	/* Waiting: the checksum is held, nothing else. */
	assert_true(nodeupdate_result(&u, &r));
	nodeupdate_want(&u, &w);
	assert_true(w.hold_checksum);
	assert_null(w.update_result);
	assert_null(w.updating_os);

	/* Running an OS update: the version being installed. */
	r.state = NODEUPDATE_RUNNING;
	r.generation = 5;
	assert_true(nodeupdate_result(&u, &r));
	nodeupdate_want(&u, &w);
	assert_true(w.hold_checksum);
	assert_string_equal(w.updating_os, "1877.3");
	assert_false(u.resync_tokens);
	assert_false(u.renew_cert);
	assert_false(u.recheck); /* it was waiting when the agent started */

	/* Failed: label and reason (one line). */
	r.state = NODEUPDATE_FAILED;
	r.reason = "OS update might have failed\nand rolled back";
	assert_true(nodeupdate_result(&u, &r));
	nodeupdate_want(&u, &w);
	assert_true(w.hold_checksum);
	assert_string_equal(w.update_result, "failed");
	assert_string_equal(w.failed_reason, "OS update might have failed and rolled back");
	assert_false(nodeupdate_result(&u, &r)); /* the same again: no change */
	r.reason = NULL;
	nodeupdate_result(&u, &r);
	nodeupdate_want(&u, &w);
	assert_string_equal(w.failed_reason, "in-place update failed");

	/* Successful, but the Node is not (or no longer) ready for the
	 * update: nothing written, so a label removed afterwards is not put
	 * back; the checksum is not held. */
	r.state = NODEUPDATE_SUCCESSFUL;
	nodeupdate_result(&u, &r);
	nodeupdate_want(&u, &w);
	assert_false(w.hold_checksum);
	assert_null(w.update_result);
	struct kube_node k = { .ready_for_update = true };
	nodeupdate_node(&u, &k);
	/* Ready: first the Pods left on the Node go (podsweep.h), the
	 * label and the checksum wait for it. */
	assert_true(nodeupdate_sweep_wanted(&u));
	nodeupdate_want(&u, &w);
	assert_null(w.update_result);
	assert_true(w.hold_checksum);
	assert_true(nodeupdate_pods_deleted(&u));
	assert_false(nodeupdate_pods_deleted(&u));
	assert_false(nodeupdate_sweep_wanted(&u));
	nodeupdate_want(&u, &w);
	assert_false(w.hold_checksum);
	assert_string_equal(w.update_result, "successful");
	assert_true(w.failed_reason_remove);
	assert_true(w.updating_os_remove);
	assert_null(w.failed_reason);

	/* A result for an older desired state: no opinion at all. */
	r.current = false;
	nodeupdate_result(&u, &r);
	nodeupdate_want(&u, &w);
	assert_null(w.update_result);
	assert_false(w.hold_checksum);
	/* No in-place update: none either. */
	r = (struct nodeupdate_report){ .state = NODEUPDATE_NONE, .generation = 9, .current = true };
	nodeupdate_result(&u, &r);
	nodeupdate_want(&u, &w);
	assert_null(w.update_result);
	assert_false(w.hold_checksum);
}

/* The agent started (after the OS update's reboot) and finds the update
 * "running": it asks for an executor run once; not for a report of an
 * older desired state, not for another state, not twice. */
static void recheck_after_restart(void **state)
{
	struct nodeupdate u = {};
	struct nodeupdate_report r = { .state = NODEUPDATE_RUNNING, .kinds = INPLACE_OS_VERSION,
				       .os_version = "12.99", .generation = 3, .current = false };
	nodeupdate_result(&u, &r);
	assert_false(u.recheck);
	r.current = true;
	nodeupdate_result(&u, &r);
	assert_true(u.recheck);
	u.recheck = false; /* the agent rewrote desired.json */
	nodeupdate_result(&u, &r);
	assert_false(u.recheck);
	r.state = NODEUPDATE_SUCCESSFUL;
	nodeupdate_result(&u, &r);
	assert_false(u.recheck);

	struct nodeupdate v = {};
	r.state = NODEUPDATE_FAILED;
	r.reason = "rolled back";
	nodeupdate_result(&v, &r);
	assert_false(v.recheck);
}

static void rotations(void **state)
{
	struct nodeupdate u = {};
	struct nodeupdate_want w;
	struct kube_node k = { .ready_for_update = true };
	nodeupdate_node(&u, &k);
	struct nodeupdate_report r = { .state = NODEUPDATE_WAITING,
				       .kinds = INPLACE_NODE_AGENT_CA_ROTATION | INPLACE_SA_KEY_ROTATION,
				       .generation = 2, .current = true };
	/* Nothing before the handshake. */
	nodeupdate_result(&u, &r);
	assert_false(u.resync_tokens);
	assert_false(u.renew_cert);
	/* Running: the tokens at once; the certificate waits for the OSC
	 * (and its CA bundle) to be applied. */
	r.state = NODEUPDATE_RUNNING;
	r.generation = 3;
	nodeupdate_result(&u, &r);
	assert_true(u.resync_tokens);
	assert_false(u.renew_cert);
	u.resync_tokens = false;
	/* The same again: not asked twice. */
	nodeupdate_result(&u, &r);
	assert_false(u.resync_tokens);
	/* Successful: the certificate asked for, "successful" held until it
	 * is in use; the tokens not again. */
	r.state = NODEUPDATE_SUCCESSFUL;
	nodeupdate_result(&u, &r);
	assert_true(u.renew_cert);
	assert_true(u.ca_pending);
	assert_false(u.resync_tokens);
	u.renew_cert = false;
	nodeupdate_want(&u, &w);
	assert_true(w.hold_checksum);
	assert_null(w.update_result);
	assert_false(nodeupdate_sweep_wanted(&u)); /* not before the certificate */
	assert_true(nodeupdate_cert_renewed(&u));
	assert_false(nodeupdate_cert_renewed(&u));
	assert_true(nodeupdate_sweep_wanted(&u));
	nodeupdate_pods_deleted(&u);
	nodeupdate_want(&u, &w);
	assert_false(w.hold_checksum);
	assert_string_equal(w.update_result, "successful");
	/* A later generation of the same update: not again. */
	r.generation = 4;
	nodeupdate_result(&u, &r);
	assert_false(u.renew_cert);
	assert_false(u.resync_tokens);
	/* A new update (waiting first), successful at once: both again. */
	r.state = NODEUPDATE_WAITING;
	r.generation = 5;
	nodeupdate_result(&u, &r);
	assert_false(u.renew_cert);
	r.state = NODEUPDATE_SUCCESSFUL;
	r.generation = 6;
	nodeupdate_result(&u, &r);
	assert_true(u.renew_cert);
	assert_true(u.resync_tokens);
}

/* deleteRemainingPods' guard (gardener reconciler.go performInPlaceUpdate):
 * the Pods are deleted after every step, while the Node has the condition
 * ReadyForUpdate (or the label "failed") and not the label "successful";
 * once per update; the label waits for it. */
static void pods_before_label(void **state)
{
	struct nodeupdate u = {};
	struct nodeupdate_want w;
	struct kube_node k = {};
	struct nodeupdate_report r = { .state = NODEUPDATE_WAITING, .kinds = INPLACE_KUBELET_MINOR_VERSION,
				       .generation = 1, .current = true };
	nodeupdate_result(&u, &r);
	assert_false(nodeupdate_sweep_wanted(&u));
	k.ready_for_update = true;
	nodeupdate_node(&u, &k);
	r.state = NODEUPDATE_RUNNING;
	r.generation = 2;
	nodeupdate_result(&u, &r);
	assert_false(nodeupdate_sweep_wanted(&u)); /* not while running */
	r.state = NODEUPDATE_SUCCESSFUL;
	r.generation = 3;
	nodeupdate_result(&u, &r);
	assert_true(nodeupdate_sweep_wanted(&u));
	/* A report of an older desired state: no. */
	r.current = false;
	nodeupdate_result(&u, &r);
	assert_false(nodeupdate_sweep_wanted(&u));
	r.current = true;
	nodeupdate_result(&u, &r);
	/* The Node not ready (the condition gone, no label): no. */
	k.ready_for_update = false;
	nodeupdate_node(&u, &k);
	assert_false(nodeupdate_sweep_wanted(&u));
	nodeupdate_want(&u, &w);
	assert_null(w.update_result);
	/* The label "failed" counts as ready (a retry). */
	k.update_result = (char[]){ "failed" };
	nodeupdate_node(&u, &k);
	assert_true(nodeupdate_sweep_wanted(&u));
	/* The label "successful" already there (set before a restart):
	 * no new sweep, and the label stays wanted while ready. */
	k.update_result = (char[]){ "successful" };
	k.ready_for_update = true;
	nodeupdate_node(&u, &k);
	assert_false(nodeupdate_sweep_wanted(&u));
	nodeupdate_want(&u, &w);
	assert_string_equal(w.update_result, "successful");
	assert_false(w.hold_checksum);
	/* Deleted once: a later generation of the same result does not ask
	 * again; a new update (another state first) does. */
	k.update_result = NULL;
	nodeupdate_node(&u, &k);
	assert_true(nodeupdate_sweep_wanted(&u));
	assert_true(nodeupdate_pods_deleted(&u));
	r.generation = 4;
	nodeupdate_result(&u, &r);
	assert_false(nodeupdate_sweep_wanted(&u));
	r.state = NODEUPDATE_RUNNING;
	r.generation = 5;
	nodeupdate_result(&u, &r);
	r.state = NODEUPDATE_SUCCESSFUL;
	r.generation = 6;
	nodeupdate_result(&u, &r);
	assert_true(nodeupdate_sweep_wanted(&u));
}

/* After the update's reboot (issue 34): the result on disk is current for
 * the desired.json the earlier run left, so the sweep waits until this run
 * settled its desired state; a sweep under way goes on while a later write
 * makes the result stale (the token Secrets read a moment after the
 * start), and stops only for the update's own reasons, each named. */
static void sweep_after_restart(void **state)
{
	struct nodeupdate u = { 0 };
	const char *why = "x";
	struct kube_node k = { .ready_for_update = true };
	nodeupdate_node(&u, &k);
	struct nodeupdate_report r = { .state = NODEUPDATE_SUCCESSFUL, .kinds = INPLACE_OS_VERSION, .current = true,
				       .generation = 3 };
	nodeupdate_result(&u, &r);
	assert_true(nodeupdate_sweep_wanted(&u));
	assert_false(nodeupdate_sweep_go(&u, false, false, &why)); /* not settled: no start */
	assert_null(why);
	assert_true(nodeupdate_sweep_go(&u, false, true, &why));
	/* desired.json written again (tokens read): the result is stale */
	r.current = false;
	nodeupdate_result(&u, &r);
	assert_false(nodeupdate_sweep_go(&u, false, true, &why)); /* would not start now */
	assert_true(nodeupdate_sweep_go(&u, true, true, &why));   /* but one running goes on */
	assert_null(why);
	/* the executor reports another state for the newest desired state */
	r = (struct nodeupdate_report){ .state = NODEUPDATE_RUNNING, .kinds = INPLACE_OS_VERSION, .current = true,
					.generation = 4 };
	nodeupdate_result(&u, &r);
	assert_false(nodeupdate_sweep_go(&u, true, true, &why));
	assert_string_equal(why, "cloud-config-exec reports an update running");
	r.state = NODEUPDATE_SUCCESSFUL;
	r.generation = 5;
	nodeupdate_result(&u, &r);
	assert_true(nodeupdate_sweep_go(&u, true, true, &why));
	/* the Node moved on: named as such */
	k.ready_for_update = false;
	nodeupdate_node(&u, &k);
	assert_false(nodeupdate_sweep_go(&u, true, true, &why));
	assert_non_null(strstr(why, "neither the condition InPlaceUpdate with reason ReadyForUpdate nor the label"));
	k = (struct kube_node){ .ready_for_update = true, .update_result = (char[]){ "successful" } };
	nodeupdate_node(&u, &k);
	assert_false(nodeupdate_sweep_go(&u, true, true, &why));
	assert_string_equal(why, "the Node is labelled update-result=successful already");
	assert_false(nodeupdate_sweep_go(&u, false, true, &why));
}

int main(void)
{
	log_open("test-agent-nodeupdate", LOG_TARGET_STDERR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(from_result),
		cmocka_unit_test(handshake),
		cmocka_unit_test(results),
		cmocka_unit_test(recheck_after_restart),
		cmocka_unit_test(rotations),
		cmocka_unit_test(pods_before_label),
		cmocka_unit_test(sweep_after_restart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
