/* The apply result: what cloud-config-exec reports back to node-agent.
 *
 * cloud-config-exec writes <exec state dir>/result.json (root-owned, 0644,
 * atomically) at the end of every run; node-agent reads it and annotates the
 * Node only when "success" is true for the checksum it wrote.
 *
 *   {"version": 1, "checksum": "<hex>", "generation": <uint>,
 *    "success": true|false, "failedStep": "files"|"units"|"keys"|... | absent,
 *    "error": "<one line>" | absent, "changedUnits": ["a.service", ...],
 *    "restartId": "<id of the restart request that was executed>" | absent,
 *    "restartedUnits": ["a.service", ...] | absent,
 *    "stoppedUnits": ["b.service", ...] | absent,
 *    "unitsReady": {"status": "True"|"False", "reason": "<CamelCase>",
 *                   "message": "<one line>", "checkedAt": <unix seconds>} | absent,
 *    "inPlaceUpdate": {"kinds": ["os-version", ...], "state": "waiting"|"running"|
 *                      "successful"|"failed", "reason": "<one line>" | absent,
 *                      "osVersion": {"desired": "...", "running": "..."} | absent} | absent,
 *    "finishedAt": <unix seconds>}
 *
 * Strict both ways: unknown or duplicate keys and wrong types are errors.
 * Required: version, checksum, generation, success, finishedAt. checksum is
 * 64 lowercase hex digits, or "" on a failure before the desired state could
 * be read. With success true, failedStep and error are absent; with success
 * false, failedStep ([a-z0-9-], 1..RESULT_STEP_MAX bytes) is required and
 * error optional. changedUnits holds 0..RESULT_CHANGED_UNITS_MAX distinct
 * valid unit names; restartId is 1..DESIRED_RESTART_ID_MAX bytes without
 * control characters. generation and finishedAt are at most 2^53 - 1.
 *
 * Added compatibly (all optional; a reader that finds them absent treats
 * the result as before): restartedUnits and stoppedUnits (the units this
 * apply's systemd jobs restarted or stopped; same rules as changedUnits),
 * for the agent's Node Events; unitsReady, the SystemdUnitsReady condition
 * cloud-config-exec computed at the end of the run (reason 1..
 * RESULT_REASON_MAX of [A-Za-z], message a line of at most
 * RESULT_CONDITION_MESSAGE_MAX bytes, checkedAt at most 2^53 - 1), which the
 * agent patches into the Node's status (agent/conditions.h).
 *
 * inPlaceUpdate (GEP-31, lib/node/inplace.h), present while the OSC being
 * applied is an in-place update (inplace_classify() found kinds) and after
 * it ended, until an OSC without in-place kinds is applied:
 *  - kinds: 1..INPLACE_N_KINDS distinct names of inplace_kind_name(), the
 *    kinds still to do when the state is waiting/running, all of them once
 *    successful/failed;
 *  - state: "waiting": the Node is not ReadyForUpdate (desired.json
 *    inPlaceUpdate.readyForUpdate not true). The executor then applies
 *    nothing of the OSC, exactly as gardener-node-agent returns from
 *    Reconcile before applying files and units (reconciler.go: "Node is not
 *    ready for in-place update"); only what other controllers of
 *    gardener-node-agent do goes on: SSH keys and token sync. The result
 *    is success false with failedStep "inplace-waiting": the checksum is
 *    NOT applied, and node-agent must not set the checksum annotation
 *    (Gardener sets checksum/cloud-config-data only at the end of a
 *    completed Reconcile) but also must not count it as a failure.
 *    "running": the executor is in the middle (the OS update command ran
 *    and the reboot is pending): success false, failedStep
 *    "inplace-os-update". "successful": everything done, success true
 *    (node-agent sets update-result=successful). "failed": success false,
 *    failedStep "inplace-<step>", with reason (node-agent sets
 *    update-result=failed and the machine update-failed-reason annotation
 *    to reason);
 *  - reason: required with "failed", absent otherwise; a line of at most
 *    RESULT_ERROR_MAX bytes, the text gardener-node-agent writes, e.g.
 *    OS update might have failed and rolled back to the previous version.
 *    Desired version: "1592.2", Current version: "1592.1";
 *  - osVersion: with kind os-version, the desired and the running version
 *    (1..INPLACE_VERSION_MAX printable bytes without space, running may be
 *    "" when unreadable); node-agent writes desired to the annotation
 *    node-agent.gardener.cloud/updating-operating-system-version when the
 *    state is running.
 *
 * Pure functions: no I/O, no logging. */
#ifndef NA_RESULT_H
#define NA_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define RESULT_VERSION 1
#define RESULT_MAX (1u << 20)
#define RESULT_STEP_MAX 32
#define RESULT_ERROR_MAX 1024
#define RESULT_CHANGED_UNITS_MAX 1024
#define RESULT_REASON_MAX 32
#define RESULT_CONDITION_MESSAGE_MAX 4096

/* The SystemdUnitsReady condition as the executor computed it. */
struct result_units_ready {
	bool present;               /* false: not reported (older executor, no bus) */
	bool ready;                 /* status "True" */
	char reason[RESULT_REASON_MAX + 1];
	char *message;              /* owned; non-NULL when present */
	time_t checked_at;
};

/* The in-place update as the executor reports it. */
struct result_inplace {
	bool present;
	unsigned kinds;             /* INPLACE_* bits, at least one */
	int state;                  /* enum inplace_state */
	char *reason;               /* owned; only with INPLACE_STATE_FAILED (required then) */
	char *os_desired;           /* owned; osVersion.desired, NULL: no osVersion */
	char *os_running;           /* owned; osVersion.running, set with os_desired */
};

struct result {
	char checksum[65];
	uint64_t generation;
	bool success;
	char *failed_step;          /* NULL on success */
	char *error;                /* NULL on success */
	char **changed_units;       /* NULL-terminated, may be NULL */
	char *restart_id;           /* NULL when none */
	char **restarted_units;     /* NULL-terminated, may be NULL */
	char **stopped_units;       /* NULL-terminated, may be NULL */
	struct result_units_ready units_ready;
	struct result_inplace inplace;
	time_t finished_at;
};

/* Serialises r as JSON (pretty-printed, ending in a newline). r->error is
 * written sanitised, so a diagnostic never makes the result unwritable:
 * control characters become spaces and it is cut to RESULT_ERROR_MAX bytes
 * (at a UTF-8 boundary). Every other field must pass result_parse()'s checks
 * (-EINVAL, -EMSGSIZE). Returns 0 with a malloc'ed NUL-terminated buffer in
 * *ret and its length in *ret_len (may be NULL); -ENOMEM. */
int result_format(const struct result *r, char **ret, size_t *ret_len);

/* Parses and checks a result document (rules above). -EINVAL, -EMSGSIZE,
 * -EPROTONOSUPPORT (another version), -ENOMEM; on failure *err (may be NULL)
 * receives a static string naming the field and *ret is untouched. Release
 * with result_done(). */
int result_parse(const char *data, size_t len, struct result *ret, const char **err);

/* Frees what r owns and zeroes it; NULL and a zeroed struct are fine. */
void result_done(struct result *r);

#endif
