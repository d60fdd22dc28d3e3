/* libFuzzer target for the snapshot reader (lib/ssh/snapshot.c): any bytes are
 * parsed as a snapshot and, if accepted, looked up by user and by
 * fingerprint. Never a crash, an out-of-bounds read or a leak; every record
 * returned must be what authkeys-cmd may print (one line, key fields inside
 * it, its source one printable string). Fuzz builds accept any checksum (NA_FUZZING) so that mutations reach
 * the bounds checks behind them. Seeds: tests/fuzz/corpus/snapshot/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct snapshot_record *r, const char *user, const char *fp)
{
	if (strcmp(r->user, user) != 0 || (fp && strcmp(r->fingerprint, fp) != 0))
		abort();
	if (r->line_len == 0 || strlen(r->line) != r->line_len || memchr(r->line, '\n', r->line_len) ||
	    memchr(r->line, '\r', r->line_len))
		abort();
	if (r->type < r->line || r->type + r->type_len > r->line + r->line_len || r->blob < r->line ||
	    r->blob + r->blob_len > r->line + r->line_len || r->expiry < 0)
		abort();
	/* The source goes into a journal field as it is: bounded, one line. */
	if (!r->source || strlen(r->source) != r->source_len || r->source_len > SNAPSHOT_SOURCE_MAX)
		abort();
	for (size_t i = 0; i < r->source_len; i++)
		if ((unsigned char)r->source[i] < 0x20 || r->source[i] == 0x7f)
			abort();
}

static void query(const struct snapshot *s, const char *user, const char *fp)
{
	struct snapshot_record *v = NULL;
	int n = snapshot_lookup_user(s, user, &v, NULL);
	for (int i = 0; i < n; i++)
		check(&v[i], user, NULL);
	free(v);
	struct snapshot_record r;
	if (fp && snapshot_lookup_fingerprint(s, user, fp, &r, NULL) == 1)
		check(&r, user, fp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapshot *s = NULL;
	if (snapshot_parse(data, size, &s, NULL) < 0)
		return 0;

	static const char *const users[] = { "alice", "bob", "carol", "root" };
	static const char *const fps[] = { "SHA256:a1", "SHA256:a2", "SHA256:b1", "SHA256:c1" };
	for (size_t i = 0; i < sizeof(users) / sizeof(users[0]); i++)
		for (size_t j = 0; j < sizeof(fps) / sizeof(fps[0]); j++)
			query(s, users[i], fps[j]);

	/* The first record's own user and fingerprint (header 160 + record
	 * header 40), whatever the mutation made of them. */
	char user[SNAPSHOT_USER_MAX + 1], fp[SNAPSHOT_FINGERPRINT_MAX + 1];
	if (size > 200) {
		size_t n = strnlen((const char *)data + 200, size - 200);
		if (n > 0 && n < sizeof(user) && 200 + n + 1 < size) {
			memcpy(user, data + 200, n);
			user[n] = '\0';
			size_t m = strnlen((const char *)data + 201 + n, size - 201 - n);
			if (m > 0 && m < sizeof(fp)) {
				memcpy(fp, data + 201 + n, m);
				fp[m] = '\0';
				query(s, user, fp);
			}
		}
	}
	snapshot_free(s);
	return 0;
}
