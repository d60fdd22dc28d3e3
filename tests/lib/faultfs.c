/* faultfs.so: an LD_PRELOAD shim for the disk fault tests. It counts the
 * calls that change a file system ("write steps") and makes a chosen one
 * fail with a chosen errno, without touching the file system for it:
 *
 *   FAULTFS_OPS    comma list of the kinds counted (default: all of them):
 *                  open (open/openat for writing or creating), write (write,
 *                  pwrite, writev on fds > 2: stdout/stderr are logs), fsync
 *                  (fsync, fdatasync), rename (rename, renameat, renameat2),
 *                  mkdir, unlink, link, chmod (fchmod, fchmodat), chown
 *                  (fchown, fchownat), truncate (ftruncate)
 *   FAULTFS_PATH   only path calls whose path contains this substring
 *                  count (write/fsync/... on fds are always counted)
 *   FAULTFS_FAIL   N: the Nth counted call fails; N+: it and every later one;
 *                  unset or 0: count only
 *   FAULTFS_ERRNO  ENOSPC (default), EIO, EROFS, EDQUOT, EFBIG or a number;
 *                  KILL: instead of failing, the process gets SIGKILL just
 *                  before that call (a kill -9 at an exact write step);
 *                  STOP: the process stops itself (SIGSTOP) just before that
 *                  call, which then goes ahead normally once it gets SIGCONT
 *                  (a test changes something at an exact step of a run)
 *   FAULTFS_LOG    a file that gets one line per counted call:
 *                  "<n> <op> <path or fd> <ok|FAIL>"
 *
 * Everything is resolved and the log opened in a constructor, before the
 * program's seccomp filter goes on; afterwards the shim makes no system
 * call of its own except the log write(2), which every filter allows. Not
 * thread-safe (the programs it is used with are single-threaded). Test-only:
 * built as $(B)/tools/faultfs.so, never installed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum op { OP_OPEN, OP_WRITE, OP_FSYNC, OP_RENAME, OP_MKDIR, OP_UNLINK, OP_LINK, OP_CHMOD, OP_CHOWN, OP_TRUNCATE, OP_N };
static const char *const op_names[OP_N] = { "open", "write", "fsync", "rename", "mkdir",
					     "unlink", "link", "chmod", "chown", "truncate" };

static bool counted[OP_N];
static const char *path_filter;
static unsigned long fail_at, calls;
static bool fail_after;
static int fail_errno = ENOSPC;
static int signal_instead; /* SIGKILL or SIGSTOP instead of failing; 0: fail */
static int log_fd = -1;

static int (*real_openat)(int, const char *, int, ...);
static int (*real_open)(const char *, int, ...);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned);
static int (*real_mkdirat)(int, const char *, mode_t);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_unlink)(const char *);
static int (*real_linkat)(int, const char *, int, const char *, int);
static int (*real_fchmod)(int, mode_t);
static int (*real_fchmodat)(int, const char *, mode_t, int);
static int (*real_fchown)(int, uid_t, gid_t);
static int (*real_fchownat)(int, const char *, uid_t, gid_t, int);
static int (*real_ftruncate)(int, off_t);

static int parse_errno(const char *s)
{
	static const struct {
		const char *name;
		int e;
	} names[] = { { "ENOSPC", ENOSPC }, { "EIO", EIO }, { "EROFS", EROFS }, { "EDQUOT", EDQUOT }, { "EFBIG", EFBIG } };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0)
			return names[i].e;
	char *end;
	long v = strtol(s, &end, 10);
	return (*s && !*end && v > 0 && v < 4096) ? (int)v : ENOSPC;
}

__attribute__((constructor)) static void faultfs_init(void)
{
#define RESOLVE(name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)
	RESOLVE(openat);
	RESOLVE(open);
	RESOLVE(write);
	RESOLVE(pwrite);
	RESOLVE(writev);
	RESOLVE(fsync);
	RESOLVE(fdatasync);
	RESOLVE(rename);
	RESOLVE(renameat);
	RESOLVE(renameat2);
	RESOLVE(mkdirat);
	RESOLVE(mkdir);
	RESOLVE(unlinkat);
	RESOLVE(unlink);
	RESOLVE(linkat);
	RESOLVE(fchmod);
	RESOLVE(fchmodat);
	RESOLVE(fchown);
	RESOLVE(fchownat);
	RESOLVE(ftruncate);
#undef RESOLVE

	const char *ops = getenv("FAULTFS_OPS");
	for (int i = 0; i < OP_N; i++) {
		if (!ops || !*ops) {
			counted[i] = true;
			continue;
		}
		size_t l = strlen(op_names[i]);
		for (const char *p = ops; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
			if (strncmp(p, op_names[i], l) == 0 && (p[l] == ',' || p[l] == '\0'))
				counted[i] = true;
	}
	path_filter = getenv("FAULTFS_PATH");
	if (path_filter && !*path_filter)
		path_filter = NULL;
	const char *f = getenv("FAULTFS_FAIL");
	if (f) {
		char *end;
		fail_at = strtoul(f, &end, 10);
		fail_after = *end == '+';
	}
	const char *e = getenv("FAULTFS_ERRNO");
	if (e && strcmp(e, "KILL") == 0)
		signal_instead = SIGKILL;
	else if (e && strcmp(e, "STOP") == 0)
		signal_instead = SIGSTOP;
	else if (e)
		fail_errno = parse_errno(e);
	const char *l = getenv("FAULTFS_LOG");
	if (l && real_open)
		log_fd = real_open(l, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

static void log_call(enum op op, const char *what, int fd, bool failed)
{
	if (log_fd < 0)
		return;
	char line[512];
	int n = what ? snprintf(line, sizeof(line), "%lu %s %s %s\n", calls, op_names[op], what, failed ? "FAIL" : "ok")
		     : snprintf(line, sizeof(line), "%lu %s fd:%d %s\n", calls, op_names[op], fd, failed ? "FAIL" : "ok");
	if (n > 0)
		(void)real_write(log_fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* Counts one call; returns true when it is to fail (errno is then set). */
static bool inject(enum op op, const char *path, int fd)
{
	if (!counted[op])
		return false;
	if (path && path_filter && !strstr(path, path_filter))
		return false;
	if (!path && fd >= 0 && fd <= 2 && op == OP_WRITE)
		return false;
	calls++;
	bool fail = fail_at > 0 && (calls == fail_at || (fail_after && calls > fail_at));
	log_call(op, path, fd, fail);
	if (fail && signal_instead) { /* tgkill: the daemons' seccomp filters allow it */
		syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), signal_instead);
		return false; /* SIGSTOP: after SIGCONT the call is made */
	}
	if (fail)
		errno = fail_errno;
	return fail;
}

static bool open_writes(int flags)
{
	return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0;
}

int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & (O_CREAT | __O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (open_writes(flags) && inject(OP_OPEN, path, -1))
		return -1;
	return real_openat(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & (O_CREAT | __O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (open_writes(flags) && inject(OP_OPEN, path, -1))
		return -1;
	return real_open(path, flags, mode);
}
int open64(const char *path, int flags, ...) __attribute__((alias("open")));

ssize_t write(int fd, const void *buf, size_t len)
{
	if (inject(OP_WRITE, NULL, fd))
		return -1;
	return real_write(fd, buf, len);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	if (inject(OP_WRITE, NULL, fd))
		return -1;
	return real_pwrite(fd, buf, len, off);
}
ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off) __attribute__((alias("pwrite")));

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	if (inject(OP_WRITE, NULL, fd))
		return -1;
	return real_writev(fd, iov, n);
}

int fsync(int fd)
{
	if (inject(OP_FSYNC, NULL, fd))
		return -1;
	return real_fsync(fd);
}

int fdatasync(int fd)
{
	if (inject(OP_FSYNC, NULL, fd))
		return -1;
	return real_fdatasync(fd);
}

int rename(const char *a, const char *b)
{
	if (inject(OP_RENAME, b, -1))
		return -1;
	return real_rename(a, b);
}

int renameat(int da, const char *a, int db, const char *b)
{
	if (inject(OP_RENAME, b, -1))
		return -1;
	return real_renameat(da, a, db, b);
}

int renameat2(int da, const char *a, int db, const char *b, unsigned flags)
{
	if (inject(OP_RENAME, b, -1))
		return -1;
	return real_renameat2(da, a, db, b, flags);
}

int mkdirat(int dirfd, const char *path, mode_t mode)
{
	if (inject(OP_MKDIR, path, -1))
		return -1;
	return real_mkdirat(dirfd, path, mode);
}

int mkdir(const char *path, mode_t mode)
{
	if (inject(OP_MKDIR, path, -1))
		return -1;
	return real_mkdir(path, mode);
}

int unlinkat(int dirfd, const char *path, int flags)
{
	if (inject(OP_UNLINK, path, -1))
		return -1;
	return real_unlinkat(dirfd, path, flags);
}

int unlink(const char *path)
{
	if (inject(OP_UNLINK, path, -1))
		return -1;
	return real_unlink(path);
}

int linkat(int da, const char *a, int db, const char *b, int flags)
{
	if (inject(OP_LINK, b, -1))
		return -1;
	return real_linkat(da, a, db, b, flags);
}

int fchmod(int fd, mode_t mode)
{
	if (inject(OP_CHMOD, NULL, fd))
		return -1;
	return real_fchmod(fd, mode);
}

int fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
	if (inject(OP_CHMOD, path, -1))
		return -1;
	return real_fchmodat(dirfd, path, mode, flags);
}

int fchown(int fd, uid_t uid, gid_t gid)
{
	if (inject(OP_CHOWN, NULL, fd))
		return -1;
	return real_fchown(fd, uid, gid);
}

int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags)
{
	if (inject(OP_CHOWN, path, -1))
		return -1;
	return real_fchownat(dirfd, path, uid, gid, flags);
}

int ftruncate(int fd, off_t len)
{
	if (inject(OP_TRUNCATE, NULL, fd))
		return -1;
	return real_ftruncate(fd, len);
}
int ftruncate64(int fd, off_t len) __attribute__((alias("ftruncate")));
