/* Children with a deadline; see child.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "cleanup.h"

static long ms_since(const struct timespec *start)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

static void reap(pid_t pid, bool kill_it, int *status)
{
	if (kill_it)
		kill(pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
}

struct buf_sink {
	char *buf;
	size_t len, max;
};

static int buf_append(void *userdata, const void *data, size_t len)
{
	struct buf_sink *b = userdata;
	if (len > b->max - b->len)
		return -EFBIG;
	memcpy(b->buf + b->len, data, len);
	b->len += len;
	return 0;
}

static int run(const char *path, char *const argv[], char *const envp[], unsigned idle_ms, unsigned total_ms,
	       bool merge_stderr, int (*sink)(void *userdata, const void *data, size_t len), void *userdata,
	       int *ret_status);

static int run_buffered(const char *path, char *const argv[], char *const envp[], unsigned timeout_ms, size_t out_max,
			bool merge_stderr, char **ret_out, size_t *ret_len, int *ret_status)
{
	_cleanup_free_ char *buf = malloc(out_max + 1);
	if (!buf)
		return -ENOMEM;
	struct buf_sink b = { .buf = buf, .max = out_max };
	int r = run(path, argv, envp, timeout_ms, timeout_ms, merge_stderr, buf_append, &b, ret_status);
	if (r < 0)
		return r;
	buf[b.len] = '\0';
	if (ret_out) {
		*ret_out = TAKE_PTR(buf);
		*ret_len = b.len;
	}
	return 0;
}

int child_run(const char *path, char *const argv[], char *const envp[], unsigned timeout_ms, size_t out_max,
	      char **ret_out, size_t *ret_len, int *ret_status)
{
	return run_buffered(path, argv, envp, timeout_ms, out_max, false, ret_out, ret_len, ret_status);
}

int child_run_merged(const char *path, char *const argv[], char *const envp[], unsigned timeout_ms, size_t out_max,
		     char **ret_out, size_t *ret_len, int *ret_status)
{
	return run_buffered(path, argv, envp, timeout_ms, out_max, true, ret_out, ret_len, ret_status);
}

int child_run_sink(const char *path, char *const argv[], char *const envp[], unsigned timeout_ms,
		   int (*sink)(void *userdata, const void *data, size_t len), void *userdata, int *ret_status)
{
	return child_run_stream(path, argv, envp, timeout_ms, timeout_ms, sink, userdata, ret_status);
}

int child_run_stream(const char *path, char *const argv[], char *const envp[], unsigned idle_ms, unsigned total_ms,
		     int (*sink)(void *userdata, const void *data, size_t len), void *userdata, int *ret_status)
{
	return run(path, argv, envp, idle_ms, total_ms, false, sink, userdata, ret_status);
}

static int run(const char *path, char *const argv[], char *const envp[], unsigned idle_ms, unsigned total_ms,
	       bool merge_stderr, int (*sink)(void *userdata, const void *data, size_t len), void *userdata,
	       int *ret_status)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return negerrno();
	_cleanup_close_ int rfd = p[0];
	int wfd = p[1];
	pid_t pid = fork();
	if (pid < 0) {
		int r = negerrno();
		close(wfd);
		return r;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (devnull < 0 || dup2(devnull, STDIN_FILENO) < 0 || dup2(wfd, STDOUT_FILENO) < 0 ||
		    (merge_stderr && dup2(wfd, STDERR_FILENO) < 0))
			_exit(127);
		syscall(SYS_close_range, 3U, ~0U, 0U);
		execve(path, argv, envp);
		_exit(127);
	}
	close(wfd);

	struct timespec start, last;
	clock_gettime(CLOCK_MONOTONIC, &start);
	last = start;
	int status = 0, r = 0;
	for (;;) {
		long left = (long)total_ms - ms_since(&start), idle_left = (long)idle_ms - ms_since(&last);
		if (idle_left < left)
			left = idle_left;
		if (left <= 0) {
			reap(pid, true, &status);
			return -ETIMEDOUT;
		}
		struct pollfd pfd = { .fd = rfd, .events = POLLIN };
		int n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno != EINTR) {
			r = negerrno();
			reap(pid, true, &status);
			return r;
		}
		if (n <= 0)
			continue;
		/* One pipe's worth at a time: memory stays this buffer
		 * whatever the child writes. */
		char tmp[64 * 1024];
		ssize_t k = read(rfd, tmp, sizeof(tmp));
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0)
			break; /* EOF: the child (and anything it started) closed stdout */
		clock_gettime(CLOCK_MONOTONIC, &last);
		if ((r = sink(userdata, tmp, (size_t)k)) < 0) {
			reap(pid, true, &status);
			return r;
		}
	}
	/* stdout closed; the child must still end within the deadlines. */
	clock_gettime(CLOCK_MONOTONIC, &last);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return negerrno();
		if (ms_since(&start) > (long)total_ms || ms_since(&last) > (long)idle_ms) {
			reap(pid, true, &status);
			return -ETIMEDOUT;
		}
		struct timespec d = { 0, 10 * 1000 * 1000 };
		nanosleep(&d, NULL);
	}
	*ret_status = status;
	return 0;
}
