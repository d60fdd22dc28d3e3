/* The executor's seccomp filters; see confine.h. */
#include <errno.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "confine.h"
#include "log.h"
#include "sandbox.h"

static const char *const allow[] = {
	/* memory, time, signals, process */
	"brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "rt_sigaction", "rt_sigprocmask",
	"sigaltstack", "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getgroups",
	"getresuid", "getresgid", "clock_gettime", "clock_nanosleep", "nanosleep", "gettimeofday", "time",
	"getrandom", "uname", "prlimit64", "getrlimit", "setrlimit", "set_tid_address", "set_robust_list",
	"rseq", "arch_prctl", "futex", "sched_yield", "sched_getaffinity", "umask", "prctl", "kill", "tgkill",
	"restart_syscall", "sysinfo", "getrusage", "times",
	/* fork + exec of useradd, and waiting for it; useradd's lckpwdf()
	 * bounds its wait for the passwd lock with alarm() */
	"alarm", "clone", "fork", "vfork", "execve", "wait4", "waitid", "close_range", "setsid",
	/* what a shell needs: the OS update command (a bash script) runs under
	 * this filter with --no-systemd (ipupdate.h); bash asks its process
	 * group at start and a script may wait in sigsuspend() */
	"getpgrp", "getpgid", "setpgid", "getsid", "rt_sigsuspend", "pause",
	/* files */
	"read", "write", "readv", "writev", "pread64", "pwrite64", "lseek", "close", "openat", "open",
	"creat", "fstat", "newfstatat", "stat", "lstat", "statx", "statfs", "fstatfs", "access",
	"faccessat", "faccessat2", "readlink", "readlinkat", "getdents64", "getcwd", "chdir", "fchdir",
	"mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link",
	"linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "chown", "fchown", "fchownat",
	"lchown", "utimensat", "futimesat", "utime", "utimes", "fsync", "fdatasync", "syncfs", "ftruncate",
	"truncate", "fcntl", "flock", "dup", "dup2", "dup3", "pipe", "pipe2", "ioctl", "copy_file_range",
	"sendfile", "fadvise64", "fallocate", "getxattr", "lgetxattr", "fgetxattr", "setxattr",
	"lsetxattr", "fsetxattr", "listxattr", "llistxattr", "flistxattr", "removexattr",
	"fremovexattr", "memfd_create", "mknodat",
	/* sd-bus and the journal: AF_UNIX only (second filter) */
	"socket", "socketpair", "connect", "sendmsg", "recvmsg", "sendto", "recvfrom", "getsockopt",
	"setsockopt", "getsockname", "getpeername", "shutdown", "poll", "ppoll", "epoll_create1",
	"epoll_ctl", "epoll_wait", "epoll_pwait", "eventfd2", "timerfd_create", "timerfd_settime", "select",
	"pselect6",
	/* useradd: ids of the new files, no_new_privs is set, so no gain */
	"setgroups", "setresuid", "setresgid", "setuid", "setgid", "setfsuid", "setfsgid", "capget",
};

DEFINE_TRIVIAL_CLEANUP_FUNC(scmp_filter_ctx, seccomp_release)

int confine_install(void)
{
	/* First what socket() may create (the allow-list below forbids
	 * seccomp() itself). Filters stack; the strictest answer wins. */
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return log_error_errno(-ENOMEM, "Cannot set up the socket filter");
	int r = 0;
	for (int family = 0; family < 64 && r >= 0; family++) {
		if (family == AF_UNIX)
			continue;
		uint32_t action = family == AF_NETLINK ? SCMP_ACT_ERRNO(EAFNOSUPPORT) : SCMP_ACT_KILL_PROCESS;
		struct scmp_arg_cmp eq = { .arg = 0, .op = SCMP_CMP_EQ, .datum_a = (scmp_datum_t)family, .datum_b = 0 };
		r = seccomp_rule_add(ctx, action, SCMP_SYS(socket), 1, eq);
	}
	struct scmp_arg_cmp ge = { .arg = 0, .op = SCMP_CMP_GE, .datum_a = 64, .datum_b = 0 };
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(socket), 1, ge);
	if (r >= 0)
		r = seccomp_load(ctx);
	if (r < 0)
		return log_error_errno(r, "Cannot install the socket filter");

	const char *bad = NULL;
	r = sandbox_install(allow, ELEMENTSOF(allow), &bad);
	if (r < 0)
		return log_error_errno(r, "Cannot install the seccomp filter%s%s", bad ? ": unknown system call " : "",
				       bad ? bad : "");

	return 0;
}
