/* Pure helpers for paced rollouts (agent/rollout.h): the Node's
 * reconciliation delay and whether an OSC change restarts units.
 *
 * gardener-resource-manager spreads OSC rollouts by writing a delay per node
 * into the Node annotation node-agent.gardener.cloud/reconciliation-delay
 * (gardener/gardener pkg/resourcemanager/controller/node/
 * agentreconciliationdelay/reconciler.go: time.Duration.String(), e.g.
 * "1m23.456s"); gardener-node-agent reads it with time.ParseDuration when
 * the OSC Secret's osc.yaml changes (pkg/nodeagent/controller/
 * operatingsystemconfig/add.go, delayer.fetch). No I/O, no logging. */
#ifndef NA_PACING_H
#define NA_PACING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kube.h"
#include "osc.h"

/* Longer delays are refused (a typo must not freeze a node's OSC). */
#define PACING_DELAY_MAX_MS (24ull * 3600u * 1000u)
#define PACING_DELAY_VALUE_MAX 64

/* Parses a Go duration (time.ParseDuration: "300ms", "-1.5h", "2h45m",
 * "1m23.456789s", "0"; units ns, us, µs, μs, ms, s, m, h) into milliseconds,
 * rounded up; a negative duration is 0 (Go's workqueue AddAfter runs it at
 * once). -EINVAL when malformed, -ERANGE above PACING_DELAY_MAX_MS. */
int pacing_parse_delay(const char *s, uint64_t *ret_ms);

/* The units exempt from restarts: gardener-user.service and
 * gardener-user.path, superseded by cloud-config-exec's own key handling
 * (cloud-config-exec/units.c unit_is_superseded). */
bool pacing_unit_is_exempt(const char *name);

/* Would cloud-config-exec restart or stop a unit when going from old (NULL:
 * first apply) to new? The rules of gardener-node-agent's computeUnitDiffs
 * (pkg/nodeagent/controller/operatingsystemconfig/changes.go) as
 * cloud-config-exec/units.h states them: a unit that is new, dropped, or
 * whose definition (content, enable, command, drop-ins, filePaths) changed,
 * or one of whose filePaths is a file that was added, removed or changed
 * (content, mode, source). Exempt units never count. Returns true with a
 * phrase in why ("unit kubelet.service changed", "file /etc/x (filePaths of
 * kubelet.service) changed"); false when no unit restarts, e.g. a change
 * to SSH keys only. */
bool pacing_restarts_units(const struct osc *old, const struct osc *new, char *why, size_t whylen);

#endif
