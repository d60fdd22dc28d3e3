/* Revocation that sticks; see revoke.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "b64.h"
#include "cleanup.h"
#include "fsx.h"
#include "keydoc.h"
#include "krl.h"
#include "log.h"
#include "revoke.h"
#include "status.h"

#define RECORDS_HEADER "# cloud-config-exec revocations v1\n"
#define RECORDS_MAX ((size_t)(REVOKE_MAX + 1) * 101 + sizeof(RECORDS_HEADER))

enum reason { R_EXPLICIT, R_DROPPED, R_EXPIRED, R_KEPT, _R_MAX };
static const char *const reason_names[_R_MAX] = { "explicit", "dropped", "expired", "kept" };

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

/* Eviction order: explicit revocations last, then the oldest first. */
static int rec_since_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if ((x->reason == R_EXPLICIT) != (y->reason == R_EXPLICIT))
		return x->reason == R_EXPLICIT ? 1 : -1;
	if (x->since != y->since)
		return x->since < y->since ? -1 : 1;
	return rec_cmp(a, b);
}

/* Sorted by hash, one record a hash: explicit wins over every other
 * reason, and the earliest time is kept. */
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
		if (r->v[i].reason == R_EXPLICIT)
			last->reason = R_EXPLICIT;
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

static int parse_records(const char *data, size_t len, struct recs *ret)
{
	size_t hl = strlen(RECORDS_HEADER);
	if (len < hl || memcmp(data, RECORDS_HEADER, hl) != 0)
		return -EBADMSG;
	struct recs r = { 0 };
	const char *p = data + hl, *end = data + len;
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
	return -EBADMSG;
}

static int format_records(const struct recs *r, char **ret, size_t *ret_len)
{
	size_t cap = strlen(RECORDS_HEADER) + r->n * 90 + 1, off = 0;
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	off = (size_t)snprintf(buf, cap, "%s", RECORDS_HEADER);
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

static int update(const struct config *cfg, const struct sshkeys_input *in, const struct prev_key *prev,
		  size_t n_prev, const struct state *st, int statefd, bool *ret_changed)
{
	_cleanup_(recs_done) struct recs recs = { 0 };
	_cleanup_(hset_done) struct hset now_all = { 0 }, now_valid = { 0 };
	_cleanup_(said_done) struct said said = { 0 };
	_cleanup_(casets_done) struct casets cas = { 0 };
	bool cas_changed = false;
	struct krl old = { 0 };
	bool have_old = false;
	_cleanup_free_ char *text = NULL;
	size_t text_len = 0;
	int64_t now = (int64_t)in->now;
	char kfield[1100];
	snprintf(kfield, sizeof(kfield), "FILE=%s/%s", cfg->exec_state_dir, REVOKE_KRL_FILE);
	int r;

	/* What we knew: the records, and the KRL itself. */
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	r = fsx_read_at(statefd, REVOKE_RECORDS_FILE, RECORDS_MAX, &data, &len);
	if (r >= 0)
		r = parse_records(data, len, &recs);
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
		r = krl_read(data, len, &old);
		if (r == -ENOMEM)
			return log_error_errno(r, "Out of memory");
		if (r < 0)
			log_fields_errno(LOG_ERR, r, LOG_FIELDS(kfield),
					 "%s/%s is not a KRL this program wrote (sshd may refuse every key): rewriting it",
					 cfg->exec_state_dir, REVOKE_KRL_FILE);
		have_old = r >= 0;
	} else if (r != -ENOENT)
		log_fields_errno(LOG_WARNING, r, LOG_FIELDS(kfield), "Cannot read %s/%s: rewriting it",
				 cfg->exec_state_dir, REVOKE_KRL_FILE);
	for (size_t i = 0; i < old.n; i++)
		if (!recs_find(&recs, &old.hashes[i]) && (r = recs_add(&recs, &old.hashes[i], R_KEPT, now)) < 0)
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

	/* Lifted: re-granted by the control plane as current and valid. */
	size_t k = 0;
	for (size_t i = 0; i < recs.n; i++) {
		const struct rec *rc = &recs.v[i];
		if (rc->reason != R_EXPLICIT && hset_has(&now_valid, &rc->h) && hset_has(&said.regrant, &rc->h)) {
			log_rec(LOG_NOTICE, rc, "granted again by the control plane: revocation lifted");
			continue;
		}
		if (rc->reason == R_EXPLICIT && hset_has(&now_valid, &rc->h))
			log_rec(LOG_WARNING, rc, "is revoked explicitly but still granted: sshd refuses it");
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
	 * damaged), with a version one higher. */
	bool same = have_old && old.n == recs.n && !cas_changed;
	for (size_t i = 0; same && i < recs.n; i++)
		same = memcmp(&old.hashes[i], &recs.v[i].h, KRL_HASH_LEN) == 0;
	if (!same) {
		for (size_t i = 0; i < recs.n; i++)
			if (!krl_contains(&old, &recs.v[i].h))
				log_rec(LOG_INFO, &recs.v[i], "revoked");
		_cleanup_free_ struct krl_hash *hv = calloc(recs.n + 1, sizeof(*hv));
		if (!hv)
			goto oom;
		for (size_t i = 0; i < recs.n; i++)
			hv[i] = recs.v[i].h;
		_cleanup_free_ void *out = NULL;
		size_t out_len = 0;
		r = krl_write_full(hv, recs.n, cas.v, cas.n, have_old ? old.version + 1 : 1, (uint64_t)(now > 0 ? now : 0),
				   "node-agent cloud-config-exec", &out, &out_len);
		if (r < 0)
			goto oom;
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

	/* The records, after the KRL: a crash in between leaves hashes
	 * without a record, which the next run keeps ("kept"). */
	if ((r = format_records(&recs, &text, &text_len)) < 0)
		return log_error_errno(r, "Cannot format the revocation records");
	r = fsx_write_atomic_at(statefd, REVOKE_RECORDS_FILE, text, text_len, 0600, 0, 0, FSX_SKIP_IF_SAME);
	if (r < 0)
		return log_error_errno(r, "Failed to write %s/%s", cfg->exec_state_dir, REVOKE_RECORDS_FILE);
	return 0;
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
	if (fsx_read_at(statefd, REVOKE_RECORDS_FILE, RECORDS_MAX, &rdata, &len) >= 0)
		(void)parse_records(rdata, len, &recs);
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
	int k = update(cfg, in, prev, n_prev, st, statefd, &changed);
	*ret_changed = changed;
	if (r >= 0 && k < 0 && err_size)
		snprintf(err, err_size, "the revoked-keys list (KRL) could not be written: %s", strerror(-k));
	return r < 0 ? r : k;
}
