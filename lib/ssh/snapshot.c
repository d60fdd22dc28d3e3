/* The key snapshot: builder, atomic writer and verifying reader; see
 * snapshot.h for the format and the contract. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "cleanup.h"
#include "fsx.h"
#include "snapshot.h"

#define MAGIC "NASNAPv\n"
#define HEADER_SIZE 160u
#define HEADER_CSUM_OFF 152u
#define RECORD_HDR 40u
#define BLOCK_SLOTS 64u
#define USER_SLOT 24u /* hash, first record offset, count, bytes */
#define FP_SLOT 16u   /* hash, record offset */
#define TABLE_SLOTS_MAX ((uint32_t)1 << 22) /* >= 2 * SNAPSHOT_RECORDS_MAX */

/* Header field offsets. */
enum {
	H_MAGIC = 0,
	H_VERSION = 8,
	H_HEADER_SIZE = 12,
	H_FILE_SIZE = 16,
	H_GENERATION = 24,
	H_CREATED = 32,
	H_N_RECORDS = 40,
	H_N_USERS = 44,
	H_RECORDS_OFF = 48,
	H_RECORDS_LEN = 56,
	H_USER_TABLE = 64, /* struct of 32 bytes, see T_* */
	H_FP_TABLE = 96,
};
enum {
	T_SLOTS_OFF = 0,
	T_DIR_OFF = 8,
	T_N_SLOTS = 16,
	T_DIR_CSUM = 24,
};

/* --- little-endian accessors (unaligned-safe: fuzzer buffers) ------------ */

static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static void wr16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static void wr32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static void wr64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Compares a stored checksum with the computed one. Fuzz builds (make fuzz
 * defines NA_FUZZING) accept any checksum, so the fuzzer gets past them to
 * the bounds checks behind; the unit tests cover the checksums themselves. */
static bool csum_ok(uint64_t computed, uint64_t stored)
{
#ifdef NA_FUZZING
	(void)computed;
	(void)stored;
	return true;
#else
	return computed == stored;
#endif
}

static uint64_t user_hash(const char *user, size_t len)
{
	return XXH3_64bits(user, len);
}

static uint64_t fp_hash(uint64_t uh, const char *fp, size_t len)
{
	return XXH3_64bits_withSeed(fp, len, uh);
}

/* --- shared validation --------------------------------------------------- */

static bool has_ctl(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return true;
	return false;
}

static bool is_b64(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
	       c == '/' || c == '=';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Every key type sshd knows starts with one of these; no sshd option does. */
static bool starts_key_type(const char *s, size_t len)
{
	static const char *const prefixes[] = { "ssh-", "ecdsa-sha2-", "sk-" };
	for (size_t i = 0; i < ELEMENTSOF(prefixes); i++) {
		size_t n = strlen(prefixes[i]);
		if (len >= n && memcmp(s, prefixes[i], n) == 0)
			return true;
	}
	return false;
}

/* Finds the key type and the base64 blob in "[options] type blob [comment]",
 * skipping an options field the way sshd does (quotes protect spaces). */
static int find_key_fields(const char *line, size_t len, size_t *ret_type_off, size_t *ret_type_len,
			   size_t *ret_blob_off, size_t *ret_blob_len)
{
	size_t p = 0;
	if (!starts_key_type(line, len)) {
		bool quoted = false;
		while (p < len && (quoted || !is_space(line[p]))) {
			if (quoted && line[p] == '\\' && p + 1 < len)
				p++;
			else if (line[p] == '"')
				quoted = !quoted;
			p++;
		}
		if (quoted || p == 0)
			return -EINVAL;
		while (p < len && is_space(line[p]))
			p++;
	}
	size_t type_off = p;
	while (p < len && !is_space(line[p]))
		p++;
	size_t type_len = p - type_off;
	if (type_len == 0 || !starts_key_type(line + type_off, type_len))
		return -EINVAL;
	while (p < len && is_space(line[p]))
		p++;
	size_t blob_off = p;
	while (p < len && !is_space(line[p])) {
		if (!is_b64(line[p]))
			return -EINVAL;
		p++;
	}
	size_t blob_len = p - blob_off;
	if (blob_len == 0)
		return -EINVAL;
	*ret_type_off = type_off;
	*ret_type_len = type_len;
	*ret_blob_off = blob_off;
	*ret_blob_len = blob_len;
	return 0;
}

/* --- writer -------------------------------------------------------------- */

struct prep {
	size_t idx; /* into entries */
	size_t user_len, fp_len, line_len, src_len;
	size_t type_off, type_len, blob_off, blob_len;
	size_t rec_len;
	uint64_t uhash;
};

/* The record's length: version 2 adds the source and its NUL. */
static size_t record_len(uint32_t version, size_t ulen, size_t flen, size_t llen, size_t slen)
{
	return align8(RECORD_HDR + ulen + 1 + flen + 1 + llen + 1 + (version >= 2 ? slen + 1 : 0));
}

static int prep_entry(uint32_t version, const struct snapshot_entry *e, size_t idx, struct prep *p)
{
	if (!e->user || !e->fingerprint || !e->line || e->expiry < 0)
		return -EINVAL;
	p->idx = idx;
	p->user_len = strnlen(e->user, SNAPSHOT_USER_MAX + 1);
	p->fp_len = strnlen(e->fingerprint, SNAPSHOT_FINGERPRINT_MAX + 1);
	p->line_len = strnlen(e->line, SNAPSHOT_LINE_MAX + 1);
	if (p->user_len == 0 || p->user_len > SNAPSHOT_USER_MAX || p->fp_len == 0 ||
	    p->fp_len > SNAPSHOT_FINGERPRINT_MAX || p->line_len == 0 || p->line_len > SNAPSHOT_LINE_MAX)
		return -EINVAL;
	const char *src = version >= 2 && e->source ? e->source : "";
	p->src_len = strnlen(src, SNAPSHOT_SOURCE_MAX + 1);
	if (p->src_len > SNAPSHOT_SOURCE_MAX || has_ctl(src, p->src_len))
		return -EINVAL;
	if (has_ctl(e->user, p->user_len) || has_ctl(e->fingerprint, p->fp_len) ||
	    memchr(e->line, '\n', p->line_len) || memchr(e->line, '\r', p->line_len))
		return -EINVAL;
	/* sshd skips "#..." and blank lines; a key line starts with its options or type. */
	if (e->line[0] == '#' || is_space(e->line[0]))
		return -EINVAL;
	if (find_key_fields(e->line, p->line_len, &p->type_off, &p->type_len, &p->blob_off, &p->blob_len) < 0)
		return -EINVAL;
	p->rec_len = record_len(version, p->user_len, p->fp_len, p->line_len, p->src_len);
	p->uhash = user_hash(e->user, p->user_len);
	return 0;
}

static int cmp_prep(const void *a, const void *b, void *userdata)
{
	const struct snapshot_entry *entries = userdata;
	const struct prep *x = a, *y = b;
	int c = strcmp(entries[x->idx].user, entries[y->idx].user);
	if (c != 0)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static uint32_t table_slots(size_t n)
{
	uint32_t slots = BLOCK_SLOTS;
	while (slots < 2 * n)
		slots <<= 1;
	return slots;
}

static void put_record(uint8_t *rec, const struct snapshot_entry *e, const struct prep *p)
{
	wr32(rec + 8, (uint32_t)p->rec_len);
	wr32(rec + 12, 0);
	wr64(rec + 16, (uint64_t)e->expiry);
	wr16(rec + 24, (uint16_t)p->user_len);
	wr16(rec + 26, (uint16_t)p->fp_len);
	wr16(rec + 28, (uint16_t)p->line_len);
	wr16(rec + 30, (uint16_t)p->type_off);
	wr16(rec + 32, (uint16_t)p->type_len);
	wr16(rec + 34, (uint16_t)p->blob_off);
	wr16(rec + 36, (uint16_t)p->blob_len);
	wr16(rec + 38, (uint16_t)p->src_len); /* version 1: 0, reserved */
	uint8_t *s = rec + RECORD_HDR;
	memcpy(s, e->user, p->user_len);
	s += p->user_len + 1;
	memcpy(s, e->fingerprint, p->fp_len);
	s += p->fp_len + 1;
	memcpy(s, e->line, p->line_len);
	s += p->line_len + 1;
	if (p->src_len)
		memcpy(s, e->source, p->src_len);
	wr64(rec, XXH3_64bits(rec + 8, p->rec_len - 8));
}

static void put_table(uint8_t *buf, size_t hdr_off, size_t slots_off, size_t dir_off, uint32_t n_slots,
		      size_t slot_size)
{
	uint32_t blocks = n_slots / BLOCK_SLOTS;
	for (uint32_t b = 0; b < blocks; b++)
		wr64(buf + dir_off + 8 * (size_t)b,
		     XXH3_64bits(buf + slots_off + (size_t)b * BLOCK_SLOTS * slot_size, BLOCK_SLOTS * slot_size));
	wr64(buf + hdr_off + T_SLOTS_OFF, slots_off);
	wr64(buf + hdr_off + T_DIR_OFF, dir_off);
	wr32(buf + hdr_off + T_N_SLOTS, n_slots);
	wr64(buf + hdr_off + T_DIR_CSUM, XXH3_64bits(buf + dir_off, 8 * (size_t)blocks));
}

int snapshot_build_version(uint32_t version, const struct snapshot_entry *entries, size_t n, uint64_t generation,
			   int64_t created_at, void **ret, size_t *ret_size, size_t *reterr_index)
{
	if (version < SNAPSHOT_VERSION_MIN || version > SNAPSHOT_VERSION)
		return -EINVAL;
	if (n > SNAPSHOT_RECORDS_MAX)
		return -E2BIG;

	_cleanup_free_ struct prep *prep = calloc(n ? n : 1, sizeof(*prep));
	if (!prep)
		return -ENOMEM;
	size_t records_len = 0;
	for (size_t i = 0; i < n; i++) {
		if (prep_entry(version, &entries[i], i, &prep[i]) < 0) {
			if (reterr_index)
				*reterr_index = i;
			return -EINVAL;
		}
		records_len += prep[i].rec_len;
		if (records_len > SNAPSHOT_SIZE_MAX)
			return -E2BIG;
	}
	/* qsort is not stable; the index tie-break makes it so. */
	qsort_r(prep, n, sizeof(*prep), cmp_prep, (void *)(uintptr_t)entries);

	size_t n_users = 0;
	for (size_t i = 0; i < n; i++)
		if (i == 0 || strcmp(entries[prep[i].idx].user, entries[prep[i - 1].idx].user) != 0)
			n_users++;

	uint32_t user_slots = table_slots(n_users), fp_slots = table_slots(n);
	size_t records_off = HEADER_SIZE;
	size_t user_off = records_off + records_len;
	size_t fp_off = user_off + (size_t)user_slots * USER_SLOT;
	size_t user_dir = fp_off + (size_t)fp_slots * FP_SLOT;
	size_t fp_dir = user_dir + 8 * (size_t)(user_slots / BLOCK_SLOTS);
	size_t size = fp_dir + 8 * (size_t)(fp_slots / BLOCK_SLOTS);
	if (size > SNAPSHOT_SIZE_MAX)
		return -E2BIG;

	_cleanup_free_ uint8_t *buf = calloc(1, size);
	if (!buf)
		return -ENOMEM;

	size_t off = records_off;
	for (size_t i = 0; i < n;) {
		/* One user: records [i, j). */
		const char *user = entries[prep[i].idx].user;
		size_t j = i, first = off;
		for (; j < n && strcmp(entries[prep[j].idx].user, user) == 0; j++) {
			const struct snapshot_entry *e = &entries[prep[j].idx];
			put_record(buf + off, e, &prep[j]);

			uint64_t h = fp_hash(prep[j].uhash, e->fingerprint, prep[j].fp_len);
			for (uint32_t k = (uint32_t)h & (fp_slots - 1);; k = (k + 1) & (fp_slots - 1)) {
				uint8_t *slot = buf + fp_off + (size_t)k * FP_SLOT;
				uint64_t roff = rd64(slot + 8);
				if (roff == 0) {
					wr64(slot, h);
					wr64(slot + 8, off);
					break;
				}
				if (rd64(slot) == h) {
					/* Same user (we are within one user's run) and same fingerprint? */
					const uint8_t *r = buf + roff;
					const char *rfp = (const char *)r + RECORD_HDR + rd16(r + 24) + 1;
					if (strcmp(rfp, e->fingerprint) == 0 &&
					    strcmp((const char *)r + RECORD_HDR, e->user) == 0) {
						if (reterr_index)
							*reterr_index = prep[j].idx;
						return -EEXIST;
					}
				}
			}
			off += prep[j].rec_len;
		}
		uint64_t h = prep[i].uhash;
		for (uint32_t k = (uint32_t)h & (user_slots - 1);; k = (k + 1) & (user_slots - 1)) {
			uint8_t *slot = buf + user_off + (size_t)k * USER_SLOT;
			if (rd64(slot + 8) == 0) {
				wr64(slot, h);
				wr64(slot + 8, first);
				wr32(slot + 16, (uint32_t)(j - i));
				wr32(slot + 20, (uint32_t)(off - first));
				break;
			}
		}
		i = j;
	}

	put_table(buf, H_USER_TABLE, user_off, user_dir, user_slots, USER_SLOT);
	put_table(buf, H_FP_TABLE, fp_off, fp_dir, fp_slots, FP_SLOT);

	memcpy(buf + H_MAGIC, MAGIC, 8);
	wr32(buf + H_VERSION, version);
	wr32(buf + H_HEADER_SIZE, HEADER_SIZE);
	wr64(buf + H_FILE_SIZE, size);
	wr64(buf + H_GENERATION, generation);
	wr64(buf + H_CREATED, (uint64_t)created_at);
	wr32(buf + H_N_RECORDS, (uint32_t)n);
	wr32(buf + H_N_USERS, (uint32_t)n_users);
	wr64(buf + H_RECORDS_OFF, records_off);
	wr64(buf + H_RECORDS_LEN, records_len);
	wr64(buf + HEADER_CSUM_OFF, XXH3_64bits(buf, HEADER_CSUM_OFF));

	*ret = TAKE_PTR(buf);
	*ret_size = size;
	return 0;
}

int snapshot_build(const struct snapshot_entry *entries, size_t n, uint64_t generation, int64_t created_at,
		   void **ret, size_t *ret_size, size_t *reterr_index)
{
	return snapshot_build_version(SNAPSHOT_VERSION, entries, n, generation, created_at, ret, ret_size,
				      reterr_index);
}

int snapshot_write_at(int dirfd, const char *name, const struct snapshot_entry *entries, size_t n,
		      uint64_t generation, int64_t created_at, uid_t uid, gid_t gid, size_t *reterr_index)
{
	_cleanup_free_ void *buf = NULL;
	size_t size;
	int r = snapshot_build(entries, n, generation, created_at, &buf, &size, reterr_index);
	if (r < 0)
		return r;
	return fsx_write_atomic_at(dirfd, name, buf, size, 0644, uid, gid, 0);
}

/* --- reader -------------------------------------------------------------- */

struct table {
	uint64_t slots_off;
	uint64_t dir_off;
	uint32_t n_slots;
	uint32_t slot_size;
};

struct snapshot {
	const uint8_t *data;
	size_t size;
	bool mapped;
	struct snapshot_info info;
	uint64_t records_off, records_len;
	struct table user, fp;
};

#define FAIL(what)                              \
	do {                                    \
		if (reterr_what)                \
			*reterr_what = (what);  \
		return -EBADMSG;                \
	} while (0)

/* [off, off + len) lies inside [lo, hi) (no overflow). */
static bool in_range(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi)
{
	return off >= lo && off <= hi && len <= hi - off;
}

static int parse_table(const uint8_t *d, size_t size, size_t hdr_off, uint32_t slot_size, uint64_t min_slots,
		       struct table *t, const char **reterr_what)
{
	t->slots_off = rd64(d + hdr_off + T_SLOTS_OFF);
	t->dir_off = rd64(d + hdr_off + T_DIR_OFF);
	t->n_slots = rd32(d + hdr_off + T_N_SLOTS);
	t->slot_size = slot_size;
	if (t->n_slots < BLOCK_SLOTS || t->n_slots > TABLE_SLOTS_MAX || (t->n_slots & (t->n_slots - 1)) ||
	    t->n_slots < min_slots)
		FAIL("table slot count");
	uint64_t blocks = t->n_slots / BLOCK_SLOTS;
	if (t->slots_off % 8 || t->dir_off % 8 ||
	    !in_range(t->slots_off, (uint64_t)t->n_slots * slot_size, HEADER_SIZE, size) ||
	    !in_range(t->dir_off, 8 * blocks, HEADER_SIZE, size))
		FAIL("table bounds");
	if (!csum_ok(XXH3_64bits(d + t->dir_off, 8 * blocks), rd64(d + hdr_off + T_DIR_CSUM)))
		FAIL("table directory checksum");
	return 0;
}

int snapshot_parse(const void *data, size_t size, struct snapshot **ret, const char **reterr_what)
{
	const uint8_t *d = data;
	if (size < HEADER_SIZE || memcmp(d + H_MAGIC, MAGIC, 8) != 0)
		FAIL("magic");
	if (!csum_ok(XXH3_64bits(d, HEADER_CSUM_OFF), rd64(d + HEADER_CSUM_OFF)))
		FAIL("header checksum");
	uint32_t version = rd32(d + H_VERSION);
	if (version < SNAPSHOT_VERSION_MIN || version > SNAPSHOT_VERSION) {
		if (reterr_what)
			*reterr_what = "version";
		return -EPROTONOSUPPORT;
	}
	if (rd32(d + H_HEADER_SIZE) != HEADER_SIZE)
		FAIL("header size");
	if (rd64(d + H_FILE_SIZE) != size || size > SNAPSHOT_SIZE_MAX)
		FAIL("file size");

	struct snapshot s = {
		.data = d,
		.size = size,
		.info = {
			.version = version,
			.generation = rd64(d + H_GENERATION),
			.created_at = (int64_t)rd64(d + H_CREATED),
			.n_records = rd32(d + H_N_RECORDS),
			.n_users = rd32(d + H_N_USERS),
			.size = size,
		},
		.records_off = rd64(d + H_RECORDS_OFF),
		.records_len = rd64(d + H_RECORDS_LEN),
	};
	if (s.info.n_records > SNAPSHOT_RECORDS_MAX || s.info.n_users > s.info.n_records)
		FAIL("counts");
	if (s.records_off % 8 || s.records_len % 8 || !in_range(s.records_off, s.records_len, HEADER_SIZE, size) ||
	    s.records_len < (uint64_t)s.info.n_records * (RECORD_HDR + 8))
		FAIL("records bounds");
	int r = parse_table(d, size, H_USER_TABLE, USER_SLOT, 2 * (uint64_t)s.info.n_users, &s.user, reterr_what);
	if (r < 0)
		return r;
	r = parse_table(d, size, H_FP_TABLE, FP_SLOT, 2 * (uint64_t)s.info.n_records, &s.fp, reterr_what);
	if (r < 0)
		return r;

	struct snapshot *p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	*p = s;
	*ret = p;
	return 0;
}

int snapshot_open_fd(int fd, uid_t owner, struct snapshot **ret, const char **reterr_what)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return negerrno();
	if (!S_ISREG(st.st_mode)) {
		if (reterr_what)
			*reterr_what = "not a regular file";
		return -EBADFD;
	}
	if (st.st_uid != owner || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		if (reterr_what)
			*reterr_what = st.st_uid != owner ? "owner" : "group/world-writable";
		return -EPERM;
	}
	if ((uint64_t)st.st_size > SNAPSHOT_SIZE_MAX) {
		if (reterr_what)
			*reterr_what = "size";
		return -EFBIG;
	}
	if ((size_t)st.st_size < HEADER_SIZE)
		FAIL("truncated");

	size_t size = (size_t)st.st_size;
	void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return negerrno();
	struct snapshot *s;
	int r = snapshot_parse(m, size, &s, reterr_what);
	if (r < 0) {
		munmap(m, size);
		return r;
	}
	s->mapped = true;
	*ret = s;
	return 0;
}

void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	if (s->mapped)
		munmap((void *)(uintptr_t)s->data, s->size);
	free(s);
}

void snapshot_get_info(const struct snapshot *s, struct snapshot_info *ret)
{
	*ret = s->info;
}

/* Verifies block b of table t against its directory entry. */
static bool block_ok(const struct snapshot *s, const struct table *t, uint32_t b)
{
	size_t bytes = (size_t)BLOCK_SLOTS * t->slot_size;
	return csum_ok(XXH3_64bits(s->data + t->slots_off + (size_t)b * bytes, bytes),
		       rd64(s->data + t->dir_off + 8 * (size_t)b));
}

/* Verifies the record at off (checksum, bounds, strings) and fills *rec;
 * *ret_len is the record's length. */
static int read_record(const struct snapshot *s, uint64_t off, struct snapshot_record *rec, size_t *ret_len,
		       const char **reterr_what)
{
	uint64_t end = s->records_off + s->records_len;
	if (off % 8 || !in_range(off, RECORD_HDR, s->records_off, end))
		FAIL("record offset");
	const uint8_t *r = s->data + off;
	uint32_t len = rd32(r + 8);
	if (len % 8 || len < RECORD_HDR + 8 || !in_range(off, len, s->records_off, end))
		FAIL("record length");
	if (!csum_ok(XXH3_64bits(r + 8, len - 8), rd64(r)))
		FAIL("record checksum");

	size_t ulen = rd16(r + 24), flen = rd16(r + 26), llen = rd16(r + 28);
	size_t toff = rd16(r + 30), tlen = rd16(r + 32), boff = rd16(r + 34), blen = rd16(r + 36);
	size_t slen = rd16(r + 38); /* version 1: reserved, 0 */
	uint32_t version = s->info.version;
	int64_t expiry = (int64_t)rd64(r + 16);
	if (rd32(r + 12) != 0 || (version < 2 && slen != 0) || expiry < 0)
		FAIL("record flags");
	if (ulen == 0 || ulen > SNAPSHOT_USER_MAX || flen == 0 || flen > SNAPSHOT_FINGERPRINT_MAX || llen == 0 ||
	    llen > SNAPSHOT_LINE_MAX || slen > SNAPSHOT_SOURCE_MAX || record_len(version, ulen, flen, llen, slen) != len)
		FAIL("record string lengths");
	const char *u = (const char *)r + RECORD_HDR, *f = u + ulen + 1, *l = f + flen + 1;
	const char *src = version >= 2 ? l + llen + 1 : "";
	if (u[ulen] || f[flen] || l[llen] || has_ctl(u, ulen) || has_ctl(f, flen) || memchr(l, '\0', llen) ||
	    memchr(l, '\n', llen) || memchr(l, '\r', llen) || src[slen] || has_ctl(src, slen))
		FAIL("record strings");
	if (tlen == 0 || blen == 0 || toff + tlen > llen || boff + blen > llen)
		FAIL("record key fields");

	*rec = (struct snapshot_record){
		.user = u,
		.fingerprint = f,
		.line = l,
		.line_len = llen,
		.type = l + toff,
		.type_len = tlen,
		.blob = l + boff,
		.blob_len = blen,
		.expiry = expiry,
		.source = src,
		.source_len = slen,
	};
	*ret_len = len;
	return 0;
}

/* Walks the probe sequence of hash in t, verifying each block before it is
 * read; calls match() for every slot whose hash equals. Returns what match()
 * returns when it is non-zero, 0 at an empty slot. */
typedef int (*probe_fn)(const struct snapshot *s, const uint8_t *slot, void *userdata, const char **reterr_what);

static int probe(const struct snapshot *s, const struct table *t, uint64_t hash, probe_fn match, void *userdata,
		 const char **reterr_what)
{
	uint32_t mask = t->n_slots - 1, verified = UINT32_MAX;
	uint32_t k = (uint32_t)hash & mask;
	for (uint32_t i = 0; i < t->n_slots; i++, k = (k + 1) & mask) {
		uint32_t b = k / BLOCK_SLOTS;
		if (b != verified) {
			if (!block_ok(s, t, b))
				FAIL("index block checksum");
			verified = b;
		}
		const uint8_t *slot = s->data + t->slots_off + (size_t)k * t->slot_size;
		if (rd64(slot + 8) == 0)
			return 0;
		if (rd64(slot) != hash)
			continue;
		int r = match(s, slot, userdata, reterr_what);
		if (r != 0)
			return r;
	}
	return 0;
}

struct user_query {
	const char *user;
	struct snapshot_record *found;
	size_t n_found;
};

static int match_user(const struct snapshot *s, const uint8_t *slot, void *userdata, const char **reterr_what)
{
	struct user_query *q = userdata;
	uint64_t first = rd64(slot + 8), bytes = rd32(slot + 20);
	uint32_t count = rd32(slot + 16);
	if (count == 0 || count > s->info.n_records || bytes < (uint64_t)count * (RECORD_HDR + 8) ||
	    !in_range(first, bytes, s->records_off, s->records_off + s->records_len))
		FAIL("user slot");

	struct snapshot_record rec;
	size_t len;
	int r = read_record(s, first, &rec, &len, reterr_what);
	if (r < 0)
		return r;
	if (strcmp(rec.user, q->user) != 0)
		return 0; /* a 64-bit hash collision: keep probing */

	_cleanup_free_ struct snapshot_record *v = calloc(count, sizeof(*v));
	if (!v)
		return -ENOMEM;
	uint64_t off = first;
	for (uint32_t i = 0; i < count; i++) {
		if (i > 0) {
			if (off - first >= bytes)
				FAIL("user records overrun");
			r = read_record(s, off, &rec, &len, reterr_what);
			if (r < 0)
				return r;
			if (strcmp(rec.user, q->user) != 0)
				FAIL("user records mixed");
		}
		v[i] = rec;
		off += len;
	}
	if (off - first != bytes)
		FAIL("user records length");
	q->found = TAKE_PTR(v);
	q->n_found = count;
	return 1;
}

int snapshot_lookup_user(const struct snapshot *s, const char *user, struct snapshot_record **ret,
			 const char **reterr_what)
{
	size_t ulen = strnlen(user, SNAPSHOT_USER_MAX + 1);
	if (ulen == 0 || ulen > SNAPSHOT_USER_MAX) {
		*ret = NULL;
		return 0;
	}
	struct user_query q = { .user = user };
	int r = probe(s, &s->user, user_hash(user, ulen), match_user, &q, reterr_what);
	if (r < 0)
		return r;
	*ret = q.found;
	return (int)q.n_found;
}

struct fp_query {
	const char *user;
	const char *fingerprint;
	struct snapshot_record rec;
};

static int match_fp(const struct snapshot *s, const uint8_t *slot, void *userdata, const char **reterr_what)
{
	struct fp_query *q = userdata;
	struct snapshot_record rec;
	size_t len;
	int r = read_record(s, rd64(slot + 8), &rec, &len, reterr_what);
	if (r < 0)
		return r;
	if (strcmp(rec.user, q->user) != 0 || strcmp(rec.fingerprint, q->fingerprint) != 0)
		return 0;
	q->rec = rec;
	return 1;
}

int snapshot_lookup_fingerprint(const struct snapshot *s, const char *user, const char *fingerprint,
				struct snapshot_record *ret, const char **reterr_what)
{
	size_t ulen = strnlen(user, SNAPSHOT_USER_MAX + 1);
	size_t flen = strnlen(fingerprint, SNAPSHOT_FINGERPRINT_MAX + 1);
	if (ulen == 0 || ulen > SNAPSHOT_USER_MAX || flen == 0 || flen > SNAPSHOT_FINGERPRINT_MAX)
		return 0;
	struct fp_query q = { .user = user, .fingerprint = fingerprint };
	int r = probe(s, &s->fp, fp_hash(user_hash(user, ulen), fingerprint, flen), match_fp, &q, reterr_what);
	if (r <= 0)
		return r;
	*ret = q.rec;
	return 1;
}
