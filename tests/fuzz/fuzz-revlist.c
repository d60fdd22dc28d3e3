/* libFuzzer target for lib/ssh/revlist.c: the operator's revocation files
 * (/etc/node-agent/revoked-keys.d) on arbitrary bytes. Whatever it accepts
 * is sorted and unique, and each hash found is found again when the file
 * is parsed a second time; the count never exceeds the bound. Anything
 * else aborts. */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "revlist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct krl_hash *v = NULL, *w = NULL;
	char err[128];
	int n = revlist_parse((const char *)data, size, NULL, &v, err, sizeof(err));
	if (n < 0) {
		if (v)
			abort();
		return 0;
	}
	if (n > REVLIST_ENTRIES_MAX || (n == 0) != (v == NULL))
		abort();
	for (int i = 1; i < n; i++)
		if (memcmp(&v[i - 1], &v[i], KRL_HASH_LEN) >= 0)
			abort();
	int m = revlist_parse((const char *)data, size, NULL, &w, err, sizeof(err));
	if (m != n || (n && memcmp(v, w, (size_t)n * sizeof(*v)) != 0))
		abort();
	free(v);
	free(w);
	return 0;
}
