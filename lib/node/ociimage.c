/* OCI image content parsers; see ociimage.h.
 * Formats: github.com/opencontainers/image-spec (image-index.md, manifest.md,
 * config.md, layer.md: whiteouts), the Docker v2 schema 2 media types, and
 * POSIX.1-2001 pax / ustar (Go's archive/tar writes them, GNU 'L' too). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <zlib.h>

#include "cleanup.h"
#include "jsonx.h"
#include "ociimage.h"

bool oci_digest_is_valid(const char *d)
{
	if (!d || strncmp(d, "sha256:", 7) != 0 || strlen(d) != OCI_DIGEST_LEN)
		return false;
	for (size_t i = 7; i < OCI_DIGEST_LEN; i++)
		if (!((d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f')))
			return false;
	return true;
}

bool oci_digest_matches(const char *digest, const void *data, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned md_len = 0;
	if (!oci_digest_is_valid(digest) || !EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL) || md_len != 32)
		return false;
	for (unsigned i = 0; i < 32; i++)
		if (digest[7 + 2 * i] != hex[md[i] >> 4] || digest[7 + 2 * i + 1] != hex[md[i] & 15])
			return false;
	return true;
}

static const char *str_member(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *const index_types[] = { "application/vnd.oci.image.index.v1+json",
					   "application/vnd.docker.distribution.manifest.list.v2+json", NULL };
static const char *const manifest_types[] = { "application/vnd.oci.image.manifest.v1+json",
					      "application/vnd.docker.distribution.manifest.v2+json", NULL };
static const char *const tar_types[] = { "application/vnd.oci.image.layer.v1.tar",
					 "application/vnd.docker.image.rootfs.diff.tar", NULL };
static const char *const gzip_types[] = { "application/vnd.oci.image.layer.v1.tar+gzip",
					  "application/vnd.docker.image.rootfs.diff.tar.gzip", NULL };

static bool in(const char *s, const char *const *list)
{
	for (; s && *list; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

void oci_manifest_done(struct oci_manifest *m)
{
	free(m->layers);
	free(m->layer_gzip);
	memset(m, 0, sizeof(*m));
}

static int parse_index(const cJSON *root, const char *arch, char next[static OCI_DIGEST_LEN + 1])
{
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(root, "manifests"), *m;
	if (!cJSON_IsArray(ms))
		return -EINVAL;
	cJSON_ArrayForEach(m, ms)
	{
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "platform");
		const char *d = str_member(m, "digest"), *os = str_member(p, "os"), *a = str_member(p, "architecture");
		if (!os || !a || strcmp(os, "linux") != 0 || strcmp(a, arch) != 0)
			continue;
		if (!oci_digest_is_valid(d))
			return -EINVAL;
		memcpy(next, d, OCI_DIGEST_LEN + 1);
		return 1;
	}
	return -ENOENT;
}

int oci_parse_top(const char *json, size_t len, const char *arch, char next[static OCI_DIGEST_LEN + 1],
		  struct oci_manifest *ret)
{
	if (len > OCI_JSON_MAX)
		return -EFBIG;
	_cleanup_(cJSON_Deletep) cJSON *root = jsonx_parse(json, len);
	if (!cJSON_IsObject(root))
		return -EINVAL;
	const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "schemaVersion");
	if (!cJSON_IsNumber(sv) || sv->valuedouble != 2)
		return -EINVAL;
	const char *mt = str_member(root, "mediaType");
	const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
	if (in(mt, index_types) || (!mt && cJSON_GetObjectItemCaseSensitive(root, "manifests") && !layers))
		return parse_index(root, arch, next);
	if (mt && !in(mt, manifest_types))
		return -EINVAL;
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(root, "config"), *l;
	const char *cd = str_member(config, "digest");
	int n = cJSON_GetArraySize(layers);
	if (!oci_digest_is_valid(cd) || !cJSON_IsArray(layers) || n < 1 || n > OCI_LAYERS_MAX)
		return -EINVAL;
	struct oci_manifest m = { 0 };
	m.layers = calloc((size_t)n, sizeof(*m.layers));
	m.layer_gzip = calloc((size_t)n, sizeof(*m.layer_gzip));
	if (!m.layers || !m.layer_gzip) {
		oci_manifest_done(&m);
		return -ENOMEM;
	}
	memcpy(m.config, cd, OCI_DIGEST_LEN + 1);
	cJSON_ArrayForEach(l, layers)
	{
		const char *d = str_member(l, "digest"), *t = str_member(l, "mediaType");
		if (!oci_digest_is_valid(d) || !(in(t, tar_types) || in(t, gzip_types))) {
			oci_manifest_done(&m);
			return -EINVAL;
		}
		memcpy(m.layers[m.n_layers], d, OCI_DIGEST_LEN + 1);
		m.layer_gzip[m.n_layers++] = in(t, gzip_types);
	}
	*ret = m;
	return 0;
}

int oci_parse_config(const char *json, size_t len, size_t n, char (*ret)[OCI_DIGEST_LEN + 1])
{
	if (len > OCI_JSON_MAX)
		return -EFBIG;
	_cleanup_(cJSON_Deletep) cJSON *root = jsonx_parse(json, len);
	const cJSON *rootfs = cJSON_GetObjectItemCaseSensitive(root, "rootfs");
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(rootfs, "diff_ids"), *d;
	const char *type = str_member(rootfs, "type");
	if (!cJSON_IsObject(root) || !type || strcmp(type, "layers") != 0 || !cJSON_IsArray(ids) ||
	    (size_t)cJSON_GetArraySize(ids) != n)
		return -EINVAL;
	size_t i = 0;
	cJSON_ArrayForEach(d, ids)
	{
		if (!cJSON_IsString(d) || !oci_digest_is_valid(d->valuestring))
			return -EINVAL;
		memcpy(ret[i++], d->valuestring, OCI_DIGEST_LEN + 1);
	}
	return 0;
}

int oci_gunzip(const unsigned char *in_buf, size_t len, size_t max, unsigned char **ret, size_t *ret_len)
{
	z_stream z = { 0 };
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return -ENOMEM;
	size_t cap = max < (1u << 20) ? max : (1u << 20), out = 0;
	_cleanup_free_ unsigned char *buf = malloc(cap ? cap : 1);
	int r = 0;
	if (!buf) {
		inflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (unsigned char *)(uintptr_t)in_buf;
	size_t left = len;
	for (;;) {
		if (out == cap) {
			if (cap >= max) {
				r = -EFBIG;
				break;
			}
			size_t ncap = cap * 2 > max ? max : cap * 2;
			unsigned char *nb = realloc(buf, ncap);
			if (!nb) {
				r = -ENOMEM;
				break;
			}
			buf = nb;
			cap = ncap;
		}
		uInt in_chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
		z.avail_in = in_chunk;
		z.next_out = buf + out;
		z.avail_out = (uInt)(cap - out > (1u << 30) ? (1u << 30) : cap - out);
		uInt avail_out = z.avail_out;
		int zr = inflate(&z, Z_NO_FLUSH);
		left -= in_chunk - z.avail_in;
		out += avail_out - z.avail_out;
		if (zr == Z_STREAM_END) {
			if (left == 0)
				break;
			/* another gzip member follows (pigz, concatenated) */
			if (inflateReset(&z) != Z_OK) {
				r = -EINVAL;
				break;
			}
			continue;
		}
		if (zr == Z_BUF_ERROR && left == 0) {
			r = -EINVAL; /* truncated */
			break;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			r = zr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
			break;
		}
	}
	inflateEnd(&z);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(buf);
	*ret_len = out;
	return 0;
}

/* ---- tar ------------------------------------------------------------------ */

static bool octal(const unsigned char *f, size_t n, uint64_t *ret)
{
	uint64_t v = 0;
	size_t i = 0;
	while (i < n && f[i] == ' ')
		i++;
	if (i < n && (f[i] & 0x80))
		return false; /* base-256: sizes above 8 GiB, not for us */
	size_t digits = 0;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
		if (v > (UINT64_MAX >> 3))
			return false;
		v = v * 8 + (uint64_t)(f[i] - '0');
	}
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return false;
	*ret = v;
	return true;
}

/* "./usr/bin/x", "usr/bin/x/", "/usr/bin/x" -> "usr/bin/x" (into out). */
static bool normalise(const char *in_name, size_t n, char *out, size_t size)
{
	while (n >= 2 && in_name[0] == '.' && in_name[1] == '/') {
		in_name += 2;
		n -= 2;
	}
	while (n > 0 && in_name[0] == '/') {
		in_name++;
		n--;
	}
	while (n > 0 && in_name[n - 1] == '/')
		n--;
	if (n >= size || memchr(in_name, '\0', n))
		return false;
	memcpy(out, in_name, n);
	out[n] = '\0';
	return true;
}

/* The entry's name from its tar header h (ustar: prefix, 155 bytes at 345,
 * "/" and name, 100 bytes at 0), normalised into out. */
static bool header_name(const unsigned char *h, char *out, size_t size)
{
	char full[260];
	size_t pl = strnlen((const char *)h + 345, 155), nl = strnlen((const char *)h, 100);
	size_t fl = 0;
	if (memcmp(h + 257, "ustar", 5) == 0 && pl) {
		memcpy(full, h + 345, pl);
		full[pl] = '/';
		fl = pl + 1;
	}
	memcpy(full + fl, h, nl);
	fl += nl;
	return normalise(full, fl, out, size);
}

/* "a/b/.wh.c" hides "a/b/c"; "a/.wh..wh..opq" hides everything below "a". */
static bool whiteout_hides(const char *name, const char *want)
{
	const char *slash = strrchr(name, '/');
	const char *base = slash ? slash + 1 : name;
	size_t dir_len = slash ? (size_t)(slash - name) : 0;
	if (strncmp(base, ".wh.", 4) != 0)
		return false;
	if (dir_len && (strncmp(want, name, dir_len) != 0 || want[dir_len] != '/'))
		return false;
	const char *rest = want + (dir_len ? dir_len + 1 : 0);
	if (strcmp(base, ".wh..wh..opq") == 0)
		return true; /* want is below this directory */
	size_t bl = strlen(base + 4);
	return strncmp(rest, base + 4, bl) == 0 && (rest[bl] == '\0' || rest[bl] == '/');
}

/* The value of a "path" or "size" record in a pax header (len bytes). */
static void pax_records(const unsigned char *p, size_t len, char *path, size_t path_size, bool *has_path,
			uint64_t *size, bool *has_size, bool *bad)
{
	size_t i = 0;
	while (i < len) {
		size_t rl = 0, j = i;
		while (j < len && p[j] >= '0' && p[j] <= '9' && rl < len)
			rl = rl * 10 + (size_t)(p[j++] - '0');
		if (j >= len || p[j] != ' ' || rl == 0 || rl > len - i || p[i + rl - 1] != '\n') {
			*bad = true;
			return;
		}
		const char *kv = (const char *)p + j + 1;
		size_t kvl = i + rl - 1 - (j + 1);
		if (kvl > 5 && memcmp(kv, "path=", 5) == 0) {
			*has_path = normalise(kv + 5, kvl - 5, path, path_size);
			if (!*has_path)
				*bad = true;
		} else if (kvl > 5 && memcmp(kv, "size=", 5) == 0) {
			uint64_t v = 0;
			for (size_t k = 5; k < kvl; k++) {
				if (kv[k] < '0' || kv[k] > '9' || v > UINT64_MAX / 10) {
					*bad = true;
					return;
				}
				v = v * 10 + (uint64_t)(kv[k] - '0');
			}
			*size = v;
			*has_size = true;
		}
		i += rl;
	}
}

int oci_tar_find(const unsigned char *tar, size_t len, const char *path, const unsigned char **ret_data,
		 size_t *ret_size, mode_t *ret_mode)
{
	char want[4096], name[4096], next_name[4096];
	if (!normalise(path, strlen(path), want, sizeof(want)) || !want[0])
		return -EINVAL;
	bool have_next_name = false, have_next_size = false;
	uint64_t next_size = 0;
	int found = OCI_ENTRY_ABSENT;
	const unsigned char *data = NULL;
	size_t data_size = 0;
	mode_t mode = 0;
	size_t off = 0;
	while (off + 512 <= len) {
		const unsigned char *h = tar + off;
		bool zero = true;
		for (size_t i = 0; i < 512 && zero; i++)
			zero = h[i] == 0;
		if (zero)
			break; /* end of archive */
		uint64_t size, m, sum;
		if (!octal(h + 124, 12, &size) || !octal(h + 100, 8, &m) || !octal(h + 148, 8, &sum))
			return -EINVAL;
		uint64_t s = 0;
		for (size_t i = 0; i < 512; i++)
			s += (i >= 148 && i < 156) ? ' ' : h[i];
		if (s != sum)
			return -EINVAL;
		char type = (char)h[156];
		if (have_next_size && type != 'x' && type != 'L')
			size = next_size;
		off += 512;
		if (size > len - off)
			return -EINVAL;
		const unsigned char *body = tar + off;
		size_t padded = (size_t)((size + 511) & ~(uint64_t)511);
		off = padded > len - off ? len : off + padded;
		if (type == 'x' || type == 'L') {
			bool bad = false;
			if (type == 'x')
				pax_records(body, (size_t)size, next_name, sizeof(next_name), &have_next_name, &next_size,
					    &have_next_size, &bad);
			else {
				size_t n = strnlen((const char *)body, (size_t)size);
				have_next_name = normalise((const char *)body, n, next_name, sizeof(next_name));
				bad = !have_next_name;
			}
			if (bad)
				return -EINVAL;
			continue;
		}
		if (type == 'g')
			continue;
		if (have_next_name)
			memcpy(name, next_name, sizeof(name));
		else if (!header_name(h, name, sizeof(name)))
			return -EINVAL;
		have_next_name = have_next_size = false;
		if (whiteout_hides(name, want)) {
			/* hides lower layers, not an entry of this one */
			if (found == OCI_ENTRY_ABSENT)
				found = OCI_ENTRY_WHITEOUT;
			continue;
		}
		if (strcmp(name, want) != 0) {
			/* a non-directory on a parent hides the path */
			size_t nl = strlen(name);
			if (type != '5' && strncmp(want, name, nl) == 0 && want[nl] == '/')
				found = OCI_ENTRY_OTHER;
			continue;
		}
		if (type == '0' || type == '\0' || type == '7') {
			found = OCI_ENTRY_FILE;
			data = body;
			data_size = (size_t)size;
			mode = (mode_t)(m & 07777);
		} else
			found = OCI_ENTRY_OTHER;
	}
	if (found == OCI_ENTRY_FILE) {
		*ret_data = data;
		*ret_size = data_size;
		*ret_mode = mode;
	}
	return found;
}

/* ---- platform ------------------------------------------------------------- */

static void lower(const char *in_s, char *out, size_t size)
{
	size_t i = 0;
	for (; in_s && in_s[i] && i + 1 < size; i++) {
		unsigned char ch = (unsigned char)in_s[i];
		out[i] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : (ch < 0x20 || ch >= 0x7f ? '?' : (char)ch);
	}
	out[i] = '\0';
}

int oci_config_platform(const char *json, size_t len, const char *arch, char *got, size_t got_size)
{
	if (len > OCI_JSON_MAX)
		return -EFBIG;
	_cleanup_(cJSON_Deletep) cJSON *root = jsonx_parse(json, len);
	if (!cJSON_IsObject(root))
		return -EINVAL;
	char os[64], a[64];
	lower(str_member(root, "os"), os, sizeof(os));
	lower(str_member(root, "architecture"), a, sizeof(a));
	/* containerd's platforms.normalizeArch() for the spellings seen */
	if (strcmp(a, "x86_64") == 0 || strcmp(a, "x86-64") == 0)
		snprintf(a, sizeof(a), "amd64");
	else if (strcmp(a, "aarch64") == 0)
		snprintf(a, sizeof(a), "arm64");
	if (strcmp(os, "linux") == 0 && strcmp(a, arch) == 0)
		return 0;
	snprintf(got, got_size, "%s/%s", os[0] ? os : "(no os)", a[0] ? a : "(no architecture)");
	return -EXDEV;
}

/* ---- a layer as a stream ---------------------------------------------------- */

enum tar_state { T_HDR, T_META, T_BODY, T_PAD, T_END };

struct oci_layer {
	bool gzip, member_done, failed;
	int broken;                 /* corrupt gzip or tar: the rest is only hashed */
	z_stream z;
	bool z_init;
	EVP_MD_CTX *blob_md, *tar_md;
	uint64_t total, max;
	oci_sink_fn sink;
	void *userdata;
	/* the tar, as oci_tar_find() reads it */
	char want[4096], name[4096], next_name[4096];
	enum tar_state state;
	unsigned char hdr[512];
	size_t hdr_n;
	unsigned char *meta;
	size_t meta_n, meta_len;
	char meta_type;
	uint64_t entry_size, body_left, pad_left;
	bool to_sink;
	bool have_next_name, have_next_size;
	uint64_t next_size;
	int found;
	uint64_t file_size;
	mode_t mode;
	unsigned char out[64 * 1024];
};

void oci_layer_free(struct oci_layer *l)
{
	if (!l)
		return;
	if (l->z_init)
		inflateEnd(&l->z);
	EVP_MD_CTX_free(l->blob_md);
	EVP_MD_CTX_free(l->tar_md);
	free(l->meta);
	free(l);
}

int oci_layer_new(bool gzip, const char *path, uint64_t max, oci_sink_fn sink, void *userdata, struct oci_layer **ret)
{
	struct oci_layer *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	if (!normalise(path, strlen(path), l->want, sizeof(l->want)) || !l->want[0]) {
		free(l);
		return -EINVAL;
	}
	l->gzip = gzip;
	l->max = max;
	l->sink = sink;
	l->userdata = userdata;
	l->found = OCI_ENTRY_ABSENT;
	l->blob_md = EVP_MD_CTX_new();
	l->tar_md = EVP_MD_CTX_new();
	if (!l->blob_md || !l->tar_md || !EVP_DigestInit_ex(l->blob_md, EVP_sha256(), NULL) ||
	    !EVP_DigestInit_ex(l->tar_md, EVP_sha256(), NULL)) {
		oci_layer_free(l);
		return -ENOMEM;
	}
	if (gzip) {
		if (inflateInit2(&l->z, 16 + MAX_WBITS) != Z_OK) {
			oci_layer_free(l);
			return -ENOMEM;
		}
		l->z_init = true;
	}
	*ret = l;
	return 0;
}

static void to_pad(struct oci_layer *l, uint64_t size)
{
	l->pad_left = ((size + 511) & ~(uint64_t)511) - size;
	l->state = l->pad_left ? T_PAD : T_HDR;
}

/* The meta record (pax 'x' or GNU 'L') just read completely. */
static int meta_done(struct oci_layer *l)
{
	bool bad = false;
	if (l->meta_type == 'x')
		pax_records(l->meta, l->meta_len, l->next_name, sizeof(l->next_name), &l->have_next_name,
			    &l->next_size, &l->have_next_size, &bad);
	else {
		size_t n = strnlen((const char *)l->meta, l->meta_len);
		l->have_next_name = normalise((const char *)l->meta, n, l->next_name, sizeof(l->next_name));
		bad = !l->have_next_name;
	}
	free(l->meta);
	l->meta = NULL;
	if (bad)
		return -EINVAL;
	to_pad(l, l->meta_len);
	return 0;
}

/* One complete header, as one turn of oci_tar_find()'s loop. */
static int header(struct oci_layer *l)
{
	const unsigned char *h = l->hdr;
	bool zero = true;
	for (size_t i = 0; i < 512 && zero; i++)
		zero = h[i] == 0;
	if (zero) {
		l->state = T_END;
		return 0;
	}
	uint64_t size, m, sum;
	if (!octal(h + 124, 12, &size) || !octal(h + 100, 8, &m) || !octal(h + 148, 8, &sum))
		return -EINVAL;
	uint64_t s = 0;
	for (size_t i = 0; i < 512; i++)
		s += (i >= 148 && i < 156) ? ' ' : h[i];
	if (s != sum)
		return -EINVAL;
	char type = (char)h[156];
	if (l->have_next_size && type != 'x' && type != 'L')
		size = l->next_size;
	if (type == 'x' || type == 'L') {
		if (size > OCI_TAR_META_MAX)
			return -EINVAL;
		l->meta_type = type;
		l->meta_len = (size_t)size;
		l->meta_n = 0;
		l->meta = malloc(l->meta_len ? l->meta_len : 1);
		if (!l->meta)
			return -ENOMEM;
		l->state = T_META;
		return l->meta_len ? 0 : meta_done(l);
	}
	l->entry_size = l->body_left = size;
	l->to_sink = false;
	l->state = T_BODY;
	if (type == 'g')
		return 0;
	if (l->have_next_name)
		memcpy(l->name, l->next_name, sizeof(l->name));
	else if (!header_name(h, l->name, sizeof(l->name)))
		return -EINVAL;
	l->have_next_name = l->have_next_size = false;
	if (whiteout_hides(l->name, l->want)) {
		if (l->found == OCI_ENTRY_ABSENT)
			l->found = OCI_ENTRY_WHITEOUT;
		return 0;
	}
	if (strcmp(l->name, l->want) != 0) {
		size_t nl = strlen(l->name);
		if (type != '5' && strncmp(l->want, l->name, nl) == 0 && l->want[nl] == '/')
			l->found = OCI_ENTRY_OTHER;
		return 0;
	}
	if (type == '0' || type == '\0' || type == '7') {
		l->found = OCI_ENTRY_FILE;
		l->file_size = size;
		l->mode = (mode_t)(m & 07777);
		l->to_sink = true;
		return l->sink(l->userdata, NULL, 0, true);
	}
	l->found = OCI_ENTRY_OTHER;
	return 0;
}

static int tar_feed(struct oci_layer *l, const unsigned char *p, size_t n)
{
	while (n > 0 && l->state != T_END) {
		size_t k;
		int r = 0;
		switch (l->state) {
		case T_HDR:
			k = n < 512 - l->hdr_n ? n : 512 - l->hdr_n;
			memcpy(l->hdr + l->hdr_n, p, k);
			l->hdr_n += k;
			if (l->hdr_n == 512) {
				l->hdr_n = 0;
				r = header(l);
			}
			break;
		case T_META:
			k = n < l->meta_len - l->meta_n ? n : l->meta_len - l->meta_n;
			memcpy(l->meta + l->meta_n, p, k);
			l->meta_n += k;
			if (l->meta_n == l->meta_len)
				r = meta_done(l);
			break;
		case T_BODY:
			k = (uint64_t)n < l->body_left ? n : (size_t)l->body_left;
			if (l->to_sink && k)
				r = l->sink(l->userdata, p, k, false);
			l->body_left -= k;
			if (l->body_left == 0 && r >= 0)
				to_pad(l, l->entry_size);
			break;
		case T_PAD:
			k = (uint64_t)n < l->pad_left ? n : (size_t)l->pad_left;
			l->pad_left -= k;
			if (l->pad_left == 0)
				l->state = T_HDR;
			break;
		default:
			return 0;
		}
		if (r < 0)
			return r;
		p += k;
		n -= k;
	}
	return 0;
}

/* n bytes of tar: counted against max, hashed for the diff_id, scanned. */
static int emit(struct oci_layer *l, const unsigned char *p, size_t n)
{
	if (n > l->max - l->total)
		return -EFBIG;
	l->total += n;
	if (!EVP_DigestUpdate(l->tar_md, p, n))
		return -ENOMEM;
	return tar_feed(l, p, n);
}

int oci_layer_feed(struct oci_layer *l, const void *data, size_t len)
{
	if (l->failed)
		return -EINVAL;
	int r = 0;
	if (!EVP_DigestUpdate(l->blob_md, data, len))
		r = -ENOMEM;
	else if (l->broken)
		return 0; /* only hashed: a blob that is not its digest says so first */
	else if (!l->gzip)
		r = emit(l, data, len);
	else {
		l->z.next_in = (unsigned char *)(uintptr_t)data;
		size_t left = len;
		do {
			if (l->member_done) {
				if (left == 0)
					break;
				/* another gzip member follows (pigz, concatenated) */
				if (inflateReset(&l->z) != Z_OK) {
					r = -EINVAL;
					break;
				}
				l->member_done = false;
			}
			uInt in_chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
			l->z.avail_in = in_chunk;
			l->z.next_out = l->out;
			l->z.avail_out = sizeof(l->out);
			int zr = inflate(&l->z, Z_NO_FLUSH);
			left -= in_chunk - l->z.avail_in;
			size_t produced = sizeof(l->out) - l->z.avail_out;
			if (produced && (r = emit(l, l->out, produced)) < 0)
				break;
			if (zr == Z_STREAM_END) {
				l->member_done = true;
				continue;
			}
			if (zr == Z_BUF_ERROR && l->z.avail_in == 0)
				break; /* all taken, more to come */
			if (zr != Z_OK) {
				r = zr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
				break;
			}
		} while (left > 0 || l->z.avail_out == 0);
	}
	if (r == -EINVAL) {
		l->broken = r;
		return 0;
	}
	if (r < 0)
		l->failed = true;
	return r;
}

static bool md_matches(EVP_MD_CTX *md, const char *digest)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char v[EVP_MAX_MD_SIZE];
	unsigned v_len = 0;
	if (!oci_digest_is_valid(digest) || !EVP_DigestFinal_ex(md, v, &v_len) || v_len != 32)
		return false;
	for (unsigned i = 0; i < 32; i++)
		if (digest[7 + 2 * i] != hex[v[i] >> 4] || digest[7 + 2 * i + 1] != hex[v[i] & 15])
			return false;
	return true;
}

int oci_layer_finish(struct oci_layer *l, const char *digest, const char *diff_id, uint64_t *ret_size,
		     mode_t *ret_mode, const char **ret_which)
{
	if (l->failed)
		return -EINVAL;
	l->failed = true; /* once */
	*ret_which = "digest";
	if (!md_matches(l->blob_md, digest))
		return -EBADMSG;
	if (l->broken)
		return l->broken;
	*ret_which = NULL;
	if (l->gzip && !l->member_done)
		return -EINVAL; /* truncated gzip */
	if (l->state == T_META || (l->state == T_BODY && l->body_left > 0))
		return -EINVAL; /* truncated tar */
	*ret_which = "diff_id";
	if (!md_matches(l->tar_md, diff_id))
		return -EBADMSG;
	*ret_which = NULL;
	if (l->found == OCI_ENTRY_FILE) {
		*ret_size = l->file_size;
		*ret_mode = l->mode;
	}
	return l->found;
}
