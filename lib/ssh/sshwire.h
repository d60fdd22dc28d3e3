/* A bounded reader of the SSH wire encoding (RFC 4251 section 5: uint32 and
 * uint64 big-endian, "string" as a uint32 length and that many bytes), for
 * the parsers of keys, certificates and KRLs. Every read is checked against
 * what is left; strings point into the buffer, nothing is copied. Pure. */
#ifndef NA_SSHWIRE_H
#define NA_SSHWIRE_H

#include <stddef.h>
#include <stdint.h>

struct sshwire {
	const unsigned char *p;
	size_t len; /* bytes left */
};

/* Each returns 0 and advances, or -EBADMSG (nothing read) when the buffer
 * holds less than the item. */
int sshwire_bytes(struct sshwire *r, size_t n, const unsigned char **ret);
int sshwire_u8(struct sshwire *r, uint8_t *ret);
int sshwire_u32(struct sshwire *r, uint32_t *ret);
int sshwire_u64(struct sshwire *r, uint64_t *ret);
/* A string: *ret points at its bytes, *ret_len is its length. */
int sshwire_string(struct sshwire *r, const unsigned char **ret, size_t *ret_len);
/* A string read as a reader of its own. */
int sshwire_sub(struct sshwire *r, struct sshwire *ret);

#endif
