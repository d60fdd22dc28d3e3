/* The hand-over of the desired state to the executor: <state dir>/desired.json
 * (its format is lib/node/desired.h), written only when its content changed, with
 * a generation that bumps on every write, and written again after a backoff
 * when the disk refused it (nothing else may come along to wake the agent).
 *
 * What goes into the document (the OSC in force, keys, restart request,
 * tokens) is the agent's decision (agent.c); this file keeps what was
 * written, so that a change is recognised, and picks it up again from the
 * file after a restart of the agent. */
#ifndef NA_AGENT_HANDOVER_H
#define NA_AGENT_HANDOVER_H

#include <stddef.h>
#include <stdint.h>

#include "backoff.h"
#include "desired.h"
#include "pickup.h"

#define HANDOVER_FILE "desired.json"

struct handover {
	char *key;                  /* desired.json as last written, generation 0 form (to compare) */
	uint64_t generation;        /* of the last write */
	char checksum[65];          /* the OSC checksum last written ("" none) */
	char *osc;                  /* the OSC last written (what is in force), NUL-terminated, or NULL */
	size_t osc_len;
	struct backoff retry;       /* writes failed in a row (disk full, I/O error); set up at the first */
	uint64_t wake_at;           /* when the failed write is tried again (0: none) */
	struct pickup pickup;       /* has the executor picked up the last write? (pickup.h) */
};

/* Writes d (its generation is ignored: the next one is used) atomically as
 * HANDOVER_FILE below state_fd (state_dir names it in messages) unless it is
 * what was written last, apart from the generation. On success remembers
 * what was written (d->osc is copied unless it is h->osc itself) and logs
 * it at notice level: returns 1, or 0 when nothing changed. On failure logs
 * the error, writes a one-line reason into why (whylen bytes) and returns
 * -errno; a failed write schedules h->wake_at after the back-off (1 s
 * doubling every 2 s up to 30 s, full jitter: lib/base/backoff.h), logged
 * when the failures start and when a write works again. A write starts h->pickup's wait for
 * result.json to name the new generation. */
int handover_write(struct handover *h, int state_fd, const char *state_dir, const struct desired *d, uint64_t now,
		   char *why, size_t whylen);

/* Picks up HANDOVER_FILE from an earlier run: its generation, checksum and
 * OSC, so a restart of the agent does not rewrite it; its generation is
 * awaited from now on like one just written (h->pickup). Its restart request is
 * handed over in restart_id and *restart_units when *restart_units is NULL
 * (the Node's current one is not known yet) and the id fits into
 * restart_id_size bytes. A missing file is no error; an unreadable or
 * invalid one is logged as a warning and ignored. */
void handover_load(struct handover *h, int state_fd, const char *state_dir, char *restart_id, size_t restart_id_size,
		   char ***restart_units, uint64_t now);

/* Writes HANDOVER_FILE again, the same bytes as a new file, for a path unit
 * that missed the last write (pickup.h); a failure is logged. */
void handover_rewrite(int state_fd, const char *state_dir);

/* Forgets what was written (not the OSC in force): the state directory
 * changed, and the next write starts from the one found there. */
void handover_forget(struct handover *h);

/* Removes the temporaries that writes of HANDOVER_FILE killed between
 * creating and renaming left below state_fd, and logs how many. Call only
 * while nobody is writing. */
void handover_remove_temporaries(int state_fd, const char *state_dir);

/* Frees what h owns and zeroes it. */
void handover_done(struct handover *h);

#endif
