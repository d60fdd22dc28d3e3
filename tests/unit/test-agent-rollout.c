/* Unit tests for agent/rollout.c with a fake clock: the reconciliation
 * delay and serial mode (the serial rollout Lease, agent/serial.h): a unit
 * change waits for the Lease instead of the delay, is written once this
 * node holds it, and the Lease is wanted until the Node shows that
 * checksum; a change that restarts nothing and a first apply never wait. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "log.h"
#include "../../agent/rollout.h"

#define UNIT(c) "spec: {files: [{path: /etc/kubelet.conf, content: {inline: {data: \"" c "\"}}}, " \
		"{path: /etc/motd, content: {inline: {data: m}}}], " \
		"units: [{name: kubelet.service, content: \"[Service]\\nExecStart=/bin/true\\n\", filePaths: [/etc/kubelet.conf]}]}"
#define MOTD(m) "spec: {files: [{path: /etc/kubelet.conf, content: {inline: {data: \"a\"}}}, " \
		"{path: /etc/motd, content: {inline: {data: \"" m "\"}}}], " \
		"units: [{name: kubelet.service, content: \"[Service]\\nExecStart=/bin/true\\n\", filePaths: [/etc/kubelet.conf]}]}"
#define SD "/var/lib/node-agent"

static bool admit(struct rollout *r, const char *in_force, const char *osc, const char *sum, uint64_t now)
{
	return rollout_admit(r, in_force, in_force ? strlen(in_force) : 0, osc, strlen(osc), sum, SD, now);
}

static void delay(void **state)
{
	struct rollout r = {};
	rollout_set_delay(&r, "10s");
	assert_true(admit(&r, NULL, UNIT("a"), "s1", 1000)); /* first apply */
	assert_false(admit(&r, UNIT("a"), UNIT("b"), "s2", 1000));
	assert_int_equal(rollout_deadline(&r), 11000);
	assert_false(rollout_due(&r, 10999));
	assert_false(admit(&r, UNIT("a"), UNIT("b"), "s2", 10999));
	assert_true(rollout_due(&r, 11000));
	assert_true(admit(&r, UNIT("a"), UNIT("b"), "s2", 11000));
	assert_true(admit(&r, UNIT("b"), MOTD("x"), "s3", 11000) == false); /* kubelet.conf back to "a" */
	assert_true(admit(&r, MOTD("m"), MOTD("n"), "s4", 11000)); /* restarts nothing */
	assert_false(rollout_lock_wanted(&r, NULL));
}

static void serial(void **state)
{
	struct rollout r = {};
	char buf[200];
	rollout_set_delay(&r, "10s");
	rollout_set_serial(&r, true);
	assert_true(admit(&r, NULL, UNIT("a"), "s1", 0)); /* a first apply does not wait */
	assert_false(rollout_lock_wanted(&r, NULL));
	assert_true(admit(&r, MOTD("m"), MOTD("n"), "s2", 0)); /* nor a change that restarts nothing */
	assert_false(rollout_lock_wanted(&r, NULL));

	/* A unit change: waits for the Lease, not for the delay. */
	assert_false(admit(&r, UNIT("a"), UNIT("b"), "s3", 0));
	assert_int_equal(rollout_deadline(&r), UINT64_MAX);
	assert_false(rollout_due(&r, 1000000));
	assert_true(rollout_lock_wanted(&r, NULL));
	assert_false(admit(&r, UNIT("a"), UNIT("b"), "s3", 60000)); /* the delay is no matter */
	rollout_set_lock(&r, false, "node-2", 0);
	rollout_describe(&r, 60000, buf, sizeof(buf));
	assert_string_equal(buf, "; OSC s3 waits for the serial rollout Lease (held by node-2 until 00:00:00 UTC)");

	/* Taken: written, and wanted until the Node shows s3. */
	rollout_set_lock(&r, true, NULL, 0);
	assert_true(admit(&r, UNIT("a"), UNIT("b"), "s3", 60001));
	rollout_describe(&r, 60001, buf, sizeof(buf));
	assert_string_equal(buf, "");
	assert_true(rollout_lock_wanted(&r, NULL));
	assert_true(rollout_lock_wanted(&r, "s1"));
	assert_false(rollout_lock_wanted(&r, "s3"));
	assert_false(rollout_lock_wanted(&r, "s3"));

	/* Holding it, the next unit change goes at once. */
	assert_true(admit(&r, UNIT("b"), UNIT("c"), "s4", 60002));
	assert_true(rollout_lock_wanted(&r, "s3"));
	assert_false(rollout_lock_wanted(&r, "s4"));
	rollout_set_lock(&r, false, NULL, 0);

	/* Serial mode off while a change waits: judged again, by the delay. */
	assert_false(admit(&r, UNIT("c"), UNIT("d"), "s5", 70000));
	assert_true(rollout_lock_wanted(&r, "s4"));
	rollout_set_serial(&r, false);
	assert_false(rollout_lock_wanted(&r, "s4"));
	assert_false(admit(&r, UNIT("c"), UNIT("d"), "s5", 70000));
	assert_int_equal(rollout_deadline(&r), 80000);
	assert_true(admit(&r, UNIT("c"), UNIT("d"), "s5", 80000));
}

int main(void)
{
	log_set_max_level(LOG_WARNING);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(delay),
		cmocka_unit_test(serial),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
