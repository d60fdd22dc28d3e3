/* Unit tests for agent/pickup.c with a fake clock: a generation not in
 * result.json PICKUP_FIRST_MS after it was written is written again, then
 * after the back-off (lib/base/backoff.h) up to the cap; a result that names it (or a later
 * one) ends the wait, an older one does not. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdint.h>

#include "../../agent/pickup.h"

static void picked_up_in_time(void **state)
{
	(void)state;
	struct pickup p = { 0 };
	uint64_t next = UINT64_MAX;
	assert_false(pickup_due(&p, 1000, &next)); /* nothing written yet */
	assert_int_equal(next, UINT64_MAX);
	pickup_written(&p, 7, 1000);
	assert_false(pickup_due(&p, 1000 + PICKUP_FIRST_MS - 1, &next));
	assert_int_equal(next, 1000 + PICKUP_FIRST_MS);
	pickup_result(&p, 6); /* the one before: not it */
	next = UINT64_MAX;
	assert_false(pickup_due(&p, 2000, &next));
	assert_int_equal(next, 1000 + PICKUP_FIRST_MS);
	pickup_result(&p, 7);
	next = UINT64_MAX;
	assert_false(pickup_due(&p, 1000 + 10 * PICKUP_FIRST_MS, &next));
	assert_int_equal(next, UINT64_MAX);
}

static uint64_t longest(void *ctx, uint64_t n)
{
	(void)ctx;
	return n ? n - 1 : 0;
}

static void missed(void **state)
{
	(void)state;
	struct pickup p = { 0 };
	p.nudges.random = longest; /* the ceiling itself, each time */
	uint64_t t = 5000, next;
	pickup_written(&p, 3, t);
	t += PICKUP_FIRST_MS;
	next = UINT64_MAX;
	assert_true(pickup_due(&p, t, &next));
	/* Not again at once; then after the back-off: 30 s first, growing
	 * with the time the executor has not picked it up. */
	assert_false(pickup_due(&p, t, &next));
	assert_int_equal(next, t + 2 * PICKUP_FIRST_MS);
	uint64_t gap = next - t;
	t = next;
	assert_true(pickup_due(&p, t, &next));
	next = UINT64_MAX;
	assert_false(pickup_due(&p, t, &next));
	assert_true(next - t > gap);
	/* Capped. */
	for (int i = 0; i < 20; i++) {
		next = UINT64_MAX;
		assert_false(pickup_due(&p, t, &next));
		assert_true(next - t <= PICKUP_CAP_MS);
		t = next;
		assert_true(pickup_due(&p, t, &next));
	}
	next = UINT64_MAX;
	assert_false(pickup_due(&p, t, &next));
	assert_int_equal(next - t, PICKUP_CAP_MS);
	assert_int_equal(p.nudges.attempts, 22);
	/* A later generation in result.json ends it too. */
	pickup_result(&p, 4);
	next = UINT64_MAX;
	assert_false(pickup_due(&p, t + PICKUP_CAP_MS, &next));
	assert_int_equal(next, UINT64_MAX);
}

static void rewritten_generation_restarts_the_clock(void **state)
{
	(void)state;
	struct pickup p = { 0 };
	uint64_t next = UINT64_MAX;
	pickup_written(&p, 1, 0);
	assert_true(pickup_due(&p, PICKUP_FIRST_MS, &next));
	pickup_written(&p, 2, PICKUP_FIRST_MS + 100);
	assert_false(pickup_due(&p, 2 * PICKUP_FIRST_MS, &next));
	assert_true(pickup_due(&p, 2 * PICKUP_FIRST_MS + 100, &next));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(picked_up_in_time),
		cmocka_unit_test(missed),
		cmocka_unit_test(rewritten_generation_restarts_the_clock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
