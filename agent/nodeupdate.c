/* In-place updates, node-agent's half; see nodeupdate.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "nodeupdate.h"
#include "result.h"
#include "strx.h"

void nodeupdate_report_from(const struct result *r, bool current, struct nodeupdate_report *ret)
{
	*ret = (struct nodeupdate_report){ .state = NODEUPDATE_NONE, .current = current };
	if (!r || !r->inplace.present)
		return;
	static const enum nodeupdate_state map[] = {
		[INPLACE_STATE_WAITING] = NODEUPDATE_WAITING,
		[INPLACE_STATE_RUNNING] = NODEUPDATE_RUNNING,
		[INPLACE_STATE_SUCCESSFUL] = NODEUPDATE_SUCCESSFUL,
		[INPLACE_STATE_FAILED] = NODEUPDATE_FAILED,
	};
	if (r->inplace.state < 0 || (size_t)r->inplace.state >= sizeof(map) / sizeof(map[0]))
		return;
	ret->state = map[r->inplace.state];
	ret->kinds = r->inplace.kinds;
	ret->reason = r->inplace.reason;
	ret->os_version = r->inplace.os_desired;
	ret->generation = r->generation;
}

bool nodeupdate_ready(const struct nodeupdate *u)
{
	return u->ready_for_update || u->label_failed;
}

bool nodeupdate_node(struct nodeupdate *u, const struct kube_node *k)
{
	bool before = nodeupdate_ready(u);
	bool had_condition = u->ready_for_update;
	u->ready_for_update = k && k->ready_for_update;
	u->label_failed = k && strx_eq(k->update_result, KUBE_UPDATE_RESULT_FAILED);
	u->label_successful = k && strx_eq(k->update_result, KUBE_UPDATE_RESULT_SUCCESSFUL);
	if (u->ready_for_update && !had_condition)
		log_notice("Node has condition %s with reason %s: machine-controller-manager drained it, the in-place "
			   "update may proceed",
			   KUBE_CONDITION_IN_PLACE_UPDATE, KUBE_REASON_READY_FOR_UPDATE);
	else if (!u->ready_for_update && had_condition)
		log_info("Node no longer has condition %s with reason %s", KUBE_CONDITION_IN_PLACE_UPDATE,
			 KUBE_REASON_READY_FOR_UPDATE);
	return nodeupdate_ready(u) != before;
}

/* The kinds as a comma list, for the log. */
static void kinds_text(unsigned bits, char *buf, size_t len)
{
	buf[0] = '\0';
	for (unsigned bit = 1; bit & INPLACE_KINDS_ALL; bit <<= 1)
		if (bits & bit)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? "," : "", inplace_kind_name(bit));
}

bool nodeupdate_result(struct nodeupdate *u, const struct nodeupdate_report *r)
{
	struct nodeupdate_want before, after;
	nodeupdate_want(u, &before);
	bool state_changed = u->state != r->state || u->generation != r->generation || u->current != r->current;
	u->state = r->state;
	u->kinds = r->kinds;
	u->current = r->current;
	u->generation = r->generation;
	snprintf(u->reason, sizeof(u->reason), "%s", r->reason ? r->reason : "");
	snprintf(u->os_version, sizeof(u->os_version), "%s", r->os_version ? r->os_version : "");
	/* A reason is one line on the Node (the annotation) and in the log. */
	for (char *p = u->reason; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';

	char what[256];
	kinds_text(u->kinds, what, sizeof(what));
	if (u->current && u->state != u->logged) {
		u->logged = u->state;
		switch (u->state) {
		case NODEUPDATE_WAITING:
			log_notice("in-place update (%s) waits for the Node condition %s with reason %s", what,
				   KUBE_CONDITION_IN_PLACE_UPDATE, KUBE_REASON_READY_FOR_UPDATE);
			break;
		case NODEUPDATE_RUNNING:
			log_notice("in-place update (%s) running%s%s", what, u->os_version[0] ? "; OS version " : "",
				   u->os_version);
			break;
		case NODEUPDATE_SUCCESSFUL:
			log_notice("in-place update (%s) successful", what);
			break;
		case NODEUPDATE_FAILED:
			log_error("in-place update (%s) failed: %s", what, u->reason[0] ? u->reason : "no reason given");
			break;
		case NODEUPDATE_NONE:
			break;
		}
	}
	if (u->current && !u->first_taken) {
		u->first_taken = true;
		if (u->state == NODEUPDATE_RUNNING) {
			u->recheck = true;
			log_notice("in-place update (%s) was running when node-agent started (the update's reboot?): "
				   "asking cloud-config-exec to check it now",
				   what);
		}
	}
	/* The rotations the agent carries out itself, once per update: the
	 * token resync once the executor is past the handshake; the new
	 * client certificate once the executor applied the OSC, whose
	 * gardener-node-agent configuration brings the new CA bundle (the
	 * agent follows it when the OSC is applied, before this runs), so
	 * that the issued certificate is checked against it. */
	if (u->current && (u->state == NODEUPDATE_WAITING || u->state == NODEUPDATE_FAILED))
		u->tokens_synced = u->cert_asked = false;
	/* The Pods are deleted once per update: any other report starts over. */
	if (u->current && u->state != NODEUPDATE_SUCCESSFUL)
		u->pods_deleted = false;
	bool past_handshake = u->current && (u->state == NODEUPDATE_RUNNING || u->state == NODEUPDATE_SUCCESSFUL);
	if (past_handshake && !u->tokens_synced && (u->kinds & INPLACE_SA_KEY_ROTATION)) {
		u->tokens_synced = true;
		u->resync_tokens = true;
		log_notice("service-account key rotation: re-reading the token Secrets now");
	}
	if (u->current && u->state == NODEUPDATE_SUCCESSFUL && !u->cert_asked &&
	    (u->kinds & INPLACE_NODE_AGENT_CA_ROTATION)) {
		u->cert_asked = true;
		u->ca_pending = true;
		u->renew_cert = true;
		log_notice("certificate authorities rotation: requesting a new client certificate (the current one "
			   "stays in use until the new one is issued and verified)");
	}
	nodeupdate_want(u, &after);
	return memcmp(&before, &after, sizeof(before)) != 0 || state_changed;
}

bool nodeupdate_sweep_wanted(const struct nodeupdate *u)
{
	return u->current && u->state == NODEUPDATE_SUCCESSFUL && !u->ca_pending && nodeupdate_ready(u) &&
	       !u->label_successful && !u->pods_deleted;
}

bool nodeupdate_sweep_go(const struct nodeupdate *u, bool running, bool settled, const char **why)
{
	*why = NULL;
	if (!running)
		return settled && nodeupdate_sweep_wanted(u);
	if (u->label_successful)
		*why = "the Node is labelled update-result=successful already";
	else if (!nodeupdate_ready(u))
		*why = "the Node has neither the condition " KUBE_CONDITION_IN_PLACE_UPDATE " with reason "
		       KUBE_REASON_READY_FOR_UPDATE " nor the label update-result=failed any more";
	else if (u->current && u->state != NODEUPDATE_SUCCESSFUL)
		*why = u->state == NODEUPDATE_FAILED	? "cloud-config-exec reports the update failed"
		       : u->state == NODEUPDATE_RUNNING ? "cloud-config-exec reports an update running"
		       : u->state == NODEUPDATE_WAITING ? "cloud-config-exec reports an update waiting for the drain"
							: "cloud-config-exec reports no in-place update";
	else if (u->ca_pending)
		*why = "a new client certificate is awaited first";
	else if (u->pods_deleted)
		*why = "the Pods were deleted";
	return *why == NULL;
}

bool nodeupdate_pods_deleted(struct nodeupdate *u)
{
	if (u->pods_deleted)
		return false;
	u->pods_deleted = true;
	return true;
}

bool nodeupdate_cert_renewed(struct nodeupdate *u)
{
	if (!u->ca_pending)
		return false;
	u->ca_pending = false;
	log_notice("certificate authorities rotation: the new client certificate is in use");
	return true;
}

void nodeupdate_want(const struct nodeupdate *u, struct nodeupdate_want *w)
{
	*w = (struct nodeupdate_want){};
	if (!u->current)
		return;
	switch (u->state) {
	case NODEUPDATE_NONE:
		return;
	case NODEUPDATE_WAITING:
		w->hold_checksum = true;
		return;
	case NODEUPDATE_RUNNING:
		w->hold_checksum = true;
		/* updateOSInPlace: the version being installed, before the
		 * update command runs; a rolled-back OS is detected with it. */
		if ((u->kinds & INPLACE_OS_VERSION) && u->os_version[0])
			w->updating_os = u->os_version;
		return;
	case NODEUPDATE_FAILED:
		/* patchNodeUpdateFailed. */
		w->hold_checksum = true;
		w->update_result = KUBE_UPDATE_RESULT_FAILED;
		w->failed_reason = u->reason[0] ? u->reason : "in-place update failed";
		return;
	case NODEUPDATE_SUCCESSFUL:
		if (u->ca_pending) {
			w->hold_checksum = true;
			return;
		}
		/* performInPlaceUpdate: labelled only while the Node has the
		 * condition ReadyForUpdate or the label "failed", and only
		 * after deleteRemainingPods (podsweep.h); until then the
		 * update is not over. */
		if (nodeupdate_sweep_wanted(u)) {
			w->hold_checksum = true;
			return;
		}
		if (nodeupdate_ready(u)) {
			w->update_result = KUBE_UPDATE_RESULT_SUCCESSFUL;
			w->failed_reason_remove = true;
			w->updating_os_remove = true;
		}
		return;
	}
}
