/* A seccomp allow-list for the node-agent programs, through libseccomp.
 *
 * Each program names the system calls it needs after start-up and installs
 * the filter before it reads any outside input. Everything else kills the
 * whole process with SIGSYS (SCMP_ACT_KILL_PROCESS), so a compromised parser
 * cannot open sockets, exec, ptrace or change credentials. The filter also
 * sets no_new_privs (libseccomp does so by default) and, by libseccomp's
 * default, kills on a foreign architecture (i386/x32 calling conventions).
 *
 * No logging, no global state: the caller reports failures. */
#ifndef NA_SANDBOX_H
#define NA_SANDBOX_H

#include <stddef.h>

/* Installs the filter on the calling thread (and everything it forks or
 * starts later). allow[0..n) are syscall names as in <sys/syscall.h> without
 * the prefix ("read", "openat", ...). Always allowed in addition, because no
 * process can end without them: exit, exit_group, rt_sigreturn. clone3 is
 * answered with ENOSYS, never killed: glibc >= 2.34 tries clone3 first and
 * falls back to clone only on ENOSYS (allow "clone" to create threads).
 *
 * Built with -DNA_SANITIZER (make check-sanitize) the list is widened by
 * what ASan/UBSan/LSan call at runtime (sigaltstack, prctl, readlink, mmap
 * with shadow memory, the LSan tracer at exit, ...), so the same code runs
 * under sanitizers; a sanitizer build is therefore a weaker sandbox.
 *
 * Returns 0 once the filter is loaded. -EINVAL if a name is unknown on this
 * architecture (then *reterr_name, when non-NULL, points at that name and
 * nothing is installed), -ENOMEM, or libseccomp's -errno from loading. */
int sandbox_install(const char *const *allow, size_t n, const char **reterr_name);

#endif
