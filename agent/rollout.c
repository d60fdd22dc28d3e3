/* The pacing duty; see rollout.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "osc.h"
#include "rollout.h"

void rollout_set_delay(struct rollout *r, const char *value)
{
	if (!value)
		return; /* keeps the last value, as gardener-node-agent */
	uint64_t ms;
	int k = pacing_parse_delay(value, &ms);
	if (k < 0) {
		if (strncmp(r->bad_value, value, sizeof(r->bad_value) - 1) != 0) {
			snprintf(r->bad_value, sizeof(r->bad_value), "%s", value);
			log_error("annotation %s=\"%.*s\": %s; keeping the delay of %llu ms", KUBE_ANN_RECONCILIATION_DELAY,
				  PACING_DELAY_VALUE_MAX, value,
				  k == -ERANGE ? "longer than 24 h" : "not a duration (\"2m30s\", \"1m23.456s\")",
				  (unsigned long long)r->delay_ms);
		}
		return;
	}
	r->bad_value[0] = '\0';
	if (ms != r->delay_ms)
		log_info("reconciliation delay %llu ms (annotation %s)", (unsigned long long)ms,
			 KUBE_ANN_RECONCILIATION_DELAY);
	r->delay_ms = ms;
}

/* Does going from in_force to osc restart units? On a parse failure: yes
 * (the cautious answer; both parsed before, so this is ENOMEM). */
static bool restarts(const char *in_force, size_t in_force_len, const char *osc, size_t len, const char *state_dir,
		     char *why, size_t whylen)
{
	struct osc old = {}, new = {};
	struct osc_error err;
	if (osc_parse(in_force, in_force_len, state_dir, &old, &err) < 0 ||
	    osc_parse(osc, len, state_dir, &new, &err) < 0) {
		osc_done(&old);
		snprintf(why, whylen, "cannot compare the OSCs: %.200s", err.message);
		return true;
	}
	bool r = pacing_restarts_units(&old, &new, why, whylen);
	osc_done(&old);
	osc_done(&new);
	return r;
}

bool rollout_admit(struct rollout *r, const char *in_force, size_t in_force_len, const char *osc, size_t len,
		   const char *checksum, const char *state_dir, uint64_t now)
{
	if (!in_force)
		return true;
	if (strcmp(r->decided, checksum) == 0) {
		if (r->held && now >= r->release_at) {
			r->held = false;
			log_notice("reconciliation delay over: writing OSC %.12s", checksum);
		}
		return !r->held;
	}
	char why[320];
	bool was_held = r->held;
	snprintf(r->decided, sizeof(r->decided), "%s", checksum);
	r->held = false;
	if (!restarts(in_force, in_force_len, osc, len, state_dir, why, sizeof(why))) {
		log_info("OSC %.12s restarts no unit: written without waiting for the reconciliation delay", checksum);
		return true;
	}
	if (!was_held)
		r->held_since = now;
	r->release_at = r->held_since + r->delay_ms;
	if (now >= r->release_at) {
		if (r->delay_ms)
			log_info("OSC %.12s restarts units (%s): its reconciliation delay is over", checksum, why);
		return true;
	}
	r->held = true;
	r->due_told = false;
	log_notice("OSC %.12s restarts units (%s): held for the reconciliation delay, %llu s more", checksum, why,
		   (unsigned long long)((r->release_at - now + 999) / 1000));
	return false;
}

uint64_t rollout_deadline(const struct rollout *r)
{
	return r->held && !r->due_told ? r->release_at : UINT64_MAX;
}

bool rollout_due(struct rollout *r, uint64_t now)
{
	if (!r->held || r->due_told || now < r->release_at)
		return false;
	r->due_told = true;
	return true;
}

void rollout_describe(const struct rollout *r, uint64_t now, char *buf, size_t len)
{
	if (!len)
		return;
	*buf = '\0';
	if (!r->held)
		return;
	uint64_t left = r->release_at > now ? r->release_at - now : 0;
	time_t at = time(NULL) + (time_t)((left + 999) / 1000);
	struct tm tm;
	char when[32] = "?";
	if (gmtime_r(&at, &tm))
		strftime(when, sizeof(when), "%H:%M:%S UTC", &tm);
	snprintf(buf, len, "; OSC %.12s held until %s (reconciliation delay %llu s)", r->decided, when,
		 (unsigned long long)(r->delay_ms / 1000));
}
