/* The allow-list; see filter.h. */
#include "cleanup.h"
#include "filter.h"
#include "sandbox.h"

static const char *const allow[] = {
	/* memory, threads (libcurl's threaded resolver), time, randomness */
	"brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "futex", "clone", "set_robust_list", "rseq",
	"sched_yield", "clock_gettime", "clock_nanosleep", "nanosleep", "gettimeofday", "getrandom", "sysinfo",
	"uname", "prlimit64", "getpid", "gettid", "getuid", "geteuid", "getgid", "getegid", "rt_sigaction",
	"rt_sigprocmask", "tgkill", "restart_syscall",
	/* files: config reload, token, CA bundle, desired/result, host keys */
	"openat", "close", "read", "pread64", "readv", "write", "writev", "lseek", "fstat", "newfstatat", "statx",
	"stat", "lstat", "access", "faccessat", "faccessat2", "fcntl", "ioctl", "fsync", "fdatasync", "fchmod",
	"fchown", "renameat", "renameat2", "unlinkat", "mkdirat", "readlink", "getdents64", "inotify_add_watch",
	"inotify_rm_watch",
	/* network: TCP to the API server, AF_UNIX to the journal and systemd */
	"socket", "connect", "getsockopt", "setsockopt", "getsockname", "getpeername", "sendto", "recvfrom",
	"sendmsg", "recvmsg", "sendmmsg", "shutdown", "bind", "poll", "ppoll", "pipe2", "socketpair", "eventfd2",
	/* the healthz/metrics listener (agent/httpd.c) */
	"listen", "accept4",
};

int filter_install(const char **reterr_name)
{
	return sandbox_install(allow, ELEMENTSOF(allow), reterr_name);
}
