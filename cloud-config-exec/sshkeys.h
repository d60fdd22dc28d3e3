/* The keys step: from the key sources in the desired state to the login
 * user's ~/.ssh/authorized_keys and the key snapshot for authkeys-cmd.
 *
 * Sources: the OSC file /var/lib/gardener-user-authorized-keys (Gardener's:
 * one public key a line, the current key first, then the previous one; for
 * the login user) and the expiring-key document (a JSON list of {user, type,
 * publicKey, comment, until}) carried as the OSC file at ssh.keyDocumentPath
 * and, when ssh.keysFromNodeAnnotation is set, in the desired state. Keys of
 * the login user go to authorized_keys (keymerge.h) and the snapshot; keys of
 * other users only to the snapshot, and only when the user exists locally
 * (never root unless ssh.allowRoot). Logs every decision. */
#ifndef CCE_SSHKEYS_H
#define CCE_SSHKEYS_H

#include <stdbool.h>
#include <time.h>

#include "config.h"
#include "osc.h"
#include "state.h"

#define SSHKEYS_GARDENER_FILE "/var/lib/gardener-user-authorized-keys"
#define SSHKEYS_DOCUMENT_MAX (1u << 20)
#define SSHKEYS_PER_USER_MAX 1024
#define SSHKEYS_ERROR_MAX 900

struct sshkeys_input {
	const struct osc *osc;      /* may be NULL: no OSC-carried sources */
	const char *key_document;   /* from the desired state; NULL when none */
	bool ssh_access;            /* false: SSH disabled explicitly, shrinking allowed */
	const char *osc_checksum;   /* hex SHA-256 of the OSC (the Secret's checksum), for the keys' sources; may be NULL */
	time_t now;
};

/* Runs the keys step below rootfd (root is the same directory as a path,
 * for useradd --prefix). Updates st (managed keys, snapshot bookkeeping) and
 * saves it to statefd. *ret_changed is set when authorized_keys, a user or
 * the snapshot was written. Returns 0, or -errno when the keys are not in
 * the desired state: a key source was rejected (the last good keys stay in
 * force), the login user's authorized_keys could not be brought to the
 * managed keys even by moving what is there aside (home.h), a user could
 * not be created, the snapshot could not be written. The snapshot is still
 * written in each case it can be. The managed set in st follows the desired
 * keys even when the home could not be written (the keys it may still hold
 * are recorded as stale), so that a dropped key is revoked at once
 * (revoke.h), whatever the user did to their home. On failure err (err_size bytes, may be
 * 0) says in one line which user, which source and why. */
int sshkeys_apply(int rootfd, const char *root, const struct config *cfg, const struct sshkeys_input *in,
		  struct state *st, int statefd, bool *ret_changed, char *err, size_t err_size);

#endif
