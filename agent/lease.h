/* The Lease duty: keeps coordination.k8s.io/v1 Lease
 * kube-system/gardener-node-agent-<node> renewed, so gardenlet's
 * CheckNodeAgentLeases (gardener/gardener
 * pkg/gardenlet/controller/shoot/care/health.go) sees the node's agent
 * alive; the Lease's content is gardener-node-agent's (lib/kube/kubelease.h).
 *
 * Timing: gardenlet calls the agent dead when renewTime + 40 s lies in the
 * past. gardener-node-agent renews every 10 s (40/4, 6 writes a minute).
 * This duty renews every LEASE_RENEW_MS = 20 s (3 writes a minute): the
 * Lease of a live agent is at most 20 s old plus one request, and a failed
 * renewal is retried with back-off (lib/base/backoff.h: 1 s doubling every
 * 2 s, full jitter, at most 5 s) inside the 20 s left before it expires;
 * once it has expired (or was never held), at most every 30 s. While the
 * API server does not serve, the renewal waits for its gate (apigate.h)
 * like every request. Every request has its own deadline
 * (LEASE_REQUEST_MS), after which it is cancelled and counted as failed.
 *
 * Requests: the first time (and after a 409), a GET by name learns the
 * resourceVersion and who holds the Lease; 404 -> POST (create); then each
 * renewal is one update (PUT of the Lease read, with its resourceVersion:
 * Gardener's node-agent authorizer allows no patch on Leases), whose answer
 * gives the next one. Nothing comes from a watch
 * cache (gardener issues #15716 and #15471: a stale cache left a Lease
 * unrenewed). A 409 means someone else wrote the Lease: it is read again.
 *
 * Someone else's Lease (another spec.holderIdentity): gardener-node-agent's
 * CreateOrUpdate overwrites the spec whatever it held, and so does this
 * duty; the previous holder is logged once per holder at warning level.
 *
 * Logs: a failure once when renewals start failing (with the reason; an
 * outage is the gate's line), the expiry once, and once more when a
 * renewal works again (with the count), never per retry. The
 * duty only records state in lease_set_node(); requests start in
 * lease_tick() (libcurl forbids starting them inside its callbacks). */
#ifndef NA_AGENT_LEASE_H
#define NA_AGENT_LEASE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "backoff.h"
#include "http.h"
#include "kube.h"
#include "kubelease.h"

#define LEASE_RENEW_MS 20000u
#define LEASE_RETRY_BASE_MS 1000u
#define LEASE_RETRY_CAP_MS 5000u
#define LEASE_RETRY_EXPIRED_CAP_MS 30000u
#define LEASE_REQUEST_MS 10000u

enum lease_step {
	LEASE_IDLE,         /* no Node (uid) known: nothing to own the Lease */
	LEASE_GET,          /* read it (resourceVersion, holder) */
	LEASE_CREATE,       /* POST */
	LEASE_RENEW,        /* update (PUT) of the Lease last read or written */
};

struct lease {
	struct http_client *http;
	char name[KUBE_NAME_MAX + 1];
	char path[KUBE_NAME_MAX + 96];
	char *node_name;
	char node_uid[KUBE_UID_MAX + 1];    /* "" when there is no Node */
	char rv[KUBE_RV_MAX + 1];
	char *obj;                          /* the Lease last read or written (JSON), NULL: none */
	size_t obj_len;
	enum lease_step step;
	struct http_request *req;
	uint64_t req_deadline;
	uint64_t wake_at;                   /* next request (monotonic ms) */
	struct backoff retry;               /* failed requests in a row (not the gate's) */
	bool fail_logged;                   /* their start was logged */
	unsigned conflicts;                 /* 409s in a row */
	bool expired_logged;
	time_t pending_wall;                /* renewTime of the write in flight (s) */
	char foreign_holder[KUBE_NAME_MAX + 1]; /* last other holder logged */
	uint64_t node_seen_ms;              /* monotonic: the Node (this uid) first seen */

	/* For metrics and STATUS. */
	uint64_t renewals;                  /* successful writes */
	uint64_t failed;                    /* failed requests */
	uint64_t last_renew_ms;             /* monotonic, 0: never */
	time_t last_renew_wall;             /* renewTime of the last write (s) */
};

/* Sets up the duty for node_name; -ENAMETOOLONG when the Lease name would
 * not be valid (logged). Nothing is sent before lease_set_node(). */
/* The Lease in the answer to req (a 200 or 201 to a Lease request): 0 and
 * *k (kube_lease_done() it), or -EBADMSG with why saying what was wrong
 * (not a Lease, no resourceVersion). Also for serial.c's Lease. */
int lease_parse_answer(const struct http_request *req, struct kube_lease *k, char *why, size_t whylen);

int lease_init(struct lease *l, struct http_client *http, const char *node_name);
void lease_done(struct lease *l);

/* The Node's uid as last seen (NULL: the Node is gone or unknown). Only
 * records: safe inside a transfer callback. */
void lease_set_node(struct lease *l, const char *uid);

/* Starts what is due, cancels a request past its deadline; returns the
 * next deadline (monotonic ms, UINT64_MAX for none). */
uint64_t lease_tick(struct lease *l, uint64_t now);

#endif
