/* In-place updates (GEP-31), node-agent's half: the drain handshake with
 * machine-controller-manager and the result on the Node.
 *
 * cloud-config-exec classifies an OSC change (lib/node/inplace.h) and, for
 * an in-place one, reports in result.json that it waits ("waiting") until
 * desired.json says the Node is ready for the update. machine-controller-
 * manager drains the node and then sets the Node condition InPlaceUpdate
 * with the reason ReadyForUpdate; the agent sees it through its Node watch
 * (no polling) and writes desired.json with readyForUpdate true. The
 * executor runs the steps ("running") and ends "successful" or "failed";
 * the agent then patches the Node as gardener-node-agent does (gardener/
 * gardener pkg/nodeagent/controller/operatingsystemconfig/reconciler.go
 * patchNodeUpdateSuccessful, patchNodeUpdateFailed, updateOSInPlace):
 *
 * - successful: label node.machine.sapcloud.io/update-result=successful,
 *   annotations node.machine.sapcloud.io/update-failed-reason and
 *   node-agent.gardener.cloud/updating-operating-system-version removed;
 *   only while the Node still has the ReadyForUpdate condition or the label
 *   "failed" (performInPlaceUpdate's guard), so a label machine-controller-
 *   manager removed after the update is not put back; and only once the
 *   Pods remaining on the Node were deleted (podsweep.h);
 * - failed: the label "failed" and the reason in the update-failed-reason
 *   annotation (where Gardener puts it); the executor retries, a later
 *   success replaces both;
 * - an OS update running: the updating-operating-system-version annotation
 *   with the version it installs (set before the update command runs, as
 *   updateOSInPlace does).
 *
 * A node-agent CA rotation (kind node-agent-ca-rotation) asks the
 * credentials duty for a new client certificate, checked against the CA
 * bundle in force, the old one in use until then (performCredentials
 * RotationInPlace, requestNewKubeConfigForNodeAgent); "successful" goes on
 * the Node only once the new certificate is in use. A service-account key
 * rotation (sa-key-rotation) re-reads every token Secret at once
 * (triggerTokenResync).
 *
 * Everything is derived again from the Node and result.json after a
 * restart: nothing to persist. The duty does no I/O; the agent wires it to
 * the Node watch, result.json, desired.json and the Node patch. */
#ifndef NA_AGENT_NODEUPDATE_H
#define NA_AGENT_NODEUPDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inplace.h"
#include "kube.h"

#define NODEUPDATE_REASON_MAX 1024
#define NODEUPDATE_VERSION_MAX 128

enum nodeupdate_state {
	NODEUPDATE_NONE,            /* no in-place update reported */
	NODEUPDATE_WAITING,         /* the executor waits for readyForUpdate */
	NODEUPDATE_RUNNING,
	NODEUPDATE_SUCCESSFUL,
	NODEUPDATE_FAILED,
};

/* What result.json reports about the in-place update. Strings are borrowed
 * for the call. */
struct nodeupdate_report {
	enum nodeupdate_state state;
	unsigned kinds;             /* INPLACE_* bits (lib/node/inplace.h) */
	const char *reason;         /* with FAILED: why (NULL: none given) */
	const char *os_version;     /* the OS version being installed, or NULL */
	uint64_t generation;        /* of the result */
	bool current;               /* the result is for the desired state written last */
};

/* What the Node should show (for the Node patch, annotate.h): NULL fields
 * have no opinion; the *_remove flags ask for the annotation's removal. */
struct nodeupdate_want {
	const char *update_result;      /* label value */
	const char *failed_reason;      /* annotation value */
	bool failed_reason_remove;
	const char *updating_os;        /* annotation value */
	bool updating_os_remove;
	bool hold_checksum;             /* the checksum annotation waits (update not over) */
};

struct nodeupdate {
	/* The Node as last seen by the watch. */
	bool ready_for_update;
	bool label_failed;
	bool label_successful;        /* update-result=successful already on the Node */
	/* The executor's report, as last read. */
	enum nodeupdate_state state;
	unsigned kinds;
	bool current;
	uint64_t generation;
	char reason[NODEUPDATE_REASON_MAX + 1];
	char os_version[NODEUPDATE_VERSION_MAX + 1];
	enum nodeupdate_state logged;   /* the state last logged */
	/* Side effects, once per update (again only after the executor
	 * waited or failed in between: a new update, a retry; or after an
	 * agent restart): the token resync when the executor is past the
	 * handshake (running or successful), the new certificate when it is
	 * successful (nodeupdate.c says why). */
	bool tokens_synced;
	bool cert_asked;
	bool ca_pending;              /* a new certificate asked for, not in use yet */
	bool pods_deleted;            /* the Pods remaining on the Node were deleted
	                               * for this update (podsweep.h) */
	bool first_taken;             /* a current report was taken since the start */
	bool recheck;                 /* for the agent: have the executor run now (a
	                               * rewrite of desired.json): an update was
	                               * running when the agent started */
	bool resync_tokens;           /* for the agent: re-read the token Secrets now */
	bool renew_cert;              /* for the agent: ask for a new client certificate now */
};

/* The report for result.json's inPlaceUpdate (r may be NULL: none) of a
 * result that is (current) or is not for the desired state written last.
 * Strings point into r. Pure. */
struct result;
void nodeupdate_report_from(const struct result *r, bool current, struct nodeupdate_report *ret);

/* Records the Node (NULL: deleted or absent). Returns true when the
 * handshake's answer (nodeupdate_ready()) changed; logs that change. */
bool nodeupdate_node(struct nodeupdate *u, const struct kube_node *k);

/* Records the executor's report. Returns true when it changed what the
 * Node should show; logs the transitions and sets resync_tokens /
 * renew_cert when a rotation asks for it (once per update), and recheck
 * when the first current report since the start says "running": the
 * executor stopped for the OS update's reboot, and nothing else starts it
 * soon after the boot (its path unit waits for a change of desired.json,
 * its timer for OnBootSec=), while gardener-node-agent reconciles as soon
 * as it is started again. */
bool nodeupdate_result(struct nodeupdate *u, const struct nodeupdate_report *r);

/* The new client certificate is in use: a held "successful" may go on the
 * Node. Returns true when one was held. */
bool nodeupdate_cert_renewed(struct nodeupdate *u);

/* Whether the Pods remaining on the Node are to be deleted now (podsweep.h):
 * the executor's current report is "successful", no new certificate is
 * awaited, the Node has the condition ReadyForUpdate or the label "failed",
 * not the label "successful", and they were not deleted for this update
 * yet (performInPlaceUpdate's guard before deleteRemainingPods). The label
 * "successful" waits for it (nodeupdate_want()). Pure. */
bool nodeupdate_sweep_wanted(const struct nodeupdate *u);

/* The sweep's go (podsweep_want()), given whether one is running and
 * whether the desired state is settled: node-agent wrote desired.json in
 * this run from the OSC it received, or found it unchanged. One not running
 * starts when nodeupdate_sweep_wanted() and settled: a result that is
 * "current" for the file an earlier run left (after the update's reboot)
 * says nothing yet about this run's OSC, tokens and Node, and the first
 * write of this run makes it stale at once. One running goes on while the
 * result is not current (a later write of desired.json, e.g. the token
 * Secrets read after a restart: the executor reports on it in a moment)
 * and stops only for the update's own reasons: the Node moved on (no
 * ReadyForUpdate condition nor label "failed" any more), it is labelled
 * "successful" already, the executor reports another state for the newest
 * desired state, or a new client certificate is awaited; *why says which
 * (NULL when it goes on). Pure. */
bool nodeupdate_sweep_go(const struct nodeupdate *u, bool running, bool settled, const char **why);

/* The Pods were deleted: the label may go on the Node. Returns true when
 * that changed what the Node should show. */
bool nodeupdate_pods_deleted(struct nodeupdate *u);

/* desired.json's inPlaceUpdate.readyForUpdate: the Node has the condition
 * InPlaceUpdate with the reason ReadyForUpdate, or the label update-result
 * "failed" (gardener retries a failed update without a new handshake:
 * reconciler.go Reconcile, "will continue retrying the update"). Pure. */
bool nodeupdate_ready(const struct nodeupdate *u);

/* What the Node should show now. Pure. */
void nodeupdate_want(const struct nodeupdate *u, struct nodeupdate_want *w);

#endif
