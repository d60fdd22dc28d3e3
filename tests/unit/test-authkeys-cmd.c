/* Unit tests for authkeys-cmd's answer policy (authkeys-cmd/answer.c):
 * which lines sshd gets for which request, table-driven. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "../../authkeys-cmd/answer.h"
#include "cleanup.h"
#include "snapshot.h"
#include "b64.h"
#include "sshcert.h"

#define KA "AAAAC3NzaC1lZDI1NTE5AAAAIAc+aaaa"
#define KB "AAAAC3NzaC1lZDI1NTE5AAAAIAc+bbbb"
#define KE "AAAAC3NzaC1lZDI1NTE5AAAAIAc+eeee"
#define KR "AAAAC3NzaC1lZDI1NTE5AAAAIAc+rrrr"
#define NOW 1800000000
#define U(u) .user = (u)
#define F(f) .fingerprint = (f)
#define T(t) .type = (t)
#define K(k) .key = (k)

static const struct snapshot_entry entries[] = {
	{ "alice", "SHA256:a", "ssh-ed25519 " KA " a", 0, "src-a" },
	{ "alice", "SHA256:e", "ssh-ed25519 " KE " expired", NOW - 1, "src-e" },
	{ "alice", "SHA256:f", "expiry-time=\"20991231000000Z\" ssh-ed25519 " KB " future", NOW + 1, "src-f" },
	{ "bob", "SHA256:b", "ssh-ed25519 " KB " b", 0, "src-b" },
	{ "carol", "SHA256:c", "ssh-ed25519 " KE " gone", NOW, "src-c" },
	{ "root", "SHA256:r", "ssh-ed25519 " KR " r", 0, "src-r" },
	{ "dave", "SHA256:d", "ssh-ed25519 " KA " plain", 0, "src-d" },
	{ "dave", "SHA256:ca", "cert-authority,principals=\"dave\" ssh-ed25519 " KB " ca", 0, "src-ca" },
	{ "dave", "SHA256:cx", "cert-authority,expiry-time=\"20200101000000Z\" ssh-ed25519 " KE " old-ca", NOW - 5, "src-cx" },
};
#define CERT "ssh-ed25519-cert-v01@openssh.com"

static void answers(void **state)
{
	static const struct {
		struct akc_request req;
		enum akc_reason reason;
		unsigned served, expired;
		const char *out;
	} cases[] = {
		{ { U("alice") }, AKC_SERVED, 2, 1,
		  "ssh-ed25519 " KA " a\nexpiry-time=\"20991231000000Z\" ssh-ed25519 " KB " future\n" },
		{ { U("alice"), F("SHA256:a") }, AKC_SERVED, 1, 0, "ssh-ed25519 " KA " a\n" },
		{ { U("alice"), F("SHA256:a"), T("ssh-ed25519") }, AKC_SERVED, 1, 0, "ssh-ed25519 " KA " a\n" },
		{ { U("alice"), F("SHA256:a"), T("ssh-ed25519"), K(KA) }, AKC_SERVED, 1, 0, "ssh-ed25519 " KA " a\n" },
		{ { U("alice"), F("SHA256:a"), T("ssh-rsa"), K(KA) }, AKC_TYPE_MISMATCH, 0, 0, NULL },
		{ { U("alice"), F("SHA256:a"), T("ssh-ed25519"), K(KB) }, AKC_KEY_MISMATCH, 0, 0, NULL },
		{ { U("alice"), F("SHA256:a"), T("ssh-ed25519"), K(KA "x") }, AKC_KEY_MISMATCH, 0, 0, NULL },
		{ { U("alice"), F("SHA256:e") }, AKC_EXPIRED, 0, 1, NULL },
		{ { U("alice"), F("SHA256:f") }, AKC_SERVED, 1, 0,
		  "expiry-time=\"20991231000000Z\" ssh-ed25519 " KB " future\n" },
		{ { U("alice"), F("SHA256:b") }, AKC_UNKNOWN_FINGERPRINT, 0, 0, NULL }, /* bob's key */
		{ { U("bob"), F("SHA256:a") }, AKC_UNKNOWN_FINGERPRINT, 0, 0, NULL },
		{ { U("bob") }, AKC_SERVED, 1, 0, "ssh-ed25519 " KB " b\n" },
		{ { U("carol") }, AKC_ALL_EXPIRED, 0, 1, NULL }, /* expiry == now is expired */
		{ { U("mallory") }, AKC_NO_KEYS, 0, 0, NULL },
		{ { U("mallory"), F("SHA256:a") }, AKC_UNKNOWN_FINGERPRINT, 0, 0, NULL },
		{ { U("root") }, AKC_ROOT_REFUSED, 0, 0, NULL },
		{ { U("root"), F("SHA256:r") }, AKC_ROOT_REFUSED, 0, 0, NULL },
		{ { U("root"), .allow_root = true }, AKC_SERVED, 1, 0, "ssh-ed25519 " KR " r\n" },
		/* A certificate: the user's valid CA lines, whatever %f and %k. */
		{ { U("dave"), F("SHA256:d"), T(CERT), K("AAAA") }, AKC_SERVED, 1, 1,
		  "cert-authority,principals=\"dave\" ssh-ed25519 " KB " ca\n" },
		{ { U("dave"), F("SHA256:unknown"), T("ecdsa-sha2-nistp256-cert-v01@openssh.com") }, AKC_SERVED, 1, 1,
		  "cert-authority,principals=\"dave\" ssh-ed25519 " KB " ca\n" },
		{ { U("alice"), F("SHA256:a"), T(CERT) }, AKC_NO_CA, 0, 0, NULL },
		{ { U("mallory"), F("SHA256:a"), T(CERT) }, AKC_NO_CA, 0, 0, NULL },
		{ { U("root"), F("SHA256:r"), T(CERT) }, AKC_ROOT_REFUSED, 0, 0, NULL },
		{ { U("dave"), F("SHA256:d"), T("-cert-v01@openssh.com") }, AKC_TYPE_MISMATCH, 0, 0, NULL }, /* no type */
	};
	_cleanup_free_ void *buf = NULL;
	size_t size;
	assert_int_equal(snapshot_build(entries, ELEMENTSOF(entries), 1, 1, &buf, &size, NULL), 0);
	struct snapshot *s = NULL;
	assert_int_equal(snapshot_parse(buf, size, &s, NULL), 0);

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct akc_request req = cases[i].req;
		req.now = NOW;
		struct akc_answer a;
		assert_int_equal(akc_answer(s, &req, &a), 0);
		if (a.reason != cases[i].reason)
			fail_msg("case %zu: reason %s, expected %s", i, akc_reason_to_string(a.reason),
				 akc_reason_to_string(cases[i].reason));
		assert_int_equal(a.served, cases[i].served);
		assert_int_equal(a.expired, cases[i].expired);
		if (cases[i].out) {
			assert_int_equal(a.out_len, strlen(cases[i].out));
			assert_memory_equal(a.out, cases[i].out, a.out_len);
		} else {
			assert_null(a.out);
			assert_int_equal(a.out_len, 0);
		}
		akc_answer_done(&a);
	}
	snapshot_free(s);
}

/* A certificate blob of type CERT signed by the key whose base64 is ca
 * (only its blob matters here), base64-encoded into out. */
static void make_cert(const char *type, const char *ca, uint64_t serial, const char *key_id, size_t id_len, char *out,
		      size_t out_size)
{
	uint8_t b[4096], cab[512];
	size_t n = 0;
	int calen = b64_decode_into(ca, strlen(ca), cab, sizeof(cab));
	assert_true(calen > 0);
#define PUT32(v) do { uint32_t x_ = (v); b[n++] = x_ >> 24; b[n++] = x_ >> 16; b[n++] = x_ >> 8; b[n++] = x_; } while (0)
#define PUTS(p, l) do { PUT32((uint32_t)(l)); memcpy(b + n, (p), (l)); n += (l); } while (0)
	PUTS(type, strlen(type));
	PUTS("nonce", 5);
	PUTS("pk-of-thirty-two-bytes-000000000", 32);
	PUT32((uint32_t)(serial >> 32));
	PUT32((uint32_t)serial);
	PUT32(1);
	PUTS(key_id, id_len);
	PUTS("\0\0\0\4dave", 8);
	PUT32(0); PUT32(0); PUT32(0xffffffff); PUT32(0xffffffff);
	PUTS("", 0);
	PUTS("", 0);
	PUTS("", 0);
	PUTS(cab, (size_t)calen);
	PUTS("signature", 9);
#undef PUTS
#undef PUT32
	assert_true(b64_encode_into(b, n, out, out_size) > 0);
}

/* With a certificate in %k: only the CA line that signed it is served, and
 * the answer carries its key id (made printable) and serial. */
static void certificate_answers(void **state)
{
	_cleanup_free_ void *buf = NULL;
	size_t size;
	assert_int_equal(snapshot_build(entries, ELEMENTSOF(entries), 1, 1, &buf, &size, NULL), 0);
	struct snapshot *s = NULL;
	assert_int_equal(snapshot_parse(buf, size, &s, NULL), 0);
	char c_ca[2048], c_old[2048], c_plain[2048], c_ecdsa[2048];
	make_cert(CERT, KB, 42, "id-\x01x\\y", 7, c_ca, sizeof(c_ca));
	make_cert(CERT, KE, 7, "old", 3, c_old, sizeof(c_old));
	make_cert(CERT, KA, 8, "plain", 5, c_plain, sizeof(c_plain));
	make_cert("ecdsa-sha2-nistp256-cert-v01@openssh.com", KB, 9, "ec", 2, c_ecdsa, sizeof(c_ecdsa));

	struct akc_request req = { U("dave"), F("SHA256:d"), T(CERT), K(c_ca), .now = NOW };
	struct akc_answer a;
	assert_int_equal(akc_answer(s, &req, &a), 0);
	assert_int_equal(a.reason, AKC_SERVED);
	assert_int_equal(a.served, 1);
	assert_int_equal(a.cert_error, 0);
	assert_int_equal(a.cert_serial, 42);
	assert_string_equal(a.cert_key_id, "id-\\x01x\\x5cy");
	assert_string_equal(a.recs[0].fingerprint, "SHA256:ca");
	assert_string_equal(a.recs[0].source, "src-ca");
	akc_answer_done(&a);

	/* Signed by the expired CA: nothing, counted as expired. */
	req.key = c_old;
	assert_int_equal(akc_answer(s, &req, &a), 0);
	assert_int_equal(a.reason, AKC_NO_CA);
	assert_int_equal(a.served, 0);
	assert_int_equal(a.expired, 1);
	akc_answer_done(&a);
	/* Signed by dave's plain key, which is no CA line: nothing. */
	req.key = c_plain;
	assert_int_equal(akc_answer(s, &req, &a), 0);
	assert_int_equal(a.reason, AKC_NO_CA);
	assert_null(a.out);
	akc_answer_done(&a);
	/* %k of another certificate type than %t: not trusted, every CA line. */
	req.key = c_ecdsa;
	assert_int_equal(akc_answer(s, &req, &a), 0);
	assert_int_equal(a.cert_error, -EBADMSG);
	assert_int_equal(a.served, 1);
	akc_answer_done(&a);
	/* Hostile %k: not base64, truncated, over the bound: no certificate
	 * (every valid CA line, as without %k), never a crash. */
	static char huge[SSHCERT_B64_MAX + 8];
	memset(huge, 'A', sizeof(huge) - 1);
	char cut[64];
	snprintf(cut, sizeof(cut), "%.40s", c_ca);
	const char *hostile[] = { "", "!!!!", "AAAA", cut, huge };
	for (size_t i = 0; i < ELEMENTSOF(hostile); i++) {
		req.key = hostile[i];
		assert_int_equal(akc_answer(s, &req, &a), 0);
		assert_true(a.cert_error < 0);
		assert_int_equal(a.reason, AKC_SERVED);
		assert_int_equal(a.served, 1);
		assert_string_equal(a.cert_key_id, "");
		akc_answer_done(&a);
	}

	/* The key id is cut for the log. */
	static char longid[AKC_KEY_ID_MAX + 10];
	memset(longid, 'i', sizeof(longid));
	char c_long[4096];
	make_cert(CERT, KB, 1, longid, sizeof(longid), c_long, sizeof(c_long));
	req.key = c_long;
	assert_int_equal(akc_answer(s, &req, &a), 0);
	assert_int_equal(strlen(a.cert_key_id), AKC_KEY_ID_MAX + 3);
	assert_string_equal(a.cert_key_id + AKC_KEY_ID_MAX, "...");
	akc_answer_done(&a);
	/* A single-key answer names its record; a user answer all it served. */
	req = (struct akc_request){ U("alice"), F("SHA256:a"), .now = NOW };
	assert_int_equal(akc_answer(s, &req, &a), 0);
	assert_ptr_equal(a.recs, &a.one);
	assert_string_equal(a.recs[0].source, "src-a");
	akc_answer_done(&a);
	req = (struct akc_request){ U("alice"), .now = NOW };
	assert_int_equal(akc_answer(s, &req, &a), 0);
	assert_int_equal(a.served, 2);
	assert_string_equal(a.recs[0].source, "src-a");
	assert_string_equal(a.recs[1].source, "src-f");
	akc_answer_done(&a);
	snapshot_free(s);
}

/* A damaged record: the answer is "corrupt" and empty, for the user and the
 * fingerprint form alike, and other users' records still answer. */
static void corrupt_record_serves_nothing(void **state)
{
	_cleanup_free_ unsigned char *buf = NULL;
	size_t size;
	assert_int_equal(snapshot_build(entries, ELEMENTSOF(entries), 1, 1, (void **)&buf, &size, NULL), 0);
	unsigned char *hit = memmem(buf, size, "future", 6);
	assert_non_null(hit);
	*hit = 'F';
	struct snapshot *s = NULL;
	assert_int_equal(snapshot_parse(buf, size, &s, NULL), 0);

	static const struct akc_request reqs[] = { { U("alice") }, { U("alice"), F("SHA256:f") } };
	for (size_t i = 0; i < ELEMENTSOF(reqs); i++) {
		struct akc_request req = reqs[i];
		req.now = NOW;
		struct akc_answer a;
		assert_int_equal(akc_answer(s, &req, &a), 0);
		assert_int_equal(a.reason, AKC_SNAPSHOT_CORRUPT);
		assert_non_null(a.what);
		assert_null(a.out);
		assert_int_equal(a.served, 0);
	}
	struct akc_request req = { U("bob"), .now = NOW };
	struct akc_answer a;
	assert_int_equal(akc_answer(s, &req, &a), 0);
	assert_int_equal(a.reason, AKC_SERVED);
	akc_answer_done(&a);
	snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(answers),
		cmocka_unit_test(certificate_answers),
		cmocka_unit_test(corrupt_record_serves_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
