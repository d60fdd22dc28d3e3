/* Strict base64 (RFC 4648, standard alphabet, padded) on top of OpenSSL.
 *
 * OpenSSL's EVP_DecodeBlock() skips leading/trailing whitespace and does not
 * report padding; the input is validated here first, so that a key or file
 * that is not canonical base64 is an error rather than a guess. Pure. */
#ifndef NA_B64_H
#define NA_B64_H

#include <stdbool.h>
#include <stddef.h>

enum {
	B64_IGNORE_NEWLINES = 1 << 0, /* accept "\n" and "\r\n" between groups (Go's decoder does) */
};

/* Decodes len bytes of base64 into a new buffer (NUL-terminated for
 * convenience, not counted in *ret_len). -EINVAL for anything but canonical
 * padded base64 (with newlines only when B64_IGNORE_NEWLINES), -EMSGSIZE when
 * the decoded size would exceed max. */
int b64_decode(const char *in, size_t len, size_t max, unsigned flags, unsigned char **ret, size_t *ret_len);

/* Encodes len bytes; returns a malloc'ed NUL-terminated string or NULL on OOM.
 * With unpadded, the trailing "=" are dropped (ssh-keygen fingerprints). */
char *b64_encode(const void *data, size_t len, bool unpadded);

#endif
