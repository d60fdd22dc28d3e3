/* Token sync, node-agent's half; see tokensync.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "kube.h"
#include "log.h"
#include "tokensync.h"

#define DEFAULT_PERIOD_MS (12ull * 3600 * 1000)
#define RETRY_MS 60000u

/* A read that failed (not the gate's): 10 s doubling every minute up to
 * 5 min, full jitter (lib/base/backoff.h); gardener-node-agent's token
 * controller requeues with controller-runtime's rate limiter. */
static const struct backoff_policy tokensync_policy = { .base_ms = 10000, .double_ms = RETRY_MS, .cap_ms = 300000 };

static void entry_free(struct tokensync_entry *e)
{
	if (e->req)
		http_cancel(e->req);
	free(e->secret);
	free(e->path);
	if (e->token) {
		explicit_bzero(e->token, strlen(e->token));
		free(e->token);
	}
}

static bool same_list(const struct tokensync *t, const struct gna_token_sync *syncs, size_t n)
{
	if (t->n != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(t->entries[i].secret, syncs[i].secret_name) != 0 || strcmp(t->entries[i].path, syncs[i].path) != 0)
			return false;
	return true;
}

int tokensync_set(struct tokensync *t, const struct gna_token_sync *syncs, size_t n, uint64_t period_ms)
{
	t->period_ms = period_ms ? period_ms : DEFAULT_PERIOD_MS;
	if (same_list(t, syncs, n))
		return 0;
	struct tokensync_entry *e = n ? calloc(n, sizeof(*e)) : NULL;
	if (n && !e)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		e[i].secret = strdup(syncs[i].secret_name);
		e[i].path = strdup(syncs[i].path);
		if (!e[i].secret || !e[i].path) {
			for (size_t k = 0; k <= i; k++)
				entry_free(&e[k]);
			free(e);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < t->n; i++)
		entry_free(&t->entries[i]);
	free(t->entries);
	t->entries = e;
	t->n = n;
	t->changed = true;
	if (n)
		log_info("token sync: following %zu Secret(s), every %llu s", n,
			 (unsigned long long)(t->period_ms / 1000u));
	return 0;
}

void tokensync_attach(struct tokensync *t, struct http_client *http)
{
	for (size_t i = 0; i < t->n; i++) {
		if (t->entries[i].req)
			http_cancel(t->entries[i].req);
		t->entries[i].req = NULL;
		t->entries[i].next_at = 0;
	}
	t->http = http;
}


static void on_done(struct http_request *req, void *userdata)
{
	struct tokensync *t = userdata;
	uint64_t now = now_ms();
	struct tokensync_entry *e = NULL;
	for (size_t i = 0; i < t->n; i++)
		if (t->entries[i].req == req)
			e = &t->entries[i];
	if (!e)
		return;
	e->req = NULL;
	if (http_gate_took(req)) { /* the gate paces it (and logs the outage) */
		e->next_at = now;
		return;
	}
	unsigned char *tok = NULL;
	size_t len = 0;
	const char *why = NULL;
	int r = req->status == 200 ? kube_secret_data(req->body ? req->body : "", req->body_len, "token",
						      DESIRED_TOKEN_MAX, &tok, &len, &why)
				   : -EIO;
	if (r == 0 && memchr(tok, '\0', len)) {
		r = -EINVAL;
		why = "token contains a NUL byte";
	}
	if (r < 0) {
		if (!e->warned) {
			char desc[512];
			if (r == -EIO)
				http_describe_failure(req, desc, sizeof(desc));
			log_warning("token sync: Secret kube-system/%s for %s: %s; keeping the last token, retrying",
				    e->secret, e->path, r == -EIO ? desc : r == -ENOENT ? "no key \"token\"" : why);
			e->warned = true;
		}
		free(tok);
		if (!e->retry.policy)
			e->retry.policy = &tokensync_policy;
		e->next_at = now + backoff_fail(&e->retry, now, 0);
		return;
	}
	e->warned = false;
	backoff_reset(&e->retry, now, NULL, NULL);
	e->next_at = now + t->period_ms;
	if (e->token && strcmp(e->token, (char *)tok) == 0) {
		explicit_bzero(tok, len);
		free(tok);
		return;
	}
	if (e->token) {
		explicit_bzero(e->token, strlen(e->token));
		free(e->token);
	}
	e->token = (char *)tok;
	t->changed = true;
	log_info("token sync: Secret kube-system/%s read for %s", e->secret, e->path);
}

void tokensync_resync_now(struct tokensync *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (!t->entries[i].req)
			t->entries[i].next_at = 0;
}

uint64_t tokensync_tick(struct tokensync *t, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	if (!t->http)
		return next;
	for (size_t i = 0; i < t->n; i++) {
		struct tokensync_entry *e = &t->entries[i];
		if (e->req)
			continue;
		if (now >= http_due(t->http, e->next_at)) {
			char path[512];
			snprintf(path, sizeof(path), "/api/v1/namespaces/kube-system/secrets/%s", e->secret);
			int r = http_start(t->http, "GET", path, NULL, NULL, NULL, false, NULL, on_done, t, &e->req);
			if (r >= 0)
				continue;
			if (r != -EAGAIN) { /* -EAGAIN: the gate closed meanwhile */
				e->next_at = now + RETRY_MS;
				log_debug_errno(r, "token sync: cannot read Secret %s yet", e->secret);
			}
		}
		uint64_t due = http_due(t->http, e->next_at);
		next = due < next ? due : next;
	}
	return next;
}

int tokensync_desired(const struct tokensync *t, struct desired_token **ret, size_t *n)
{
	*ret = NULL;
	*n = 0;
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++)
		k += t->entries[i].token != NULL;
	if (!k)
		return 0;
	struct desired_token *d = calloc(k, sizeof(*d));
	if (!d)
		return -ENOMEM;
	k = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->entries[i].token)
			d[k++] = (struct desired_token){ .path = t->entries[i].path, .token = t->entries[i].token };
	*ret = d;
	*n = k;
	return 0;
}

void tokensync_done(struct tokensync *t)
{
	for (size_t i = 0; i < t->n; i++)
		entry_free(&t->entries[i]);
	free(t->entries);
	*t = (struct tokensync){};
}
