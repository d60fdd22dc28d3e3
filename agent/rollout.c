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

void rollout_set_serial(struct rollout *r, bool serial)
{
	if (r->serial == serial)
		return;
	r->serial = serial;
	/* The held change is judged again under the new rule. */
	if (r->held) {
		r->decided[0] = '\0';
		r->held = false;
		r->lock_wait = false;
	}
}

void rollout_set_lock(struct rollout *r, bool held, const char *holder, time_t until)
{
	r->lock = held;
	snprintf(r->holder, sizeof(r->holder), "%s", holder && !held ? holder : "");
	r->holder_until = until;
}

bool rollout_lock_wanted(struct rollout *r, const char *applied)
{
	if (r->applying[0] && applied && strcmp(applied, r->applying) == 0) {
		log_info("serial rollout: OSC %.12s applied and on the Node; the Lease is no longer needed", r->applying);
		r->applying[0] = '\0';
	}
	if (!r->serial)
		r->applying[0] = '\0';
	return r->serial && ((r->held && r->lock_wait) || r->applying[0]);
}

bool rollout_admit(struct rollout *r, const char *in_force, size_t in_force_len, const char *osc, size_t len,
		   const char *checksum, const char *state_dir, uint64_t now)
{
	if (!in_force)
		return true;
	if (strcmp(r->decided, checksum) == 0) {
		if (r->held && r->lock_wait) {
			if (r->lock) {
				r->held = r->lock_wait = false;
				snprintf(r->applying, sizeof(r->applying), "%s", checksum);
				log_notice("serial rollout: this node's turn, writing OSC %.12s", checksum);
			}
		} else if (r->held && now >= r->release_at) {
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
	if (r->serial) {
		/* No reconciliation delay: the Lease paces the pool. */
		r->lock_wait = false;
		if (r->lock) {
			snprintf(r->applying, sizeof(r->applying), "%s", checksum);
			log_notice("OSC %.12s restarts units (%s): this node holds the serial rollout Lease, writing it",
				   checksum, why);
			return true;
		}
		r->held = r->lock_wait = true;
		r->due_told = true; /* no deadline: the Lease says when */
		log_notice("OSC %.12s restarts units (%s): waiting for this node's turn (serial rollout Lease)",
			   checksum, why);
		return false;
	}
	r->lock_wait = false;
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
	if (r->lock_wait) {
		char until[32] = "";
		struct tm tm;
		if (r->holder[0] && gmtime_r(&r->holder_until, &tm))
			strftime(until, sizeof(until), " until %H:%M:%S UTC", &tm);
		snprintf(buf, len, "; OSC %.12s waits for the serial rollout Lease%s%s%s%s", r->decided,
			 r->holder[0] ? " (held by " : "", r->holder, until, r->holder[0] ? ")" : "");
		return;
	}
	uint64_t left = r->release_at > now ? r->release_at - now : 0;
	time_t at = time(NULL) + (time_t)((left + 999) / 1000);
	struct tm tm;
	char when[32] = "?";
	if (gmtime_r(&at, &tm))
		strftime(when, sizeof(when), "%H:%M:%S UTC", &tm);
	snprintf(buf, len, "; OSC %.12s held until %s (reconciliation delay %llu s)", r->decided, when,
		 (unsigned long long)(r->delay_ms / 1000));
}
