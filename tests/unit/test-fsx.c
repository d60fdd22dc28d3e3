/* Unit tests for lib/base/fsx.c: atomic replacement, no-op detection, bounded
 * reads, directory walks that refuse symlinks and "..", and with
 * FSX_FOLLOW_ROOT_SYMLINKS follow only links that root alone can have made,
 * inside the root fd; the label hook sees every creation first. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdio.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsx.h"
#include "scratch.h"

static int setup(void **state)
{
	return scratch_setup(state, "fsx");
}

static void temp_names(void **state)
{
	(void)state;
	assert_int_equal(fsx_temp_target(".#authorized_keys.0123456789abcdef"), strlen("authorized_keys"));
	assert_int_equal(fsx_temp_target(".#a.ffffffffffffffff"), 1);
	assert_int_equal(fsx_temp_target(".#a.b.0123456789abcdef"), 3);
	assert_int_equal(fsx_temp_target(".#authorized_keys.0123456789ABCDEF"), 0);
	assert_int_equal(fsx_temp_target(".#authorized_keys.0123456789abcde"), 0);
	assert_int_equal(fsx_temp_target(".#authorized_keys.0123456789abcdeg"), 0);
	assert_int_equal(fsx_temp_target(".#authorized_keys."), 0);
	assert_int_equal(fsx_temp_target("..0123456789abcdef"), 0);
	assert_int_equal(fsx_temp_target(".#.0123456789abcdef"), 0);
	assert_int_equal(fsx_temp_target("authorized_keys"), 0);
	assert_int_equal(fsx_temp_target(""), 0);
}

static int count_temp(int dfd, const char *name, size_t target_len, void *userdata)
{
	(void)dfd;
	const char *want = userdata;
	if (target_len != strlen(want) || memcmp(name + 2, want, target_len) != 0)
		return 0;
	return unlinkat(dfd, name, 0) == 0;
}

/* fsx_for_each_temp() hands over exactly the names fsx_write_atomic_at()
 * gives its temporaries, and the callback decides. */
static void for_each_temp(void **state)
{
	struct scratch *s = *state;
	char x[] = "x", y[] = "y";
	static const char *const names[] = { ".#x.0123456789abcdef", ".#x.fedcba9876543210", ".#y.0123456789abcdef",
					     "x", ".#x.0123456789abcdeF", ".#x" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int fd = openat(s->fd, names[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	assert_int_equal(fsx_for_each_temp(s->fd, count_temp, x), 2);
	assert_int_equal(faccessat(s->fd, ".#x.0123456789abcdef", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(faccessat(s->fd, ".#y.0123456789abcdef", F_OK, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(faccessat(s->fd, ".#x.0123456789abcdeF", F_OK, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(fsx_for_each_temp(s->fd, count_temp, x), 0);
	assert_int_equal(fsx_for_each_temp(s->fd, count_temp, y), 1);
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
	/* With the flag the root-made link is followed, inside s->fd. */
	assert_int_equal(fsx_open_dir_at(s->fd, "x/evil", FSX_FOLLOW_ROOT_SYMLINKS, 0), -ENOENT);
	const char *name;
	fd = fsx_open_parent_at(s->fd, "/x/y/file", 0, 0, &name);
	assert_true(fd >= 0);
	assert_string_equal(name, "file");
	close(fd);
	assert_int_equal(fsx_open_parent_at(s->fd, "/x/y/", 0, 0, &name), -EINVAL);
}

#define FOLLOW FSX_FOLLOW_ROOT_SYMLINKS

/* Identity of dirfd/path (following nothing) and of an fd. */
static void same_dir(int fd, int dirfd, const char *path)
{
	struct stat a, b;
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstatat(dirfd, path, &b, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISDIR(b.st_mode));
	assert_int_equal(a.st_dev, b.st_dev);
	assert_int_equal(a.st_ino, b.st_ino);
	close(fd);
}

/* The merged-/usr layout: lib -> usr/lib, written through; the final
 * component is still never followed. */
static void follow_root_link(void **state)
{
	struct scratch *s = *state;
	assert_int_equal(mkdirat(s->fd, "usr", 0755), 0);
	assert_int_equal(mkdirat(s->fd, "usr/lib", 0755), 0);
	assert_int_equal(symlinkat("usr/lib", s->fd, "lib"), 0);

	/* Without the flag: refused as before. */
	assert_int_equal(fsx_open_dir_at(s->fd, "/lib", 0, 0), -ELOOP);
	const char *name;
	assert_int_equal(fsx_open_parent_at(s->fd, "/lib/modules-load.d/x.conf", FSX_MKDIR, 0755, &name), -ELOOP);

	same_dir(fsx_open_dir_at(s->fd, "/lib", FOLLOW, 0), s->fd, "usr/lib");
	int fd = fsx_open_parent_at(s->fd, "/lib/modules-load.d/x.conf", FOLLOW | FSX_MKDIR, 0755, &name);
	assert_true(fd >= 0);
	assert_string_equal(name, "x.conf");
	assert_int_equal(fsx_write_atomic_at(fd, name, "br_netfilter\n", 13, 0644, FSX_UID_KEEP, FSX_GID_KEEP, 0), 1);
	close(fd);
	_cleanup_free_ char *v = NULL;
	size_t len;
	assert_int_equal(fsx_read_at(s->fd, "usr/lib/modules-load.d/x.conf", 100, &v, &len), 0);
	assert_string_equal(v, "br_netfilter\n");
	struct stat st;
	assert_int_equal(fstatat(s->fd, "lib", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(st.st_mode));

	/* A dangling link (an image's opt -> var/opt before var/opt exists):
	 * FSX_MKDIR creates the target's directories. */
	assert_int_equal(symlinkat("var/opt", s->fd, "opt"), 0);
	assert_int_equal(fsx_open_dir_at(s->fd, "/opt/x", FOLLOW, 0), -ENOENT);
	same_dir(fsx_open_dir_at(s->fd, "/opt/x", FOLLOW | FSX_MKDIR, 0755), s->fd, "var/opt/x");

	/* The final component: opened as a directory through a trusted link
	 * (fsx_open_dir_at), but fsx_read_at and fsx_open_parent_at's name
	 * never follow it. */
	assert_int_equal(symlinkat("x.conf", s->fd, "usr/lib/modules-load.d/y.conf"), 0);
	_cleanup_free_ char *w = NULL;
	assert_int_equal(fsx_read_at(s->fd, "lib/modules-load.d/y.conf", 100, &w, &len), -ELOOP);
	fd = fsx_open_parent_at(s->fd, "/lib/modules-load.d/y.conf", FOLLOW, 0, &name);
	assert_true(fd >= 0);
	assert_int_equal(fsx_write_atomic_at(fd, name, "z", 1, 0644, FSX_UID_KEEP, FSX_GID_KEEP, 0), 1);
	close(fd);
	assert_int_equal(fstatat(s->fd, "usr/lib/modules-load.d/y.conf", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	free(v);
	v = NULL;
	assert_int_equal(fsx_read_at(s->fd, "usr/lib/modules-load.d/x.conf", 100, &v, &len), 0);
	assert_string_equal(v, "br_netfilter\n");

	/* A trusted link to something that is not a directory. */
	assert_int_equal(symlinkat("usr/lib/modules-load.d/x.conf", s->fd, "file"), 0);
	assert_int_equal(fsx_open_dir_at(s->fd, "file", FOLLOW, 0), -ENOTDIR);
	/* The caller's own ".." stays refused. */
	assert_int_equal(fsx_open_dir_at(s->fd, "lib/..", FOLLOW, 0), -EPERM);
	assert_int_equal(fsx_open_dir_at(s->fd, "usr/../usr", FOLLOW, 0), -EPERM);
}

/* Links that someone but root could have made are refused, with the flag. */
static void refuse_untrusted_links(void **state)
{
	struct scratch *s = *state;
	if (geteuid() != 0)
		skip(); /* chown to other users */
	static const struct {
		const char *dir;
		mode_t mode;
		uid_t dir_uid, link_uid;
		int expect;
	} cases[] = {
		{ "ok", 0755, 0, 0, 0 },
		{ "ok-sticky-private", 01755, 0, 0, 0 },
		{ "world", 0777, 0, 0, -ELOOP },
		{ "tmp", 01777, 0, 0, -ELOOP },
		{ "group", 0775, 0, 0, -ELOOP },
		{ "group-only", 0730, 0, 0, -ELOOP },
		{ "userdir", 0755, 1234, 0, -ELOOP },
		{ "userlink", 0755, 0, 1234, -ELOOP },
		{ "both", 0700, 1234, 1234, -ELOOP },
	};
	assert_int_equal(mkdirat(s->fd, "target", 0755), 0);
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char link[64];
		snprintf(link, sizeof(link), "%s/l", cases[i].dir);
		assert_int_equal(mkdirat(s->fd, cases[i].dir, 0700), 0);
		assert_int_equal(symlinkat("../target", s->fd, link), 0);
		assert_int_equal(fchownat(s->fd, link, cases[i].link_uid, cases[i].link_uid, AT_SYMLINK_NOFOLLOW), 0);
		assert_int_equal(fchownat(s->fd, cases[i].dir, cases[i].dir_uid, 0, 0), 0);
		assert_int_equal(fchmodat(s->fd, cases[i].dir, cases[i].mode, 0), 0);
		int fd = fsx_open_dir_at(s->fd, link, FOLLOW, 0);
		if (cases[i].expect == 0) {
			same_dir(fd, s->fd, "target");
		} else {
			if (fd != cases[i].expect)
				fail_msg("%s: %d, expected %d", cases[i].dir, fd, cases[i].expect);
			/* Also as a directory further down the path, with MKDIR:
			 * nothing is created in the target. */
			char deeper[80];
			snprintf(deeper, sizeof(deeper), "%s/new/file", link);
			const char *name;
			assert_int_equal(fsx_open_parent_at(s->fd, deeper, FOLLOW | FSX_MKDIR, 0755, &name), -ELOOP);
			assert_int_equal(faccessat(s->fd, "target/new", F_OK, AT_SYMLINK_NOFOLLOW), -1);
		}
	}
}

/* An absolute target resolves inside the root fd, not on the host; ".." in
 * a target climbs but never above the root fd. */
static void link_targets_stay_in_root(void **state)
{
	struct scratch *s = *state;
	assert_int_equal(mkdirat(s->fd, "etc", 0755), 0);
	assert_int_equal(mkdirat(s->fd, "usr", 0755), 0);
	assert_int_equal(mkdirat(s->fd, "a", 0755), 0);
	assert_int_equal(mkdirat(s->fd, "a/b", 0755), 0);

	/* "/etc" means the root's etc. The host's /etc is a different dir. */
	assert_int_equal(symlinkat("/etc", s->fd, "a/b/abs"), 0);
	int fd = fsx_open_dir_at(s->fd, "a/b/abs", FOLLOW, 0);
	struct stat st, host;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(stat("/etc", &host), 0);
	assert_false(st.st_dev == host.st_dev && st.st_ino == host.st_ino);
	same_dir(fd, s->fd, "etc");
	/* A host path that does not exist in the root is not found there. */
	assert_int_equal(symlinkat("/tmp", s->fd, "hosttmp"), 0);
	assert_int_equal(fsx_open_dir_at(s->fd, "hosttmp", FOLLOW, 0), -ENOENT);
	/* A link whose target names the root's own path on the host resolves
	 * below the root as well: created there with MKDIR, not in the root. */
	assert_int_equal(symlinkat(s->path, s->fd, "self"), 0);
	fd = fsx_open_dir_at(s->fd, "self/made", FOLLOW | FSX_MKDIR, 0755);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(faccessat(s->fd, "made", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	char inside[128];
	snprintf(inside, sizeof(inside), "%s/made", s->path + 1);
	assert_int_equal(faccessat(s->fd, inside, F_OK, AT_SYMLINK_NOFOLLOW), 0);

	/* ".." climbs inside the root ... */
	assert_int_equal(symlinkat("../../usr", s->fd, "a/b/up2"), 0);
	same_dir(fsx_open_dir_at(s->fd, "a/b/up2", FOLLOW, 0), s->fd, "usr");
	assert_int_equal(symlinkat("/a/../etc", s->fd, "a/b/absup"), 0);
	same_dir(fsx_open_dir_at(s->fd, "a/b/absup", FOLLOW, 0), s->fd, "etc");
	/* ... physically: lib -> usr/lib, then lib/.. is usr (as the kernel). */
	assert_int_equal(mkdirat(s->fd, "usr/lib", 0755), 0);
	assert_int_equal(symlinkat("usr/lib", s->fd, "lib"), 0);
	assert_int_equal(symlinkat("../lib/..", s->fd, "a/viausr"), 0);
	same_dir(fsx_open_dir_at(s->fd, "a/viausr", FOLLOW, 0), s->fd, "usr");
	/* ... but never above it. */
	static const char *const escapes[] = { "../../../etc", "../../..", "/..", "/../etc", "../../a/../../etc",
					       "/a/b/../../..", "./../../../" };
	for (size_t i = 0; i < ELEMENTSOF(escapes); i++) {
		char name[32];
		snprintf(name, sizeof(name), "a/b/esc%zu", i);
		assert_int_equal(symlinkat(escapes[i], s->fd, name), 0);
		int r = fsx_open_dir_at(s->fd, name, FOLLOW | FSX_MKDIR, 0755);
		if (r != -EPERM)
			fail_msg("link to '%s': %d, expected -EPERM", escapes[i], r);
	}
	/* A target that leaves no room for the rest of the path. */
	char longt[PATH_MAX];
	memset(longt, 'x', sizeof(longt) - 1);
	longt[sizeof(longt) - 1] = '\0';
	for (size_t i = NAME_MAX; i < sizeof(longt) - 1; i += NAME_MAX + 1)
		longt[i] = '/';
	assert_int_equal(symlinkat(longt, s->fd, "long"), 0);
	assert_int_equal(fsx_open_dir_at(s->fd, "long", FOLLOW, 0), -ENAMETOOLONG);
}

/* Chains of links: FSX_SYMLINK_HOPS_MAX are followed, one more is -ELOOP,
 * and a loop ends. */
static void hop_limit(void **state)
{
	struct scratch *s = *state;
	char name[32], target[32];
	assert_int_equal(mkdirat(s->fd, "end", 0755), 0);
	/* l0 -> l1 -> ... -> l<MAX> -> end: MAX + 1 links from l0. */
	for (int i = 0; i <= FSX_SYMLINK_HOPS_MAX; i++) {
		snprintf(name, sizeof(name), "l%d", i);
		if (i == FSX_SYMLINK_HOPS_MAX)
			snprintf(target, sizeof(target), "end");
		else
			snprintf(target, sizeof(target), "l%d", i + 1);
		assert_int_equal(symlinkat(target, s->fd, name), 0);
	}
	same_dir(fsx_open_dir_at(s->fd, "l1", FOLLOW, 0), s->fd, "end");
	assert_int_equal(fsx_open_dir_at(s->fd, "l0", FOLLOW, 0), -ELOOP);
	assert_int_equal(symlinkat("loop", s->fd, "loop"), 0);
	assert_int_equal(fsx_open_dir_at(s->fd, "loop/x", FOLLOW | FSX_MKDIR, 0755), -ELOOP);
	assert_int_equal(symlinkat("grow/x", s->fd, "grow"), 0);
	int r = fsx_open_dir_at(s->fd, "grow", FOLLOW, 0);
	assert_true(r == -ELOOP || r == -ENAMETOOLONG);
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

/* With 0 and 2 closed, a file opened afterwards must not become stderr. */
static void std_fds(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(0);
		close(2);
		if (fsx_std_fds() < 0 || fcntl(0, F_GETFD) < 0 || fcntl(2, F_GETFD) < 0)
			_exit(1);
		int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		_exit(fd > 2 && fsx_std_fds() == 0 ? 0 : 2);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* The label hook (fsx_set_label): what it was asked, in order. */
static char hook_log[512];
static int hook_fail_on_dir; /* prepare() refuses directories with this */
static int hook_open;        /* prepare() without done() yet */

static int hook_prepare(int dirfd, const char *name, mode_t type)
{
	struct stat st;
	assert_int_equal(fstat(dirfd, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(hook_open, 0);
	size_t n = strlen(hook_log);
	snprintf(hook_log + n, sizeof(hook_log) - n, "%s%s:%s", n ? " " : "", S_ISDIR(type) ? "dir" : "file", name);
	if (S_ISDIR(type) && hook_fail_on_dir)
		return hook_fail_on_dir;
	hook_open = 1;
	return 0;
}

static void hook_done(void)
{
	hook_open = 0;
}

/* Every directory a walk makes and every file fsx writes goes through the
 * hook first, a temporary under the name it will be renamed to; the hook's
 * error fails the creation and nothing is made; existing directories and
 * files left as they are do not call it. */
static void label_hook(void **state)
{
	struct scratch *s = *state;
	static const struct fsx_label hook = { .prepare = hook_prepare, .done = hook_done };
	fsx_set_label(&hook);
	hook_log[0] = '\0';
	hook_fail_on_dir = 0;
	assert_int_equal(mkdirat(s->fd, "opt", 0755), 0);
	_cleanup_close_ int d = fsx_open_dir_at(s->fd, "opt/bin/x", FSX_MKDIR, 0755);
	assert_true(d >= 0);
	assert_string_equal(hook_log, "dir:bin dir:x");
	hook_log[0] = '\0';
	assert_int_equal(fsx_write_atomic_at(d, "kubelet", "k", 1, 0755, FSX_UID_KEEP, FSX_GID_KEEP, FSX_SKIP_IF_SAME), 1);
	assert_string_equal(hook_log, "file:kubelet");
	hook_log[0] = '\0';
	assert_int_equal(fsx_write_atomic_at(d, "kubelet", "k", 1, 0755, FSX_UID_KEEP, FSX_GID_KEEP, FSX_SKIP_IF_SAME), 0);
	_cleanup_close_ int again = fsx_open_dir_at(s->fd, "opt/bin/x", FSX_MKDIR, 0755);
	assert_true(again >= 0);
	assert_string_equal(hook_log, "");

	hook_fail_on_dir = -EACCES;
	assert_int_equal(fsx_open_dir_at(s->fd, "opt/sbin", FSX_MKDIR, 0755), -EACCES);
	assert_int_equal(faccessat(s->fd, "opt/sbin", F_OK, 0), -1);
	assert_int_equal(hook_open, 0);
	fsx_set_label(NULL);
	hook_log[0] = '\0';
	_cleanup_close_ int plain = fsx_open_dir_at(s->fd, "opt/sbin", FSX_MKDIR, 0755);
	assert_true(plain >= 0);
	assert_string_equal(hook_log, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(temp_names),
		cmocka_unit_test_setup_teardown(for_each_temp, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(write_then_skip_same, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(write_replaces_symlink_not_target, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(read_limits_and_refusals, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(dir_walk, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(follow_root_link, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(refuse_untrusted_links, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(link_targets_stay_in_root, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(hop_limit, setup, scratch_teardown),
		cmocka_unit_test(path_safety),
		cmocka_unit_test(std_fds),
		cmocka_unit_test_setup_teardown(label_hook, setup, scratch_teardown),
	};
	return cmocka_run_group_tests_name("fsx", tests, NULL, NULL);
}
