/* The executor's pickup of desired.json; see pickup.h. */
#include "backoff.h"
#include "log.h"
#include "pickup.h"

/* The rewrites after the first: 30 s doubling every minute up to 5 min,
 * full jitter (lib/base/backoff.h). */
static const struct backoff_policy pickup_policy = { .base_ms = 2 * PICKUP_FIRST_MS, .double_ms = 60000,
						     .cap_ms = PICKUP_CAP_MS };

void pickup_written(struct pickup *p, uint64_t generation, uint64_t now)
{
	backoff_random_fn random = p->nudges.random; /* a test's */
	*p = (struct pickup){ .want = generation, .written_ms = now, .next_ms = now + PICKUP_FIRST_MS };
	backoff_init(&p->nudges, &pickup_policy);
	p->nudges.random = random;
}

void pickup_result(struct pickup *p, uint64_t generation)
{
	if (p->want == 0 || generation < p->want)
		return;
	if (p->nudges.attempts > 0)
		log_info("executor picked up generation %llu after %llu rewrite(s) of desired.json",
			 (unsigned long long)p->want, (unsigned long long)p->nudges.attempts);
	backoff_random_fn random = p->nudges.random;
	*p = (struct pickup){ 0 };
	p->nudges.random = random;
}

bool pickup_due(struct pickup *p, uint64_t now, uint64_t *next)
{
	if (p->want == 0)
		return false;
	if (now < p->next_ms) {
		if (p->next_ms < *next)
			*next = p->next_ms;
		return false;
	}
	bool first = !backoff_failing(&p->nudges);
	p->next_ms = now + backoff_fail(&p->nudges, now, 0);
	/* The first rewrite is logged; the next ones at debug. */
	log_full(first ? LOG_NOTICE : LOG_DEBUG, 0, __FILE__, __LINE__, NULL,
		 "executor has not reported generation %llu %llu s after it was written (still applying, or its path "
		 "unit missed the change): writing desired.json again",
		 (unsigned long long)p->want, (unsigned long long)((now - p->written_ms) / 1000u));
	return true;
}
