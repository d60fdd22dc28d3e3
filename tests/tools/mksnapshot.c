/* mksnapshot: test-only writer of key snapshots (tests and make bench; the
 * real writer is cloud-config-exec).
 *
 *   mksnapshot [--generation N] [--format V] [--sources] OUTPUT < entries.tsv
 *
 * Each input line is "user<TAB>fingerprint<TAB>expiry<TAB>authorized_keys
 * line" (expiry in UTC seconds, 0 = none); with --sources
 * "user<TAB>fingerprint<TAB>expiry<TAB>source<TAB>line". --format writes
 * that snapshot format version (1: the one before sources). OUTPUT is replaced atomically
 * with mode 0644, owned by whoever runs this (root in the tests). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "fsx.h"
#include "snapshot.h"

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -EINVAL;
	*ret = v;
	return 0;
}

/* Each entry's user points at the start of its own getline() buffer. */
struct entries {
	struct snapshot_entry *v;
	size_t n;
};

static void entries_done(struct entries *e)
{
	for (size_t i = 0; i < e->n; i++)
		free((char *)(uintptr_t)e->v[i].user);
	free(e->v);
}

int main(int argc, char **argv)
{
	uint64_t generation = 1, version = SNAPSHOT_VERSION;
	bool sources = false;
	int a = 1;
	for (;;) {
		if (argc > a + 1 && strcmp(argv[a], "--generation") == 0) {
			if (parse_u64(argv[a + 1], &generation) < 0) {
				fprintf(stderr, "mksnapshot: bad generation \"%s\"\n", argv[a + 1]);
				return 2;
			}
			a += 2;
		} else if (argc > a + 1 && strcmp(argv[a], "--format") == 0) {
			if (parse_u64(argv[a + 1], &version) < 0 || version < SNAPSHOT_VERSION_MIN ||
			    version > SNAPSHOT_VERSION) {
				fprintf(stderr, "mksnapshot: bad format \"%s\"\n", argv[a + 1]);
				return 2;
			}
			a += 2;
		} else if (argc > a && strcmp(argv[a], "--sources") == 0) {
			sources = true;
			a++;
		} else
			break;
	}
	if (argc != a + 1) {
		fprintf(stderr, "usage: mksnapshot [--generation N] [--format V] [--sources] OUTPUT < entries.tsv\n");
		return 2;
	}
	int nf = sources ? 5 : 4;

	_cleanup_(entries_done) struct entries es = {};
	size_t cap = 0;
	_cleanup_free_ char *line = NULL;
	size_t linecap = 0;
	ssize_t len;
	unsigned lineno = 0;
	while ((len = getline(&line, &linecap, stdin)) >= 0) {
		lineno++;
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len == 0)
			continue;
		char *f[5], *p = line;
		for (int i = 0; i < nf - 1; i++) {
			char *tab = strchr(p, '\t');
			if (!tab) {
				fprintf(stderr, "mksnapshot: line %u: expected %d tab-separated fields\n", lineno, nf);
				return 1;
			}
			*tab = '\0';
			f[i] = p;
			p = tab + 1;
		}
		f[nf - 1] = p;
		uint64_t expiry;
		if (parse_u64(f[2], &expiry) < 0 || expiry > INT64_MAX) {
			fprintf(stderr, "mksnapshot: line %u: bad expiry \"%s\"\n", lineno, f[2]);
			return 1;
		}
		if (es.n == cap) {
			cap = cap ? cap * 2 : 1024;
			struct snapshot_entry *ne = realloc(es.v, cap * sizeof(*ne));
			if (!ne)
				return 1;
			es.v = ne;
		}
		/* The entry points into this line's buffer (f[0] == line); the
		 * next line gets a fresh one. */
		es.v[es.n++] = (struct snapshot_entry){ .user = f[0], .fingerprint = f[1], .line = f[nf - 1],
							 .expiry = (int64_t)expiry, .source = sources ? f[3] : NULL };
		line = NULL;
		linecap = 0;
	}

	const char *name;
	_cleanup_close_ int root = fsx_open_root(argv[a][0] == '/' ? "/" : ".");
	_cleanup_close_ int dir = fsx_open_parent_at(root, argv[a], 0, 0, &name);
	if (dir < 0) {
		fprintf(stderr, "mksnapshot: %s: %s\n", argv[a], strerror(-dir));
		return 1;
	}
	size_t bad = SIZE_MAX, size = 0;
	_cleanup_free_ void *buf = NULL;
	int r = snapshot_build_version((uint32_t)version, es.v, es.n, generation, (int64_t)time(NULL), &buf, &size,
				       &bad);
	if (r >= 0)
		r = fsx_write_atomic_at(dir, name, buf, size, 0644, FSX_UID_KEEP, FSX_GID_KEEP, 0);
	if (r < 0) {
		if (bad != SIZE_MAX)
			fprintf(stderr, "mksnapshot: entry %zu (user \"%s\"): %s\n", bad + 1, es.v[bad].user,
				strerror(-r));
		else
			fprintf(stderr, "mksnapshot: %s: %s\n", argv[a], strerror(-r));
		return 1;
	}
	return 0;
}
