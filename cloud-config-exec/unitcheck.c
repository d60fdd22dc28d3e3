/* The SystemdUnitsReady check; see unitcheck.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "log.h"
#include "unitcheck.h"
#include "units.h"

#define MSG_ALL_HEALTHY "All systemd units from the operating system config are running as expected."

bool unitcheck_unit_enabled(const struct osc_unit *u)
{
	if (u->enable >= 0)
		return u->enable == 1;
	return u->content != NULL || u->n_dropins > 0;
}

const char *unitcheck_format_duration(uint64_t s, char *buf, size_t size)
{
	uint64_t h = s / 3600, m = (s / 60) % 60, sec = s % 60;
	if (h)
		snprintf(buf, size, "%lluh%llum%llus", (unsigned long long)h, (unsigned long long)m,
			 (unsigned long long)sec);
	else if (m)
		snprintf(buf, size, "%llum%llus", (unsigned long long)m, (unsigned long long)sec);
	else
		snprintf(buf, size, "%llus", (unsigned long long)sec);
	return buf;
}

/* A growing "; "-joined message, cut at RESULT_CONDITION_MESSAGE_MAX (unit
 * names and states are ASCII, so a cut never splits a character). */
struct msg {
	char *s;
	size_t len;
	bool cut;
};

static int msg_add(struct msg *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int msg_add(struct msg *m, const char *fmt, ...)
{
	if (m->cut)
		return 0;
	char item[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(item, sizeof(item), fmt, ap);
	va_end(ap);
	size_t add = strlen(item) + (m->len ? 2 : 0);
	if (m->len + add > RESULT_CONDITION_MESSAGE_MAX) {
		m->cut = true;
		return 0;
	}
	char *n = realloc(m->s, m->len + add + 1);
	if (!n)
		return -ENOMEM;
	snprintf(n + m->len, add + 1, "%s%s", m->len ? "; " : "", item);
	m->s = n;
	m->len += add;
	return 0;
}

int unitcheck_evaluate(const struct osc *osc, const struct unitcheck_observed *obs, uint64_t now_usec,
		       uint64_t stuck_usec, struct result_units_ready *ret)
{
	struct msg bad = {}, progressing = {};
	int r = 0;
	for (size_t i = 0; r >= 0 && i < osc->n_units; i++) {
		const struct osc_unit *u = &osc->units[i];
		const struct unitcheck_observed *o = &obs[i];
		if (units_is_superseded(u->name))
			continue;
		bool enabled = unitcheck_unit_enabled(u);
		if (!o->loaded) {
			if (enabled)
				r = msg_add(&bad, "%s: not loaded", u->name);
			continue;
		}
		const char *st = o->probe.active_state, *sub = o->probe.sub_state;
		if (strcmp(st, "active") == 0) {
			if (!enabled)
				r = msg_add(&bad, "%s: active but should be disabled", u->name);
		} else if (strcmp(st, "failed") == 0) {
			if (enabled)
				r = msg_add(&bad, "%s: failed", u->name);
		} else if (strcmp(st, "activating") == 0 || strcmp(st, "deactivating") == 0) {
			if (strcmp(sub, "auto-restart") == 0)
				continue;
			uint64_t since = now_usec > o->probe.state_change_usec ? now_usec - o->probe.state_change_usec : 0;
			char d[48];
			unitcheck_format_duration(since / 1000000u, d, sizeof(d));
			if (since >= stuck_usec)
				r = msg_add(&bad, "%s: stuck in %s for %s", u->name, st, d);
			else
				r = msg_add(&progressing, "%s: %s for %s", u->name, st, d);
		} else if (strcmp(st, "inactive") == 0) {
			if (!enabled)
				continue;
			if (strcmp(sub, "dead") == 0 &&
			    (strcmp(o->probe.service_type, "oneshot") == 0 || o->probe.triggered))
				continue;
			r = msg_add(&bad, "%s: inactive but should be enabled", u->name);
		}
	}
	if (r < 0) {
		free(bad.s);
		free(progressing.s);
		return r;
	}
	struct result_units_ready c = { .present = true, .checked_at = (time_t)(now_usec / 1000000u) };
	if (bad.len) {
		snprintf(c.reason, sizeof(c.reason), "UnhealthyUnits");
		c.message = TAKE_PTR(bad.s);
		free(progressing.s);
	} else if (progressing.len) {
		c.ready = true;
		snprintf(c.reason, sizeof(c.reason), "ProgressingUnits");
		c.message = TAKE_PTR(progressing.s);
	} else {
		c.ready = true;
		snprintf(c.reason, sizeof(c.reason), "AllUnitsHealthy");
		free(bad.s);
		free(progressing.s);
		c.message = strdup(MSG_ALL_HEALTHY);
		if (!c.message)
			return -ENOMEM;
	}
	*ret = c;
	return 0;
}

int unitcheck_run(struct sd_bus *bus, const struct osc *osc, struct result_units_ready *ret)
{
	_cleanup_free_ struct unitcheck_observed *obs = calloc(osc->n_units ? osc->n_units : 1, sizeof(*obs));
	if (!obs)
		return log_error_errno(-ENOMEM, "SystemdUnitsReady: out of memory");
	for (size_t i = 0; i < osc->n_units; i++) {
		if (units_is_superseded(osc->units[i].name))
			continue;
		int r = systemd_unit_probe(bus, osc->units[i].name, &obs[i].probe);
		if (r == -ENOENT || r == -EINVAL || r == -ENOEXEC || r == -ENOLINK || r == -EBADR) {
			obs[i].loaded = false;
			continue;
		}
		if (r < 0)
			return log_warning_errno(r, "SystemdUnitsReady: cannot read the state of unit %s; no condition reported",
						 osc->units[i].name);
		obs[i].loaded = true;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int r = unitcheck_evaluate(osc, obs, (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u,
				   UNITCHECK_STUCK_USEC, ret);
	if (r < 0)
		return log_error_errno(-ENOMEM, "SystemdUnitsReady: out of memory");
	log_debug("SystemdUnitsReady: %s, %s: %s", ret->ready ? "True" : "False", ret->reason, ret->message);
	return 0;
}
