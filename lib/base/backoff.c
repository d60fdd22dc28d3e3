/* The one retry policy; see backoff.h. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "backoff.h"

uint64_t backoff_random(void *ctx, uint64_t n)
{
	(void)ctx;
	uint64_t x = 0;
	if (n == 0)
		return 0;
	if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != sizeof(x)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		x = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) * 6364136223846793005ull +
		    1442695040888963407ull;
	}
	return x % n;
}

void backoff_init(struct backoff *b, const struct backoff_policy *p)
{
	*b = (struct backoff){ .policy = p };
}

uint64_t backoff_limit(const struct backoff *b, uint64_t now)
{
	const struct backoff_policy *p = b->policy;
	uint64_t base = p->base_ms ? p->base_ms : 1u;
	uint64_t cap = p->cap_ms > base ? p->cap_ms : base;
	if (b->attempts == 0 || p->double_ms == 0 || now <= b->clock_ms)
		return base < cap ? base : cap;
	uint64_t age = now - b->clock_ms;
	uint64_t q = age / p->double_ms, r = age % p->double_ms;
	/* base is below 2^32: 31 doublings reach any 32-bit cap. */
	if (q >= 32 || (base << q) >= cap)
		return cap;
	uint64_t c = base << q;          /* < cap < 2^32 */
	c += c * r / p->double_ms;       /* linear to the next doubling; c * r < 2^64 */
	return c < cap ? c : cap;
}

uint64_t backoff_fail(struct backoff *b, uint64_t now, uint64_t retry_after_ms)
{
	if (b->attempts == 0)
		b->since_ms = b->clock_ms = now;
	if (b->attempts < UINT64_MAX)
		b->attempts++;
	uint64_t limit = backoff_limit(b, now);
	uint64_t wait = (b->random ? b->random : backoff_random)(b->random_ctx, limit) + 1;
	if (wait > limit) /* a random source that does not keep its range */
		wait = limit;
	uint64_t cap = b->policy->cap_ms > limit ? b->policy->cap_ms : limit;
	if (retry_after_ms > wait)
		wait = retry_after_ms < cap ? retry_after_ms : cap;
	return wait;
}

bool backoff_reset(struct backoff *b, uint64_t now, uint64_t *lasted_ms, uint64_t *attempts)
{
	bool was = b->attempts > 0;
	if (lasted_ms)
		*lasted_ms = was && now > b->since_ms ? now - b->since_ms : 0;
	if (attempts)
		*attempts = b->attempts;
	b->attempts = 0;
	b->since_ms = b->clock_ms = 0;
	return was;
}

void backoff_rebase(struct backoff *b, const struct backoff_policy *p, uint64_t now)
{
	if (p)
		b->policy = p;
	b->clock_ms = now;
}

void backoff_since_text(const struct backoff *b, uint64_t now, time_t wall_now, char *buf, size_t len)
{
	struct tm tm;
	time_t t = wall_now - (time_t)((now > b->since_ms ? now - b->since_ms : 0) / 1000u);
	if (b->attempts == 0 || !gmtime_r(&t, &tm) || strftime(buf, len, "%H:%M:%S UTC", &tm) == 0)
		snprintf(buf, len, "?");
}

void backoff_duration_text(uint64_t ms, char *buf, size_t len)
{
	if (ms < 1000)
		snprintf(buf, len, "%" PRIu64 " ms", ms);
	else if (ms < 60000)
		snprintf(buf, len, "%" PRIu64 ".%" PRIu64 " s", ms / 1000u, ms % 1000u / 100u);
	else if (ms < 3600000)
		snprintf(buf, len, "%" PRIu64 " min %02" PRIu64 " s", ms / 60000u, ms / 1000u % 60u);
	else
		snprintf(buf, len, "%" PRIu64 " h %02" PRIu64 " min", ms / 3600000u, ms / 60000u % 60u);
}
