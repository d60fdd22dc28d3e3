/* OpenSSH key revocation lists (KRL), written from the format description
 * in OpenSSH's PROTOCOL.krl (openssh/openssh-portable, PROTOCOL.krl; sshd
 * reads it with krl.c ssh_krl_from_blob() for sshd_config's RevokedKeys).
 *
 * Only what node-agent needs: a KRL whose single section is a
 * KRL_SECTION_FINGERPRINT_SHA256 list, i.e. revocation by the SHA-256 of a
 * plain public key blob (what "SHA256:..." fingerprints encode). sshd checks
 * that hash for the presented key, for the plain key inside a certificate
 * and for the certificate's CA key (krl.c is_key_revoked() and
 * ssh_krl_check_key()), so one entry revokes a key in every authorized_keys
 * file, every certificate of that key, and every certificate a CA key signed.
 *
 * The reader accepts only what the writer produces (a validator for our own
 * file: header, at most one FINGERPRINT_SHA256 section of 32-byte hashes in strictly
 * increasing order, nothing after the last section) so that a previous KRL
 * can be merged into the next one. Pure: no I/O, no logging, no clock. */
#ifndef NA_KRL_H
#define NA_KRL_H

#include <stddef.h>
#include <stdint.h>

#define KRL_HASH_LEN 32
/* The most hashes one KRL holds (~37 KB). sshd parses the whole file,
 * building its trees, for every key it checks (twice per login): measured
 * with make bench, 16,384 entries added ~100 ms to a 170 ms login, so the
 * bound stays where the cost is a few milliseconds. */
#define KRL_ENTRIES_MAX 1024
#define KRL_COMMENT_MAX 256
/* Header (8+4+8+8+8+4+4+comment) + section (1+4) + entries (4+32 each). */
#define KRL_SIZE_MAX (49 + KRL_COMMENT_MAX + (size_t)KRL_ENTRIES_MAX * (4 + KRL_HASH_LEN))

struct krl_hash {
	uint8_t h[KRL_HASH_LEN];
};

struct krl {
	uint64_t version;          /* krl_version: grows with every change */
	uint64_t generated;        /* generated_date, unix seconds */
	char comment[KRL_COMMENT_MAX + 1];
	struct krl_hash *hashes;   /* sorted, unique (memcmp order = big-endian numeric) */
	size_t n;
};

/* Serialises a KRL: the header (format version 1, version, generated,
 * flags 0, empty reserved, comment: printable ASCII, at most
 * KRL_COMMENT_MAX bytes) and, when n > 0, one FINGERPRINT_SHA256 section
 * with hashes[0..n) sorted and deduplicated (the input is not modified).
 * Returns 0 and a malloc'ed buffer in *ret / *ret_len; -EINVAL (bad
 * comment), -E2BIG (more than KRL_ENTRIES_MAX distinct hashes), -ENOMEM. */
int krl_write(const struct krl_hash *hashes, size_t n, uint64_t version, uint64_t generated, const char *comment,
	      void **ret, size_t *ret_len);

/* Parses len bytes of a KRL as krl_write() makes it. Returns 0 and fills
 * *ret (release with krl_done()); -EBADMSG for anything else (bad magic,
 * format version, truncation, an unknown or non-hash section, hashes out of
 * order or repeated, trailing bytes, a comment with control bytes),
 * -E2BIG for more than KRL_ENTRIES_MAX hashes or more than KRL_SIZE_MAX
 * bytes, -ENOMEM. *ret only on success. */
int krl_read(const void *data, size_t len, struct krl *ret);

/* Is hash in k (binary search)? */
int krl_contains(const struct krl *k, const struct krl_hash *hash);

/* Decodes an OpenSSH fingerprint "SHA256:" + 43 characters of unpadded
 * base64 into the raw hash. Returns 0 or -EINVAL. */
int krl_hash_from_fingerprint(const char *fp, struct krl_hash *ret);

/* Sorts and deduplicates v[0..n) in place; returns the new count. */
size_t krl_hash_sort_unique(struct krl_hash *v, size_t n);

void krl_done(struct krl *k);

#endif
