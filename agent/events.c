/* The Events duty; see events.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "events.h"
#include "log.h"
#include "result.h"

int events_init(struct events *e, struct http_client *http, const char *node_name)
{
	*e = (struct events){ .http = http };
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
	snprintf(e->node_uid, sizeof(e->node_uid), "%s", uid && strlen(uid) <= KUBE_UID_MAX ? uid : "");
}

void events_emit(struct events *e, bool warning, const char *reason, const char *fmt, ...)
{
	if (!e->node_name)
		return;
	if (e->n == EVENTS_QUEUE) { /* the oldest goes */
		e->head = (e->head + 1) % EVENTS_QUEUE;
		e->n--;
		e->attempts = 0;
		e->dropped++;
	}
	struct events_item *it = &e->queue[(e->head + e->n) % EVENTS_QUEUE];
	*it = (struct events_item){ .warning = warning, .at = time(NULL) };
	snprintf(it->reason, sizeof(it->reason), "%s", reason);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(it->message, sizeof(it->message), fmt, ap);
	va_end(ap);
	e->n++;
}

static void pop(struct events *e)
{
	e->head = (e->head + 1) % EVENTS_QUEUE;
	e->n--;
	e->attempts = 0;
}

/* The head item's attempt failed: a pause, or after EVENTS_ATTEMPTS the
 * item is dropped (logged). */
static void failed(struct events *e, uint64_t now, const char *why)
{
	if (++e->attempts >= EVENTS_ATTEMPTS) {
		log_warning("Node Event %s not recorded after %u attempts: %s", e->queue[e->head].reason,
			    EVENTS_ATTEMPTS, why);
		e->dropped++;
		pop(e);
	}
	e->wake_at = now + EVENTS_RETRY_MS;
}

static void on_done(struct http_request *req, void *userdata)
{
	struct events *e = userdata;
	e->req = NULL;
	if (e->n == 0)
		return;
	if (req->result == CURLE_OK && req->error == 0 && (req->status == 201 || req->status == 200)) {
		e->sent++;
		pop(e);
		return;
	}
	char why[256];
	http_describe_failure(req, why, sizeof(why));
	failed(e, now_ms(), why);
}

uint64_t events_tick(struct events *e, uint64_t now)
{
	if (!e->node_name || e->req || e->n == 0 || !e->node_uid[0])
		return UINT64_MAX;
	if (now < e->wake_at)
		return e->wake_at;
	const struct events_item *it = &e->queue[e->head];
	_cleanup_free_ char *body =
		nodeevent_body(e->node_name, e->node_uid, it->warning, it->reason, it->message, it->at);
	int r = body ? http_start(e->http, "POST", "/api/v1/namespaces/" NODEEVENT_NAMESPACE "/events", NULL, body,
				  "application/json", false, NULL, on_done, e, &e->req)
		     : -ENOMEM;
	if (r < 0) {
		failed(e, now, strerror(-r));
		return e->wake_at;
	}
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
	char list[sizeof(e->queue[0].message)] = "";
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
