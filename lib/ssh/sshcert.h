/* What authkeys-cmd reads out of an OpenSSH certificate for its log line:
 * the key id, the serial and the signing CA's public key blob.
 *
 * sshd passes AuthorizedKeysCommand no certificate fields of their own: its
 * tokens are %C %D %f %h %k %t %U %u (sshd_config(5) TOKENS; auth2-pubkey.c
 * user_key_command_allowed2() expands exactly those, and percent_expand()
 * is fatal on any other, so "%i" or "%s" in the command line would end
 * every login). %i and %s exist only for AuthorizedPrincipalsCommand. But
 * for a certificate %k is the whole certificate (sshkey_to_base64() of the
 * certificate key) and %t its "*-cert-v01@openssh.com" type, so the fields
 * are read from %k, after the layout in OpenSSH's PROTOCOL.certkeys:
 *
 *   string type, string nonce, <the key's public fields: strings/mpints,
 *   how many depends on the type>, uint64 serial, uint32 type, string key
 *   id, string valid principals, uint64 valid after, uint64 valid before,
 *   string critical options, string extensions, string reserved, string
 *   signature key, string signature
 *
 * %k comes from the client: hostile input. sshd has verified the
 * certificate's signature only if the CA line authkeys-cmd serves is then
 * accepted; nothing here is trusted for a decision but which of the user's
 * own CA lines to serve (the one whose key is the signature key: sshd would
 * accept no other) and what to log. Everything is bounded: at most
 * SSHCERT_B64_MAX characters, every length checked against what is left,
 * the whole blob consumed exactly. Pure: no I/O, no allocation. */
#ifndef NA_SSHCERT_H
#define NA_SSHCERT_H

#include <stddef.h>
#include <stdint.h>

#define SSHCERT_B64_MAX 16384u /* a certificate with an 8192-bit RSA key and CA is ~3 KB of base64 */
#define SSHCERT_BLOB_MAX (SSHCERT_B64_MAX / 4 * 3)

struct sshcert_info {
	const char *type;         /* points into the blob, type_len bytes, not NUL-terminated */
	size_t type_len;
	uint64_t serial;
	uint32_t cert_type;       /* 1 user, 2 host */
	const uint8_t *key_id;    /* into the blob, key_id_len bytes: any bytes (print with care) */
	size_t key_id_len;
	const uint8_t *ca_key;    /* the signature key's blob (a plain public key), into the blob */
	size_t ca_key_len;
};

/* Parses the certificate blob[0..len). 0 and *ret (pointing into blob) on
 * success; -EBADMSG for a truncated, over-long or malformed blob (a
 * non-certificate type, an empty signature key, a signature key that is
 * itself a certificate, trailing bytes); -EOPNOTSUPP for a certificate
 * type whose public fields are not known here. */
int sshcert_parse(const uint8_t *blob, size_t len, struct sshcert_info *ret);

#endif
