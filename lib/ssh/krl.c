/* OpenSSH KRLs; see krl.h. Field layout after PROTOCOL.krl section 1
 * ("Overall format") and section 4 ("SHA1/SHA256 fingerprint sections"). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "cleanup.h"
#include "krl.h"
#include "sshwire.h"

/* PROTOCOL.krl: KRL_MAGIC 0x5353484b524c0a00 ("SSHKRL\n\0"), format 1. */
static const uint8_t krl_magic[8] = { 'S', 'S', 'H', 'K', 'R', 'L', '\n', 0 };
#define KRL_FORMAT_VERSION 1
#define KRL_SECTION_CERTIFICATES 1
#define KRL_SECTION_FINGERPRINT_SHA256 5
#define KRL_SECTION_CERT_SERIAL_LIST 0x20

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

int krl_ca_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	if (alen != blen)
		return alen < blen ? -1 : 1;
	return memcmp(a, b, alen);
}

static int ca_ptr_cmp(const void *a, const void *b)
{
	const struct krl_ca_serials *x = *(const struct krl_ca_serials *const *)a;
	const struct krl_ca_serials *y = *(const struct krl_ca_serials *const *)b;
	return krl_ca_key_cmp(x->ca_key, x->ca_key_len, y->ca_key, y->ca_key_len);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int krl_contains_serial(const struct krl *k, const uint8_t *ca, size_t len, uint64_t serial)
{
	for (size_t i = 0; k && i < k->n_cas; i++)
		if (krl_ca_key_cmp(k->cas[i].ca_key, k->cas[i].ca_key_len, ca, len) == 0)
			return bsearch(&serial, k->cas[i].serials, k->cas[i].n, sizeof(uint64_t), u64_cmp) != NULL;
	return 0;
}

/* The CAs with serials, sorted, each with a sorted unique copy of its
 * serials (freed by free_cas()). */
struct wcas {
	const struct krl_ca_serials **v;
	uint64_t **serials;
	size_t *n;
	size_t count;
};

static void wcas_done(struct wcas *w)
{
	for (size_t i = 0; w->serials && i < w->count; i++)
		free(w->serials[i]);
	free(w->serials);
	free(w->n);
	free(w->v);
}

static int prepare_cas(const struct krl_ca_serials *cas, size_t n_cas, struct wcas *w, size_t *ret_bytes)
{
	size_t k = 0, total = 0, bytes = 0;
	w->v = calloc(n_cas + 1, sizeof(*w->v));
	w->serials = calloc(n_cas + 1, sizeof(*w->serials));
	w->n = calloc(n_cas + 1, sizeof(*w->n));
	if (!w->v || !w->serials || !w->n)
		return -ENOMEM;
	for (size_t i = 0; i < n_cas; i++) {
		if (!cas[i].ca_key || cas[i].ca_key_len == 0 || cas[i].ca_key_len > KRL_CA_KEY_MAX ||
		    (cas[i].n > 0 && !cas[i].serials))
			return -EINVAL;
		if (cas[i].n > 0)
			w->v[k++] = &cas[i];
	}
	if (k > KRL_CAS_MAX)
		return -E2BIG;
	qsort(w->v, k, sizeof(*w->v), ca_ptr_cmp);
	w->count = k;
	for (size_t i = 0; i < k; i++) {
		if (i > 0 && ca_ptr_cmp(&w->v[i - 1], &w->v[i]) == 0)
			return -EINVAL;
		size_t n = w->v[i]->n;
		if (n > KRL_SERIALS_MAX * (size_t)4)
			return -E2BIG;
		uint64_t *v = malloc(n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		w->serials[i] = v;
		memcpy(v, w->v[i]->serials, n * sizeof(*v));
		qsort(v, n, sizeof(*v), u64_cmp);
		size_t m = 0;
		for (size_t j = 0; j < n; j++) {
			if (v[j] == 0)
				return -EINVAL;
			if (m == 0 || v[m - 1] != v[j])
				v[m++] = v[j];
		}
		w->n[i] = m;
		total += m;
		if (total > KRL_SERIALS_MAX)
			return -E2BIG;
		bytes += 1 + 4 + 4 + w->v[i]->ca_key_len + 4 + 1 + 4 + 8 * m;
	}
	*ret_bytes = bytes;
	return 0;
}

int krl_write(const struct krl_hash *hashes, size_t n, uint64_t version, uint64_t generated, const char *comment,
	      void **ret, size_t *ret_len)
{
	return krl_write_full(hashes, n, NULL, 0, version, generated, comment, ret, ret_len);
}

int krl_write_full(const struct krl_hash *hashes, size_t n, const struct krl_ca_serials *cas, size_t n_cas,
		   uint64_t version, uint64_t generated, const char *comment, void **ret, size_t *ret_len)
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
	if (n_cas > 0 && !cas)
		return -EINVAL;
	_cleanup_(wcas_done) struct wcas w = { 0 };
	size_t ca_bytes = 0;
	int r = prepare_cas(cas, n_cas, &w, &ca_bytes);
	if (r < 0)
		return r;

	size_t section = n * (4 + KRL_HASH_LEN);
	size_t total = sizeof(krl_magic) + 4 + 8 + 8 + 8 + 4 + 4 + clen + ca_bytes + (n ? 1 + 4 + section : 0);
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
	/* PROTOCOL.krl: the certificate sections first (as ssh-keygen writes them). */
	for (size_t i = 0; i < w.count; i++) {
		const struct krl_ca_serials *ca = w.v[i];
		*p++ = KRL_SECTION_CERTIFICATES;
		p = put_u32(p, (uint32_t)(4 + ca->ca_key_len + 4 + 1 + 4 + 8 * w.n[i]));
		p = put_u32(p, (uint32_t)ca->ca_key_len);
		memcpy(p, ca->ca_key, ca->ca_key_len);
		p += ca->ca_key_len;
		p = put_u32(p, 0); /* reserved */
		*p++ = KRL_SECTION_CERT_SERIAL_LIST;
		p = put_u32(p, (uint32_t)(8 * w.n[i]));
		for (size_t j = 0; j < w.n[i]; j++)
			p = put_u64(p, w.serials[i][j]);
	}
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

void krl_done(struct krl *k)
{
	if (!k)
		return;
	free(k->hashes);
	for (size_t i = 0; i < k->n_cas; i++) {
		free(k->cas[i].ca_key);
		free(k->cas[i].serials);
	}
	free(k->cas);
	*k = (struct krl){ 0 };
}

/* One CERTIFICATES section's body: CA key, empty reserved, one serial list,
 * strictly increasing, non-zero. Appends to k (CAs strictly increasing).
 * -EBADMSG, -E2BIG, -ENOMEM. */
static int read_cert_section(struct sshwire *sec, struct krl *k, size_t *total)
{
	const uint8_t *ca, *s;
	size_t ca_len, slen;
	if (sshwire_string(sec, &ca, &ca_len) < 0 || ca_len == 0 || ca_len > KRL_CA_KEY_MAX || sshwire_string(sec, &s, &slen) < 0 ||
	    slen != 0 || sec->len < 1 || sec->p[0] != KRL_SECTION_CERT_SERIAL_LIST)
		return -EBADMSG;
	sec->p++;
	sec->len--;
	if (sshwire_string(sec, &s, &slen) < 0 || slen == 0 || slen % 8 || sec->len != 0)
		return -EBADMSG;
	if (k->n_cas > 0 && krl_ca_key_cmp(k->cas[k->n_cas - 1].ca_key, k->cas[k->n_cas - 1].ca_key_len, ca, ca_len) >= 0)
		return -EBADMSG;
	if (k->n_cas >= KRL_CAS_MAX || *total + slen / 8 > KRL_SERIALS_MAX)
		return -E2BIG;
	struct krl_ca_serials *nv = realloc(k->cas, (k->n_cas + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	k->cas = nv;
	struct krl_ca_serials *x = &k->cas[k->n_cas];
	*x = (struct krl_ca_serials){ .ca_key = malloc(ca_len), .ca_key_len = ca_len,
				      .serials = malloc(slen / 8 * sizeof(uint64_t)) };
	if (!x->ca_key || !x->serials) {
		free(x->ca_key);
		free(x->serials);
		return -ENOMEM;
	}
	memcpy(x->ca_key, ca, ca_len);
	k->n_cas++;
	struct sshwire list = { .p = s, .len = slen };
	while (list.len > 0) {
		uint64_t v;
		(void)sshwire_u64(&list, &v);
		if (v == 0 || (x->n > 0 && x->serials[x->n - 1] >= v))
			return -EBADMSG;
		x->serials[x->n++] = v;
	}
	*total += x->n;
	return 0;
}

int krl_read(const void *data, size_t len, struct krl *ret)
{
	if (len > KRL_SIZE_MAX)
		return -E2BIG;
	if (!data || len < sizeof(krl_magic) || memcmp(data, krl_magic, sizeof(krl_magic)) != 0)
		return -EBADMSG;
	struct sshwire r = { .p = (const uint8_t *)data + sizeof(krl_magic), .len = len - sizeof(krl_magic) };
	struct krl k = { 0 };
	uint32_t format;
	uint64_t flags;
	const uint8_t *s;
	size_t slen;
	if (sshwire_u32(&r, &format) < 0 || format != KRL_FORMAT_VERSION || sshwire_u64(&r, &k.version) < 0 ||
	    sshwire_u64(&r, &k.generated) < 0 || sshwire_u64(&r, &flags) < 0 || flags != 0 || sshwire_string(&r, &s, &slen) < 0 ||
	    slen != 0 || sshwire_string(&r, &s, &slen) < 0 || !comment_valid((const char *)s, slen))
		return -EBADMSG;
	memcpy(k.comment, s, slen);
	k.comment[slen] = '\0';

	/* The certificate sections, then at most one section of type 5: a
	 * string of strings of 32 bytes in strictly increasing order
	 * (PROTOCOL.krl allows more sections; the writer never makes them). */
	size_t cap = 0, total = 0;
	while (r.len > 0 && *r.p == KRL_SECTION_CERTIFICATES) {
		r.p++;
		r.len--;
		struct sshwire sec;
		if (sshwire_string(&r, &sec.p, &sec.len) < 0)
			goto bad;
		int e = read_cert_section(&sec, &k, &total);
		if (e == -EBADMSG)
			goto bad;
		if (e < 0) {
			krl_done(&k);
			return e;
		}
	}
	if (r.len > 0) {
		uint8_t type = *r.p;
		r.p++;
		r.len--;
		struct sshwire sec;
		if (type != KRL_SECTION_FINGERPRINT_SHA256 || sshwire_string(&r, &sec.p, &sec.len) < 0 || sec.len == 0)
			goto bad;
		while (sec.len > 0) {
			if (sshwire_string(&sec, &s, &slen) < 0 || slen != KRL_HASH_LEN)
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
		if (r.len > 0)
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
