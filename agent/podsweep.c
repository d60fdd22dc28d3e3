/* The Pods remaining on the Node after an in-place update; see podsweep.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "log.h"
#include "podsweep.h"

static const char *node_of(const struct podsweep *ps)
{
	return ps->node_name && *ps->node_name ? *ps->node_name : "";
}

static void free_list(struct podsweep *ps)
{
	kube_pod_refs_free(ps->pods, ps->n_pods);
	ps->pods = NULL;
	ps->n_pods = ps->next = 0;
}

static void on_http_done(struct http_request *req, void *userdata)
{
	struct podsweep *ps = userdata;
	ps->req = NULL;
	bool answered = req->result == CURLE_OK && req->error == 0;
	char why[256] = "";
	if (!answered || (req->status != 200 && req->status != 202 &&
			  !(ps->phase == PODSWEEP_DELETING && req->status == 404)))
		http_describe_failure(req, why, sizeof(why));
	long status = answered ? req->status : 0;
	if (ps->phase == PODSWEEP_LISTING)
		podsweep_listed(ps, status, req->body, req->body_len, why[0] ? why : NULL, now_ms());
	else if (ps->phase == PODSWEEP_DELETING)
		podsweep_deleted(ps, status, why[0] ? why : NULL, now_ms());
}

static int real_start(struct podsweep *ps, const char *method, const char *path, const char *query)
{
	return http_start(ps->http, method, path, query, NULL, NULL, false, NULL, on_http_done, ps, &ps->req);
}

void podsweep_init(struct podsweep *ps, struct http_client *http, const char *const *node_name,
		   void (*on_round)(void *userdata, bool ok, const char *why), void *userdata)
{
	*ps = (struct podsweep){
		.http = http,
		.node_name = node_name,
		.start = real_start,
		.on_round = on_round,
		.userdata = userdata,
	};
}

static void cancel(struct podsweep *ps)
{
	if (ps->req && ps->start == real_start)
		http_cancel(ps->req);
	ps->req = NULL;
	free_list(ps);
}

void podsweep_done(struct podsweep *ps)
{
	cancel(ps);
	ps->phase = PODSWEEP_IDLE;
}

bool podsweep_running(const struct podsweep *ps)
{
	return ps->phase == PODSWEEP_LISTING || ps->phase == PODSWEEP_DELETING;
}

void podsweep_want(struct podsweep *ps, bool want, const char *why, uint64_t now)
{
	if (!want) {
		if (podsweep_running(ps))
			log_info("in-place update: deleting the Pods on Node %s stopped: %s", node_of(ps),
				 why ? why : "no longer wanted");
		cancel(ps);
		ps->phase = PODSWEEP_IDLE;
		ps->failures = 0;
		return;
	}
	if (ps->phase != PODSWEEP_IDLE)
		return;
	ps->phase = PODSWEEP_LISTING;
	ps->next_at = now;
	ps->failures = 0;
	log_notice("in-place update done: deleting the Pods remaining on Node %s before it is labelled "
		   "update-result=successful (as gardener-node-agent's deleteRemainingPods)",
		   node_of(ps));
}

bool podsweep_finished(const struct podsweep *ps)
{
	return ps->phase == PODSWEEP_DONE;
}

/* The round ends: done, or a retry of the whole sweep after the backoff. */
static void end_round(struct podsweep *ps, uint64_t now)
{
	ps->req = NULL;
	if (!ps->why[0]) {
		log_notice("in-place update: deleted the %u Pod(s) remaining on Node %s (%u already gone)", ps->deleted,
			   node_of(ps), ps->gone);
		free_list(ps);
		ps->phase = PODSWEEP_DONE;
		ps->failures = 0;
		ps->rounds_ok++;
		if (ps->on_round)
			ps->on_round(ps->userdata, true, NULL);
		return;
	}
	free_list(ps);
	ps->failures++;
	ps->rounds_failed++;
	uint64_t delay = backoff_half_jitter(backoff_ceiling(PODSWEEP_RETRY_BASE_MS, PODSWEEP_RETRY_CAP_MS,
							    ps->failures - 1));
	ps->phase = PODSWEEP_LISTING;
	ps->next_at = now + delay;
	char msg[400];
	snprintf(msg, sizeof(msg), "cannot delete the Pods remaining on Node %s: %s", node_of(ps), ps->why);
	log_error("in-place update: %s; update-result stays unset, trying again in %.1f s", msg,
		  (double)delay / 1000.0);
	if (ps->on_round)
		ps->on_round(ps->userdata, false, msg);
}

/* Deletes pods[next], or ends the round after the last. */
static void delete_next(struct podsweep *ps, uint64_t now)
{
	while (ps->next < ps->n_pods) {
		const struct kube_pod_ref *p = &ps->pods[ps->next];
		char path[512];
		int r = kube_pod_path(p->ns, p->name, path, sizeof(path));
		if (r >= 0)
			r = ps->start(ps, "DELETE", path, NULL);
		if (r >= 0)
			return;
		log_warning_errno(r, "in-place update: cannot start the delete of Pod %s/%s", p->ns, p->name);
		ps->failed++;
		if (!ps->why[0])
			snprintf(ps->why, sizeof(ps->why), "Pod %s/%s: cannot start the request: %s", p->ns, p->name,
				 strerror(-r));
		ps->next++;
	}
	end_round(ps, now);
}

void podsweep_listed(struct podsweep *ps, long status, const char *body, size_t len, const char *why,
		     uint64_t now)
{
	ps->req = NULL;
	if (ps->phase != PODSWEEP_LISTING)
		return;
	if (status != 200) {
		snprintf(ps->why, sizeof(ps->why), "listing the Pods failed: %s", why ? why : "no answer");
		end_round(ps, now);
		return;
	}
	const char *err = NULL;
	int r = kube_pod_list_on_node(body ? body : "", body ? len : 0, node_of(ps), &ps->pods, &ps->n_pods, &err);
	if (r < 0) {
		snprintf(ps->why, sizeof(ps->why), "the Pod list is not valid: %s: %s", err ? err : "?", strerror(-r));
		end_round(ps, now);
		return;
	}
	log_info("in-place update: %zu Pod(s) on Node %s to delete", ps->n_pods, node_of(ps));
	ps->phase = PODSWEEP_DELETING;
	ps->next = 0;
	delete_next(ps, now);
}

void podsweep_deleted(struct podsweep *ps, long status, const char *why, uint64_t now)
{
	ps->req = NULL;
	if (ps->phase != PODSWEEP_DELETING || ps->next >= ps->n_pods)
		return;
	const struct kube_pod_ref *p = &ps->pods[ps->next];
	if (status == 200 || status == 202) {
		ps->deleted++;
		ps->pods_deleted++;
		log_info("in-place update: deleted Pod %s/%s", p->ns, p->name);
	} else if (status == 404) {
		ps->gone++;
		log_info("in-place update: Pod %s/%s already gone", p->ns, p->name);
	} else {
		ps->failed++;
		log_warning("in-place update: cannot delete Pod %s/%s: %s", p->ns, p->name, why ? why : "no answer");
		if (!ps->why[0])
			snprintf(ps->why, sizeof(ps->why), "Pod %s/%s: %s", p->ns, p->name, why ? why : "no answer");
	}
	ps->next++;
	delete_next(ps, now);
}

uint64_t podsweep_tick(struct podsweep *ps, uint64_t now)
{
	if (ps->phase != PODSWEEP_LISTING || ps->req || !ps->start)
		return UINT64_MAX;
	if (now < ps->next_at)
		return ps->next_at;
	char query[320];
	ps->deleted = ps->gone = ps->failed = 0;
	ps->why[0] = '\0';
	int r = kube_pod_list_query(node_of(ps), query, sizeof(query));
	if (r >= 0)
		r = ps->start(ps, "GET", "/api/v1/pods", query);
	if (r < 0) {
		snprintf(ps->why, sizeof(ps->why), "cannot start the list of Pods: %s", strerror(-r));
		end_round(ps, now);
		return ps->next_at;
	}
	return UINT64_MAX;
}
