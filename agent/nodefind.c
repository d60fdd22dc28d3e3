/* The Node found by the kubernetes.io/hostname label; see nodefind.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnaconfig.h"
#include "kube.h"
#include "log.h"
#include "nodefind.h"

#define BACKOFF_MAX_MS (5u * 60u * 1000u)

/* A list that failed (not the gate's): 5 s (the period) doubling every
 * 30 s up to 5 min, full jitter (lib/base/backoff.h). */
static const struct backoff_policy nodefind_policy = { .base_ms = NODEFIND_PERIOD_MS, .double_ms = 30000,
						       .cap_ms = BACKOFF_MAX_MS };

int nodefind_init(struct nodefind *f, struct http_client *http, const char *hostname, const char *current)
{
	*f = (struct nodefind){ .http = http };
	backoff_init(&f->retry, &nodefind_policy);
	if (!hostname || !*hostname || !gna_label_value_is_valid(hostname)) {
		log_notice("hostname \"%.64s\" is no label value: the Node is looked for by name only",
			   hostname ? hostname : "");
		return 0;
	}
	f->hostname = strdup(hostname);
	f->current = strdup(current);
	if (!f->hostname || !f->current) {
		nodefind_done(f);
		return -ENOMEM;
	}
	return 0;
}

void nodefind_done(struct nodefind *f)
{
	if (f->req)
		http_cancel(f->req);
	free(f->hostname);
	free(f->current);
	free(f->found);
	*f = (struct nodefind){};
}

static void on_done(struct http_request *req, void *userdata)
{
	struct nodefind *f = userdata;
	uint64_t now = now_ms();
	f->req = NULL;
	if (http_gate_took(req)) { /* the gate paces it (and logs the outage) */
		f->next_at = now;
		return;
	}
	char *name = NULL;
	const char *why = NULL;
	int r = req->status == 200 ? kube_node_list_find(req->body ? req->body : "", req->body_len,
							 KUBE_LABEL_HOSTNAME, f->hostname, &name, &why)
				   : -EIO;
	if (r == 0 || r == -ENOENT) {
		f->denied = false;
		backoff_reset(&f->retry, now, NULL, NULL);
		f->warned = false;
		f->next_at = now + NODEFIND_PERIOD_MS;
		if (r == 0 && strcmp(name, f->current) != 0) {
			free(f->found);
			f->found = name;
			return;
		}
		free(name);
		return;
	}
	if (req->status == 403) {
		/* Logged once; tried again after BACKOFF_MAX_MS or as soon
		 * as the credentials change (nodefind_resync()). */
		if (!f->denied) {
			char desc[512];
			http_describe_failure(req, desc, sizeof(desc));
			log_warning("cannot list Nodes by label %s=%s: %s; waiting for Node %s by name",
				    KUBE_LABEL_HOSTNAME, f->hostname, desc, f->current);
		}
		f->denied = true;
		f->next_at = now + BACKOFF_MAX_MS;
		return;
	}
	f->next_at = now + backoff_fail(&f->retry, now, 0);
	if (f->warned)
		return;
	f->warned = true;
	if (r == -ENOTUNIQ)
		log_error("found more than one Node with label %s=%s; waiting for Node %s by name", KUBE_LABEL_HOSTNAME,
			  f->hostname, f->current);
	else if (r == -EIO) {
		char desc[512];
		http_describe_failure(req, desc, sizeof(desc));
		log_warning("cannot list Nodes by label %s=%s: %s; retrying", KUBE_LABEL_HOSTNAME, f->hostname, desc);
	} else
		log_warning("Nodes listed by label %s=%s: invalid answer (%s); retrying", KUBE_LABEL_HOSTNAME,
			    f->hostname, why ? why : strerror(-r));
}

void nodefind_resync(struct nodefind *f)
{
	f->next_at = 0;
}

uint64_t nodefind_tick(struct nodefind *f, uint64_t now, bool missing)
{
	if (!f->http || !f->hostname || f->found || !missing)
		return UINT64_MAX;
	if (f->req)
		return UINT64_MAX;
	uint64_t due = http_due(f->http, f->next_at);
	if (now < due)
		return due;
	char query[160];
	/* The label value is [A-Za-z0-9._-] (checked): nothing to escape. */
	snprintf(query, sizeof(query), "labelSelector=kubernetes.io%%2Fhostname%%3D%s", f->hostname);
	int r = http_start(f->http, "GET", "/api/v1/nodes", query, NULL, NULL, false, NULL, on_done, f, &f->req);
	if (r == -EAGAIN) /* the gate closed meanwhile */
		return http_due(f->http, f->next_at);
	if (r < 0) {
		f->next_at = now + NODEFIND_PERIOD_MS;
		log_debug_errno(r, "cannot list Nodes by label yet");
		return f->next_at;
	}
	return UINT64_MAX;
}
