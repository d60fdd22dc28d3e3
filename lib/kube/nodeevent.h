/* The core/v1 Event node-agent records on its Node, as a pure builder, so
 * an operator sees in `kubectl describe node` what gardener-node-agent's
 * recorder would show (reason OSCApplied: gardener/gardener
 * pkg/nodeagent/controller/operatingsystemconfig/reconciler.go). Events of
 * a cluster-scoped object go to the namespace "default", as the kubelet's
 * Node events do. No I/O, no logging. */
#ifndef NA_NODEEVENT_H
#define NA_NODEEVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define NODEEVENT_NAMESPACE "default"
#define NODEEVENT_REASON_MAX 64
#define NODEEVENT_MESSAGE_MAX 1024

/* The longest Event name (a DNS subdomain name). */
#define NODEEVENT_NAME_MAX 253

/* One Event as node-agent records it: its series so far (client-go's
 * EventCorrelator, k8s.io/client-go tools/record/events_cache.go
 * eventObserve: one Event object per source, object, type, reason and
 * message, its count and lastTimestamp updated by a patch). */
struct nodeevent {
	const char *node;           /* the involved Node, also the source host */
	const char *node_uid;       /* NULL: none */
	bool warning;               /* type Warning, else Normal */
	const char *reason;
	const char *message;        /* cut at NODEEVENT_MESSAGE_MAX bytes */
	const char *name;           /* metadata.name; NULL: generateName "<node>." */
	unsigned count;             /* occurrences so far (>= 1) */
	time_t first, last;         /* firstTimestamp, lastTimestamp */
};

/* The Event's JSON for POST /api/v1/namespaces/default/events:
 * involvedObject the Node (kind, name, uid), source component "node-agent"
 * on host node, reportingComponent/Instance likewise. A malloc'ed string,
 * NULL on ENOMEM or a time that does not format. */
char *nodeevent_body(const struct nodeevent *e);

/* The strategic merge patch of a series' Event (PATCH
 * /api/v1/namespaces/default/events/<name>, application/strategic-merge-
 * patch+json), as eventObserve() makes it: count, lastTimestamp and
 * message. A malloc'ed string, NULL as above. */
char *nodeevent_patch(unsigned count, time_t last, const char *message);

/* A series' Event name, as client-go's recorder names Events
 * (tools/record/event.go makeEvent: "<object name>.<UnixNano in hex>"): node
 * "." unique in lowercase hex into buf. 0, or -ENAMETOOLONG when it would
 * be longer than NODEEVENT_NAME_MAX or len. */
int nodeevent_name(const char *node, uint64_t unique, char *buf, size_t len);

#endif
