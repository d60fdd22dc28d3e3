/* Revocation that sticks: the node's OpenSSH KRL (lib/ssh/krl.h), which sshd
 * checks before any other key source through `RevokedKeys` in the sshd
 * drop-in, for keys node-agent serves and for copies it never wrote (a
 * user's own authorized_keys, root's, a break-glass file).
 *
 * Files, in <execStateDir> (root-owned 0755, /var/lib/cloud-config-exec):
 *   revoked-keys.krl  the KRL sshd reads (0644: sshd's monitor reads it as
 *                     root, ssh-keygen -Q as anyone). Not under /etc/ssh:
 *                     it is state the executor rewrites, not configuration,
 *                     and the state directory already is the executor's own
 *                     root-only-writable place next to the key snapshot.
 *   revocations       why each entry is there (0600), one line
 *                     "SHA256:... <reason> <unix time revoked>" behind the
 *                     header "# cloud-config-exec revocations v2 krl-sha256
 *                     <KRL written last> <the one before it, or ->" (v1,
 *                     without the digests, is read too).
 *
 * What goes in (reasons):
 *   explicit  an entry of a key document with "revoked": true (keydoc.h);
 *   dropped   a key the executor managed for some user before this run and
 *             manages for nobody now: the Gardener key that rotated out
 *             (the previous-previous key), a key-document entry removed.
 *             The managed set follows the desired keys even when a home
 *             could not be written (sshkeys.h), so a key is revoked in the
 *             run that drops it, whatever the login user did to block the
 *             rewrite of their authorized_keys;
 *   expired   a key-document key whose `until` passed (managed before or
 *             never), or a managed key that expired;
 *   kept      a hash found in the previous KRL without a record (the
 *             records were lost): kept, the KRL never shrinks by accident;
 *   operator  a key in a file of /etc/node-agent/revoked-keys.d
 *             (REVOKE_OPERATOR_DIR, revlist.h): the operator's revocation
 *             on this node, merged by every run.
 * A key still granted and valid for some user is never revoked as dropped
 * or expired (the KRL is global: it would lock out the other user too).
 *
 * What comes out: a revocation is not undone by an outage, a refused
 * source or an older OSC. Only the control plane re-granting a key lifts a
 * dropped / expired / kept revocation: the key is the CURRENT (first) key
 * of Gardener's file, or a valid (unexpired) grant in a key document. A
 * key that comes back as Gardener's PREVIOUS key stays revoked (that is
 * what an older OSC looks like). Explicit revocations are never lifted by
 * the executor; an operator revocation is lifted when its key leaves the
 * operator's directory (not while a file there is refused). When more than
 * REVOKE_MAX keys are revoked, the oldest dropped/expired/kept revocations
 * are dropped first, then operator ones, explicit ones last (logged).
 *
 * A KRL changed by anyone else (ssh-keygen -k -u, a list of keys, which
 * sshd also reads, or damage): told from this program's own by the digest
 * the records name (for v1 records: by whether krl_read() takes it). It is
 * never overwritten silently: sshd keeps enforcing it, the keys step fails
 * with one line naming the file, and nothing is revoked or lifted until
 * the operator has put the keys to keep revoked in the directory and run
 * `cloud-config-exec revoke --replace` (revoke_sync() with replace). */
#ifndef CCE_REVOKE_H
#define CCE_REVOKE_H

#include <stdbool.h>

#include "config.h"
#include "krl.h"
#include "sshkeys.h"
#include "state.h"

#define REVOKE_KRL_FILE "revoked-keys.krl"
#define REVOKE_RECORDS_FILE "revocations"
#define REVOKE_MAX KRL_ENTRIES_MAX
/* Relative to the root (--root), files of revlist.h. */
#define REVOKE_OPERATOR_DIR "etc/node-agent/revoked-keys.d"
#define REVOKE_OPERATOR_FILES_MAX 256

/* The keys step with revocation: runs sshkeys_apply() (same arguments and
 * return), then brings the KRL up to date from what changed. The KRL is
 * written even when the keys step failed (an empty valid KRL at the first
 * run). A KRL that cannot be written fails the step. On failure err (if
 * err_size) holds one line naming the user, source and reason. */
int revoke_keys_step(int rootfd, const char *root, const struct config *cfg, const struct sshkeys_input *in,
		     struct state *st, int statefd, bool *ret_changed, char *err, size_t err_size);

/* Only the KRL (the `revoke` verb, the package's postinst): brings it up to
 * date from the records, the key sources of in (the last applied OSC and
 * the key document), the managed keys of st and the operator's directory,
 * without touching any authorized_keys or the snapshot; nothing counts as
 * dropped. replace: a KRL changed outside this program is overwritten
 * (logged) instead of refused. Returns 0 or -errno with err (if err_size)
 * holding one line; *ret_changed when the KRL was written. */
int revoke_sync(int rootfd, const struct config *cfg, const struct sshkeys_input *in, const struct state *st,
		int statefd, bool replace, bool *ret_changed, char *err, size_t err_size);

/* Attribution: when the key snapshot changes, revoke_keys_step() logs each
 * key it serves with KEY_SOURCE= (Gardener's file "current"/"previous",
 * "<document path>[entry]", "node-annotation[entry]"), USER=, FINGERPRINT=
 * and SNAPSHOT_GENERATION=, the fields authkeys-cmd logs when it serves it.
 *
 * The `status` view: prints the key sources of the last applied OSC (osc,
 * may be NULL) with their entries, users, fingerprints and expiries, the
 * managed keys with their source, and the KRL's entries with their reasons. */
void revoke_print_status(const struct config *cfg, const struct osc *osc, const struct state *st, int statefd,
			 time_t now);

#endif
