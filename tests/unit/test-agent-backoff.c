/* Unit tests for the agent's one backoff (agent/http.c): the ceiling
 * doubles per failure up to the cap and never overflows; the half jitter
 * stays in (ceiling/2, ceiling] and is not a constant. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdint.h>

#include "../../agent/http.h"

static void ceiling(void **state)
{
	(void)state;
	assert_int_equal(backoff_ceiling(1000, 30000, 0), 1000);
	assert_int_equal(backoff_ceiling(1000, 30000, 1), 2000);
	assert_int_equal(backoff_ceiling(1000, 30000, 4), 16000);
	assert_int_equal(backoff_ceiling(1000, 30000, 5), 30000);
	/* However many failures: the cap, not a wrapped shift. */
	assert_int_equal(backoff_ceiling(1000, 30000, 63), 30000);
	assert_int_equal(backoff_ceiling(1000, 30000, UINT32_MAX), 30000);
	assert_int_equal(backoff_ceiling(500, UINT64_MAX, 100), UINT64_C(500) << 16);
}

static void half_jitter(void **state)
{
	(void)state;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < 2000; i++) {
		uint64_t d = backoff_half_jitter(30000);
		assert_true(d > 15000 && d <= 30000);
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	/* 2,000 draws from 15,000 values cover most of the range. */
	assert_true(lo < 16000);
	assert_true(hi > 29000);
	/* Small ceilings: never 0, never above the ceiling. */
	assert_int_equal(backoff_half_jitter(1), 1);
	for (int i = 0; i < 100; i++) {
		uint64_t d = backoff_half_jitter(3);
		assert_true(d >= 2 && d <= 3);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ceiling),
		cmocka_unit_test(half_jitter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
