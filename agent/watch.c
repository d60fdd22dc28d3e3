/* GET + watch of one named object; see watch.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "cleanup.h"
#include "log.h"
#include "watch.h"

/* The watch's own failures, which the API server's gate (apigate.h) does
 * not take (it takes nobody serving and a starting server's answers, and
 * paces those for every duty at once): 5xx and 429 once the server serves,
 * an invalid object or event, a stream cut or silent. 0.5 s doubling every
 * second of the condition up to 30 s (as client-go's reflector, 0.8 s
 * doubling per attempt: the cap within seconds), full jitter (lib/base/backoff.h), at
 * least Retry-After. */
static const struct backoff_policy watch_fail_policy = { .base_ms = 500, .double_ms = 1000, .cap_ms = 30000 };
/* A re-read whose own watch expires again (410 after 410, no event in
 * between): the same pace, by its own condition. */
static const struct backoff_policy watch_expired_policy = { .base_ms = 500, .double_ms = 1000, .cap_ms = 30000 };
/* A stream that ends this quickly without an event counts as a failure, so a
 * server answering "200, empty" cannot make us spin. */
#define STREAM_MIN_MS 1000u
/* A stream answered 200 that has lasted this long ends the watch's own
 * condition; one cut sooner keeps it (a stream cut every second must not
 * reconnect at the back-off's first pace forever). */
#define STREAM_HEALTHY_MS 10000u
/* How long one watch stream is asked to last (timeoutSeconds, plus 60 s
 * over our own end of it): client-go's reflectors use 5-10 min; ended
 * cleanly, the watch resumes from the last version seen (one request, no
 * GET). Shorter when resyncMs is. */
#define STREAM_S 600u
/* The retry of a watch that is refused (403, the GET works) grows up to
 * this, not up to resyncMs: changes then arrive by the GET before each try.
 * 0.5 s doubling every minute. */
#define DENIED_CAP_MS 300000u
#define DENIED_DOUBLE_MS 60000u

static uint32_t denied_cap_ms(const struct watch *w)
{
	uint64_t r = w->http->cfg->resync_interval_ms;
	return r < DENIED_CAP_MS ? (uint32_t)r : DENIED_CAP_MS;
}

static const char *field(const struct watch *w)
{
	return w->kind == KUBE_KIND_SECRET ? "SECRET" : "NODE";
}

/* "SECRET=ns/name" or "NODE=name" into buf. */
static const char *id_field(const struct watch *w, char *buf, size_t len)
{
	if (w->ns)
		snprintf(buf, len, "%s=%s/%s", field(w), w->ns, w->name);
	else
		snprintf(buf, len, "%s=%s", field(w), w->name);
	return buf;
}

/* How a failure of the watch's own is logged when it starts a condition:
 * as a warning, at info (routine once: a stream cut by a load balancer's
 * idle timeout; a warning when the next try fails too), or not at all (the
 * caller logged it). Later failures of the condition: debug. */
enum own_log {
	OWN_WARN,
	OWN_ROUTINE,
	OWN_QUIET,
};

/* A failure of the watch's own at now: the next try after its back-off
 * (watch_fail_policy), logged as how says. */
static void own_failure(struct watch *w, uint64_t now, long retry_after_s, enum own_log how,
			const char *const *fields, const char *msg)
{
	bool first = !backoff_failing(&w->fail);
	w->failing = true;
	w->wake_at = now + backoff_fail(&w->fail, now, retry_after_s > 0 ? (uint64_t)retry_after_s * 1000u : 0);
	int level = LOG_DEBUG;
	if (!w->fail_logged && how == OWN_WARN)
		level = LOG_WARNING;
	else if (!w->fail_logged && how == OWN_ROUTINE)
		level = first ? LOG_INFO : LOG_WARNING;
	if (level == LOG_WARNING)
		w->fail_logged = true;
	log_full(level, 0, __FILE__, __LINE__, fields, "%s; %s", msg,
		 level == LOG_WARNING ? "retrying with back-off (logged again once it works)" : "reconnecting");
}

/* The watch works (an object read, a valid event, a stream ended in
 * order): its own condition ends, logged if its start was. */
static void own_success(struct watch *w, uint64_t now)
{
	uint64_t lasted, attempts;
	if (backoff_reset(&w->fail, now, &lasted, &attempts) && w->fail_logged) {
		char idf[320], took[32];
		backoff_duration_text(lasted, took, sizeof(took));
		log_fields(LOG_NOTICE, LOG_FIELDS(id_field(w, idf, sizeof(idf))),
			   "%s %s is read and watched again after %s (%llu failed attempt(s))", w->what, w->name, took,
			   (unsigned long long)attempts);
	}
	w->fail_logged = false;
	w->failing = false;
}

/* The gate took the failure (http_gate_took()): try again as soon as it
 * lets any request through, in state next. */
static void gate_wait(struct watch *w, uint64_t now, enum watch_state next)
{
	w->state = next;
	w->wake_at = now;
	w->failing = true;
}

static bool rv_is_safe(const char *rv)
{
	if (!rv || !*rv || strlen(rv) > KUBE_RV_MAX)
		return false;
	for (const char *p = rv; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '-' ||
		      *p == '.' || *p == '_'))
			return false;
	return true;
}

static void set_rv(struct watch *w, const char *rv)
{
	if (rv_is_safe(rv))
		snprintf(w->rv, sizeof(w->rv), "%s", rv);
}

static void object_path(const struct watch *w, bool collection, char *buf, size_t len)
{
	if (w->kind == KUBE_KIND_SECRET)
		snprintf(buf, len, "/api/v1/namespaces/%s/secrets%s%s", w->ns, collection ? "" : "/",
			 collection ? "" : w->name);
	else
		snprintf(buf, len, "/api/v1/nodes%s%s", collection ? "" : "/", collection ? "" : w->name);
}

static void report_error(struct watch *w, const char *why)
{
	if (w->ops->on_error)
		w->ops->on_error(w, why, w->userdata);
}

/* A watch that failed: "watch <path> failed: <why>" into msg, reported. */
static void report_watch_failure(struct watch *w, const struct http_request *req, char *msg, size_t len)
{
	char why[512];
	if (req->result == CURLE_OK && req->status == 200 && kube_splitter_pending(&req->splitter) > 0)
		snprintf(why, sizeof(why), "stream ended inside an event");
	else
		http_describe_failure(req, why, sizeof(why));
	snprintf(msg, len, "watch %s failed: %s", req->path, why);
	report_error(w, msg);
}

/* "secrets kube-system/name" or "nodes/name": the RBAC resource and name. */
static const char *rbac_object(const struct watch *w, char *buf, size_t len)
{
	if (w->ns)
		snprintf(buf, len, "secrets %s/%s", w->ns, w->name);
	else
		snprintf(buf, len, "nodes/%s", w->name);
	return buf;
}

/* RBAC is checked per verb: a 403 names the verb the credential lacks and
 * what that costs, once when it starts (later ones at debug level), and
 * once more when the verb is allowed again. */
static void set_denied(struct watch *w, unsigned verb, bool denied)
{
	char idf[320], obj[320];
	const char *name = verb == WATCH_DENIED_GET ? "get" : verb == WATCH_DENIED_LIST ? "list" : "watch";
	if (denied == ((w->denied & verb) != 0))
		return;
	w->denied = denied ? w->denied | verb : w->denied & ~verb;
	if (verb == WATCH_DENIED_WATCH && !denied)
		backoff_reset(&w->denied_backoff, 0, NULL, NULL);
	id_field(w, idf, sizeof(idf));
	rbac_object(w, obj, sizeof(obj));
	if (!denied) {
		log_fields(LOG_NOTICE, LOG_FIELDS(idf), "%s permission on %s is there again", name, obj);
		return;
	}
	if (verb == WATCH_DENIED_WATCH)
		log_fields(LOG_ERR, LOG_FIELDS(idf, "HTTP_STATUS=403"),
			   "no watch permission on %s: updates arrive only by a GET before each new try of the watch "
			   "(backing off to every %u s)", obj, (unsigned)(denied_cap_ms(w) / 1000u));
	else
		log_fields(LOG_ERR, LOG_FIELDS(idf, "HTTP_STATUS=403"),
			   "no get permission on %s: the %s cannot be read at all (retrying with back-off)", obj,
			   w->what);
}

/* The object does not exist: a GET answered 404, or the list by name is
 * empty. */
static void got_missing(struct watch *w, uint64_t now, const struct http_request *req, bool listing,
			const char *idf, const char *status, const char *url)
{
	w->synced = true;
	own_success(w, now);
	log_fields(LOG_NOTICE, LOG_FIELDS(idf, status, url), "%s %s: %s does not exist (yet); watching for it",
		   listing ? "list" : "GET", req->path, w->what);
	w->ops->on_missing(w, w->userdata);
	/* A watch without a resourceVersion starts with ADDED once it exists. */
	w->rv[0] = '\0';
	w->state = w->oneshot ? WATCH_STOPPED : WATCH_NEED_WATCH;
	w->wake_at = now;
}

static void on_get_done(struct http_request *req, void *userdata)
{
	struct watch *w = userdata;
	uint64_t now = now_ms();
	char idf[320], status[32], why[512], url[320];
	bool listing = w->listing;
	w->req = NULL;
	w->listing = false;
	id_field(w, idf, sizeof(idf));
	snprintf(status, sizeof(status), "HTTP_STATUS=%ld", req->status);
	snprintf(url, sizeof(url), "URL=%s", req->path);

	if (req->result == CURLE_OK && req->error == 0 && req->status == 200) {
		const char *err = NULL;
		struct kube_secret s = {};
		struct kube_node n = {};
		int r = w->kind == KUBE_KIND_SECRET ? kube_secret_parse(req->body, req->body_len, w->max_osc, &s, &err)
			: listing		    ? kube_node_list_named(req->body, req->body_len, w->name, &n, &err)
						    : kube_node_parse(req->body, req->body_len, &n, &err);
		if (w->ops->on_contact)
			w->ops->on_contact(w, w->userdata);
		if (listing && r == -ENOENT) {
			set_denied(w, WATCH_DENIED_GET, false);
			got_missing(w, now, req, listing, idf, status, url);
			return;
		}
		if (r < 0) {
			snprintf(why, sizeof(why), "%s %s: invalid %s: %s: %s", listing ? "list" : "GET", req->path,
				 w->what, err ? err : "?", strerror(-r));
			report_error(w, why);
			if (w->oneshot) {
				log_fields(LOG_WARNING, LOG_FIELDS(idf, status, url), "%s", why);
				w->state = WATCH_FAILED;
				return;
			}
			w->state = WATCH_NEED_GET;
			own_failure(w, now, 0, OWN_WARN, LOG_FIELDS(idf, status, url), why);
			return;
		}
		/* The watch after the GET does not start from the object's own
		 * resourceVersion: an object unchanged since the API server
		 * restarted carries one older than the new watch cache, and that
		 * watch would be answered 410 on every fresh start. It resumes
		 * from the last version a stream showed (a bookmark), or starts
		 * without one: its first event is then a synthetic ADDED with the
		 * object as it is now. (A LIST by name would return the cache's
		 * version, but RBAC checks it as the verb list, which the agent's
		 * Role does not grant.) */
		const char *rv = w->kind == KUBE_KIND_SECRET ? s.resource_version : n.resource_version;
		/* Only the verb watch is missing (the GET works): changes arrive
		 * by this GET, and the watch is tried again after the refused
		 * watch's back-off (0.5 s doubling every minute up to 5 min or
		 * the resync interval, full jitter: a Role without watch costs
		 * a GET and a watch every few minutes). After a 403 on the GET as
		 * well, the permissions changed: the watch is tried at once. (A
		 * restarting API server's 403s are the gate's, not a denial.) */
		bool watch_later = (w->denied & ~WATCH_DENIED_LIST) == WATCH_DENIED_WATCH;
		w->synced = true;
		own_success(w, now);
		set_denied(w, WATCH_DENIED_GET, false);
		log_fields(LOG_DEBUG, LOG_FIELDS(idf, status, url), "GET %s: object at resourceVersion %s, watch from %s",
			   req->path, rv ? rv : "?", w->rv[0] ? w->rv : "now");
		w->ops->on_object(w, KUBE_EVENT_ADDED, w->kind == KUBE_KIND_SECRET ? &s : NULL,
				  w->kind == KUBE_KIND_NODE ? &n : NULL, w->userdata);
		kube_secret_done(&s);
		kube_node_done(&n);
		w->state = w->oneshot ? WATCH_STOPPED : WATCH_NEED_WATCH;
		w->wake_at = watch_later && w->watch_not_before > now ? w->watch_not_before : now;
		return;
	}

	http_describe_failure(req, why, sizeof(why));
	/* Any HTTP answer, even an error, is contact with the API server. */
	if (req->result == CURLE_OK && req->status > 0 && w->ops->on_contact)
		w->ops->on_contact(w, w->userdata);
	if (req->result == CURLE_OK && req->status == 404) {
		got_missing(w, now, req, listing, idf, status, url);
		return;
	}
	if (http_gate_took(req)) {
		/* Nobody serving, or a starting server: the gate paces the
		 * next try for every duty and logs the outage once. */
		char msg[700];
		snprintf(msg, sizeof(msg), "%s %s failed: %s", listing ? "list" : "GET", req->path, why);
		report_error(w, msg);
		if (w->oneshot) {
			log_fields(LOG_WARNING, LOG_FIELDS(idf, status, url), "%s", msg);
			w->state = WATCH_FAILED;
			return;
		}
		log_fields(LOG_DEBUG, LOG_FIELDS(idf, status, url), "%s; waiting for the API server", msg);
		gate_wait(w, now, WATCH_NEED_GET);
		return;
	}
	if (listing && req->result == CURLE_OK && req->status == 403) {
		/* RBAC without list on the own Node (a Role with get and
		 * watch by resourceNames only): read it with a GET instead,
		 * at once. Gardener's authorizer, which needs the list while
		 * the Node does not exist, grants it. */
		char idf2[320];
		w->denied |= WATCH_DENIED_LIST;
		log_fields(w->list_denied_logged ? LOG_DEBUG : LOG_NOTICE,
			   LOG_FIELDS(id_field(w, idf2, sizeof(idf2)), "HTTP_STATUS=403"),
			   "no list permission on nodes (fieldSelector metadata.name=%s): reading the Node with GET "
			   "instead (Gardener's node-agent authorizer refuses a GET of a Node that does not exist yet)",
			   w->name);
		w->list_denied_logged = true;
		if (w->ops->on_contact)
			w->ops->on_contact(w, w->userdata);
		w->state = WATCH_NEED_GET;
		w->wake_at = now;
		return;
	}
	char msg[700];
	bool forbidden = req->result == CURLE_OK && req->status == 403;
	snprintf(msg, sizeof(msg), "%s %s failed: %s", listing ? "list" : "GET", req->path, why);
	if (forbidden && !listing) {
		set_denied(w, WATCH_DENIED_GET, true);
		/* The GET is refused as well: the credential reads no
		 * Node (a bootstrap token before the certificate), which
		 * says nothing about list. The next try lists again. */
		w->denied &= ~WATCH_DENIED_LIST;
	}
	report_error(w, msg);
	if (w->oneshot) {
		log_fields(forbidden ? LOG_DEBUG : LOG_WARNING, LOG_FIELDS(idf, status, url), "%s", msg);
		w->state = WATCH_FAILED;
		return;
	}
	w->state = WATCH_NEED_GET;
	/* A refused GET is logged once by set_denied(). */
	own_failure(w, now, req->retry_after, forbidden ? OWN_QUIET : OWN_WARN, LOG_FIELDS(idf, status, url), msg);
}

static int on_line(const char *line, size_t len, void *userdata)
{
	struct watch *w = userdata;
	struct kube_event e;
	const char *err = NULL;
	char idf[320];

	int r = kube_event_parse(line, len, w->kind, w->max_osc, &e, &err);
	if (r < 0) {
		/* Logged by on_watch_done(), once per condition. */
		snprintf(w->stream_why, sizeof(w->stream_why), "watch of %s %s: invalid event (%s: %s)", w->what,
			 w->name, err ? err : "?", strerror(-r));
		w->stream_error = -EBADMSG;
		return -EBADMSG;
	}
	/* A stream that delivers valid events is healthy again: the next
	 * failure starts the back-off from the bottom, the next 410 re-reads
	 * at once. */
	if (e.type != KUBE_EVENT_ERROR) {
		own_success(w, now_ms());
		backoff_reset(&w->expired, 0, NULL, NULL);
		set_denied(w, WATCH_DENIED_WATCH, false);
	}
	switch (e.type) {
	case KUBE_EVENT_ERROR:
		if (e.status.code == 410) {
			log_fields(LOG_INFO, LOG_FIELDS(id_field(w, idf, sizeof(idf)), "HTTP_STATUS=410"),
				   "watch of %s %s: resourceVersion %s expired (%s); re-reading", w->what, w->name,
				   w->rv, e.status.message ? e.status.message : "");
			w->stream_error = -ESTALE;
		} else {
			snprintf(w->stream_why, sizeof(w->stream_why), "watch of %s %s: ERROR event %d %s: %s", w->what,
				 w->name, e.status.code, e.status.reason ? e.status.reason : "",
				 e.status.message ? e.status.message : "");
			w->stream_error = -EPROTO;
		}
		kube_event_done(&e);
		return w->stream_error;
	case KUBE_EVENT_BOOKMARK:
		/* A bookmark is the API server's sign of life on a quiet
		 * stream: contact (readyz). */
		if (w->ops->on_contact)
			w->ops->on_contact(w, w->userdata);
		set_rv(w, e.resource_version);
		log_debug("watch of %s %s: bookmark at resourceVersion %s", w->what, w->name, w->rv);
		break;
	default: {
		/* The field selector should guarantee the name; check anyway. */
		const char *name = w->kind == KUBE_KIND_SECRET ? e.secret.name : e.node.name;
		set_rv(w, e.resource_version);
		w->got_event = true;
		if (name && strcmp(name, w->name) != 0) {
			log_warning("watch of %s %s: ignoring event for %s", w->what, w->name, name);
			break;
		}
		w->ops->on_object(w, e.type, w->kind == KUBE_KIND_SECRET ? &e.secret : NULL,
				  w->kind == KUBE_KIND_NODE ? &e.node : NULL, w->userdata);
	}
	}
	kube_event_done(&e);
	return 0;
}

static void on_watch_done(struct http_request *req, void *userdata)
{
	struct watch *w = userdata;
	uint64_t now = now_ms();
	char idf[320], status[32], why[512], url[320];
	w->req = NULL;
	id_field(w, idf, sizeof(idf));
	snprintf(status, sizeof(status), "HTTP_STATUS=%ld", req->status);
	snprintf(url, sizeof(url), "URL=%s", req->path);

	if (w->stream_error == -ESTALE || (req->result == CURLE_OK && req->status == 410)) {
		/* 410 Gone (an ERROR event, or the status of the answer): the
		 * version is older than the watch cache, typically after an
		 * outage and a restart of the API server. Re-read at once, and
		 * watch without a version (a synthetic ADDED first). The
		 * connection failures of the outage do not delay this: only a
		 * re-read whose own watch expires again (no event in between)
		 * backs off, by its own count. */
		if (w->stream_error != -ESTALE)
			log_fields(LOG_INFO, LOG_FIELDS(idf, status, url), "watch of %s %s: HTTP 410; re-reading", w->what,
				   w->name);
		if (w->ops->on_contact)
			w->ops->on_contact(w, w->userdata);
		w->rv[0] = '\0';
		w->state = WATCH_NEED_GET;
		bool again = backoff_failing(&w->expired);
		uint64_t wait = backoff_fail(&w->expired, now, 0);
		w->wake_at = again ? now + wait : now;
		return;
	}
	if (http_gate_took(req)) {
		/* Nobody serving, or a starting server (its 403 too): the gate
		 * paces the next try for every duty and logs the outage once.
		 * Read again first: the stream may have missed changes. */
		char msg[700];
		report_watch_failure(w, req, msg, sizeof(msg));
		log_fields(LOG_DEBUG, LOG_FIELDS(idf, status, url), "%s; waiting for the API server", msg);
		gate_wait(w, now, req->status == 403 || !w->rv[0] ? WATCH_NEED_GET : WATCH_NEED_WATCH);
		return;
	}
	if (req->result == CURLE_OK && req->status == 403) {
		/* RBAC without the verb watch: a GET tells whether the object
		 * can be read at all; when it can, nothing but that GET before
		 * each new try of the watch brings changes (on_get_done), the
		 * tries backing off (DENIED_CAP_MS). */
		http_describe_failure(req, why, sizeof(why));
		set_denied(w, WATCH_DENIED_WATCH, true);
		w->watch_not_before = now + backoff_fail(&w->denied_backoff, now, 0);
		log_fields(LOG_DEBUG, LOG_FIELDS(idf, status, url), "watch %s failed: %s", req->path, why);
		if (w->ops->on_contact)
			w->ops->on_contact(w, w->userdata);
		w->state = WATCH_NEED_GET;
		w->wake_at = now;
		return;
	}
	if (w->stream_error == 0 && req->result == CURLE_OK && req->status == 200 &&
	    kube_splitter_pending(&req->splitter) == 0) {
		if (w->ops->on_contact)
			w->ops->on_contact(w, w->userdata);
		set_denied(w, WATCH_DENIED_WATCH, false);
		if (!w->got_event && now - w->stream_started_ms < STREAM_MIN_MS) {
			char msg[400];
			snprintf(msg, sizeof(msg), "watch of %s %s ended at once", w->what, w->name);
			w->state = WATCH_NEED_WATCH;
			own_failure(w, now, 0, OWN_WARN, LOG_FIELDS(idf, status, url), msg);
			return;
		}
		log_fields(LOG_DEBUG, LOG_FIELDS(idf, status, url), "watch of %s %s ended; resuming from %s", w->what,
			   w->name, w->rv[0] ? w->rv : "now");
		own_success(w, now);
		w->state = WATCH_NEED_WATCH;
		w->wake_at = now;
		return;
	}
	if (w->stream_error == -EBADMSG || w->stream_error == -EPROTO) {
		snprintf(why, sizeof(why), "watch %s: bad event stream", req->path);
		report_error(w, why);
		/* The stream cannot be trusted: start over from a GET. */
		w->rv[0] = '\0';
		w->state = WATCH_NEED_GET;
		own_failure(w, now, 0, OWN_WARN, LOG_FIELDS(idf, status, url), w->stream_why[0] ? w->stream_why : why);
		return;
	}
	/* Cut after the server answered (a load balancer's idle timeout, a
	 * server going away mid-stream): routine once; or the server's own
	 * error (5xx, 429 once it serves). */
	bool cut = req->result != CURLE_OK || req->status == 200;
	char msg[700];
	report_watch_failure(w, req, msg, sizeof(msg));
	w->state = !w->rv[0] ? WATCH_NEED_GET : WATCH_NEED_WATCH;
	own_failure(w, now, req->retry_after, cut ? OWN_ROUTINE : OWN_WARN, LOG_FIELDS(idf, status, url), msg);
}

int watch_init(struct watch *w, struct http_client *http, enum kube_kind kind, const char *ns,
	       const char *name, bool oneshot, const struct watch_ops *ops, void *userdata)
{
	*w = (struct watch){
		.http = http,
		.kind = kind,
		.what = kind == KUBE_KIND_SECRET ? "Secret" : "Node",
		.oneshot = oneshot,
		.ops = ops,
		.userdata = userdata,
		.state = WATCH_NEED_GET,
		.max_osc = http->cfg->response_max,
		.denied_policy = { .base_ms = 500, .double_ms = DENIED_DOUBLE_MS },
	};
	w->denied_policy.cap_ms = denied_cap_ms(w);
	backoff_init(&w->fail, &watch_fail_policy);
	backoff_init(&w->expired, &watch_expired_policy);
	backoff_init(&w->denied_backoff, &w->denied_policy);
	w->name = strdup(name);
	w->ns = ns ? strdup(ns) : NULL;
	if (!w->name || (ns && !w->ns)) {
		watch_done(w);
		return -ENOMEM;
	}
	return 0;
}

void watch_done(struct watch *w)
{
	if (w->req)
		http_cancel(w->req);
	free(w->name);
	free(w->ns);
	*w = (struct watch){};
}

int watch_retarget(struct watch *w, const char *name)
{
	char *n = strdup(name);
	if (!n)
		return -ENOMEM;
	if (w->req)
		http_cancel(w->req);
	w->req = NULL;
	free(w->name);
	w->name = n;
	w->rv[0] = '\0';
	w->synced = false;
	backoff_reset(&w->fail, 0, NULL, NULL);
	w->fail_logged = false;
	backoff_reset(&w->expired, 0, NULL, NULL);
	w->denied = 0; /* another object: its permissions are learnt anew */
	backoff_reset(&w->denied_backoff, 0, NULL, NULL);
	w->watch_not_before = 0;
	w->state = WATCH_NEED_GET;
	w->wake_at = 0;
	return 0;
}

void watch_resync(struct watch *w)
{
	/* New credentials or SIGHUP: the permissions are learnt anew. */
	w->denied &= ~WATCH_DENIED_LIST;
	if (w->state == WATCH_STOPPED || w->state == WATCH_FAILED)
		return;
	if (w->state == WATCH_GETTING)
		return;
	if (w->req)
		http_cancel(w->req);
	w->req = NULL;
	w->state = WATCH_NEED_GET;
	w->wake_at = 0;
}

/* The read before a watch. The Node is listed by name: Gardener's node-agent
 * authorizer (gardener/gardener
 * pkg/resourcemanager/webhook/nodeagentauthorizer/authorizer.go,
 * authorizeNode) allows a node-agent list and watch of Nodes always, but a
 * get only of its own Node once it exists; before the kubelet registers it
 * a GET is refused (403, "no node for <machine> found") where the list
 * answers with no item. As client-go's reflectors (list, then watch). */
static void start_get(struct watch *w, uint64_t now)
{
	char path[512], query[300];
	bool list = w->kind == KUBE_KIND_NODE && !(w->denied & WATCH_DENIED_LIST);
	object_path(w, list, path, sizeof(path));
	snprintf(query, sizeof(query), "fieldSelector=metadata.name%%3D%s", w->name);
	int r = http_start(w->http, "GET", path, list ? query : NULL, NULL, NULL, false, NULL, on_get_done, w,
			   &w->req);
	if (r == -EAGAIN) { /* the gate: see http_due() */
		w->state = WATCH_NEED_GET;
		return;
	}
	if (r < 0) {
		char msg[600], idf[320];
		snprintf(msg, sizeof(msg), "GET %s: cannot start: %s", path,
			 r == -ENOKEY ? "no usable credential (token, client certificate, bootstrap token)"
				      : strerror(-r));
		report_error(w, msg);
		if (w->oneshot) {
			log_warning("%s", msg);
			w->state = WATCH_FAILED;
			return;
		}
		w->state = WATCH_NEED_GET;
		own_failure(w, now, 0, OWN_WARN, LOG_FIELDS(id_field(w, idf, sizeof(idf))), msg);
		return;
	}
	w->state = WATCH_GETTING;
	w->listing = list;
	w->resync_at = now + w->http->cfg->resync_interval_ms;
}

static void start_watch(struct watch *w, uint64_t now)
{
	char path[512], query[512];
	object_path(w, true, path, sizeof(path));
	/* The server ends the stream a little after STREAM_S (or our own
	 * resync, if sooner, would restart it). */
	unsigned resync_s = w->http->cfg->resync_interval_ms / 1000u;
	unsigned timeout_s = (resync_s < STREAM_S ? resync_s : STREAM_S) + 60u;
	int n = snprintf(query, sizeof(query),
			 "watch=1&fieldSelector=metadata.name%%3D%s&allowWatchBookmarks=true%s%s&timeoutSeconds=%u",
			 w->name, w->rv[0] ? "&resourceVersion=" : "", w->rv, timeout_s);
	char idf[320], msg[600];
	id_field(w, idf, sizeof(idf));
	if (n < 0 || (size_t)n >= sizeof(query)) {
		w->state = WATCH_NEED_GET;
		snprintf(msg, sizeof(msg), "watch %s: the query does not fit", path);
		own_failure(w, now, 0, OWN_WARN, LOG_FIELDS(idf), msg);
		return;
	}
	w->stream_error = 0;
	w->stream_why[0] = '\0';
	w->got_event = false;
	int r = http_start(w->http, "GET", path, query, NULL, NULL, true, on_line, on_watch_done, w, &w->req);
	if (r == -EAGAIN) /* the gate: see http_due() */
		return;
	if (r < 0) {
		snprintf(msg, sizeof(msg), "watch %s: cannot start: %s", path, strerror(-r));
		own_failure(w, now, 0, OWN_WARN, LOG_FIELDS(idf), msg);
		return;
	}
	w->stream_started_ms = now;
	w->state = WATCH_WATCHING;
	log_debug("watching %s %s from resourceVersion %s", w->what, w->name, w->rv[0] ? w->rv : "(now)");
}

uint64_t watch_tick(struct watch *w, uint64_t now)
{
	const struct config *cfg = w->http->cfg;
	switch (w->state) {
	case WATCH_NEED_GET:
		if (now >= http_due(w->http, w->wake_at))
			start_get(w, now);
		break;
	case WATCH_NEED_WATCH:
		if (now >= http_due(w->http, w->wake_at))
			start_watch(w, now);
		break;
	case WATCH_WATCHING:
		if (now >= w->resync_at) {
			log_debug("%s %s: periodic resync", w->what, w->name);
			watch_resync(w);
			if (now >= http_due(w->http, w->wake_at))
				start_get(w, now);
			break;
		}
		if (w->req && now - w->req->last_activity_ms >= cfg->watch_idle_timeout_ms) {
			char idf[320], msg[400];
			snprintf(msg, sizeof(msg), "watch of %s %s silent for %u ms (not even a bookmark)", w->what,
				 w->name, cfg->watch_idle_timeout_ms);
			report_error(w, "watch silent past timeouts.watchIdleMs");
			http_cancel(w->req);
			w->req = NULL;
			w->state = w->rv[0] ? WATCH_NEED_WATCH : WATCH_NEED_GET;
			own_failure(w, now, 0, OWN_ROUTINE, LOG_FIELDS(id_field(w, idf, sizeof(idf))), msg);
			break;
		}
		/* A stream that has served a while ends the watch's own
		 * condition (a quiet object sends no event to say so). */
		if (backoff_failing(&w->fail) && w->req && w->req->answered && w->req->status == 200 &&
		    now - w->stream_started_ms >= STREAM_HEALTHY_MS)
			own_success(w, now);
		break;
	default:
		break;
	}

	switch (w->state) {
	case WATCH_NEED_GET:
	case WATCH_NEED_WATCH:
		return http_due(w->http, w->wake_at);
	case WATCH_WATCHING: {
		uint64_t idle = w->req ? w->req->last_activity_ms + cfg->watch_idle_timeout_ms : UINT64_MAX;
		uint64_t next = idle < w->resync_at ? idle : w->resync_at;
		if (backoff_failing(&w->fail) && w->req && w->req->answered &&
		    w->stream_started_ms + STREAM_HEALTHY_MS < next)
			next = w->stream_started_ms + STREAM_HEALTHY_MS;
		return next;
	}
	default:
		return UINT64_MAX;
	}
}
