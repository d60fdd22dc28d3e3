/* seccomp allow-list; see sandbox.h. */
#include <errno.h>
#include <seccomp.h>

#include "cleanup.h"
#include "sandbox.h"

static inline void seccomp_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

/* Needed by every process to end or to return from a signal handler. */
static const char *const always[] = { "exit", "exit_group", "rt_sigreturn" };

#ifdef NA_SANITIZER
/* What the ASan/UBSan/LSan runtimes call after main() has started: reports
 * (write, readlink of /proc/self/exe, open of /proc/self/maps), shadow and
 * quarantine memory, the alternate signal stack, and LSan's leak check at
 * exit, which clones a tracer (a separate process sharing our memory, so
 * the filter's kill would hit it alone and leave us spinning) that lists
 * /proc/self/task and ptraces every thread. */
static const char *const sanitizer[] = {
	"brk", "clock_gettime", "clone", "close", "fstat", "futex", "getdents", "getdents64", "getpid",
	"getppid", "gettid", "getrlimit", "ioctl", "kill", "lseek", "madvise", "mmap", "mprotect", "mremap",
	"munmap", "newfstatat", "open", "openat", "pipe2", "prctl", "prlimit64", "ptrace",
	"read", "readlink", "readlinkat", "rt_sigaction", "rt_sigprocmask", "sched_getaffinity",
	"sched_yield", "sigaltstack", "statx", "tgkill", "uname", "wait4", "waitpid", "write",
	"writev", "process_vm_readv",
};
#endif

static int allow_names(scmp_filter_ctx ctx, const char *const *names, size_t n, const char **reterr_name)
{
	for (size_t i = 0; i < n; i++) {
		int nr = seccomp_syscall_resolve_name(names[i]);
		if (nr == __NR_SCMP_ERROR) {
			if (reterr_name)
				*reterr_name = names[i];
			return -EINVAL;
		}
		int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		/* -EEXIST: listed twice (or also in a built-in list): fine. */
		if (r < 0 && r != -EEXIST) {
			if (reterr_name)
				*reterr_name = names[i];
			return r;
		}
	}
	return 0;
}

int sandbox_install(const char *const *allow, size_t n, const char **reterr_name)
{
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!ctx)
		return -ENOMEM;

	int r = allow_names(ctx, always, ELEMENTSOF(always), reterr_name);
	if (r < 0)
		return r;
#ifdef NA_SANITIZER
	r = allow_names(ctx, sanitizer, ELEMENTSOF(sanitizer), reterr_name);
	if (r < 0)
		return r;
#endif
	r = allow_names(ctx, allow, n, reterr_name);
	if (r < 0)
		return r;
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r < 0 && r != -EEXIST)
		return r;
	return seccomp_load(ctx);
}
