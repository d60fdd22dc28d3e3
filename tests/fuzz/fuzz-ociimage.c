/* libFuzzer target for lib/node/ociimage.c: what a registry hands the executor
 * through containerd. The first byte picks the parser: tar lookup of a few
 * paths, gunzip then tar lookup, index/manifest, image config. Invariants:
 * a FILE result points inside the input with a mode <= 07777; a manifest
 * has 1..OCI_LAYERS_MAX valid layer digests and a valid config digest;
 * gunzip never returns more than asked for. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ociimage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	switch (data[0] % 4) {
	case 0:
		lookup(in, len);
		break;
	case 1: {
		unsigned char *out = NULL;
		size_t olen = 0;
		if (oci_gunzip(in, len, 1u << 20, &out, &olen) == 0) {
			if (olen > (1u << 20))
				abort();
			lookup(out, olen);
			free(out);
		}
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
