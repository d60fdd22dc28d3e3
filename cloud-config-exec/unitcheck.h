/* The SystemdUnitsReady Node condition, computed the way gardener-node-agent's
 * systemdunitcheck controller does (gardener/gardener
 * pkg/nodeagent/controller/systemdunitcheck/reconciler.go, #14496, #14733;
 * the type in pkg/apis/config/nodeagent/v1alpha1/types.go
 * ConditionTypeSystemdUnitsReady; gardenlet reads it in
 * pkg/gardenlet/controller/shoot/care/health.go CheckSystemdUnitsReady):
 *
 *  - the units checked are the OSC's (spec.units merged with
 *    status.extensionUnits), sorted by name; a unit counts as enabled when
 *    its `enable` says so, else when it carries configuration (content or
 *    drop-ins). gardener-node-agent decides this default on the spec unit
 *    before the merge; here the merged unit decides (osc.h merges on parse).
 *  - per unit: LoadUnit refused and enabled -> "<u>: not loaded"; active
 *    but not enabled -> "<u>: active but should be disabled"; failed and
 *    enabled -> "<u>: failed"; activating/deactivating (not sub-state
 *    auto-restart) for at least the stuck threshold (5 min) -> "<u>: stuck
 *    in <state> for <Go duration>", shorter -> progressing "<u>: <state> for
 *    <d>"; inactive and enabled -> "<u>: inactive but should be enabled",
 *    unless sub-state dead and the service is Type=oneshot or triggered by
 *    another unit (timer, path).
 *  - any unhealthy -> status False, reason UnhealthyUnits, messages joined
 *    by "; "; else any progressing -> True, ProgressingUnits; else True,
 *    AllUnitsHealthy, "All systemd units from the operating system config
 *    are running as expected."
 * Units cloud-config-exec supersedes (units_is_superseded()) are not checked:
 * it never starts them. gardener-node-agent fails its whole check when a
 * non-service unit is inactive (it asks every such unit for Service.Type);
 * here a non-service unit simply is not oneshot. */
#ifndef CCE_UNITCHECK_H
#define CCE_UNITCHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "osc.h"
#include "result.h"
#include "systemd.h"

struct sd_bus;

/* gardener-node-agent's controllers.systemdUnitCheck.stuckThreshold default. */
#define UNITCHECK_STUCK_USEC (5ull * 60ull * 1000000ull)

/* One unit's observation: loaded false when LoadUnit refused it (the rest
 * is then ignored). */
struct unitcheck_observed {
	bool loaded;
	struct systemd_unit_probe probe;
};

/* Is unit u "enabled" for the check (rules above)? */
bool unitcheck_unit_enabled(const struct osc_unit *u);

/* Pure: the condition for osc's units given one observation per unit of
 * osc->units (same index; superseded units' entries are ignored), now and
 * the stuck threshold in CLOCK_REALTIME microseconds. Writes ret (present,
 * ready, reason, a malloc'ed message cut to RESULT_CONDITION_MESSAGE_MAX
 * bytes, checked_at = now in seconds). Returns 0 or -ENOMEM. */
int unitcheck_evaluate(const struct osc *osc, const struct unitcheck_observed *obs, uint64_t now_usec,
		       uint64_t stuck_usec, struct result_units_ready *ret);

/* Go's time.Duration.String() of whole seconds: "0s", "45s", "6m0s",
 * "1h2m3s". Returns buf. */
const char *unitcheck_format_duration(uint64_t seconds, char *buf, size_t size);

/* Probes osc's units on bus and evaluates. A bus failure other than a
 * refused LoadUnit is returned (-errno, logged once here); the caller then
 * reports no condition. */
int unitcheck_run(struct sd_bus *bus, const struct osc *osc, struct result_units_ready *ret);

#endif
