/* Revocation that sticks; see revoke.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "b64.h"
#include "cleanup.h"
#include "desired.h"
#include "fsx.h"
#include "jsonx.h"
#include "keydoc.h"
#include "krl.h"
#include "log.h"
#include "revlist.h"
#include "revoke.h"
#include "status.h"

/* v1 (up to 0.1.1) has no KRL digest; v2 names the SHA-256 of the KRL
 * this program wrote and of the one before it ("-": none), so that a KRL
 * changed by anyone else is told from its own. */
#define RECORDS_HEADER_V1 "# cloud-config-exec revocations v1\n"
#define RECORDS_HEADER_V2 "# cloud-config-exec revocations v2 krl-sha256 "
#define RECORDS_HEADER_MAX (sizeof(RECORDS_HEADER_V2) + 2 * 65 + 1)
#define RECORDS_MAX ((size_t)(REVOKE_MAX + 1) * 101 + RECORDS_HEADER_MAX)

enum reason { R_EXPLICIT, R_DROPPED, R_EXPIRED, R_KEPT, R_OPERATOR, _R_MAX };
static const char *const reason_names[_R_MAX] = { "explicit", "dropped", "expired", "kept", "operator" };

/* Which reason a key keeps when it has several: the control plane's
 * explicit revocation, then the operator's, then the rest. Explicit and
 * operator revocations are never lifted by a grant. */
static int reason_rank(enum reason r)
{
	return r == R_EXPLICIT ? 2 : r == R_OPERATOR ? 1 : 0;
}

static bool reason_sticky(enum reason r)
{
	return reason_rank(r) > 0;
}

struct rec {
	struct krl_hash h;
	enum reason reason;
	int64_t since;
};

struct recs {
	struct rec *v;
	size_t n, cap;
};

static void recs_done(struct recs *r)
{
	free(r->v);
	*r = (struct recs){ 0 };
}

/* A sorted, unique set of hashes. */
struct hset {
	struct krl_hash *v;
	size_t n, cap;
};

static void hset_done(struct hset *s)
{
	free(s->v);
	*s = (struct hset){ 0 };
}

static int hset_add(struct hset *s, const struct krl_hash *h)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 32;
		struct krl_hash *nv = realloc(s->v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = nc;
	}
	s->v[s->n++] = *h;
	return 0;
}

static int hash_cmp(const void *a, const void *b)
{
	return memcmp(a, b, KRL_HASH_LEN);
}

static void hset_seal(struct hset *s)
{
	s->n = krl_hash_sort_unique(s->v, s->n);
}

static bool hset_has(const struct hset *s, const struct krl_hash *h)
{
	return s->n && bsearch(h, s->v, s->n, sizeof(*s->v), hash_cmp);
}

/* Adds the hash of a "SHA256:..." fingerprint; other forms are ignored. */
static int hset_add_fp(struct hset *s, const char *fp)
{
	struct krl_hash h;
	if (krl_hash_from_fingerprint(fp, &h) < 0)
		return 0;
	return hset_add(s, &h);
}

static int recs_add(struct recs *r, const struct krl_hash *h, enum reason reason, int64_t since)
{
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 64;
		struct rec *nv = realloc(r->v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		r->v = nv;
		r->cap = nc;
	}
	r->v[r->n++] = (struct rec){ .h = *h, .reason = reason, .since = since };
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	return memcmp(&((const struct rec *)a)->h, &((const struct rec *)b)->h, KRL_HASH_LEN);
}

/* Eviction order: explicit revocations last, operator ones before them,
 * then the oldest first. */
static int rec_since_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if (reason_rank(x->reason) != reason_rank(y->reason))
		return reason_rank(x->reason) > reason_rank(y->reason) ? 1 : -1;
	if (x->since != y->since)
		return x->since < y->since ? -1 : 1;
	return rec_cmp(a, b);
}

/* Sorted by hash, one record a hash: the highest ranked reason wins
 * (reason_rank()), and the earliest time is kept. */
static void recs_normalise(struct recs *r)
{
	if (r->n == 0)
		return;
	qsort(r->v, r->n, sizeof(*r->v), rec_cmp);
	size_t k = 1;
	for (size_t i = 1; i < r->n; i++) {
		struct rec *last = &r->v[k - 1];
		if (memcmp(&last->h, &r->v[i].h, KRL_HASH_LEN) != 0) {
			r->v[k++] = r->v[i];
			continue;
		}
		if (reason_rank(r->v[i].reason) > reason_rank(last->reason))
			last->reason = r->v[i].reason;
		if (r->v[i].since < last->since)
			last->since = r->v[i].since;
	}
	r->n = k;
}

static const struct rec *recs_find(const struct recs *r, const struct krl_hash *h)
{
	return r->n ? bsearch(h, r->v, r->n, sizeof(*r->v), rec_cmp) : NULL;
}

static void fp_of(const struct krl_hash *h, char out[static KEYS_FINGERPRINT_MAX])
{
	_cleanup_free_ char *s = b64_encode(h->h, KRL_HASH_LEN, true);
	snprintf(out, KEYS_FINGERPRINT_MAX, "SHA256:%s", s ? s : "?");
}

/* ---- the records file ------------------------------------------------- */

/* The KRL digests of a v2 header: "<64 hex> <64 hex or ->\n". */
static int parse_digests(const char *p, const char *end, char krl[static 65], char prev[static 65], const char **next)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	if (!nl || nl - p < 66)
		return -EBADMSG;
	memcpy(krl, p, 64);
	krl[64] = '\0';
	if (!jsonx_is_sha256_hex(krl) || p[64] != ' ')
		return -EBADMSG;
	size_t pl = (size_t)(nl - (p + 65));
	if (pl == 1 && p[65] == '-')
		prev[0] = '\0';
	else if (pl == 64) {
		memcpy(prev, p + 65, 64);
		prev[64] = '\0';
		if (!jsonx_is_sha256_hex(prev))
			return -EBADMSG;
	} else
		return -EBADMSG;
	*next = nl + 1;
	return 0;
}

/* The records file: the records, and the digests of the KRL written last
 * and before it ("" when v1 or none). */
static int parse_records(const char *data, size_t len, struct recs *ret, char krl[static 65], char prev[static 65])
{
	size_t h1 = strlen(RECORDS_HEADER_V1), h2 = strlen(RECORDS_HEADER_V2);
	const char *p, *end = data + len;
	krl[0] = prev[0] = '\0';
	if (len >= h1 && memcmp(data, RECORDS_HEADER_V1, h1) == 0)
		p = data + h1;
	else if (len >= h2 && memcmp(data, RECORDS_HEADER_V2, h2) == 0) {
		if (parse_digests(data + h2, end, krl, prev, &p) < 0) {
			krl[0] = prev[0] = '\0';
			return -EBADMSG;
		}
	} else
		return -EBADMSG;
	struct recs r = { 0 };
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl || r.n >= REVOKE_MAX || nl - p > 100)
			goto bad;
		char line[101];
		memcpy(line, p, (size_t)(nl - p));
		line[nl - p] = '\0';
		p = nl + 1;
		char *sp1 = strchr(line, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
		if (!sp2)
			goto bad;
		*sp1 = *sp2 = '\0';
		struct krl_hash h;
		if (krl_hash_from_fingerprint(line, &h) < 0)
			goto bad;
		enum reason reason = _R_MAX;
		for (int i = 0; i < _R_MAX; i++)
			if (strcmp(sp1 + 1, reason_names[i]) == 0)
				reason = (enum reason)i;
		char *e;
		errno = 0;
		long long since = strtoll(sp2 + 1, &e, 10);
		if (reason == _R_MAX || errno || e == sp2 + 1 || *e || since < 0 || sp2[1] == '-' || sp2[1] == '+')
			goto bad;
		if (recs_add(&r, &h, reason, since) < 0) {
			recs_done(&r);
			return -ENOMEM;
		}
	}
	recs_normalise(&r);
	*ret = r;
	return 0;
bad:
	recs_done(&r);
	krl[0] = prev[0] = '\0';
	return -EBADMSG;
}

static int format_records(const struct recs *r, const char *krl, const char *prev, char **ret, size_t *ret_len)
{
	size_t cap = RECORDS_HEADER_MAX + r->n * 90 + 1, off = 0;
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	off = (size_t)snprintf(buf, cap, "%s%s %s\n", RECORDS_HEADER_V2, krl, prev[0] ? prev : "-");
	for (size_t i = 0; i < r->n; i++) {
		char fp[KEYS_FINGERPRINT_MAX];
		fp_of(&r->v[i].h, fp);
		int k = snprintf(buf + off, cap - off, "%s %s %" PRId64 "\n", fp, reason_names[r->v[i].reason],
				 r->v[i].since);
		if (k < 0 || (size_t)k >= cap - off) {
			free(buf);
			return -EINVAL;
		}
		off += (size_t)k;
	}
	*ret = buf;
	*ret_len = off;
	return 0;
}

/* ---- what the sources say --------------------------------------------- */

static const struct osc_file *find_file(const struct osc *osc, const char *path)
{
	for (size_t i = 0; osc && path && i < osc->n_files; i++)
		if (strcmp(osc->files[i].path, path) == 0 && osc->files[i].source == OSC_SOURCE_INLINE)
			return &osc->files[i];
	return NULL;
}

/* Revoked certificate serials per CA (what the KRL's certificate sections
 * hold): at most KRL_CAS_MAX CAs, KRL_SERIALS_MAX serials in all. */
struct casets {
	struct krl_ca_serials *v;
	char (*fps)[KEYS_FINGERPRINT_MAX]; /* the CA's fingerprint, for the log ("" if unknown) */
	size_t n, total;
};

static void casets_done(struct casets *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].ca_key);
		free(c->v[i].serials);
	}
	free(c->v);
	free(c->fps);
	*c = (struct casets){ 0 };
}

/* Adds serial of the CA blob[0..len). 1 added, 0 already there, -E2BIG
 * over a bound (nothing added), -EINVAL for a CA key over KRL_CA_KEY_MAX or
 * serial 0, -ENOMEM. */
static int casets_add(struct casets *c, const uint8_t *blob, size_t len, const char *fp, uint64_t serial)
{
	if (len == 0 || len > KRL_CA_KEY_MAX || serial == 0)
		return -EINVAL;
	size_t i = 0;
	while (i < c->n && krl_ca_key_cmp(c->v[i].ca_key, c->v[i].ca_key_len, blob, len) != 0)
		i++;
	if (i < c->n)
		for (size_t j = 0; j < c->v[i].n; j++)
			if (c->v[i].serials[j] == serial)
				return 0;
	if (c->total >= KRL_SERIALS_MAX || (i == c->n && c->n >= KRL_CAS_MAX))
		return -E2BIG;
	if (i == c->n) {
		struct krl_ca_serials *nv = realloc(c->v, (c->n + 1) * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		c->v = nv;
		char(*nf)[KEYS_FINGERPRINT_MAX] = realloc(c->fps, (c->n + 1) * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		c->fps = nf;
		uint8_t *k = malloc(len);
		if (!k)
			return -ENOMEM;
		memcpy(k, blob, len);
		c->v[c->n] = (struct krl_ca_serials){ .ca_key = k, .ca_key_len = len };
		snprintf(c->fps[c->n], KEYS_FINGERPRINT_MAX, "%s", fp ? fp : "");
		c->n++;
	}
	uint64_t *ns = realloc(c->v[i].serials, (c->v[i].n + 1) * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	c->v[i].serials = ns;
	ns[c->v[i].n++] = serial;
	c->total++;
	return 1;
}

/* One certificate serial a key document revokes. */
struct serial_rev {
	uint8_t *ca;
	size_t ca_len;
	char fp[KEYS_FINGERPRINT_MAX];
	uint64_t serial;
};

struct said {
	struct hset regrant;  /* may lift a revocation: Gardener's current key, valid document grants */
	struct hset revoked;  /* "revoked": true */
	struct hset expired;  /* document grants whose until passed */
	struct serial_rev *serials; /* "revokedSerials" of CA entries */
	size_t n_serials;
};

static void said_done(struct said *s)
{
	hset_done(&s->regrant);
	hset_done(&s->revoked);
	hset_done(&s->expired);
	for (size_t i = 0; i < s->n_serials; i++)
		free(s->serials[i].ca);
	free(s->serials);
	s->serials = NULL;
	s->n_serials = 0;
}

static int said_add_serials(struct said *s, const struct keydoc_entry *e)
{
	if (e->n_revoked_serials == 0)
		return 0;
	struct serial_rev *nv = realloc(s->serials, (s->n_serials + e->n_revoked_serials) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	s->serials = nv;
	for (size_t i = 0; i < e->n_revoked_serials; i++) {
		struct serial_rev *x = &s->serials[s->n_serials];
		*x = (struct serial_rev){ .ca = malloc(e->key.blob_len), .ca_len = e->key.blob_len,
					  .serial = e->revoked_serials[i] };
		if (!x->ca)
			return -ENOMEM;
		memcpy(x->ca, e->key.blob, e->key.blob_len);
		snprintf(x->fp, sizeof(x->fp), "%s", e->key.fingerprint);
		s->n_serials++;
	}
	return 0;
}

/* A document that does not parse was refused (and logged) by the keys
 * step: it says nothing here either. */
static int read_document(const char *data, size_t len, const struct config *cfg, time_t now, struct said *s)
{
	struct keys_parse_params params = { .rsa_min_bits = cfg->rsa_min_bits };
	struct keydoc doc = { 0 };
	if (keydoc_parse_json(data, len, &params, &doc, NULL, 0) < 0)
		return 0;
	int r = 0;
	for (size_t i = 0; i < doc.n && r >= 0; i++) {
		const struct keydoc_entry *e = &doc.entries[i];
		time_t until = e->key.options.expiry;
		if ((r = said_add_serials(s, e)) < 0)
			break;
		if (e->revoked)
			r = hset_add_fp(&s->revoked, e->key.fingerprint);
		else if (until && until <= now)
			r = hset_add_fp(&s->expired, e->key.fingerprint);
		else
			r = hset_add_fp(&s->regrant, e->key.fingerprint);
	}
	keydoc_done(&doc);
	return r;
}

static int read_sources(const struct config *cfg, const struct sshkeys_input *in, struct said *s)
{
	int r;
	const struct osc_file *gf = find_file(in->osc, SSHKEYS_GARDENER_FILE);
	if (gf) {
		struct keys_parse_params params = { .rsa_min_bits = cfg->rsa_min_bits };
		struct keydoc doc = { 0 };
		if (keydoc_parse_lines((const char *)gf->content, gf->content_len, cfg->login_user, &params, &doc, NULL,
				       0) >= 0) {
			r = doc.n ? hset_add_fp(&s->regrant, doc.entries[0].key.fingerprint) : 0;
			keydoc_done(&doc);
			if (r < 0)
				return r;
		}
	}
	const struct osc_file *df = find_file(in->osc, cfg->key_document_path);
	if (df && (r = read_document((const char *)df->content, df->content_len, cfg, in->now, s)) < 0)
		return r;
	if (in->key_document && cfg->keys_from_node_annotation &&
	    (r = read_document(in->key_document, strlen(in->key_document), cfg, in->now, s)) < 0)
		return r;
	hset_seal(&s->regrant);
	hset_seal(&s->revoked);
	hset_seal(&s->expired);
	return 0;
}

/* ---- the step --------------------------------------------------------- */

struct prev_key {
	struct krl_hash h;
	time_t expiry;
};

static int managed_now(const struct state *st, time_t now, struct hset *all, struct hset *valid)
{
	int r;
	for (size_t i = 0; i < st->n_users; i++)
		for (size_t j = 0; j < st->users[i].n_keys; j++) {
			const struct state_key *k = &st->users[i].keys[j];
			if ((r = hset_add_fp(all, k->fingerprint)) < 0)
				return r;
			if ((!k->expiry || k->expiry > now) && (r = hset_add_fp(valid, k->fingerprint)) < 0)
				return r;
		}
	hset_seal(all);
	hset_seal(valid);
	return 0;
}

static void log_rec(int level, const struct rec *rc, const char *what)
{
	char fp[KEYS_FINGERPRINT_MAX], ffield[96], rfield[32];
	fp_of(&rc->h, fp);
	snprintf(ffield, sizeof(ffield), "FINGERPRINT=%s", fp);
	snprintf(rfield, sizeof(rfield), "REVOKE_REASON=%s", reason_names[rc->reason]);
	log_fields(level, LOG_FIELDS(ffield, rfield), "Key %s %s (%s)", fp, what, reason_names[rc->reason]);
}

/* The operator's revocations: every file in REVOKE_OPERATOR_DIR below
 * the root (revlist.h), at most REVOKE_OPERATOR_FILES_MAX of them, names
 * starting with '.' skipped (editors' temporaries). No directory: none.
 * A file that cannot be read or parsed fails the whole set (err names it
 * and the line): the caller then lifts none of the operator's earlier
 * revocations. */
static int read_operator(int rootfd, const struct config *cfg, struct hset *out, char *err, size_t err_size)
{
	_cleanup_close_ int dfd = fsx_open_dir_at(rootfd, REVOKE_OPERATOR_DIR, FSX_FOLLOW_ROOT_SYMLINKS, 0);
	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0) {
		snprintf(err, err_size, "/%s: %s", REVOKE_OPERATOR_DIR, strerror(-dfd));
		return dfd;
	}
	int lfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
	if (!d) {
		int r = negerrno();
		if (lfd >= 0)
			close(lfd);
		snprintf(err, err_size, "/%s: %s", REVOKE_OPERATOR_DIR, strerror(-r));
		return r;
	}
	struct keys_parse_params params = { .rsa_min_bits = cfg->rsa_min_bits };
	unsigned files = 0;
	int r = 0;
	struct dirent *de;
	while (r >= 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (++files > REVOKE_OPERATOR_FILES_MAX) {
			snprintf(err, err_size, "/%s: more than %d files", REVOKE_OPERATOR_DIR, REVOKE_OPERATOR_FILES_MAX);
			r = -E2BIG;
			break;
		}
		_cleanup_free_ char *data = NULL;
		size_t len = 0;
		r = fsx_read_at(dfd, de->d_name, REVLIST_FILE_MAX, &data, &len);
		if (r < 0) {
			snprintf(err, err_size, "/%s/%s: %s", REVOKE_OPERATOR_DIR, de->d_name,
				 r == -EFBIG ? "larger than " "512 KiB" : strerror(-r));
			break;
		}
		_cleanup_free_ struct krl_hash *v = NULL;
		char why[128] = "";
		int n = revlist_parse(data, len, &params, &v, why, sizeof(why));
		if (n < 0) {
			r = n;
			snprintf(err, err_size, "/%s/%s: %s", REVOKE_OPERATOR_DIR, de->d_name,
				 n == -ENOMEM ? "out of memory" : why);
			break;
		}
		for (int i = 0; i < n && r >= 0; i++)
			r = hset_add(out, &v[i]);
	}
	closedir(d);
	hset_seal(out);
	return r;
}

/* Is the KRL on disk (data[0..len)) the one this program wrote last (or
 * the one before, when a crash came between the records and the KRL)? */
static bool krl_is_ours(const char *data, size_t len, const char *krl, const char *prev)
{
	char sum[65];
	desired_sha256_hex(data, len, sum);
	return (krl[0] && strcmp(sum, krl) == 0) || (prev[0] && strcmp(sum, prev) == 0);
}

static int update(int rootfd, const struct config *cfg, const struct sshkeys_input *in, const struct prev_key *prev,
		  size_t n_prev, const struct state *st, int statefd, bool replace, bool *ret_changed, char *err,
		  size_t err_size)
{
	_cleanup_(recs_done) struct recs recs = { 0 };
	_cleanup_(hset_done) struct hset now_all = { 0 }, now_valid = { 0 }, op = { 0 };
	_cleanup_(said_done) struct said said = { 0 };
	_cleanup_(casets_done) struct casets cas = { 0 };
	bool cas_changed = false;
	struct krl old = { 0 };
	bool have_old = false;
	_cleanup_free_ char *text = NULL;
	size_t text_len = 0;
	int64_t now = (int64_t)in->now;
	char kfield[1100], rec_krl[65], rec_prev[65], cur_sum[65] = "", new_sum[65], operr[512] = "";
	_cleanup_free_ void *out = NULL;
	size_t out_len = 0;
	snprintf(kfield, sizeof(kfield), "FILE=%s/%s", cfg->exec_state_dir, REVOKE_KRL_FILE);
	int r, opr;

	/* What we knew: the records, and the KRL itself. */
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	r = fsx_read_at(statefd, REVOKE_RECORDS_FILE, RECORDS_MAX, &data, &len);
	if (r >= 0)
		r = parse_records(data, len, &recs, rec_krl, rec_prev);
	else
		rec_krl[0] = rec_prev[0] = '\0';
	if (r == -ENOMEM)
		return log_error_errno(r, "Out of memory");
	if (r < 0 && r != -ENOENT)
		log_warning_errno(r, "%s/%s is damaged or unreadable: its entries are kept from %s", cfg->exec_state_dir,
				  REVOKE_RECORDS_FILE, REVOKE_KRL_FILE);
	free(TAKE_PTR(data));
	r = fsx_read_at(statefd, REVOKE_KRL_FILE, KRL_SIZE_MAX, &data, &len);
	if (r >= 0 && len == 0)
		log_debug("%s/%s is empty (as tmpfiles.d creates it): writing the first KRL", cfg->exec_state_dir,
			  REVOKE_KRL_FILE);
	else if (r >= 0) {
		/* Ours: the digest the records name, or (records of 0.1.1 and
		 * before, or lost) one this program's reader takes. Anything
		 * else was changed by someone else (ssh-keygen -k -u, a list
		 * of keys, which sshd reads too) or damaged: it stays as it
		 * is, sshd keeps enforcing it, and nothing is revoked or lifted
		 * until the operator says which revocations to keep. */
		bool ours = rec_krl[0] ? krl_is_ours(data, len, rec_krl, rec_prev) : true;
		r = ours ? krl_read(data, len, &old) : -EBADMSG;
		if (r == -ENOMEM)
			return log_error_errno(r, "Out of memory");
		if (r < 0 && !replace) {
			snprintf(err, err_size,
				 "%s/%s was changed outside cloud-config-exec (by hand, ssh-keygen -k?) or is damaged: left "
				 "as it is, nothing revoked or lifted until resolved; put the keys it should revoke in "
				 "/%s/ and run `cloud-config-exec revoke --replace`",
				 cfg->exec_state_dir, REVOKE_KRL_FILE, REVOKE_OPERATOR_DIR);
			return log_fields_errno(LOG_ERR, -EBADMSG, LOG_FIELDS(kfield), "%s", err);
		}
		if (r < 0)
			log_fields(LOG_WARNING, LOG_FIELDS(kfield),
				   "%s/%s was changed outside cloud-config-exec or is damaged: replaced (--replace) with "
				   "the revocations of the records, the key sources and /%s",
				   cfg->exec_state_dir, REVOKE_KRL_FILE, REVOKE_OPERATOR_DIR);
		have_old = r >= 0;
		if (have_old)
			desired_sha256_hex(data, len, cur_sum);
	} else if (r != -ENOENT)
		log_fields_errno(LOG_WARNING, r, LOG_FIELDS(kfield), "Cannot read %s/%s: rewriting it",
				 cfg->exec_state_dir, REVOKE_KRL_FILE);
	for (size_t i = 0; i < old.n; i++)
		if (!recs_find(&recs, &old.hashes[i]) && (r = recs_add(&recs, &old.hashes[i], R_KEPT, now)) < 0)
			goto oom;

	/* The operator's: a directory that cannot be read lifts none of them. */
	opr = read_operator(rootfd, cfg, &op, operr, sizeof(operr));
	if (opr == -ENOMEM)
		goto oom;
	if (opr < 0) {
		snprintf(err, err_size, "revoked keys of the operator refused: %s", operr);
		log_error("Revoked keys of the operator refused: %s (none of the operator's revocations lifted)", operr);
	}
	for (size_t i = 0; i < op.n; i++)
		if ((r = recs_add(&recs, &op.v[i], R_OPERATOR, now)) < 0)
			goto oom;

	/* What changed. */
	if ((r = managed_now(st, in->now, &now_all, &now_valid)) < 0 || (r = read_sources(cfg, in, &said)) < 0)
		goto oom;
	for (size_t i = 0; i < said.revoked.n; i++)
		if ((r = recs_add(&recs, &said.revoked.v[i], R_EXPLICIT, now)) < 0)
			goto oom;
	for (size_t i = 0; i < n_prev; i++)
		if (!hset_has(&now_all, &prev[i].h) &&
		    (r = recs_add(&recs, &prev[i].h, prev[i].expiry && prev[i].expiry <= in->now ? R_EXPIRED : R_DROPPED,
				  now)) < 0)
			goto oom;
	for (size_t i = 0; i < said.expired.n; i++)
		if (!hset_has(&now_valid, &said.expired.v[i]) &&
		    (r = recs_add(&recs, &said.expired.v[i], R_EXPIRED, now)) < 0)
			goto oom;
	recs_normalise(&recs);

	/* Certificate serials: the previous KRL's, then the documents' new
	 * ones; never lifted (a CA re-granted does not un-revoke a serial). */
	for (size_t i = 0; i < old.n_cas; i++)
		for (size_t j = 0; j < old.cas[i].n; j++)
			if ((r = casets_add(&cas, old.cas[i].ca_key, old.cas[i].ca_key_len, NULL, old.cas[i].serials[j])) ==
			    -ENOMEM)
				goto oom;
	bool full_logged = false;
	for (size_t i = 0; i < said.n_serials; i++) {
		const struct serial_rev *x = &said.serials[i];
		r = casets_add(&cas, x->ca, x->ca_len, x->fp, x->serial);
		if (r == -ENOMEM)
			goto oom;
		char ffield[96], sfield[48];
		snprintf(ffield, sizeof(ffield), "CA_FINGERPRINT=%s", x->fp);
		snprintf(sfield, sizeof(sfield), "CERT_SERIAL=%llu", (unsigned long long)x->serial);
		if (r > 0) {
			cas_changed = true;
			log_fields(LOG_INFO, LOG_FIELDS(ffield, sfield, "REVOKE_REASON=explicit"),
				   "Certificate serial %llu of CA %s revoked (explicit)", (unsigned long long)x->serial,
				   x->fp);
		} else if (r == -E2BIG && !full_logged) {
			full_logged = true;
			log_fields(LOG_ERR, LOG_FIELDS(ffield, sfield),
				   "Certificate serial %llu of CA %s NOT revoked: the KRL holds its maximum of %d serials "
				   "(%d CAs); the earlier revocations are kept", (unsigned long long)x->serial, x->fp,
				   KRL_SERIALS_MAX, KRL_CAS_MAX);
		} else if (r == -EINVAL)
			log_fields(LOG_ERR, LOG_FIELDS(ffield, sfield),
				   "Certificate serial %llu of CA %s NOT revoked: the CA key is larger than %d bytes",
				   (unsigned long long)x->serial, x->fp, KRL_CA_KEY_MAX);
	}

	/* Lifted: re-granted by the control plane as current and valid (not
	 * an explicit or operator revocation), or an operator revocation whose
	 * key left the operator's directory. */
	size_t k = 0;
	for (size_t i = 0; i < recs.n; i++) {
		const struct rec *rc = &recs.v[i];
		if (!reason_sticky(rc->reason) && hset_has(&now_valid, &rc->h) && hset_has(&said.regrant, &rc->h)) {
			log_rec(LOG_NOTICE, rc, "granted again by the control plane: revocation lifted");
			continue;
		}
		if (rc->reason == R_OPERATOR && opr >= 0 && !hset_has(&op, &rc->h)) {
			log_rec(LOG_NOTICE, rc, "no longer in the operator's revoked keys: revocation lifted");
			continue;
		}
		if (reason_sticky(rc->reason) && hset_has(&now_valid, &rc->h))
			log_rec(LOG_WARNING, rc,
				rc->reason == R_EXPLICIT ? "is revoked explicitly but still granted: sshd refuses it"
							 : "is revoked by the operator but still granted: sshd refuses it");
		recs.v[k++] = *rc;
	}
	recs.n = k;

	/* The bound: the oldest revocations go first. */
	if (recs.n > REVOKE_MAX) {
		qsort(recs.v, recs.n, sizeof(*recs.v), rec_since_cmp);
		size_t drop = recs.n - REVOKE_MAX;
		log_warning("More than %d revoked keys: the %zu oldest revocation(s) dropped from the KRL (explicit "
			    "ones last)", REVOKE_MAX, drop);
		memmove(recs.v, recs.v + drop, REVOKE_MAX * sizeof(*recs.v));
		recs.n = REVOKE_MAX;
		qsort(recs.v, recs.n, sizeof(*recs.v), rec_cmp);
	}

	/* The KRL: rewritten only when its set changed (or it is missing or
	 * damaged), with a version one higher. The records go first, naming
	 * the new KRL's digest and the old one's: a crash in between leaves
	 * the old KRL, still known as ours, and records the next run acts on. */
	bool same = have_old && old.n == recs.n && !cas_changed;
	for (size_t i = 0; same && i < recs.n; i++)
		same = memcmp(&old.hashes[i], &recs.v[i].h, KRL_HASH_LEN) == 0;
	if (!same) {
		_cleanup_free_ struct krl_hash *hv = calloc(recs.n + 1, sizeof(*hv));
		if (!hv)
			goto oom;
		for (size_t i = 0; i < recs.n; i++)
			hv[i] = recs.v[i].h;
		r = krl_write_full(hv, recs.n, cas.v, cas.n, have_old ? old.version + 1 : 1, (uint64_t)(now > 0 ? now : 0),
				   "node-agent cloud-config-exec", &out, &out_len);
		if (r < 0)
			goto oom;
		desired_sha256_hex(out, out_len, new_sum);
	} else
		memcpy(new_sum, cur_sum, sizeof(new_sum));
	if ((r = format_records(&recs, new_sum, same ? "" : cur_sum, &text, &text_len)) < 0) {
		krl_done(&old);
		return log_error_errno(r, "Cannot format the revocation records");
	}
	r = fsx_write_atomic_at(statefd, REVOKE_RECORDS_FILE, text, text_len, 0600, 0, 0, FSX_SKIP_IF_SAME);
	if (r < 0) {
		krl_done(&old);
		return log_error_errno(r, "Failed to write %s/%s", cfg->exec_state_dir, REVOKE_RECORDS_FILE);
	}
	if (!same) {
		for (size_t i = 0; i < recs.n; i++)
			if (!krl_contains(&old, &recs.v[i].h))
				log_rec(LOG_INFO, &recs.v[i], "revoked");
		r = fsx_write_atomic_at(statefd, REVOKE_KRL_FILE, out, out_len, 0644, 0, 0, 0);
		if (r < 0) {
			krl_done(&old);
			return log_fields_errno(LOG_ERR, r, LOG_FIELDS(kfield), "Failed to write %s/%s",
						cfg->exec_state_dir, REVOKE_KRL_FILE);
		}
		log_fields(LOG_INFO, LOG_FIELDS(kfield),
			   "%s/%s written: %zu revoked key(s), %zu revoked certificate serial(s), version %" PRIu64,
			   cfg->exec_state_dir, REVOKE_KRL_FILE, recs.n, cas.total,
			   have_old ? old.version + 1 : (uint64_t)1);
		*ret_changed = true;
	}
	krl_done(&old);
	return opr < 0 ? opr : 0;
oom:
	krl_done(&old);
	return log_error_errno(-ENOMEM, "Out of memory");
}

/* ---- where each key comes from ---------------------------------------- */

struct src {
	char user[KEYDOC_USER_MAX + 1];
	char fp[KEYS_FINGERPRINT_MAX];
	char where[200];            /* "gardener-user-authorized-keys current", "<path>[3]", ... */
	time_t until;
	bool ca, revoked;
	char principals[64];        /* shortened, for the status view */
};

struct srcs {
	struct src *v;
	size_t n;
};

static void srcs_done(struct srcs *s)
{
	free(s->v);
	*s = (struct srcs){ 0 };
}

static int srcs_add_doc(struct srcs *s, const struct keydoc *doc, const char *what, bool gardener)
{
	struct src *nv = realloc(s->v, (s->n + doc->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	s->v = nv;
	for (size_t i = 0; i < doc->n; i++) {
		const struct keydoc_entry *e = &doc->entries[i];
		struct src *x = &s->v[s->n++];
		*x = (struct src){ .until = e->key.options.expiry, .ca = e->key.options.cert_authority,
				   .revoked = e->revoked };
		snprintf(x->user, sizeof(x->user), "%s", e->user);
		snprintf(x->fp, sizeof(x->fp), "%s", e->key.fingerprint);
		if (gardener)
			snprintf(x->where, sizeof(x->where), "%s %s", what,
				 i == 0 ? "current" : i == 1 ? "previous" : "older");
		else
			snprintf(x->where, sizeof(x->where), "%s[%zu]", what, i);
		if (e->key.options.principals)
			snprintf(x->principals, sizeof(x->principals), "%s", e->key.options.principals);
	}
	return 0;
}

/* Every key the key sources name (valid or not, refused documents left
 * out), with where it is named. */
static int collect_sources(const struct config *cfg, const struct osc *osc, const char *annotation, struct srcs *ret)
{
	struct keys_parse_params params = { .rsa_min_bits = cfg->rsa_min_bits };
	struct keydoc doc = { 0 };
	int r = 0;
	const struct osc_file *gf = find_file(osc, SSHKEYS_GARDENER_FILE);
	if (gf && keydoc_parse_lines((const char *)gf->content, gf->content_len, cfg->login_user, &params, &doc, NULL,
				     0) >= 0) {
		r = srcs_add_doc(ret, &doc, "gardener-user-authorized-keys", true);
		keydoc_done(&doc);
	}
	const struct osc_file *df = find_file(osc, cfg->key_document_path);
	if (r >= 0 && df && keydoc_parse_json((const char *)df->content, df->content_len, &params, &doc, NULL, 0) >= 0) {
		r = srcs_add_doc(ret, &doc, df->path, false);
		keydoc_done(&doc);
	}
	if (r >= 0 && annotation && cfg->keys_from_node_annotation &&
	    keydoc_parse_json(annotation, strlen(annotation), &params, &doc, NULL, 0) >= 0) {
		r = srcs_add_doc(ret, &doc, "node-annotation", false);
		keydoc_done(&doc);
	}
	return r;
}

/* The first source naming user's key fp (any user for a "*" user). */
static const struct src *find_src(const struct srcs *s, const char *user, const char *fp)
{
	for (size_t i = 0; i < s->n; i++)
		if (!s->v[i].revoked && strcmp(s->v[i].fp, fp) == 0 && strcmp(s->v[i].user, user) == 0)
			return &s->v[i];
	return NULL;
}

/* Attribution: when the snapshot changed, one line per key it serves with
 * where the key comes from, so that sshd's "Accepted publickey ... SHA256:"
 * and authkeys-cmd's FINGERPRINT= + SNAPSHOT_GENERATION= lead to a source
 * (the run's CHECKSUM= line names the OSC). */
static void log_attribution(const struct config *cfg, const struct sshkeys_input *in, const struct state *st)
{
	_cleanup_(srcs_done) struct srcs srcs = { 0 };
	if (collect_sources(cfg, in->osc, in->key_document, &srcs) < 0) {
		log_error_errno(-ENOMEM, "Out of memory");
		return;
	}
	char gfield[64];
	snprintf(gfield, sizeof(gfield), "SNAPSHOT_GENERATION=%llu", (unsigned long long)st->snapshot_generation);
	for (size_t i = 0; i < st->n_users; i++)
		for (size_t j = 0; j < st->users[i].n_keys; j++) {
			const struct state_key *k = &st->users[i].keys[j];
			if (k->expiry && k->expiry <= in->now)
				continue;
			const struct src *x = find_src(&srcs, st->users[i].user, k->fingerprint);
			char ufield[64], ffield[96], sfield[220];
			snprintf(ufield, sizeof(ufield), "USER=%s", st->users[i].user);
			snprintf(ffield, sizeof(ffield), "FINGERPRINT=%s", k->fingerprint);
			snprintf(sfield, sizeof(sfield), "KEY_SOURCE=%s", x ? x->where : "last-good");
			log_fields(LOG_INFO, LOG_FIELDS(ufield, ffield, gfield, sfield),
				   "Key %s of %s in snapshot generation %llu: from %s%s", k->fingerprint,
				   st->users[i].user, (unsigned long long)st->snapshot_generation,
				   x ? x->where : "the last good key set (a source was refused)",
				   x && x->ca ? " (certificate authority)" : "");
		}
}

static void fmt_time(time_t t, char buf[static 64])
{
	status_fmt_time(t, buf, 64);
}

void revoke_print_status(const struct config *cfg, const struct osc *osc, const struct state *st, int statefd,
			 time_t now)
{
	_cleanup_(srcs_done) struct srcs srcs = { 0 };
	char t[64];
	(void)collect_sources(cfg, osc, NULL, &srcs);
	printf("key snapshot: generation %llu\n", (unsigned long long)st->snapshot_generation);
	printf("key sources of the last applied OSC: %zu key(s)\n", srcs.n);
	for (size_t i = 0; i < srcs.n; i++) {
		const struct src *x = &srcs.v[i];
		fmt_time(x->until, t);
		printf("  %s %s %s until %s%s%s%s%s\n", x->where, x->user, x->fp, t,
		       x->until && x->until <= now ? " (expired)" : "", x->ca ? " cert-authority" : "",
		       x->principals[0] ? " principals=" : "", x->principals);
		if (x->revoked)
			printf("    (revoked explicitly)\n");
	}
	for (size_t i = 0; i < st->n_users; i++)
		for (size_t j = 0; j < st->users[i].n_keys; j++) {
			const struct state_key *k = &st->users[i].keys[j];
			const struct src *x = find_src(&srcs, st->users[i].user, k->fingerprint);
			fmt_time(k->expiry, t);
			printf("managed key of %s: %s until %s%s from %s\n", st->users[i].user, k->fingerprint, t,
			       k->expiry && k->expiry <= now ? " (expired)" : "", x ? x->where : "an earlier source");
		}
	for (size_t i = 0; i < st->n_users; i++)
		for (size_t j = 0; j < st->users[i].n_stale; j++)
			printf("dropped key of %s: %s (its authorized_keys could not be rewritten yet; the line goes with "
			       "the next write)\n", st->users[i].user, st->users[i].stale[j].fingerprint);
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	struct krl k = { 0 };
	if (statefd < 0 || fsx_read_at(statefd, REVOKE_KRL_FILE, KRL_SIZE_MAX, &data, &len) < 0) {
		printf("revoked keys: no KRL (%s/%s)\n", cfg->exec_state_dir, REVOKE_KRL_FILE);
		return;
	}
	if (len == 0) {
		/* The package creates it empty (tmpfiles.d), for sshd's
		 * RevokedKeys: nothing revoked yet. */
		printf("revoked keys: none (empty KRL %s/%s)\n", cfg->exec_state_dir, REVOKE_KRL_FILE);
		return;
	}
	if (krl_read(data, len, &k) < 0) {
		printf("revoked keys: %s/%s is damaged\n", cfg->exec_state_dir, REVOKE_KRL_FILE);
		return;
	}
	_cleanup_(recs_done) struct recs recs = { 0 };
	_cleanup_free_ char *rdata = NULL;
	char rk[65], rp[65];
	if (fsx_read_at(statefd, REVOKE_RECORDS_FILE, RECORDS_MAX, &rdata, &len) >= 0)
		(void)parse_records(rdata, len, &recs, rk, rp);
	printf("revoked keys: %zu (KRL version %llu)\n", k.n, (unsigned long long)k.version);
	for (size_t i = 0; i < k.n; i++) {
		char fp[KEYS_FINGERPRINT_MAX];
		fp_of(&k.hashes[i], fp);
		const struct rec *rc = recs_find(&recs, &k.hashes[i]);
		fmt_time(rc ? (time_t)rc->since : 0, t);
		printf("  %s %s since %s\n", fp, rc ? reason_names[rc->reason] : "unknown", t);
	}
	size_t ns = 0;
	for (size_t i = 0; i < k.n_cas; i++)
		ns += k.cas[i].n;
	printf("revoked certificate serials: %zu\n", ns);
	for (size_t i = 0; i < k.n_cas; i++) {
		char fp[KEYS_FINGERPRINT_MAX];
		if (keys_fingerprint(k.cas[i].ca_key, k.cas[i].ca_key_len, fp) < 0)
			snprintf(fp, sizeof(fp), "?");
		for (size_t j = 0; j < k.cas[i].n; j++)
			printf("  CA %s serial %llu\n", fp, (unsigned long long)k.cas[i].serials[j]);
	}
	krl_done(&k);
}

int revoke_keys_step(int rootfd, const char *root, const struct config *cfg, const struct sshkeys_input *in,
		     struct state *st, int statefd, bool *ret_changed, char *err, size_t err_size)
{
	/* Every key managed before the step, for what it drops. */
	size_t n_prev = 0;
	for (size_t i = 0; i < st->n_users; i++)
		n_prev += st->users[i].n_keys;
	_cleanup_free_ struct prev_key *prev = calloc(n_prev + 1, sizeof(*prev));
	if (!prev)
		return log_error_errno(-ENOMEM, "Out of memory");
	n_prev = 0;
	for (size_t i = 0; i < st->n_users; i++)
		for (size_t j = 0; j < st->users[i].n_keys; j++)
			if (krl_hash_from_fingerprint(st->users[i].keys[j].fingerprint, &prev[n_prev].h) >= 0)
				prev[n_prev++].expiry = st->users[i].keys[j].expiry;

	bool changed = false;
	uint64_t generation = st->snapshot_generation;
	int r = sshkeys_apply(rootfd, root, cfg, in, st, statefd, &changed, err, err_size);
	if (st->snapshot_generation != generation)
		log_attribution(cfg, in, st);
	char kerr[SSHKEYS_ERROR_MAX] = "";
	int k = update(rootfd, cfg, in, prev, n_prev, st, statefd, false, &changed, kerr, sizeof(kerr));
	*ret_changed = changed;
	if (r >= 0 && k < 0 && err_size)
		snprintf(err, err_size, "%s%s", kerr[0] ? "" : "the revoked-keys list (KRL) could not be written: ",
			 kerr[0] ? kerr : strerror(-k));
	return r < 0 ? r : k;
}

int revoke_sync(int rootfd, const struct config *cfg, const struct sshkeys_input *in, const struct state *st,
		int statefd, bool replace, bool *ret_changed, char *err, size_t err_size)
{
	bool changed = false;
	int r = update(rootfd, cfg, in, NULL, 0, st, statefd, replace, &changed, err, err_size);
	*ret_changed = changed;
	if (r < 0 && err_size && !err[0])
		snprintf(err, err_size, "the revoked-keys list (KRL) could not be written: %s", strerror(-r));
	return r;
}
