/* The Events duty; see events.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "events.h"
#include "log.h"
#include "result.h"

#define EVENTS_PATH "/api/v1/namespaces/" NODEEVENT_NAMESPACE "/events"

/* A write that failed (not the gate's): 5 s doubling every 10 s up to 30 s,
 * full jitter (lib/base/backoff.h). */
static const struct backoff_policy events_policy = { .base_ms = EVENTS_RETRY_MS, .double_ms = 10000, .cap_ms = 30000 };

int events_init(struct events *e, struct http_client *http, const char *node_name)
{
	*e = (struct events){ .http = http };
	backoff_init(&e->retry, &events_policy);
	e->node_name = strdup(node_name);
	return e->node_name ? 0 : -ENOMEM;
}

void events_done(struct events *e)
{
	if (e->req)
		http_cancel(e->req);
	free(e->node_name);
	*e = (struct events){};
}

void events_set_node(struct events *e, const char *uid)
{
	const char *u = uid && strlen(uid) <= KUBE_UID_MAX ? uid : "";
	if (*u && e->node_uid[0] && strcmp(u, e->node_uid) != 0) {
		/* Another Node object: its Events are its own. */
		if (e->req)
			http_cancel(e->req);
		e->req = NULL;
		e->sending = NULL;
		memset(e->series, 0, sizeof(e->series));
	}
	snprintf(e->node_uid, sizeof(e->node_uid), "%s", u);
}

/* A name of ours for a new Event: client-go's "<object>.<UnixNano hex>",
 * made unique within this process. "" when it does not fit (generateName,
 * and no series for it then). */
static void new_name(struct events *e, struct events_series *s)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t unique = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (unique <= e->unique)
		unique = e->unique + 1;
	e->unique = unique;
	if (nodeevent_name(e->node_name, unique, s->name, sizeof(s->name)) < 0)
		s->name[0] = '\0';
	s->create = true;
}

/* The series of (warning, reason, message), or a slot for a new one: a
 * free one, else the least recently used (never the one being written). */
static struct events_series *series_for(struct events *e, bool warning, const char *reason, const char *message)
{
	struct events_series *free_slot = NULL, *lru = NULL;
	for (size_t i = 0; i < EVENTS_SERIES; i++) {
		struct events_series *s = &e->series[i];
		if (!s->used) {
			free_slot = free_slot ? free_slot : s;
			continue;
		}
		if (s->warning == warning && strcmp(s->reason, reason) == 0 && strcmp(s->message, message) == 0)
			return s;
		if (s != e->sending && (!lru || s->used_ms < lru->used_ms))
			lru = s;
	}
	struct events_series *s = free_slot ? free_slot : lru;
	if (!s)
		return NULL;
	if (s->used && s->count > s->written)
		e->dropped++; /* its last occurrences are not recorded */
	*s = (struct events_series){ .used = true, .warning = warning };
	snprintf(s->reason, sizeof(s->reason), "%s", reason);
	snprintf(s->message, sizeof(s->message), "%s", message);
	new_name(e, s);
	return s;
}

void events_emit(struct events *e, bool warning, const char *reason, const char *fmt, ...)
{
	if (!e->node_name)
		return;
	char message[sizeof(e->series[0].message)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	struct events_series *s = series_for(e, warning, reason, message);
	if (!s)
		return;
	uint64_t now = now_ms();
	time_t t = time(NULL);
	if (s->count == 0)
		s->first = t;
	if (s->count == s->written)
		s->pending_since = now;
	s->count++;
	s->last = t;
	s->used_ms = now;
}

/* The write of s failed (not the gate's): tried again after the back-off,
 * given up after EVENTS_ATTEMPTS (logged). */
static void failed(struct events *e, struct events_series *s, uint64_t now, const char *why, long retry_after_s)
{
	if (++s->attempts >= EVENTS_ATTEMPTS) {
		log_warning("Node Event %s not recorded after %u attempts: %s", s->reason, EVENTS_ATTEMPTS, why);
		e->dropped++;
		s->written = s->count; /* the next occurrence tries again */
		s->attempts = 0;
	}
	e->wake_at = now + backoff_fail(&e->retry, now, retry_after_s > 0 ? (uint64_t)retry_after_s * 1000u : 0);
}

static void on_done(struct http_request *req, void *userdata)
{
	struct events *e = userdata;
	struct events_series *s = e->sending;
	uint64_t now = now_ms();
	e->req = NULL;
	e->sending = NULL;
	if (!s)
		return;
	long st = req->result == CURLE_OK && req->error == 0 ? req->status : 0;
	if (st == 200 || st == 201) {
		if (s->create)
			e->sent++;
		else
			e->patched++;
		s->written = e->sending_count;
		s->written_ms = now;
		s->attempts = 0;
		s->create = false;
		if (s->count > s->written)
			s->pending_since = now;
		if (!s->name[0])
			new_name(e, s); /* generateName: no series, the next one is new */
		backoff_reset(&e->retry, now, NULL, NULL);
		return;
	}
	if (http_gate_took(req)) { /* the gate paces it (and logs the outage) */
		e->wake_at = now;
		return;
	}
	if (!s->create && st == 404) {
		/* Gone (the API server's event TTL): created again under the
		 * same name, with the count so far (recordEvent()). */
		s->create = true;
		e->wake_at = now;
		return;
	}
	if (s->create && st == 409 && s->name[0]) {
		/* There already: an earlier POST reached the server. */
		s->create = false;
		e->wake_at = now;
		return;
	}
	if (!s->create && st == 403) {
		if (!e->no_patch)
			log_warning("no patch permission on events in namespace %s: each repeat of an Event (%s) is a new "
				    "Event instead of a higher count on the first (grant patch on events)",
				    NODEEVENT_NAMESPACE, s->reason);
		e->no_patch = true;
		new_name(e, s);
		e->wake_at = now;
		return;
	}
	char why[256];
	http_describe_failure(req, why, sizeof(why));
	failed(e, s, now, why, req->retry_after);
}

/* The series to write next, and when: a new one at once, a repeat not
 * sooner than EVENTS_SERIES_MIN_MS after its last write; the oldest
 * pending first. */
static struct events_series *next_series(struct events *e, uint64_t *at)
{
	struct events_series *best = NULL;
	uint64_t best_at = UINT64_MAX;
	for (size_t i = 0; i < EVENTS_SERIES; i++) {
		struct events_series *s = &e->series[i];
		if (!s->used || s->count <= s->written)
			continue;
		uint64_t due = s->pending_since;
		if (!s->create && s->written_ms + EVENTS_SERIES_MIN_MS > due)
			due = s->written_ms + EVENTS_SERIES_MIN_MS;
		if (due < best_at) {
			best = s;
			best_at = due;
		}
	}
	*at = best_at;
	return best;
}

uint64_t events_tick(struct events *e, uint64_t now)
{
	if (!e->node_name || e->req || !e->node_uid[0])
		return UINT64_MAX;
	uint64_t at;
	struct events_series *s = next_series(e, &at);
	if (!s)
		return UINT64_MAX;
	if (e->wake_at > at)
		at = e->wake_at;
	at = http_due(e->http, at);
	if (now < at)
		return at;
	if (e->no_patch && !s->create)
		new_name(e, s);
	char path[sizeof(EVENTS_PATH) + NODEEVENT_NAME_MAX + 2];
	_cleanup_free_ char *body = NULL;
	int r;
	if (s->create) {
		struct nodeevent ne = { .node = e->node_name, .node_uid = e->node_uid, .warning = s->warning,
					.reason = s->reason, .message = s->message, .name = s->name[0] ? s->name : NULL,
					.count = s->count, .first = s->first, .last = s->last };
		body = nodeevent_body(&ne);
		r = body ? http_start(e->http, "POST", EVENTS_PATH, NULL, body, "application/json", false, NULL, on_done, e,
				      &e->req)
			 : -ENOMEM;
	} else {
		snprintf(path, sizeof(path), "%s/%s", EVENTS_PATH, s->name);
		body = nodeevent_patch(s->count, s->last, s->message);
		r = body ? http_start(e->http, "PATCH", path, NULL, body, "application/strategic-merge-patch+json", false,
				      NULL, on_done, e, &e->req)
			 : -ENOMEM;
	}
	if (r == -EAGAIN) /* the gate closed meanwhile */
		return http_due(e->http, at);
	if (r < 0) {
		failed(e, s, now, strerror(-r), 0);
		return e->wake_at;
	}
	e->sending = s;
	e->sending_count = s->count;
	return UINT64_MAX;
}

static void units_of_verb(struct events *e, char *const *units, const char *reason, const char *verb)
{
	size_t n = 0;
	while (units && units[n])
		n++;
	if (n == 0)
		return;
	if (n <= EVENTS_UNITS_EACH) {
		for (size_t i = 0; i < n; i++)
			events_emit(e, false, reason, "processed %s of unit %s", verb, units[i]);
		return;
	}
	char list[sizeof(e->series[0].message)] = "";
	size_t len = 0;
	for (size_t i = 0; i < n && len < sizeof(list); i++) {
		int k = snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", units[i]);
		if (k < 0)
			break;
		len += (size_t)k;
	}
	events_emit(e, false, reason, "processed %s of %zu units: %s", verb, n, list);
}

void events_units(struct events *e, const struct result *res)
{
	units_of_verb(e, res->restarted_units, "SystemDUnitRestart", "restart");
	units_of_verb(e, res->stopped_units, "SystemDUnitStop", "stop");
}
