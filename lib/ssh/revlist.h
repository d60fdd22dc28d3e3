/* The operator's revocation files: keys an operator revokes on one node,
 * in /etc/node-agent/revoked-keys.d/ (cloud-config-exec(8), REVOKED KEYS),
 * which every executor run merges into the node's KRL (krl.h,
 * cloud-config-exec/revoke.h).
 *
 * A file holds one entry a line:
 *   - an OpenSSH public key as a .pub file or an authorized_keys line
 *     without options has it: "type base64 [comment]" (a CA key revokes
 *     the key and every certificate it signed);
 *   - or its fingerprint as `ssh-keygen -l` prints it: "SHA256:" and 43
 *     characters of unpadded base64, optionally followed by a blank and a
 *     comment.
 * Blank lines and lines whose first non-blank character is '#' are
 * ignored; a key given twice counts once. Anything else (options, a
 * certificate, an unsupported or too weak key type, a fingerprint of
 * another form, control characters) rejects the whole file: an operator's
 * revocation is never half applied without a word.
 *
 * Pure: no I/O, no logging. Every limit is checked before the work. */
#ifndef NA_REVLIST_H
#define NA_REVLIST_H

#include <stddef.h>

#include "keys.h"
#include "krl.h"

/* The largest file read (a few thousand keys), and the most entries one
 * file holds (the KRL holds KRL_ENTRIES_MAX in all). */
#define REVLIST_FILE_MAX (512 * 1024)
#define REVLIST_ENTRIES_MAX KRL_ENTRIES_MAX

/* Parses len bytes of one file. Returns the number of distinct keys
 * (>= 0) and a malloc'ed array of their SHA-256 hashes in *ret (sorted,
 * unique; NULL when there are none), or -EBADMSG (a bad line: err holds
 * "line N: <why>", never key material beyond a type name), -E2BIG (over
 * REVLIST_FILE_MAX bytes or REVLIST_ENTRIES_MAX keys), -ENOMEM. *ret is
 * written only on success. params may be NULL (keys.h defaults). */
int revlist_parse(const char *data, size_t len, const struct keys_parse_params *params, struct krl_hash **ret,
		  char *err, size_t err_size);

#endif
