/* The SystemdUnitsReady duty; see conditions.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "conditions.h"
#include "jsonx.h"
#include "log.h"

static const char *status_word(bool ready)
{
	return ready ? "True" : "False";
}

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

bool conditions_differ(const char *have_status, const char *have_reason, const char *have_message, bool ready,
		       const char *reason, const char *message)
{
	return !streq(have_status, status_word(ready)) || !streq(have_reason, reason) || !streq(have_message, message);
}

static bool format_time(time_t t, char buf[static 32])
{
	struct tm tm;
	return gmtime_r(&t, &tm) && strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0;
}

char *conditions_patch_body(const char *have_status, const char *have_transition, bool ready, const char *reason,
			    const char *message, time_t checked_at)
{
	char now[32];
	if (!format_time(checked_at, now))
		return NULL;
	const char *transition = streq(have_status, status_word(ready)) && have_transition ? have_transition : now;
	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_CreateObject();
	cJSON *status = root ? cJSON_AddObjectToObject(root, "status") : NULL;
	cJSON *list = status ? cJSON_AddArrayToObject(status, "conditions") : NULL;
	cJSON *c = cJSON_CreateObject();
	if (!list || !c) {
		cJSON_Delete(c);
		return NULL;
	}
	cJSON_AddItemToArray(list, c);
	if (!cJSON_AddStringToObject(c, "type", KUBE_CONDITION_SYSTEMD_UNITS_READY) ||
	    !cJSON_AddStringToObject(c, "status", status_word(ready)) || !cJSON_AddStringToObject(c, "reason", reason) ||
	    !cJSON_AddStringToObject(c, "message", message) || !cJSON_AddStringToObject(c, "lastHeartbeatTime", now) ||
	    !cJSON_AddStringToObject(c, "lastTransitionTime", transition))
		return NULL;
	return cJSON_PrintUnformatted(root);
}

/* A PATCH that failed (not the gate's): 1 s doubling every 2 s up to 60 s,
 * full jitter (lib/base/backoff.h). */
static const struct backoff_policy conditions_policy = { .base_ms = CONDITIONS_BACKOFF_BASE_MS, .double_ms = 2000,
							 .cap_ms = CONDITIONS_BACKOFF_CAP_MS };

int conditions_init(struct conditions *c, struct http_client *http, const char *node_name)
{
	*c = (struct conditions){ .http = http };
	backoff_init(&c->retry, &conditions_policy);
	c->node_name = strdup(node_name);
	return c->node_name ? 0 : -ENOMEM;
}

static void forget_node(struct conditions *c)
{
	free(c->have_status);
	free(c->have_reason);
	free(c->have_message);
	free(c->have_transition);
	c->have_status = c->have_reason = c->have_message = c->have_transition = NULL;
}

void conditions_done(struct conditions *c)
{
	if (c->req)
		http_cancel(c->req);
	forget_node(c);
	free(c->want_message);
	free(c->node_name);
	*c = (struct conditions){};
}

/* Copies the Node's condition; on ENOMEM the Node counts as unseen (the
 * next event tries again). */
static void take_node(struct conditions *c, const struct kube_node *n)
{
	forget_node(c);
	c->node_known = false;
	if (!n)
		return;
	if (n->units_ready_status) {
		c->have_status = strdup(n->units_ready_status);
		c->have_reason = strdup(n->units_ready_reason);
		c->have_message = strdup(n->units_ready_message);
		c->have_transition = strdup(n->units_ready_transition);
		if (!c->have_status || !c->have_reason || !c->have_message || !c->have_transition) {
			forget_node(c);
			return;
		}
	}
	c->node_known = true;
}

void conditions_set_node(struct conditions *c, const struct kube_node *n)
{
	if (!c->node_name)
		return;
	take_node(c, n);
}

void conditions_set_result(struct conditions *c, const struct result_units_ready *r)
{
	if (!c->node_name)
		return;
	if (!r || !r->present) {
		c->want_present = false;
		return;
	}
	if (c->want_present && c->want_ready == r->ready && strcmp(c->want_reason, r->reason) == 0 &&
	    streq(c->want_message, r->message))
		return; /* the same condition checked again: its first time stands */
	char *m = strdup(r->message);
	if (!m) {
		log_error_errno(-ENOMEM, "cannot record the SystemdUnitsReady condition");
		return;
	}
	free(c->want_message);
	c->want_message = m;
	c->want_present = true;
	c->want_ready = r->ready;
	snprintf(c->want_reason, sizeof(c->want_reason), "%s", r->reason);
	c->want_at = r->checked_at;
}

static bool due(const struct conditions *c)
{
	return c->node_name && c->node_known && c->want_present &&
	       conditions_differ(c->have_status, c->have_reason, c->have_message, c->want_ready, c->want_reason,
				 c->want_message);
}

/* A failed PATCH: logged when the condition starts; retried after the
 * back-off, or when the API server's gate opens for what it took (gate). */
static void failed(struct conditions *c, uint64_t now, const char *why, bool gate)
{
	if (gate) {
		c->wake_at = now;
		return;
	}
	if (!c->failing)
		log_warning("PATCH of Node %s status (condition %s) failed: %s; retrying with back-off (logged again "
			    "once it works)", c->node_name, KUBE_CONDITION_SYSTEMD_UNITS_READY, why);
	c->failing = true;
	c->wake_at = now + backoff_fail(&c->retry, now, 0);
}

static void on_done(struct http_request *req, void *userdata)
{
	struct conditions *c = userdata;
	c->req = NULL;
	if (req->result == CURLE_OK && req->error == 0 && req->status == 200) {
		/* The answer is the patched Node: take our condition from it. */
		struct kube_node n;
		if (req->body && kube_node_parse(req->body, req->body_len, &n, NULL) >= 0) {
			take_node(c, &n);
			kube_node_done(&n);
		}
		if (due(c)) {
			failed(c, now_ms(), "the answer does not carry the condition", false);
			return;
		}
		c->patches++;
		backoff_reset(&c->retry, now_ms(), NULL, NULL);
		log_info("Node %s: condition %s=%s (%s)%s", c->node_name, KUBE_CONDITION_SYSTEMD_UNITS_READY,
			 status_word(c->want_ready), c->want_reason, c->failing ? " after failed attempts" : "");
		c->failing = false;
		return;
	}
	char why[256];
	http_describe_failure(req, why, sizeof(why));
	failed(c, now_ms(), why, http_gate_took(req));
}

uint64_t conditions_tick(struct conditions *c, uint64_t now)
{
	if (c->req || !due(c))
		return UINT64_MAX;
	uint64_t at = http_due(c->http, c->wake_at);
	if (now < at)
		return at;
	_cleanup_free_ char *body = conditions_patch_body(c->have_status, c->have_transition, c->want_ready,
							  c->want_reason, c->want_message, c->want_at);
	char path[320];
	snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", c->node_name);
	int r = body ? http_start(c->http, "PATCH", path, NULL, body, "application/strategic-merge-patch+json", false,
				  NULL, on_done, c, &c->req)
		     : -ENOMEM;
	if (r == -EAGAIN) /* the gate */
		return http_due(c->http, c->wake_at);
	if (r < 0) {
		failed(c, now, strerror(-r), false);
		return c->wake_at;
	}
	return UINT64_MAX;
}
