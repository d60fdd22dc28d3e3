/* Key documents: where the managed SSH keys come from.
 *
 * Two sources (DESIGN.md, "Inputs"):
 *
 *  - The expiring-key document, after the Kubernetes node-authorized-keys
 *    design: a JSON array of objects
 *
 *      [{"user": "alice", "type": "ssh-ed25519",
 *        "publicKey": "AAAAC3NzaC1lZDI1NTE5AAAA...",
 *        "comment": "alice@laptop", "until": "2026-12-01T00:00:00Z"}, ...]
 *
 *    user: POSIX portable user name [a-z_][a-z0-9_-]*[$]?, at most 32 bytes.
 *    type: an SSH key type keys.h supports; must be the key's own type.
 *    publicKey: the base64 blob, or "type base64 [comment]" (no options).
 *    comment: optional string (null = absent); replaces the key's comment.
 *    until: optional (null = no expiry); an RFC 3339 UTC time
 *           "YYYY-MM-DDTHH:MM:SS[.fraction]Z" (the fraction is dropped) or
 *           integer unix seconds; it becomes the key's expiry-time.
 *    revoked: optional boolean (null/false = a grant). true: the entry is
 *           no grant but an explicit revocation of the key: it is never
 *           served or written, and cloud-config-exec puts it into the
 *           node's OpenSSH KRL (sshd's RevokedKeys), which refuses it for
 *           every user and in every authorized_keys file, for good
 *           (cloud-config-exec/revoke.h). Such an entry takes no until.
 *    certAuthority: optional boolean. true: the key is a certificate
 *           authority for user: rendered as a "cert-authority" line, so
 *           sshd accepts certificates it signed (not the key itself).
 *    principals: optional (only with certAuthority) non-empty array of
 *           names [A-Za-z0-9._@+-]+: the certificate principals accepted
 *           (principals="a,b"); without it sshd wants the user's name
 *           among the certificate's principals.
 *    revokedSerials: optional (only with certAuthority) non-empty array
 *           of at most KEYDOC_SERIALS_MAX certificate serials, each an
 *           integer 1..2^53-1 or a string of decimal digits 1..2^64-1:
 *           certificates this CA signed with these serials are revoked
 *           (the KRL's certificate section for the CA, revoke.h), the CA
 *           itself stays trusted. Serial 0 cannot be revoked (OpenSSH
 *           ignores it: a CA that should revoke must number its
 *           certificates).
 *    Unknown fields are ignored; a known field of the wrong JSON type, a
 *    field given twice, a missing user/type/publicKey are errors. Two
 *    entries with the same user and key fingerprint are an error.
 *
 *  - Gardener's /var/lib/gardener-user-authorized-keys: one public key per
 *    line, the current key first, then the previous one; blank lines and
 *    lines starting with '#' are ignored; a key that appears twice is kept
 *    once (the first time). All keys belong to one user. A line may be a
 *    CA: "cert-authority[,principals=\"a,b\"][,expiry-time=\"...\"] type
 *    base64 [comment]"; no other options, and none on a plain key.
 *
 * Pure: no I/O, no logging, no clock (expired keys are kept: dropping them
 * is the caller's decision at its own "now"). Every limit below is enforced
 * before the corresponding work is done. */
#ifndef NA_KEYDOC_H
#define NA_KEYDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "keys.h"

#define KEYDOC_SIZE_MAX ((size_t)1 << 20)
#define KEYDOC_ENTRIES_MAX 1024
#define KEYDOC_USER_MAX 32
#define KEYDOC_SERIALS_MAX 256 /* revokedSerials per entry */
/* Enough for "[1023].publicKey: <reason> \"<token>\"". */
#define KEYDOC_ERR_MAX 160

struct keydoc_entry {
	char *user;
	struct keys_key key; /* key.options.expiry = until (0: none); no other options */
	bool revoked;        /* "revoked": true: an explicit revocation, not a grant */
	uint64_t *revoked_serials; /* "revokedSerials" of a CA entry, in document order; NULL if none */
	size_t n_revoked_serials;
};

struct keydoc {
	struct keydoc_entry *entries;
	size_t n;
};

/* Parses a JSON key document of len bytes (need not be NUL-terminated).
 * params as for keys_parse_line() (allow_options is ignored: options are
 * never accepted from a document). Returns 0 and fills *ret (free with
 * keydoc_done()); -EMSGSIZE (document larger than KEYDOC_SIZE_MAX or more
 * than KEYDOC_ENTRIES_MAX entries), -EINVAL (anything malformed), or a
 * keys_parse_* error (-EPROTONOSUPPORT, -EKEYREJECTED); -ENOMEM. On failure
 * err (errlen bytes, may be NULL) receives one line naming the entry and the
 * field: "[3].publicKey: inner type mismatch". *ret only on success. */
int keydoc_parse_json(const char *data, size_t len, const struct keys_parse_params *params, struct keydoc *ret,
		      char *err, size_t errlen);

/* Parses Gardener's authorized-keys file content for user (validated as
 * above). Same returns; errors read "line 2: inner type mismatch". An empty
 * file gives an empty document (n == 0), not an error. */
int keydoc_parse_lines(const char *data, size_t len, const char *user, const struct keys_parse_params *params,
		       struct keydoc *ret, char *err, size_t errlen);

/* Parses "YYYY-MM-DDTHH:MM:SS[.fraction]Z" (NUL-terminated) into UTC
 * seconds, fields range-checked, fraction dropped, result in
 * [1, KEYS_EXPIRY_MAX]. Returns 0 or -EINVAL; *ret only on success. */
int keydoc_parse_time(const char *s, time_t *ret);

/* Is s a POSIX portable user name of at most KEYDOC_USER_MAX bytes? */
bool keydoc_user_valid(const char *s);

/* Frees everything; safe on a zeroed struct and twice. */
void keydoc_done(struct keydoc *doc);

#endif
