/* The Events duty: Node Events (lib/kube/nodeevent.h) for what an operator wants
 * in `kubectl describe node`: an OSC applied (with its checksum), an apply
 * that failed, an OSC refused and why. Queued (at most EVENTS_QUEUE, the
 * oldest dropped beyond that) and sent one at a time by POST with the
 * http_client's deadline; a failed POST is retried twice with a pause, then
 * dropped and logged. Events never hold up anything else. events_emit()
 * only records: safe inside transfer callbacks. */
#ifndef NA_AGENT_EVENTS_H
#define NA_AGENT_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "http.h"
#include "kubelease.h"
#include "nodeevent.h"

#define EVENTS_QUEUE 8
#define EVENTS_RETRY_MS 5000u
#define EVENTS_ATTEMPTS 3u

struct events_item {
	bool warning;
	char reason[NODEEVENT_REASON_MAX];
	char message[256];
	time_t at;
};

struct events {
	struct http_client *http;
	char *node_name;
	char node_uid[KUBE_UID_MAX + 1];
	struct events_item queue[EVENTS_QUEUE];
	unsigned head, n;
	unsigned attempts;          /* of the head item */
	struct http_request *req;
	uint64_t wake_at;
	uint64_t sent, dropped;
};

/* node_name NULL or events never initialised: everything is a no-op. */
int events_init(struct events *e, struct http_client *http, const char *node_name);
void events_done(struct events *e);
void events_set_node(struct events *e, const char *uid);
void events_emit(struct events *e, bool warning, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
uint64_t events_tick(struct events *e, uint64_t now);

/* The units an apply restarted or stopped (result.json restartedUnits,
 * stoppedUnits) as Events with gardener-node-agent's reasons and message
 * (gardener/gardener pkg/nodeagent/dbus/dbus.go runCommand/recordEvent:
 * reason SystemDUnitRestart / SystemDUnitStop, "processed restart of unit
 * <u>"). Up to EVENTS_UNITS_EACH units of a verb get one Event each; more
 * get one Event naming them all (cut to the message size), so the queue
 * keeps the OSC Event of the same apply. */
#define EVENTS_UNITS_EACH 3
struct result;
void events_units(struct events *e, const struct result *res);

#endif
