/* Did the executor pick up what the agent wrote? cloud-config-exec runs
 * when its path unit sees desired.json change (units/cloud-config-exec.path,
 * PathChanged=), and systemd can miss such a change: one made while the
 * executor still runs is dropped by design (the path unit stops watching
 * while its service is active; systemd/systemd#5770), renames have been
 * missed (#20934), and 056 saw Debian 13's systemd 257 under load leave a
 * new desired.json alone with the path unit "waiting". The timer would
 * repair it within 10-12 min. The agent cannot start the executor (its
 * sandbox has no D-Bus); it can write desired.json again. So when the
 * generation it wrote last is not in result.json PICKUP_FIRST_MS later, it
 * rewrites the same bytes (a new inode: the path unit sees a rename again),
 * then again after the back-off (lib/base/backoff.h: 30 s doubling every
 * minute up to PICKUP_CAP_MS, full jitter), until result.json
 * names that generation or a later one. A rewrite while the executor is
 * busy costs at most one extra run that finds nothing changed. */
#ifndef NA_AGENT_PICKUP_H
#define NA_AGENT_PICKUP_H

#include <stdbool.h>
#include <stdint.h>

#include "backoff.h"

#define PICKUP_FIRST_MS 15000u
#define PICKUP_CAP_MS (5u * 60u * 1000u)

struct pickup {
	uint64_t want;              /* the generation last written; 0: nothing awaited */
	uint64_t written_ms;        /* when it was written */
	uint64_t next_ms;           /* when to write it again */
	struct backoff nudges;      /* rewrites of this generation so far (attempts) */
};

/* desired.json now holds generation (written now, or found at start). */
void pickup_written(struct pickup *p, uint64_t generation, uint64_t now);
/* result.json names generation (applied or failed: either way, picked up). */
void pickup_result(struct pickup *p, uint64_t generation);
/* True when desired.json is to be written again now (logged); otherwise
 * *next is lowered to the time of the next check. */
bool pickup_due(struct pickup *p, uint64_t now, uint64_t *next);

#endif
