/* Unit tests for lib/fsx.c: atomic replacement, no-op detection, bounded
 * reads, and directory walks that refuse symlinks and "..". */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsx.h"

struct scratch {
	char path[64];
	int fd;
};

static int setup(void **state)
{
	struct scratch *s = calloc(1, sizeof(*s));
	snprintf(s->path, sizeof(s->path), "/tmp/na-test-fsx.XXXXXX");
	if (!mkdtemp(s->path))
		return -1;
	s->fd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*state = s;
	return s->fd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	struct scratch *s = *state;
	close(s->fd);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/rm", "rm", "-rf", s->path, (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	free(s);
	return 0;
}

static void write_then_skip_same(void **state)
{
	struct scratch *s = *state;
	assert_int_equal(fsx_write_atomic_at(s->fd, "a", "hello", 5, 0640, FSX_UID_KEEP, FSX_GID_KEEP,
					     FSX_SKIP_IF_SAME), 1);
	struct stat st1, st2;
	assert_int_equal(fstatat(s->fd, "a", &st1, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st1.st_mode & 07777, 0640);
	/* Same content and mode: nothing written, same inode. */
	assert_int_equal(fsx_write_atomic_at(s->fd, "a", "hello", 5, 0640, FSX_UID_KEEP, FSX_GID_KEEP,
					     FSX_SKIP_IF_SAME), 0);
	assert_int_equal(fstatat(s->fd, "a", &st2, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st1.st_ino, st2.st_ino);
	/* Different mode: rewritten (new inode). */
	assert_int_equal(fsx_write_atomic_at(s->fd, "a", "hello", 5, 0600, FSX_UID_KEEP, FSX_GID_KEEP,
					     FSX_SKIP_IF_SAME), 1);
	assert_int_equal(fstatat(s->fd, "a", &st2, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_not_equal(st1.st_ino, st2.st_ino);
	assert_int_equal(st2.st_mode & 07777, 0600);
}

static void write_replaces_symlink_not_target(void **state)
{
	struct scratch *s = *state;
	assert_int_equal(fsx_write_atomic_at(s->fd, "victim", "keep", 4, 0644, FSX_UID_KEEP, FSX_GID_KEEP, 0), 1);
	assert_int_equal(symlinkat("victim", s->fd, "link"), 0);
	assert_int_equal(fsx_write_atomic_at(s->fd, "link", "new", 3, 0644, FSX_UID_KEEP, FSX_GID_KEEP, 0), 1);
	_cleanup_free_ char *v = NULL;
	size_t len;
	assert_int_equal(fsx_read_at(s->fd, "victim", 100, &v, &len), 0);
	assert_string_equal(v, "keep");
	struct stat st;
	assert_int_equal(fstatat(s->fd, "link", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
}

static void read_limits_and_refusals(void **state)
{
	struct scratch *s = *state;
	_cleanup_free_ char *v = NULL;
	size_t len;
	assert_int_equal(fsx_write_atomic_at(s->fd, "big", "0123456789", 10, 0600, FSX_UID_KEEP, FSX_GID_KEEP, 0), 1);
	assert_int_equal(fsx_read_at(s->fd, "big", 9, &v, &len), -EFBIG);
	assert_null(v);
	assert_int_equal(fsx_read_at(s->fd, "big", 10, &v, &len), 0);
	assert_int_equal(len, 10);
	assert_int_equal(symlinkat("big", s->fd, "sl"), 0);
	_cleanup_free_ char *w = NULL;
	assert_int_equal(fsx_read_at(s->fd, "sl", 100, &w, &len), -ELOOP);
	assert_int_equal(mkfifoat(s->fd, "fifo", 0600), 0);
	assert_int_equal(fsx_read_at(s->fd, "fifo", 100, &w, &len), -EBADFD);
}

static void dir_walk(void **state)
{
	struct scratch *s = *state;
	int fd = fsx_open_dir_at(s->fd, "/x/y/z", FSX_MKDIR, 0755);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlinkat("/etc", s->fd, "x/evil"), 0);
	assert_int_equal(fsx_open_dir_at(s->fd, "x/evil", 0, 0), -ELOOP);
	assert_int_equal(fsx_open_dir_at(s->fd, "x/evil/sub", FSX_MKDIR, 0755), -ELOOP);
	assert_int_equal(fsx_open_dir_at(s->fd, "x/../..", 0, 0), -EPERM);
	const char *name;
	fd = fsx_open_parent_at(s->fd, "/x/y/file", 0, 0, &name);
	assert_true(fd >= 0);
	assert_string_equal(name, "file");
	close(fd);
	assert_int_equal(fsx_open_parent_at(s->fd, "/x/y/", 0, 0, &name), -EINVAL);
}

static void path_safety(void **state)
{
	(void)state;
	assert_true(fsx_path_is_safe("/etc/systemd/system/a.service", 1024));
	assert_true(fsx_path_is_safe("/", 1024));
	assert_false(fsx_path_is_safe("etc/x", 1024));
	assert_false(fsx_path_is_safe("/etc/../x", 1024));
	assert_false(fsx_path_is_safe("/etc/./x", 1024));
	assert_false(fsx_path_is_safe("/etc//x", 1024));
	assert_false(fsx_path_is_safe("/etc/x/", 1024));
	assert_false(fsx_path_is_safe("/etc/x\ny", 1024));
	assert_false(fsx_path_is_safe("/etc/xyz", 5));
	assert_false(fsx_path_is_safe("", 1024));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(write_then_skip_same, setup, teardown),
		cmocka_unit_test_setup_teardown(write_replaces_symlink_not_target, setup, teardown),
		cmocka_unit_test_setup_teardown(read_limits_and_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(dir_walk, setup, teardown),
		cmocka_unit_test(path_safety),
	};
	return cmocka_run_group_tests_name("fsx", tests, NULL, NULL);
}
