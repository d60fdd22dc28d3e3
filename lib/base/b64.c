/* Strict base64; see b64.h. RFC 4648 section 4, written out here (no
 * OpenSSL) so that the statically linked authkeys-cmd can use it too. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "cleanup.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decodes n characters of canonical base64 into out (NULL: only checks
 * and counts). Returns the decoded length or -EINVAL. */
static long decode(const char *in, size_t n, uint8_t *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i += 4) {
		bool last = i + 4 == n;
		int v[4];
		size_t pad = 0;
		for (int j = 0; j < 4; j++) {
			char c = in[i + (size_t)j];
			if (c == '=' && last && j >= 2) {
				v[j] = 0;
				pad++;
				continue;
			}
			if (pad) /* "=" only at the very end */
				return -EINVAL;
			if ((v[j] = value(c)) < 0)
				return -EINVAL;
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
		/* Canonical: the bits a padded group drops must be zero, so each
		 * byte string has exactly one encoding (a re-encode round-trips). */
		if ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff)))
			return -EINVAL;
		uint8_t b[3] = { (uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w };
		if (out)
			memcpy(out + o, b, 3 - pad);
		o += 3 - pad;
	}
	return (long)o;
}

int b64_decode_into(const char *in, size_t len, uint8_t *out, size_t out_max)
{
	if (len % 4 || len > INT32_MAX)
		return -EINVAL;
	/* Checked before the size, so that what is not base64 at all is
	 * -EINVAL whatever the ceiling (fuzz-b64 found the other order). */
	long k = decode(in, len, NULL);
	if (k < 0)
		return (int)k;
	if ((size_t)k > out_max)
		return -EMSGSIZE;
	return (int)decode(in, len, out);
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
	if (n % 4 != 0 || n > INT32_MAX)
		return -EINVAL;
	long k = decode(clean, n, NULL);
	if (k < 0)
		return (int)k;
	if ((size_t)k > max)
		return -EMSGSIZE;
	unsigned char *out = malloc((size_t)k + 1);
	if (!out)
		return -ENOMEM;
	(void)decode(clean, n, out);
	out[k] = '\0';
	*ret = out;
	*ret_len = (size_t)k;
	return 0;
}

int b64_encode_into(const void *data, size_t len, char *out, size_t out_max)
{
	const uint8_t *d = data;
	size_t need = (len + 2) / 3 * 4;
	if (need + 1 > out_max || need > INT32_MAX)
		return -EMSGSIZE;
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		size_t k = len - i < 3 ? len - i : 3;
		uint32_t w = (uint32_t)d[i] << 16 | (k > 1 ? (uint32_t)d[i + 1] << 8 : 0) | (k > 2 ? d[i + 2] : 0);
		out[o++] = alphabet[(w >> 18) & 63];
		out[o++] = alphabet[(w >> 12) & 63];
		out[o++] = k > 1 ? alphabet[(w >> 6) & 63] : '=';
		out[o++] = k > 2 ? alphabet[w & 63] : '=';
	}
	out[o] = '\0';
	return (int)o;
}

char *b64_encode(const void *data, size_t len, bool unpadded)
{
	if (len > (size_t)INT32_MAX / 2)
		return NULL;
	size_t cap = (len + 2) / 3 * 4 + 1;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	int k = b64_encode_into(data, len, out, cap);
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
