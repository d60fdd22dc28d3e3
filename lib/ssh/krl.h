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
 * And single certificates by serial: per CA, a KRL_SECTION_CERTIFICATES
 * section (the CA's public key blob, an empty reserved string) holding one
 * KRL_SECTION_CERT_SERIAL_LIST subsection of big-endian uint64 serials
 * (PROTOCOL.krl section 3; sshd: krl.c parse_revoked_certs(), checked by
 * is_cert_revoked() for a certificate signed by that CA). Serial 0 is
 * never written: OpenSSH refuses to revoke it (ssh_krl_revoke_cert_by_
 * serial_range(): lo == 0 is an invalid argument, and such a KRL would make
 * sshd refuse every key) and ignores it in certificates.
 *
 * The reader accepts only what the writer produces (a validator for our own
 * file: header; the CERTIFICATES sections, CA blobs in strictly increasing
 * order, each with one serial list strictly increasing and non-zero; then at
 * most one FINGERPRINT_SHA256 section of 32-byte hashes in strictly
 * increasing order; nothing after it) so that a previous KRL can be merged
 * into the next one. Pure: no I/O, no logging, no clock. */
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
/* Certificate revocations: CAs with revoked serials, the serials of all of
 * them together, and the size of a CA key blob (an 8192-bit RSA key is
 * ~1,050 bytes). */
#define KRL_CAS_MAX 64
#define KRL_SERIALS_MAX 1024
#define KRL_CA_KEY_MAX 2048
/* Header (8+4+8+8+8+4+4+comment) + section (1+4) + entries (4+32 each) +
 * per CA (1+4 + 4+key + 4 + 1+4) + 8 per serial. */
#define KRL_SIZE_MAX                                                                                   \
	(49 + KRL_COMMENT_MAX + (size_t)KRL_ENTRIES_MAX * (4 + KRL_HASH_LEN) +                         \
	 (size_t)KRL_CAS_MAX * (22 + KRL_CA_KEY_MAX) + (size_t)KRL_SERIALS_MAX * 8)

struct krl_hash {
	uint8_t h[KRL_HASH_LEN];
};

/* The revoked serials of one CA. */
struct krl_ca_serials {
	uint8_t *ca_key;           /* the CA's public key blob (as in a "cert-authority" line, decoded) */
	size_t ca_key_len;         /* 1..KRL_CA_KEY_MAX */
	uint64_t *serials;         /* non-zero; the reader returns them sorted and unique */
	size_t n;
};

struct krl {
	uint64_t version;          /* krl_version: grows with every change */
	uint64_t generated;        /* generated_date, unix seconds */
	char comment[KRL_COMMENT_MAX + 1];
	struct krl_hash *hashes;   /* sorted, unique (memcmp order = big-endian numeric) */
	size_t n;
	struct krl_ca_serials *cas; /* sorted by krl_ca_key_cmp(), unique, each with n >= 1 */
	size_t n_cas;
};

/* Serialises a KRL: the header (format version 1, version, generated,
 * flags 0, empty reserved, comment: printable ASCII, at most
 * KRL_COMMENT_MAX bytes) and, when n > 0, one FINGERPRINT_SHA256 section
 * with hashes[0..n) sorted and deduplicated (the input is not modified).
 * Returns 0 and a malloc'ed buffer in *ret / *ret_len; -EINVAL (bad
 * comment), -E2BIG (more than KRL_ENTRIES_MAX distinct hashes), -ENOMEM. */
int krl_write(const struct krl_hash *hashes, size_t n, uint64_t version, uint64_t generated, const char *comment,
	      void **ret, size_t *ret_len);

/* The same with certificate serial revocations cas[0..n_cas) (the input is
 * not modified): written sorted by CA, each CA's serials sorted and
 * deduplicated, CAs without serials left out. -EINVAL also for a CA key
 * empty or over KRL_CA_KEY_MAX, a CA given twice, a serial 0; -E2BIG for
 * more than KRL_CAS_MAX CAs or KRL_SERIALS_MAX distinct serials. */
int krl_write_full(const struct krl_hash *hashes, size_t n, const struct krl_ca_serials *cas, size_t n_cas,
		   uint64_t version, uint64_t generated, const char *comment, void **ret, size_t *ret_len);

/* Order of CA key blobs: shorter first, then memcmp. */
int krl_ca_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* Is serial of the CA key ca[0..len) in k? */
int krl_contains_serial(const struct krl *k, const uint8_t *ca, size_t len, uint64_t serial);

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
