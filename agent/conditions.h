/* The SystemdUnitsReady duty: node-agent patches the Node condition that
 * cloud-config-exec computed and handed over in result.json (unitsReady;
 * cloud-config-exec/unitcheck.h has the rules, taken from gardener/gardener
 * pkg/nodeagent/controller/systemdunitcheck/reconciler.go) into the Node's
 * status, so gardenlet's care controller sees it
 * (pkg/gardenlet/controller/shoot/care/health.go CheckSystemdUnitsReady:
 * a node whose condition is not True makes the shoot unhealthy).
 *
 * The request: PATCH /api/v1/nodes/<node>/status with a strategic merge
 * patch of status.conditions (content type
 * application/strategic-merge-patch+json). Node conditions merge by
 * "type" (patchMergeKey in core/v1 NodeStatus), so only our entry is
 * replaced and the kubelet's conditions stay; a JSON merge patch would
 * replace the whole list. gardener-node-agent sends a merge patch computed
 * against its cached Node (controller-runtime client.MergeFrom), which
 * carries the full list. RBAC: gardener-node-agent's authorizer allows
 * "nodes/status" on the agent's own Node (pkg/resourcemanager/webhook/
 * nodeagentauthorizer/authorizer.go authorizeNode checkSubresource
 * "status"); with a node identity (system:node:<n>) the Node authorizer
 * and NodeRestriction allow the own Node's status as for the kubelet.
 *
 * When: only when the Node's condition (as the Node watch last showed it,
 * or the PATCH answered) differs in status, reason or message from what
 * result.json says; gardener-node-agent re-writes it every minute. The
 * fields written are what gardener-node-agent writes: type, status,
 * reason, message, lastHeartbeatTime and lastTransitionTime. Both times
 * are the check's (checkedAt); lastTransitionTime is the Node's own value
 * as long as the status does not change (gardener-node-agent's rule), so
 * a restart of the agent or a new message never moves it. Since we write
 * on change only, lastHeartbeatTime is the time of the check that changed
 * the condition, not of the last check. A failed PATCH is retried with
 * capped backoff and logged once per state change. */
#ifndef NA_AGENT_CONDITIONS_H
#define NA_AGENT_CONDITIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "backoff.h"
#include "http.h"
#include "kube.h"
#include "result.h"

#define CONDITIONS_BACKOFF_BASE_MS 1000u
#define CONDITIONS_BACKOFF_CAP_MS 60000u

struct conditions {
	struct http_client *http;
	char *node_name;            /* NULL: off (all calls are no-ops) */
	/* The Node's condition as last seen (all NULL: absent). */
	bool node_known;            /* the Node exists and was seen */
	char *have_status, *have_reason, *have_message, *have_transition;
	/* What result.json says. */
	bool want_present;
	bool want_ready;
	char want_reason[RESULT_REASON_MAX + 1];
	char *want_message;
	time_t want_at;
	/* The request. */
	struct http_request *req;
	uint64_t wake_at;           /* and not before the API server's gate (http_due()) */
	struct backoff retry;       /* failed PATCHes in a row (not the gate's) */
	bool failing;               /* logged; the next success is logged too */
	uint64_t patches;           /* successful PATCHes */
};

int conditions_init(struct conditions *c, struct http_client *http, const char *node_name);
void conditions_done(struct conditions *c);
/* The Node from the watch (n NULL: deleted or missing). */
void conditions_set_node(struct conditions *c, const struct kube_node *n);
/* From result.json (r NULL or !r->present: nothing to report). */
void conditions_set_result(struct conditions *c, const struct result_units_ready *r);
/* Starts the PATCH when one is due; returns when to be called again
 * (UINT64_MAX: on the next event). */
uint64_t conditions_tick(struct conditions *c, uint64_t now);

/* Pure helpers (tested on their own). */

/* True when the Node's condition (have_*: NULL when absent) is not the
 * wanted one in status, reason or message. */
bool conditions_differ(const char *have_status, const char *have_reason, const char *have_message, bool ready,
		       const char *reason, const char *message);

/* The strategic merge patch body for nodes/<n>/status: lastTransitionTime
 * is have_transition when have_status equals the new status (and
 * have_transition is set), else checked_at; lastHeartbeatTime is
 * checked_at. A malloc'ed string, NULL on ENOMEM or a time that does not
 * format. */
char *conditions_patch_body(const char *have_status, const char *have_transition, bool ready, const char *reason,
			    const char *message, time_t checked_at);

#endif
