/* libFuzzer target for lib/ssh/krl.c: the reader on arbitrary bytes, and the
 * writer round trip. Whatever krl_read() accepts must be sorted and unique
 * and must be written back by krl_write() to exactly the same bytes (the
 * reader accepts nothing but the writer's output); the hashes it found
 * must all be found again. Arbitrary bytes as a list of hashes must also
 * survive writer -> reader. Anything else aborts. */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "krl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Arbitrary bytes as CA keys and serials: written, they read back. */
static void cert_round_trip(const uint8_t *data, size_t size)
{
	if (size < 10)
		return;
	struct krl_ca_serials cas[2] = {
		{ .ca_key = (uint8_t *)(uintptr_t)data, .ca_key_len = 1 + data[0] % 8 },
		{ .ca_key = (uint8_t *)(uintptr_t)data + 1, .ca_key_len = 1 + data[1] % 8 },
	};
	uint64_t serials[64];
	size_t n = (size - 2) / 8 < 64 ? (size - 2) / 8 : 64;
	memcpy(serials, data + 2, n * 8);
	cas[0].serials = serials;
	cas[0].n = n / 2;
	cas[1].serials = serials + n / 2;
	cas[1].n = n - n / 2;
	void *buf = NULL;
	size_t len = 0;
	if (krl_write_full(NULL, 0, cas, 2, 1, 2, "", &buf, &len) != 0)
		return;
	struct krl k = { 0 };
	if (krl_read(buf, len, &k) != 0)
		abort();
	for (size_t i = 0; i < 2; i++)
		for (size_t j = 0; j < cas[i].n; j++)
			if (!krl_contains_serial(&k, cas[i].ca_key, cas[i].ca_key_len, cas[i].serials[j]))
				abort();
	krl_done(&k);
	free(buf);
}

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
		for (size_t i = 0; i < k.n_cas; i++) {
			if (k.cas[i].n == 0 || (i > 0 && krl_ca_key_cmp(k.cas[i - 1].ca_key, k.cas[i - 1].ca_key_len,
									 k.cas[i].ca_key, k.cas[i].ca_key_len) >= 0))
				abort();
			for (size_t j = 0; j < k.cas[i].n; j++)
				if (k.cas[i].serials[j] == 0 ||
				    !krl_contains_serial(&k, k.cas[i].ca_key, k.cas[i].ca_key_len, k.cas[i].serials[j]))
					abort();
		}
		if (krl_write_full(k.hashes, k.n, k.cas, k.n_cas, k.version, k.generated, k.comment, &buf, &len) != 0)
			abort();
		if (len != size || memcmp(buf, data, size) != 0)
			abort();
		for (size_t i = 0; i < k.n; i++)
			if (!krl_contains(&k, &k.hashes[i]))
				abort();
		free(buf);
		krl_done(&k);
	}
	if (size <= 4096) {
		writer_round_trip(data, size);
		cert_round_trip(data, size);
	}
	return 0;
}
