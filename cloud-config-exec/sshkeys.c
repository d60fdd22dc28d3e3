/* The keys step; see sshkeys.h. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "account.h"
#include "cleanup.h"
#include "fsx.h"
#include "home.h"
#include "keymerge.h"
#include "keys.h"
#include "log.h"
#include "snapshot.h"
#include "sshkeys.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(cJSON *, cJSON_Delete)

/* The keys wanted for one user. */
struct want {
	char *user;
	struct state_key *keys;
	size_t n;
};

struct wants {
	struct want *v;
	size_t n;
};

static void wants_done(struct wants *w)
{
	for (size_t i = 0; i < w->n; i++) {
		for (size_t j = 0; j < w->v[i].n; j++) {
			free(w->v[i].keys[j].fingerprint);
			free(w->v[i].keys[j].line);
		}
		free(w->v[i].keys);
		free(w->v[i].user);
	}
	free(w->v);
	*w = (struct wants){ 0 };
}

static struct want *wants_get(struct wants *w, const char *user, bool create)
{
	for (size_t i = 0; i < w->n; i++)
		if (strcmp(w->v[i].user, user) == 0)
			return &w->v[i];
	if (!create)
		return NULL;
	struct want *nv = realloc(w->v, (w->n + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	w->v = nv;
	struct want *x = &w->v[w->n];
	*x = (struct want){ .user = strdup(user) };
	if (!x->user)
		return NULL;
	w->n++;
	return x;
}

/* Adds key (rendered with expiry) for user; a fingerprint given twice keeps
 * the later expiry (0 = none wins). */
static int wants_add(struct wants *w, const char *user, struct keys_key *key, time_t expiry)
{
	struct want *x = wants_get(w, user, true);
	if (!x)
		return -ENOMEM;
	for (size_t i = 0; i < x->n; i++)
		if (strcmp(x->keys[i].fingerprint, key->fingerprint) == 0) {
			if (x->keys[i].expiry == 0 || (expiry != 0 && expiry <= x->keys[i].expiry))
				return 0;
			free(x->keys[i].line);
			key->options.expiry = expiry;
			x->keys[i].line = keys_render_line(key);
			x->keys[i].expiry = expiry;
			return x->keys[i].line ? 0 : -ENOMEM;
		}
	if (x->n >= SSHKEYS_PER_USER_MAX)
		return -E2BIG;
	struct state_key *nk = realloc(x->keys, (x->n + 1) * sizeof(*nk));
	if (!nk)
		return -ENOMEM;
	x->keys = nk;
	key->options.expiry = expiry;
	nk[x->n] = (struct state_key){ .fingerprint = strdup(key->fingerprint), .line = keys_render_line(key),
				       .expiry = expiry };
	if (!nk[x->n].fingerprint || !nk[x->n].line) {
		free(nk[x->n].fingerprint);
		free(nk[x->n].line);
		return -ENOMEM;
	}
	x->n++;
	return 0;
}

static const struct osc_file *find_osc_file(const struct osc *osc, const char *path)
{
	for (size_t i = 0; osc && i < osc->n_files; i++)
		if (strcmp(osc->files[i].path, path) == 0)
			return &osc->files[i];
	return NULL;
}

/* Gardener's file: one bare public key a line. Bad lines are logged and
 * skipped (the other keys still apply). */
static int collect_gardener_file(const struct osc_file *f, const struct config *cfg, struct wants *w)
{
	const char *p = (const char *)f->content, *end = p + f->content_len;
	struct keys_parse_params params = { .rsa_min_bits = cfg->rsa_min_bits };
	unsigned lineno = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		size_t len = (size_t)(e - p);
		lineno++;
		while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len > 0 && p[0] != '#') {
			struct keys_key key = { 0 };
			const char *what = NULL;
			int r = keys_parse_public(p, len, &params, &key, &what);
			if (r < 0) {
				char ffield[128];
				snprintf(ffield, sizeof(ffield), "FILE=%s", SSHKEYS_GARDENER_FILE);
				log_fields_errno(LOG_WARNING, r, LOG_FIELDS(ffield), "%s:%u: key rejected (%s), skipped",
						 SSHKEYS_GARDENER_FILE, lineno, what ? what : "invalid");
			} else {
				r = wants_add(w, cfg->login_user, &key, 0);
				keys_key_done(&key);
				if (r < 0)
					return r;
			}
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/* "2026-11-21T18:00:00Z" (RFC 3339, UTC or with an offset), or seconds. */
static int parse_until(const cJSON *u, time_t *ret)
{
	if (!u || cJSON_IsNull(u)) {
		*ret = 0;
		return 0;
	}
	if (cJSON_IsNumber(u)) {
		if (u->valuedouble < 1 || u->valuedouble > 253402300799.0)
			return -EINVAL;
		*ret = (time_t)u->valuedouble;
		return 0;
	}
	if (!cJSON_IsString(u))
		return -EINVAL;
	struct tm tm = { 0 };
	const char *rest = strptime(u->valuestring, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!rest)
		return -EINVAL;
	if (*rest == '.') /* fractional seconds: ignored */
		for (rest++; *rest >= '0' && *rest <= '9'; rest++)
			;
	long off = 0;
	if (*rest == 'Z' || *rest == 'z')
		rest++;
	else if ((*rest == '+' || *rest == '-') && strlen(rest) == 6 && rest[3] == ':') {
		long h = (rest[1] - '0') * 10 + (rest[2] - '0'), m = (rest[4] - '0') * 10 + (rest[5] - '0');
		if (h > 23 || m > 59)
			return -EINVAL;
		off = (h * 60 + m) * 60 * (*rest == '-' ? -1 : 1);
		rest += 6;
	} else
		return -EINVAL;
	if (*rest)
		return -EINVAL;
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -EINVAL;
	*ret = t - off;
	return 0;
}

/* The expiring-key document: a JSON list of {user, type, publicKey,
 * comment, until}. A malformed document is refused whole; a bad entry is
 * logged and skipped. */
static int collect_document(const char *what, const char *data, size_t len, const struct config *cfg,
			    struct wants *w)
{
	if (len > SSHKEYS_DOCUMENT_MAX)
		return log_error_errno(-EMSGSIZE, "Key document %s is larger than %u bytes, ignored", what,
				       SSHKEYS_DOCUMENT_MAX);
	_cleanup_(cJSON_Deletep) cJSON *doc = cJSON_ParseWithLength(data, len);
	const cJSON *list = doc;
	if (cJSON_IsObject(doc)) /* {"keys": [...]} is accepted as well */
		list = cJSON_GetObjectItemCaseSensitive(doc, "keys");
	if (!cJSON_IsArray(list))
		return log_error_errno(-EINVAL, "Key document %s is not a JSON list of keys, ignored", what);
	struct keys_parse_params params = { .rsa_min_bits = cfg->rsa_min_bits };
	unsigned idx = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, list) {
		const cJSON *user = cJSON_GetObjectItemCaseSensitive(e, "user");
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "type");
		const cJSON *pk = cJSON_GetObjectItemCaseSensitive(e, "publicKey");
		const cJSON *comment = cJSON_GetObjectItemCaseSensitive(e, "comment");
		time_t until = 0;
		unsigned i = idx++;
		if (!cJSON_IsString(user) || !cJSON_IsString(pk) || (type && !cJSON_IsString(type)) ||
		    (comment && !cJSON_IsNull(comment) && !cJSON_IsString(comment))) {
			log_warning("Key document %s: entry %u: missing or mistyped user/type/publicKey, skipped", what, i);
			continue;
		}
		if (!account_name_is_valid(user->valuestring)) {
			log_warning("Key document %s: entry %u: invalid user name, skipped", what, i);
			continue;
		}
		if (parse_until(cJSON_GetObjectItemCaseSensitive(e, "until"), &until) < 0) {
			log_warning("Key document %s: entry %u: invalid 'until', skipped", what, i);
			continue;
		}
		_cleanup_free_ char *text = NULL;
		bool has_type = type && *type->valuestring;
		bool has_comment = cJSON_IsString(comment) && *comment->valuestring;
		if (asprintf(&text, "%s%s%s%s%s", has_type ? type->valuestring : "", has_type ? " " : "",
			     pk->valuestring, has_comment ? " " : "", has_comment ? comment->valuestring : "") < 0)
			return -ENOMEM;
		struct keys_key key = { 0 };
		const char *why = NULL;
		int r = keys_parse_public(text, strlen(text), &params, &key, &why);
		if (r < 0) {
			char ufield[64];
			snprintf(ufield, sizeof(ufield), "USER=%s", user->valuestring);
			log_fields_errno(LOG_WARNING, r, LOG_FIELDS(ufield),
					 "Key document %s: entry %u: key rejected (%s), skipped", what, i,
					 why ? why : "invalid");
			continue;
		}
		r = wants_add(w, user->valuestring, &key, until);
		keys_key_done(&key);
		if (r == -E2BIG)
			log_warning("Key document %s: more than %u keys for one user, the rest skipped", what,
				    SSHKEYS_PER_USER_MAX);
		else if (r < 0)
			return r;
	}
	return 0;
}

static void log_changes(const char *user, const struct state_user *prev, const struct keymerge_result *m,
			const struct want *want, time_t now)
{
	char ufield[64];
	snprintf(ufield, sizeof(ufield), "USER=%s", user);
	for (size_t i = 0; i < m->n_managed; i++) {
		bool had = false;
		for (size_t j = 0; prev && j < prev->n_keys && !had; j++)
			had = strcmp(prev->keys[j].fingerprint, m->managed[i].fingerprint) == 0;
		if (!had) {
			char ffield[96];
			snprintf(ffield, sizeof(ffield), "FINGERPRINT=%s", m->managed[i].fingerprint);
			log_fields(LOG_INFO, LOG_FIELDS(ufield, ffield), "Key %s added for %s", m->managed[i].fingerprint,
				   user);
		}
	}
	for (size_t j = 0; prev && j < prev->n_keys; j++) {
		bool kept = false;
		for (size_t i = 0; i < m->n_managed && !kept; i++)
			kept = strcmp(prev->keys[j].fingerprint, m->managed[i].fingerprint) == 0;
		if (kept)
			continue;
		char ffield[96];
		snprintf(ffield, sizeof(ffield), "FINGERPRINT=%s", prev->keys[j].fingerprint);
		bool exp = prev->keys[j].expiry && prev->keys[j].expiry <= now;
		log_fields(LOG_INFO, LOG_FIELDS(ufield, ffield), exp ? "Key %s of %s expired, dropped" : "Key %s of %s dropped",
			   prev->keys[j].fingerprint, user);
	}
	for (size_t j = 0; want && j < want->n; j++)
		if (want->keys[j].expiry && want->keys[j].expiry <= now) {
			char ffield[96];
			snprintf(ffield, sizeof(ffield), "FINGERPRINT=%s", want->keys[j].fingerprint);
			log_fields(LOG_DEBUG, LOG_FIELDS(ufield, ffield), "Key %s of %s has expired, not applied",
				   want->keys[j].fingerprint, user);
		}
	if (m->refused)
		log_fields(LOG_ERR, LOG_FIELDS(ufield),
			   "Refusing the new key set of %s: %zu valid key(s) where %zu were in force (an empty or "
			   "drastically shrunk set needs sshAccess=false in the desired state); keeping the last good keys",
			   user, want ? want->n : (size_t)0, prev ? prev->n_keys : (size_t)0);
}

/* The login user's authorized_keys. Returns 1 written, 0 unchanged, -errno
 * on refusal (logged by home.c). On success st's managed set is updated. */
static int apply_login_user(int rootfd, const struct config *cfg, const struct account *acct,
			    const struct want *want, const struct sshkeys_input *in, struct state *st,
			    struct keymerge_result *ret)
{
	_cleanup_close_ int sshfd = home_open_ssh(rootfd, acct);
	if (sshfd < 0)
		return sshfd;
	_cleanup_free_ char *old = NULL;
	size_t old_len = 0;
	const char *ignored = NULL;
	int r = home_read_keys(sshfd, acct, &old, &old_len, &ignored);
	if (r < 0)
		return r;
	char ufield[64];
	snprintf(ufield, sizeof(ufield), "USER=%s", acct->name);
	if (ignored)
		log_fields(LOG_WARNING, LOG_FIELDS(ufield),
			   "~%s/.ssh/authorized_keys is %s: not read, replaced by a regular file", acct->name, ignored);

	_cleanup_free_ struct keymerge_line *lines = NULL;
	int n = keymerge_split(old, old_len, &lines);
	if (n < 0)
		return n;
	struct keys_parse_params params = { .rsa_min_bits = 1024, .allow_options = true };
	struct keys_key *parsed = calloc((size_t)n + 1, sizeof(*parsed));
	if (!parsed)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		if (keys_parse_line(lines[i].text, lines[i].len, &params, &parsed[i], NULL) == 0)
			lines[i].fingerprint = parsed[i].fingerprint;

	struct keymerge_params mp = { .exclusive = cfg->keys_exclusive, .ssh_access = in->ssh_access,
				      .max_shrink = cfg->max_key_shrink, .now = in->now };
	const struct state_user *prev = state_find_user(st, acct->name);
	struct keymerge_result m = { 0 };
	r = keymerge_compute(lines, (size_t)n, prev, want ? want->keys : NULL, want ? want->n : 0, &mp, &m);
	for (int i = 0; i < n; i++)
		keys_key_done(&parsed[i]);
	free(parsed);
	if (r < 0)
		return r;
	log_changes(acct->name, prev, &m, want, in->now);
	r = home_write_keys(sshfd, acct, m.content, m.len);
	if (r < 0) {
		keymerge_result_done(&m);
		return r;
	}
	if (r > 0)
		log_fields(LOG_INFO, LOG_FIELDS(ufield),
			   "~%s/.ssh/authorized_keys written: %zu managed key(s), %u other line(s) kept%s", acct->name,
			   m.n_managed, m.unmanaged_kept, cfg->keys_exclusive ? " (exclusive)" : "");
	else
		log_fields(LOG_DEBUG, LOG_FIELDS(ufield), "~%s/.ssh/authorized_keys unchanged", acct->name);
	int k = state_set_user(st, acct->name, m.managed, m.n_managed);
	if (k < 0) {
		keymerge_result_done(&m);
		return k;
	}
	*ret = m;
	return r;
}

static int append_entries(struct snapshot_entry **v, size_t *n, const char *user, const struct state_key *keys,
			  size_t nk)
{
	struct snapshot_entry *nv = realloc(*v, (*n + nk + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	for (size_t i = 0; i < nk; i++)
		nv[(*n)++] = (struct snapshot_entry){ .user = user, .fingerprint = keys[i].fingerprint,
						       .line = keys[i].line, .expiry = keys[i].expiry };
	return 0;
}

static int write_snapshot(int rootfd, const struct config *cfg, const struct snapshot_entry *e, size_t n,
			  struct state *st, time_t now, bool *ret_changed)
{
	/* Digest of the entries: an unchanged set rebuilds byte-identical. */
	size_t total = 1;
	for (size_t i = 0; i < n; i++)
		total += strlen(e[i].user) + strlen(e[i].fingerprint) + strlen(e[i].line) + 24;
	_cleanup_free_ char *buf = malloc(total);
	if (!buf)
		return -ENOMEM;
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		int k = snprintf(buf + off, total - off, "%s\n%s\n%s\n%lld\n", e[i].user, e[i].fingerprint, e[i].line,
				 (long long)e[i].expiry);
		if (k < 0 || (size_t)k >= total - off)
			return -EINVAL;
		off += (size_t)k;
	}
	char digest[65];
	state_sha256_hex(buf, off, digest);
	if (strcmp(digest, st->snapshot_digest) != 0) {
		memcpy(st->snapshot_digest, digest, 65);
		st->snapshot_generation++;
		st->snapshot_created_at = (int64_t)now;
	}

	_cleanup_free_ void *snap = NULL;
	size_t size, bad = 0;
	int r = snapshot_build(e, n, st->snapshot_generation, st->snapshot_created_at, &snap, &size, &bad);
	if (r < 0)
		return log_error_errno(r, "Cannot build the key snapshot (entry %zu: user %s)", bad,
				       bad < n ? e[bad].user : "?");
	char ffield[1100];
	snprintf(ffield, sizeof(ffield), "FILE=%s", cfg->snapshot_path);
	const char *name;
	_cleanup_close_ int dfd = fsx_open_parent_at(rootfd, cfg->snapshot_path, FSX_MKDIR, 0755, &name);
	if (dfd < 0)
		return log_fields_errno(LOG_ERR, dfd, LOG_FIELDS(ffield), "Cannot open the directory of %s",
					cfg->snapshot_path);
	r = fsx_write_atomic_at(dfd, name, snap, size, 0644, 0, 0, FSX_SKIP_IF_SAME);
	if (r < 0)
		return log_fields_errno(LOG_ERR, r, LOG_FIELDS(ffield), "Failed to write the key snapshot %s",
					cfg->snapshot_path);
	if (r > 0) {
		log_fields(LOG_INFO, LOG_FIELDS(ffield), "Key snapshot %s written: %zu key(s), generation %llu",
			   cfg->snapshot_path, n, (unsigned long long)st->snapshot_generation);
		*ret_changed = true;
	}
	return 0;
}

int sshkeys_apply(int rootfd, const char *root, const struct config *cfg, const struct sshkeys_input *in,
		  struct state *st, int statefd, bool *ret_changed)
{
	_cleanup_(wants_done) struct wants w = { 0 };
	bool changed = false, have_source = false;
	int r, ret = 0;

	const struct osc_file *gf = find_osc_file(in->osc, SSHKEYS_GARDENER_FILE);
	if (gf) {
		have_source = true;
		if (!wants_get(&w, cfg->login_user, true))
			return log_error_errno(-ENOMEM, "Out of memory");
		if ((r = collect_gardener_file(gf, cfg, &w)) < 0)
			return log_error_errno(r, "Cannot collect the keys of %s", SSHKEYS_GARDENER_FILE);
	}
	const struct osc_file *df = cfg->key_document_path ? find_osc_file(in->osc, cfg->key_document_path) : NULL;
	if (df) {
		have_source = true;
		if (!wants_get(&w, cfg->login_user, true))
			return log_error_errno(-ENOMEM, "Out of memory");
		(void)collect_document(df->path, (const char *)df->content, df->content_len, cfg, &w);
	}
	if (in->key_document && cfg->keys_from_node_annotation) {
		have_source = true;
		if (!wants_get(&w, cfg->login_user, true))
			return log_error_errno(-ENOMEM, "Out of memory");
		(void)collect_document("from the Node annotation", in->key_document, strlen(in->key_document), cfg,
				       &w);
	}
	if (!have_source && st->n_users == 0 && !st->snapshot_digest[0])
		return 0; /* no key sources now or ever: nothing to manage */

	_cleanup_free_ struct snapshot_entry *entries = NULL;
	size_t n_entries = 0;

	/* The login user. */
	const char *login = cfg->login_user;
	const struct want *lw = wants_get(&w, login, false);
	const struct state_user *lprev = state_find_user(st, login);
	char ufield[64];
	snprintf(ufield, sizeof(ufield), "USER=%s", login);
	_cleanup_(account_done) struct account acct = { 0 };
	r = account_name_is_valid(login) ? account_lookup(rootfd, login, &acct) : -EINVAL;
	if (r == -EINVAL)
		return log_fields_errno(LOG_ERR, r, LOG_FIELDS(ufield), "Invalid login user name '%s'", login);
	if (r == -ENOENT) {
		log_warning("No /etc/passwd below the root: no login user, keys only in the snapshot");
		r = 0;
	} else if (r < 0)
		return log_error_errno(r, "Cannot read /etc/passwd");
	else if (r == 0 && lw && lw->n > 0 && in->ssh_access && cfg->create_user) {
		if ((r = account_create(root, login)) < 0)
			return r;
		changed = true;
		r = account_lookup(rootfd, login, &acct);
		if (r <= 0)
			return log_fields_errno(LOG_ERR, r < 0 ? r : -ESRCH, LOG_FIELDS(ufield),
						"User %s still missing after useradd", login);
	}
	if (r == 0) {
		if (lw && lw->n > 0)
			log_fields(LOG_WARNING, LOG_FIELDS(ufield), "Login user %s does not exist%s: its keys are not applied",
				   login, cfg->create_user ? "" : " (ssh.createUser is off)");
	} else {
		if (lw && lw->n > 0 && in->ssh_access && (r = account_sudoers(rootfd, login, cfg->sudoers)) > 0)
			changed = true;
		struct keymerge_result m = { 0 };
		r = apply_login_user(rootfd, cfg, &acct, lw, in, st, &m);
		if (r > 0)
			changed = true;
		if (r >= 0)
			keymerge_result_done(&m);
		else if (r == -ENOMEM)
			return log_error_errno(r, "Out of memory");
		else {
			/* The home refused the write (logged): the keys still go to
			 * the snapshot, so authkeys-cmd serves them. */
			struct keymerge_params mp = { .ssh_access = in->ssh_access, .max_shrink = cfg->max_key_shrink,
						      .now = in->now, .exclusive = true };
			r = keymerge_compute(NULL, 0, lprev, lw ? lw->keys : NULL, lw ? lw->n : 0, &mp, &m);
			if (r < 0)
				return log_error_errno(r, "Out of memory");
			log_changes(login, lprev, &m, lw, in->now);
			r = state_set_user(st, login, m.managed, m.n_managed);
			keymerge_result_done(&m);
			if (r < 0)
				return log_error_errno(r, "Out of memory");
		}
	}

	/* Other users: snapshot only. */
	for (size_t i = 0; i < w.n; i++) {
		const char *user = w.v[i].user;
		if (strcmp(user, login) == 0)
			continue;
		char uf[64];
		snprintf(uf, sizeof(uf), "USER=%s", user);
		if (strcmp(user, "root") == 0 && !cfg->allow_root) {
			log_fields(LOG_WARNING, LOG_FIELDS(uf), "Keys for root ignored (ssh.allowRoot is off)");
			continue;
		}
		_cleanup_(account_done) struct account other = { 0 };
		r = account_lookup(rootfd, user, &other);
		if (r <= 0) {
			log_fields(LOG_NOTICE, LOG_FIELDS(uf), "Keys for %s ignored: no such local user", user);
			continue;
		}
		struct keymerge_params mp = { .ssh_access = in->ssh_access, .max_shrink = cfg->max_key_shrink,
					      .now = in->now, .exclusive = true };
		const struct state_user *prev = state_find_user(st, user);
		struct keymerge_result m = { 0 };
		r = keymerge_compute(NULL, 0, prev, w.v[i].keys, w.v[i].n, &mp, &m);
		if (r < 0)
			return log_error_errno(r, "Out of memory");
		log_changes(user, prev, &m, &w.v[i], in->now);
		r = state_set_user(st, user, m.managed, m.n_managed);
		keymerge_result_done(&m);
		if (r < 0)
			return log_error_errno(r, "Out of memory");
	}
	/* Users we managed before and no source names now: the shrink guard
	 * decides (all their keys going away is a shrink to zero). */
	for (size_t i = 0; i < st->n_users; i++) {
		const char *user = st->users[i].user;
		if (strcmp(user, login) == 0 || wants_get(&w, user, false))
			continue;
		struct keymerge_params mp = { .ssh_access = in->ssh_access, .max_shrink = cfg->max_key_shrink,
					      .now = in->now, .exclusive = true };
		struct keymerge_result m = { 0 };
		r = keymerge_compute(NULL, 0, &st->users[i], NULL, 0, &mp, &m);
		if (r < 0)
			return log_error_errno(r, "Out of memory");
		log_changes(user, &st->users[i], &m, NULL, in->now);
		r = state_set_user(st, user, m.managed, m.n_managed);
		keymerge_result_done(&m);
		if (r < 0)
			return log_error_errno(r, "Out of memory");
	}

	/* The snapshot: every user's keys in force, expired ones left out. */
	for (size_t i = 0; i < st->n_users; i++) {
		const struct state_user *u = &st->users[i];
		if (strcmp(u->user, "root") == 0 && !cfg->allow_root)
			continue;
		for (size_t j = 0; j < u->n_keys; j++) {
			if (u->keys[j].expiry && u->keys[j].expiry <= in->now)
				continue;
			if ((r = append_entries(&entries, &n_entries, u->user, &u->keys[j], 1)) < 0)
				return log_error_errno(r, "Out of memory");
		}
	}
	r = write_snapshot(rootfd, cfg, entries, n_entries, st, in->now, &changed);
	if (r < 0)
		ret = r;
	int k = state_save(statefd, st);
	if (k < 0 && ret == 0)
		ret = log_error_errno(k, "Failed to save %s", STATE_FILE);
	*ret_changed = changed;
	return ret;
}
