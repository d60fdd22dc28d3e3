/* mkkrl: test-only front end of lib/krl.c, so that the tests can hold
 * ssh-keygen -Q against the writer directly (the real user is
 * cloud-config-exec).
 *
 *   mkkrl OUTPUT < fingerprints     one "SHA256:..." a line; writes the KRL
 *   mkkrl --dump INPUT              reads a KRL with krl_read(); prints
 *                                   "version N" and one fingerprint a line */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "cleanup.h"
#include "krl.h"

static int dump(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 1;
	_cleanup_free_ char *buf = malloc(KRL_SIZE_MAX + 1);
	size_t len = buf ? fread(buf, 1, KRL_SIZE_MAX + 1, f) : 0;
	fclose(f);
	struct krl k = { 0 };
	int r = buf ? krl_read(buf, len, &k) : -ENOMEM;
	if (r < 0) {
		fprintf(stderr, "mkkrl: %s: %s\n", path, strerror(-r));
		return 1;
	}
	printf("version %llu\n", (unsigned long long)k.version);
	for (size_t i = 0; i < k.n; i++) {
		_cleanup_free_ char *s = b64_encode(k.hashes[i].h, KRL_HASH_LEN, true);
		printf("SHA256:%s\n", s ? s : "?");
	}
	krl_done(&k);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--dump") == 0)
		return dump(argv[2]);
	if (argc != 2) {
		fprintf(stderr, "usage: mkkrl OUTPUT < fingerprints | mkkrl --dump INPUT\n");
		return 2;
	}
	_cleanup_free_ struct krl_hash *v = calloc(KRL_ENTRIES_MAX + 1, sizeof(*v));
	size_t n = 0;
	char line[128];
	while (v && fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0])
			continue;
		if (n > KRL_ENTRIES_MAX || krl_hash_from_fingerprint(line, &v[n]) < 0) {
			fprintf(stderr, "mkkrl: bad or too many fingerprints: %s\n", line);
			return 1;
		}
		n++;
	}
	_cleanup_free_ void *out = NULL;
	size_t len = 0;
	int r = v ? krl_write(v, n, 1, 0, "mkkrl", &out, &len) : -ENOMEM;
	if (r < 0) {
		fprintf(stderr, "mkkrl: %s\n", strerror(-r));
		return 1;
	}
	FILE *f = fopen(argv[1], "wb");
	if (!f || fwrite(out, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "mkkrl: cannot write %s\n", argv[1]);
		return 1;
	}
	return 0;
}
