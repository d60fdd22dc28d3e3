/* OpenSSH certificate fields for the log; see sshcert.h. Base64 after RFC
 * 4648 section 4, the certificate layout after PROTOCOL.certkeys. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "cleanup.h"
#include "sshcert.h"

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int sshcert_b64_decode(const char *in, size_t len, uint8_t *out, size_t out_max)
{
	if (len % 4)
		return -EINVAL;
	size_t n = 0;
	for (size_t i = 0; i < len; i += 4) {
		bool last = i + 4 == len;
		int v[4];
		size_t pad = 0;
		for (int j = 0; j < 4; j++) {
			char c = in[i + (size_t)j];
			if (c == '=' && last && j >= 2) {
				v[j] = 0;
				pad++;
				continue;
			}
			if (pad) /* "=" only at the very end */
				return -EINVAL;
			v[j] = b64_value(c);
			if (v[j] < 0)
				return -EINVAL;
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
		/* Canonical: the bits a padded group drops must be zero. */
		if ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff)))
			return -EINVAL;
		size_t k = 3 - pad;
		if (n + k > out_max)
			return -EMSGSIZE;
		uint8_t b[3] = { (uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w };
		memcpy(out + n, b, k);
		n += k;
	}
	return (int)n;
}

int sshcert_b64_encode(const uint8_t *data, size_t len, char *out, size_t out_max)
{
	size_t need = (len + 2) / 3 * 4;
	if (need + 1 > out_max || need > INT32_MAX)
		return -EMSGSIZE;
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		size_t k = len - i < 3 ? len - i : 3;
		uint32_t w = (uint32_t)data[i] << 16 | (k > 1 ? (uint32_t)data[i + 1] << 8 : 0) | (k > 2 ? data[i + 2] : 0);
		out[o++] = b64_alphabet[(w >> 18) & 63];
		out[o++] = b64_alphabet[(w >> 12) & 63];
		out[o++] = k > 1 ? b64_alphabet[(w >> 6) & 63] : '=';
		out[o++] = k > 2 ? b64_alphabet[w & 63] : '=';
	}
	out[o] = '\0';
	return (int)o;
}

/* A bounded big-endian reader over the blob. */
struct rd {
	const uint8_t *p;
	size_t left;
};

static bool get_u32(struct rd *r, uint32_t *v)
{
	if (r->left < 4)
		return false;
	*v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	r->left -= 4;
	return true;
}

static bool get_u64(struct rd *r, uint64_t *v)
{
	uint32_t hi, lo;
	if (!get_u32(r, &hi) || !get_u32(r, &lo))
		return false;
	*v = (uint64_t)hi << 32 | lo;
	return true;
}

static bool get_string(struct rd *r, const uint8_t **s, size_t *len)
{
	uint32_t l;
	if (!get_u32(r, &l) || l > r->left)
		return false;
	*s = r->p;
	*len = l;
	r->p += l;
	r->left -= l;
	return true;
}

static bool ends_with(const uint8_t *s, size_t len, const char *sfx)
{
	size_t n = strlen(sfx);
	return len > n && memcmp(s + len - n, sfx, n) == 0;
}

#define CERT_SUFFIX "-cert-v01@openssh.com"

/* How many string/mpint fields the certified key's public part has
 * (PROTOCOL.certkeys per type; PROTOCOL.u2f for the sk- ones), or -1. */
static int public_fields(const uint8_t *type, size_t len)
{
	static const struct {
		const char *type;
		int fields;
	} known[] = {
		{ "ssh-rsa" CERT_SUFFIX, 2 },                /* e, n */
		{ "ssh-dss" CERT_SUFFIX, 4 },                /* p, q, g, y */
		{ "ecdsa-sha2-nistp256" CERT_SUFFIX, 2 },    /* curve, public key */
		{ "ecdsa-sha2-nistp384" CERT_SUFFIX, 2 },
		{ "ecdsa-sha2-nistp521" CERT_SUFFIX, 2 },
		{ "ssh-ed25519" CERT_SUFFIX, 1 },            /* pk */
		{ "sk-ecdsa-sha2-nistp256" CERT_SUFFIX, 3 }, /* curve, ec_point, application */
		{ "sk-ssh-ed25519" CERT_SUFFIX, 2 },         /* pk, application */
	};
	for (size_t i = 0; i < ELEMENTSOF(known); i++)
		if (strlen(known[i].type) == len && memcmp(known[i].type, type, len) == 0)
			return known[i].fields;
	return -1;
}

int sshcert_parse(const uint8_t *blob, size_t len, struct sshcert_info *ret)
{
	if (!blob || len > SSHCERT_BLOB_MAX)
		return -EBADMSG;
	struct rd r = { .p = blob, .left = len };
	struct sshcert_info c = { 0 };
	const uint8_t *s, *type;
	size_t slen, type_len;
	uint64_t u64;
	if (!get_string(&r, &type, &type_len) || !ends_with(type, type_len, CERT_SUFFIX))
		return -EBADMSG;
	int fields = public_fields(type, type_len);
	if (fields < 0)
		return -EOPNOTSUPP;
	if (!get_string(&r, &s, &slen)) /* nonce */
		return -EBADMSG;
	for (int i = 0; i < fields; i++)
		if (!get_string(&r, &s, &slen))
			return -EBADMSG;
	c.type = (const char *)type;
	c.type_len = type_len;
	if (!get_u64(&r, &c.serial) || !get_u32(&r, &c.cert_type) || !get_string(&r, &c.key_id, &c.key_id_len) ||
	    !get_string(&r, &s, &slen) ||                                    /* valid principals */
	    !get_u64(&r, &u64) || !get_u64(&r, &u64) ||                      /* valid after, before */
	    !get_string(&r, &s, &slen) || !get_string(&r, &s, &slen) ||      /* critical options, extensions */
	    !get_string(&r, &s, &slen) ||                                    /* reserved */
	    !get_string(&r, &c.ca_key, &c.ca_key_len) || !get_string(&r, &s, &slen) || /* signature key, signature */
	    r.left != 0)
		return -EBADMSG;
	/* The signature key: a plain public key, its own type string first. */
	struct rd k = { .p = c.ca_key, .left = c.ca_key_len };
	if (!get_string(&k, &s, &slen) || slen == 0 || ends_with(s, slen, CERT_SUFFIX) || k.left == 0)
		return -EBADMSG;
	*ret = c;
	return 0;
}
