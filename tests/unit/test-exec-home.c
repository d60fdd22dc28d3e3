/* Unit tests for cloud-config-exec/home.c: the temporary-name pattern the
 * next run cleans up, the moved-aside name, and moving aside and replacing
 * what cannot be read (a directory, an oversized file) in a scratch ~/.ssh,
 * as the calling user. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../cloud-config-exec/home.h"
#include "cleanup.h"
#include "fsx.h"
#include "scratch.h"

static void test_moved_name(void **state)
{
	(void)state;
	char buf[128];
	assert_int_equal(home_moved_name("authorized_keys", 1800000000, 0x0123456789abcdefULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "authorized_keys.node-agent-moved-20270115T080000Z-0123456789abcdef");
	assert_int_equal(home_moved_name(".ssh", 0, 3, buf, sizeof(buf)), 0);
	assert_string_equal(buf, ".ssh.node-agent-moved-19700101T000000Z-0000000000000003");
	assert_int_equal(home_moved_name("authorized_keys", 0, 0, buf, 20), -ENAMETOOLONG);
}

/* name is "<prefix>-<16 lowercase hex>" and carries prefix's time. */
static void assert_moved(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	if (strncmp(name, prefix, n) != 0 || name[n] != '-' || strlen(name + n + 1) != 16 ||
	    strspn(name + n + 1, "0123456789abcdef") != 16)
		fail_msg("moved-aside name '%s' is not '%s-<16 hex>'", name, prefix);
}

static struct account me(void)
{
	static char name[] = "me", home[] = "/x";
	return (struct account){ .name = name, .uid = getuid(), .gid = getgid(), .home = home };
}

static char *slurp(int dirfd, const char *name)
{
	char *s = NULL;
	size_t n;
	assert_int_equal(fsx_read_at(dirfd, name, 1 << 22, &s, &n), 0);
	return s;
}

static void test_directory_moved_aside(void **state)
{
	struct scratch *s = *state;
	struct account a = me();
	char why[HOME_WHY_MAX], moved[256];
	assert_int_equal(mkdirat(s->fd, "authorized_keys", 0700), 0);
	_cleanup_free_ char *old = NULL;
	size_t len;
	const char *ignored = NULL;
	bool keys_only = true, move = false;
	assert_int_equal(home_read_keys(s->fd, &a, &old, &len, &ignored, &keys_only, &move, why, sizeof(why)), 1);
	assert_string_equal(ignored, "a directory");
	assert_true(move);
	assert_int_equal(len, 0);
	assert_int_equal(home_write_keys(s->fd, &a, "k\n", 2, move, 1800000000, moved, sizeof(moved), why,
					 sizeof(why)), 1);
	assert_moved(moved, "authorized_keys.node-agent-moved-20270115T080000Z");
	struct stat st;
	assert_int_equal(fstatat(s->fd, moved, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISDIR(st.st_mode));
	_cleanup_free_ char *now = slurp(s->fd, "authorized_keys");
	assert_string_equal(now, "k\n");
	/* A second obstacle in the same second gets its own name. */
	char first[256];
	snprintf(first, sizeof(first), "%s", moved);
	assert_int_equal(mkdirat(s->fd, "authorized_keys.tmp", 0700), 0);
	assert_int_equal(unlinkat(s->fd, "authorized_keys", 0), 0);
	assert_int_equal(renameat(s->fd, "authorized_keys.tmp", s->fd, "authorized_keys"), 0);
	assert_int_equal(home_write_keys(s->fd, &a, "k\n", 2, true, 1800000000, moved, sizeof(moved), why,
					 sizeof(why)), 1);
	assert_moved(moved, "authorized_keys.node-agent-moved-20270115T080000Z");
	assert_string_not_equal(moved, first);
	assert_int_equal(fstatat(s->fd, moved, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISDIR(st.st_mode));
}

/* Issue 21: the user hard-links a file of theirs to every name the old
 * code would try (the UTC second, then -1..-99); the move still succeeds,
 * the planted names are untouched and the new file is ours, not theirs. */
static void test_names_taken(void **state)
{
	struct scratch *s = *state;
	struct account a = me();
	char why[HOME_WHY_MAX], moved[256], name[256];
	int fd = openat(s->fd, "planted", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "mine\n", 5), 5);
	close(fd);
	for (unsigned i = 0; i < 100; i++) {
		if (i == 0)
			snprintf(name, sizeof(name), "authorized_keys.node-agent-moved-20270115T080000Z");
		else
			snprintf(name, sizeof(name), "authorized_keys.node-agent-moved-20270115T080000Z-%u", i);
		assert_int_equal(linkat(s->fd, "planted", s->fd, name, 0), 0);
	}
	fd = openat(s->fd, "authorized_keys", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, HOME_KEYS_MAX + 1), 0);
	close(fd);
	assert_int_equal(home_write_keys(s->fd, &a, "k\n", 2, true, 1800000000, moved, sizeof(moved), why,
					 sizeof(why)), 1);
	assert_moved(moved, "authorized_keys.node-agent-moved-20270115T080000Z");
	struct stat st;
	assert_int_equal(fstatat(s->fd, moved, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_size, HOME_KEYS_MAX + 1);
	assert_int_equal(fstatat(s->fd, "authorized_keys", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(st.st_mode & 07777, 0600);
	_cleanup_free_ char *now = slurp(s->fd, "authorized_keys");
	assert_string_equal(now, "k\n");
	assert_int_equal(fstatat(s->fd, "planted", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_nlink, 101);
	_cleanup_free_ char *mine = slurp(s->fd, "planted");
	assert_string_equal(mine, "mine\n");
	/* authorized_keys2 (exclusive mode) and nothing there at all. */
	assert_int_equal(linkat(s->fd, "planted", s->fd, "authorized_keys2", 0), 0);
	assert_int_equal(home_move_aside(s->fd, &a, "authorized_keys2", 1800000000, moved, sizeof(moved), why,
					 sizeof(why)), 1);
	assert_moved(moved, "authorized_keys2.node-agent-moved-20270115T080000Z");
	assert_int_equal(home_move_aside(s->fd, &a, "authorized_keys2", 1800000000, moved, sizeof(moved), why,
					 sizeof(why)), 0);
	assert_int_equal(unlinkat(s->fd, "authorized_keys", 0), 0);
	assert_int_equal(home_write_keys(s->fd, &a, "j\n", 2, true, 1800000000, moved, sizeof(moved), why,
					 sizeof(why)), 1);
	assert_string_equal(moved, "");
	_cleanup_free_ char *again = slurp(s->fd, "authorized_keys");
	assert_string_equal(again, "j\n");
}

static void test_huge_moved_aside(void **state)
{
	struct scratch *s = *state;
	struct account a = me();
	char why[HOME_WHY_MAX], moved[256];
	int fd = openat(s->fd, "authorized_keys", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, HOME_KEYS_MAX + 1), 0);
	close(fd);
	_cleanup_free_ char *old = NULL;
	size_t len;
	const char *ignored = NULL;
	bool keys_only = true, move = false;
	assert_int_equal(home_read_keys(s->fd, &a, &old, &len, &ignored, &keys_only, &move, why, sizeof(why)), 1);
	assert_non_null(strstr(ignored, "larger than the ceiling"));
	assert_true(move);
	assert_int_equal(home_write_keys(s->fd, &a, "k\n", 2, move, 0, moved, sizeof(moved), why, sizeof(why)), 1);
	assert_moved(moved, "authorized_keys.node-agent-moved-19700101T000000Z");
	struct stat st;
	assert_int_equal(fstatat(s->fd, moved, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_size, HOME_KEYS_MAX + 1);
	/* An ordinary file is read and not moved; identical content: 0. */
	free(old);
	old = NULL;
	assert_int_equal(home_read_keys(s->fd, &a, &old, &len, &ignored, &keys_only, &move, why, sizeof(why)), 1);
	assert_null(ignored);
	assert_false(move);
	assert_string_equal(old, "k\n");
	assert_int_equal(home_write_keys(s->fd, &a, "k\n", 2, move, 0, moved, sizeof(moved), why, sizeof(why)), 0);
	assert_string_equal(moved, "");
}

static void test_remove_temps(void **state)
{
	struct scratch *s = *state;
	struct account a = me();
	const char *ours = ".#authorized_keys.0123456789abcdef";
	int fd = openat(s->fd, ours, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlinkat("/etc/hostname", s->fd, ".#authorized_keys.1111111111111111"), 0);
	assert_int_equal(mkdirat(s->fd, ".#authorized_keys.2222222222222222", 0700), 0);
	fd = openat(s->fd, ".#authorized_keys.x", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(home_remove_temps(s->fd, &a), 1);
	struct stat st;
	assert_int_equal(fstatat(s->fd, ours, &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(fstatat(s->fd, ".#authorized_keys.1111111111111111", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(fstatat(s->fd, ".#authorized_keys.2222222222222222", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(fstatat(s->fd, ".#authorized_keys.x", &st, AT_SYMLINK_NOFOLLOW), 0);
}

static int setup(void **state)
{
	return scratch_setup(state, "home");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_moved_name),
		cmocka_unit_test_setup_teardown(test_directory_moved_aside, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_huge_moved_aside, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_names_taken, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_remove_temps, setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
