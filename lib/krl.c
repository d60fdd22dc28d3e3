/* OpenSSH KRLs; see krl.h. Field layout after PROTOCOL.krl section 1
 * ("Overall format") and section 4 ("SHA1/SHA256 fingerprint sections"). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "cleanup.h"
#include "krl.h"

/* PROTOCOL.krl: KRL_MAGIC 0x5353484b524c0a00 ("SSHKRL\n\0"), format 1. */
static const uint8_t krl_magic[8] = { 'S', 'S', 'H', 'K', 'R', 'L', '\n', 0 };
#define KRL_FORMAT_VERSION 1
#define KRL_SECTION_FINGERPRINT_SHA256 5

static int hash_cmp(const void *a, const void *b)
{
	return memcmp(a, b, KRL_HASH_LEN);
}

size_t krl_hash_sort_unique(struct krl_hash *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), hash_cmp);
	size_t k = 1;
	for (size_t i = 1; i < n; i++)
		if (memcmp(&v[i], &v[k - 1], KRL_HASH_LEN) != 0)
			v[k++] = v[i];
	return k;
}

int krl_contains(const struct krl *k, const struct krl_hash *hash)
{
	return k && k->n && bsearch(hash, k->hashes, k->n, sizeof(*k->hashes), hash_cmp) != NULL;
}

static bool comment_valid(const char *s, size_t len)
{
	if (len > KRL_COMMENT_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

int krl_write(const struct krl_hash *hashes, size_t n, uint64_t version, uint64_t generated, const char *comment,
	      void **ret, size_t *ret_len)
{
	const char *c = comment ? comment : "";
	size_t clen = strnlen(c, KRL_COMMENT_MAX + 1);
	if (!comment_valid(c, clen))
		return -EINVAL;
	if (n > 0 && !hashes)
		return -EINVAL;
	_cleanup_free_ struct krl_hash *v = NULL;
	if (n > 0) {
		v = malloc(n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memcpy(v, hashes, n * sizeof(*v));
		n = krl_hash_sort_unique(v, n);
	}
	if (n > KRL_ENTRIES_MAX)
		return -E2BIG;

	size_t section = n * (4 + KRL_HASH_LEN);
	size_t total = sizeof(krl_magic) + 4 + 8 + 8 + 8 + 4 + 4 + clen + (n ? 1 + 4 + section : 0);
	uint8_t *buf = malloc(total);
	if (!buf)
		return -ENOMEM;
	uint8_t *p = buf;
	memcpy(p, krl_magic, sizeof(krl_magic));
	p += sizeof(krl_magic);
	p = put_u32(p, KRL_FORMAT_VERSION);
	p = put_u64(p, version);
	p = put_u64(p, generated);
	p = put_u64(p, 0);             /* flags: none defined */
	p = put_u32(p, 0);             /* reserved: empty string */
	p = put_u32(p, (uint32_t)clen);
	memcpy(p, c, clen);
	p += clen;
	if (n) {
		*p++ = KRL_SECTION_FINGERPRINT_SHA256;
		p = put_u32(p, (uint32_t)section);
		for (size_t i = 0; i < n; i++) {
			p = put_u32(p, KRL_HASH_LEN);
			memcpy(p, v[i].h, KRL_HASH_LEN);
			p += KRL_HASH_LEN;
		}
	}
	*ret = buf;
	*ret_len = (size_t)(p - buf);
	return 0;
}

/* A bounded big-endian reader. */
struct rd {
	const uint8_t *p;
	size_t left;
};

static bool get_u32(struct rd *r, uint32_t *v)
{
	if (r->left < 4)
		return false;
	*v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	r->left -= 4;
	return true;
}

static bool get_u64(struct rd *r, uint64_t *v)
{
	uint32_t hi, lo;
	if (!get_u32(r, &hi) || !get_u32(r, &lo))
		return false;
	*v = (uint64_t)hi << 32 | lo;
	return true;
}

/* An SSH "string": u32 length, then that many bytes (pointed at, not copied). */
static bool get_string(struct rd *r, const uint8_t **s, size_t *len)
{
	uint32_t l;
	if (!get_u32(r, &l) || l > r->left)
		return false;
	*s = r->p;
	*len = l;
	r->p += l;
	r->left -= l;
	return true;
}

void krl_done(struct krl *k)
{
	if (!k)
		return;
	free(k->hashes);
	*k = (struct krl){ 0 };
}

int krl_read(const void *data, size_t len, struct krl *ret)
{
	if (len > KRL_SIZE_MAX)
		return -E2BIG;
	if (!data || len < sizeof(krl_magic) || memcmp(data, krl_magic, sizeof(krl_magic)) != 0)
		return -EBADMSG;
	struct rd r = { .p = (const uint8_t *)data + sizeof(krl_magic), .left = len - sizeof(krl_magic) };
	struct krl k = { 0 };
	uint32_t format;
	uint64_t flags;
	const uint8_t *s;
	size_t slen;
	if (!get_u32(&r, &format) || format != KRL_FORMAT_VERSION || !get_u64(&r, &k.version) ||
	    !get_u64(&r, &k.generated) || !get_u64(&r, &flags) || flags != 0 || !get_string(&r, &s, &slen) ||
	    slen != 0 || !get_string(&r, &s, &slen) || !comment_valid((const char *)s, slen))
		return -EBADMSG;
	memcpy(k.comment, s, slen);
	k.comment[slen] = '\0';

	/* At most one section: type 5, then a string of strings of 32 bytes
	 * in strictly increasing order (PROTOCOL.krl allows more sections;
	 * the writer never makes them). */
	size_t cap = 0;
	if (r.left > 0) {
		uint8_t type = *r.p;
		r.p++;
		r.left--;
		struct rd sec;
		if (type != KRL_SECTION_FINGERPRINT_SHA256 || !get_string(&r, &sec.p, &sec.left) || sec.left == 0)
			goto bad;
		while (sec.left > 0) {
			if (!get_string(&sec, &s, &slen) || slen != KRL_HASH_LEN)
				goto bad;
			if (k.n > 0 && memcmp(k.hashes[k.n - 1].h, s, KRL_HASH_LEN) >= 0)
				goto bad;
			if (k.n >= KRL_ENTRIES_MAX) {
				krl_done(&k);
				return -E2BIG;
			}
			if (k.n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				struct krl_hash *nv = realloc(k.hashes, nc * sizeof(*nv));
				if (!nv) {
					krl_done(&k);
					return -ENOMEM;
				}
				k.hashes = nv;
				cap = nc;
			}
			memcpy(k.hashes[k.n++].h, s, KRL_HASH_LEN);
		}
		if (r.left > 0)
			goto bad;
	}
	*ret = k;
	return 0;
bad:
	krl_done(&k);
	return -EBADMSG;
}

int krl_hash_from_fingerprint(const char *fp, struct krl_hash *ret)
{
	/* "SHA256:" + 43 characters: 32 bytes in unpadded base64. */
	if (!fp || strncmp(fp, "SHA256:", 7) != 0 || strnlen(fp + 7, 44) != 43)
		return -EINVAL;
	char padded[45];
	memcpy(padded, fp + 7, 43);
	padded[43] = '=';
	padded[44] = '\0';
	_cleanup_free_ unsigned char *raw = NULL;
	size_t n = 0;
	int r = b64_decode(padded, 44, KRL_HASH_LEN, 0, &raw, &n);
	if (r == -ENOMEM)
		return r;
	if (r < 0 || n != KRL_HASH_LEN)
		return -EINVAL;
	memcpy(ret->h, raw, KRL_HASH_LEN);
	return 0;
}
