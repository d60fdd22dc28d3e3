/* The Node patch; see annotate.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "annotate.h"
#include "cleanup.h"
#include "log.h"
#include "strx.h"

/* A patch that failed (not the gate's): 1 s doubling every 2 s up to 30 s,
 * full jitter (lib/base/backoff.h), at least Retry-After. */
static const struct backoff_policy annotate_policy = { .base_ms = ANNOTATE_BACKOFF_BASE_MS, .double_ms = 2000,
						       .cap_ms = ANNOTATE_BACKOFF_CAP_MS };

void annotate_init(struct annotate *n, char *const *node_name, bool once, const struct annotate_ops *ops,
		   void *userdata)
{
	backoff_init(&n->retry, &annotate_policy);
	n->node_name = node_name;
	n->once = once;
	n->ops = ops;
	n->userdata = userdata;
}

int annotate_record(struct annotate *n, const struct kube_node *k)
{
	if (strx_replace(&n->rv, k->resource_version) < 0 || strx_replace(&n->applied_checksum, k->applied_checksum) < 0 ||
	    strx_replace(&n->k8s_version, k->kubernetes_version) < 0 ||
	    strx_replace(&n->worker_role, k->worker_role) < 0 || strx_replace(&n->zone, k->zone) < 0 ||
	    strx_replace(&n->host_keys, k->ssh_host_keys) < 0 ||
	    strx_replace(&n->update_result, k->update_result) < 0 ||
	    strx_replace(&n->failed_reason, k->update_failed_reason) < 0 ||
	    strx_replace(&n->updating_os, k->updating_os_version) < 0)
		return log_error_errno(-ENOMEM, "cannot record the Node");
	return 0;
}

void annotate_entries(const struct annotate *n, const struct annotate_want *w,
		      struct kube_patch_entry ann[static ANNOTATE_ANN_MAX], size_t *n_ann,
		      struct kube_patch_entry lab[static ANNOTATE_LAB_MAX], size_t *n_lab)
{
	*n_ann = *n_lab = 0;
	if (w->applied && !strx_eq(n->applied_checksum, w->checksum))
		ann[(*n_ann)++] = (struct kube_patch_entry){ KUBE_ANN_NODE_CHECKSUM, w->checksum };
	if (w->applied && w->k8s_version && !strx_eq(n->k8s_version, w->k8s_version))
		lab[(*n_lab)++] = (struct kube_patch_entry){ KUBE_LABEL_K8S_VERSION, w->k8s_version };
	/* As gardener-node-agent's OSC reconciler (step "labels") does, with
	 * its stock data: the worker role and the zone file's zone. */
	if (w->worker_role && !n->worker_role)
		lab[(*n_lab)++] = (struct kube_patch_entry){ KUBE_LABEL_WORKER_ROLE, "" };
	if (w->zone && !strx_eq(n->zone, w->zone))
		lab[(*n_lab)++] = (struct kube_patch_entry){ KUBE_LABEL_ZONE, w->zone };
	if (w->host_keys && !strx_eq(n->host_keys, w->host_keys))
		ann[(*n_ann)++] = (struct kube_patch_entry){ KUBE_ANN_SSH_HOST_KEYS, w->host_keys };
	/* The in-place update's result (nodeupdate.h): the label and the
	 * annotations as patchNodeUpdateSuccessful/Failed and updateOSInPlace
	 * write them (gardener/gardener pkg/nodeagent/controller/
	 * operatingsystemconfig/reconciler.go). The checksum annotation is
	 * held meanwhile (the agent's want), so it comes with or after the
	 * label, never before. */
	if (w->update_result && !strx_eq(n->update_result, w->update_result))
		lab[(*n_lab)++] = (struct kube_patch_entry){ KUBE_LABEL_UPDATE_RESULT, w->update_result };
	if (w->failed_reason && !strx_eq(n->failed_reason, w->failed_reason))
		ann[(*n_ann)++] = (struct kube_patch_entry){ KUBE_ANN_UPDATE_FAILED_REASON, w->failed_reason };
	else if (!w->failed_reason && w->failed_reason_remove && n->failed_reason)
		ann[(*n_ann)++] = (struct kube_patch_entry){ KUBE_ANN_UPDATE_FAILED_REASON, NULL };
	if (w->updating_os && !strx_eq(n->updating_os, w->updating_os))
		ann[(*n_ann)++] = (struct kube_patch_entry){ KUBE_ANN_UPDATING_OS_VERSION, w->updating_os };
	else if (!w->updating_os && w->updating_os_remove && n->updating_os)
		ann[(*n_ann)++] = (struct kube_patch_entry){ KUBE_ANN_UPDATING_OS_VERSION, NULL };
}

/* Does the Node still lack something (the restart request aside)? */
static bool annotate_wanted(const struct annotate *n)
{
	struct annotate_want w;
	struct kube_patch_entry ann[ANNOTATE_ANN_MAX], lab[ANNOTATE_LAB_MAX];
	size_t n_ann, n_lab;
	n->ops->want(n->userdata, &w);
	annotate_entries(n, &w, ann, &n_ann, lab, &n_lab);
	return n_ann > 0 || n_lab > 0;
}

static void annotate_on_done(struct http_request *req, void *userdata)
{
	struct annotate *n = userdata;
	const char *node_name = *n->node_name;
	uint64_t now = now_ms();
	char nf[300], st[32], url[300], why[512 + 16];
	const char *error = NULL;
	bool contact = false;
	n->req = NULL;
	snprintf(nf, sizeof(nf), "NODE=%s", node_name);
	snprintf(st, sizeof(st), "HTTP_STATUS=%ld", req->status);
	snprintf(url, sizeof(url), "URL=%s", req->path);

	if (req->result == CURLE_OK && req->error == 0 && req->status == 200) {
		struct kube_node k;
		contact = true;
		/* Only what the patch changed is taken from its answer: the
		 * watch may still deliver older versions of the Node, and the
		 * restart request is followed in the order the watch shows it
		 * (an answer taken as the newest view made an older event with
		 * the request look like a new one). */
		int r = kube_node_parse(req->body, req->body_len, &k, NULL);
		if (r == 0) {
			annotate_record(n, &k);
			kube_node_done(&k);
		}
		if (n->removes_restart)
			n->has_restart = false; /* until the watch shows it again */
		if (n->denied)
			log_fields(LOG_NOTICE, LOG_FIELDS(nf), "patch permission on nodes/%s is there again", node_name);
		n->denied = false;
		if (r == 0 && !annotate_wanted(n)) {
			uint64_t lasted, attempts;
			char took[32];
			if (backoff_reset(&n->retry, now, &lasted, &attempts) && n->fail_logged) {
				backoff_duration_text(lasted, took, sizeof(took));
				log_fields(LOG_NOTICE, LOG_FIELDS(nf, st, url),
					   "patched Node %s after %llu failed attempt(s) in %s", node_name,
					   (unsigned long long)attempts, took);
			} else
				log_fields(LOG_INFO, LOG_FIELDS(nf, st, url), "patched Node %s", node_name);
			n->fail_logged = false;
			n->ops->done(n->userdata, now, contact, NULL);
			return;
		}
		/* An answer that is not the patched Node, or something else
		 * that sets the same fields back (a webhook, another agent):
		 * retried with back-off, never in a tight loop. */
		n->fail_logged |= !backoff_failing(&n->retry);
		log_fields(backoff_failing(&n->retry) ? LOG_DEBUG : LOG_WARNING, LOG_FIELDS(nf, st, url),
			   "PATCH of Node %s: %s; retrying with back-off", node_name,
			   r < 0 ? "the answer is not a Node" : "the answer does not have the change");
		error = "PATCH Node: the change did not stick";
		n->failed_once = true;
	} else if (req->result == CURLE_OK && req->status == 409) {
		/* The Node changed after we read it (a new restart request?): the
		 * watch brings the new version, the patch is recomputed then. */
		log_fields(LOG_INFO, LOG_FIELDS(nf, st, url), "Node %s changed meanwhile; re-evaluating the patch",
			   node_name);
		contact = true;
		if (n->once)
			n->failed_once = true;
	} else {
		char failure[512];
		bool gate = http_gate_took(req);
		bool denied = req->result == CURLE_OK && req->status == 403 && !gate;
		http_describe_failure(req, failure, sizeof(failure));
		/* RBAC is per verb: say once which one is missing and its cost. */
		if (denied && !n->denied)
			log_fields(LOG_ERR, LOG_FIELDS(nf, st, url),
				   "no patch permission on nodes/%s: the Node never shows what was applied "
				   "(checksum annotation, version label, host keys) nor loses a done restart request",
				   node_name);
		n->denied = denied;
		/* Once per condition; the gate logs an outage itself. */
		bool first = !gate && !denied && !backoff_failing(&n->retry);
		n->fail_logged |= first;
		log_fields(first ? LOG_WARNING : LOG_DEBUG, LOG_FIELDS(nf, st, url), "PATCH of Node %s failed: %s; %s",
			   node_name, failure,
			   gate ? "waiting for the API server" : "retrying with back-off (logged again once it works)");
		snprintf(why, sizeof(why), "PATCH Node: %s", failure);
		error = why;
		n->failed_once = true;
	}
	/* Nobody serving, or a starting server (an API server restarting,
	 * directly or behind a load balancer): the gate paces it for every
	 * duty, so that what was applied during an outage shows on the Node
	 * as soon as the server serves again. */
	if (http_gate_took(req)) {
		n->wake_at = now;
		n->ops->done(n->userdata, now, contact, error);
		return;
	}
	n->wake_at = now + backoff_fail(&n->retry, now, req->retry_after > 0 ? (uint64_t)req->retry_after * 1000u : 0);
	n->ops->done(n->userdata, now, contact, error);
}

int annotate_start(struct annotate *n, struct http_client *http, const struct annotate_want *w, uint64_t now)
{
	if (n->req || now < n->wake_at)
		return 0;
	const char *node_name = *n->node_name;
	struct kube_patch_entry ann[ANNOTATE_ANN_MAX + 1], lab[ANNOTATE_LAB_MAX];
	size_t n_ann, n_lab;
	bool removes_restart = false;
	annotate_entries(n, w, ann, &n_ann, lab, &n_lab);
	/* The restart request is removed once the executor reports that it ran
	 * it (or when it could not be parsed at all). */
	if (n->has_restart && !w->restart_invalid && w->restart_done)
		removes_restart = true;
	else if (n->has_restart && w->restart_invalid)
		removes_restart = true;
	if (removes_restart)
		ann[n_ann++] = (struct kube_patch_entry){ KUBE_ANN_RESTART, NULL };
	if (n_ann == 0 && n_lab == 0)
		return 0;
	/* The API server does not serve: wait for its gate (the owner
	 * tries again when it opens, see wake_at). */
	if (http_gate_at(http) > now) {
		n->wake_at = now;
		return 1;
	}

	/* Removing the restart request is conditional on the Node being the
	 * one we read: a new request set meanwhile must not be dropped. */
	_cleanup_free_ char *body = kube_merge_patch(ann, n_ann, lab, n_lab, removes_restart ? n->rv : NULL);
	if (!body)
		return log_error_errno(-ENOMEM, "cannot build the Node patch");
	char path[320];
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node_name);
	int r = http_start(http, "PATCH", path, NULL, body, "application/merge-patch+json", false, NULL,
			   annotate_on_done, n, &n->req);
	if (r == -EAGAIN) {
		n->wake_at = now;
		return 1;
	}
	if (r < 0) {
		n->wake_at = now + backoff_fail(&n->retry, now, 0);
		return log_warning_errno(r, "cannot start the Node patch");
	}
	n->removes_restart = removes_restart;
	char what[512] = "";
	for (size_t i = 0; i < n_ann; i++)
		snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%s%s", i ? ", " : "", ann[i].key,
			 ann[i].value ? "" : " (remove)");
	for (size_t i = 0; i < n_lab; i++)
		snprintf(what + strlen(what), sizeof(what) - strlen(what), "%slabel %s", n_ann || i ? ", " : "",
			 lab[i].key);
	char nf[300], cs[80];
	snprintf(nf, sizeof(nf), "NODE=%s", node_name);
	snprintf(cs, sizeof(cs), "CHECKSUM=%s", w->checksum);
	/* The first try of a patch; a retry is the condition's (logged once). */
	log_fields(backoff_failing(&n->retry) ? LOG_DEBUG : LOG_INFO, LOG_FIELDS(nf, cs), "patching Node %s: %s",
		   node_name, what);
	return 1;
}

void annotate_cancel(struct annotate *n)
{
	if (n->req)
		http_cancel(n->req);
	n->req = NULL;
}

void annotate_done(struct annotate *n)
{
	free(n->rv);
	free(n->applied_checksum);
	free(n->k8s_version);
	free(n->worker_role);
	free(n->zone);
	free(n->host_keys);
	free(n->update_result);
	free(n->failed_reason);
	free(n->updating_os);
	n->rv = n->applied_checksum = n->k8s_version = n->worker_role = n->zone = n->host_keys = NULL;
	n->update_result = n->failed_reason = n->updating_os = NULL;
}
