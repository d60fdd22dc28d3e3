/* OpenSSH certificate fields for the log; see sshcert.h. The certificate
 * layout after PROTOCOL.certkeys. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "cleanup.h"
#include "sshcert.h"
#include "sshwire.h"

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
	struct sshwire r = { .p = blob, .len = len };
	struct sshcert_info c = { 0 };
	const uint8_t *s, *type;
	size_t slen, type_len;
	uint64_t u64;
	if (sshwire_string(&r, &type, &type_len) < 0 || !ends_with(type, type_len, CERT_SUFFIX))
		return -EBADMSG;
	int fields = public_fields(type, type_len);
	if (fields < 0)
		return -EOPNOTSUPP;
	if (sshwire_string(&r, &s, &slen) < 0) /* nonce */
		return -EBADMSG;
	for (int i = 0; i < fields; i++)
		if (sshwire_string(&r, &s, &slen) < 0)
			return -EBADMSG;
	c.type = (const char *)type;
	c.type_len = type_len;
	if (sshwire_u64(&r, &c.serial) < 0 || sshwire_u32(&r, &c.cert_type) < 0 || sshwire_string(&r, &c.key_id, &c.key_id_len) < 0 ||
	    sshwire_string(&r, &s, &slen) < 0 ||                                    /* valid principals */
	    sshwire_u64(&r, &u64) < 0 || sshwire_u64(&r, &u64) < 0 ||                      /* valid after, before */
	    sshwire_string(&r, &s, &slen) < 0 || sshwire_string(&r, &s, &slen) < 0 ||      /* critical options, extensions */
	    sshwire_string(&r, &s, &slen) < 0 ||                                    /* reserved */
	    sshwire_string(&r, &c.ca_key, &c.ca_key_len) < 0 || sshwire_string(&r, &s, &slen) < 0 || /* signature key, signature */
	    r.len != 0)
		return -EBADMSG;
	/* The signature key: a plain public key, its own type string first. */
	struct sshwire k = { .p = c.ca_key, .len = c.ca_key_len };
	if (sshwire_string(&k, &s, &slen) < 0 || slen == 0 || ends_with(s, slen, CERT_SUFFIX) || k.len == 0)
		return -EBADMSG;
	*ret = c;
	return 0;
}
