/* Unit tests for the one retry policy (lib/base/backoff.h) and the paces of
 * the API server's gate (agent/apigate.h): the ceiling exponential in the
 * condition's age with its cap, full jitter within [1, ceiling], Retry-After,
 * the reset that ends a condition, the rebase; and, replayed from a seeded
 * random source, the fleet bounds the issue asks for (issue 35): after a
 * 10 s outage a node is back within 2 s of the server serving again; during
 * a 2-minute outage 1,000 nodes make no more than 200 attempts a second in
 * all after its first 30 s (one per 5 s per node on average). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../agent/apigate.h"
#include "backoff.h"

static const struct backoff_policy p = { .base_ms = 500, .double_ms = 6000, .cap_ms = 15000 };

/* xorshift64*: a seeded source, so every run draws the same. */
static uint64_t seeded(void *ctx, uint64_t n)
{
	uint64_t *x = ctx;
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return n ? (*x * 2685821657736338717ull) % n : 0;
}

static uint64_t longest(void *ctx, uint64_t n)
{
	(void)ctx;
	return n ? n - 1 : 0;
}

static uint64_t shortest(void *ctx, uint64_t n)
{
	(void)ctx;
	(void)n;
	return 0;
}

static void ceiling_grows_with_age(void **state)
{
	(void)state;
	struct backoff b;
	backoff_init(&b, &p);
	assert_int_equal(backoff_limit(&b, 1000), 500); /* no condition: the base */
	assert_false(backoff_failing(&b));
	b.random = longest;
	assert_int_equal(backoff_fail(&b, 1000, 0), 500);
	assert_true(backoff_failing(&b));
	assert_int_equal(b.since_ms, 1000);
	/* Doubling every 6 s of age, linear in between, then the cap. */
	assert_int_equal(backoff_limit(&b, 1000 + 3000), 750);
	assert_int_equal(backoff_limit(&b, 1000 + 6000), 1000);
	assert_int_equal(backoff_limit(&b, 1000 + 12000), 2000);
	assert_int_equal(backoff_limit(&b, 1000 + 24000), 8000);
	assert_int_equal(backoff_limit(&b, 1000 + 30000), 15000);
	assert_int_equal(backoff_limit(&b, 1000 + 3600000), 15000);
	assert_int_equal(backoff_limit(&b, UINT64_MAX), 15000); /* no overflow */
	/* Monotone in the age. */
	uint64_t last = 0;
	for (uint64_t t = 1000; t < 60000; t += 7) {
		uint64_t c = backoff_limit(&b, t);
		assert_true(c >= last && c <= 15000);
		last = c;
	}
	/* The number of attempts does not grow it: a burst at one instant. */
	for (int i = 0; i < 100; i++)
		assert_int_equal(backoff_fail(&b, 1000, 0), 500);
	/* A policy that never grows. */
	static const struct backoff_policy flat = { .base_ms = 2000, .cap_ms = 2000 };
	struct backoff f;
	backoff_init(&f, &flat);
	f.random = longest;
	assert_int_equal(backoff_fail(&f, 0, 0), 2000);
	assert_int_equal(backoff_fail(&f, 1000000, 0), 2000);
}

static void full_jitter(void **state)
{
	(void)state;
	struct backoff b;
	uint64_t seed = 42;
	backoff_init(&b, &p);
	b.random = seeded;
	b.random_ctx = &seed;
	/* At 30 s of age: uniform in [1, 15000]. */
	backoff_fail(&b, 0, 0);
	uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
	for (int i = 0; i < 20000; i++) {
		uint64_t d = backoff_fail(&b, 30000, 0);
		assert_true(d >= 1 && d <= 15000);
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
		sum += d;
	}
	assert_true(lo < 100 && hi > 14900);
	double mean = (double)sum / 20000;
	assert_true(mean > 7300 && mean < 7700); /* half the ceiling */
	/* The edges of the random source. */
	b.random = shortest;
	assert_int_equal(backoff_fail(&b, 30000, 0), 1);
	b.random = longest;
	assert_int_equal(backoff_fail(&b, 30000, 0), 15000);
	/* getrandom(2) by default: within the ceiling, and not constant. */
	b.random = NULL;
	uint64_t first = backoff_fail(&b, 30000, 0), other = first;
	for (int i = 0; i < 50 && other == first; i++)
		other = backoff_fail(&b, 30000, 0);
	assert_true(first >= 1 && first <= 15000);
	assert_true(other != first);
}

static void retry_after(void **state)
{
	(void)state;
	struct backoff b;
	backoff_init(&b, &p);
	b.random = shortest;
	/* Never sooner than Retry-After ... */
	assert_int_equal(backoff_fail(&b, 0, 3000), 3000);
	/* ... up to the cap. */
	assert_int_equal(backoff_fail(&b, 0, 3600000), 15000);
	/* A draw longer than Retry-After stands. */
	b.random = longest;
	assert_int_equal(backoff_fail(&b, 30000, 1000), 15000);
}

static void reset_ends_the_condition(void **state)
{
	(void)state;
	struct backoff b;
	backoff_init(&b, &p);
	uint64_t lasted = 1, attempts = 1;
	assert_false(backoff_reset(&b, 5000, &lasted, &attempts));
	assert_int_equal(lasted, 0);
	assert_int_equal(attempts, 0);
	backoff_fail(&b, 10000, 0);
	backoff_fail(&b, 12000, 0);
	backoff_fail(&b, 40000, 0);
	char since[32];
	backoff_since_text(&b, 40000, 1795658462 + 30, since, sizeof(since));
	assert_string_equal(since, "02:01:02 UTC"); /* 30 s before the wall clock's now */
	assert_true(backoff_reset(&b, 70000, &lasted, &attempts));
	assert_int_equal(lasted, 60000);
	assert_int_equal(attempts, 3);
	assert_false(backoff_failing(&b));
	backoff_since_text(&b, 70000, 1795658462, since, sizeof(since));
	assert_string_equal(since, "?");
	/* A new condition starts from the base again. */
	b.random = longest;
	assert_int_equal(backoff_fail(&b, 100000, 0), 500);
	char d[32];
	backoff_duration_text(850, d, sizeof(d));
	assert_string_equal(d, "850 ms");
	backoff_duration_text(12449, d, sizeof(d));
	assert_string_equal(d, "12.4 s");
	backoff_duration_text(185000, d, sizeof(d));
	assert_string_equal(d, "3 min 05 s");
	backoff_duration_text(7800000, d, sizeof(d));
	assert_string_equal(d, "2 h 10 min");
}

static void rebase(void **state)
{
	(void)state;
	static const struct backoff_policy q = { .base_ms = 1000, .double_ms = 6000, .cap_ms = 5000 };
	struct backoff b;
	backoff_init(&b, &p);
	b.random = longest;
	backoff_fail(&b, 0, 0);
	assert_int_equal(backoff_limit(&b, 120000), 15000);
	/* What fails changed: the condition goes on, the ceiling starts
	 * again from the new policy's base. */
	backoff_rebase(&b, &q, 120000);
	assert_int_equal(backoff_limit(&b, 120000), 1000);
	assert_int_equal(backoff_fail(&b, 126000, 0), 2000);
	assert_int_equal(backoff_limit(&b, 300000), 5000);
	assert_int_equal(b.since_ms, 0);
	assert_int_equal(b.attempts, 2);
}

/* One node through an outage of outage_ms that starts with its first
 * failed attempt (at 0): its attempts while nothing serves go into
 * per_second (when non-NULL); returns how long after the end of the
 * outage its next attempt comes. */
static uint64_t outage(const struct backoff_policy *pol, uint64_t *seed, uint64_t outage_ms, unsigned *per_second,
		       unsigned *attempts)
{
	struct backoff b;
	backoff_init(&b, pol);
	b.random = seeded;
	b.random_ctx = seed;
	uint64_t t = 0;
	for (;;) {
		if (per_second)
			per_second[t / 1000]++;
		(*attempts)++;
		t += backoff_fail(&b, t, 0);
		if (t >= outage_ms)
			return t - outage_ms;
	}
}

/* The single node: back within 2 s of the server serving again
 * after a 10 s outage; by construction (the ceiling at 10 s) and over 2,000
 * replays. */
static void single_node_short_outage(void **state)
{
	(void)state;
	struct backoff b;
	backoff_init(&b, &apigate_down_policy);
	b.random = shortest;
	backoff_fail(&b, 0, 0);
	assert_true(backoff_limit(&b, 10000) <= 2000);
	uint64_t seed = 7, worst = 0;
	unsigned attempts = 0;
	for (int i = 0; i < 2000; i++) {
		uint64_t late = outage(&apigate_down_policy, &seed, 10000, NULL, &attempts);
		worst = late > worst ? late : worst;
	}
	print_message("10 s outage, 2,000 replays: next attempt at most %.2f s after it, %.1f attempts each\n",
		      (double)worst / 1000, attempts / 2000.0);
	assert_true(worst <= 2000);
	/* A starting server (its answers, not a refusal): at most 1 s apart
	 * for its first 10 s, then the long cap. */
	backoff_init(&b, &apigate_starting_policy);
	backoff_fail(&b, 0, 0);
	assert_true(backoff_limit(&b, 10000) <= 1000);
	assert_true(backoff_limit(&b, 3600000) <= apigate_down_policy.cap_ms);
}

/* The fleet: 1,000 nodes, a 2-minute outage. After its first 30 s
 * no more than 200 attempts a second in all (the mean, and every single
 * second), i.e. at most one per 5 s per node; and every node's next
 * attempt within the cap after it ends. */
static void fleet_long_outage(void **state)
{
	(void)state;
	enum { NODES = 1000, SECONDS = 120 };
	unsigned per_second[SECONDS + 16] = { 0 };
	uint64_t seed = 11, worst = 0;
	unsigned attempts = 0;
	for (int i = 0; i < NODES; i++) {
		uint64_t late = outage(&apigate_down_policy, &seed, SECONDS * 1000u, per_second, &attempts);
		worst = late > worst ? late : worst;
	}
	unsigned first30 = 0, after = 0, peak = 0;
	for (int s = 0; s < SECONDS; s++) {
		if (s < 30)
			first30 += per_second[s];
		else {
			after += per_second[s];
			peak = per_second[s] > peak ? per_second[s] : peak;
		}
	}
	double mean = after / (double)(SECONDS - 30);
	print_message("1,000 nodes, 2 min outage: %u attempts in all, %u in the first 30 s (peak %u/s in the first), "
		      "then %.0f/s on average, at most %u/s; the last node's next attempt %.1f s after it\n",
		      attempts, first30, per_second[0], mean, peak, (double)worst / 1000);
	assert_true(mean <= 200);
	assert_true(peak <= 200);
	assert_true(worst <= apigate_down_policy.cap_ms);
	/* The rate per node the issue allows, with room: one per 5 s. */
	assert_true(mean / NODES <= 0.2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ceiling_grows_with_age),
		cmocka_unit_test(full_jitter),
		cmocka_unit_test(retry_after),
		cmocka_unit_test(reset_ends_the_condition),
		cmocka_unit_test(rebase),
		cmocka_unit_test(single_node_short_outage),
		cmocka_unit_test(fleet_long_outage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
