/* Unit tests for lib/node/ociimage.c: tar lookup (files, directories, links,
 * whiteouts, opaque directories, PAX long names, the last entry winning,
 * malformed archives), gunzip, digests, manifest / index / config parsing,
 * on the fixtures in tests/fixtures/oci/ (see their README). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fsx.h"
#include "ociimage.h"

#include <openssl/evp.h>

static char *fixture(const char *name, size_t *len)
{
	const char *src = getenv("NA_SRCDIR");
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/fixtures/oci/%s", src ? src : ".", name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("cannot open fixture %s: %s", path, strerror(errno));
	char *data = NULL;
	assert_int_equal(fsx_read_fd(fd, 1u << 20, &data, len), 0);
	close(fd);
	return data;
}

static int find(const char *tar, size_t len, const char *path, const char **data, size_t *size, mode_t *mode)
{
	const unsigned char *d = NULL;
	int r = oci_tar_find((const unsigned char *)tar, len, path, &d, size, mode);
	*data = (const char *)d;
	return r;
}

static void tar_lookup(void **state)
{
	(void)state;
	size_t len;
	_cleanup_free_ char *tar = fixture("layer.tar", &len);
	const char *data;
	size_t size;
	mode_t mode;
	assert_int_equal(find(tar, len, "/kubelet", &data, &size, &mode), OCI_ENTRY_FILE);
	assert_int_equal(size, strlen("#!/bin/sh\necho kubelet\n"));
	assert_memory_equal(data, "#!/bin/sh\necho kubelet\n", size);
	assert_int_equal(mode, 0755);
	assert_int_equal(find(tar, len, "/dir", &data, &size, &mode), OCI_ENTRY_OTHER);
	assert_int_equal(find(tar, len, "/dir/file", &data, &size, &mode), OCI_ENTRY_FILE);
	assert_int_equal(find(tar, len, "/link", &data, &size, &mode), OCI_ENTRY_OTHER);
	assert_int_equal(find(tar, len, "/hard", &data, &size, &mode), OCI_ENTRY_OTHER);
	assert_int_equal(find(tar, len, "/link/below", &data, &size, &mode), OCI_ENTRY_OTHER);
	assert_int_equal(find(tar, len, "/gone", &data, &size, &mode), OCI_ENTRY_WHITEOUT);
	assert_int_equal(find(tar, len, "/gone/below", &data, &size, &mode), OCI_ENTRY_WHITEOUT);
	assert_int_equal(find(tar, len, "/opq/anything", &data, &size, &mode), OCI_ENTRY_WHITEOUT);
	assert_int_equal(find(tar, len, "/opq", &data, &size, &mode), OCI_ENTRY_OTHER);
	assert_int_equal(find(tar, len, "/missing", &data, &size, &mode), OCI_ENTRY_ABSENT);
	assert_int_equal(find(tar, len, "/gon", &data, &size, &mode), OCI_ENTRY_ABSENT);
	char longp[300];
	snprintf(longp, sizeof(longp), "/%.*s/%.*s", 150,
		 "llllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllll"
		 "llllllllllllllllllllllllllllllllllllllllllllllllll",
		 120,
		 "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
		 "nnnnnnnnnnnnnnnnnnnn");
	assert_int_equal(find(tar, len, longp, &data, &size, &mode), OCI_ENTRY_FILE);
	assert_memory_equal(data, "long name\n", size);
	/* The later of two entries wins. */
	assert_int_equal(find(tar, len, "/twice", &data, &size, &mode), OCI_ENTRY_FILE);
	assert_memory_equal(data, "second\n", size);
	assert_int_equal(mode, 0700);
	assert_int_equal(find(tar, len, "relative", &data, &size, &mode), OCI_ENTRY_ABSENT);
	assert_int_equal(find(tar, len, "/", &data, &size, &mode), -EINVAL);
}

static void tar_malformed(void **state)
{
	(void)state;
	size_t len;
	_cleanup_free_ char *tar = fixture("layer.tar", &len);
	const char *data;
	size_t size;
	mode_t mode;
	/* A flipped byte in the first header: checksum mismatch. */
	tar[10] ^= 1;
	assert_int_equal(find(tar, len, "/kubelet", &data, &size, &mode), -EINVAL);
	tar[10] ^= 1;
	/* Cut inside a file's data: its size runs past the end. */
	const char *k = memmem(tar, len, "echo kubelet", 12);
	assert_non_null(k);
	assert_int_equal(find(tar, (size_t)(k - tar) + 3, "/kubelet", &data, &size, &mode), -EINVAL);
	/* An archive without the end blocks is fine up to where it stops. */
	assert_int_equal(find(tar, 0, "/kubelet", &data, &size, &mode), OCI_ENTRY_ABSENT);
}

static void gunzip_and_digests(void **state)
{
	(void)state;
	size_t tlen, glen;
	_cleanup_free_ char *tar = fixture("layer.tar", &tlen);
	_cleanup_free_ char *gz = fixture("layer.tar.gz", &glen);
	_cleanup_free_ unsigned char *out = NULL;
	size_t olen = 0;
	assert_int_equal(oci_gunzip((unsigned char *)gz, glen, 1u << 20, &out, &olen), 0);
	assert_int_equal(olen, tlen);
	assert_memory_equal(out, tar, tlen);
	unsigned char *x = NULL;
	assert_int_equal(oci_gunzip((unsigned char *)gz, glen, 1000, &x, &olen), -EFBIG);
	assert_int_equal(oci_gunzip((unsigned char *)gz, glen / 2, 1u << 20, &x, &olen), -EINVAL);
	assert_int_equal(oci_gunzip((unsigned char *)tar, 512, 1u << 20, &x, &olen), -EINVAL);

	size_t clen;
	_cleanup_free_ char *config = fixture("config.json", &clen);
	char ids[1][OCI_DIGEST_LEN + 1];
	assert_int_equal(oci_parse_config(config, clen, 1, ids), 0);
	assert_true(oci_digest_matches(ids[0], tar, tlen));
	tar[100] ^= 1;
	assert_false(oci_digest_matches(ids[0], tar, tlen));
	assert_int_equal(oci_parse_config(config, clen, 2, ids), -EINVAL);
	assert_false(oci_digest_is_valid("sha256:ABCDEF"));
	assert_false(oci_digest_is_valid("sha512:0000000000000000000000000000000000000000000000000000000000000000"));
	assert_true(oci_digest_is_valid("sha256:0000000000000000000000000000000000000000000000000000000000000000"));
	assert_false(oci_digest_is_valid("sha256:000000000000000000000000000000000000000000000000000000000000000A"));
}

static void manifests(void **state)
{
	(void)state;
	size_t mlen, ilen, glen;
	_cleanup_free_ char *m = fixture("manifest.json", &mlen);
	_cleanup_free_ char *idx = fixture("index.json", &ilen);
	_cleanup_free_ char *gz = fixture("layer.tar.gz", &glen);
	char next[OCI_DIGEST_LEN + 1];
	struct oci_manifest man = { 0 };
	assert_int_equal(oci_parse_top(idx, ilen, "amd64", next, &man), 1);
	assert_true(oci_digest_matches(next, m, mlen));
	assert_int_equal(oci_parse_top(idx, ilen, "s390x", next, &man), -ENOENT);
	assert_int_equal(oci_parse_top(m, mlen, "amd64", next, &man), 0);
	assert_int_equal(man.n_layers, 1);
	assert_true(man.layer_gzip[0]);
	assert_true(oci_digest_matches(man.layers[0], gz, glen));
	oci_manifest_done(&man);

	static const char *const bad[] = {
		"{}",
		"{\"schemaVersion\":1}",
		"{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:x\"},\"layers\":[]}",
		"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"digest\":"
		"\"sha256:0000000000000000000000000000000000000000000000000000000000000000\"},\"layers\":[{\"mediaType\":"
		"\"application/vnd.oci.image.layer.v1.tar+zstd\",\"digest\":"
		"\"sha256:0000000000000000000000000000000000000000000000000000000000000000\"}]}",
		"{\"schemaVersion\":2,\"mediaType\":\"text/plain\"}",
		"[1]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (oci_parse_top(bad[i], strlen(bad[i]), "amd64", next, &man) != -EINVAL)
			fail_msg("accepted %s", bad[i]);
}

static void digest_of(const void *data, size_t len, char out[OCI_DIGEST_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	assert_true(EVP_Digest(data, len, md, &n, EVP_sha256(), NULL));
	memcpy(out, "sha256:", 7);
	for (unsigned i = 0; i < 32; i++) {
		out[7 + 2 * i] = hex[md[i] >> 4];
		out[8 + 2 * i] = hex[md[i] & 15];
	}
	out[OCI_DIGEST_LEN] = '\0';
}

struct got {
	char buf[4096];
	size_t len;
	int starts, fail_at; /* fail_at: the sink fails on that many bytes (0: never) */
};

static int got_sink(void *userdata, const void *data, size_t len, bool start)
{
	struct got *g = userdata;
	if (start) {
		g->starts++;
		g->len = 0;
		return 0;
	}
	if (g->fail_at && g->len + len >= (size_t)g->fail_at)
		return -ENOSPC;
	assert_true(g->len + len <= sizeof(g->buf));
	memcpy(g->buf + g->len, data, len);
	g->len += len;
	return 0;
}

/* Streams blob in pieces of step bytes; returns what oci_layer_finish says. */
static int stream(const char *blob, size_t blen, bool gzip, const char *digest, const char *diff_id, size_t step,
		  const char *path, uint64_t max, struct got *g, uint64_t *size, mode_t *mode, const char **which)
{
	struct oci_layer *l = NULL;
	assert_int_equal(oci_layer_new(gzip, path, max, got_sink, g, &l), 0);
	int r = 0;
	for (size_t off = 0; off < blen && r >= 0; off += step)
		r = oci_layer_feed(l, blob + off, blen - off < step ? blen - off : step);
	if (r >= 0)
		r = oci_layer_finish(l, digest, diff_id, size, mode, which);
	oci_layer_free(l);
	return r;
}

/* The layer read as a stream answers as oci_tar_find() on the whole tar,
 * whatever the pieces; digests, truncation, bombs and sink errors. */
static void layer_stream(void **state)
{
	(void)state;
	size_t tlen, glen;
	_cleanup_free_ char *tar = fixture("layer.tar", &tlen);
	_cleanup_free_ char *gz = fixture("layer.tar.gz", &glen);
	char td[OCI_DIGEST_LEN + 1], gd[OCI_DIGEST_LEN + 1];
	digest_of(tar, tlen, td);
	digest_of(gz, glen, gd);
	static const char *const paths[] = { "/kubelet", "/dir", "/dir/file", "/link", "/gone", "/opq/anything",
					     "/missing", "/twice" };
	static const size_t steps[] = { 1, 7, 511, 512, 513, 4096, 1u << 20 };
	for (size_t p = 0; p < ELEMENTSOF(paths); p++) {
		const char *want_data;
		size_t want_size = 0;
		mode_t want_mode = 0;
		int want = find(tar, tlen, paths[p], &want_data, &want_size, &want_mode);
		for (size_t s = 0; s < ELEMENTSOF(steps); s++)
			for (int z = 0; z < 2; z++) {
				struct got g = { .len = 0 };
				uint64_t size = 0;
				mode_t mode = 0;
				const char *which = NULL;
				int r = stream(z ? gz : tar, z ? glen : tlen, z, z ? gd : td, td, steps[s], paths[p],
					       1u << 20, &g, &size, &mode, &which);
				if (r != want)
					fail_msg("%s, step %zu, %s: %d, oci_tar_find %d", paths[p], steps[s],
						 z ? "gzip" : "tar", r, want);
				if (r == OCI_ENTRY_FILE) {
					assert_int_equal(size, want_size);
					assert_int_equal(mode, want_mode);
					assert_int_equal(g.len, want_size);
					assert_memory_equal(g.buf, want_data, want_size);
				}
			}
	}
	struct got g = { .len = 0 };
	uint64_t size = 0;
	mode_t mode = 0;
	const char *which = NULL;
	/* the later of two entries: the sink started over */
	assert_int_equal(stream(tar, tlen, false, td, td, 100, "/twice", 1u << 20, &g, &size, &mode, &which),
			 OCI_ENTRY_FILE);
	assert_int_equal(g.starts, 2);
	assert_memory_equal(g.buf, "second\n", 7);
	/* digests: the blob's first, then the tar's */
	char other[OCI_DIGEST_LEN + 1];
	digest_of("x", 1, other);
	assert_int_equal(stream(gz, glen, true, other, td, 64, "/kubelet", 1u << 20, &g, &size, &mode, &which),
			 -EBADMSG);
	assert_string_equal(which, "digest");
	assert_int_equal(stream(gz, glen, true, gd, other, 64, "/kubelet", 1u << 20, &g, &size, &mode, &which),
			 -EBADMSG);
	assert_string_equal(which, "diff_id");
	/* a blob that is not its digest is named so even when it is also not gzip */
	_cleanup_free_ char *bad = malloc(glen);
	assert_non_null(bad);
	memcpy(bad, gz, glen);
	bad[20] ^= 0x55;
	assert_int_equal(stream(bad, glen, true, gd, td, 64, "/kubelet", 1u << 20, &g, &size, &mode, &which),
			 -EBADMSG);
	assert_string_equal(which, "digest");
	char bd[OCI_DIGEST_LEN + 1];
	digest_of(bad, glen, bd);
	assert_int_equal(stream(bad, glen, true, bd, td, 64, "/kubelet", 1u << 20, &g, &size, &mode, &which),
			 -EINVAL);
	/* truncated gzip, truncated tar */
	digest_of(gz, glen / 2, bd);
	assert_int_equal(stream(gz, glen / 2, true, bd, td, 64, "/kubelet", 1u << 20, &g, &size, &mode, &which),
			 -EINVAL);
	const char *k = memmem(tar, tlen, "echo kubelet", 12);
	size_t cut = (size_t)(k - tar) + 3;
	digest_of(tar, cut, bd);
	assert_int_equal(stream(tar, cut, false, bd, bd, 64, "/kubelet", 1u << 20, &g, &size, &mode, &which),
			 -EINVAL);
	/* more tar than max (a bomb): -EFBIG as it streams */
	struct oci_layer *l = NULL;
	assert_int_equal(oci_layer_new(true, "/kubelet", 1000, got_sink, &g, &l), 0);
	assert_int_equal(oci_layer_feed(l, gz, glen), -EFBIG);
	assert_int_equal(oci_layer_feed(l, gz, 1), -EINVAL); /* takes no more */
	oci_layer_free(l);
	/* a sink error stops it */
	struct got full = { .fail_at = 5 };
	assert_int_equal(stream(tar, tlen, false, td, td, 64, "/kubelet", 1u << 20, &full, &size, &mode, &which),
			 -ENOSPC);
	assert_int_equal(oci_layer_new(false, "/", 1000, got_sink, &g, &l), -EINVAL);
}

static void platform(void **state)
{
	(void)state;
	char got[64] = "";
	static const char amd[] = "{\"os\":\"linux\",\"architecture\":\"amd64\",\"rootfs\":{}}";
	static const char x86[] = "{\"os\":\"Linux\",\"architecture\":\"x86_64\"}";
	static const char s390[] = "{\"os\":\"linux\",\"architecture\":\"s390x\"}";
	static const char win[] = "{\"os\":\"windows\",\"architecture\":\"amd64\"}";
	static const char none[] = "{\"rootfs\":{}}";
	static const char arm[] = "{\"os\":\"linux\",\"architecture\":\"aarch64\"}";
	assert_int_equal(oci_config_platform(amd, strlen(amd), "amd64", got, sizeof(got)), 0);
	assert_int_equal(oci_config_platform(x86, strlen(x86), "amd64", got, sizeof(got)), 0);
	assert_int_equal(oci_config_platform(arm, strlen(arm), "arm64", got, sizeof(got)), 0);
	assert_int_equal(oci_config_platform(s390, strlen(s390), "amd64", got, sizeof(got)), -EXDEV);
	assert_string_equal(got, "linux/s390x");
	assert_int_equal(oci_config_platform(win, strlen(win), "amd64", got, sizeof(got)), -EXDEV);
	assert_string_equal(got, "windows/amd64");
	assert_int_equal(oci_config_platform(none, strlen(none), "amd64", got, sizeof(got)), -EXDEV);
	assert_string_equal(got, "(no os)/(no architecture)");
	assert_int_equal(oci_config_platform("[]", 2, "amd64", got, sizeof(got)), -EINVAL);
	size_t clen;
	_cleanup_free_ char *config = fixture("config.json", &clen);
	assert_int_equal(oci_config_platform(config, clen, "amd64", got, sizeof(got)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tar_lookup),
		cmocka_unit_test(tar_malformed),
		cmocka_unit_test(gunzip_and_digests),
		cmocka_unit_test(manifests),
		cmocka_unit_test(layer_stream),
		cmocka_unit_test(platform),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
