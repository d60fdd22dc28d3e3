/* The Events duty: Node Events (lib/kube/nodeevent.h) for what an operator wants
 * in `kubectl describe node`: an OSC applied (with its checksum), an apply
 * that failed, an OSC refused and why, the health duties' findings.
 *
 * Each Event is a series, as the kubelet's recorder keeps them (client-go's
 * EventCorrelator, k8s.io/client-go tools/record/events_cache.go
 * eventObserve() and event.go recordEvent()): the same type, reason and
 * message on the same Node is one Event object whose count and
 * lastTimestamp grow, not a new object each time (the lost InternalIP's
 * Warning every 30 s made 28 Events in 9 minutes). The first occurrence is
 * created by POST under a name of ours ("<node>.<hex ns>", client-go's
 * makeEvent()); a repeat is a strategic merge PATCH of that Event with the
 * new count, lastTimestamp and message, at most one per series every
 * EVENTS_SERIES_MIN_MS (repeats in between only add to the count). A PATCH
 * answered 404 (the API server dropped the Event after its --event-ttl,
 * 1 h by default) creates it again under the same name with the series'
 * count, as recordEvent() does; a POST answered 409 (an earlier POST that
 * reached the server but not its answer) becomes a PATCH. Without the
 * right to patch events (403 on a PATCH; Gardener's node-agent authorizer
 * grants create and patch) every repeat is a new Event again, said once.
 *
 * The last EVENTS_SERIES series are kept (the least recently used one
 * goes: a repeat of it starts a new Event). Writes go one at a time with
 * the http_client's deadline; a write that fails is retried with back-off
 * (lib/base/backoff.h), up to EVENTS_ATTEMPTS times (then dropped and
 * logged); what the API server's gate takes (apigate.h) waits for it
 * without counting. Events never hold up anything else. events_emit()
 * only records: safe inside transfer callbacks. */
#ifndef NA_AGENT_EVENTS_H
#define NA_AGENT_EVENTS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "backoff.h"
#include "http.h"
#include "kubelease.h"
#include "nodeevent.h"

#define EVENTS_SERIES 16
#define EVENTS_SERIES_MIN_MS 10000u
#define EVENTS_RETRY_MS 5000u
#define EVENTS_ATTEMPTS 3u

struct events_series {
	bool used;
	bool warning;
	char reason[NODEEVENT_REASON_MAX];
	char message[256];
	char name[NODEEVENT_NAME_MAX + 1]; /* "": generateName (no series: a name of ours does not fit) */
	unsigned count;             /* occurrences so far */
	unsigned written;           /* the count the API server has (0: not created yet) */
	time_t first, last;         /* wall clock of the first and the last occurrence */
	uint64_t pending_since;     /* monotonic ms of the oldest occurrence not written yet */
	uint64_t written_ms;        /* monotonic ms of the last write */
	uint64_t used_ms;           /* of the last occurrence (the least recently used one goes) */
	unsigned attempts;          /* failed writes of what is pending now */
	bool create;                /* the next write is a POST (not yet created, or gone: 404) */
};

struct events {
	struct http_client *http;
	char *node_name;
	char node_uid[KUBE_UID_MAX + 1];
	struct events_series series[EVENTS_SERIES];
	struct events_series *sending; /* the series of the request in flight */
	unsigned sending_count;     /* ... and the count it writes */
	struct http_request *req;
	struct backoff retry;       /* failed writes in a row (not the gate's) */
	uint64_t wake_at;
	bool no_patch;              /* a PATCH got 403: every repeat is a new Event (logged once) */
	uint64_t unique;            /* makes each name of ours unique within this process */
	uint64_t sent, patched, dropped;
};

/* node_name NULL or events never initialised: everything is a no-op. */
int events_init(struct events *e, struct http_client *http, const char *node_name);
void events_done(struct events *e);
/* The Node's uid as last seen (NULL: gone); another Node object starts
 * every series anew. */
void events_set_node(struct events *e, const char *uid);
void events_emit(struct events *e, bool warning, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
uint64_t events_tick(struct events *e, uint64_t now);

/* The units an apply restarted or stopped (result.json restartedUnits,
 * stoppedUnits) as Events with gardener-node-agent's reasons and message
 * (gardener/gardener pkg/nodeagent/dbus/dbus.go runCommand/recordEvent:
 * reason SystemDUnitRestart / SystemDUnitStop, "processed restart of unit
 * <u>"). Up to EVENTS_UNITS_EACH units of a verb get one Event each; more
 * get one Event naming them all (cut to the message size). */
#define EVENTS_UNITS_EACH 3
struct result;
void events_units(struct events *e, const struct result *res);

#endif
