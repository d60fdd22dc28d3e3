/* The pacing duty: holds back an OSC change that would restart units for
 * the Node's reconciliation delay, as gardener-node-agent does
 * (gardener/gardener pkg/nodeagent/controller/operatingsystemconfig/add.go:
 * EnqueueWithJitterDelay and delayer.fetch), so the kubelets of a cluster do
 * not all restart at once.
 *
 * Rules:
 *  - the delay is the Node annotation node-agent.gardener.cloud/
 *    reconciliation-delay (a Go duration); absent or malformed, the last
 *    valid value stays in force (initially 0), as in delayer.fetch; a
 *    malformed value is logged once;
 *  - a first apply (nothing written before) never waits, like GNA's Create
 *    event; neither does a restart request or a key document from the Node:
 *    the agent writes them with the OSC already in force;
 *  - a change that restarts no unit (lib/node/pacing.h: the executor's rules) is
 *    written at once: files no unit depends on, SSH keys (the gardener-user
 *    units are superseded by the executor's own key handling). This goes
 *    beyond GNA, which delays every change of osc.yaml;
 *  - otherwise the change waits until delay after it was first seen; a newer
 *    OSC arriving meanwhile keeps that time (the workqueue's AddAfter keeps
 *    the earliest), and is judged against what is in force: a key change on
 *    top of a held unit change waits with it (the OSC is one document);
 *  - a restart of the agent during the wait starts it again (GNA would apply
 *    at once: we prefer the spread).
 *
 * Serial mode (the Secret's reconciliation.osc.node-agent.gardener.cloud/
 * serial: "true", agent/serial.h): a change that restarts units waits for
 * the pool's serial Lease instead of the delay (GNA enqueues Secret updates
 * without delay in serial mode: add.go EnqueueWithJitterDelay), and is
 * written once this node holds it; the Lease is wanted until the Node shows
 * the checksum that was written with it (GNA releases after its Node patch,
 * reconciler.go). The other rules stay: a first apply and a change that
 * restarts nothing never wait for the Lease. */
#ifndef NA_AGENT_ROLLOUT_H
#define NA_AGENT_ROLLOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "pacing.h"

struct rollout {
	uint64_t delay_ms;
	char bad_value[PACING_DELAY_VALUE_MAX + 1]; /* last malformed value logged */
	char decided[65];           /* checksum last judged */
	bool held;                  /* decided is waiting */
	uint64_t held_since;        /* monotonic ms the wait started (kept for newer OSCs) */
	uint64_t release_at;        /* monotonic ms */
	bool due_told;              /* rollout_due() said so for this hold */
	/* Serial mode. */
	bool serial;                /* the Secret asks for it */
	bool lock;                  /* this node holds the serial Lease */
	bool lock_wait;             /* decided is held for the Lease, not the delay */
	char applying[65];          /* written with the Lease; wanted until applied */
	char holder[64];            /* who holds it meanwhile ("" unknown) */
	time_t holder_until;        /* wall clock, its expiry */
};

/* The annotation's value (NULL: absent). Only records: safe in callbacks. */
void rollout_set_delay(struct rollout *r, const char *value);

/* The Secret's serial annotation. A change of mode judges a held change
 * again. Only records. */
void rollout_set_serial(struct rollout *r, bool serial);

/* Whether this node holds the serial Lease now, and who else does
 * (holder NULL/"": nobody known; until: wall clock of its expiry). */
void rollout_set_lock(struct rollout *r, bool held, const char *holder, time_t until);

/* Does a change need the serial Lease now? applied: the checksum the Node
 * shows as applied (NULL: none); once it is the one written with the Lease,
 * the Lease is no longer needed. */
bool rollout_lock_wanted(struct rollout *r, const char *applied);

/* May the OSC osc (checksum, len bytes) replace in_force (NULL: nothing
 * written yet) in the desired state now? Parses both with state_dir as
 * osc_parse()'s forbidden prefix (both passed the agent's checks before).
 * Judged once per checksum and logged then. */
bool rollout_admit(struct rollout *r, const char *in_force, size_t in_force_len, const char *osc, size_t len,
		   const char *checksum, const char *state_dir, uint64_t now);

/* When the held change is due (monotonic ms), UINT64_MAX when none or
 * once rollout_due() reported it. */
uint64_t rollout_deadline(const struct rollout *r);

/* True once per hold, when its time has come: the owner then calls
 * rollout_admit() again (by writing the desired state). */
bool rollout_due(struct rollout *r, uint64_t now);

/* For STATUS: "; OSC 0123456789ab held until 02:31:07 UTC (reconciliation
 * delay 120 s)", "; OSC 0123456789ab waits for the serial rollout Lease
 * (held by node-2 until 02:41:07 UTC)" or "" when nothing is held. */
void rollout_describe(const struct rollout *r, uint64_t now, char *buf, size_t len);

#endif
