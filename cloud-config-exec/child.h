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

/* As child_run(), with the child's stderr into the same buffer as its
 * stdout (a child whose message belongs in a verdict, not in the journal). */
int child_run_merged(const char *path, char *const argv[], char *const envp[], unsigned timeout_ms, size_t out_max,
		     char **ret_out, size_t *ret_len, int *ret_status);

/* As child_run(), but what the child writes to stdout goes to sink as it
 * comes, in pieces of at most 64 KiB (memory bounded whatever it writes); a
 * sink error kills the child and is returned. */
int child_run_sink(const char *path, char *const argv[], char *const envp[], unsigned timeout_ms,
		   int (*sink)(void *userdata, const void *data, size_t len), void *userdata, int *ret_status);

/* As child_run_sink(), for a stream whose length only bounds its time (an
 * image layer: 28 MiB of gzip inflated and hashed twice took more than 60 s
 * on a Debian 12 node under qemu's TCG): the child is killed when it writes
 * nothing for idle_ms (and, after its stdout closed, when it has not ended
 * idle_ms later), or when total_ms have passed since it started; both give
 * -ETIMEDOUT. child_run_sink(timeout) is this with idle_ms = total_ms. */
int child_run_stream(const char *path, char *const argv[], char *const envp[], unsigned idle_ms, unsigned total_ms,
		     int (*sink)(void *userdata, const void *data, size_t len), void *userdata, int *ret_status);

#endif
