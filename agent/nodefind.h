/* The Node found by the kubernetes.io/hostname label, as gardener-node-agent
 * finds its own before it knows the name (gardener/gardener pkg/nodeagent
 * FetchNodeByHostName: a list of Nodes with labelSelector
 * kubernetes.io/hostname=<lowercased hostname>; none: not registered yet;
 * more than one: an error; used by pkg/nodeagent/controller/
 * operatingsystemconfig/reconciler.go getNode() and cmd/gardener-node-agent/
 * app fetchNodeName() while the node name is unknown). The kubelet names
 * the Node after the cloud's hostname override, which may differ from
 * node-agent's node.name (the hostname by default); the label always holds
 * the hostname.
 *
 * Gardener's node-agent authorizer allows list and watch of Nodes
 * unconditionally for exactly this reason ("gardener-node-agent only knows
 * its hostname, but not its node name": gardener/gardener
 * pkg/resourcemanager/webhook/nodeagentauthorizer/authorizer.go,
 * authorizeNode), and get/patch only of the own Node. So the agent lists
 * with the label selector (never all Nodes) while the Node by name is
 * missing, every NODEFIND_PERIOD_MS (a failure backs off: 5 s doubling every
 * 30 s up to 5 min, full jitter); a 403 is logged once and tried again
 * after 5 min or with new credentials (the watch by name goes on). The owner calls nodefind_tick() from
 * its loop with whether the Node by name is missing, and takes
 * nodefind.found when it is set. */
#ifndef NA_AGENT_NODEFIND_H
#define NA_AGENT_NODEFIND_H

#include <stdbool.h>
#include <stdint.h>

#include "backoff.h"
#include "http.h"

#define NODEFIND_PERIOD_MS 5000u /* gardener-node-agent requeues every 5 s until the Node is registered */

struct nodefind {
	struct http_client *http;
	char *hostname;             /* the label value; NULL: off */
	char *current;              /* the name watched now (not a find) */
	struct http_request *req;
	uint64_t next_at;           /* and not before the API server's gate (http_due()) */
	struct backoff retry;       /* failed lists in a row (not the gate's) */
	bool denied;                /* the last list got 403 (logged once) */
	bool warned;                /* the last failure was logged */
	char *found;                /* a Node by the label, not named current: the owner takes it */
};

/* Sets up the search for hostname (lowercased by the caller) while
 * current is the Node name watched. A hostname that is no valid label value
 * turns the search off (logged). Returns 0 or -ENOMEM. */
int nodefind_init(struct nodefind *f, struct http_client *http, const char *hostname, const char *current);
void nodefind_done(struct nodefind *f);

/* New credentials: the next tick lists at once (a 403 may be over). */
void nodefind_resync(struct nodefind *f);

/* Lists when missing (the Node by name does not exist) and due; returns the
 * next deadline (UINT64_MAX: none). */
uint64_t nodefind_tick(struct nodefind *f, uint64_t now, bool missing);

#endif
