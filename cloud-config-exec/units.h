/* The systemd half of an apply: which units change, and doing it.
 *
 * units_plan_compute() is pure: from the last applied OSC, the new one, the
 * files that changed in this apply and the restart requests it decides, per
 * unit, what happens, with the rules of gardener-node-agent's
 * computeUnitDiffs (../shared/notes/gardener.md 4.9) minus its known bugs:
 *
 *  - restart exactly the units that are new, whose definition (content,
 *    enable, command, dropIns, filePaths) changed, or one of whose filePaths
 *    is among the changed files; `command: stop` or `enable: false` stops
 *    instead. Unchanged units are not touched.
 *  - units the agent created (they had `content`) and the OSC dropped are
 *    stopped, disabled and removed with their drop-ins (and the .d directory
 *    when it is empty);
 *  - OS units the OSC only added drop-ins to (no `content`) and then dropped
 *    lose our drop-ins and are restarted; the unit and foreign drop-ins are
 *    never removed (Gardener #10809 / PR #11015);
 *  - restart requests (the Node's worker.gardener.cloud/restart-systemd-services
 *    annotation, ".service" optional) are restarted after everything else;
 *  - gardener-user.service and gardener-user.path are superseded by
 *    cloud-config-exec's native key handling: never written, enabled or
 *    started; copies that gardener-node-agent left on disk are stopped and
 *    disabled by units_apply() when running or enabled (never removed).
 *
 * units_apply() carries a plan out below a root directory and, when given a
 * bus, against the system manager (systemd.h). */
#ifndef CCE_UNITS_H
#define CCE_UNITS_H

#include <stdbool.h>
#include <stddef.h>

#include "osc.h"

struct sd_bus;
struct units_plan;

/* Where unit files and drop-ins go, relative to the root. */
#define UNITS_DIR "etc/systemd/system"
/* Default deadline for one systemd job (gardener-node-agent PR #8919). */
#define UNITS_JOB_TIMEOUT_MS_DEFAULT 10000u

/* What happens to a unit; an entry carries a set of these bits. */
enum {
	UNITS_WRITE = 1 << 0,          /* write unit file / drop-ins (new or changed) */
	UNITS_REMOVE = 1 << 1,         /* remove our unit file, drop-ins, empty .d dir */
	UNITS_REMOVE_DROPINS = 1 << 2, /* remove drop-ins of ours the OSC no longer lists */
	UNITS_ENABLE = 1 << 3,         /* EnableUnitFiles */
	UNITS_DISABLE = 1 << 4,        /* DisableUnitFiles */
	UNITS_RESTART = 1 << 5,        /* RestartUnit, waited for */
	UNITS_STOP = 1 << 6,           /* StopUnit, waited for */
	UNITS_REQUESTED = 1 << 7,      /* entry comes from a restart request */
	UNITS_SUPERSEDED = 1 << 8,     /* gardener-user.{service,path}: left alone */
	UNITS_HELD = 1 << 9,           /* held back (units_plan_compute_held()): nothing
					* written, removed, enabled, restarted or stopped */
	UNITS_DRIFT = 1 << 10,         /* its files on disk differ from the OSC, which did
					* not change it (units_plan_add_drift()) */
	UNITS_MODE = 1 << 11,          /* only the mode or owner of its files is wrong: fixed,
					* no reload, no restart (units_plan_add_drift()) */
};

struct units_plan_entry {
	const char *unit;           /* unit name, owned by the plan */
	unsigned actions;           /* UNITS_* bits; 0: nothing to do */
	const char *reason;         /* one phrase, owned by the plan: "new unit",
				     * "content changed", "drop-in 10-a.conf changed",
				     * "file /etc/a changed", "dropped by the OSC", ... */
	const struct osc_unit *old; /* definition in the old OSC (NULL when none; a
				     * copy owned by the plan when widened by owned
				     * paths, see units_plan_compute_owned()); */
	const struct osc_unit *new; /* in the new one; borrowed from the OSCs
				     * given to units_plan_compute(), which must
				     * outlive the plan */
	unsigned held;              /* UNITS_HELD entries: the actions held back (0:
				     * the unit was unchanged anyway) */
};

/* Computes the plan. old: the last applied OSC or NULL (first apply: every
 * unit is new); new: the OSC to apply; changed_files: NULL-terminated OSC
 * file paths whose content or mode changed in this apply (may be NULL);
 * restart_requests: unit names from the Node's
 * worker.gardener.cloud/restart-systemd-services annotation (".service"
 * suffix optional, as gardener-node-agent >= 1.92), may be NULL; names that
 * are not valid unit names even with ".service" appended get an entry with no
 * action and the reason "invalid unit name". Pure: no I/O, no logging.
 * Returns 0 and the plan in *ret (release with units_plan_free()), -ENOMEM. */
int units_plan_compute(const struct osc *old, const struct osc *new, char *const *changed_files,
		       char *const *restart_requests, struct units_plan **ret);

/* As units_plan_compute(), and owned: the unit files and drop-ins that
 * cloud-config-exec recorded as created (absolute paths as units_owned_paths()
 * returns them; other paths are ignored; may be NULL). Those that old does
 * not account for, typically written by an apply that failed or was
 * interrupted before it was recorded as applied, are treated as if old had
 * listed them: a unit file as a unit we created, a drop-in as ours. So they
 * are removed (or their OS unit restarted) once the OSC no longer has them,
 * instead of leaking (the units' side of Gardener #10972); such entries carry
 * " (left by an unfinished apply)" in their reason. */
int units_plan_compute_owned(const struct osc *old, const struct osc *new, char *const *changed_files,
			     char *const *restart_requests, char *const *owned, struct units_plan **ret);

/* As units_plan_compute_owned(), with every unit of the OSCs held back
 * (when hold is non-NULL, a phrase such as "an image file was not
 * written"): each non-request entry other than the superseded ones becomes
 * UNITS_HELD alone, its planned actions kept in `held` and its reason
 * prefixed "held back (<hold>): ", so units_apply() writes, removes,
 * enables, restarts and stops nothing of the OSC's and repairs no drift,
 * as gardener-node-agent returns before applyChangedUnits,
 * removeDeletedUnits, the daemon-reload and executeUnitCommands when
 * applyChangedImageRefFiles fails (gardener/gardener
 * pkg/nodeagent/controller/operatingsystemconfig/reconciler.go). Restart
 * requests (the Node's annotation, a separate controller in Gardener:
 * controller/node) are still planned, and restart what is there. hold NULL:
 * units_plan_compute_owned(). */
int units_plan_compute_held(const struct osc *old, const struct osc *new, char *const *changed_files,
			    char *const *restart_requests, char *const *owned, const char *hold,
			    struct units_plan **ret);

/* The disk's part of the plan (reads, writes nothing): an entry of an
 * unchanged unit whose unit file or drop-ins below rootfd do not hold what
 * the OSC says (edited, removed: not the mode, which units_apply() fixes
 * without a restart) gets UNITS_WRITE, UNITS_DRIFT and its job (restart,
 * or stop when the OSC stops it), reason "files on disk differ from the
 * OSC": what units_apply() would find writing them, decided before, so
 * that "check" prints it; one whose files hold the right bytes under
 * another mode or owner gets UNITS_MODE alone (units_apply() fixes it
 * without a restart). Held, requested and superseded entries are left
 * alone. Returns 0, -ENOMEM. */
int units_plan_add_drift(struct units_plan *plan, int rootfd);

/* The unit files and drop-ins that applying osc writes, as sorted absolute
 * paths ("/etc/systemd/system/a.service",
 * "/etc/systemd/system/b.service.d/10-x.conf"; gardener-user units are never
 * written). The executor adds them to its ownership record BEFORE
 * units_apply() and, after a successful apply, keeps exactly these, then
 * passes the record to units_plan_compute_owned(). Returns 0 and a
 * NULL-terminated list (never NULL; strv_free) in *ret, or -ENOMEM. */
int units_owned_paths(const struct osc *osc, char ***ret);

/* Entries in a stable order: units of the new OSC by name, then dropped units
 * by name, then restart requests in the order given. Every unit of either OSC
 * has exactly one non-request entry. */
size_t units_plan_size(const struct units_plan *plan);
const struct units_plan_entry *units_plan_get(const struct units_plan *plan, size_t i);
/* The non-request entry of unit (requested=false) or its request entry
 * (requested=true); NULL when there is none. */
const struct units_plan_entry *units_plan_find(const struct units_plan *plan, const char *unit,
						bool requested);

/* One-line summary, e.g. "restart: a.service b.service; stop: c.service;
 * remove: d.service; superseded: gardener-user.service; held back:
 * kubelet.service; unchanged: 12"
 * (only the non-empty groups; "nothing to do" when all are empty). Returns 0
 * and a malloc'ed string in *ret, or -ENOMEM. */
int units_plan_format(const struct units_plan *plan, char **ret);

/* The bits as words: "write,enable,restart" ("none" for 0). Returns a
 * pointer to buf (size >= 96). */
const char *units_actions_to_string(unsigned actions, char *buf, size_t size);

/* Applies plan below rootfd (a directory fd for "/", or a scratch root):
 *  1. stops, resets the failed state of (a process killed by the stop
 *     would leave it "failed"), and disables the dropped units we created;
 *  2. writes unit files (/etc/systemd/system/<name>, 0644) and drop-ins
 *     (<name>.d/<dropin>, 0644, dir 0755) only where the content differs,
 *     atomically via lib/base/fsx.h, for every unit of the new OSC (so drift is
 *     repaired: a unit whose file had to be rewritten although the OSC did
 *     not change it is restarted too), removes dropped files and drop-ins;
 *  3. EnableUnitFiles (force) / DisableUnitFiles for new and changed units
 *     (the enablement of unchanged units is not re-asserted);
 *  4. one daemon-reload (D-Bus Reload), only when something on disk changed;
 *  5. restarts / stops the planned units, waiting for each job's JobRemoved
 *     signal at most job_timeout_ms (0: UNITS_JOB_TIMEOUT_MS_DEFAULT); jobs
 *     run in parallel;
 *  6. then the restart requests, the same way; their failures are logged
 *     as warnings but do not fail the apply (as gardener-node-agent: a bad
 *     name in the Node's annotation must not block the OSC).
 * bus may be NULL: files only (scratch-root tests, steps 1, 3-6 skipped).
 * A failed unit does not stop the others: every failure is logged once (with
 * UNIT= and JOB_RESULT= fields) and collected.
 *
 * A job that misses its deadline is left queued in systemd (it is not
 * cancelled); it is reported as failed. The unit cloud-config-exec itself
 * runs in is never restarted or stopped by it (logged, skipped).
 *
 * Returns 0 on success, -EIO when at least one unit failed, another -errno
 * when the bus or the root failed (-ENOMEM: nothing is returned).
 * ret_changed_units (may be NULL) receives, on success and on every failure
 * but -ENOMEM, the NULL-terminated sorted names of the units whose files were
 * written or removed or that were restarted or stopped, so far (never NULL;
 * caller frees with strv_free). ret_error (may be NULL) receives on failure
 * one malloc'ed line naming each failed unit and what failed, e.g.
 * "kubelet.service: restart failed (job result 'failed'); a.service: stop
 * timed out after 10000 ms". Each unit's failure is logged once here (with a
 * UNIT= field); the caller records ret_error rather than logging it again. */
int units_apply(const struct units_plan *plan, int rootfd, struct sd_bus *bus, unsigned job_timeout_ms,
		char ***ret_changed_units, char **ret_error);

/* gardener-user.{service,path}, gardener-node-agent.service and
 * gardener-node-init.service: units of the OSC that cloud-config-exec never
 * writes, enables or starts (superseded; see units.c). */
bool units_is_superseded(const char *name);

/* As units_apply(), and also (each may be NULL; same lifetime rules as
 * ret_changed_units) the sorted names of the units whose restart, resp.
 * stop job this apply ran and that ended "done" (restart requests and
 * superseded units included): what node-agent reports as Node Events. */
int units_apply_report(const struct units_plan *plan, int rootfd, struct sd_bus *bus, unsigned job_timeout_ms,
		       char ***ret_changed_units, char ***ret_restarted, char ***ret_stopped, char **ret_error);

void units_plan_free(struct units_plan *plan);

static inline void units_plan_freep(struct units_plan **p)
{
	if (*p)
		units_plan_free(*p);
}
#define _cleanup_units_plan_ __attribute__((cleanup(units_plan_freep)))

#endif
