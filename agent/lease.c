/* The Lease duty; see lease.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "lease.h"
#include "log.h"

/* gardenlet's verdict: renewTime + leaseDurationSeconds in the past. */
#define LEASE_EXPIRES_MS (KUBE_LEASE_DURATION_S * 1000u)
/* 409s in a row answered by an immediate re-read; more back off. */
#define CONFLICTS_FREE 3u
/* Gardener's authorizer decides on gardener-resource-manager's informer
 * cache (pkg/resourcemanager/webhook/nodeagentauthorizer/authorizer.go
 * getNode): for a moment after the Node is created it has not seen it and
 * refuses the Lease (403). Such a 403 within AUTHZ_LAG_MS of the Node's
 * appearance is asked again after AUTHZ_LAG_RETRY_MS, quietly (debug). */
#define AUTHZ_LAG_MS 10000u
#define AUTHZ_LAG_RETRY_MS 500u

/* A failed renewal's retries (lib/base/backoff.h): 1 s doubling every 2 s,
 * full jitter, at most 5 s apart while they can still save the Lease (the
 * 20 s before it expires), at most 30 s once it has expired or was never
 * held: then there is nothing to save, and a fleet retrying every few
 * seconds against a failing API server is load. Failures the API server's
 * gate takes (nobody serving, a starting server) wait for it instead. */
static const struct backoff_policy lease_retry_policy = { .base_ms = LEASE_RETRY_BASE_MS, .double_ms = 2000,
							  .cap_ms = LEASE_RETRY_CAP_MS };
static const struct backoff_policy lease_expired_policy = { .base_ms = LEASE_RETRY_BASE_MS, .double_ms = 2000,
							    .cap_ms = LEASE_RETRY_EXPIRED_CAP_MS };

static const char *lease_field(const struct lease *l, char *buf, size_t len)
{
	snprintf(buf, len, "LEASE=%s/%s", KUBE_LEASE_NAMESPACE, l->name);
	return buf;
}

int lease_parse_answer(const struct http_request *req, struct kube_lease *k, char *why, size_t whylen)
{
	const char *err = NULL;
	int r = kube_lease_parse(req->body ? req->body : "", req->body_len, k, &err);
	if (r >= 0 && k->resource_version)
		return 0;
	snprintf(why, whylen, "the answer to %s is not a Lease (%s)", req->method,
		 r < 0 ? (err ? err : "invalid") : "no metadata.resourceVersion");
	if (r >= 0)
		kube_lease_done(k);
	return -EBADMSG;
}

int lease_init(struct lease *l, struct http_client *http, const char *node_name)
{
	*l = (struct lease){ .http = http };
	backoff_init(&l->retry, &lease_retry_policy);
	int r = kube_lease_name(node_name, l->name, sizeof(l->name));
	if (r < 0)
		return log_error_errno(r, "node name \"%s\" gives no valid Lease name (%s<node>, at most %u bytes); "
				       "not keeping a Lease", node_name, KUBE_LEASE_PREFIX, KUBE_NAME_MAX);
	snprintf(l->path, sizeof(l->path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", KUBE_LEASE_NAMESPACE,
		 l->name);
	l->node_name = strdup(node_name);
	if (!l->node_name)
		return log_error_errno(-ENOMEM, "cannot set up the Lease");
	return 0;
}

void lease_done(struct lease *l)
{
	if (l->req)
		http_cancel(l->req);
	free(l->node_name);
	free(l->obj);
	*l = (struct lease){};
}

void lease_set_node(struct lease *l, const char *uid)
{
	if (!l->node_name)
		return;
	if (!uid || !*uid || strlen(uid) > KUBE_UID_MAX) {
		if (l->step != LEASE_IDLE)
			log_notice("Node %s unknown or gone: no longer renewing Lease %s/%s", l->node_name,
				   KUBE_LEASE_NAMESPACE, l->name);
		l->node_uid[0] = '\0';
		l->step = LEASE_IDLE;
		return;
	}
	if (strcmp(uid, l->node_uid) == 0)
		return;
	/* A new Node object (or the first one): its uid goes into the owner
	 * reference now, not at the next renewal. */
	snprintf(l->node_uid, sizeof(l->node_uid), "%s", uid);
	l->node_seen_ms = now_ms();
	if (l->step == LEASE_IDLE)
		l->step = l->rv[0] ? LEASE_RENEW : LEASE_GET;
	l->wake_at = 0;
}

/* Keeps the Lease of the answer to req, the base of the next update; the
 * resourceVersion rv parsed from it. */
static void keep(struct lease *l, const struct http_request *req, const char *rv)
{
	char *o = malloc(req->body_len + 1);
	free(l->obj);
	l->obj = NULL;
	l->obj_len = 0;
	l->rv[0] = '\0';
	if (!o)
		return; /* read again next time */
	memcpy(o, req->body, req->body_len);
	o[req->body_len] = '\0';
	l->obj = o;
	l->obj_len = req->body_len;
	snprintf(l->rv, sizeof(l->rv), "%s", rv);
}

static void forget(struct lease *l)
{
	free(l->obj);
	l->obj = NULL;
	l->obj_len = 0;
	l->rv[0] = '\0';
}

static void renewed(struct lease *l, uint64_t now, time_t wall)
{
	char lf[320], took[32];
	uint64_t lasted = 0, attempts = 0;
	bool failing = backoff_reset(&l->retry, now, &lasted, &attempts);
	backoff_duration_text(l->last_renew_ms ? now - l->last_renew_ms : lasted, took, sizeof(took));
	if (failing && l->fail_logged)
		log_fields(LOG_NOTICE, LOG_FIELDS(lease_field(l, lf, sizeof(lf))),
			   "Lease %s/%s renewed again after %llu failed attempt(s), %s after the last renewal%s",
			   KUBE_LEASE_NAMESPACE, l->name, (unsigned long long)attempts, took,
			   l->expired_logged ? " (it had expired meanwhile)" : "");
	else if (l->expired_logged)
		log_fields(LOG_NOTICE, LOG_FIELDS(lease_field(l, lf, sizeof(lf))),
			   "Lease %s/%s renewed again, %s after the last renewal (it had expired meanwhile)",
			   KUBE_LEASE_NAMESPACE, l->name, took);
	else if (!l->renewals)
		log_fields(LOG_INFO, LOG_FIELDS(lease_field(l, lf, sizeof(lf))),
			   "Lease %s/%s held (renewed every %u s, duration %u s)", KUBE_LEASE_NAMESPACE, l->name,
			   LEASE_RENEW_MS / 1000u, KUBE_LEASE_DURATION_S);
	l->fail_logged = false;
	l->expired_logged = false;
	l->renewals++;
	l->last_renew_ms = now;
	l->last_renew_wall = wall;
	l->step = l->obj ? LEASE_RENEW : LEASE_GET;
	l->wake_at = now + LEASE_RENEW_MS;
}

/* Once, when the last good renewal is as old as the Lease's duration:
 * gardenlet's verdict, whoever's failure it was. */
static void check_expired(struct lease *l, uint64_t now, const char *why)
{
	char lf[320];
	if (l->last_renew_ms && now - l->last_renew_ms >= LEASE_EXPIRES_MS && !l->expired_logged) {
		l->expired_logged = true;
		log_fields(LOG_ERR, LOG_FIELDS(lease_field(l, lf, sizeof(lf))),
			   "Lease %s/%s expired (not renewed for %u s): gardenlet reports the agent as not running; "
			   "last error: %s", KUBE_LEASE_NAMESPACE, l->name, KUBE_LEASE_DURATION_S, why);
	}
}

/* A failed request: logged when renewals start failing and when the Lease
 * has expired by gardenlet's rule; retried after the back-off (see
 * lease_retry_policy), or, when the API server's gate took the failure,
 * as soon as the gate lets a request through (it logs the outage). */
static void failed(struct lease *l, uint64_t now, const char *why, long retry_after_s, bool gate)
{
	char lf[320];
	l->failed++;
	check_expired(l, now, why);
	if (gate) {
		l->wake_at = now;
		return;
	}
	if (!backoff_failing(&l->retry)) {
		l->fail_logged = true;
		log_fields(LOG_WARNING, LOG_FIELDS(lease_field(l, lf, sizeof(lf))),
			   "renewal of Lease %s/%s failed: %s; retrying with back-off (logged again once renewed)",
			   KUBE_LEASE_NAMESPACE, l->name, why);
	}
	bool valid = l->last_renew_ms && now - l->last_renew_ms < LEASE_EXPIRES_MS;
	l->retry.policy = valid ? &lease_retry_policy : &lease_expired_policy;
	/* Retry-After is honoured, up to the cap: not past the Lease's expiry. */
	l->wake_at = now + backoff_fail(&l->retry, now, retry_after_s > 0 ? (uint64_t)retry_after_s * 1000u : 0);
}

/* Someone else wrote the Lease: it is read again right away, a few times. */
static void conflict(struct lease *l, uint64_t now, const char *why)
{
	l->step = LEASE_GET;
	forget(l);
	if (l->conflicts++ < CONFLICTS_FREE) {
		l->wake_at = now;
		return;
	}
	failed(l, now, why, 0, false);
}

static void check_holder(struct lease *l, const struct kube_lease *k)
{
	char lf[320];
	if (!k->holder || !*k->holder || strcmp(k->holder, l->name) == 0 || strcmp(k->holder, l->foreign_holder) == 0)
		return;
	snprintf(l->foreign_holder, sizeof(l->foreign_holder), "%s", k->holder);
	log_fields(LOG_WARNING, LOG_FIELDS(lease_field(l, lf, sizeof(lf))),
		   "Lease %s/%s is held by \"%s\", not by \"%s\"; taking it over as gardener-node-agent does",
		   KUBE_LEASE_NAMESPACE, l->name, k->holder, l->name);
}

static void on_done(struct http_request *req, void *userdata)
{
	struct lease *l = userdata;
	uint64_t now = now_ms();
	enum lease_step step = l->step;
	time_t wall = l->pending_wall;
	l->req = NULL;
	if (step == LEASE_IDLE)
		return; /* the Node went away meanwhile */

	char why[512];
	if (req->result != CURLE_OK || req->error != 0 || http_gate_took(req)) {
		http_describe_failure(req, why, sizeof(why));
		failed(l, now, why, req->retry_after, http_gate_took(req));
		return;
	}
	long st = req->status;
	if (st == 409 && step != LEASE_GET) {
		http_describe_failure(req, why, sizeof(why));
		conflict(l, now, why);
		return;
	}
	if (st == 404 && step != LEASE_CREATE) {
		/* Not there (yet, or deleted): create it. */
		l->step = LEASE_CREATE;
		forget(l);
		l->wake_at = now;
		return;
	}
	if (st == 403 && now - l->node_seen_ms < AUTHZ_LAG_MS) {
		log_debug("Lease %s/%s: 403 %" PRIu64 " ms after the Node appeared (the authorizer has not seen it "
			  "yet); asking again", KUBE_LEASE_NAMESPACE, l->name, now - l->node_seen_ms);
		l->wake_at = now + AUTHZ_LAG_RETRY_MS;
		return;
	}
	if (!((st == 200) || (step == LEASE_CREATE && st == 201))) {
		http_describe_failure(req, why, sizeof(why));
		failed(l, now, why, req->retry_after, false);
		return;
	}
	struct kube_lease k;
	if (lease_parse_answer(req, &k, why, sizeof(why)) < 0) {
		failed(l, now, why, 0, false);
		return;
	}
	l->conflicts = 0;
	keep(l, req, k.resource_version);
	if (step == LEASE_GET) {
		check_holder(l, &k);
		l->step = l->obj ? LEASE_RENEW : LEASE_GET;
		l->wake_at = now;
	} else {
		if (!l->obj)
			l->step = LEASE_GET;
		renewed(l, now, wall);
	}
	kube_lease_done(&k);
}

static int start(struct lease *l, uint64_t now)
{
	const char *method = "GET";
	_cleanup_free_ char *body = NULL;
	char renew[KUBE_MICROTIME_LEN];
	char create_path[KUBE_NAME_MAX + 96];
	const char *path = l->path;

	if (l->step != LEASE_GET) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		if (kube_microtime(&ts, renew) < 0)
			return -EINVAL;
		l->pending_wall = ts.tv_sec;
		bool create = l->step == LEASE_CREATE;
		if (create) {
			body = kube_lease_body(true, l->name, l->node_name, l->node_uid, NULL, renew);
			if (!body)
				return -ENOMEM;
		} else {
			/* An update, as gardener-node-agent's CreateOrUpdate(): the
			 * authorizer allows no patch on Leases. */
			const char *err = NULL;
			int r = kube_lease_update_body(l->obj, l->obj_len, l->name, l->node_name, l->node_uid, renew,
						       &body, &err);
			if (r < 0) {
				forget(l);
				l->step = LEASE_GET;
				return r;
			}
		}
		method = create ? "POST" : "PUT";
		if (create) {
			snprintf(create_path, sizeof(create_path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
				 KUBE_LEASE_NAMESPACE);
			path = create_path;
		}
	}
	int r = http_start(l->http, method, path, NULL, body, "application/json", false, NULL, on_done, l, &l->req);
	if (r < 0)
		return r;
	l->req_deadline = now + LEASE_REQUEST_MS;
	return 0;
}

uint64_t lease_tick(struct lease *l, uint64_t now)
{
	if (!l->node_name)
		return UINT64_MAX;
	if (l->req && l->step == LEASE_IDLE) {
		http_cancel(l->req);
		l->req = NULL;
	}
	if (l->step == LEASE_IDLE)
		return UINT64_MAX;
	if (l->req) {
		if (now < l->req_deadline)
			return l->req_deadline;
		http_cancel(l->req);
		l->req = NULL;
		char why[64];
		snprintf(why, sizeof(why), "no answer within %u s", LEASE_REQUEST_MS / 1000u);
		failed(l, now, why, 0, false);
	}
	uint64_t due = http_due(l->http, l->wake_at);
	if (now < due) {
		/* Waiting for the API server (its gate): the Lease expires all
		 * the same, and gardenlet says so; said once. */
		uint64_t expires = l->last_renew_ms + LEASE_EXPIRES_MS;
		if (l->last_renew_ms && !l->expired_logged && due > l->wake_at) {
			if (now >= expires)
				check_expired(l, now, "the API server does not serve (see its line)");
			else if (expires < due)
				return expires;
		}
		return due;
	}
	int r = start(l, now);
	if (r == -EAGAIN) /* the gate closed meanwhile */
		return http_due(l->http, l->wake_at);
	if (r < 0) {
		char why[128];
		snprintf(why, sizeof(why), "cannot start the request: %s", strerror(-r));
		failed(l, now, why, 0, false);
		return l->wake_at;
	}
	return l->req_deadline;
}
