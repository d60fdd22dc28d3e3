/* `cloud-config-exec status`: the page a person debugging a node reads
 * first. It answers, in this order: when did the executor last run and how
 * did it end (the failed step and its error), what does node-agent want
 * (desired.json), what was applied last, and what is pending (a newer
 * desired state, an apply that was interrupted, a failed apply waiting for
 * its retry, a restart request not executed yet); then the units' health
 * and what the executor owns. Times are local, with the zone and the age
 * ("3 min ago").
 *
 * status_print() is pure apart from writing to out: apply_status() reads
 * the files and hands them over, the unit tests hand over structures. */
#ifndef CCE_STATUS_H
#define CCE_STATUS_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "desired.h"
#include "result.h"
#include "state.h"

struct status_view {
	const char *exec_state_dir;     /* names in the text */
	const char *state_dir;
	bool exec_dir_missing;          /* no executor state directory: never ran */
	const char *applied_checksum;   /* last-applied.yaml's, "" or NULL: none */
	const struct result *res;       /* NULL: no result.json */
	const char *res_problem;        /* result.json present but unreadable: why */
	const struct desired *desired;  /* NULL: see desired_problem */
	const char *desired_problem;    /* NULL: absent; else why it cannot be read */
	const struct state *st;         /* NULL: no state.json, or see st_problem */
	const char *st_problem;         /* state.json present but damaged: why */
	const char *timer_hint;         /* what retries a failed apply (a sentence part) */
};

/* Writes the summary for v to out; now is the current time. Local times
 * follow the process's time zone (TZ, /etc/localtime). Returns the exit
 * status `status` has: 0 when the last result is a success (or there is
 * none yet), 1 when it is a failure or unreadable. */
int status_print(FILE *out, const struct status_view *v, time_t now);

/* t as local time "2026-11-26 13:44:01 CET" into buf (at least 48 bytes);
 * "-" for 0. */
void status_fmt_time(time_t t, char *buf, size_t size);

/* How long ago t was, "12 s ago", "3 min ago", "2 h 5 min ago", "4 days
 * ago", or "in the future" (a clock set back). */
void status_fmt_age(time_t t, time_t now, char *buf, size_t size);

#endif
