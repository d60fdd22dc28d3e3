/* Unit tests for lib/ssh/snapshot.c: round trips, lookups over many users and
 * keys, writer input validation, and a reader that never serves a damaged,
 * truncated, foreign-version or wrongly owned file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "cleanup.h"
#include "fsx.h"
#include "snapshot.h"
#include "scratch.h"

#define K1 "AAAAC3NzaC1lZDI1NTE5AAAAIAc+1111111111111111111111111111111111111111"
#define K2 "AAAAC3NzaC1lZDI1NTE5AAAAIAc+2222222222222222222222222222222222222222"
#define K3 "AAAAC3NzaC1lZDI1NTE5AAAAIAc+3333333333333333333333333333333333333333"
#define K4 "AAAAB3NzaC1yc2EAAAADAQABAAABAQ444444444444444444444444444444444444444"

static const struct snapshot_entry small[] = {
	{ "alice", "SHA256:aaaa1", "ssh-ed25519 " K1 " alice@laptop", 0, "src 0" },
	{ "bob", "SHA256:bbbb1", "expiry-time=\"20300101000000Z\" ssh-ed25519 " K2 " bob", 1893456000, "src 1893456000" },
	{ "alice", "SHA256:aaaa2", "restrict,from=\"10.0.0.0/8\" ssh-rsa " K4, 0, "src 0" },
	{ "carol", "SHA256:cccc1", "command=\"echo a b\",no-pty ssh-ed25519 " K3 " c", 0, "src 0" },
	{ "alice", "SHA256:aaaa3", "ssh-ed25519 " K3, 5, "src 5" },
};

static void build(const struct snapshot_entry *e, size_t n, void **buf, size_t *size)
{
	size_t bad = SIZE_MAX;
	assert_int_equal(snapshot_build(e, n, 7, 1700000000, buf, size, &bad), 0);
	assert_int_equal(bad, SIZE_MAX);
}

static void expect_record(const struct snapshot_record *r, const struct snapshot_entry *e)
{
	assert_string_equal(r->user, e->user);
	assert_string_equal(r->fingerprint, e->fingerprint);
	assert_string_equal(r->line, e->line);
	assert_int_equal(r->line_len, strlen(e->line));
	assert_int_equal(r->expiry, e->expiry);
	assert_string_equal(r->source, e->source ? e->source : "");
	assert_int_equal(r->source_len, strlen(r->source));
}

static void round_trip_small(void **state)
{
	_cleanup_free_ void *buf = NULL;
	size_t size;
	build(small, ELEMENTSOF(small), &buf, &size);

	struct snapshot *s = NULL;
	assert_int_equal(snapshot_parse(buf, size, &s, NULL), 0);
	struct snapshot_info info;
	snapshot_get_info(s, &info);
	assert_int_equal(info.version, SNAPSHOT_VERSION);
	assert_int_equal(info.generation, 7);
	assert_int_equal(info.created_at, 1700000000);
	assert_int_equal(info.n_records, 5);
	assert_int_equal(info.n_users, 3);
	assert_int_equal(info.size, size);

	/* alice: her three keys, in the order given. */
	_cleanup_free_ struct snapshot_record *v = NULL;
	assert_int_equal(snapshot_lookup_user(s, "alice", &v, NULL), 3);
	expect_record(&v[0], &small[0]);
	expect_record(&v[1], &small[2]);
	expect_record(&v[2], &small[4]);
	/* Type and blob are found behind options, quoted spaces included. */
	assert_int_equal(v[1].type_len, strlen("ssh-rsa"));
	assert_memory_equal(v[1].type, "ssh-rsa", v[1].type_len);
	assert_int_equal(v[1].blob_len, strlen(K4));
	assert_memory_equal(v[1].blob, K4, v[1].blob_len);

	_cleanup_free_ struct snapshot_record *c = NULL;
	assert_int_equal(snapshot_lookup_user(s, "carol", &c, NULL), 1);
	assert_memory_equal(c[0].type, "ssh-ed25519", c[0].type_len);
	assert_memory_equal(c[0].blob, K3, c[0].blob_len);

	for (size_t i = 0; i < ELEMENTSOF(small); i++) {
		struct snapshot_record r;
		assert_int_equal(snapshot_lookup_fingerprint(s, small[i].user, small[i].fingerprint, &r, NULL), 1);
		expect_record(&r, &small[i]);
	}

	/* Unknown user, unknown fingerprint, another user's fingerprint, prefixes. */
	struct snapshot_record r;
	struct snapshot_record *none = (void *)1;
	assert_int_equal(snapshot_lookup_user(s, "mallory", &none, NULL), 0);
	assert_null(none);
	assert_int_equal(snapshot_lookup_user(s, "alic", &none, NULL), 0);
	assert_int_equal(snapshot_lookup_user(s, "alicex", &none, NULL), 0);
	assert_int_equal(snapshot_lookup_user(s, "", &none, NULL), 0);
	assert_int_equal(snapshot_lookup_fingerprint(s, "alice", "SHA256:bbbb1", &r, NULL), 0);
	assert_int_equal(snapshot_lookup_fingerprint(s, "bob", "SHA256:aaaa1", &r, NULL), 0);
	assert_int_equal(snapshot_lookup_fingerprint(s, "alice", "SHA256:aaaa", &r, NULL), 0);
	assert_int_equal(snapshot_lookup_fingerprint(s, "mallory", "SHA256:aaaa1", &r, NULL), 0);
	snapshot_free(s);
}

static void empty_snapshot(void **state)
{
	_cleanup_free_ void *buf = NULL;
	size_t size;
	build(NULL, 0, &buf, &size);
	struct snapshot *s = NULL;
	assert_int_equal(snapshot_parse(buf, size, &s, NULL), 0);
	struct snapshot_record *v = NULL;
	struct snapshot_record r;
	assert_int_equal(snapshot_lookup_user(s, "alice", &v, NULL), 0);
	assert_int_equal(snapshot_lookup_fingerprint(s, "alice", "SHA256:x", &r, NULL), 0);
	snapshot_free(s);
}

/* 3,000 users with 1..9 keys each (and one with 2,000): every key is found
 * by user and by fingerprint, and nothing else is. */
static void many_users_many_keys(void **state)
{
	enum { USERS = 3000, BIG = 2000 };
	size_t n = 0, cap = USERS * 9 + BIG;
	struct snapshot_entry *e = calloc(cap, sizeof(*e));
	char **strs = calloc(cap * 3, sizeof(char *));
	assert_non_null(e);
	assert_non_null(strs);
	for (unsigned u = 0; u < USERS; u++) {
		unsigned keys = u == 17 ? BIG : 1 + u % 9;
		for (unsigned k = 0; k < keys; k++, n++) {
			assert_true(asprintf(&strs[3 * n], "user%u", u) > 0);
			assert_true(asprintf(&strs[3 * n + 1], "SHA256:fp-%u-%u", u, k) > 0);
			assert_true(asprintf(&strs[3 * n + 2], "ssh-ed25519 AAAA%uB%u user%u-key%u", u, k, u, k) > 0);
			e[n] = (struct snapshot_entry){ strs[3 * n], strs[3 * n + 1], strs[3 * n + 2], k, NULL };
		}
	}
	_cleanup_free_ void *buf = NULL;
	size_t size;
	build(e, n, &buf, &size);
	struct snapshot *s = NULL;
	assert_int_equal(snapshot_parse(buf, size, &s, NULL), 0);

	size_t i = 0;
	for (unsigned u = 0; u < USERS; u++) {
		_cleanup_free_ struct snapshot_record *v = NULL;
		char name[32];
		snprintf(name, sizeof(name), "user%u", u);
		int cnt = snapshot_lookup_user(s, name, &v, NULL);
		assert_int_equal(cnt, u == 17 ? BIG : 1 + u % 9);
		for (int k = 0; k < cnt; k++, i++) {
			expect_record(&v[k], &e[i]);
			struct snapshot_record r;
			assert_int_equal(snapshot_lookup_fingerprint(s, e[i].user, e[i].fingerprint, &r, NULL), 1);
			expect_record(&r, &e[i]);
		}
		struct snapshot_record r;
		assert_int_equal(snapshot_lookup_fingerprint(s, name, "SHA256:fp-none", &r, NULL), 0);
	}
	assert_int_equal(i, n);
	struct snapshot_record *v = NULL;
	assert_int_equal(snapshot_lookup_user(s, "user3000", &v, NULL), 0);

	snapshot_free(s);
	for (size_t j = 0; j < 3 * n; j++)
		free(strs[j]);
	free(strs);
	free(e);
}

static void writer_rejects_bad_entries(void **state)
{
	static char longline[SNAPSHOT_LINE_MAX + 2];
	memset(longline, 'A', sizeof(longline) - 1);
	memcpy(longline, "ssh-ed25519 ", 12);
	static const struct {
		struct snapshot_entry e;
		int err;
	} cases[] = {
		{ { "", "SHA256:x", "ssh-ed25519 " K1, 0, NULL }, -EINVAL },
		{ { "a\nb", "SHA256:x", "ssh-ed25519 " K1, 0, NULL }, -EINVAL },
		{ { "a", "", "ssh-ed25519 " K1, 0, NULL }, -EINVAL },
		{ { "a", "SHA256:\tx", "ssh-ed25519 " K1, 0, NULL }, -EINVAL },
		{ { "a", "SHA256:x", "", 0, NULL }, -EINVAL },
		{ { "a", "SHA256:x", "ssh-ed25519 " K1 "\nssh-ed25519 " K2, 0, NULL }, -EINVAL },
		{ { "a", "SHA256:x", "ssh-ed25519 " K1 " c\r", 0, NULL }, -EINVAL },
		{ { "a", "SHA256:x", "ssh-ed25519", 0, NULL }, -EINVAL },                  /* no blob */
		{ { "a", "SHA256:x", "ssh-ed25519 AA*A", 0, NULL }, -EINVAL },             /* not base64 */
		{ { "a", "SHA256:x", "restrict " K1, 0, NULL }, -EINVAL },                 /* no type */
		{ { "a", "SHA256:x", "command=\"x ssh-ed25519 " K1, 0, NULL }, -EINVAL },  /* open quote */
		{ { "a", "SHA256:x", "# ssh-ed25519 " K1, 0, NULL }, -EINVAL },
		{ { "a", "SHA256:x", "ssh-ed25519 " K1, -1, NULL }, -EINVAL },
		{ { "a", "SHA256:x", longline, 0, NULL }, -EINVAL },
		{ { NULL, "SHA256:x", "ssh-ed25519 " K1, 0, NULL }, -EINVAL },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct snapshot_entry e[2] = { small[0], cases[i].e };
		void *buf = NULL;
		size_t size = 0, bad = SIZE_MAX;
		assert_int_equal(snapshot_build(e, 2, 1, 1, &buf, &size, &bad), cases[i].err);
		assert_int_equal(bad, 1);
		assert_null(buf);
	}
	/* The same (user, fingerprint) twice is refused, wherever it is. */
	struct snapshot_entry dup[] = { small[0], small[1], { "alice", "SHA256:aaaa1", "ssh-ed25519 " K2, 0, NULL } };
	void *buf = NULL;
	size_t size, bad = SIZE_MAX;
	assert_int_equal(snapshot_build(dup, 3, 1, 1, &buf, &size, &bad), -EEXIST);
	assert_int_equal(bad, 2);
	/* The same fingerprint for two users is fine. */
	struct snapshot_entry shared[] = { small[0], { "bob", "SHA256:aaaa1", "ssh-ed25519 " K1, 0, NULL } };
	assert_int_equal(snapshot_build(shared, 2, 1, 1, &buf, &size, NULL), 0);
	free(buf);
}

/* Runs every lookup the snapshot can answer. Returns true if anything was
 * refused (-EBADMSG); fails the test if any answer differs from the
 * undamaged snapshot's. */
static bool any_lookup_refused(const struct snapshot *s, const struct snapshot_entry *e, size_t n)
{
	bool refused = false;
	static const char *const users[] = { "alice", "bob", "carol", "mallory" };
	for (size_t u = 0; u < ELEMENTSOF(users); u++) {
		struct snapshot_record *v = NULL;
		int r = snapshot_lookup_user(s, users[u], &v, NULL);
		if (r == -EBADMSG) {
			refused = true;
			continue;
		}
		size_t want = 0;
		for (size_t i = 0; i < n; i++)
			if (strcmp(e[i].user, users[u]) == 0)
				want++;
		assert_int_equal(r, want);
		for (size_t i = 0, k = 0; i < n; i++)
			if (strcmp(e[i].user, users[u]) == 0)
				expect_record(&v[k++], &e[i]);
		free(v);
	}
	for (size_t i = 0; i < n; i++) {
		struct snapshot_record rec;
		int r = snapshot_lookup_fingerprint(s, e[i].user, e[i].fingerprint, &rec, NULL);
		if (r == -EBADMSG) {
			refused = true;
			continue;
		}
		assert_int_equal(r, 1);
		expect_record(&rec, &e[i]);
	}
	return refused;
}

/* Every bit flip anywhere in a small snapshot (header, records, both
 * tables, both directories, padding) is caught: by snapshot_parse() or by a
 * lookup that touches it. No lookup ever returns altered data. */
static void every_flipped_byte_is_caught(void **state)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t size;
	build(small, ELEMENTSOF(small), (void **)&buf, &size);
	for (size_t i = 0; i < size; i++) {
		for (unsigned bit = 0; bit < 8; bit += 7) {
			buf[i] ^= (uint8_t)(1u << bit);
			struct snapshot *s = NULL;
			const char *what = NULL;
			int r = snapshot_parse(buf, size, &s, &what);
			if (r == 0) {
				if (!any_lookup_refused(s, small, ELEMENTSOF(small)))
					fail_msg("flip of bit %u at offset %zu went unnoticed", bit, i);
				snapshot_free(s);
			} else {
				assert_true(r == -EBADMSG || r == -EPROTONOSUPPORT);
				assert_non_null(what);
			}
			buf[i] ^= (uint8_t)(1u << bit);
		}
	}
	struct snapshot *s = NULL;
	assert_int_equal(snapshot_parse(buf, size, &s, NULL), 0);
	assert_false(any_lookup_refused(s, small, ELEMENTSOF(small)));
	snapshot_free(s);
}

static void truncated_or_extended_is_rejected(void **state)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t size;
	build(small, ELEMENTSOF(small), (void **)&buf, &size);
	for (size_t len = 0; len < size; len++) {
		struct snapshot *s = NULL;
		assert_int_equal(snapshot_parse(buf, len, &s, NULL), -EBADMSG);
	}
	_cleanup_free_ uint8_t *big = calloc(1, size + 8);
	memcpy(big, buf, size);
	struct snapshot *s = NULL;
	const char *what = NULL;
	assert_int_equal(snapshot_parse(big, size + 8, &s, &what), -EBADMSG);
	assert_string_equal(what, "file size");
}

static void other_version_is_refused(void **state)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t size;
	build(small, ELEMENTSOF(small), (void **)&buf, &size);
	/* A well-formed header (valid checksum) of the next version, and of 0. */
	struct snapshot *s = NULL;
	const char *what = NULL;
	for (uint8_t v = 0; v <= SNAPSHOT_VERSION + 1; v += SNAPSHOT_VERSION + 1) {
		buf[8] = v;
		uint64_t csum = XXH3_64bits(buf, 152);
		memcpy(buf + 152, &csum, 8);
		assert_int_equal(snapshot_parse(buf, size, &s, &what), -EPROTONOSUPPORT);
		assert_string_equal(what, "version");
	}
	/* And a wrong magic. */
	buf[0] = 'X';
	assert_int_equal(snapshot_parse(buf, size, &s, &what), -EBADMSG);
	assert_string_equal(what, "magic");
}

/* A version 1 file (before sources) still reads: every record with the
 * empty source. A version 2 record layout under a version 1 header does not
 * (its source length sits where version 1 has a zero field), nor the other
 * way round. */
static void version_1_still_reads(void **state)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t size, bad = SIZE_MAX;
	assert_int_equal(snapshot_build_version(1, small, ELEMENTSOF(small), 7, 1, (void **)&buf, &size, &bad), 0);
	struct snapshot *s = NULL;
	assert_int_equal(snapshot_parse(buf, size, &s, NULL), 0);
	struct snapshot_info info;
	snapshot_get_info(s, &info);
	assert_int_equal(info.version, 1);
	for (size_t i = 0; i < ELEMENTSOF(small); i++) {
		struct snapshot_record r;
		assert_int_equal(snapshot_lookup_fingerprint(s, small[i].user, small[i].fingerprint, &r, NULL), 1);
		assert_string_equal(r.line, small[i].line);
		assert_string_equal(r.source, "");
		assert_int_equal(r.source_len, 0);
	}
	snapshot_free(s);
	assert_int_equal(snapshot_build_version(3, small, 1, 7, 1, (void **)&buf, &size, &bad), -EINVAL);

	/* Headers swapped: each file's records fail their length check. */
	_cleanup_free_ uint8_t *b2 = NULL;
	size_t size2;
	build(small, ELEMENTSOF(small), (void **)&b2, &size2);
	b2[8] = 1;
	uint64_t csum = XXH3_64bits(b2, 152);
	memcpy(b2 + 152, &csum, 8);
	assert_int_equal(snapshot_parse(b2, size2, &s, NULL), 0);
	struct snapshot_record r;
	const char *what = NULL;
	assert_int_equal(snapshot_lookup_fingerprint(s, "alice", "SHA256:aaaa1", &r, &what), -EBADMSG);
	snapshot_free(s);
}

static void writer_checks_sources(void **state)
{
	static char longsrc[SNAPSHOT_SOURCE_MAX + 2];
	memset(longsrc, 's', sizeof(longsrc) - 1);
	const char *bad[] = { "a\nb", "tab\there", "del\x7f", longsrc };
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct snapshot_entry e[2] = { small[0], small[1] };
		e[1].source = bad[i];
		void *buf = NULL;
		size_t size = 0, b = SIZE_MAX;
		assert_int_equal(snapshot_build(e, 2, 1, 1, &buf, &size, &b), -EINVAL);
		assert_int_equal(b, 1);
	}
	/* Exactly the maximum is fine, and comes back whole. */
	longsrc[SNAPSHOT_SOURCE_MAX] = '\0';
	struct snapshot_entry e = small[0];
	e.source = longsrc;
	_cleanup_free_ void *buf = NULL;
	size_t size;
	build(&e, 1, &buf, &size);
	struct snapshot *s = NULL;
	assert_int_equal(snapshot_parse(buf, size, &s, NULL), 0);
	struct snapshot_record r;
	assert_int_equal(snapshot_lookup_fingerprint(s, e.user, e.fingerprint, &r, NULL), 1);
	expect_record(&r, &e);
	snapshot_free(s);
}

static int setup(void **state)
{
	return scratch_setup(state, "snapshot");
}

static void open_fd_checks_owner_and_mode(void **state)
{
	struct scratch *sc = *state;
	assert_int_equal(snapshot_write_at(sc->fd, "snap", small, ELEMENTSOF(small), 3, 4, FSX_UID_KEEP,
					   FSX_GID_KEEP, NULL), 1);
	_cleanup_close_ int fd = openat(sc->fd, "snap", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);

	struct snapshot *s = NULL;
	const char *what = NULL;
	assert_int_equal(snapshot_open_fd(fd, geteuid(), &s, &what), 0);
	struct snapshot_record r;
	assert_int_equal(snapshot_lookup_fingerprint(s, "bob", "SHA256:bbbb1", &r, NULL), 1);
	expect_record(&r, &small[1]);
	snapshot_free(s);

	/* Owned by someone else than the expected owner. */
	assert_int_equal(snapshot_open_fd(fd, geteuid() + 1, &s, &what), -EPERM);
	assert_string_equal(what, "owner");
	/* Group- or world-writable. */
	static const mode_t bad_modes[] = { 0664, 0646, 0666, 0620 };
	for (size_t i = 0; i < ELEMENTSOF(bad_modes); i++) {
		assert_int_equal(fchmod(fd, bad_modes[i]), 0);
		assert_int_equal(snapshot_open_fd(fd, geteuid(), &s, &what), -EPERM);
		assert_string_equal(what, "group/world-writable");
	}
	assert_int_equal(fchmod(fd, 0600), 0);
	assert_int_equal(snapshot_open_fd(fd, geteuid(), &s, NULL), 0);
	snapshot_free(s);

	/* Not a regular file. */
	assert_int_equal(snapshot_open_fd(sc->fd, geteuid(), &s, &what), -EBADFD);
	/* Truncated on disk. */
	_cleanup_close_ int wfd = openat(sc->fd, "snap", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	assert_int_equal(ftruncate(wfd, 100), 0);
	assert_int_equal(snapshot_open_fd(fd, geteuid(), &s, &what), -EBADMSG);
	assert_int_equal(ftruncate(wfd, 1000), 0);
	assert_int_equal(snapshot_open_fd(fd, geteuid(), &s, &what), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_small),
		cmocka_unit_test(empty_snapshot),
		cmocka_unit_test(many_users_many_keys),
		cmocka_unit_test(writer_rejects_bad_entries),
		cmocka_unit_test(every_flipped_byte_is_caught),
		cmocka_unit_test(truncated_or_extended_is_rejected),
		cmocka_unit_test(other_version_is_refused),
		cmocka_unit_test(version_1_still_reads),
		cmocka_unit_test(writer_checks_sources),
		cmocka_unit_test_setup_teardown(open_fd_checks_owner_and_mode, setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
