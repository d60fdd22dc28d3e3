/* OpenSSH certificate fields for the log; see sshcert.h. The certificate
 * layout after PROTOCOL.certkeys. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "cleanup.h"
#include "sshcert.h"

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
