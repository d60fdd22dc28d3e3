/* The SSH public key model; see keys.h.
 *
 * The blob is walked as PROTOCOL.certkeys and RFC 4253/5656/8709 describe it:
 * every length is checked against what is left before anything is read, and a
 * blob must be consumed exactly. Curve points and RSA numbers are checked
 * with OpenSSL, never by hand. */
#include <errno.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "b64.h"
#include "cleanup.h"
#include "keys.h"
#include "sshwire.h"

/* OpenSSH's own ceiling (SSHBUF_MAX_BIGNUM, SSH_RSA_MAXIMUM_MODULUS_SIZE). */
#define RSA_MAX_BITS 16384
/* Below this nothing is accepted, whatever the caller configures. */
#define RSA_FLOOR_BITS 1024
#define ED25519_PK_LEN 32
/* An sk key's application string: "ssh:" by default, an origin URL at most. */
#define SK_APPLICATION_MAX 256
#define FROM_MAX 1024

struct type_info {
	const char *name;
	const char *cert_name;
	enum keys_type type;
	const char *curve;  /* ECDSA: the curve name inside the blob */
	int nid;            /* ECDSA: OpenSSL curve */
	unsigned bits;      /* fixed size types */
	bool sk;
};

static const struct type_info types[] = {
	{ "ssh-ed25519", "ssh-ed25519-cert-v01@openssh.com", KEYS_TYPE_ED25519, NULL, 0, 256, false },
	{ "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256-cert-v01@openssh.com", KEYS_TYPE_ECDSA_P256,
	  "nistp256", NID_X9_62_prime256v1, 256, false },
	{ "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384-cert-v01@openssh.com", KEYS_TYPE_ECDSA_P384,
	  "nistp384", NID_secp384r1, 384, false },
	{ "ecdsa-sha2-nistp521", "ecdsa-sha2-nistp521-cert-v01@openssh.com", KEYS_TYPE_ECDSA_P521,
	  "nistp521", NID_secp521r1, 521, false },
	{ "ssh-rsa", "ssh-rsa-cert-v01@openssh.com", KEYS_TYPE_RSA, NULL, 0, 0, false },
	{ "sk-ssh-ed25519@openssh.com", "sk-ssh-ed25519-cert-v01@openssh.com", KEYS_TYPE_SK_ED25519,
	  NULL, 0, 256, true },
	{ "sk-ecdsa-sha2-nistp256@openssh.com", "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
	  KEYS_TYPE_SK_ECDSA_P256, "nistp256", NID_X9_62_prime256v1, 256, true },
};

/* Names sshd or ssh-keygen know but this code refuses (weak or obsolete). */
static const char *const refused_types[] = {
	"ssh-dss", "ssh-dss-cert-v01@openssh.com", "ssh-rsa-cert-v00@openssh.com",
	"ssh-dss-cert-v00@openssh.com", "ssh-xmss@openssh.com", "ssh-xmss-cert-v01@openssh.com",
};

static const struct type_info *type_lookup(const char *s, size_t len, bool *ret_cert)
{
	for (size_t i = 0; i < ELEMENTSOF(types); i++) {
		if (strlen(types[i].name) == len && memcmp(types[i].name, s, len) == 0) {
			*ret_cert = false;
			return &types[i];
		}
		if (strlen(types[i].cert_name) == len && memcmp(types[i].cert_name, s, len) == 0) {
			*ret_cert = true;
			return &types[i];
		}
	}
	return NULL;
}

static bool type_refused(const char *s, size_t len)
{
	for (size_t i = 0; i < ELEMENTSOF(refused_types); i++)
		if (strlen(refused_types[i]) == len && memcmp(refused_types[i], s, len) == 0)
			return true;
	return false;
}

const char *keys_type_to_string(enum keys_type t, bool certificate)
{
	for (size_t i = 0; i < ELEMENTSOF(types); i++)
		if (types[i].type == t)
			return certificate ? types[i].cert_name : types[i].name;
	return NULL;
}

/* ---- errors ----------------------------------------------------------- */

static int fail(struct keys_error *e, int r, const char *what)
{
	if (e) {
		e->what = what;
		e->token[0] = '\0';
	}
	return r;
}

/* Like fail(), quoting a (possibly hostile) token: printable ASCII only. */
static int fail_token(struct keys_error *e, int r, const char *what, const char *tok, size_t len)
{
	if (e) {
		size_t n = len < KEYS_ERROR_TOKEN_MAX - 1 ? len : KEYS_ERROR_TOKEN_MAX - 1;
		e->what = what;
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)tok[i];
			e->token[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
		}
		e->token[n] = '\0';
	}
	return r;
}

/* ---- wire format ------------------------------------------------------ */

static bool bytes_eq(const unsigned char *p, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(p, s, n) == 0;
}

/* A string of printable ASCII without NUL (names, key ids, principals). */
static bool printable(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] >= 0x7f)
			return false;
	return true;
}

/* A positive mpint in its one canonical encoding (RFC 4251 section 5): no
 * sign bit, no superfluous leading zero byte, not zero. */
static int rd_mpint_positive(struct sshwire *r, const unsigned char **ret, size_t *ret_len)
{
	const unsigned char *p;
	size_t n;
	if (sshwire_string(r, &p, &n) < 0)
		return -EBADMSG;
	if (n == 0 || (p[0] & 0x80))
		return -EINVAL;
	if (p[0] == 0 && (n == 1 || !(p[1] & 0x80)))
		return -EINVAL;
	*ret = p;
	*ret_len = n;
	return 0;
}

/* ---- per-type key fields ---------------------------------------------- */

static int check_ec_point(int nid, const unsigned char *q, size_t qlen, struct keys_error *e)
{
	EC_GROUP *g = EC_GROUP_new_by_curve_name(nid);
	if (!g)
		return fail(e, -ENOMEM, "out of memory");
	int fieldlen = (EC_GROUP_get_degree(g) + 7) / 8;
	int r = 0;
	EC_POINT *pt = NULL;
	if (qlen != 1 + 2 * (size_t)fieldlen || q[0] != 0x04) {
		r = fail(e, -EINVAL, "EC point not uncompressed or wrong size");
		goto out;
	}
	pt = EC_POINT_new(g);
	if (!pt) {
		r = fail(e, -ENOMEM, "out of memory");
		goto out;
	}
	/* oct2point rejects coordinates >= p and points off the curve; the
	 * NIST curves have cofactor 1, so a point on the curve that is not at
	 * infinity has the group's prime order. */
	if (EC_POINT_oct2point(g, pt, q, qlen, NULL) != 1 || EC_POINT_is_on_curve(g, pt, NULL) != 1 ||
	    EC_POINT_is_at_infinity(g, pt)) {
		r = fail(e, -EINVAL, "EC point not on the curve");
		goto out;
	}
out:
	EC_POINT_free(pt);
	EC_GROUP_free(g);
	return r;
}

static int check_rsa(const unsigned char *ep, size_t elen, const unsigned char *np, size_t nlen,
		     unsigned min_bits, unsigned *ret_bits, struct keys_error *e)
{
	if (nlen > RSA_MAX_BITS / 8 + 1)
		return fail(e, -EINVAL, "RSA modulus too large");
	if (elen > 8)
		return fail(e, -EINVAL, "RSA exponent too large");
	BIGNUM *n = BN_bin2bn(np, (int)nlen, NULL);
	BIGNUM *ex = BN_bin2bn(ep, (int)elen, NULL);
	int r = 0;
	if (!n || !ex) {
		r = fail(e, -ENOMEM, "out of memory");
		goto out;
	}
	/* e: odd and at least 3 (OpenSSL's RSA_check_key_ex() rule; e = 1
	 * makes every signature trivially forgeable). */
	if (!BN_is_odd(ex) || BN_is_one(ex)) {
		r = fail(e, -EINVAL, "RSA exponent invalid");
		goto out;
	}
	if (!BN_is_odd(n) || BN_cmp(n, ex) <= 0) {
		r = fail(e, -EINVAL, "RSA modulus invalid");
		goto out;
	}
	int bits = BN_num_bits(n);
	if (bits > RSA_MAX_BITS) {
		r = fail(e, -EINVAL, "RSA modulus too large");
		goto out;
	}
	if ((unsigned)bits < min_bits) {
		r = fail(e, -EKEYREJECTED, "RSA modulus too small");
		goto out;
	}
	*ret_bits = (unsigned)bits;
out:
	BN_free(n);
	BN_free(ex);
	return r;
}

/* Reads the public key fields of type ti (everything after the type string
 * of a plain key, after the nonce of a certificate). */
static int rd_key_fields(struct sshwire *r, const struct type_info *ti, unsigned min_bits, unsigned *ret_bits,
			 struct keys_error *e)
{
	const unsigned char *p, *q;
	size_t n, qn;
	int k;

	switch (ti->type) {
	case KEYS_TYPE_ED25519:
	case KEYS_TYPE_SK_ED25519:
		if (sshwire_string(r, &p, &n) < 0)
			return fail(e, -EINVAL, "truncated key blob");
		if (n != ED25519_PK_LEN)
			return fail(e, -EINVAL, "ed25519 key not 32 bytes");
		break;
	case KEYS_TYPE_ECDSA_P256:
	case KEYS_TYPE_ECDSA_P384:
	case KEYS_TYPE_ECDSA_P521:
	case KEYS_TYPE_SK_ECDSA_P256:
		if (sshwire_string(r, &p, &n) < 0 || sshwire_string(r, &q, &qn) < 0)
			return fail(e, -EINVAL, "truncated key blob");
		if (!bytes_eq(p, n, ti->curve))
			return fail(e, -EINVAL, "curve name does not match key type");
		k = check_ec_point(ti->nid, q, qn, e);
		if (k < 0)
			return k;
		break;
	case KEYS_TYPE_RSA:
		k = rd_mpint_positive(r, &p, &n);
		if (k == -EBADMSG)
			return fail(e, -EINVAL, "truncated key blob");
		if (k < 0)
			return fail(e, -EINVAL, "RSA exponent not a canonical positive mpint");
		k = rd_mpint_positive(r, &q, &qn);
		if (k == -EBADMSG)
			return fail(e, -EINVAL, "truncated key blob");
		if (k < 0)
			return fail(e, -EINVAL, "RSA modulus not a canonical positive mpint");
		return check_rsa(p, n, q, qn, min_bits, ret_bits, e);
	default:
		return fail(e, -EPROTONOSUPPORT, "unsupported key type");
	}
	if (ti->sk) {
		if (sshwire_string(r, &p, &n) < 0)
			return fail(e, -EINVAL, "truncated key blob");
		if (n == 0 || n > SK_APPLICATION_MAX || !printable(p, n))
			return fail(e, -EINVAL, "sk application invalid");
	}
	*ret_bits = ti->bits;
	return 0;
}

/* A plain key blob (the CA key inside a certificate): type, fields, nothing
 * else. */
static int check_plain_blob(struct sshwire r, unsigned min_bits, const struct type_info **ret_ti, struct keys_error *e)
{
	const unsigned char *p;
	size_t n;
	bool cert;
	unsigned bits;
	if (sshwire_string(&r, &p, &n) < 0)
		return fail(e, -EINVAL, "truncated key blob");
	const struct type_info *ti = type_lookup((const char *)p, n, &cert);
	if (!ti || cert)
		return fail_token(e, -EPROTONOSUPPORT, "unsupported CA key type", (const char *)p, n);
	int k = rd_key_fields(&r, ti, min_bits, &bits, e);
	if (k < 0)
		return k;
	if (r.len != 0)
		return fail(e, -EINVAL, "trailing bytes in CA key blob");
	*ret_ti = ti;
	return 0;
}

/* A packed list of strings (certificate principals). */
static int check_string_list(struct sshwire r)
{
	while (r.len > 0) {
		const unsigned char *p;
		size_t n;
		if (sshwire_string(&r, &p, &n) < 0 || !printable(p, n))
			return -EINVAL;
	}
	return 0;
}

/* Packed (name, data) pairs (critical options, extensions): names printable
 * and in strictly increasing order as PROTOCOL.certkeys requires, data a
 * well-formed string (its content belongs to sshd). */
static int check_option_list(struct sshwire r)
{
	const unsigned char *prev = NULL;
	size_t prevn = 0;
	while (r.len > 0) {
		const unsigned char *p, *d;
		size_t n, dn;
		if (sshwire_string(&r, &p, &n) < 0 || sshwire_string(&r, &d, &dn) < 0)
			return -EINVAL;
		if (n == 0 || !printable(p, n))
			return -EINVAL;
		if (prev) {
			int c = memcmp(prev, p, prevn < n ? prevn : n);
			if (c > 0 || (c == 0 && prevn >= n))
				return -EINVAL;
		}
		prev = p;
		prevn = n;
	}
	return 0;
}

/* The signature: string algorithm, string blob, and for sk algorithms the
 * flags byte and counter. The algorithm must fit the CA key. */
static int check_signature(struct sshwire r, const struct type_info *ca, struct keys_error *e)
{
	const unsigned char *alg, *sig;
	size_t algn, sign;
	if (sshwire_string(&r, &alg, &algn) < 0 || sshwire_string(&r, &sig, &sign) < 0 || sign == 0)
		return fail(e, -EINVAL, "certificate signature malformed");
	bool ok;
	if (ca->type == KEYS_TYPE_RSA)
		ok = bytes_eq(alg, algn, "rsa-sha2-512") || bytes_eq(alg, algn, "rsa-sha2-256") ||
		     bytes_eq(alg, algn, "ssh-rsa");
	else
		ok = bytes_eq(alg, algn, ca->name);
	if (!ok)
		return fail(e, -EINVAL, "certificate signature algorithm does not match CA key");
	if (ca->sk) {
		uint8_t flags;
		uint32_t counter;
		if (sshwire_u8(&r, &flags) < 0 || sshwire_u32(&r, &counter) < 0)
			return fail(e, -EINVAL, "certificate signature malformed");
	}
	if (r.len != 0)
		return fail(e, -EINVAL, "trailing bytes in certificate signature");
	return 0;
}

/* Walks a whole blob of type ti. On success *ret_fields and *ret_fields_len
 * point at the public key fields (for the fingerprint of a certificate). */
static int check_blob(const unsigned char *blob, size_t len, const struct type_info *ti, bool cert,
		      unsigned min_bits, unsigned *ret_bits, const unsigned char **ret_fields,
		      size_t *ret_fields_len, struct keys_error *e)
{
	struct sshwire r = { blob, len };
	const unsigned char *p;
	size_t n;
	bool inner_cert;
	int k;

	if (sshwire_string(&r, &p, &n) < 0)
		return fail(e, -EINVAL, "truncated key blob");
	const struct type_info *inner = type_lookup((const char *)p, n, &inner_cert);
	if (inner != ti || inner_cert != cert)
		return fail(e, -EINVAL, "inner type mismatch");

	if (cert && (sshwire_string(&r, &p, &n) < 0))
		return fail(e, -EINVAL, "truncated certificate");

	const unsigned char *fields = r.p;
	unsigned bits;
	k = rd_key_fields(&r, ti, min_bits, &bits, e);
	if (k < 0)
		return k;
	size_t fields_len = (size_t)(r.p - fields);

	if (cert) {
		uint64_t serial, after, before;
		uint32_t ctype;
		struct sshwire principals, critical, extensions, sigkey, sig;
		const unsigned char *keyid, *reserved;
		size_t keyidn, reservedn;
		const struct type_info *ca;

		if (sshwire_u64(&r, &serial) < 0 || sshwire_u32(&r, &ctype) < 0 || sshwire_string(&r, &keyid, &keyidn) < 0 ||
		    sshwire_sub(&r, &principals) < 0 || sshwire_u64(&r, &after) < 0 || sshwire_u64(&r, &before) < 0 ||
		    sshwire_sub(&r, &critical) < 0 || sshwire_sub(&r, &extensions) < 0 ||
		    sshwire_string(&r, &reserved, &reservedn) < 0 || sshwire_sub(&r, &sigkey) < 0 || sshwire_sub(&r, &sig) < 0)
			return fail(e, -EINVAL, "truncated certificate");
		if (ctype != 1 && ctype != 2)
			return fail(e, -EINVAL, "certificate type neither user nor host");
		if (!printable(keyid, keyidn))
			return fail(e, -EINVAL, "certificate key id not printable");
		if (check_string_list(principals) < 0)
			return fail(e, -EINVAL, "certificate principals malformed");
		if (check_option_list(critical) < 0)
			return fail(e, -EINVAL, "certificate critical options malformed");
		if (check_option_list(extensions) < 0)
			return fail(e, -EINVAL, "certificate extensions malformed");
		if (reservedn != 0)
			return fail(e, -EINVAL, "certificate reserved field not empty");
		/* The CA key obeys the same rules as any key (RSA size, valid
		 * points), since sshd trusts what it signs. */
		k = check_plain_blob(sigkey, min_bits, &ca, e);
		if (k < 0)
			return k;
		k = check_signature(sig, ca, e);
		if (k < 0)
			return k;
	}
	if (r.len != 0)
		return fail(e, -EINVAL, "trailing bytes in key blob");

	*ret_bits = bits;
	*ret_fields = fields;
	*ret_fields_len = fields_len;
	return 0;
}

int keys_fingerprint(const unsigned char *blob, size_t len, char out[static KEYS_FINGERPRINT_MAX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	if (EVP_Digest(blob, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
		return -EIO;
	_cleanup_free_ char *b = b64_encode(md, mdlen, true);
	if (!b)
		return -ENOMEM;
	int n = snprintf(out, KEYS_FINGERPRINT_MAX, "SHA256:%s", b);
	if (n < 0 || n >= KEYS_FINGERPRINT_MAX)
		return -EIO;
	return 0;
}

/* The fingerprint sshd and ssh-keygen give a key: over the plain form
 * (string type, key fields), also for a certificate. */
static int plain_fingerprint(const struct type_info *ti, const unsigned char *fields, size_t fields_len,
			     char out[static KEYS_FINGERPRINT_MAX])
{
	size_t tn = strlen(ti->name);
	_cleanup_free_ unsigned char *plain = malloc(4 + tn + fields_len);
	if (!plain)
		return -ENOMEM;
	plain[0] = (unsigned char)(tn >> 24);
	plain[1] = (unsigned char)(tn >> 16);
	plain[2] = (unsigned char)(tn >> 8);
	plain[3] = (unsigned char)tn;
	memcpy(plain + 4, ti->name, tn);
	memcpy(plain + 4 + tn, fields, fields_len);
	return keys_fingerprint(plain, 4 + tn + fields_len, out);
}

static unsigned min_bits_of(const struct keys_parse_params *params)
{
	unsigned m = params && params->rsa_min_bits ? params->rsa_min_bits : KEYS_RSA_MIN_BITS_DEFAULT;
	return m < RSA_FLOOR_BITS ? RSA_FLOOR_BITS : m;
}

/* Fills key (type, blob, bits, fingerprint, base64) from a decoded blob;
 * takes ownership of blob on success. */
static int key_from_blob(const struct type_info *ti, bool cert, unsigned char *blob, size_t len,
			 const struct keys_parse_params *params, struct keys_key *key, struct keys_error *e)
{
	unsigned bits;
	const unsigned char *fields;
	size_t fields_len;
	int k = check_blob(blob, len, ti, cert, min_bits_of(params), &bits, &fields, &fields_len, e);
	if (k < 0)
		return k;
	k = plain_fingerprint(ti, fields, fields_len, key->fingerprint);
	if (k < 0)
		return fail(e, k, "fingerprint failed");
	key->blob_b64 = b64_encode(blob, len, false);
	key->type_name = strdup(cert ? ti->cert_name : ti->name);
	if (!key->blob_b64 || !key->type_name)
		return fail(e, -ENOMEM, "out of memory");
	key->type = ti->type;
	key->certificate = cert;
	key->bits = bits;
	key->blob = blob;
	key->blob_len = len;
	return 0;
}

int keys_parse_blob(const char *type_name, const unsigned char *blob, size_t len,
		    const struct keys_parse_params *params, struct keys_key *ret, struct keys_error *reterr)
{
	bool cert;
	size_t tn = strlen(type_name);
	const struct type_info *ti = type_lookup(type_name, tn, &cert);
	if (!ti)
		return fail_token(reterr, -EPROTONOSUPPORT,
				  type_refused(type_name, tn) ? "key type refused" : "unsupported key type", type_name, tn);
	if (len > KEYS_LINE_MAX)
		return fail(reterr, -EMSGSIZE, "key blob too long");
	unsigned char *copy = malloc(len ? len : 1);
	if (!copy)
		return fail(reterr, -ENOMEM, "out of memory");
	memcpy(copy, blob, len);
	struct keys_key key = {};
	int k = key_from_blob(ti, cert, copy, len, params, &key, reterr);
	if (k < 0) {
		if (!key.blob)
			free(copy);
		keys_key_done(&key);
		return k;
	}
	*ret = key;
	return 0;
}

/* ---- the line --------------------------------------------------------- */

static bool is_sep(char c)
{
	return c == ' ' || c == '\t';
}

/* Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF)
 * without C1 controls (U+0080..U+009F). */
static bool utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = s[i];
		uint32_t cp;
		size_t k;
		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			cp = c & 0x1f;
			k = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			cp = c & 0x0f;
			k = 2;
		} else if (c >= 0xf0 && c <= 0xf4) {
			cp = c & 0x07;
			k = 3;
		} else
			return false;
		if (n - i - 1 < k)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
			return false;
		i += k + 1;
	}
	return true;
}

/* Every option sshd's auth-options.c knows, so a refusal can name it. */
static const char *const sshd_options[] = {
	"agent-forwarding", "cert-authority", "command", "environment", "expiry-time", "from",
	"no-agent-forwarding", "no-port-forwarding", "no-pty", "no-touch-required", "no-user-rc",
	"no-X11-forwarding", "permitlisten", "permitopen", "port-forwarding", "principals", "pty",
	"restrict", "tunnel", "user-rc", "verify-required", "X11-forwarding",
};

static const struct {
	const char *name;
	unsigned flag;
} no_flags[] = {
	{ "no-agent-forwarding", KEYS_NO_AGENT_FORWARDING },
	{ "no-port-forwarding", KEYS_NO_PORT_FORWARDING },
	{ "no-pty", KEYS_NO_PTY },
	{ "no-user-rc", KEYS_NO_USER_RC },
	{ "no-X11-forwarding", KEYS_NO_X11_FORWARDING },
	{ "no-touch-required", KEYS_NO_TOUCH_REQUIRED },
};

static bool name_is(const char *s, size_t n, const char *name)
{
	/* sshd compares option names case-insensitively. */
	return strlen(name) == n && strncasecmp(s, name, n) == 0;
}

/* Is the token an option (something sshd would read as an options prefix)
 * rather than a key type? */
static bool looks_like_options(const char *s, size_t n)
{
	if (memchr(s, '=', n) || memchr(s, ',', n) || memchr(s, '"', n))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(sshd_options); i++)
		if (name_is(s, n, sshd_options[i]))
			return true;
	return false;
}

/* Is the token after position i a key type name (so what came before it
 * was meant as options)? */
static bool followed_by_type(const char *s, size_t len, size_t i)
{
	while (i < len && is_sep(s[i]))
		i++;
	size_t b = i;
	while (i < len && !is_sep(s[i]))
		i++;
	bool cert;
	return i > b && (type_lookup(s + b, i - b, &cert) || type_refused(s + b, i - b));
}

/* from="pattern-list": hostnames, addresses, CIDR, wildcards and negation;
 * nothing sshd would read as quoting or another option. */
static bool from_valid(const char *s, size_t n)
{
	if (n == 0 || n > FROM_MAX)
		return false;
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != ',')
			continue;
		/* One element: s[start, i). */
		size_t a = start, b = i;
		if (a < b && s[a] == '!')
			a++;
		if (a == b)
			return false;
		size_t slash = 0;
		bool have_slash = false;
		for (size_t j = a; j < b; j++) {
			char c = s[j];
			if (c == '/') {
				if (have_slash || j == a)
					return false;
				have_slash = true;
				slash = j;
			} else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
				     c == '.' || c == '-' || c == ':' || c == '*' || c == '?'))
				return false;
		}
		if (have_slash) {
			/* CIDR prefix length: 1 to 3 digits. */
			size_t dn = b - slash - 1;
			if (dn == 0 || dn > 3)
				return false;
			for (size_t j = slash + 1; j < b; j++)
				if (s[j] < '0' || s[j] > '9')
					return false;
		}
		start = i + 1;
	}
	return true;
}

bool keys_principals_valid(const char *s, size_t n)
{
	if (!s || n == 0 || n > KEYS_PRINCIPALS_MAX || s[0] == ',' || s[n - 1] == ',')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == ',' && s[i + 1] == ',')
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '-' || c == '_' || c == '@' || c == '+' || c == ','))
			return false;
	}
	return true;
}

/* Scans a token from s[i] to the first separator outside double quotes,
 * skipping \" inside quotes as sshd's option scanner does. */
static int scan_token(const char *s, size_t len, size_t i, size_t *ret_end)
{
	bool quoted = false;
	for (; i < len; i++) {
		if (quoted && s[i] == '\\' && i + 1 < len && s[i + 1] == '"')
			i++;
		else if (s[i] == '"')
			quoted = !quoted;
		else if (!quoted && is_sep(s[i]))
			break;
	}
	if (quoted)
		return -EINVAL;
	*ret_end = i;
	return 0;
}

/* Parses the options prefix s[0, n) against the allow-list. */
static int parse_options(const char *s, size_t n, struct keys_options *o, struct keys_error *e)
{
	size_t i = 0;
	bool seen_expiry = false;
	while (i < n) {
		size_t nb = i;
		while (i < n && s[i] != '=' && s[i] != ',' && s[i] != '"')
			i++;
		const char *name = s + nb;
		size_t nl = i - nb;
		const char *val = NULL;
		size_t vl = 0;
		if (nl == 0)
			return fail(e, -EINVAL, "empty option");
		if (i < n && s[i] == '"')
			return fail_token(e, -EINVAL, "quote in option name", name, nl);
		if (i < n && s[i] == '=') {
			i++;
			if (i >= n || s[i] != '"')
				return fail_token(e, -EINVAL, "option value not quoted", name, nl);
			i++;
			val = s + i;
			while (i < n && s[i] != '"') {
				if (s[i] == '\\')
					return fail_token(e, -EINVAL, "backslash in option value", name, nl);
				i++;
			}
			if (i >= n)
				return fail_token(e, -EINVAL, "unterminated quote in option", name, nl);
			vl = (size_t)(s + i - val);
			i++;
		}
		if (i < n) {
			if (s[i] != ',')
				return fail_token(e, -EINVAL, "garbage after option", name, nl);
			i++;
			if (i == n)
				return fail(e, -EINVAL, "trailing comma in options");
		}

		bool done = false;
		if (name_is(name, nl, "restrict")) {
			if (val)
				return fail_token(e, -EINVAL, "option takes no value", name, nl);
			if (o->restrict_)
				return fail_token(e, -EINVAL, "duplicate option", name, nl);
			o->restrict_ = true;
			done = true;
		}
		for (size_t j = 0; !done && j < ELEMENTSOF(no_flags); j++) {
			if (!name_is(name, nl, no_flags[j].name))
				continue;
			if (val)
				return fail_token(e, -EINVAL, "option takes no value", name, nl);
			if (o->no_flags & no_flags[j].flag)
				return fail_token(e, -EINVAL, "duplicate option", name, nl);
			o->no_flags |= no_flags[j].flag;
			done = true;
		}
		if (!done && name_is(name, nl, "from")) {
			if (!val)
				return fail_token(e, -EINVAL, "option needs a value", name, nl);
			if (o->from)
				return fail_token(e, -EINVAL, "duplicate option", name, nl);
			if (!from_valid(val, vl))
				return fail_token(e, -EINVAL, "invalid from= pattern list", val, vl);
			o->from = strndup(val, vl);
			if (!o->from)
				return fail(e, -ENOMEM, "out of memory");
			done = true;
		}
		if (!done && name_is(name, nl, "cert-authority")) {
			if (val)
				return fail_token(e, -EINVAL, "option takes no value", name, nl);
			if (o->cert_authority)
				return fail_token(e, -EINVAL, "duplicate option", name, nl);
			o->cert_authority = true;
			done = true;
		}
		if (!done && name_is(name, nl, "principals")) {
			if (!val)
				return fail_token(e, -EINVAL, "option needs a value", name, nl);
			if (o->principals)
				return fail_token(e, -EINVAL, "duplicate option", name, nl);
			if (!keys_principals_valid(val, vl))
				return fail_token(e, -EINVAL, "invalid principals= list", val, vl);
			o->principals = strndup(val, vl);
			if (!o->principals)
				return fail(e, -ENOMEM, "out of memory");
			done = true;
		}
		if (!done && name_is(name, nl, "expiry-time")) {
			char buf[32];
			time_t t;
			if (!val)
				return fail_token(e, -EINVAL, "option needs a value", name, nl);
			if (seen_expiry)
				return fail_token(e, -EINVAL, "duplicate option", name, nl);
			if (vl >= sizeof(buf))
				return fail_token(e, -EINVAL, "invalid expiry-time", val, vl);
			memcpy(buf, val, vl);
			buf[vl] = '\0';
			if (keys_parse_expiry(buf, &t) < 0)
				return fail_token(e, -EINVAL, "invalid expiry-time", val, vl);
			o->expiry = t;
			seen_expiry = true;
			done = true;
		}
		/* command= is refused on purpose. A forced command coming from
		 * the control plane would let whoever controls the OSC (or the
		 * Node annotation) run arbitrary commands in every session of
		 * that user, under sshd and outside cloud-config-exec's
		 * validation of what it applies; and sshd's quoting of the
		 * value (backslash-escaped quotes, shell interpretation by the
		 * user's shell) has changed between releases, so a value that
		 * is harmless to one sshd can be split differently by another.
		 * A key that needs a forced command belongs in a file its owner
		 * manages, not in the agent's output. */
		if (!done)
			for (size_t j = 0; j < ELEMENTSOF(sshd_options); j++)
				if (name_is(name, nl, sshd_options[j]))
					return fail_token(e, -EINVAL, "option not allowed", name, nl);
		if (!done)
			return fail_token(e, -EINVAL, "unknown option", name, nl);
	}
	if (o->principals && !o->cert_authority)
		return fail(e, -EINVAL, "principals= without cert-authority");
	return 0;
}

static void options_done(struct keys_options *o)
{
	free(o->from);
	free(o->principals);
	*o = (struct keys_options){};
}

static int parse_line(const char *line, size_t len, const struct keys_parse_params *params, bool options_ok,
		      struct keys_key *ret, struct keys_error *e)
{
	if (!line)
		return fail(e, -EINVAL, "no key");
	if (len > 0 && line[len - 1] == '\n')
		len--;
	if (len > KEYS_LINE_MAX)
		return fail(e, -EMSGSIZE, "key line too long");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)line[i];
		if (c == '\0')
			return fail(e, -EINVAL, "NUL byte in key line");
		if (c == '\n')
			return fail(e, -EINVAL, "newline in key line");
		if (c == '\r')
			return fail(e, -EINVAL, "carriage return in key line");
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return fail(e, -EINVAL, "control character in key line");
	}

	size_t i = 0, end;
	while (i < len && is_sep(line[i]))
		i++;
	if (i == len)
		return fail(e, -EINVAL, "empty key line");
	if (line[i] == '#')
		return fail(e, -EINVAL, "comment line, not a key");

	struct keys_key key = {};
	int k;
	bool cert;

	if (scan_token(line, len, i, &end) < 0)
		return fail(e, -EINVAL, "unterminated quote in key line");
	const struct type_info *ti = type_lookup(line + i, end - i, &cert);
	if (!ti && type_refused(line + i, end - i))
		return fail_token(e, -EPROTONOSUPPORT, "key type refused", line + i, end - i);
	if (!ti && !looks_like_options(line + i, end - i) && !followed_by_type(line, len, end))
		return fail_token(e, -EPROTONOSUPPORT, "unsupported key type", line + i, end - i);
	if (!ti) {
		/* An options prefix. */
		if (!options_ok)
			return fail(e, -EINVAL, "options not allowed");
		k = parse_options(line + i, end - i, &key.options, e);
		if (k < 0) {
			options_done(&key.options);
			return k;
		}
		i = end;
		while (i < len && is_sep(line[i]))
			i++;
		if (scan_token(line, len, i, &end) < 0) {
			k = fail(e, -EINVAL, "unterminated quote in key line");
			goto fail;
		}
		if (i == end) {
			k = fail(e, -EINVAL, "no key after options");
			goto fail;
		}
		ti = type_lookup(line + i, end - i, &cert);
		if (!ti) {
			if (type_refused(line + i, end - i))
				k = fail_token(e, -EPROTONOSUPPORT, "key type refused", line + i, end - i);
			else if (looks_like_options(line + i, end - i))
				k = fail(e, -EINVAL, "space in options");
			else
				k = fail_token(e, -EPROTONOSUPPORT, "unsupported key type", line + i, end - i);
			goto fail;
		}
	}

	/* The base64 blob. */
	i = end;
	while (i < len && is_sep(line[i]))
		i++;
	size_t bstart = i;
	while (i < len && !is_sep(line[i]))
		i++;
	if (i == bstart) {
		k = fail(e, -EINVAL, "no key data after type");
		goto fail;
	}
	unsigned char *blob;
	size_t blob_len;
	k = b64_decode(line + bstart, i - bstart, KEYS_LINE_MAX, 0, &blob, &blob_len);
	if (k == -EMSGSIZE) {
		k = fail(e, -EMSGSIZE, "key blob too long");
		goto fail;
	}
	if (k < 0) {
		k = fail(e, k == -ENOMEM ? -ENOMEM : -EINVAL, "key data not canonical base64");
		goto fail;
	}
	k = key_from_blob(ti, cert, blob, blob_len, params, &key, e);
	if (k < 0) {
		if (!key.blob)
			free(blob);
		goto fail;
	}
	if (key.options.cert_authority && key.certificate) {
		k = fail(e, -EINVAL, "cert-authority on a certificate");
		goto fail;
	}

	/* The comment: the rest of the line, outer separators trimmed. */
	while (i < len && is_sep(line[i]))
		i++;
	size_t cend = len;
	while (cend > i && is_sep(line[cend - 1]))
		cend--;
	if (cend > i) {
		const unsigned char *c = (const unsigned char *)line + i;
		size_t cn = cend - i;
		if (cn > KEYS_COMMENT_MAX) {
			k = fail(e, -EMSGSIZE, "comment too long");
			goto fail;
		}
		if (memchr(c, '\t', cn)) {
			k = fail(e, -EINVAL, "control character in comment");
			goto fail;
		}
		if (!utf8_valid(c, cn)) {
			k = fail(e, -EINVAL, "comment not valid UTF-8");
			goto fail;
		}
		key.comment = strndup((const char *)c, cn);
		if (!key.comment) {
			k = fail(e, -ENOMEM, "out of memory");
			goto fail;
		}
	}
	/* The canonical rendering can be longer than the input (expiry-time
	 * "20261201" becomes "20261201000000Z"); what is accepted must also
	 * render to a line that is accepted. */
	{
		_cleanup_free_ char *canon = keys_render_line(&key);
		if (!canon) {
			k = fail(e, -ENOMEM, "out of memory");
			goto fail;
		}
		if (strlen(canon) > KEYS_LINE_MAX) {
			k = fail(e, -EMSGSIZE, "key line too long");
			goto fail;
		}
	}
	*ret = key;
	return 0;
fail:
	keys_key_done(&key);
	return k;
}

int keys_parse_line_ex(const char *line, size_t len, const struct keys_parse_params *params,
		       struct keys_key *ret, struct keys_error *reterr)
{
	return parse_line(line, len, params, params && params->allow_options, ret, reterr);
}

int keys_parse_public_ex(const char *text, size_t len, const struct keys_parse_params *params,
			 struct keys_key *ret, struct keys_error *reterr)
{
	return parse_line(text, len, params, false, ret, reterr);
}

/* parse_line() for the forms that report only what was wrong. */
static int parse_line_what(const char *text, size_t len, const struct keys_parse_params *params, bool options,
			   struct keys_key *ret, const char **reterr_what)
{
	struct keys_error e = {};
	int r = parse_line(text, len, params, options, ret, &e);
	if (r < 0 && reterr_what)
		*reterr_what = e.what;
	return r;
}

int keys_parse_line(const char *line, size_t len, const struct keys_parse_params *params,
		    struct keys_key *ret, const char **reterr_what)
{
	return parse_line_what(line, len, params, params && params->allow_options, ret, reterr_what);
}

int keys_parse_public(const char *text, size_t len, const struct keys_parse_params *params,
		      struct keys_key *ret, const char **reterr_what)
{
	return parse_line_what(text, len, params, false, ret, reterr_what);
}

/* ---- expiry ----------------------------------------------------------- */

static int digits(const char *s, size_t n)
{
	int v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

int keys_parse_expiry(const char *s, time_t *ret)
{
	if (!s)
		return -EINVAL;
	size_t n = strnlen(s, 16);
	if (n > 0 && s[n - 1] == 'Z')
		n--;
	if (s[n] != '\0' && !(s[n] == 'Z' && s[n + 1] == '\0'))
		return -EINVAL;
	if (n != 8 && n != 12 && n != 14)
		return -EINVAL;
	int year = digits(s, 4), mon = digits(s + 4, 2), day = digits(s + 6, 2);
	int hour = n >= 12 ? digits(s + 8, 2) : 0, min = n >= 12 ? digits(s + 10, 2) : 0;
	int sec = n == 14 ? digits(s + 12, 2) : 0;
	if (year < 1970 || mon < 1 || mon > 12 || day < 1 || hour < 0 || hour > 23 || min < 0 || min > 59 ||
	    sec < 0 || sec > 59)
		return -EINVAL;
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
	if (day > mdays[mon - 1] + (mon == 2 && leap))
		return -EINVAL;
	struct tm tm = {
		.tm_year = year - 1900, .tm_mon = mon - 1, .tm_mday = day,
		.tm_hour = hour, .tm_min = min, .tm_sec = sec,
	};
	time_t t = timegm(&tm);
	if (t <= 0)
		return -EINVAL;
	*ret = t;
	return 0;
}

void keys_format_expiry(time_t t, char buf[static 16])
{
	if (t < 1)
		t = 1;
	if (t > KEYS_EXPIRY_MAX)
		t = KEYS_EXPIRY_MAX;
	struct tm tm;
	if (!gmtime_r(&t, &tm) || strftime(buf, 16, "%Y%m%d%H%M%SZ", &tm) != 15)
		memcpy(buf, "19700101000001Z", 16);
}

/* ---- render, copy, free ----------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_add(struct sbuf *b, const char *s)
{
	size_t n = strlen(s);
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n + 1);
	b->len += n;
}

static void sb_opt(struct sbuf *b, const char *s)
{
	if (b->len > 0)
		sb_add(b, ",");
	sb_add(b, s);
}

char *keys_render_line(const struct keys_key *key)
{
	struct sbuf b = {};
	const struct keys_options *o = &key->options;

	sb_add(&b, "");
	if (o->cert_authority)
		sb_opt(&b, "cert-authority");
	if (o->principals) {
		sb_opt(&b, "principals=\"");
		sb_add(&b, o->principals);
		sb_add(&b, "\"");
	}
	if (o->restrict_)
		sb_opt(&b, "restrict");
	for (size_t j = 0; j < ELEMENTSOF(no_flags); j++)
		if (o->no_flags & no_flags[j].flag)
			sb_opt(&b, no_flags[j].name);
	if (o->from) {
		sb_opt(&b, "from=\"");
		sb_add(&b, o->from);
		sb_add(&b, "\"");
	}
	if (o->expiry > 0) {
		char t[16];
		keys_format_expiry(o->expiry, t);
		sb_opt(&b, "expiry-time=\"");
		sb_add(&b, t);
		sb_add(&b, "\"");
	}
	if (b.len > 0)
		sb_add(&b, " ");
	sb_add(&b, key->type_name ? key->type_name : "");
	sb_add(&b, " ");
	sb_add(&b, key->blob_b64 ? key->blob_b64 : "");
	if (key->comment && key->comment[0]) {
		sb_add(&b, " ");
		sb_add(&b, key->comment);
	}
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

int keys_key_dup(const struct keys_key *src, struct keys_key *ret)
{
	struct keys_key k = *src;
	k.type_name = NULL;
	k.blob_b64 = NULL;
	k.blob = NULL;
	k.comment = NULL;
	k.options.from = NULL;
	k.options.principals = NULL;
	bool oom = false;
	if (src->type_name && !(k.type_name = strdup(src->type_name)))
		oom = true;
	if (src->blob_b64 && !(k.blob_b64 = strdup(src->blob_b64)))
		oom = true;
	if (src->comment && !(k.comment = strdup(src->comment)))
		oom = true;
	if (src->options.from && !(k.options.from = strdup(src->options.from)))
		oom = true;
	if (src->options.principals && !(k.options.principals = strdup(src->options.principals)))
		oom = true;
	if (src->blob) {
		k.blob = malloc(src->blob_len ? src->blob_len : 1);
		if (k.blob)
			memcpy(k.blob, src->blob, src->blob_len);
		else
			oom = true;
	}
	if (oom) {
		keys_key_done(&k);
		return -ENOMEM;
	}
	*ret = k;
	return 0;
}

void keys_key_done(struct keys_key *key)
{
	if (!key)
		return;
	free(key->type_name);
	free(key->blob_b64);
	free(key->blob);
	free(key->comment);
	options_done(&key->options);
	*key = (struct keys_key){};
}
