/* Running a helper program (containerd, ctr) as a child: by absolute path,
 * with a fixed minimal environment, stdin from /dev/null, every other fd
 * closed, stdout captured up to a ceiling, stderr to our own stderr (the
 * journal), and a deadline after which the child is killed (SIGKILL). The
 * child inherits the executor's seccomp filters (confine.h): no Internet
 * sockets. */
#ifndef CCE_CHILD_H
#define CCE_CHILD_H

#include <stddef.h>

/* Runs path with argv (argv[0] included, NULL-terminated) and envp. On
 * return 0 the child ended by itself: *ret_status is its wait status and,
 * when ret_out is non-NULL, *ret_out (free()) / *ret_len hold what it wrote
 * to stdout (NUL-terminated; more than out_max bytes is -EFBIG). -ETIMEDOUT
 * after timeout_ms (the child was killed), -errno when it cannot be started.
 * Does not log. */
int child_run(const char *path, char *const argv[], char *const envp[], unsigned timeout_ms, size_t out_max,
	      char **ret_out, size_t *ret_len, int *ret_status);

/* As child_run(), but what the child writes to stdout goes to sink as it
 * comes, in pieces of at most 64 KiB (memory bounded whatever it writes); a
 * sink error kills the child and is returned. */
int child_run_sink(const char *path, char *const argv[], char *const envp[], unsigned timeout_ms,
		   int (*sink)(void *userdata, const void *data, size_t len), void *userdata, int *ret_status);

#endif
