/* Unit tests for agent/hostname.c: the name is lowercased; without the
 * /proc file it is read every HOSTNAME_CHECK_MS (gardener-node-agent's
 * 30 s) and not in between; a new name is a change taken once, with the
 * name followed before it; a change and back before the owner looked is
 * none; a read that fails keeps the name; with the fd, only a wake-up
 * reads. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../agent/hostname.h"

static char fake_name[HOST_NAME_MAX + 1];
static int fake_err;
static unsigned fake_reads;

static int fake_get(char *buf, size_t size)
{
	fake_reads++;
	if (fake_err)
		return fake_err;
	snprintf(buf, size, "%s", fake_name);
	return 0;
}

static void setup_fake(struct hostname *h, const char *name)
{
	snprintf(fake_name, sizeof(fake_name), "%s", name);
	fake_err = 0;
	fake_reads = 0;
	*h = (struct hostname){ .get = fake_get };
}

static void normalize(void **state)
{
	char s[] = "IP-10-0-1-2.EU-West-1.Compute.Internal";
	hostname_normalize(s);
	assert_string_equal(s, "ip-10-0-1-2.eu-west-1.compute.internal");
}

static void timer_follows_change(void **state)
{
	struct hostname h;
	char old[HOST_NAME_MAX + 1];
	setup_fake(&h, "IP-10-0-1-2");
	assert_int_equal(hostname_init(&h, false, 1000), 0);
	assert_int_equal(hostname_fd(&h), -1);
	assert_string_equal(h.name, "ip-10-0-1-2");
	assert_false(hostname_take_change(&h, old));
	assert_int_equal(hostname_tick(&h, 1000), 1000 + HOSTNAME_CHECK_MS);

	/* Changed: not read before the period is over. */
	snprintf(fake_name, sizeof(fake_name), "ip-10-0-1-2.ec2.internal");
	unsigned reads = fake_reads;
	assert_int_equal(hostname_tick(&h, 1000 + HOSTNAME_CHECK_MS - 1), 1000 + HOSTNAME_CHECK_MS);
	assert_int_equal(fake_reads, reads);
	assert_false(hostname_take_change(&h, old));

	assert_int_equal(hostname_tick(&h, 1000 + HOSTNAME_CHECK_MS), 1000 + 2 * HOSTNAME_CHECK_MS);
	assert_true(hostname_take_change(&h, old));
	assert_string_equal(old, "ip-10-0-1-2");
	assert_string_equal(h.name, "ip-10-0-1-2.ec2.internal");
	/* Taken once. */
	assert_false(hostname_take_change(&h, old));

	/* A read that fails keeps the name and is no change. */
	fake_err = -EIO;
	hostname_tick(&h, 1000 + 2 * HOSTNAME_CHECK_MS);
	assert_string_equal(h.name, "ip-10-0-1-2.ec2.internal");
	assert_false(hostname_take_change(&h, old));
	hostname_done(&h);
}

static void two_changes_before_taken(void **state)
{
	struct hostname h;
	char old[HOST_NAME_MAX + 1];
	setup_fake(&h, "a");
	assert_int_equal(hostname_init(&h, false, 0), 0);
	snprintf(fake_name, sizeof(fake_name), "b");
	hostname_tick(&h, HOSTNAME_CHECK_MS);
	snprintf(fake_name, sizeof(fake_name), "c");
	hostname_tick(&h, 2 * HOSTNAME_CHECK_MS);
	assert_true(hostname_take_change(&h, old));
	assert_string_equal(old, "a"); /* the name followed, not the one in between */
	assert_string_equal(h.name, "c");

	/* There and back again before the owner looked: no change. */
	snprintf(fake_name, sizeof(fake_name), "d");
	hostname_tick(&h, 3 * HOSTNAME_CHECK_MS);
	snprintf(fake_name, sizeof(fake_name), "C");
	hostname_tick(&h, 4 * HOSTNAME_CHECK_MS);
	assert_false(hostname_take_change(&h, old));
	assert_string_equal(h.name, "c");
	hostname_done(&h);
}

static void unreadable_at_start(void **state)
{
	struct hostname h;
	char old[HOST_NAME_MAX + 1];
	setup_fake(&h, "");
	fake_err = -EIO;
	assert_int_equal(hostname_init(&h, false, 0), -ENOENT);
	assert_string_equal(h.name, "");
	fake_err = 0;
	snprintf(fake_name, sizeof(fake_name), "late");
	hostname_tick(&h, HOSTNAME_CHECK_MS);
	assert_string_equal(h.name, "late");
	/* The first name is no change: nothing was followed before. */
	assert_false(hostname_take_change(&h, old));
	hostname_done(&h);
}

/* With the /proc file (present where the tests run): no timer, only a
 * wake-up reads. */
static void fd_reads_on_wake_only(void **state)
{
	struct hostname h;
	char old[HOST_NAME_MAX + 1];
	setup_fake(&h, "one");
	assert_int_equal(hostname_init(&h, true, 0), 0);
	if (hostname_fd(&h) < 0) {
		hostname_done(&h);
		skip(); /* no /proc/sys here: the timer is tested above */
	}
	assert_int_equal(hostname_tick(&h, 0), UINT64_MAX);
	snprintf(fake_name, sizeof(fake_name), "two");
	unsigned reads = fake_reads;
	assert_int_equal(hostname_tick(&h, 10 * HOSTNAME_CHECK_MS), UINT64_MAX);
	assert_int_equal(fake_reads, reads);
	hostname_wake(&h);
	assert_int_equal(hostname_tick(&h, 10 * HOSTNAME_CHECK_MS), UINT64_MAX);
	assert_true(hostname_take_change(&h, old));
	assert_string_equal(old, "one");
	assert_string_equal(h.name, "two");
	hostname_done(&h);
	assert_int_equal(hostname_fd(&h), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(normalize),
		cmocka_unit_test(timer_follows_change),
		cmocka_unit_test(two_changes_before_taken),
		cmocka_unit_test(unreadable_at_start),
		cmocka_unit_test(fd_reads_on_wake_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
