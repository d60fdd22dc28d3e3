/* Unit tests for lib/ssh/sshcert.c: real certificates made by ssh-keygen
 * (tests/fixtures/certs/: an ed25519 CA signed ed25519 and ecdsa keys, an
 * RSA CA an RSA key) read back with their serial, key id and CA key; the
 * strict base64; every truncation and a few malformed blobs refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "b64.h"
#include "sshcert.h"

/* Field 2 (the base64) of the one-line file tests/fixtures/certs/name. */
static void read_b64(const char *name, char *out, size_t size)
{
	const char *src = getenv("NA_SRCDIR");
	char path[512], line[8192];
	snprintf(path, sizeof(path), "%s/tests/fixtures/certs/%s", src ? src : ".", name);
	FILE *f = fopen(path, "re");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	char *sp = strchr(line, ' ');
	assert_non_null(sp);
	char *end = strpbrk(sp + 1, " \n");
	if (end)
		*end = '\0';
	assert_true(strlen(sp + 1) < size);
	snprintf(out, size, "%s", sp + 1);
}

static void real_certificates(void **state)
{
	static const struct {
		const char *cert, *ca, *type, *key_id;
		uint64_t serial;
	} cases[] = {
		{ "ued25519-cert.pub", "ca.pub", "ssh-ed25519-cert-v01@openssh.com", "ops@example \"x\"", 12345678901 },
		{ "uecdsa-cert.pub", "ca.pub", "ecdsa-sha2-nistp256-cert-v01@openssh.com", "ec-id", 0 },
		{ "ursa-cert.pub", "carsa.pub", "ssh-rsa-cert-v01@openssh.com", "rsa-id", 3 },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char b64[8192], ca[8192], enc[8192];
		uint8_t blob[SSHCERT_BLOB_MAX];
		read_b64(cases[i].cert, b64, sizeof(b64));
		read_b64(cases[i].ca, ca, sizeof(ca));
		int n = b64_decode_into(b64, strlen(b64), blob, sizeof(blob));
		assert_true(n > 0);
		/* The encoder gives the same text back. */
		assert_int_equal(b64_encode_into(blob, (size_t)n, enc, sizeof(enc)), (int)strlen(b64));
		assert_string_equal(enc, b64);

		struct sshcert_info c;
		assert_int_equal(sshcert_parse(blob, (size_t)n, &c), 0);
		assert_int_equal(c.type_len, strlen(cases[i].type));
		assert_memory_equal(c.type, cases[i].type, c.type_len);
		assert_int_equal(c.serial, cases[i].serial);
		assert_int_equal(c.cert_type, 1);
		assert_int_equal(c.key_id_len, strlen(cases[i].key_id));
		assert_memory_equal(c.key_id, cases[i].key_id, c.key_id_len);
		assert_true(b64_encode_into(c.ca_key, c.ca_key_len, enc, sizeof(enc)) > 0);
		assert_string_equal(enc, ca);

		/* Every truncation is refused, and one byte more too. */
		for (int k = 0; k < n; k++)
			assert_int_equal(sshcert_parse(blob, (size_t)k, &c), -EBADMSG);
		blob[n] = 0;
		assert_int_equal(sshcert_parse(blob, (size_t)n + 1, &c), -EBADMSG);
	}
	/* A plain public key is no certificate. */
	char ca[8192];
	uint8_t blob[1024];
	read_b64("ca.pub", ca, sizeof(ca));
	int n = b64_decode_into(ca, strlen(ca), blob, sizeof(blob));
	struct sshcert_info c;
	assert_int_equal(sshcert_parse(blob, (size_t)n, &c), -EBADMSG);
}

static void unknown_type(void **state)
{
	static const uint8_t blob[] = { 0, 0, 0, 30, 's', 's', 'h', '-', 'x', '-', 'c', 'e', 'r', 't', '-', 'v', '0', '1',
					'@', 'o', 'p', 'e', 'n', 's', 's', 'h', '.', 'c', 'o', 'm', 0, 0 };
	struct sshcert_info c;
	/* "ssh-x-cert-v01@openssh.com" is 26 bytes: a length of 30 overruns. */
	assert_int_equal(sshcert_parse(blob, sizeof(blob), &c), -EBADMSG);
	uint8_t ok[64] = { 0, 0, 0, 26 };
	memcpy(ok + 4, "ssh-x-cert-v01@openssh.com", 26);
	assert_int_equal(sshcert_parse(ok, 30, &c), -EOPNOTSUPP);
	assert_int_equal(sshcert_parse(NULL, 0, &c), -EBADMSG);
}

static void strict_base64(void **state)
{
	uint8_t out[16];
	static const struct {
		const char *in;
		int ret;
	} cases[] = {
		{ "", 0 },
		{ "QQ==", 1 },
		{ "QUI=", 2 },
		{ "QUJD", 3 },
		{ "QR==", -EINVAL },   /* non-zero padding bits */
		{ "QUJ=", -EINVAL },
		{ "QQ=", -EINVAL },    /* not a multiple of 4 */
		{ "Q===", -EINVAL },
		{ "=QUJ", -EINVAL },
		{ "QQ==QUJD", -EINVAL }, /* padding in the middle */
		{ "QU JD", -EINVAL },
		{ "QUJ\nD", -EINVAL },
		{ "QUJDQUJDQUJDQUJDQUJDQUJD", -EMSGSIZE }, /* 18 bytes > 16 */
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		assert_int_equal(b64_decode_into(cases[i].in, strlen(cases[i].in), out, sizeof(out)), cases[i].ret);
	char enc[8];
	assert_int_equal(b64_encode_into((const uint8_t *)"AB", 2, enc, sizeof(enc)), 4);
	assert_string_equal(enc, "QUI=");
	assert_int_equal(b64_encode_into((const uint8_t *)"ABCDEF", 6, enc, sizeof(enc)), -EMSGSIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(real_certificates),
		cmocka_unit_test(unknown_type),
		cmocka_unit_test(strict_base64),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
