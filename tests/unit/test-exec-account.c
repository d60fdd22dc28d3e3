/* Unit tests for cloud-config-exec/account.c: which user names the
 * executor is willing to look up, create and write sudoers entries for,
 * and account_lookup() on a scratch passwd file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../cloud-config-exec/account.h"
#include "cleanup.h"
#include "scratch.h"

static void test_names(void **state)
{
	(void)state;
	static const char *const good[] = { "gardener", "a", "_x", "user-1", "u_2", "machine$",
					    "abcdefghijklmnopqrstuvwxyz012345" };
	static const char *const bad[] = { "", "Root", "1user", "-u", "a b", "a:b", "a\nb", "a/b", "a$b",
					   "abcdefghijklmnopqrstuvwxyz0123456", "ALL", "user%", "..", "é" };
	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		if (!account_name_is_valid(good[i]))
			fail_msg("rejected '%s'", good[i]);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (account_name_is_valid(bad[i]))
			fail_msg("accepted '%s'", bad[i]);
	assert_false(account_name_is_valid(NULL));
}

static int setup(void **state)
{
	return scratch_setup(state, "exec-account");
}

static void test_lookup(void **state)
{
	int rootfd = ((struct scratch *)*state)->fd;
	struct account a = { 0 };
	assert_int_equal(account_lookup(rootfd, "gardener", &a), -ENOENT); /* no /etc/passwd */
	assert_int_equal(mkdirat(rootfd, "etc", 0755), 0);
	int fd = openat(rootfd, "etc/passwd", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	const char *pw = "root:x:0:0:root:/root:/bin/sh\n"
			 "gardenerx:x:1001:1001::/home/gardenerx:/bin/sh\n"
			 "gardener:x:1000:1002:G:/home/gardener:/bin/bash\n";
	assert_int_equal(write(fd, pw, strlen(pw)), (ssize_t)strlen(pw));
	close(fd);
	assert_int_equal(account_lookup(rootfd, "gardener", &a), 1);
	assert_string_equal(a.name, "gardener");
	assert_int_equal(a.uid, 1000);
	assert_int_equal(a.gid, 1002);
	assert_string_equal(a.home, "/home/gardener");
	account_done(&a);
	assert_int_equal(account_lookup(rootfd, "garden", &a), 0);
	assert_int_equal(account_lookup(rootfd, "nobody", &a), 0);

	/* A symlinked passwd is not followed. */
	assert_int_equal(unlinkat(rootfd, "etc/passwd", 0), 0);
	assert_int_equal(symlinkat("/etc/passwd", rootfd, "etc/passwd"), 0);
	assert_int_equal(account_lookup(rootfd, "root", &a), -ELOOP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test_setup_teardown(test_lookup, setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
