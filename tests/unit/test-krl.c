/* Unit tests for lib/ssh/krl.c: the exact bytes of a KRL against PROTOCOL.krl,
 * round trips, sorting and deduplication, the strict reader, bounds, and
 * fingerprint decoding. (ssh-keygen -Q agreeing with the writer is checked
 * in tests/integration/011-krl-sshd.sh.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "krl.h"

static struct krl_hash hash_of(uint8_t b)
{
	struct krl_hash h;
	memset(h.h, b, sizeof(h.h));
	return h;
}

static void empty_krl_bytes(void **state)
{
	(void)state;
	_cleanup_free_ void *buf = NULL;
	size_t len = 0;
	assert_int_equal(krl_write(NULL, 0, 7, 0x01020304, "c", &buf, &len), 0);
	static const uint8_t want[] = {
		'S', 'S', 'H', 'K', 'R', 'L', '\n', 0, /* magic */
		0, 0, 0, 1,                            /* format version */
		0, 0, 0, 0, 0, 0, 0, 7,                /* krl_version */
		0, 0, 0, 0, 1, 2, 3, 4,                /* generated_date */
		0, 0, 0, 0, 0, 0, 0, 0,                /* flags */
		0, 0, 0, 0,                            /* reserved "" */
		0, 0, 0, 1, 'c',                       /* comment */
	};
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	struct krl k = { 0 };
	assert_int_equal(krl_read(buf, len, &k), 0);
	assert_int_equal(k.n, 0);
	assert_int_equal(k.version, 7);
	assert_int_equal(k.generated, 0x01020304);
	assert_string_equal(k.comment, "c");
	krl_done(&k);
}

static void section_bytes_sorted_unique(void **state)
{
	(void)state;
	struct krl_hash in[] = { hash_of(0x30), hash_of(0x10), hash_of(0x30), hash_of(0x20) };
	_cleanup_free_ void *buf = NULL;
	size_t len = 0;
	assert_int_equal(krl_write(in, 4, 1, 2, NULL, &buf, &len), 0);
	assert_int_equal(in[0].h[0], 0x30); /* input untouched */
	const uint8_t *p = buf;
	size_t hdr = 8 + 4 + 8 + 8 + 8 + 4 + 4;
	assert_int_equal(len, hdr + 1 + 4 + 3 * 36);
	assert_int_equal(p[hdr], 5); /* KRL_SECTION_FINGERPRINT_SHA256 */
	assert_int_equal(p[hdr + 4], 3 * 36);
	for (int i = 0; i < 3; i++) {
		const uint8_t *e = p + hdr + 5 + (size_t)i * 36;
		assert_int_equal(e[3], 32);
		assert_int_equal(e[4], 0x10 * (i + 1));
	}
	struct krl k = { 0 };
	assert_int_equal(krl_read(buf, len, &k), 0);
	assert_int_equal(k.n, 3);
	struct krl_hash x = hash_of(0x20), y = hash_of(0x21);
	assert_true(krl_contains(&k, &x));
	assert_false(krl_contains(&k, &y));
	krl_done(&k);
}

static void reader_strict(void **state)
{
	(void)state;
	struct krl_hash in[] = { hash_of(1), hash_of(2) };
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len = 0;
	assert_int_equal(krl_write(in, 2, 1, 2, "x", (void **)&buf, &len), 0);
	struct krl k = { 0 };
	_cleanup_free_ uint8_t *m = malloc(len + 1);
	assert_non_null(m);

	/* Every truncation is refused (except right after the header, which
	 * is an empty KRL, and the complete file). */
	size_t hdr = 8 + 4 + 8 + 8 + 8 + 4 + 4 + 1;
	for (size_t l = 0; l < len; l++) {
		int r = krl_read(buf, l, &k);
		if (l == hdr) {
			assert_int_equal(r, 0);
			krl_done(&k);
		} else
			assert_int_equal(r, -EBADMSG);
	}
	/* Trailing byte, bad magic, format 2, flags, reserved, other section. */
	memcpy(m, buf, len);
	m[len] = 5;
	assert_int_equal(krl_read(m, len + 1, &k), -EBADMSG);
	struct {
		size_t off;
		uint8_t v;
	} flips[] = { { 0, 'X' }, { 11, 2 }, { 35, 1 }, { 39, 1 }, { hdr, 2 }, { hdr + 8, 31 } };
	for (size_t i = 0; i < ELEMENTSOF(flips); i++) {
		memcpy(m, buf, len);
		m[flips[i].off] = flips[i].v;
		assert_int_equal(krl_read(m, len, &k), -EBADMSG);
	}
	/* Out of order, and repeated. */
	memcpy(m, buf, len);
	m[hdr + 5 + 4] = 3;
	memset(m + hdr + 5 + 4, 3, 32);
	assert_int_equal(krl_read(m, len, &k), -EBADMSG);
	memcpy(m, buf, len);
	memset(m + hdr + 5 + 4, 2, 32);
	assert_int_equal(krl_read(m, len, &k), -EBADMSG);
	/* A control byte in the comment. */
	assert_int_equal(krl_write(NULL, 0, 1, 1, "a\nb", (void **)&m, &len), -EINVAL);
}

static void bounds(void **state)
{
	(void)state;
	size_t n = KRL_ENTRIES_MAX + 1;
	_cleanup_free_ struct krl_hash *v = calloc(n, sizeof(*v));
	assert_non_null(v);
	for (size_t i = 0; i < n; i++) {
		v[i].h[0] = (uint8_t)(i >> 8);
		v[i].h[1] = (uint8_t)i;
	}
	void *buf = NULL;
	size_t len = 0;
	assert_int_equal(krl_write(v, n, 1, 1, NULL, &buf, &len), -E2BIG);
	assert_int_equal(krl_write(v, n - 1, 1, 1, NULL, &buf, &len), 0);
	assert_true(len <= KRL_SIZE_MAX);
	struct krl k = { 0 };
	assert_int_equal(krl_read(buf, len, &k), 0);
	assert_int_equal(k.n, KRL_ENTRIES_MAX);
	krl_done(&k);
	free(buf);
	/* Duplicates count once. */
	for (size_t i = 0; i < n; i++)
		v[i] = hash_of(9);
	assert_int_equal(krl_write(v, n, 1, 1, NULL, &buf, &len), 0);
	free(buf);
	char big[KRL_COMMENT_MAX + 2];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(krl_write(NULL, 0, 1, 1, big, &buf, &len), -EINVAL);
}

static void fingerprints(void **state)
{
	(void)state;
	struct krl_hash h;
	/* ssh-keygen -lf of an all-zero hash would print 43 'A's. */
	assert_int_equal(krl_hash_from_fingerprint("SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &h), 0);
	struct krl_hash z = { 0 };
	assert_memory_equal(&h, &z, sizeof(h));
	char fp[51] = "SHA256:";
	memset(fp + 7, '/', 42);
	fp[49] = '+'; /* the last character's two low bits must be zero */
	fp[50] = '\0';
	assert_int_equal(krl_hash_from_fingerprint(fp, &h), -EINVAL);
	fp[49] = '8';
	assert_int_equal(krl_hash_from_fingerprint(fp, &h), 0);
	assert_int_equal(h.h[0], 0xff);
	assert_int_equal(h.h[31], 0xff);
	assert_int_equal(krl_hash_from_fingerprint("SHA256:AAAA", &h), -EINVAL);
	assert_int_equal(krl_hash_from_fingerprint("MD5:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &h), -EINVAL);
	assert_int_equal(krl_hash_from_fingerprint("SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", &h), -EINVAL);
	assert_int_equal(krl_hash_from_fingerprint("SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &h), -EINVAL);
	assert_int_equal(krl_hash_from_fingerprint(NULL, &h), -EINVAL);
}

/* Certificate serials: PROTOCOL.krl's CERTIFICATES section with one
 * SERIAL_LIST, byte for byte; sorted, deduplicated, CAs ordered; the
 * reader's strictness and the bounds. */
static void cert_serials(void **state)
{
	uint8_t ca_a[] = { 'A', 'A' }, ca_b[] = { 'B' };
	uint64_t sa[] = { 9, 3, 9 }, sb[] = { 0x0102030405060708 };
	struct krl_ca_serials cas[] = { { ca_a, 2, sa, 3 }, { ca_b, 1, sb, 1 }, { ca_b + 0, 1, NULL, 0 } };
	struct krl_hash h = hash_of(7);
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	/* The same CA twice with serials is refused; a CA without serials is
	 * left out. */
	struct krl_ca_serials twice[] = { { ca_b, 1, sa, 1 }, { ca_b, 1, sb, 1 } };
	void *tmp = NULL;
	assert_int_equal(krl_write_full(&h, 1, twice, 2, 1, 2, "", &tmp, &len), -EINVAL);
	assert_int_equal(krl_write_full(&h, 1, cas, 3, 1, 2, "", &tmp, &len), 0);
	free(tmp);
	assert_int_equal(krl_write_full(&h, 1, cas, 2, 1, 2, "", (void **)&buf, &len), 0);
	static const uint8_t want[] = {
		1, 0, 0, 0, 22,                      /* CERTIFICATES, length: B (shorter) first */
		0, 0, 0, 1, 'B', 0, 0, 0, 0,          /* CA key, reserved */
		0x20, 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8,
		1, 0, 0, 0, 31,
		0, 0, 0, 2, 'A', 'A', 0, 0, 0, 0,
		0x20, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 9,
		5, 0, 0, 0, 36, 0, 0, 0, 32,         /* then the hashes */
	};
	size_t hdr = 8 + 4 + 8 + 8 + 8 + 4 + 4;
	assert_int_equal(len, hdr + sizeof(want) + 32);
	assert_memory_equal(buf + hdr, want, sizeof(want));
	struct krl k = { 0 };
	assert_int_equal(krl_read(buf, len, &k), 0);
	assert_int_equal(k.n, 1);
	assert_int_equal(k.n_cas, 2);
	assert_true(krl_contains_serial(&k, ca_a, 2, 3));
	assert_true(krl_contains_serial(&k, ca_a, 2, 9));
	assert_false(krl_contains_serial(&k, ca_a, 2, 4));
	assert_true(krl_contains_serial(&k, ca_b, 1, 0x0102030405060708));
	assert_false(krl_contains_serial(&k, ca_b, 1, 3));
	krl_done(&k);

	/* Reader: serials out of order, a zero serial, CAs out of order. */
	uint8_t *ser = buf + hdr + 27 + 20; /* A's first serial (3) */
	ser[7] = 10;
	assert_int_equal(krl_read(buf, len, &k), -EBADMSG);
	ser[7] = 0;
	assert_int_equal(krl_read(buf, len, &k), -EBADMSG);
	ser[7] = 3;
	assert_int_equal(krl_read(buf, len, &k), 0);
	krl_done(&k);
	buf[hdr + 9] = 'C'; /* B -> C: no longer below... still shorter, so in order */
	assert_int_equal(krl_read(buf, len, &k), 0);
	krl_done(&k);
	buf[hdr + 14] = 0x21; /* a RANGE subsection: not what the writer makes */
	assert_int_equal(krl_read(buf, len, &k), -EBADMSG);

	/* Writer: serial 0 and empty CA keys refused; the bounds. */
	uint64_t zero[] = { 5, 0 };
	struct krl_ca_serials bad[] = { { ca_a, 2, zero, 2 } };
	void *out = NULL;
	assert_int_equal(krl_write_full(NULL, 0, bad, 1, 1, 1, "", &out, &len), -EINVAL);
	bad[0] = (struct krl_ca_serials){ ca_a, 0, sa, 1 };
	assert_int_equal(krl_write_full(NULL, 0, bad, 1, 1, 1, "", &out, &len), -EINVAL);
	_cleanup_free_ uint64_t *many = calloc(KRL_SERIALS_MAX + 1, sizeof(*many));
	assert_non_null(many);
	for (size_t i = 0; i <= KRL_SERIALS_MAX; i++)
		many[i] = i + 1;
	bad[0] = (struct krl_ca_serials){ ca_a, 2, many, KRL_SERIALS_MAX + 1 };
	assert_int_equal(krl_write_full(NULL, 0, bad, 1, 1, 1, "", &out, &len), -E2BIG);
	bad[0].n = KRL_SERIALS_MAX;
	assert_int_equal(krl_write_full(NULL, 0, bad, 1, 1, 1, "", &out, &len), 0);
	assert_true(len <= KRL_SIZE_MAX);
	assert_int_equal(krl_read(out, len, &k), 0);
	assert_int_equal(k.cas[0].n, KRL_SERIALS_MAX);
	krl_done(&k);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_krl_bytes),
		cmocka_unit_test(section_bytes_sorted_unique),
		cmocka_unit_test(reader_strict),
		cmocka_unit_test(bounds),
		cmocka_unit_test(fingerprints),
		cmocka_unit_test(cert_serials),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
