/* The keys step; see sshkeys.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "account.h"
#include "cleanup.h"
#include "desired.h"
#include "fsx.h"
#include "home.h"
#include "keymerge.h"
#include "keydoc.h"
#include "keys.h"
#include "log.h"
#include "snapshot.h"
#include "sshkeys.h"

/* The keys wanted for one user. */
struct want {
	char *user;
	struct state_key *keys;
	char **sources;        /* parallel to keys: where each key comes from (snapshot.h source) */
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
			if (w->v[i].sources)
				free(w->v[i].sources[j]);
		}
		free(w->v[i].keys);
		free(w->v[i].sources);
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

/* Adds key (rendered with expiry) for user, from source (copied); a
 * fingerprint given twice keeps the later expiry (0 = none wins) and the
 * source of the entry that gave it. */
static int wants_add(struct wants *w, const char *user, struct keys_key *key, time_t expiry, const char *source)
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
			char *src = strdup(source);
			if (!src)
				return -ENOMEM;
			free(x->sources[i]);
			x->sources[i] = src;
			return x->keys[i].line ? 0 : -ENOMEM;
		}
	if (x->n >= SSHKEYS_PER_USER_MAX)
		return -E2BIG;
	struct state_key *nk = realloc(x->keys, (x->n + 1) * sizeof(*nk));
	if (!nk)
		return -ENOMEM;
	x->keys = nk;
	char **ns = realloc(x->sources, (x->n + 1) * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	x->sources = ns;
	key->options.expiry = expiry;
	nk[x->n] = (struct state_key){ .fingerprint = strdup(key->fingerprint), .line = keys_render_line(key),
				       .expiry = expiry };
	ns[x->n] = strdup(source);
	if (!nk[x->n].fingerprint || !nk[x->n].line || !ns[x->n]) {
		free(nk[x->n].fingerprint);
		free(nk[x->n].line);
		free(ns[x->n]);
		return -ENOMEM;
	}
	x->n++;
	return 0;
}

/* The source of want's key fp, or NULL. */
static const char *want_source(const struct want *x, const char *fp)
{
	for (size_t i = 0; x && x->sources && i < x->n; i++)
		if (strcmp(x->keys[i].fingerprint, fp) == 0)
			return x->sources[i];
	return NULL;
}

/* Where a key comes from, as the snapshot stores it and authkeys-cmd logs
 * it (KEY_SOURCE=): "osc=<sha256 of the OSC: the Secret's checksum/data-
 * script> secret=<namespace>/<name> entry=<what>" for a key carried by the
 * OSC, "entry=node-annotation[i]" for the Node annotation's document. The
 * Secret is the configured one (config.h secretNamespace/secretName). */
static void format_source(char *buf, size_t size, const struct config *cfg, const struct sshkeys_input *in,
			  const char *entry, bool from_osc)
{
	if (from_osc)
		snprintf(buf, size, "osc=%s secret=%s/%s entry=%s", in->osc_checksum ? in->osc_checksum : "-",
			 cfg->secret_namespace ? cfg->secret_namespace : "-", cfg->secret_name ? cfg->secret_name : "-",
			 entry);
	else
		snprintf(buf, size, "entry=%s", entry);
	/* The snapshot refuses control bytes in a source (it goes into a
	 * journal field as it is): none can come from the validated config and
	 * OSC paths, but a refused snapshot would fail the whole keys step. */
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static const struct osc_file *find_osc_file(const struct osc *osc, const char *path)
{
	for (size_t i = 0; osc && i < osc->n_files; i++)
		if (strcmp(osc->files[i].path, path) == 0)
			return &osc->files[i];
	return NULL;
}

/* A key source given as an image file (content.imageRef) or as a file from
 * a Secret (content.secretRef) has no bytes from the OSC itself: it is
 * refused (logged), not read as an empty key list. */
static int refuse_image_source(const struct osc_file *f, char *why, size_t why_size)
{
	const char *from = f->source == OSC_SOURCE_IMAGE ? "image" : "Secret";
	const char *what = f->source == OSC_SOURCE_IMAGE ? f->image : f->secret_name;
	snprintf(why, why_size, "key source %s rejected: it comes from %s '%s'", f->path, from, what);
	char ffield[1100];
	snprintf(ffield, sizeof(ffield), "FILE=%s", f->path);
	return log_fields_errno(LOG_ERR, -EINVAL, LOG_FIELDS(ffield),
				"Key source %s rejected: it comes from %s '%s', whose files are not key sources here",
				f->path, from, what);
}

enum doc_kind { DOC_GARDENER, DOC_OSC, DOC_ANNOTATION };

/* Adds every entry of a parsed document; a user whose name keydoc accepted
 * but who is root without ssh.allowRoot is skipped (logged). */
static int add_doc(struct wants *w, struct keydoc *doc, const struct config *cfg, const struct sshkeys_input *in,
		   const char *what, enum doc_kind kind)
{
	for (size_t i = 0; i < doc->n; i++) {
		char entry[SNAPSHOT_SOURCE_MAX / 2], src[SNAPSHOT_SOURCE_MAX + 1];
		if (kind == DOC_GARDENER)
			snprintf(entry, sizeof(entry), "gardener-user-authorized-keys %s",
				 i == 0 ? "current" : i == 1 ? "previous" : "older");
		else
			snprintf(entry, sizeof(entry), "%.200s[%zu]", kind == DOC_ANNOTATION ? "node-annotation" : what, i);
		format_source(src, sizeof(src), cfg, in, entry, kind != DOC_ANNOTATION);
		const char *user = doc->entries[i].user;
		if (doc->entries[i].revoked)
			continue; /* an explicit revocation, for revoke.c */
		if (!account_name_is_valid(user)) {
			log_warning("%s: entry %zu: user name '%s' not served, skipped", what, i, user);
			continue;
		}
		int r = wants_add(w, user, &doc->entries[i].key, doc->entries[i].key.options.expiry, src);
		if (r == -E2BIG) {
			log_warning("%s: more than %u keys for %s, the rest skipped", what, SSHKEYS_PER_USER_MAX, user);
			continue;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* Gardener's file: the current key, then the previous one, for the login
 * user. A malformed file is refused whole (-EINVAL, logged). */
static int collect_gardener_file(const struct osc_file *f, const struct config *cfg, const struct sshkeys_input *in,
				 struct wants *w, char *why, size_t why_size)
{
	struct keys_parse_params params = { .rsa_min_bits = cfg->rsa_min_bits };
	struct keydoc doc = { 0 };
	char err[KEYDOC_ERR_MAX] = "";
	int r = keydoc_parse_lines((const char *)f->content, f->content_len, cfg->login_user, &params, &doc, err,
				   sizeof(err));
	if (r < 0) {
		char ffield[128];
		snprintf(ffield, sizeof(ffield), "FILE=%s", SSHKEYS_GARDENER_FILE);
		snprintf(why, why_size, "key source %s rejected: %s", SSHKEYS_GARDENER_FILE, err[0] ? err : "invalid");
		return log_fields_errno(LOG_ERR, r, LOG_FIELDS(ffield), "%s rejected: %s", SSHKEYS_GARDENER_FILE,
					err[0] ? err : "invalid");
	}
	r = add_doc(w, &doc, cfg, in, SSHKEYS_GARDENER_FILE, DOC_GARDENER);
	keydoc_done(&doc);
	return r;
}

/* The expiring-key document (keydoc.h). A malformed document is refused
 * whole (-EINVAL, logged). */
static int collect_document(const char *what, const char *data, size_t len, const struct config *cfg,
			    const struct sshkeys_input *in, enum doc_kind kind, struct wants *w, char *why,
			    size_t why_size)
{
	struct keys_parse_params params = { .rsa_min_bits = cfg->rsa_min_bits };
	struct keydoc doc = { 0 };
	char err[KEYDOC_ERR_MAX] = "";
	int r = keydoc_parse_json(data, len, &params, &doc, err, sizeof(err));
	if (r < 0) {
		snprintf(why, why_size, "key document %s rejected: %s", what, err[0] ? err : "invalid");
		return log_error_errno(r, "Key document %s rejected: %s", what, err[0] ? err : "invalid");
	}
	r = add_doc(w, &doc, cfg, in, what, kind);
	keydoc_done(&doc);
	return r;
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
 * when it could not be brought to the wanted keys (logged by home.c, the
 * reason in why). On success st's managed set is updated. */
static int apply_login_user(int rootfd, const struct config *cfg, const struct account *acct,
			    const struct want *want, const struct sshkeys_input *in, struct state *st,
			    struct keymerge_result *ret, char *why, size_t why_size)
{
	_cleanup_close_ int sshfd = home_open_ssh(rootfd, acct, in->now, why, why_size);
	if (sshfd < 0)
		return sshfd;
	(void)home_remove_temps(sshfd, acct);
	_cleanup_free_ char *old = NULL;
	size_t old_len = 0;
	const char *ignored = NULL;
	bool keys_only = false, move = false;
	int r = home_read_keys(sshfd, acct, &old, &old_len, &ignored, &keys_only, &move, why, why_size);
	if (r < 0)
		return r;
	char ufield[64];
	snprintf(ufield, sizeof(ufield), "USER=%s", acct->name);
	if (ignored)
		log_fields(LOG_WARNING, LOG_FIELDS(ufield), "~%s/.ssh/authorized_keys is %s: not read, %s", acct->name,
			   ignored, move ? "moved aside and replaced by the managed keys" : "replaced by a regular file");
	if (keys_only)
		log_fields(LOG_WARNING, LOG_FIELDS(ufield),
			   "~%s/.ssh/authorized_keys is owned by root: only its key lines are kept", acct->name);

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

	struct keymerge_params mp = { .exclusive = cfg->keys_exclusive, .keys_only = keys_only,
				      .ssh_access = in->ssh_access, .max_shrink = cfg->max_key_shrink, .now = in->now };
	const struct state_user *prev = state_find_user(st, acct->name);
	struct keymerge_result m = { 0 };
	r = keymerge_compute(lines, (size_t)n, prev, want ? want->keys : NULL, want ? want->n : 0, &mp, &m);
	for (int i = 0; i < n; i++)
		keys_key_done(&parsed[i]);
	free(parsed);
	if (r < 0)
		return r;
	log_changes(acct->name, prev, &m, want, in->now);
	char moved[NAME_MAX + 1] = "";
	if (cfg->keys_exclusive) {
		/* sshd's default AuthorizedKeysFile reads authorized_keys2 as
		 * well (OpenSSH servconf.c: _PATH_SSH_USER_PERMITTED_KEYS2; the
		 * shipped drop-in leaves the default): in exclusive mode only
		 * the managed keys may log in. */
		r = home_move_aside(sshfd, acct, "authorized_keys2", in->now, moved, sizeof(moved), why, why_size);
		if (r < 0) {
			keymerge_result_done(&m);
			return r;
		}
		if (r > 0)
			log_fields(LOG_WARNING, LOG_FIELDS(ufield),
				   "~%s/.ssh/authorized_keys2 moved aside to ~%s/.ssh/%s (ssh.exclusive: only the "
				   "managed keys log in)", acct->name, acct->name, moved);
		moved[0] = '\0';
	}
	r = home_write_keys(sshfd, acct, m.content, m.len, move, in->now, moved, sizeof(moved), why, why_size);
	if (r < 0) {
		keymerge_result_done(&m);
		return r;
	}
	if (moved[0])
		log_fields(LOG_WARNING, LOG_FIELDS(ufield),
			   "~%s/.ssh/authorized_keys (%s) moved aside to ~%s/.ssh/%s, kept for the user", acct->name,
			   ignored ? ignored : "changed while it was read", acct->name, moved);
	if (r > 0)
		log_fields(LOG_INFO, LOG_FIELDS(ufield),
			   "~%s/.ssh/authorized_keys written: %zu managed key(s), %u other line(s) kept%s", acct->name,
			   m.n_managed, m.unmanaged_kept, cfg->keys_exclusive ? " (exclusive)" : "");
	else
		log_fields(LOG_DEBUG, LOG_FIELDS(ufield), "~%s/.ssh/authorized_keys unchanged", acct->name);
	/* The file holds the managed keys now and nothing else of ours. */
	int k = state_set_user(st, acct->name, m.managed, m.n_managed);
	if (k >= 0)
		k = state_set_stale(st, acct->name, NULL, 0);
	if (k < 0) {
		keymerge_result_done(&m);
		return k;
	}
	*ret = m;
	return r;
}

static int append_entry(struct snapshot_entry **v, size_t *n, const char *user, const struct state_key *key,
			const char *source)
{
	struct snapshot_entry *nv = realloc(*v, (*n + 2) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[(*n)++] = (struct snapshot_entry){ .user = user, .fingerprint = key->fingerprint, .line = key->line,
					       .expiry = key->expiry, .source = source };
	return 0;
}

/* The snapshot written before, for the sources of keys no source names
 * now (the last good keys kept when a source was refused, keys the shrink
 * guard keeps): they keep the attribution they had. NULL when there is
 * none or it does not verify (then those keys have no source). */
static struct snapshot *open_prev_snapshot(int rootfd, const struct config *cfg)
{
	const char *name;
	_cleanup_close_ int dfd = fsx_open_parent_at(rootfd, cfg->snapshot_path, 0, 0, &name);
	if (dfd < 0)
		return NULL;
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	struct snapshot *s = NULL;
	const char *what = NULL;
	if (fd < 0 || snapshot_open_fd(fd, geteuid(), &s, &what) < 0) {
		if (fd >= 0)
			log_debug("The previous key snapshot %s is not usable (%s): kept keys lose their source",
				  cfg->snapshot_path, what ? what : "?");
		return NULL;
	}
	return s;
}

static void snapshot_freep(struct snapshot **s)
{
	snapshot_free(*s);
}

static int write_snapshot(int rootfd, const struct config *cfg, const struct snapshot_entry *e, size_t n,
			  struct state *st, time_t now, bool *ret_changed)
{
	/* Digest of the entries: an unchanged set rebuilds byte-identical. */
	size_t total = 1;
	for (size_t i = 0; i < n; i++)
		total += strlen(e[i].user) + strlen(e[i].fingerprint) + strlen(e[i].line) +
			 (e[i].source ? strlen(e[i].source) : 0) + 25;
	_cleanup_free_ char *buf = malloc(total);
	if (!buf)
		return -ENOMEM;
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		int k = snprintf(buf + off, total - off, "%s\n%s\n%s\n%lld\n%s\n", e[i].user, e[i].fingerprint,
				 e[i].line, (long long)e[i].expiry, e[i].source ? e[i].source : "");
		if (k < 0 || (size_t)k >= total - off)
			return -EINVAL;
		off += (size_t)k;
	}
	char digest[65];
	desired_sha256_hex(buf, off, digest);
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

/* A NULL-fingerprint-terminated array of keys from keys_union(). */
static void owned_freep(struct state_key **p)
{
	if (!*p)
		return;
	for (struct state_key *k = *p; k->fingerprint; k++) {
		free(k->fingerprint);
		free(k->line);
	}
	free(*p);
}

/* What an authorized_keys file that could not be rewritten may still hold
 * of ours beyond the managed set now: prev's stale keys (oldest first),
 * then prev's managed keys, less managed[0..n), each fingerprint once, as
 * copies (a NULL-fingerprint-terminated array). */
static int keys_stale(const struct state_user *prev, const struct state_key *managed, size_t n,
		      struct state_key **ret, size_t *ret_n)
{
	size_t ns = prev ? prev->n_stale : 0, np = prev ? prev->n_keys : 0, k = 0;
	_cleanup_(owned_freep) struct state_key *v = calloc(ns + np + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ns + np; i++) {
		const struct state_key *x = i < ns ? &prev->stale[i] : &prev->keys[i - ns];
		bool skip = false;
		for (size_t j = 0; j < n && !skip; j++)
			skip = strcmp(managed[j].fingerprint, x->fingerprint) == 0;
		for (size_t j = 0; j < k && !skip; j++)
			skip = strcmp(v[j].fingerprint, x->fingerprint) == 0;
		if (skip)
			continue;
		v[k].line = strdup(x->line);
		v[k].fingerprint = strdup(x->fingerprint);
		v[k].expiry = x->expiry;
		if (!v[k].fingerprint || !v[k].line) {
			free(v[k].line);
			v[k].line = NULL;
			free(v[k].fingerprint);
			v[k].fingerprint = NULL;
			return -ENOMEM;
		}
		k++;
	}
	*ret = TAKE_PTR(v);
	*ret_n = k;
	return 0;
}

int sshkeys_apply(int rootfd, const char *root, const struct config *cfg, const struct sshkeys_input *in,
		  struct state *st, int statefd, bool *ret_changed, char *err, size_t err_size)
{
	char why[SSHKEYS_ERROR_MAX] = "";
	if (err_size)
		err[0] = '\0';
	_cleanup_(wants_done) struct wants w = { 0 };
	bool changed = false, have_source = false, source_failed = false;
	int r, ret = 0;

	const struct osc_file *gf = find_osc_file(in->osc, SSHKEYS_GARDENER_FILE);
	if (gf) {
		have_source = true;
		if (!wants_get(&w, cfg->login_user, true))
			return log_error_errno(-ENOMEM, "Out of memory");
		r = gf->source != OSC_SOURCE_INLINE ? refuse_image_source(gf, why, sizeof(why))
						   : collect_gardener_file(gf, cfg, in, &w, why, sizeof(why));
		if (r == -ENOMEM)
			return log_error_errno(r, "Out of memory");
		source_failed = source_failed || r < 0;
	}
	const struct osc_file *df = cfg->key_document_path ? find_osc_file(in->osc, cfg->key_document_path) : NULL;
	if (df) {
		have_source = true;
		if (!wants_get(&w, cfg->login_user, true))
			return log_error_errno(-ENOMEM, "Out of memory");
		r = df->source != OSC_SOURCE_INLINE
			    ? refuse_image_source(df, why, sizeof(why))
			    : collect_document(df->path, (const char *)df->content, df->content_len, cfg, in, DOC_OSC, &w,
					       why, sizeof(why));
		if (r == -ENOMEM)
			return log_error_errno(r, "Out of memory");
		source_failed = source_failed || r < 0;
	}
	if (in->key_document && cfg->keys_from_node_annotation) {
		have_source = true;
		if (!wants_get(&w, cfg->login_user, true))
			return log_error_errno(-ENOMEM, "Out of memory");
		r = collect_document("from the Node annotation", in->key_document, strlen(in->key_document), cfg, in,
				     DOC_ANNOTATION, &w, why, sizeof(why));
		if (r == -ENOMEM)
			return log_error_errno(r, "Out of memory");
		source_failed = source_failed || r < 0;
	}
	if (!have_source && st->n_users == 0 && !st->snapshot_digest[0])
		return 0; /* no key sources now or ever: nothing to manage */
	if (source_failed) {
		/* A source was refused: the last good keys stay in force (only
		 * expiry still removes keys), whatever the other sources say. */
		log_warning("A key source was rejected: keeping the last applied keys of every user");
		ret = -EINVAL; /* the keys are not the desired ones: the run fails */
		wants_done(&w);
		for (size_t i = 0; i < st->n_users; i++) {
			struct want *x = wants_get(&w, st->users[i].user, true);
			if (!x)
				return log_error_errno(-ENOMEM, "Out of memory");
			x->keys = calloc(st->users[i].n_keys + 1, sizeof(*x->keys));
			if (!x->keys)
				return log_error_errno(-ENOMEM, "Out of memory");
			for (size_t j = 0; j < st->users[i].n_keys; j++) {
				x->keys[j].fingerprint = strdup(st->users[i].keys[j].fingerprint);
				x->keys[j].line = strdup(st->users[i].keys[j].line);
				x->keys[j].expiry = st->users[i].keys[j].expiry;
				x->n++;
				if (!x->keys[j].fingerprint || !x->keys[j].line)
					return log_error_errno(-ENOMEM, "Out of memory");
			}
		}
	}

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
		log_warning("No /etc/passwd below the root: no login user, its keys are not applied");
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
		char hwhy[HOME_WHY_MAX] = "";
		r = apply_login_user(rootfd, cfg, &acct, lw, in, st, &m, hwhy, sizeof(hwhy));
		if (r > 0)
			changed = true;
		if (r >= 0)
			keymerge_result_done(&m);
		else if (r == -ENOMEM)
			return log_error_errno(r, "Out of memory");
		else {
			/* The home refused the write (logged). The managed set
			 * follows the desired keys all the same: a key dropped now
			 * is dropped now, so revoke.c puts it into the KRL (root's
			 * file, outside the home) in this very run, and the
			 * snapshot serves only the desired keys. What the file may
			 * still hold of ours is remembered as stale, so that the
			 * next write that succeeds removes those lines even in
			 * non-exclusive mode. The step fails: the home is not in
			 * the desired state. */
			int werr = r;
			struct keymerge_params mp = { .ssh_access = in->ssh_access, .max_shrink = cfg->max_key_shrink,
						      .now = in->now, .exclusive = true };
			r = keymerge_compute(NULL, 0, lprev, lw ? lw->keys : NULL, lw ? lw->n : 0, &mp, &m);
			if (r < 0)
				return log_error_errno(r, "Out of memory");
			log_changes(login, lprev, &m, lw, in->now);
			_cleanup_(owned_freep) struct state_key *stale = NULL;
			size_t n_stale = 0;
			r = keys_stale(lprev, m.managed, m.n_managed, &stale, &n_stale);
			if (r >= 0) /* lprev is not used after this: state_set_* may move it */
				r = state_set_user(st, login, m.managed, m.n_managed);
			if (r >= 0)
				r = state_set_stale(st, login, stale, n_stale);
			keymerge_result_done(&m);
			if (r < 0)
				return log_error_errno(r, "Out of memory");
			if (ret == 0)
				ret = werr;
			char lwhy[SSHKEYS_ERROR_MAX];
			snprintf(lwhy, sizeof(lwhy), "%s%s~%s/.ssh/authorized_keys not updated: %s", why,
				 why[0] ? "; " : "", login, hwhy[0] ? hwhy : strerror(-werr));
			memcpy(why, lwhy, sizeof(why));
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
		/* By uid, not only by name: "toor" and friends are root too. */
		if (other.uid == 0 && !cfg->allow_root) {
			log_fields(LOG_WARNING, LOG_FIELDS(uf), "Keys for %s ignored: uid 0 (ssh.allowRoot is off)",
				   user);
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

	/* The snapshot: every user's keys in force, expired ones left out,
	 * each with its source: the entry naming it now, else the one the
	 * previous snapshot had. */
	_cleanup_(snapshot_freep) struct snapshot *prev_snap = open_prev_snapshot(rootfd, cfg);
	for (size_t i = 0; i < st->n_users; i++) {
		const struct state_user *u = &st->users[i];
		if (strcmp(u->user, "root") == 0 && !cfg->allow_root)
			continue;
		const struct want *uw = wants_get(&w, u->user, false);
		for (size_t j = 0; j < u->n_keys; j++) {
			if (u->keys[j].expiry && u->keys[j].expiry <= in->now)
				continue;
			const char *src = want_source(uw, u->keys[j].fingerprint);
			struct snapshot_record rec;
			if (!src && prev_snap &&
			    snapshot_lookup_fingerprint(prev_snap, u->user, u->keys[j].fingerprint, &rec, NULL) == 1)
				src = rec.source;
			if ((r = append_entry(&entries, &n_entries, u->user, &u->keys[j], src)) < 0)
				return log_error_errno(r, "Out of memory");
		}
	}
	r = write_snapshot(rootfd, cfg, entries, n_entries, st, in->now, &changed);
	if (r < 0) {
		ret = r;
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "%sthe key snapshot %s could not be written",
			 why[0] ? "; " : "", cfg->snapshot_path);
	}
	int k = state_save(statefd, st);
	if (k < 0 && ret == 0)
		ret = log_error_errno(k, "Failed to save %s", STATE_FILE);
	*ret_changed = changed;
	if (ret < 0) {
		char msg[SSHKEYS_ERROR_MAX + 64];
		snprintf(msg, sizeof(msg), "keys of %s: %s", login, why[0] ? why : strerror(-ret));
		log_fields(LOG_ERR, LOG_FIELDS(ufield), "The SSH keys are not in the desired state: %s", msg);
		if (err_size)
			snprintf(err, err_size, "%s", msg);
	}
	return ret;
}
