/* libFuzzer target for lib/krl.c: the reader on arbitrary bytes, and the
 * writer round trip. Whatever krl_read() accepts must be sorted and unique
 * and must be written back by krl_write() to exactly the same bytes (the
 * reader accepts nothing but the writer's output); the hashes it found
 * must all be found again. Arbitrary bytes as a list of hashes must also
 * survive writer -> reader. Anything else aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "krl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void writer_round_trip(const uint8_t *data, size_t size)
{
	size_t n = size / KRL_HASH_LEN;
	struct krl_hash *v = n ? malloc(n * sizeof(*v)) : NULL;
	if (n && !v)
		return;
	if (n)
		memcpy(v, data, n * sizeof(*v));
	void *buf = NULL;
	size_t len = 0;
	int r = krl_write(v, n, n, size, "fuzz", &buf, &len);
	if (r < 0) {
		free(v);
		return;
	}
	struct krl k = { 0 };
	if (krl_read(buf, len, &k) != 0 || k.version != n || k.generated != size || k.n > n)
		abort();
	for (size_t i = 0; i < n; i++)
		if (!krl_contains(&k, &v[i]))
			abort();
	krl_done(&k);
	free(buf);
	free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct krl k = { 0 };
	if (krl_read(data, size, &k) == 0) {
		for (size_t i = 1; i < k.n; i++)
			if (memcmp(&k.hashes[i - 1], &k.hashes[i], KRL_HASH_LEN) >= 0)
				abort();
		void *buf = NULL;
		size_t len = 0;
		if (krl_write(k.hashes, k.n, k.version, k.generated, k.comment, &buf, &len) != 0)
			abort();
		if (len != size || memcmp(buf, data, size) != 0)
			abort();
		for (size_t i = 0; i < k.n; i++)
			if (!krl_contains(&k, &k.hashes[i]))
				abort();
		free(buf);
		krl_done(&k);
	}
	if (size <= 4096)
		writer_round_trip(data, size);
	return 0;
}
