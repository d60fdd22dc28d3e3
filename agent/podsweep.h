/* The Pods remaining on the Node after an in-place update (GEP-31) are
 * deleted before the Node is labelled update-result=successful, as
 * gardener-node-agent does (gardener/gardener pkg/nodeagent/controller/
 * operatingsystemconfig/reconciler.go performInPlaceUpdate and
 * deleteRemainingPods):
 *
 * - when: the update's steps are all done (the executor's "successful",
 *   the node-agent CA rotation's new certificate in use), the Node has the
 *   condition InPlaceUpdate/ReadyForUpdate or the label update-result
 *   "failed", and not yet the label "successful" (nodeupdate.h
 *   nodeupdate_sweep_wanted());
 * - which: every Pod whose spec.nodeName is the Node, in every namespace,
 *   whoever owns it (a list by field selector spec.nodeName=<node>; Gardener
 *   lists its cache, which holds only the Pods of its Node, by the same
 *   field, and deletes with no predicate): what machine-controller-
 *   manager's drain left (DaemonSet pods, pods with local storage, mirror
 *   pods) is recreated on the updated node. An item of the list bound to
 *   another Node (a server ignoring the selector) is never deleted;
 * - how: a DELETE of each with the default grace period, not waited for;
 *   404 is success (client.IgnoreNotFound). Gardener deletes in parallel;
 *   here one after the other (a node has ~110 Pods at most, each a short
 *   request);
 * - a failure (the list, or any delete; the others are still tried):
 *   the label is not set, the sweep is tried again (list and all) after a
 *   backoff of 2 s doubling up to 30 s with jitter (Gardener: the
 *   reconcile's error, requeued with controller-runtime's backoff), and
 *   the owner is told why.
 *
 * RBAC: Gardener's node-agent authorizer (pkg/resourcemanager/webhook/
 * nodeagentauthorizer/authorizer.go authorizePod) allows get, list, watch
 * and delete of pods, list/watch with the field selector spec.nodeName of
 * the own Node, get/delete only of a Pod bound to it; tests/lib/
 * nodeagent-authz.py models it.
 *
 * The duty does its own requests; it keeps nothing across a restart (an
 * agent restarted before the label sweeps again, as Gardener's requeued
 * reconcile would). When it starts and stops is the owner's decision
 * (nodeupdate_sweep_go()). */
#ifndef NA_AGENT_PODSWEEP_H
#define NA_AGENT_PODSWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kubepod.h"

struct http_client;
struct http_request;

enum podsweep_phase {
	PODSWEEP_IDLE,       /* not wanted */
	PODSWEEP_LISTING,    /* the list is due (next_at) or under way */
	PODSWEEP_DELETING,   /* deleting pods[next] */
	PODSWEEP_DONE,       /* every Pod deleted or gone */
};

#define PODSWEEP_RETRY_BASE_MS 2000u
#define PODSWEEP_RETRY_CAP_MS 30000u

struct podsweep {
	struct http_client *http;
	const char *const *node_name;   /* the owner's, followed across renames */
	enum podsweep_phase phase;
	uint64_t next_at;               /* when the list is due */
	struct kube_pod_ref *pods;      /* this round's list */
	size_t n_pods, next;
	unsigned deleted, gone, failed; /* this round */
	unsigned failures;              /* rounds failed in a row (backoff) */
	char why[256];                  /* this round's first failure */
	struct http_request *req;
	/* Starts a request (method "GET" or "DELETE"); its end must call
	 * podsweep_listed() or podsweep_deleted(). podsweep_init() sets
	 * the real one; tests replace it. */
	int (*start)(struct podsweep *ps, const char *method, const char *path, const char *query);
	/* Told at the end of each round: ok, or why not. */
	void (*on_round)(void *userdata, bool ok, const char *why);
	void *userdata;
	uint64_t rounds_ok, rounds_failed, pods_deleted; /* since the start */
};

void podsweep_init(struct podsweep *ps, struct http_client *http, const char *const *node_name,
		   void (*on_round)(void *userdata, bool ok, const char *why), void *userdata);
/* Cancels the request in flight and frees the list. */
void podsweep_done(struct podsweep *ps);

/* The owner says whether a sweep is wanted now. Wanted from idle: a round
 * starts at the next tick. Not wanted: whatever runs is cancelled (logged
 * with why, which may be NULL when nothing runs), back to idle. */
void podsweep_want(struct podsweep *ps, bool want, const char *why, uint64_t now);

/* A round is due or under way (listing or deleting). */
bool podsweep_running(const struct podsweep *ps);

/* The sweep is over: every Pod on the Node deleted (or already gone). */
bool podsweep_finished(const struct podsweep *ps);

/* Starts what is due; returns the next deadline (UINT64_MAX: none). */
uint64_t podsweep_tick(struct podsweep *ps, uint64_t now);

/* The list's answer: HTTP status (0: none), its body, and why it failed
 * (NULL when it did not). */
void podsweep_listed(struct podsweep *ps, long status, const char *body, size_t len, const char *why,
		     uint64_t now);
/* The answer to the delete of pods[next]. */
void podsweep_deleted(struct podsweep *ps, long status, const char *why, uint64_t now);

#endif
