/* Whether the API server serves, for every request node-agent makes to it:
 * one back-off per API server, shared by all duties (as client-go's
 * rest/urlbackoff.go keys its back-off by the server's host), so that a
 * node costs an outage one attempt at a time, not one per duty. The HTTP
 * client (http.c) asks it before each API request and tells it what each
 * one met; the duties only ask when they may start (http_gate_at()) and
 * whether a failure was the server's (http_gate_took()).
 *
 * States:
 *  - UP: requests go as they come.
 *  - DOWN: nobody serves (a connection refused, closed or reset before any
 *    HTTP status line, as a load balancer does in front of a stopped API
 *    server, or a TLS handshake not done within connectMs: http.c's
 *    http_nobody_serving()). One request at a time may try (the probe),
 *    when apigate_down_policy lets it: 0.5 s doubling every 6 s up
 *    to 15 s, full jitter (lib/base/backoff.h). Every other request waits;
 *    after a 10 s outage the next try comes within 1.6 s, and after 30 s at
 *    most one every 7.5 s on average (the bound: one per 5 s).
 *  - STARTING: the server answers, but not yet usefully: 429, 5xx, or 403
 *    within APIGATE_REVIVED_MS of its first answer after nobody served (a
 *    restarting kube-apiserver answers 403 "RBAC: clusterrole ... not found"
 *    for a few seconds until its RBAC is loaded, then 500 and 429 while it
 *    catches up). Still one probe at a time, from apigate_starting_policy:
 *    0.5 s doubling every 20 s up to 15 s, so at most 1 s apart for the
 *    first 20 s and 2 s for 40 s (a restarting kube-apiserver is ready
 *    within seconds of its first answer, 10-20 s on a loaded 2-core
 *    machine: a node is back within about a second of readiness, as the
 *    old per-watch REVIVED_MS retries were, at one attempt per node instead
 *    of one per duty), and a server stuck answering errors (etcd gone)
 *    costs no more than an unreachable one after two minutes.
 *  Any other answer (2xx, 404, 409, 410, 422, a 403 after the revived
 *  window...) means the server serves: UP, and every waiting duty starts at
 *  its next tick. In UP, 429 and 5xx are the duty's own (its own back-off:
 *  one resource failing must not hold the others), except within the
 *  revived window, where they send the gate back to STARTING (quietly).
 *
 * Logs: one line when a condition starts (at its second failed attempt: a
 * single refused connection that the next attempt repairs is no
 * condition), naming the server, since when, what failed and what to
 * check; one when it ends, with how long it lasted and how many attempts
 * failed. Nothing per attempt (debug only). */
#ifndef NA_AGENT_APIGATE_H
#define NA_AGENT_APIGATE_H

#include <stdbool.h>
#include <stdint.h>

#include "backoff.h"

#define APIGATE_REVIVED_MS 15000u

/* The two paces (see DOWN and STARTING above). */
extern const struct backoff_policy apigate_down_policy;
extern const struct backoff_policy apigate_starting_policy;

enum apigate_state {
	APIGATE_UP,
	APIGATE_DOWN,
	APIGATE_STARTING,
};

struct apigate {
	enum apigate_state state;
	struct backoff b;           /* the condition (DOWN or STARTING) */
	uint64_t next_at;           /* not UP: the next probe's slot (monotonic ms) */
	bool probing;               /* not UP: the probe is in flight */
	uint64_t revived_until;     /* 403, 429 and 5xx until then are a starting server's */
	uint64_t quiet_until;       /* a condition resumed in the revived window: not logged before */
	bool logged;                /* its start was logged (so its end will be) */
	char server[256];           /* host:port, for the log lines */
	char why[320];              /* what the condition's first attempt met */
	uint64_t conditions;        /* conditions logged since start (tests, metrics) */
	uint64_t up_at;             /* when the last condition ended (monotonic ms, 0: none yet) */
};

/* UP, for the server at url (its host:port goes into the log lines). */
void apigate_init(struct apigate *g, const char *url);

/* When an API request may start: 0 in UP, the probe's slot otherwise,
 * UINT64_MAX while the probe is in flight (its end wakes the loop). */
uint64_t apigate_at(const struct apigate *g);

/* A request wants to start at now: true when it may (not UP: it is then
 * the probe, *probe set). */
bool apigate_admit(struct apigate *g, uint64_t now, bool *probe);

/* The probe ended without a verdict (cancelled by its duty). */
void apigate_probe_gone(struct apigate *g);

/* A request (the probe when probe is set) got an HTTP answer with status
 * (the first final status line). True when the gate takes it as "not
 * serving yet" (see STARTING above): the duty then waits for the gate. */
bool apigate_answer(struct apigate *g, long status, bool probe, uint64_t now);

/* A request ended without any HTTP answer: met nobody serving (nobody),
 * or, when it was the probe, failed otherwise (a timeout after the
 * handshake). why: one line for the start line. True when the gate took
 * it (then the duty waits for the gate). */
bool apigate_failed(struct apigate *g, bool nobody, bool probe, const char *why, uint64_t now);

#endif
