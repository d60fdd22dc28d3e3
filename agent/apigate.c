/* The API server's gate; see apigate.h. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "apigate.h"
#include "http.h"
#include "log.h"

const struct backoff_policy apigate_down_policy = { .base_ms = 500, .double_ms = 6000, .cap_ms = 15000 };
const struct backoff_policy apigate_starting_policy = { .base_ms = 500, .double_ms = 20000, .cap_ms = 15000 };

void apigate_init(struct apigate *g, const char *url)
{
	*g = (struct apigate){ .state = APIGATE_UP };
	backoff_init(&g->b, &apigate_down_policy);
	http_url_authority(url, g->server, sizeof(g->server));
}

uint64_t apigate_at(const struct apigate *g)
{
	if (g->state == APIGATE_UP)
		return 0;
	return g->probing ? UINT64_MAX : g->next_at;
}

bool apigate_admit(struct apigate *g, uint64_t now, bool *probe)
{
	*probe = false;
	if (g->state == APIGATE_UP)
		return true;
	if (g->probing || now < g->next_at)
		return false;
	g->probing = true;
	*probe = true;
	return true;
}

void apigate_probe_gone(struct apigate *g)
{
	g->probing = false;
}

static void server_field(const struct apigate *g, char *buf, size_t len)
{
	snprintf(buf, len, "API_SERVER=%s", g->server);
}

/* The condition's start, once: at its second failed attempt, and not
 * before quiet_until. */
static void maybe_log_start(struct apigate *g, uint64_t now)
{
	if (g->logged || g->b.attempts < 2 || now < g->quiet_until)
		return;
	char sf[300], since[32];
	server_field(g, sf, sizeof(sf));
	backoff_since_text(&g->b, now, time(NULL), since, sizeof(since));
	g->logged = true;
	g->conditions++;
	if (g->state == APIGATE_DOWN)
		log_fields(LOG_WARNING, LOG_FIELDS(sf),
			   "API server %s unreachable since %s (%s): check that it runs and that the network and any "
			   "load balancer in front of it reach it; every request waits, one attempt at a time, backing "
			   "off to one every %u s at most (logged again when it is back)",
			   g->server, since, g->why, apigate_down_policy.cap_ms / 1000u);
	else
		log_fields(LOG_WARNING, LOG_FIELDS(sf),
			   "API server %s answers but does not serve yet since %s (%s): it is starting or overloaded, "
			   "check its /readyz; every request waits, one attempt at a time, backing off to one every "
			   "%u s at most (logged again when it serves)",
			   g->server, since, g->why, apigate_starting_policy.cap_ms / 1000u);
}

/* A failed attempt of the condition: the next probe's slot. */
static void failed_attempt(struct apigate *g, uint64_t now)
{
	g->next_at = now + backoff_fail(&g->b, now, 0);
	maybe_log_start(g, now);
	log_debug("API server %s: attempt %" PRIu64 " of this condition failed (%s); next in %" PRIu64 " ms", g->server,
		  g->b.attempts, g->state == APIGATE_DOWN ? "nobody serving" : "not serving yet", g->next_at - now);
}

/* A new condition from UP: quiet (not logged) until quiet_until. */
static void begin(struct apigate *g, enum apigate_state state, const char *why, uint64_t quiet_until)
{
	backoff_init(&g->b, state == APIGATE_DOWN ? &apigate_down_policy : &apigate_starting_policy);
	g->state = state;
	g->logged = false;
	g->quiet_until = quiet_until;
	snprintf(g->why, sizeof(g->why), "%s", why);
}

static void up(struct apigate *g, uint64_t now)
{
	char sf[300], since[32], lasted_text[32];
	uint64_t lasted = 0, attempts = 0;
	backoff_since_text(&g->b, now, time(NULL), since, sizeof(since));
	backoff_reset(&g->b, now, &lasted, &attempts);
	backoff_duration_text(lasted, lasted_text, sizeof(lasted_text));
	if (g->logged) {
		server_field(g, sf, sizeof(sf));
		char df[48], af[48];
		snprintf(df, sizeof(df), "DOWN_MS=%" PRIu64, lasted);
		snprintf(af, sizeof(af), "ATTEMPTS=%" PRIu64, attempts);
		log_fields(LOG_NOTICE, LOG_FIELDS(sf, df, af),
			   "API server %s serves again after %s (since %s, %" PRIu64 " failed attempt(s))", g->server,
			   lasted_text, since, attempts);
	} else if (attempts)
		log_debug("API server %s serves again after %s (%" PRIu64 " failed attempt(s), not logged)", g->server,
			  lasted_text, attempts);
	g->state = APIGATE_UP;
	g->logged = false;
	g->probing = false;
	g->quiet_until = 0;
	g->up_at = now;
}

static bool is_not_ready(long status, bool reviving)
{
	return status == 429 || status == 500 || status == 502 || status == 503 || status == 504 ||
	       (status == 403 && reviving);
}

bool apigate_answer(struct apigate *g, long status, bool probe, uint64_t now)
{
	if (probe)
		g->probing = false;
	/* The first answer after nobody served opens the revived window. */
	if (g->state == APIGATE_DOWN)
		g->revived_until = now + APIGATE_REVIVED_MS;
	bool not_ready = is_not_ready(status, now < g->revived_until);
	if (!not_ready) {
		if (g->state != APIGATE_UP)
			up(g, now);
		return false;
	}
	char why[64];
	snprintf(why, sizeof(why), "HTTP %ld", status);
	switch (g->state) {
	case APIGATE_UP:
		/* Only a server that came back a moment ago: its answer,
		 * not the duty's (else 429 and 5xx are the duty's own). */
		if (now >= g->revived_until)
			return false;
		begin(g, APIGATE_STARTING, why, g->revived_until);
		break;
	case APIGATE_DOWN:
		g->state = APIGATE_STARTING;
		backoff_rebase(&g->b, &apigate_starting_policy, now);
		if (!g->logged)
			snprintf(g->why, sizeof(g->why), "%s", why);
		break;
	case APIGATE_STARTING:
		failed_attempt(g, now);
		return true;
	}
	failed_attempt(g, now);
	return true;
}

bool apigate_failed(struct apigate *g, bool nobody, bool probe, const char *why, uint64_t now)
{
	if (probe)
		g->probing = false;
	switch (g->state) {
	case APIGATE_UP:
		if (!nobody)
			return false;
		begin(g, APIGATE_DOWN, why, 0);
		break;
	case APIGATE_STARTING:
		if (!nobody && !probe)
			return false;
		if (nobody) {
			/* Gone again while starting. */
			g->state = APIGATE_DOWN;
			backoff_rebase(&g->b, &apigate_down_policy, now);
		}
		break;
	case APIGATE_DOWN:
		if (!nobody && !probe)
			return false;
		break;
	}
	failed_attempt(g, now);
	return true;
}
