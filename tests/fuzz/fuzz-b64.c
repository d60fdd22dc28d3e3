/* libFuzzer target for lib/base/b64.c. The first byte picks the flags and the
 * size ceiling; the rest is used three ways:
 *
 *  - comparison: b64_decode() must agree with a small reference decoder
 *    written here straight from RFC 4648 (canonical, padded, standard
 *    alphabet, newlines only with B64_IGNORE_NEWLINES): same verdict, same
 *    bytes;
 *  - round trip of the decoded bytes: encoding them again gives back the
 *    input's significant characters (only canonical base64 is accepted);
 *  - round trip of the raw bytes: b64_decode(b64_encode(x)) == x, and the
 *    unpadded encoding is the padded one without its "=".
 *
 * Any disagreement aborts. Seeds: tests/fuzz/corpus/b64/. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int value(unsigned char c)
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

/* The reference: strips the permitted newlines into *clean, then decodes
 * 4-character groups by hand. Returns 0, -EINVAL or -EMSGSIZE like
 * b64_decode() (-EINVAL wins over -EMSGSIZE, as there). */
static int ref_decode(const unsigned char *in, size_t len, size_t max, unsigned flags, unsigned char *out,
		      size_t *out_len, char *clean, size_t *clean_len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		if ((flags & B64_IGNORE_NEWLINES) &&
		    (in[i] == '\n' || (in[i] == '\r' && i + 1 < len && in[i + 1] == '\n')))
			continue;
		clean[n++] = (char)in[i];
	}
	*clean_len = n;
	if (n % 4)
		return -EINVAL;
	size_t o = 0;
	for (size_t g = 0; g < n; g += 4) {
		bool last = g + 4 == n;
		int v[4];
		int pad = 0;
		for (int k = 0; k < 4; k++) {
			unsigned char c = (unsigned char)clean[g + k];
			if (c == '=' && last && k >= 2) {
				/* "=" only at the end, and only "x=" or "=="-tails. */
				if (k == 2 && clean[g + 3] != '=')
					return -EINVAL;
				v[k] = 0;
				pad++;
				continue;
			}
			if (pad)
				return -EINVAL;
			v[k] = value(c);
			if (v[k] < 0)
				return -EINVAL;
		}
		/* Canonical: the bits the padding drops are zero. */
		if ((pad == 1 && (v[2] & 0x3)) || (pad == 2 && (v[1] & 0xf)))
			return -EINVAL;
		unsigned w = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
		out[o++] = (unsigned char)(w >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(w >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)w;
	}
	if (o > max)
		return -EMSGSIZE;
	*out_len = o;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned flags = (data[0] & 1) ? B64_IGNORE_NEWLINES : 0;
	/* Mostly unlimited; sometimes a small ceiling, to hit -EMSGSIZE. */
	size_t max = (data[0] & 2) ? (size_t)(data[0] >> 2) : SIZE_MAX;
	const unsigned char *in = data + 1;
	size_t len = size - 1;

	unsigned char *ref = malloc(len / 4 * 3 + 3);
	char *clean = malloc(len + 1);
	if (!ref || !clean)
		abort();
	size_t ref_len = 0, clean_len = 0;
	int rr = ref_decode(in, len, max, flags, ref, &ref_len, clean, &clean_len);

	unsigned char *dec = NULL;
	size_t dec_len = 0;
	int r = b64_decode((const char *)in, len, max, flags, &dec, &dec_len);
	if (r != rr)
		abort();
	if (r == 0) {
		if (dec_len != ref_len || memcmp(dec, ref, dec_len) != 0 || dec[dec_len] != '\0')
			abort();
		/* Canonical input: the re-encoding is the input without newlines. */
		char *enc = b64_encode(dec, dec_len, false);
		if (!enc || strlen(enc) != clean_len || memcmp(enc, clean, clean_len) != 0)
			abort();
		free(enc);
		free(dec);
	} else if (dec) {
		abort(); /* output parameters are written only on success */
	}

	/* The raw input as data: encode, decode back, both paddings. */
	char *enc = b64_encode(data, size, false);
	char *unp = b64_encode(data, size, true);
	if (!enc || !unp)
		abort();
	size_t el = strlen(enc), ul = strlen(unp);
	if (el != (size + 2) / 3 * 4 || ul > el || memcmp(enc, unp, ul) != 0 || el - ul > 2)
		abort();
	for (size_t i = ul; i < el; i++)
		if (enc[i] != '=')
			abort();
	unsigned char *back = NULL;
	size_t back_len = 0;
	if (b64_decode(enc, el, SIZE_MAX, 0, &back, &back_len) != 0 || back_len != size ||
	    memcmp(back, data, size) != 0)
		abort();
	free(back);
	free(enc);
	free(unp);
	free(ref);
	free(clean);
	return 0;
}
