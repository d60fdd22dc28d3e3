/* The executor's pickup of desired.json; see pickup.h. */
#include "http.h"
#include "log.h"
#include "pickup.h"

void pickup_written(struct pickup *p, uint64_t generation, uint64_t now)
{
	*p = (struct pickup){ .want = generation, .written_ms = now, .next_ms = now + PICKUP_FIRST_MS };
}

void pickup_result(struct pickup *p, uint64_t generation)
{
	if (p->want == 0 || generation < p->want)
		return;
	if (p->nudges > 0)
		log_info("executor picked up generation %llu after %u rewrite(s) of desired.json",
			 (unsigned long long)p->want, p->nudges);
	*p = (struct pickup){ 0 };
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
	p->nudges++;
	p->next_ms = now + backoff_ceiling(PICKUP_FIRST_MS, PICKUP_CAP_MS, p->nudges);
	log_notice("executor has not reported generation %llu %llu s after it was written (still applying, or "
		    "its path unit missed the change): writing desired.json again",
		    (unsigned long long)p->want, (unsigned long long)((now - p->written_ms) / 1000u));
	return true;
}
