/* libFuzzer target for lib/node/ociimage.c: what a registry hands the executor
 * through containerd. The first byte picks the parser: tar lookup of a few
 * paths, gunzip then tar lookup, index/manifest, image config. Invariants:
 * a FILE result points inside the input with a mode <= 07777; a manifest
 * has 1..OCI_LAYERS_MAX valid layer digests and a valid config digest;
 * gunzip never returns more than asked for; the streaming reader
 * (oci_layer_*), fed in pieces whose sizes come from the input, answers
 * exactly as gunzip + oci_tar_find() do on the whole buffer. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "ociimage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct collect {
	unsigned char *buf;
	size_t len, cap;
};

static int collect_sink(void *userdata, const void *data, size_t len, bool start)
{
	struct collect *c = userdata;
	if (start)
		c->len = 0;
	if (c->len + len > c->cap) {
		size_t cap = (c->len + len) * 2;
		unsigned char *b = realloc(c->buf, cap);
		if (!b)
			abort();
		c->buf = b;
		c->cap = cap;
	}
	if (len)
		memcpy(c->buf + c->len, data, len);
	c->len += len;
	return 0;
}

static void digest_of(const void *data, size_t len, char out[OCI_DIGEST_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) || n != 32)
		abort();
	memcpy(out, "sha256:", 7);
	for (unsigned i = 0; i < 32; i++) {
		out[7 + 2 * i] = hex[md[i] >> 4];
		out[8 + 2 * i] = hex[md[i] & 15];
	}
	out[OCI_DIGEST_LEN] = '\0';
}

/* Streams blob (gzip or not) in pieces of 1..chunk bytes; tar is what
 * gunzip made of it (NULL when gunzip refused it, want_err its error). */
static void stream(const unsigned char *blob, size_t blen, bool gzip, const unsigned char *tar, size_t tlen,
		   unsigned chunk, const char *path)
{
	char bd[OCI_DIGEST_LEN + 1], td[OCI_DIGEST_LEN + 1];
	digest_of(blob, blen, bd);
	digest_of(tar ? tar : blob, tar ? tlen : blen, td);
	struct collect c = { 0 };
	struct oci_layer *l = NULL;
	if (oci_layer_new(gzip, path, 1u << 20, collect_sink, &c, &l) < 0)
		abort();
	int r = 0;
	for (size_t off = 0, k = 0; off < blen && r >= 0; off += k) {
		k = (size_t)(chunk ? (off * 7 + 1) % chunk + 1 : blen);
		if (k > blen - off)
			k = blen - off;
		r = oci_layer_feed(l, blob + off, k);
	}
	uint64_t size = 0;
	mode_t mode = 0;
	const char *which = NULL;
	if (r >= 0)
		r = oci_layer_finish(l, bd, td, &size, &mode, &which);
	oci_layer_free(l);
	if (!tar) {
		if (r >= 0)
			abort(); /* gunzip refused what the stream took */
		free(c.buf);
		return;
	}
	const unsigned char *d = NULL;
	size_t n = 0;
	mode_t m = 0;
	int want = oci_tar_find(tar, tlen, path, &d, &n, &m);
	if (want != r)
		abort();
	if (r == OCI_ENTRY_FILE && (size != n || mode != m || c.len != n || (n && memcmp(c.buf, d, n) != 0)))
		abort();
	free(c.buf);
}

static void lookup(const unsigned char *tar, size_t len)
{
	static const char *const paths[] = { "/kubelet", "/dir/file", "/opq/x", "/link", "/a/b/c" };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const unsigned char *d = NULL;
		size_t n = 0;
		mode_t m = 0;
		int r = oci_tar_find(tar, len, paths[i], &d, &n, &m);
		if (r < -EINVAL || r > OCI_ENTRY_WHITEOUT || (r < 0 && r != -EINVAL))
			abort();
		if (r == OCI_ENTRY_FILE && (d < tar || n > len || (size_t)(d - tar) > len - n || m > 07777))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const unsigned char *in = data + 1;
	size_t len = size - 1;
	static const char *const spaths[] = { "/kubelet", "/dir/file", "/opq/x" };
	const char *sp = spaths[(data[0] >> 2) % 3];
	unsigned chunk = (unsigned)(data[0] >> 4) * 37u; /* 0: all at once */
	switch (data[0] % 4) {
	case 0:
		lookup(in, len);
		stream(in, len, false, in, len, chunk, sp);
		break;
	case 1: {
		unsigned char *out = NULL;
		size_t olen = 0;
		if (oci_gunzip(in, len, 1u << 20, &out, &olen) == 0) {
			if (olen > (1u << 20))
				abort();
			lookup(out, olen);
			stream(in, len, true, out, olen, chunk, sp);
			free(out);
		} else
			stream(in, len, true, NULL, 0, chunk, sp);
		break;
	}
	case 2: {
		char next[OCI_DIGEST_LEN + 1];
		struct oci_manifest m = { 0 };
		int r = oci_parse_top((const char *)in, len, "amd64", next, &m);
		if (r == 1 && !oci_digest_is_valid(next))
			abort();
		if (r == 0) {
			if (!oci_digest_is_valid(m.config) || m.n_layers < 1 || m.n_layers > OCI_LAYERS_MAX)
				abort();
			for (size_t i = 0; i < m.n_layers; i++)
				if (!oci_digest_is_valid(m.layers[i]))
					abort();
			oci_manifest_done(&m);
		}
		break;
	}
	default: {
		char ids[3][OCI_DIGEST_LEN + 1];
		if (oci_parse_config((const char *)in, len, 3, ids) == 0)
			for (int i = 0; i < 3; i++)
				if (!oci_digest_is_valid(ids[i]))
					abort();
		break;
	}
	}
	return 0;
}
