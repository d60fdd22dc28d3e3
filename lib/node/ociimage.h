/* OCI / Docker image content as containerd stores it: pure parsers for what
 * cloud-config-exec reads with `ctr content get` to copy one file out of an
 * image (content.imageRef) without mounting anything.
 *
 * Everything here is outside input (a registry's bytes): lengths are
 * capped, digests are "sha256:" + 64 lowercase hex, and the caller checks
 * every blob against its digest (oci_digest_matches) before parsing it.
 * No I/O, no logging. */
#ifndef NA_OCIIMAGE_H
#define NA_OCIIMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define OCI_JSON_MAX (4u << 20)     /* bytes of an index, manifest or config */
#define OCI_LAYERS_MAX 128
#define OCI_DIGEST_LEN 71           /* "sha256:" + 64 hex */

struct oci_manifest {
	char config[OCI_DIGEST_LEN + 1];
	size_t n_layers;
	char (*layers)[OCI_DIGEST_LEN + 1]; /* bottom first */
	bool *layer_gzip;                    /* media type ends in gzip */
};

/* True for "sha256:" followed by 64 lowercase hex digits. */
bool oci_digest_is_valid(const char *d);

/* True when the SHA-256 of data[0..len) is digest. */
bool oci_digest_matches(const char *digest, const void *data, size_t len);

/* An image index (OCI index, Docker manifest list) or a manifest. For an
 * index: returns 1 and the digest of the manifest for linux/arch in
 * next (arch in GOARCH spelling, "amd64"); -ENOENT when it has none. For a
 * manifest (schemaVersion 2, config and layers with sha256 digests and
 * tar, tar+gzip media types): returns 0 and *ret (oci_manifest_done()).
 * -EINVAL for anything else (foreign layers, zstd, encrypted, schema 1). */
int oci_parse_top(const char *json, size_t len, const char *arch, char next[static OCI_DIGEST_LEN + 1],
		  struct oci_manifest *ret);
void oci_manifest_done(struct oci_manifest *m);

/* rootfs.diff_ids of an image config: exactly n (the manifest's layer
 * count) valid digests, copied to ret[0..n). -EINVAL otherwise. */
int oci_parse_config(const char *json, size_t len, size_t n, char (*ret)[OCI_DIGEST_LEN + 1]);

/* The platform an image config names ("os", "architecture"), normalised
 * as containerd's platforms.Normalize() does (lowercase; "x86_64" and
 * "x86-64" are amd64, "aarch64" arm64). 0 when it is linux/arch (GOARCH
 * spelling); -EXDEV when it is another one, "os/architecture" then in got
 * (printable, cut to got_size); -EINVAL when the config is not an object. */
int oci_config_platform(const char *json, size_t len, const char *arch, char *got, size_t got_size);

/* Inflates a gzip stream (one or more members) of len bytes to at most max
 * bytes: 0 and *ret (free()), -EFBIG above max, -EINVAL corrupt, -ENOMEM. */
int oci_gunzip(const unsigned char *in, size_t len, size_t max, unsigned char **ret, size_t *ret_len);

enum oci_entry {
	OCI_ENTRY_ABSENT,           /* not in this layer */
	OCI_ENTRY_FILE,             /* a regular file: *ret_data, *ret_size, *ret_mode */
	OCI_ENTRY_OTHER,            /* a directory, symlink, hard link, device or fifo */
	OCI_ENTRY_WHITEOUT,         /* deleted by this layer (.wh.NAME or an opaque parent) */
};

/* Looks path (absolute, normalised) up in a tar stream (ustar, GNU long
 * names, PAX path/size records). The last entry for a path wins, as when
 * a layer is unpacked. Returns the enum oci_entry value (>= 0) or -EINVAL
 * for a malformed archive; *ret_data points into tar. */
int oci_tar_find(const unsigned char *tar, size_t len, const char *path, const unsigned char **ret_data,
		 size_t *ret_size, mode_t *ret_mode);

/* One layer read as a stream, in bounded memory whatever its size (issue
 * 21: layers held in memory cost 2 GB for a 1 GiB file): the blob's bytes
 * are fed in pieces as they come (oci_layer_feed()), inflated when gzip,
 * and the tar looked through for path as oci_tar_find() does, with the
 * same answers. The bytes of each entry that is path (a later one
 * replaces an earlier: sink is called with start set, then with its
 * bytes) go to sink. Nothing of it may be trusted before
 * oci_layer_finish() checked both digests. Pure (no I/O but through sink).
 * Differences from oci_tar_find(): a pax or GNU long-name record above
 * OCI_TAR_META_MAX bytes is refused. */
#define OCI_TAR_META_MAX (1u << 20)

typedef int (*oci_sink_fn)(void *userdata, const void *data, size_t len, bool start);
struct oci_layer;

/* max: bytes of tar (after gunzip) at most, -EFBIG beyond. Returns 0 and
 * *ret (oci_layer_free()), -EINVAL for a path that is not one, -ENOMEM. */
int oci_layer_new(bool gzip, const char *path, uint64_t max, oci_sink_fn sink, void *userdata, struct oci_layer **ret);
/* The next len bytes of the blob. -EFBIG above max, or sink's error;
 * after an error the layer takes no more. A corrupt gzip or tar is told
 * by oci_layer_finish() (the rest is still hashed, so that a blob that is
 * not its digest is named as such). */
int oci_layer_feed(struct oci_layer *l, const void *data, size_t len);
/* The end of the blob: checks the blob against digest (-EBADMSG,
 * *ret_which "digest"), then a corrupt or truncated gzip or tar (-EINVAL),
 * then the tar against diff_id (-EBADMSG, *ret_which "diff_id"). Returns the enum oci_entry value;
 * for OCI_ENTRY_FILE the last bytes given to sink are the file's, of
 * *ret_size bytes and mode *ret_mode. */
int oci_layer_finish(struct oci_layer *l, const char *digest, const char *diff_id, uint64_t *ret_size,
		     mode_t *ret_mode, const char **ret_which);
void oci_layer_free(struct oci_layer *l);

#endif
