/* Token sync, node-agent's half: for each controllers.token.syncConfigs
 * entry of gardener-node-agent's configuration (as the OSC carries it),
 * node-agent reads Secret kube-system/<secretName> key "token" with a GET
 * every syncPeriod (gardenlet sets 12 h; gardener/gardener
 * pkg/nodeagent/controller/token/reconciler.go does the same uncached GET)
 * and hands the tokens to cloud-config-exec in desired.json, which writes
 * them (cloud-config-exec/tokens.c). A Secret without "token" or that cannot
 * be read is logged once and retried with back-off (lib/base/backoff.h:
 * 10 s doubling every minute up to 5 min, full jitter; what the API
 * server's gate takes, when it opens); the last token read stays. Driven by tokensync_tick() from the event loop. */
#ifndef NA_AGENT_TOKENSYNC_H
#define NA_AGENT_TOKENSYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "backoff.h"
#include "desired.h"
#include "gnaconfig.h"
#include "http.h"

struct tokensync_entry {
	char *secret;
	char *path;
	char *token;                /* the last token read, NULL before */
	struct http_request *req;
	uint64_t next_at;           /* monotonic ms; and not before the API server's gate (http_due()) */
	struct backoff retry;       /* failed reads in a row (set up at the first) */
	bool warned;
};

struct tokensync {
	struct http_client *http;   /* NULL while detached (reload) */
	struct tokensync_entry *entries;
	size_t n;
	uint64_t period_ms;
	bool changed;               /* a token changed: the desired state must be rewritten */
};

/* Follows syncs[0..n) (copied); an unchanged list keeps its tokens and
 * schedule. period_ms 0 means 12 h. Returns 0 or -ENOMEM. */
int tokensync_set(struct tokensync *t, const struct gna_token_sync *syncs, size_t n, uint64_t period_ms);

/* Attaches to (or, with NULL, detaches from: requests are cancelled) the
 * HTTP client; attaching reads every Secret at the next tick. */
void tokensync_attach(struct tokensync *t, struct http_client *http);

uint64_t tokensync_tick(struct tokensync *t, uint64_t now);

/* Reads every Secret again at the next tick (a service-account key
 * rotation: gardener/gardener pkg/nodeagent/controller/operatingsystemconfig/
 * reconciler.go performCredentialsRotationInPlace, triggerTokenResync); a
 * read in flight is not repeated. Logs nothing. */
void tokensync_resync_now(struct tokensync *t);

/* The tokens read so far as desired.json entries (pointers into t, valid
 * until the next tick); *n may be 0. Returns 0 or -ENOMEM. */
int tokensync_desired(const struct tokensync *t, struct desired_token **ret, size_t *n);

void tokensync_done(struct tokensync *t);

#endif
