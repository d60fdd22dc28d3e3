/* libFuzzer target for lib/ssh/sshcert.c, the reader of the certificate sshd
 * passes authkeys-cmd in %k (client-controlled): any bytes as a blob and,
 * base64-encoded, through the decoder. Whatever parses must point inside
 * the input; encode -> decode must give the bytes back. Seeds:
 * tests/fuzz/corpus/sshcert/ (certificates made by ssh-keygen). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "sshcert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool inside(const void *p, size_t len, const uint8_t *data, size_t size)
{
	const uint8_t *q = p;
	return q >= data && len <= size && q - data <= (ptrdiff_t)(size - len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sshcert_info c;
	if (sshcert_parse(data, size, &c) == 0) {
		if (!inside(c.type, c.type_len, data, size) || !inside(c.key_id, c.key_id_len, data, size) ||
		    !inside(c.ca_key, c.ca_key_len, data, size) || c.ca_key_len < 5)
			abort();
	}
	if (size > SSHCERT_BLOB_MAX)
		return 0;
	static char b64[SSHCERT_B64_MAX + 8];
	static uint8_t back[SSHCERT_BLOB_MAX];
	int n = b64_encode_into(data, size, b64, sizeof(b64));
	if (n < 0)
		abort();
	if (b64_decode_into(b64, (size_t)n, back, sizeof(back)) != (int)size || memcmp(back, data, size) != 0)
		abort();
	/* And the input itself as text: never more than it can hold. */
	int m = b64_decode_into((const char *)data, size, back, sizeof(back));
	if (m > (int)sizeof(back) || (m >= 0 && (size_t)m > size / 4 * 3))
		abort();
	return 0;
}
