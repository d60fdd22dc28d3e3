/* The status summary; see status.h. */
#include <string.h>

#include "inplace.h"
#include "status.h"

void status_fmt_time(time_t t, char *buf, size_t size)
{
	struct tm tm;
	if (t <= 0 || !localtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S %Z", &tm) == 0)
		snprintf(buf, size, "-");
}

void status_fmt_age(time_t t, time_t now, char *buf, size_t size)
{
	if (t > now + 1) {
		snprintf(buf, size, "in the future: check the clock");
		return;
	}
	long long d = t >= now ? 0 : (long long)(now - t);
	if (d < 60)
		snprintf(buf, size, "%lld s ago", d);
	else if (d < 3600)
		snprintf(buf, size, "%lld min ago", d / 60);
	else if (d < 86400)
		snprintf(buf, size, "%lld h %lld min ago", d / 3600, d % 3600 / 60);
	else
		snprintf(buf, size, "%lld day%s ago", d / 86400, d / 86400 == 1 ? "" : "s");
}

static void print_steps(FILE *out, unsigned steps)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = { { STATE_STEP_FILES, "files" }, { STATE_STEP_UNITS, "units" }, { STATE_STEP_KEYS, "keys" } };
	const char *sep = "";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (steps & names[i].bit) {
			fprintf(out, "%s%s", sep, names[i].name);
			sep = ", ";
		}
	if (!*sep)
		fprintf(out, "none");
}

static void print_units(FILE *out, const char *label, char *const *units)
{
	fprintf(out, "%s:", label);
	if (!units || !units[0])
		fprintf(out, " none");
	for (char *const *u = units; u && *u; u++)
		fprintf(out, " %s", *u);
	fprintf(out, "\n");
}

/* A failure that the next run repeats until someone acts: what has to
 * happen (the error says how), or NULL when a retry can succeed. */
static const char *needs_action(const struct result *r)
{
	if (!r || r->success || !r->failed_step)
		return NULL;
	if (strcmp(r->failed_step, "desired") == 0)
		return "node-agent writes desired.json anew (systemctl restart node-agent)";
	if (strcmp(r->failed_step, "validate") == 0)
		return "a new OSC from the control plane, or a desired.json within bounds";
	if (r->error && strstr(r->error, "cloud-config-exec revoke --replace"))
		return "the revoked-keys list is resolved as the error says (cloud-config-exec revoke --replace)";
	if (r->error && strstr(r->error, "revoked keys of the operator refused"))
		return "the operator's file named in the error is fixed";
	return NULL;
}

/* What is pending, one "pending:" line each; "pending: nothing" when
 * nothing is. A failure is never "nothing", and "tried again" is said
 * only of one that a retry can get past. */
static void print_pending(FILE *out, const struct status_view *v)
{
	const struct result *res = v->res;
	const struct desired *d = v->desired;
	const char *retry = v->timer_hint ? v->timer_hint : "the next run";
	const char *action = needs_action(res);
	unsigned n = 0;
	if (v->res_problem) {
		fprintf(out, "pending: %s/%s is written anew by %s\n", v->exec_state_dir, STATE_RESULT, retry);
		n++;
	}
	if (v->st_problem) {
		fprintf(out, "pending: %s/%s is damaged (%s): %s rebuilds it from %s (the damaged one kept as %s)\n",
			v->exec_state_dir, STATE_FILE, v->st_problem, retry, STATE_LAST_APPLIED, STATE_DAMAGED);
		n++;
	}
	if (d && (!res || d->generation > res->generation)) {
		fprintf(out, "pending: desired state generation %llu (checksum %.12s) not applied yet%s\n",
			(unsigned long long)d->generation, d->checksum,
			res || v->res_problem ? "" : " (no result.json: the executor has not run since it was written)");
		n++;
	}
	if (!d && v->desired_problem) {
		fprintf(out, "pending: nothing can be applied until node-agent writes %s/desired.json anew "
			"(systemctl restart node-agent)\n", v->state_dir);
		n++;
	}
	bool in_progress = v->st && v->st->progress_checksum[0];
	if (action && (!v->desired_problem || strcmp(res->failed_step, "desired") != 0)) {
		fprintf(out, "pending: the failed apply; every run fails the same way until %s\n", action);
		n++;
	} else if (action) {
		/* said above */
	} else if (in_progress && res && !res->success && strcmp(res->checksum, v->st->progress_checksum) == 0) {
		fprintf(out, "pending: the failed apply of %.12s (steps it got through: ", v->st->progress_checksum);
		print_steps(out, v->st->progress_steps);
		fprintf(out, ") is tried again by %s\n", retry);
		n++;
	} else if (in_progress) {
		/* The progress record names an apply no result reports on: it
		 * was cut short (a crash, a kill, a power loss). */
		fprintf(out, "pending: an apply of %.12s was interrupted after the steps: ", v->st->progress_checksum);
		print_steps(out, v->st->progress_steps);
		fprintf(out, "; the next run resumes it\n");
		n++;
	} else if (res && !res->success) {
		fprintf(out, "pending: the failed apply is tried again by %s\n", retry);
		n++;
	}
	if (d && d->restart_id && (!res || !res->restart_id || strcmp(res->restart_id, d->restart_id) != 0)) {
		fprintf(out, "pending: restart request %s (", d->restart_id);
		for (char **u = d->restart_units; u && *u; u++)
			fprintf(out, "%s%s", u == d->restart_units ? "" : " ", *u);
		fprintf(out, ") not executed yet\n");
		n++;
	}
	if (!n)
		fprintf(out, "pending: nothing\n");
}

int status_print(FILE *out, const struct status_view *v, time_t now)
{
	char t[64], age[64];
	if (v->exec_dir_missing) {
		fprintf(out, "last run: never (no %s)\n", v->exec_state_dir);
		fprintf(out, "result: none\n");
	} else if (v->res_problem) {
		fprintf(out, "last run: unknown\nresult: %s/%s unreadable: %s\n", v->exec_state_dir, STATE_RESULT,
			v->res_problem);
	} else if (!v->res) {
		fprintf(out, "last run: never (no %s/%s)\nresult: none\n", v->exec_state_dir, STATE_RESULT);
	} else {
		const struct result *r = v->res;
		status_fmt_time(r->finished_at, t, sizeof(t));
		status_fmt_age(r->finished_at, now, age, sizeof(age));
		fprintf(out, "last run: finished %s (%s)\n", t, age);
		if (r->success)
			fprintf(out, "result: success for %s (generation %llu)\n", r->checksum,
				(unsigned long long)r->generation);
		else
			fprintf(out, "result: FAILED in step %s for %s (generation %llu)\nerror: %s\n",
				r->failed_step ? r->failed_step : "?", r->checksum[0] ? r->checksum : "(no desired state read)",
				(unsigned long long)r->generation, r->error ? r->error : "(none reported)");
	}
	if (v->desired)
		fprintf(out, "desired state: %s (generation %llu) in %s/desired.json\n", v->desired->checksum,
			(unsigned long long)v->desired->generation, v->state_dir);
	else if (v->desired_problem)
		fprintf(out, "desired state: %s/desired.json unreadable: %s\n", v->state_dir, v->desired_problem);
	else
		fprintf(out, "desired state: none (no %s/desired.json: node-agent has written nothing yet)\n",
			v->state_dir);
	fprintf(out, "last applied: %s\n",
		v->applied_checksum && v->applied_checksum[0] ? v->applied_checksum : "none");
	print_pending(out, v);
	if (v->res) {
		const struct result *r = v->res;
		const struct result_units_ready *u = &r->units_ready;
		if (u->present) {
			status_fmt_time(u->checked_at, t, sizeof(t));
			fprintf(out, "SystemdUnitsReady: %s (%s): %s\n", u->ready ? "True" : "False", u->reason, u->message);
			fprintf(out, "  checked at %s\n", t);
		} else
			fprintf(out, "SystemdUnitsReady: not reported\n");
		print_units(out, "changed units", r->changed_units);
		print_units(out, "restarted units", r->restarted_units);
		print_units(out, "stopped units", r->stopped_units);
		fprintf(out, "restart request executed: %s\n", r->restart_id ? r->restart_id : "none");
		if (r->inplace.present) {
			/* In-place update (GEP-31, ipupdate.h). */
			fprintf(out, "in-place update: %s (", inplace_state_name((enum inplace_state)r->inplace.state));
			const char *sep = "";
			for (unsigned i = 0; i < INPLACE_N_KINDS; i++)
				if (r->inplace.kinds & (1u << i)) {
					fprintf(out, "%s%s", sep, inplace_kind_name(1u << i));
					sep = " ";
				}
			fprintf(out, ")");
			if (r->inplace.os_desired)
				fprintf(out, ", OS %s running, %s desired", r->inplace.os_running[0] ? r->inplace.os_running : "?",
					r->inplace.os_desired);
			fprintf(out, "\n");
			if (r->inplace.reason)
				fprintf(out, "  reason: %s\n", r->inplace.reason);
		}
	}
	if (v->st) {
		fprintf(out, "owned files: %zu\n", v->st->n_owned);
		for (size_t i = 0; i < v->st->n_users; i++)
			fprintf(out, "managed keys of %s: %zu\n", v->st->users[i].user, v->st->users[i].n_keys);
	}
	return v->res_problem || (v->res && !v->res->success) ? 1 : 0;
}
