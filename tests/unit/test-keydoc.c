/* Unit tests for lib/ssh/keydoc.c: the expiring-key JSON document and Gardener's
 * authorized-keys lines, good and bad, with the exact error each reports. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "cleanup.h"
#include "keydoc.h"

/* Generated with ssh-keygen 9.2; fingerprints as ssh-keygen -lf printed them. */
#define ED_B64 "AAAAC3NzaC1lZDI1NTE5AAAAIGfd+iPjlzBltPL4PvRTrC1yPo0GFhT1Kg/v4d9iBMgE"
#define ED_FP "SHA256:u/SUi2Qq9roSBClFwUtoDYINOvCGWS1MFKPlbh9pHho"
#define OLD_B64 "AAAAC3NzaC1lZDI1NTE5AAAAICLR8w8uRQY2fPR/Cr4V+nWZo5iaWwQ28WICgKojLMqj"
#define OLD_FP "SHA256:SocGAdRJjl1caTVkaZcZADt02pQO7Axe/XopivCIH8s"
#define EC_B64                                                                                            \
	"AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBPdkADKQW0V054/Kwim7p/KMWZkgiGD800L0/ZEUj8GymEFwC" \
	"AXWW+PGfte79USMoy4/BC8ONkbX6F/2i9BUPZ0="
#define EC_FP "SHA256:tv/w0CdAtC5p2j4YHmSnhD7YzeNraT2ZnfrHD71Gra4"
#define RSA_B64                                                                                            \
	"AAAAB3NzaC1yc2EAAAADAQABAAABAQDHf0dl70x9Vgesi4dZYIkLGd8D/YyKnRKz/6aPNsA5I/DQYiINawG95pnyR7U3zp7OFVUr" \
	"M2dSiiQ1WFuf8t5sdjHcym814bZt6jaV1mnA0PTP9/lfI5QnQfjARMoWHjhWs/eKbF5oUu/fMCWCzJpPTApPmyMjczCRSl7aRmie" \
	"+V4Ql+V61c39Xn6mq0bkclbFOeUpkGjdGeMP1yxDahWYDMkHvyoIhv/lxYKLPQWx3DsurPn/o7J7PMP980fV6MpaD6t7vX9jtVIC" \
	"rvg6JVtRFMAPOTcBhVWUsHy2fuD6os1WyJaHrJYm2QrYCGtA0mWDJqvBrSaLjfDXWIFF9C+P"
#define RSA_FP "SHA256:qoypWDnV4KvHv1Q1zhtukZL9RD/AJ9hKV/+zL2pYKL8"
#define WEAK_B64                                                                                           \
	"AAAAB3NzaC1yc2EAAAADAQABAAAAgQC65n6ym57+N8iYwx6IoUxM2ei8l8gUYeZ3W9w72s7Yu0gYgza9C47S5gpgSIRNTAJ9cwv4" \
	"veBt/vzdb46fmFY7cvJDM9MuppVdmKEfmpr+BVBg5UFcB8VqPtVkE9p/4sm/1DCt33CkMpEIcdSRQnqG5xJPVek6sKF1OWU5LSGc" \
	"sw=="

static void good_json(void **state)
{
	const char *doc =
		"[\n"
		" {\"user\": \"alice\", \"type\": \"ssh-ed25519\", \"publicKey\": \"" ED_B64 "\",\n"
		"  \"comment\": \"alice@laptop\", \"until\": \"2026-12-01T00:00:00Z\"},\n"
		" {\"user\": \"bob\", \"type\": \"ecdsa-sha2-nistp256\", \"publicKey\": \"ecdsa-sha2-nistp256 " EC_B64
		" from-key\", \"until\": 1796117459, \"unknownField\": [1, {\"x\": null}]},\n"
		" {\"user\": \"_svc-1$\", \"type\": \"ssh-rsa\", \"publicKey\": \"" RSA_B64 "\", \"comment\": null,"
		"  \"until\": null},\n"
		" {\"user\": \"alice\", \"type\": \"ssh-ed25519\", \"publicKey\": \"ssh-ed25519 " OLD_B64 " old\","
		"  \"comment\": \"J\\u00fcrgen's old key\", \"until\": \"2026-12-01T09:30:59.123456Z\"}\n"
		"]\n";
	struct keydoc d = {};
	char err[KEYDOC_ERR_MAX] = "";
	int r = keydoc_parse_json(doc, strlen(doc), NULL, &d, err, sizeof(err));
	if (r < 0)
		fail_msg("%d %s", r, err);
	assert_int_equal(d.n, 4);

	assert_string_equal(d.entries[0].user, "alice");
	assert_string_equal(d.entries[0].key.fingerprint, ED_FP);
	assert_string_equal(d.entries[0].key.comment, "alice@laptop");
	assert_int_equal(d.entries[0].key.options.expiry, 1796083200);

	assert_string_equal(d.entries[1].user, "bob");
	assert_int_equal(d.entries[1].key.type, KEYS_TYPE_ECDSA_P256);
	assert_string_equal(d.entries[1].key.fingerprint, EC_FP);
	assert_string_equal(d.entries[1].key.comment, "from-key");
	assert_int_equal(d.entries[1].key.options.expiry, 1796117459);

	assert_string_equal(d.entries[2].user, "_svc-1$");
	assert_string_equal(d.entries[2].key.fingerprint, RSA_FP);
	assert_int_equal(d.entries[2].key.bits, 2048);
	assert_null(d.entries[2].key.comment);
	assert_int_equal(d.entries[2].key.options.expiry, 0);

	assert_string_equal(d.entries[3].key.fingerprint, OLD_FP);
	assert_string_equal(d.entries[3].key.comment, "J\xc3\xbcrgen's old key");
	assert_int_equal(d.entries[3].key.options.expiry, 1796117459);

	/* What the executor will write for sshd. */
	_cleanup_free_ char *line = keys_render_line(&d.entries[0].key);
	assert_string_equal(line, "expiry-time=\"20261201000000Z\" ssh-ed25519 " ED_B64 " alice@laptop");
	keydoc_done(&d);
	keydoc_done(&d);

	/* The empty document. */
	assert_int_equal(keydoc_parse_json(" [ ] ", 5, NULL, &d, err, sizeof(err)), 0);
	assert_int_equal(d.n, 0);
	keydoc_done(&d);
}

#define ENTRY(fields) "{\"user\":\"alice\",\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "\"" fields "}"

static void bad_json(void **state)
{
	static const struct {
		const char *doc;
		int r;
		const char *err;
	} t[] = {
		{ "", -EINVAL, "document: invalid JSON near byte 0" },
		{ "{}", -EINVAL, "document: not a JSON array" },
		{ "[] x", -EINVAL, "document: trailing data at byte 3" },
		{ "[] []", -EINVAL, "document: trailing data at byte 3" },
		{ "[1,]", -EINVAL, "document: invalid JSON near byte 3" },
		{ "[1]", -EINVAL, "[0]: not an object" },
		{ "[" ENTRY("") ", \"x\"]", -EINVAL, "[1]: not an object" },
		{ "[{\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "\"}]", -EINVAL, "[0].user: missing" },
		{ "[{\"user\":\"a\",\"publicKey\":\"" ED_B64 "\"}]", -EINVAL, "[0].type: missing" },
		{ "[{\"user\":\"a\",\"type\":\"ssh-ed25519\"}]", -EINVAL, "[0].publicKey: missing" },
		{ "[{\"user\":\"a\",\"user\":\"b\",\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "\"}]", -EINVAL,
		  "[0].user: duplicate field" },
		{ "[{\"user\":1,\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "\"}]", -EINVAL,
		  "[0].user: not a string" },
		{ "[{\"user\":null,\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "\"}]", -EINVAL,
		  "[0].user: not a string" },
		{ "[" ENTRY(",\"comment\":5") "]", -EINVAL, "[0].comment: not a string" },
		{ "[" ENTRY(",\"until\":true") "]", -EINVAL, "[0].until: not a string or number" },
		{ "[" ENTRY(",\"until\":1.5") "]", -EINVAL, "[0].until: not a unix time in range" },
		{ "[" ENTRY(",\"until\":-1") "]", -EINVAL, "[0].until: not a unix time in range" },
		{ "[" ENTRY(",\"until\":1e300") "]", -EINVAL, "[0].until: not a unix time in range" },
		{ "[" ENTRY(",\"until\":\"2026-12-01\"") "]", -EINVAL, "[0].until: not an RFC 3339 UTC time" },
		{ "[" ENTRY(",\"until\":\"2026-12-01T00:00:00+01:00\"") "]", -EINVAL,
		  "[0].until: not an RFC 3339 UTC time" },
		{ "[" ENTRY(",\"until\":\"2026-02-30T00:00:00Z\"") "]", -EINVAL, "[0].until: not an RFC 3339 UTC time" },
		{ "[" ENTRY(",\"until\":\"20261201000000Z\"") "]", -EINVAL, "[0].until: not an RFC 3339 UTC time" },
		{ "[{\"user\":\"Alice\",\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "\"}]", -EINVAL,
		  "[0].user: invalid user name" },
		{ "[{\"user\":\"a/../b\",\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "\"}]", -EINVAL,
		  "[0].user: invalid user name" },
		{ "[{\"user\":\"abcdefghijabcdefghijabcdefghijabc\",\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64
		  "\"}]",
		  -EINVAL, "[0].user: invalid user name" },
		{ "[{\"user\":\"a\\u0000b\",\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "\"}]", -EINVAL,
		  "document: NUL byte or \\u0000 escape" },
		{ "[{\"user\":\"a\",\"type\":\"ssh-rsa\",\"publicKey\":\"" ED_B64 "\"}]", -EINVAL,
		  "[0].publicKey: inner type mismatch" },
		{ "[{\"user\":\"a\",\"type\":\"ssh-dss\",\"publicKey\":\"" ED_B64 "\"}]", -EPROTONOSUPPORT,
		  "[0].type: key type refused \"ssh-dss\"" },
		{ "[{\"user\":\"a\",\"type\":\"ssh-foo\",\"publicKey\":\"" ED_B64 "\"}]", -EPROTONOSUPPORT,
		  "[0].type: unsupported key type \"ssh-foo\"" },
		{ "[{\"user\":\"a\",\"type\":\"ssh-rsa\",\"publicKey\":\"ssh-ed25519 " ED_B64 "\"}]", -EINVAL,
		  "[0].type: does not match the key's type" },
		{ "[{\"user\":\"a\",\"type\":\"ssh-rsa\",\"publicKey\":\"" WEAK_B64 "\"}]", -EKEYREJECTED,
		  "[0].publicKey: RSA modulus too small" },
		{ "[{\"user\":\"a\",\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "=\"}]", -EINVAL,
		  "[0].publicKey: not canonical base64" },
		{ "[{\"user\":\"a\",\"type\":\"ssh-ed25519\",\"publicKey\":\"command=\\\"/bin/sh\\\" ssh-ed25519 " ED_B64
		  "\"}]",
		  -EINVAL, "[0].publicKey: options not allowed" },
		{ "[{\"user\":\"a\",\"type\":\"ssh-ed25519\",\"publicKey\":\"ssh-ed25519 " ED_B64 "\\nssh-ed25519 " OLD_B64
		  "\"}]",
		  -EINVAL, "[0].publicKey: newline in key line" },
		{ "[" ENTRY(",\"comment\":\"x\\nssh-rsa AAAA\"") "]", -EINVAL, "[0].comment: newline in key line" },
		{ "[" ENTRY(",\"comment\":\"x\\r\"") "]", -EINVAL, "[0].comment: carriage return in key line" },
		{ "[" ENTRY(",\"comment\":\"a\\u001bb\"") "]", -EINVAL, "[0].comment: control character in key line" },
		{ "[" ENTRY("") "," ENTRY(",\"until\":5") "]", -EINVAL, "[1]: same user and key as [0]" },
		{ "[" ENTRY(",\"revoked\":1") "]", -EINVAL, "[0].revoked: not a boolean" },
		{ "[" ENTRY(",\"revoked\":\"true\"") "]", -EINVAL, "[0].revoked: not a boolean" },
		{ "[" ENTRY(",\"revoked\":true,\"revoked\":false") "]", -EINVAL, "[0].revoked: duplicate field" },
		{ "[" ENTRY(",\"revoked\":true,\"until\":5") "]", -EINVAL, "[0].until: not allowed on a revoked entry" },
		{ "[" ENTRY("") "," ENTRY(",\"revoked\":true") "]", -EINVAL, "[1]: same user and key as [0]" },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		struct keydoc d = { .n = 4242 };
		char err[KEYDOC_ERR_MAX] = "";
		int r = keydoc_parse_json(t[i].doc, strlen(t[i].doc), NULL, &d, err, sizeof(err));
		print_message("%2zu -> %d %s\n", i, r, err);
		if (r != t[i].r || strcmp(err, t[i].err) != 0)
			fail_msg("case %zu: got %d \"%s\", want %d \"%s\"", i, r, err, t[i].r, t[i].err);
		assert_int_equal(d.n, 4242);
		assert_null(d.entries);
	}
	/* err may be NULL. */
	struct keydoc d = {};
	assert_int_equal(keydoc_parse_json("{}", 2, NULL, &d, NULL, 0), -EINVAL);
}

static void revoked_entries(void **state)
{
	(void)state;
	const char *doc = "[" ENTRY(",\"revoked\":true") ","
			  "{\"user\":\"bob\",\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "\",\"revoked\":false,"
			  "\"until\":5}]";
	struct keydoc d = {};
	char err[KEYDOC_ERR_MAX] = "";
	assert_int_equal(keydoc_parse_json(doc, strlen(doc), NULL, &d, err, sizeof(err)), 0);
	assert_int_equal(d.n, 2);
	assert_true(d.entries[0].revoked);
	assert_int_equal(d.entries[0].key.options.expiry, 0);
	assert_false(d.entries[1].revoked);
	assert_int_equal(d.entries[1].key.options.expiry, 5);
	keydoc_done(&d);
}

static void cert_authorities(void **state)
{
	(void)state;
	const char *doc = "[" ENTRY(",\"certAuthority\":true,\"principals\":[\"alice\",\"ops@example.org\"],"
				    "\"until\":1893456000") "]";
	struct keydoc d = {};
	char err[KEYDOC_ERR_MAX] = "";
	assert_int_equal(keydoc_parse_json(doc, strlen(doc), NULL, &d, err, sizeof(err)), 0);
	assert_true(d.entries[0].key.options.cert_authority);
	assert_string_equal(d.entries[0].key.options.principals, "alice,ops@example.org");
	_cleanup_free_ char *line = keys_render_line(&d.entries[0].key);
	assert_non_null(line);
	assert_true(strncmp(line, "cert-authority,principals=\"alice,ops@example.org\",expiry-time=\"20300101000000Z\" "
				  "ssh-ed25519 ", 90) == 0);
	keydoc_done(&d);

	static const struct {
		const char *doc, *err;
	} bad[] = {
		{ "[" ENTRY(",\"principals\":[\"a\"]") "]", "[0].principals: only with \"certAuthority\": true" },
		{ "[" ENTRY(",\"certAuthority\":1") "]", "[0].certAuthority: not a boolean" },
		{ "[" ENTRY(",\"certAuthority\":true,\"principals\":[]") "]", "[0].principals: not a non-empty array" },
		{ "[" ENTRY(",\"certAuthority\":true,\"principals\":\"a\"") "]", "[0].principals: not a non-empty array" },
		{ "[" ENTRY(",\"certAuthority\":true,\"principals\":[\"a,b\"]") "]",
		  "[0].principals[0]: not a principal name" },
		{ "[" ENTRY(",\"certAuthority\":true,\"principals\":[\"a\",7]") "]",
		  "[0].principals[1]: not a principal name" },
		{ "[" ENTRY(",\"certAuthority\":true,\"principals\":[\"a b\"]") "]",
		  "[0].principals: a name with characters other than [A-Za-z0-9._@+-]" },
		{ "[" ENTRY(",\"revokedSerials\":[3]") "]", "[0].revokedSerials: only with \"certAuthority\": true" },
		{ "[" ENTRY(",\"certAuthority\":true,\"revokedSerials\":[]") "]",
		  "[0].revokedSerials: not a non-empty array" },
		{ "[" ENTRY(",\"certAuthority\":true,\"revokedSerials\":3") "]",
		  "[0].revokedSerials: not a non-empty array" },
		{ "[" ENTRY(",\"certAuthority\":true,\"revokedSerials\":[1,0]") "]",
		  "[0].revokedSerials[1]: not a serial 1..2^64-1" },
		{ "[" ENTRY(",\"certAuthority\":true,\"revokedSerials\":[1.5]") "]",
		  "[0].revokedSerials[0]: not a serial 1..2^64-1" },
		{ "[" ENTRY(",\"certAuthority\":true,\"revokedSerials\":[9007199254740992]") "]",
		  "[0].revokedSerials[0]: not a serial 1..2^64-1" },
		{ "[" ENTRY(",\"certAuthority\":true,\"revokedSerials\":[\"18446744073709551616\"]") "]",
		  "[0].revokedSerials[0]: not a serial 1..2^64-1" },
		{ "[" ENTRY(",\"certAuthority\":true,\"revokedSerials\":[\"012\"]") "]",
		  "[0].revokedSerials[0]: not a serial 1..2^64-1" },
		{ "[" ENTRY(",\"certAuthority\":true,\"revokedSerials\":[\"-1\"]") "]",
		  "[0].revokedSerials[0]: not a serial 1..2^64-1" },
		{ "[" ENTRY(",\"certAuthority\":true,\"revokedSerials\":[true]") "]",
		  "[0].revokedSerials[0]: not a serial 1..2^64-1" },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct keydoc x = { .n = 4242 };
		err[0] = '\0';
		int r = keydoc_parse_json(bad[i].doc, strlen(bad[i].doc), NULL, &x, err, sizeof(err));
		if (r != -EINVAL || strcmp(err, bad[i].err) != 0)
			fail_msg("case %zu: got %d \"%s\", want \"%s\"", i, r, err, bad[i].err);
		assert_int_equal(x.n, 4242);
	}

	const char *sdoc = "[" ENTRY(",\"certAuthority\":true,\"revokedSerials\":[7,9007199254740991,"
				     "\"18446744073709551615\",7]") "]";
	assert_int_equal(keydoc_parse_json(sdoc, strlen(sdoc), NULL, &d, err, sizeof(err)), 0);
	assert_int_equal(d.entries[0].n_revoked_serials, 4);
	assert_int_equal(d.entries[0].revoked_serials[0], 7);
	assert_int_equal(d.entries[0].revoked_serials[1], 9007199254740991ull);
	assert_int_equal(d.entries[0].revoked_serials[2], UINT64_MAX);
	assert_false(d.entries[0].revoked);
	keydoc_done(&d);

	const char *lines = "cert-authority,principals=\"alice\" ssh-ed25519 " ED_B64 " ca\n";
	assert_int_equal(keydoc_parse_lines(lines, strlen(lines), "gardener", NULL, &d, err, sizeof(err)), 0);
	assert_int_equal(d.n, 1);
	assert_true(d.entries[0].key.options.cert_authority);
	assert_string_equal(d.entries[0].key.options.principals, "alice");
	keydoc_done(&d);
}

static void limits(void **state)
{
	char err[KEYDOC_ERR_MAX];
	struct keydoc d = {};
	/* Over 1 MiB: refused before parsing. */
	size_t big = KEYDOC_SIZE_MAX + 1;
	_cleanup_free_ char *s = malloc(big);
	memset(s, ' ', big);
	s[0] = '[';
	s[big - 1] = ']';
	assert_int_equal(keydoc_parse_json(s, big, NULL, &d, err, sizeof(err)), -EMSGSIZE);
	assert_string_equal(err, "document: larger than 1048576 bytes");
	assert_int_equal(keydoc_parse_json(s, big - 1 - 1, NULL, &d, err, sizeof(err)), -EINVAL);

	/* 1025 entries: refused; 1024 distinct keys would be fine but need
	 * 1024 keys, so count with empty objects (the count is checked first). */
	size_t n = 0;
	_cleanup_free_ char *many = malloc(8 * 1100);
	many[n++] = '[';
	for (int i = 0; i < 1025; i++) {
		memcpy(many + n, i ? ",{}" : "{}", i ? 3 : 2);
		n += i ? 3 : 2;
	}
	many[n++] = ']';
	assert_int_equal(keydoc_parse_json(many, n, NULL, &d, err, sizeof(err)), -EMSGSIZE);
	assert_string_equal(err, "document: more than 1024 entries");
	/* One fewer: reaches the entries. */
	n -= 4;
	many[n++] = ']';
	assert_int_equal(keydoc_parse_json(many, n, NULL, &d, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "[0].user: missing");

	/* Deep nesting in an ignored field: cJSON's own limit, no crash. */
	_cleanup_free_ char *deep = malloc(5000);
	size_t k = 0;
	const char *pre = "[{\"user\":\"a\",\"x\":";
	memcpy(deep, pre, strlen(pre));
	k = strlen(pre);
	for (int i = 0; i < 2000; i++)
		deep[k++] = '[';
	assert_int_equal(keydoc_parse_json(deep, k, NULL, &d, err, sizeof(err)), -EINVAL);
}

static void time_table(void **state)
{
	static const struct {
		const char *s;
		int r;
		time_t t;
	} t[] = {
		{ "2026-12-01T00:00:00Z", 0, 1796083200 },
		{ "2026-12-01T09:30:59.999999999Z", 0, 1796117459 },
		{ "2024-02-29T23:59:59Z", 0, 1709251199 },
		{ "9999-12-31T23:59:59Z", 0, KEYS_EXPIRY_MAX },
		{ "2026-12-01T09:30:59.Z", -EINVAL, 0 },
		{ "2026-12-01T09:30:59.1234567890Z", -EINVAL, 0 },
		{ "2026-12-01t00:00:00Z", -EINVAL, 0 },
		{ "2026-12-01T00:00:00z", -EINVAL, 0 },
		{ "2026-12-01T00:00:00", -EINVAL, 0 },
		{ "2026-12-01T00:00:00ZZ", -EINVAL, 0 },
		{ "2026-12-01T00:00:60Z", -EINVAL, 0 },
		{ "2026-12-01T24:00:00Z", -EINVAL, 0 },
		{ "2023-02-29T00:00:00Z", -EINVAL, 0 },
		{ "1970-01-01T00:00:00Z", -EINVAL, 0 },
		{ "2026-1-01T00:00:00Z", -EINVAL, 0 },
		{ "+026-12-01T00:00:00Z", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		time_t v = 42;
		int r = keydoc_parse_time(t[i].s, &v);
		if (r != t[i].r)
			fail_msg("\"%s\": %d", t[i].s, r);
		assert_int_equal(v, r == 0 ? t[i].t : 42);
	}
}

static void users(void **state)
{
	static const char *const good[] = { "a", "_", "gardener", "a-b_c9", "machine$", "abcdefghijabcdefghijabcdefghijab" };
	static const char *const bad[] = { "", "A", "9a", "-a", "a b", "a$b", "$", "a.b", "root\n", "\xc3\xa4",
					   "abcdefghijabcdefghijabcdefghijabc" };
	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		assert_true(keydoc_user_valid(good[i]));
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (keydoc_user_valid(bad[i]))
			fail_msg("\"%s\" accepted", bad[i]);
	assert_false(keydoc_user_valid(NULL));
}

static void gardener_lines(void **state)
{
	const char *file = "ssh-ed25519 " ED_B64 " current\n"
			   "\n"
			   "# rotated 2026-11-01\n"
			   "   \t\n"
			   "ssh-ed25519 " OLD_B64 " previous\n"
			   "ssh-ed25519 " ED_B64 " current again\n"
			   "ssh-rsa " RSA_B64; /* no final newline */
	struct keydoc d = {};
	char err[KEYDOC_ERR_MAX] = "";
	int r = keydoc_parse_lines(file, strlen(file), "gardener", NULL, &d, err, sizeof(err));
	if (r < 0)
		fail_msg("%d %s", r, err);
	assert_int_equal(d.n, 3);
	assert_string_equal(d.entries[0].user, "gardener");
	assert_string_equal(d.entries[0].key.fingerprint, ED_FP);
	assert_string_equal(d.entries[0].key.comment, "current");
	assert_string_equal(d.entries[1].key.fingerprint, OLD_FP);
	assert_string_equal(d.entries[2].key.fingerprint, RSA_FP);
	assert_int_equal(d.entries[2].key.options.expiry, 0);
	keydoc_done(&d);

	assert_int_equal(keydoc_parse_lines("", 0, "gardener", NULL, &d, err, sizeof(err)), 0);
	assert_int_equal(d.n, 0);
	keydoc_done(&d);

	static const struct {
		const char *file;
		const char *user;
		int r;
		const char *err;
	} t[] = {
		{ "ssh-ed25519 " ED_B64 "\n", "Gardener", -EINVAL, "user: invalid user name" },
		{ "ssh-ed25519 " ED_B64 "\r\n", "gardener", -EINVAL, "line 1: carriage return in key line" },
		{ "# c\nno-pty ssh-ed25519 " ED_B64 "\n", "gardener", -EINVAL,
		  "line 2: options other than cert-authority, principals= and expiry-time= of a CA" },
		{ "expiry-time=\"20300101\" ssh-ed25519 " ED_B64 "\n", "gardener", -EINVAL,
		  "line 1: options other than cert-authority, principals= and expiry-time= of a CA" },
		{ "cert-authority,no-pty ssh-ed25519 " ED_B64 "\n", "gardener", -EINVAL,
		  "line 1: options other than cert-authority, principals= and expiry-time= of a CA" },
		{ "command=\"x\" ssh-ed25519 " ED_B64 "\n", "gardener", -EINVAL, "line 1: option not allowed \"command\"" },
		{ "ssh-ed25519 " ED_B64 "\nssh-dss " ED_B64 "\n", "gardener", -EPROTONOSUPPORT,
		  "line 2: key type refused \"ssh-dss\"" },
		{ "ssh-rsa " WEAK_B64 "\n", "gardener", -EKEYREJECTED, "line 1: RSA modulus too small" },
		{ "ssh-rsa " ED_B64 "\n", "gardener", -EINVAL, "line 1: inner type mismatch" },
		{ "ssh-ed25519 " ED_B64 " a\0b\n", "gardener", -EINVAL, "line 1: NUL byte in key line" },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		struct keydoc d2 = { .n = 4242 };
		/* The NUL case: length up to the final newline. */
		size_t len = strlen(t[i].file);
		if (strstr(t[i].err, "NUL"))
			len += 3;
		r = keydoc_parse_lines(t[i].file, len, t[i].user, NULL, &d2, err, sizeof(err));
		print_message("%2zu -> %d %s\n", i, r, err);
		if (r != t[i].r || strcmp(err, t[i].err) != 0)
			fail_msg("case %zu: got %d \"%s\", want %d \"%s\"", i, r, err, t[i].r, t[i].err);
		assert_int_equal(d2.n, 4242);
	}

	/* 1024 distinct keys are fine, 1025 are not (an ed25519 key is any 32
	 * bytes, so distinct keys are cheap to make). */
	_cleanup_free_ char *lines = malloc(1025 * 100);
	size_t ln = 0;
	for (unsigned i = 0; i < 1025; i++) {
		unsigned char blob[51] = { 0, 0, 0, 11, 's', 's', 'h', '-', 'e', 'd', '2', '5', '5', '1', '9', 0, 0, 0, 32 };
		blob[19] = (unsigned char)(i >> 8);
		blob[20] = (unsigned char)i;
		_cleanup_free_ char *b = b64_encode(blob, sizeof(blob), false);
		ln += (size_t)snprintf(lines + ln, 100, "ssh-ed25519 %s k%u\n", b, i);
	}
	assert_int_equal(keydoc_parse_lines(lines, ln, "gardener", NULL, &d, err, sizeof(err)), -EMSGSIZE);
	assert_string_equal(err, "line 1025: more than 1024 keys");
	size_t last = (size_t)(strrchr(lines, 's') - lines); /* somewhere in the last line */
	while (lines[last - 1] != '\n')
		last--;
	assert_int_equal(keydoc_parse_lines(lines, last, "gardener", NULL, &d, err, sizeof(err)), 0);
	assert_int_equal(d.n, 1024);
	keydoc_done(&d);

	/* 1025 copies of one key collapse to one. */
	size_t one = strlen("ssh-ed25519 " ED_B64 "\n");
	_cleanup_free_ char *many = malloc(one * 1025 + 1);
	for (size_t i = 0; i < 1025; i++)
		memcpy(many + i * one, "ssh-ed25519 " ED_B64 "\n", one);
	assert_int_equal(keydoc_parse_lines(many, one * 1025, "gardener", NULL, &d, err, sizeof(err)), 0);
	assert_int_equal(d.n, 1);
	keydoc_done(&d);
	assert_int_equal(keydoc_parse_lines(many, KEYDOC_SIZE_MAX + 1, "gardener", NULL, &d, err, sizeof(err)),
			 -EMSGSIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_json),
		cmocka_unit_test(bad_json),
		cmocka_unit_test(revoked_entries),
		cmocka_unit_test(cert_authorities),
		cmocka_unit_test(limits),
		cmocka_unit_test(time_table),
		cmocka_unit_test(users),
		cmocka_unit_test(gardener_lines),
	};
	return cmocka_run_group_tests_name("keydoc", tests, NULL, NULL);
}
