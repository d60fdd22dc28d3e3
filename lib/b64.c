/* Strict base64; see b64.h. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "cleanup.h"

static bool is_b64_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

int b64_decode(const char *in, size_t len, size_t max, unsigned flags, unsigned char **ret, size_t *ret_len)
{
	/* Copy out the significant characters, dropping permitted newlines. */
	_cleanup_free_ char *clean = malloc(len + 1);
	if (!clean)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if ((flags & B64_IGNORE_NEWLINES) && (c == '\n' || (c == '\r' && i + 1 < len && in[i + 1] == '\n')))
			continue;
		clean[n++] = (char)c;
	}
	if (n % 4 != 0)
		return -EINVAL;

	size_t pad = 0;
	if (n > 0 && clean[n - 1] == '=')
		pad = (n > 1 && clean[n - 2] == '=') ? 2 : 1;
	for (size_t i = 0; i < n - pad; i++)
		if (!is_b64_char((unsigned char)clean[i]))
			return -EINVAL;

	/* Canonical form: the bits that padding discards must be zero, so each
	 * byte string has exactly one encoding (a re-encode must round-trip).
	 * Checked before the size, so that what is not base64 at all is
	 * -EINVAL whatever the ceiling (fuzz-b64 found the other order). */
	if (pad > 0) {
		unsigned char last = (unsigned char)clean[n - pad - 1];
		static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		unsigned v = (unsigned)(strchr(alphabet, last) - alphabet);
		if ((pad == 1 && (v & 0x3)) || (pad == 2 && (v & 0xf)))
			return -EINVAL;
	}

	size_t out_len = n / 4 * 3 - pad;
	if (out_len > max)
		return -EMSGSIZE;
	if (n > (size_t)INT32_MAX)
		return -EMSGSIZE;

	unsigned char *out = malloc(n / 4 * 3 + 1);
	if (!out)
		return -ENOMEM;
	int k = n ? EVP_DecodeBlock(out, (const unsigned char *)clean, (int)n) : 0;
	if (k < 0 || (size_t)k != n / 4 * 3) {
		free(out);
		return -EINVAL;
	}
	out[out_len] = '\0';
	*ret = out;
	*ret_len = out_len;
	return 0;
}

char *b64_encode(const void *data, size_t len, bool unpadded)
{
	if (len > (size_t)INT32_MAX / 2)
		return NULL;
	size_t cap = (len + 2) / 3 * 4 + 1;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	int k = EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	if (k < 0) {
		free(out);
		return NULL;
	}
	if (unpadded)
		while (k > 0 && out[k - 1] == '=')
			k--;
	out[k] = '\0';
	return out;
}
