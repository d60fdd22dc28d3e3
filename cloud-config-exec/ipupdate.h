/* The executor's steps of an in-place update (GEP-31), after
 * gardener-node-agent's OSC reconciler (gardener/gardener
 * pkg/nodeagent/controller/operatingsystemconfig/reconciler.go: Reconcile,
 * performInPlaceUpdate, updateOSInPlace, GetOSVersion,
 * completeKubeletInPlaceUpdate, performCredentialsRotationInPlace,
 * rebootstrapKubelet; changes.go / osc_changes.go for what is persisted).
 *
 * lib/node/inplace.h classifies the change from the last applied OSC to the
 * new one. The record (state.json "inPlace", state.h) holds the kinds of
 * the OSC being applied, those still to do and the sub-steps finished, so a
 * crash or a reboot in the middle resumes the right step and never repeats
 * a finished one (Gardener persists its changes file the same way and
 * clears each flag when its step completes).
 *
 * The order within one apply (apply.c), as in Gardener's Reconcile:
 *  1. ipu_begin(): the running OS version (os-release below the root), the
 *     kinds (computed once per OSC checksum, then taken from the record),
 *     os-version cleared when the running OS already is the desired one
 *     (Gardener: "If the node-agent has restarted after OS update");
 *  2. while kinds remain and desired.json's inPlaceUpdate.readyForUpdate is
 *     not true: nothing of the OSC is applied (waiting; SSH keys and synced
 *     tokens still are, they are other controllers in Gardener);
 *  3. files; a CPU manager policy change removes
 *     /var/lib/kubelet/cpu_manager_state before the units step (re)starts
 *     the kubelet (applyChangedUnits); units;
 *  4. ipu_kubelet_done(): with kubelet kinds, the kubelet must be healthy
 *     within 5 min (completeKubeletInPlaceUpdate);
 *  5. ipu_finish(): the OS update (updateOSInPlace: the attempt recorded
 *     first, then the command, 5 min; a reboot is pending while the
 *     running OS is not the desired one: state running), then the kubelet's
 *     CA rotation (rebootstrapKubelet, health), then successful. A recorded
 *     attempt for the desired version while the running OS still differs is
 *     a rolled-back update: failed with Gardener's reason, for good (a
 *     terminal error there, until a newer OSC).
 * node-agent-ca-rotation and sa-key-rotation are node-agent's own
 * (requestNewKubeConfigForNodeAgent, triggerTokenResync): the executor
 * reports them and does nothing for them. */
#ifndef CCE_IPUPDATE_H
#define CCE_IPUPDATE_H

#include <stdbool.h>
#include <stddef.h>

#include "apply.h"
#include "inplace.h"
#include "osc.h"
#include "result.h"
#include "state.h"

/* Sub-steps finished (state.h inplace_steps). */
enum {
	IPU_STEP_CPU_STATE_REMOVED = 1u << 0,
	IPU_STEP_KUBELET_REBOOTSTRAPPED = 1u << 1,
};

#define IPU_OS_UPDATE_TIMEOUT_MS (5u * 60 * 1000)   /* reconciler.go OSUpdateRetryTimeout */
#define IPU_OS_UPDATE_RETRY_MS (30u * 1000)         /* OSUpdateRetryInterval */
#define IPU_KUBELET_HEALTH_TIMEOUT_MS (5u * 60 * 1000) /* KubeletHealthCheckRetryTimeout */
#define IPU_KUBELET_HEALTH_INTERVAL_MS (5u * 1000)  /* KubeletHealthCheckRetryInterval */
#define IPU_OS_UPDATE_UNIT "cloud-config-exec-os-update.service"
#define IPU_OS_UPDATE_FILE "os-update.json"         /* in the exec state dir, for the unit */
#define IPU_CPU_MANAGER_STATE "var/lib/kubelet/cpu_manager_state"
#define IPU_REASON_MAX 1024

/* The running OS version as GetOSVersion reads it: /etc/os-release below
 * rootfd (or, when that is a symlink, which fsx_read_at does not follow,
 * /usr/lib/os-release, where os-release(5) says it points). 0; -ENOENT
 * when none can be read or it has no version. */
int ipu_running_os_version(int rootfd, char out[static INPLACE_VERSION_MAX + 1]);

/* Step 1. Updates st's in-place record for the OSC new (checksum) and
 * saves it when it changed. 0 (st->inplace_kinds: the kinds, 0: not an
 * in-place update); -EINVAL when the classification fails (why in err,
 * INPLACE_ERROR_MAX bytes), -errno when saving fails. */
int ipu_begin(int rootfd, int statefd, struct state *st, const struct osc *old, const struct osc *new,
	      const char *checksum, char *err);

/* Fills res->inplace from st (pointers borrow from st and running). */
void ipu_fill_result(const struct state *st, const struct osc *new, const char *running, struct result *res);

/* Step 3 (before the units step): removes the CPU manager state file once.
 * 0; -errno (logged). */
int ipu_before_units(int rootfd, int statefd, struct state *st);

/* Step 4. 0 when there is nothing to wait for or the kubelet became
 * healthy; -ETIMEDOUT/-errno otherwise with st marked failed (Gardener's
 * reason). */
int ipu_kubelet_done(const struct apply_ctx *c, int statefd, struct state *st);

/* Called by ipu_finish() with the attempt recorded (state running), just
 * before the OS update command runs: the caller reports "running" then, as
 * updateOSInPlace sets its annotation before the command (which reboots
 * the node and may end the executor with it). */
typedef void (*ipu_started_fn)(void *data, const struct state *st);

/* Step 5. 0: everything done (state successful); 1: the OS update ran and
 * the reboot is pending (state running); -errno: failed (st marked failed
 * with the reason). started (may be NULL) as above. */
int ipu_finish(const struct apply_ctx *c, int statefd, struct state *st, const struct osc *new, ipu_started_fn started,
	       void *data);

/* The OS update command itself, as updateOSInPlace runs it: command
 * (looked up in a fixed PATH when it has no '/') with args, retried every
 * IPU_OS_UPDATE_RETRY_MS while its output says "network problems" (any
 * case), for at most IPU_OS_UPDATE_TIMEOUT_MS. 0; -errno with why. Used in
 * the executor without systemd and by the verb os-update-run in the unit. */
int ipu_run_os_update(const char *command, char *const *args, char *why, size_t why_size);

/* The verb os-update-run (cloud-config-exec-os-update.service): reads
 * <exec state dir>/os-update.json written by ipu_finish() and runs it.
 * Returns APPLY_EXIT_*. */
int ipu_os_update_verb(int rootfd, const char *exec_state_dir);

#endif
