/* Logging to the journal with structured fields.
 *
 * Every program calls log_open() once with its identifier. Messages go to the
 * journal (its native protocol, lib/base/journal.h, never blocking) with MESSAGE,
 * PRIORITY, SYSLOG_IDENTIFIER, CODE_FILE/CODE_LINE and any extra "KEY=value"
 * fields the caller passes; when stderr is a terminal or log_open() was told so, they are
 * also printed to stderr as "ident: message". Library code in lib/ logs only
 * at debug level; the decision of what to report is the caller's. */
#ifndef NA_LOG_H
#define NA_LOG_H

#include <stdbool.h>
#include <syslog.h>

#include "cleanup.h"

enum log_target {
	LOG_TARGET_AUTO,    /* journal; stderr too when it is a tty */
	LOG_TARGET_JOURNAL, /* journal only (authkeys-cmd: sshd passes stderr through) */
	LOG_TARGET_STDERR,  /* stderr only (tests, --check-config) */
	LOG_TARGET_BOTH,
};

void log_open(const char *ident, enum log_target target);
void log_set_max_level(int level);

/* Logs one message. Extra fields are "KEY=value" strings, NULL-terminated;
 * the message is printf-formatted. Returns -abs(error) when error != 0, so
 * callers can write: return log_errorf_errno(r, ...). Preserves errno. */
int log_full(int level, int error, const char *file, int line, const char *const *fields,
	     const char *fmt, ...) _printf_(6, 7);

#define LOG_FIELDS(...) ((const char *const[]){ __VA_ARGS__, NULL })

#define log_debug(...)   log_full(LOG_DEBUG, 0, __FILE__, __LINE__, NULL, __VA_ARGS__)
#define log_info(...)    log_full(LOG_INFO, 0, __FILE__, __LINE__, NULL, __VA_ARGS__)
#define log_notice(...)  log_full(LOG_NOTICE, 0, __FILE__, __LINE__, NULL, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, 0, __FILE__, __LINE__, NULL, __VA_ARGS__)
#define log_error(...)   log_full(LOG_ERR, 0, __FILE__, __LINE__, NULL, __VA_ARGS__)
/* With an -errno value r: appends ": <strerror>" and returns r (negative). */
#define log_error_errno(r, ...)   log_full(LOG_ERR, (r), __FILE__, __LINE__, NULL, __VA_ARGS__)
#define log_warning_errno(r, ...) log_full(LOG_WARNING, (r), __FILE__, __LINE__, NULL, __VA_ARGS__)
#define log_debug_errno(r, ...)   log_full(LOG_DEBUG, (r), __FILE__, __LINE__, NULL, __VA_ARGS__)
/* With structured fields: log_fields(LOG_INFO, LOG_FIELDS("USER=x", "KEYS=3"), "fmt", ...). */
#define log_fields(level, fields, ...) log_full((level), 0, __FILE__, __LINE__, (fields), __VA_ARGS__)
#define log_fields_errno(level, r, fields, ...) log_full((level), (r), __FILE__, __LINE__, (fields), __VA_ARGS__)

#endif
