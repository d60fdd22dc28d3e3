/* Strict base64 (RFC 4648, standard alphabet, padded): anything but
 * canonical base64 (no whitespace, "=" only at the end, the bits padding
 * drops zero) is an error rather than a guess. Pure, no OpenSSL: the
 * statically linked authkeys-cmd uses it too. */
#ifndef NA_B64_H
#define NA_B64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	B64_IGNORE_NEWLINES = 1 << 0, /* accept "\n" and "\r\n" between groups (Go's decoder does) */
};

/* Decodes len bytes of base64 into a new buffer (NUL-terminated for
 * convenience, not counted in *ret_len). -EINVAL for anything but canonical
 * padded base64 (with newlines only when B64_IGNORE_NEWLINES), -EMSGSIZE when
 * the decoded size would exceed max. */
int b64_decode(const char *in, size_t len, size_t max, unsigned flags, unsigned char **ret, size_t *ret_len);

/* Decodes len characters into out (out_max bytes; no newlines, no NUL
 * added). Returns the decoded length; -EINVAL for anything but canonical
 * padded base64, -EMSGSIZE when it does not fit. */
int b64_decode_into(const char *in, size_t len, uint8_t *out, size_t out_max);

/* Padded base64 of len bytes into out (out_max bytes, NUL-terminated).
 * Returns the length without the NUL, -EMSGSIZE when it does not fit. */
int b64_encode_into(const void *data, size_t len, char *out, size_t out_max);

/* Encodes len bytes; returns a malloc'ed NUL-terminated string or NULL on OOM.
 * With unpadded, the trailing "=" are dropped (ssh-keygen fingerprints). */
char *b64_encode(const void *data, size_t len, bool unpadded);

#endif
