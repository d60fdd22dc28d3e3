/* Merging the managed SSH keys of one user into an authorized_keys file.
 *
 * Pure: no I/O, no logging. The caller classifies the existing file's lines
 * (fingerprint of each parseable key line) and hands over the keys it wants
 * to manage; keymerge_compute() decides what stays, what goes and what the
 * new file is:
 *   - a line is "ours" when its key's fingerprint is one the executor managed
 *     before (state), dropped while the file could not be rewritten (the
 *     state's stale keys), or manages now; ours are replaced by the rendering of
 *     the wanted keys, everything else is kept verbatim and in order (in
 *     exclusive mode everything else is dropped, like Gardener's overwrite);
 *     ownership is remembered by fingerprint in the executor's own state,
 *     never by a marker comment the user could forge;
 *   - wanted keys whose expiry has passed are dropped;
 *   - the shrink guard: when the previously managed, still valid set is
 *     non-empty and the new valid set is empty, or smaller by more than
 *     max_shrink of the previous count, the new set is refused and the
 *     previous valid keys stay in force, unless ssh_access is false (the
 *     control plane disabled SSH explicitly). */
#ifndef CCE_KEYMERGE_H
#define CCE_KEYMERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "state.h"

struct keymerge_line {
	const char *text;           /* the line without its newline */
	size_t len;
	const char *fingerprint;    /* NULL when the line is not a parseable key */
};

struct keymerge_params {
	bool exclusive;
	bool keys_only;             /* unmanaged lines are kept only if they are keys */
	bool ssh_access;
	double max_shrink;          /* 0..1 */
	time_t now;
};

struct keymerge_result {
	char *content;              /* the new file (each line ends in '\n'), malloc'ed */
	size_t len;
	struct state_key *managed;  /* the managed set now in force (deep copies) */
	size_t n_managed;
	bool refused;               /* the shrink guard kept the previous set */
	unsigned added, dropped, expired, unmanaged_kept, unmanaged_dropped;
};

/* Splits text into lines (pointers into text; fingerprints NULL). Returns
 * the number of lines and a malloc'ed array in *ret. */
int keymerge_split(const char *text, size_t len, struct keymerge_line **ret);

/* prev: the previously managed keys (NULL or empty: none); want[0..n_want):
 * the keys to manage, deduplicated by fingerprint by the callee (first wins).
 * Fills *ret (release with keymerge_result_done()). */
int keymerge_compute(const struct keymerge_line *lines, size_t n_lines, const struct state_user *prev,
		     const struct state_key *want, size_t n_want, const struct keymerge_params *p,
		     struct keymerge_result *ret);
void keymerge_result_done(struct keymerge_result *r);

/* The shrink rule alone (exposed for tests): true when going from n_prev
 * valid managed keys to n_new is refused. */
bool keymerge_shrink_refused(size_t n_prev, size_t n_new, double max_shrink, bool ssh_access);

#endif
