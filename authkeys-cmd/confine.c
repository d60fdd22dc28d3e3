/* authkeys-cmd's seccomp allow-list; see confine.h.
 *
 * Found with strace over every path of the program (found, not found,
 * corrupt, EPIPE, deadline) in the static build; the dynamic (sanitizer)
 * build needs nothing more after main() but what sandbox.c adds for the
 * sanitizer runtime. */
#include "cleanup.h"
#include "confine.h"
#include "sandbox.h"

static const char *const allow[] = {
	/* the snapshot: walk to it without following symlinks, check, map */
	"openat", "newfstatat", "fstat", "mmap", "munmap", "close",
	/* malloc */
	"brk",
	/* output to sshd, and the journal (socket opened by log_open()) */
	"write", "sendmsg",
	/* time() when the vDSO is unavailable; disarm the deadline */
	"clock_gettime", "gettimeofday", "setitimer",
};

int akc_confine(const char **reterr_name)
{
	return sandbox_install(allow, ELEMENTSOF(allow), reterr_name);
}
