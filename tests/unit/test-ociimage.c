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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tar_lookup),
		cmocka_unit_test(tar_malformed),
		cmocka_unit_test(gunzip_and_digests),
		cmocka_unit_test(manifests),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
