/* The serial rollout duty; see serial.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "lease.h"
#include "log.h"
#include "serial.h"

/* 409s in a row answered by an immediate re-read; more back off. */
#define CONFLICTS_FREE 3u

/* Failed requests (not the gate's): 1 s doubling every 2 s, full jitter
 * (lib/base/backoff.h), up to 30 s; after a 403 up to 5 min (rights change
 * rarely). */
static const struct backoff_policy serial_policy = { .base_ms = SERIAL_RETRY_BASE_MS, .double_ms = 2000,
						     .cap_ms = SERIAL_RETRY_CAP_MS };
static const struct backoff_policy serial_forbidden_policy = { .base_ms = SERIAL_RETRY_BASE_MS, .double_ms = 2000,
							       .cap_ms = SERIAL_FORBIDDEN_CAP_MS };

void serial_init(struct serial *s, struct http_client *http, const char *identity)
{
	*s = (struct serial){ .http = http };
	backoff_init(&s->retry, &serial_policy);
	snprintf(s->identity, sizeof(s->identity), "%s", identity);
}

void serial_done(struct serial *s)
{
	if (s->req)
		http_cancel(s->req);
	s->req = NULL;
	s->step = SERIAL_IDLE;
	free(s->obj);
	s->obj = NULL;
	s->obj_len = 0;
}

/* The Lease of the answer to req (NULL: none), the base of the next update. */
static void keep(struct serial *s, const struct http_request *req, const char *rv)
{
	free(s->obj);
	s->obj = NULL;
	s->obj_len = 0;
	s->rv[0] = '\0';
	if (!req || !(s->obj = malloc(req->body_len + 1)))
		return;
	memcpy(s->obj, req->body, req->body_len);
	s->obj[req->body_len] = '\0';
	s->obj_len = req->body_len;
	snprintf(s->rv, sizeof(s->rv), "%s", rv);
}

static bool active(const struct serial *s)
{
	return s->name[0] != '\0';
}

void serial_set_secret(struct serial *s, const char *ns, const char *name, const char *uid, bool serial)
{
	if (!s->http)
		return;
	if (uid && strlen(uid) <= KUBE_UID_MAX)
		snprintf(s->secret_uid, sizeof(s->secret_uid), "%s", uid);
	if (!serial) {
		/* A Lease we hold is still given back (the tick releases it
		 * while name stays); otherwise nothing more is sent. */
		if (active(s) && !s->held) {
			log_info("Secret %s/%s: serial rollouts off", s->ns, s->name);
			if (s->req)
				http_cancel(s->req);
			s->req = NULL;
			s->name[0] = '\0';
			s->step = SERIAL_IDLE;
		}
		s->want = false;
		return;
	}
	if (active(s) && strcmp(s->ns, ns) == 0 && strcmp(s->name, name) == 0)
		return;
	if (s->held)
		return; /* a switch of Secret while holding: the old one is released first */
	if (s->req)
		http_cancel(s->req);
	s->req = NULL;
	snprintf(s->ns, sizeof(s->ns), "%s", ns);
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->path, sizeof(s->path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", ns, name);
	keep(s, NULL, NULL);
	s->step = SERIAL_IDLE;
	s->check = true; /* ours from before a restart? */
	s->wake_at = 0;
	backoff_reset(&s->retry, 0, NULL, NULL);
	s->conflicts = 0;
	log_notice("Secret %s/%s asks for serial rollouts (%s): a change that restarts units waits for Lease %s/%s",
		   ns, name, KUBE_ANN_SERIAL, ns, name);
}

void serial_set_node(struct serial *s, bool exists, const char *secret_label)
{
	const char *label = exists && secret_label ? secret_label : "";
	if (s->node_exists == exists && strncmp(s->node_label, label, sizeof(s->node_label)) == 0)
		return;
	s->node_exists = exists;
	snprintf(s->node_label, sizeof(s->node_label), "%s", label);
	s->node_told = false;
	s->wake_at = 0; /* what the authorizer allows may have changed */
}

bool serial_node_allows(const struct serial *s)
{
	return s->node_exists && (!s->node_label[0] || strcmp(s->node_label, s->name) == 0);
}

void serial_want(struct serial *s, bool want)
{
	if (want && !s->want)
		s->wake_at = 0;
	s->want = want;
}

bool serial_changed(struct serial *s)
{
	bool c = s->changed;
	s->changed = false;
	return c;
}

static void set_held(struct serial *s, bool held)
{
	if (s->held != held)
		s->changed = true;
	s->held = held;
}

/* A failed request: logged when the condition starts, retried after the
 * back-off p (Retry-After honoured up to its cap). */
static void failed_policy(struct serial *s, uint64_t now, const char *why, long retry_after_s,
			  const struct backoff_policy *p)
{
	if (!backoff_failing(&s->retry))
		log_warning("serial rollout Lease %s/%s: %s; retrying with back-off (logged again once it works)", s->ns,
			    s->name, why);
	s->retry.policy = p;
	s->wake_at = now + backoff_fail(&s->retry, now, retry_after_s > 0 ? (uint64_t)retry_after_s * 1000u : 0);
	s->step = SERIAL_GET; /* what we knew may be stale */
}

static void failed(struct serial *s, uint64_t now, const char *why, long retry_after_s)
{
	failed_policy(s, now, why, retry_after_s, &serial_policy);
}

/* What the API server's gate took (nobody serving, a starting server):
 * tried again as soon as it lets a request through; it logs the outage. */
static void gate_wait(struct serial *s, uint64_t now)
{
	s->wake_at = now;
	s->step = SERIAL_GET; /* what we knew may be stale */
}

static void succeeded(struct serial *s, uint64_t now)
{
	uint64_t attempts;
	if (backoff_reset(&s->retry, now, NULL, &attempts))
		log_notice("serial rollout Lease %s/%s: requests work again after %llu failure(s)", s->ns, s->name,
			   (unsigned long long)attempts);
	s->conflicts = 0;
}

/* A 409: someone else wrote the Lease; read it again. */
static void conflict(struct serial *s, uint64_t now, const char *why)
{
	if (s->conflicts < CONFLICTS_FREE) {
		s->conflicts++;
		s->step = SERIAL_GET;
		s->wake_at = now;
		return;
	}
	failed(s, now, why, 0);
}

static void judge(struct serial *s, uint64_t now, const struct kube_lease *k)
{
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	uint64_t left = 0;
	int v = kube_serial_judge(k, s->identity, &wall, &left);
	bool want = s->want;
	s->check = false;
	if (v < 0) {
		char why[256];
		snprintf(why, sizeof(why), "spec.renewTime \"%.40s\" of holder \"%.64s\" is not a time", k->renew_time,
			 k->holder);
		failed(s, now, why, 0);
		return;
	}
	if (v == KUBE_SERIAL_MINE) {
		/* Ours (held, or from before a restart): kept or given back. */
		s->step = want ? SERIAL_RENEW : SERIAL_RELEASE;
		s->renewed_at = 0;
		s->wake_at = now;
		s->holder[0] = '\0';
		return;
	}
	if (s->held) {
		log_warning("serial rollout Lease %s/%s is now held by \"%s\": lost it", s->ns, s->name,
			    k->holder ? k->holder : "");
		set_held(s, false);
	}
	if (!want) {
		s->step = SERIAL_IDLE;
		return;
	}
	if (v == KUBE_SERIAL_TAKEN) {
		snprintf(s->holder, sizeof(s->holder), "%s", k->holder);
		s->holder_until = wall.tv_sec + (time_t)((left + 999) / 1000);
		if (strcmp(s->logged_holder, k->holder) != 0) {
			snprintf(s->logged_holder, sizeof(s->logged_holder), "%s", k->holder);
			char until[32] = "?";
			struct tm tm;
			if (gmtime_r(&s->holder_until, &tm))
				strftime(until, sizeof(until), "%H:%M:%S UTC", &tm);
			log_notice("serial rollout: Lease %s/%s is held by \"%s\" (valid until %s unless released); "
				   "waiting for it",
				   s->ns, s->name, k->holder, until);
		}
		/* Polled until released, and once right when it expires. */
		uint64_t poll = SERIAL_POLL_MS / 2 + random_below(SERIAL_POLL_MS);
		s->step = SERIAL_GET;
		s->wake_at = now + (left + 1 < poll ? left + 1 : poll);
		return;
	}
	if (v == KUBE_SERIAL_EXPIRED)
		log_notice("serial rollout: Lease %s/%s of \"%s\" was not renewed in time (renewTime %s, %lld s): "
			   "taking it over",
			   s->ns, s->name, k->holder, k->renew_time ? k->renew_time : "none",
			   (long long)(k->has_duration ? k->duration_s : 0));
	s->holder[0] = '\0';
	s->step = SERIAL_TAKE;
	s->wake_at = now;
}

static void on_done(struct http_request *req, void *userdata)
{
	struct serial *s = userdata;
	uint64_t now = now_ms();
	enum serial_step step = s->step;
	s->req = NULL;
	char why[512];
	if (http_gate_took(req)) {
		gate_wait(s, now);
		return;
	}
	if (req->result != CURLE_OK || req->error != 0) {
		http_describe_failure(req, why, sizeof(why));
		failed(s, now, why, req->retry_after);
		return;
	}
	long st = req->status;
	if (st == 403) {
		/* Not allowed: say what would be, and do not insist (a change
		 * of the Node, its label, retries at once: serial_set_node()). */
		char desc[256], msg[1024];
		http_describe_failure(req, desc, sizeof(desc));
		snprintf(msg, sizeof(msg),
			 "%s: not allowed. Gardener's node-agent authorizer allows a node-agent the Leases "
			 "gardener-node-agent-<node> and the one named by its Node's label %s, in kube-system, "
			 "once the Node exists; with RBAC, grant get, create and update on leases in %s",
			 desc, KUBE_LABEL_SECRET_NAME, s->ns);
		if (step == SERIAL_RELEASE && s->held) {
			/* It cannot be given back: it expires on its own. */
			log_warning("serial rollout Lease %s/%s cannot be given back (%s); the others take it over "
				    "once it expires (%u s after its renewTime)",
				    s->ns, s->name, desc, KUBE_SERIAL_LEASE_DURATION_S);
			set_held(s, false);
			s->step = SERIAL_IDLE;
			return;
		}
		failed_policy(s, now, msg, req->retry_after, &serial_forbidden_policy);
		return;
	}
	if (st == 404 && step == SERIAL_GET) {
		succeeded(s, now);
		s->check = false;
		keep(s, NULL, NULL);
		if (s->held) {
			log_warning("serial rollout Lease %s/%s was deleted: lost it", s->ns, s->name);
			set_held(s, false);
		}
		s->step = s->want ? SERIAL_CREATE : SERIAL_IDLE;
		s->wake_at = now;
		return;
	}
	if (st == 409 || (st == 404 && step != SERIAL_CREATE)) {
		http_describe_failure(req, why, sizeof(why));
		conflict(s, now, why);
		return;
	}
	if (!(st == 200 || (step == SERIAL_CREATE && st == 201))) {
		http_describe_failure(req, why, sizeof(why));
		failed(s, now, why, req->retry_after);
		return;
	}
	struct kube_lease k;
	if (lease_parse_answer(req, &k, why, sizeof(why)) < 0) {
		failed(s, now, why, 0);
		return;
	}
	succeeded(s, now);
	keep(s, req, k.resource_version);
	switch (step) {
	case SERIAL_GET:
		judge(s, now, &k);
		break;
	case SERIAL_RELEASE:
		log_info("serial rollout: released Lease %s/%s", s->ns, s->name);
		set_held(s, false);
		s->step = SERIAL_IDLE;
		break;
	default: /* CREATE, TAKE, RENEW */
		if (!s->held)
			log_notice("serial rollout: took Lease %s/%s (holder \"%s\", %u s)", s->ns, s->name, s->identity,
				   KUBE_SERIAL_LEASE_DURATION_S);
		set_held(s, true);
		s->renewed_at = now;
		s->step = SERIAL_IDLE;
		s->logged_holder[0] = '\0';
		break;
	}
	kube_lease_done(&k);
}

/* The request due now, given what is wanted and held. */
static enum serial_step next_step(const struct serial *s)
{
	bool want = s->want;
	switch (s->step) {
	case SERIAL_CREATE:
	case SERIAL_TAKE:
		if (want)
			return s->step;
		break;
	case SERIAL_GET:
		if (want || s->check || s->held)
			return SERIAL_GET;
		break;
	case SERIAL_RELEASE:
		if (!want)
			return SERIAL_RELEASE;
		break;
	default:
		break;
	}
	if (want && !s->held)
		return SERIAL_GET;
	if (want)
		return SERIAL_RENEW;
	if (s->held)
		return SERIAL_RELEASE;
	return s->check ? SERIAL_GET : SERIAL_IDLE;
}

static int start(struct serial *s, uint64_t now)
{
	_cleanup_free_ char *body = NULL;
	char renew[KUBE_MICROTIME_LEN];
	char create_path[KUBE_NAME_MAX + 96];
	const char *path = s->path, *method = "GET", *ctype = NULL;
	if (s->step != SERIAL_GET) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		if (kube_microtime(&ts, renew) < 0)
			return -EINVAL;
		bool create = s->step == SERIAL_CREATE;
		bool take = create || s->step == SERIAL_TAKE;
		const char *holder = s->step == SERIAL_RELEASE ? NULL : s->identity;
		if (create) {
			body = kube_serial_lease_body(true, s->ns, s->name, s->secret_uid, NULL, holder, renew, renew);
			if (!body)
				return -ENOMEM;
		} else {
			/* An update (PUT) of the Lease read, as client-go's leader
			 * elector does; the authorizer allows no patch on Leases. */
			int r = kube_serial_lease_update_body(s->obj, s->obj_len, holder, take ? renew : NULL, renew,
							      &body, NULL);
			if (r < 0)
				return r;
		}
		method = create ? "POST" : "PUT";
		ctype = "application/json";
		if (create) {
			snprintf(create_path, sizeof(create_path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
				 s->ns);
			path = create_path;
		}
	}
	int r = http_start(s->http, method, path, NULL, body, ctype ? ctype : "application/json", false, NULL, on_done,
			   s, &s->req);
	if (r < 0)
		return r;
	s->req_deadline = now + SERIAL_REQUEST_MS;
	return 0;
}

uint64_t serial_tick(struct serial *s, uint64_t now)
{
	if (!s->http || !active(s))
		return UINT64_MAX;
	if (s->req) {
		if (now < s->req_deadline)
			return s->req_deadline;
		http_cancel(s->req);
		s->req = NULL;
		char why[64];
		snprintf(why, sizeof(why), "no answer within %u s", SERIAL_REQUEST_MS / 1000u);
		failed(s, now, why, 0);
	}
	/* A Lease held when the label moved to another Secret is still
	 * given back (with RBAC that works; a 403 drops it: on_done()). */
	if (!serial_node_allows(s) && !(s->held && s->node_exists)) {
		if (s->want && !s->node_told) {
			s->node_told = true;
			if (!s->node_exists)
				log_notice("serial rollout: a change waits for Lease %s/%s, which is asked for only once "
					   "Node %s exists (Gardener's node-agent authorizer refuses a Lease before)",
					   s->ns, s->name, s->identity);
			else
				log_warning("serial rollout: a change waits for Lease %s/%s, but Node %s's label %s "
					    "names \"%s\" (Gardener's node-agent authorizer allows only that Lease): "
					    "waiting for the label or the Secret to change",
					    s->ns, s->name, s->identity, KUBE_LABEL_SECRET_NAME, s->node_label);
		}
		return UINT64_MAX;
	}
	enum serial_step step = next_step(s);
	if (step == SERIAL_IDLE) {
		s->step = SERIAL_IDLE;
		return UINT64_MAX;
	}
	if (step == SERIAL_RENEW && s->step != SERIAL_RENEW && s->renewed_at &&
	    now < s->renewed_at + SERIAL_RENEW_MS)
		return s->renewed_at + SERIAL_RENEW_MS;
	if (step != s->step)
		s->wake_at = s->wake_at > now ? s->wake_at : now;
	s->step = step;
	uint64_t due = http_due(s->http, s->wake_at);
	if (now < due)
		return due;
	int r = start(s, now);
	if (r == -EAGAIN) /* the gate closed meanwhile */
		return http_due(s->http, s->wake_at);
	if (r < 0) {
		char why[128];
		snprintf(why, sizeof(why), "cannot start the request: %s", strerror(-r));
		failed(s, now, why, 0);
		return s->wake_at;
	}
	return s->req_deadline;
}
