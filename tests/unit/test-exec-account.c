/* Unit tests for cloud-config-exec/account.c: which user names the
 * executor is willing to look up, create and write sudoers entries for,
 * and account_lookup() on a scratch passwd file; the sudoers entry under
 * Gardener's name 99-<user>-user and the removal of the earlier name only
 * when it is ours. */
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

static void test_legacy_is_ours(void **state)
{
	(void)state;
	struct stat st = { .st_mode = S_IFREG | 0440, .st_nlink = 1, .st_uid = 0 };
	static const char c[] = "gardener ALL=(ALL) NOPASSWD:ALL\n";
	const char *spec = "ALL=(ALL) NOPASSWD:ALL";
	assert_true(account_legacy_sudoers_is_ours(&st, c, strlen(c), "gardener", spec));
	assert_false(account_legacy_sudoers_is_ours(&st, c, strlen(c) - 1, "gardener", spec));     /* no newline */
	assert_false(account_legacy_sudoers_is_ours(&st, c, strlen(c), "gardene", spec));
	assert_false(account_legacy_sudoers_is_ours(&st, c, strlen(c), "gardener", "ALL=(ALL) ALL")); /* other spec */
	static const char more[] = "gardener ALL=(ALL) NOPASSWD:ALL\nops ALL=(ALL) ALL\n";
	assert_false(account_legacy_sudoers_is_ours(&st, more, strlen(more), "gardener", spec)); /* an admin's line */
	struct stat t = st;
	t.st_mode = S_IFREG | 0640;
	assert_false(account_legacy_sudoers_is_ours(&t, c, strlen(c), "gardener", spec));
	t = st;
	t.st_uid = 1000;
	assert_false(account_legacy_sudoers_is_ours(&t, c, strlen(c), "gardener", spec));
	t = st;
	t.st_nlink = 2;
	assert_false(account_legacy_sudoers_is_ours(&t, c, strlen(c), "gardener", spec));
	t = st;
	t.st_mode = S_IFLNK | 0440;
	assert_false(account_legacy_sudoers_is_ours(&t, c, strlen(c), "gardener", spec));
}

static char *read_at(int dfd, const char *path)
{
	static char buf[256];
	int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static void put_at(int dfd, const char *path, const char *content, mode_t mode)
{
	int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void test_sudoers_rename(void **state)
{
	if (geteuid() != 0)
		skip(); /* the entry is written root-owned */
	int rootfd = ((struct scratch *)*state)->fd;
	const char *spec = "ALL=(ALL) NOPASSWD:ALL";
	assert_int_equal(mkdirat(rootfd, "etc", 0755), 0);
	assert_int_equal(mkdirat(rootfd, "etc/sudoers.d", 0750), 0);
	/* the name earlier versions wrote, with what they wrote: removed */
	put_at(rootfd, "etc/sudoers.d/99-gardener", "gardener ALL=(ALL) NOPASSWD:ALL\n", 0440);
	assert_int_equal(account_sudoers(rootfd, "gardener", spec), 1);
	assert_string_equal(read_at(rootfd, "etc/sudoers.d/99-gardener-user"), "gardener ALL=(ALL) NOPASSWD:ALL\n");
	struct stat st;
	assert_int_equal(fstatat(rootfd, "etc/sudoers.d/99-gardener-user", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0440);
	assert_int_equal(fstatat(rootfd, "etc/sudoers.d/99-gardener", &st, AT_SYMLINK_NOFOLLOW), -1);
	/* again: nothing to do */
	assert_int_equal(account_sudoers(rootfd, "gardener", spec), 0);
	/* an admin's file at the old name: left alone */
	put_at(rootfd, "etc/sudoers.d/99-gardener", "gardener ALL=(ALL) NOPASSWD:ALL\n# mine\n", 0440);
	assert_int_equal(account_sudoers(rootfd, "gardener", spec), 0);
	assert_int_equal(fstatat(rootfd, "etc/sudoers.d/99-gardener", &st, AT_SYMLINK_NOFOLLOW), 0);
	/* a symlink there: not followed, left alone */
	assert_int_equal(unlinkat(rootfd, "etc/sudoers.d/99-gardener", 0), 0);
	assert_int_equal(symlinkat("99-gardener-user", rootfd, "etc/sudoers.d/99-gardener"), 0);
	assert_int_equal(account_sudoers(rootfd, "gardener", spec), 0);
	assert_int_equal(fstatat(rootfd, "etc/sudoers.d/99-gardener", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(st.st_mode));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test_setup_teardown(test_lookup, setup, scratch_teardown),
		cmocka_unit_test(test_legacy_is_ours),
		cmocka_unit_test_setup_teardown(test_sudoers_rename, setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
