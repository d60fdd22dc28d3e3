/* mkkrl: test-only front end of lib/ssh/krl.c, so that the tests can hold
 * ssh-keygen -Q against the writer directly (the real user is
 * cloud-config-exec).
 *
 *   mkkrl OUTPUT < fingerprints     one "SHA256:..." a line, or "serial
 *                                   <CA key base64> <N>"; writes the KRL
 *   mkkrl --dump INPUT              reads a KRL with krl_read(); prints
 *                                   "version N", one fingerprint a line,
 *                                   then "serial <CA key base64> <N>" lines */
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
	for (size_t i = 0; i < k.n_cas; i++) {
		_cleanup_free_ char *s = b64_encode(k.cas[i].ca_key, k.cas[i].ca_key_len, false);
		for (size_t j = 0; j < k.cas[i].n; j++)
			printf("serial %s %llu\n", s ? s : "?", (unsigned long long)k.cas[i].serials[j]);
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
	struct krl_ca_serials cas[KRL_CAS_MAX + 1] = { 0 };
	size_t n = 0, n_cas = 0;
	char line[4096];
	while (v && fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0])
			continue;
		if (strncmp(line, "serial ", 7) == 0) {
			char *sp = strchr(line + 7, ' ');
			unsigned char *blob = NULL;
			size_t blen = 0;
			if (!sp || b64_decode(line + 7, (size_t)(sp - line - 7), KRL_CA_KEY_MAX, 0, &blob, &blen) < 0) {
				fprintf(stderr, "mkkrl: bad serial line: %s\n", line);
				return 1;
			}
			size_t i = 0;
			while (i < n_cas && krl_ca_key_cmp(cas[i].ca_key, cas[i].ca_key_len, blob, blen) != 0)
				i++;
			if (i == n_cas) {
				if (n_cas >= KRL_CAS_MAX)
					return 1;
				cas[n_cas++] = (struct krl_ca_serials){ .ca_key = blob, .ca_key_len = blen };
			} else
				free(blob);
			uint64_t *nv = realloc(cas[i].serials, (cas[i].n + 1) * sizeof(*nv));
			if (!nv)
				return 1;
			cas[i].serials = nv;
			cas[i].serials[cas[i].n++] = strtoull(sp + 1, NULL, 10);
			continue;
		}
		if (n > KRL_ENTRIES_MAX || krl_hash_from_fingerprint(line, &v[n]) < 0) {
			fprintf(stderr, "mkkrl: bad or too many fingerprints: %s\n", line);
			return 1;
		}
		n++;
	}
	_cleanup_free_ void *out = NULL;
	size_t len = 0;
	int r = v ? krl_write_full(v, n, cas, n_cas, 1, 0, "mkkrl", &out, &len) : -ENOMEM;
	for (size_t i = 0; i < n_cas; i++) {
		free(cas[i].ca_key);
		free(cas[i].serials);
	}
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
