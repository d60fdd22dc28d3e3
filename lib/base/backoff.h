/* The one retry policy: every retry of node-agent (the watches, the Lease,
 * the Node patches, Events, the serial rollout Lease, the registry mirrors'
 * probes, the local rewrites) waits as this helper says, as client-go's
 * callers wait as wait.Backoff and the reflector's back-off manager say
 * (k8s.io/client-go tools/cache/reflector.go: 800 ms doubling to 30 s,
 * reset after 2 min without a failure; rest/urlbackoff.go: one back-off per
 * API server host). A loop with its own sleep is how a fleet ends up
 * hammering its load balancer.
 *
 * A condition starts with a failure and ends with a success (a reset).
 * Each failure draws its wait with full jitter, uniformly in
 * [1, ceiling] ms, where the ceiling is exponential in the condition's age,
 * not in the number of attempts:
 *
 *     ceiling(age) = min(cap_ms, base_ms * 2^(age / double_ms))
 *
 * (linear between doublings). Why the age: with full jitter the attempts
 * come on average every ceiling/2, so a ceiling doubled per attempt grows
 * about as fast as the age itself; that cannot both keep a short outage's
 * waits short (a 10 s outage must be over within 2 s of the server being
 * back: ceiling(10 s) <= 2 s) and make a long one cheap (at most one
 * attempt per 5 s on average after 30 s: ceiling(30 s) >= 10 s), which
 * needs the ceiling to grow sevenfold in those 20 s. In time it is one
 * number per policy, whatever the jitter drew, and a burst of failures at
 * one instant (the requests in flight when a connection drops) does not
 * grow it.
 *
 * Pure: no I/O, no logging, no global state; the random source is the
 * caller's (backoff_random() by default), so tests replay it. The caller
 * logs the condition: backoff_fail() says whether a failure started one,
 * backoff_reset() whether a success ended one, with how long it lasted and
 * how many attempts failed. */
#ifndef NA_BACKOFF_H
#define NA_BACKOFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct backoff_policy {
	uint32_t base_ms;   /* the ceiling of the first wait (>= 1) */
	uint32_t double_ms; /* the ceiling doubles every double_ms of the condition's age; 0: it never grows */
	uint32_t cap_ms;    /* and never exceeds cap_ms (>= base_ms) */
};

/* A uniform random number in [0, n) (0 when n is 0). */
typedef uint64_t (*backoff_random_fn)(void *ctx, uint64_t n);

struct backoff {
	const struct backoff_policy *policy; /* may be switched at any time: the ceiling follows it */
	uint64_t since_ms;  /* monotonic ms of the condition's first failure (valid while attempts > 0) */
	uint64_t clock_ms;  /* when the ceiling last started from base_ms (since_ms, or backoff_rebase()) */
	uint64_t attempts;  /* failures since the last reset; 0: no condition */
	backoff_random_fn random; /* NULL: backoff_random() */
	void *random_ctx;
};

/* getrandom(2), so that a fleet of nodes booted from one image does not
 * draw the same sequence (a time-seeded fallback when it fails); ctx is
 * unused. Not for secrets (modulo bias). */
uint64_t backoff_random(void *ctx, uint64_t n);

/* No condition, the policy p (borrowed: it outlives b). */
void backoff_init(struct backoff *b, const struct backoff_policy *p);

/* The ceiling a failure at now would draw from (base_ms without a
 * condition). */
uint64_t backoff_limit(const struct backoff *b, uint64_t now);

/* Records a failed attempt at now (the first starts the condition) and
 * returns the wait before the next one: uniform in [1, backoff_limit()],
 * but at least retry_after_ms (a server's Retry-After; 0: none) as far as
 * the cap allows. */
uint64_t backoff_fail(struct backoff *b, uint64_t now, uint64_t retry_after_ms);

/* True from the first failure to the next reset. */
static inline bool backoff_failing(const struct backoff *b)
{
	return b->attempts > 0;
}

/* A success at now ends the condition: returns true when there was one,
 * with *lasted_ms (since its first failure) and *attempts (failures) when
 * those are non-NULL. */
bool backoff_reset(struct backoff *b, uint64_t now, uint64_t *lasted_ms, uint64_t *attempts);

/* The condition goes on, but under policy p (NULL: the same) with its
 * ceiling starting again from p->base_ms at now: what was failing changed
 * (an API server that answers again, but not yet usefully). */
void backoff_rebase(struct backoff *b, const struct backoff_policy *p, uint64_t now);

/* "HH:MM:SS UTC" of the condition's first failure, given the monotonic now
 * and the wall clock wall_now ("?" without a condition). */
void backoff_since_text(const struct backoff *b, uint64_t now, time_t wall_now, char *buf, size_t len);

/* A duration for a log line: "850 ms", "12.4 s", "3 min 05 s", "2 h 10 min". */
void backoff_duration_text(uint64_t ms, char *buf, size_t len);

#endif
