/* Journal + stderr logger; see log.h.
 *
 * One way to the journal for all three programs: the journal's native
 * protocol through lib/base/journal.c, on a datagram socket opened by log_open()
 * and written with a non-blocking sendmsg(). The reason is authkeys-cmd: it
 * runs twice per ssh login, is linked -static-pie, and loading libsystemd
 * would cost it about 0.5 ms per call, more than its whole lookup. Once it
 * speaks the protocol itself, node-agent and cloud-config-exec have no
 * reason to log differently; cloud-config-exec still links libsystemd for
 * sd-bus, node-agent speaks sd_notify itself (agent/notify.c) and links no
 * libsystemd at all.
 *
 * Each program calls log_open() before it installs its seccomp filter, so
 * the filter only has to allow sendmsg() (a datagram with msg_name needs no
 * connect()). A message logged before log_open() opens the socket on first
 * use, as libsystemd did: nothing is sandboxed that early. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "journal.h"
#include "log.h"

#define LOG_FIELDS_MAX 16
#define LOG_MESSAGE_MAX 2048

static const char *log_ident = "node-agent";
static enum log_target log_target = LOG_TARGET_AUTO;
static int log_max_level = LOG_INFO;
static int log_journal_fd = -1;
static bool log_journal_tried;

/* Opens the journal socket once; a failure is not retried (the process may
 * be under its seccomp filter by then). */
static void journal_fd_open(void)
{
	if (log_journal_tried)
		return;
	log_journal_tried = true;
	log_journal_fd = journal_open();
}

void log_open(const char *ident, enum log_target target)
{
	log_ident = ident;
	log_target = target;
	/* Opened here, before a seccomp filter that allows only sendmsg. */
	if (target != LOG_TARGET_STDERR)
		journal_fd_open();
	if (getenv("NODE_AGENT_DEBUG"))
		log_max_level = LOG_DEBUG;
}

void log_set_max_level(int level)
{
	log_max_level = level;
}

static bool want_stderr(void)
{
	switch (log_target) {
	case LOG_TARGET_STDERR:
	case LOG_TARGET_BOTH:
		return true;
	case LOG_TARGET_AUTO:
		return isatty(STDERR_FILENO);
	default:
		return false;
	}
}

static bool want_journal(void)
{
	return log_target != LOG_TARGET_STDERR;
}

/* Replaces control characters so one message stays one line on stderr and
 * in the journal, whatever a remote peer put into a quoted value. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

int log_full(int level, int error, const char *file, int line, const char *const *fields,
	     const char *fmt, ...)
{
	int saved_errno = errno;
	int r = error > 0 ? -error : error;

	if (level > log_max_level) {
		errno = saved_errno;
		return r;
	}

	char msg[LOG_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		msg[0] = '\0';
	if (r < 0 && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s", strerror(-r));
	sanitize(msg);

	if (want_journal()) {
		char f_msg[LOG_MESSAGE_MAX + 16], f_prio[24], f_ident[96], f_file[160], f_line[32], f_errno[24];
		struct iovec iov[LOG_FIELDS_MAX + 6];
		size_t k = 0;

#define ADD(buf, ...)                                                              \
	do {                                                                       \
		int _n = snprintf(buf, sizeof(buf), __VA_ARGS__);                  \
		if (_n > 0)                                                        \
			iov[k++] = (struct iovec){ buf, (size_t)_n < sizeof(buf) ? (size_t)_n : sizeof(buf) - 1 }; \
	} while (0)
		ADD(f_msg, "MESSAGE=%s", msg);
		ADD(f_prio, "PRIORITY=%d", level);
		ADD(f_ident, "SYSLOG_IDENTIFIER=%s", log_ident);
		ADD(f_file, "CODE_FILE=%s", file);
		ADD(f_line, "CODE_LINE=%d", line);
		if (r < 0)
			ADD(f_errno, "ERRNO=%d", -r);
#undef ADD
		for (size_t i = 0; fields && fields[i] && i < LOG_FIELDS_MAX; i++)
			iov[k++] = (struct iovec){ (void *)(uintptr_t)fields[i], strlen(fields[i]) };
		journal_fd_open();
		if (log_journal_fd >= 0)
			(void)journal_sendv(log_journal_fd, iov, k);
	}

	if (want_stderr())
		fprintf(stderr, "%s: %s\n", log_ident, msg);

	errno = saved_errno;
	return r;
}
