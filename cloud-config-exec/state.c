/* The executor's records: state.json and last-applied.yaml; see state.h. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "desired.h"
#include "fsx.h"
#include "jsonx.h"
#include "state.h"

#define STATE_VERSION 1
#define LAST_APPLIED_HEADER "# cloud-config-exec last-applied sha256="

static void strv_sorted_remove(char **v, size_t *n, size_t i)
{
	free(v[i]);
	memmove(v + i, v + i + 1, (*n - i) * sizeof(char *)); /* moves the NULL too */
	(*n)--;
}

/* Binary search; returns index of path or the insertion point (negated - 1). */
static long owned_index(const struct state *s, const char *path)
{
	size_t lo = 0, hi = s->n_owned;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(s->owned_files[mid], path);
		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -(long)lo - 1;
}

bool state_owns(const struct state *s, const char *path)
{
	return s->owned_files && owned_index(s, path) >= 0;
}

int state_own(struct state *s, const char *path)
{
	long i = s->owned_files ? owned_index(s, path) : -1;
	if (s->owned_files && i >= 0)
		return 0;
	size_t at = (size_t)(-i - 1);
	char **v = realloc(s->owned_files, (s->n_owned + 2) * sizeof(char *));
	if (!v)
		return -ENOMEM;
	s->owned_files = v;
	char *dup = strdup(path);
	if (!dup)
		return -ENOMEM;
	memmove(v + at + 1, v + at, (s->n_owned - at) * sizeof(char *));
	v[at] = dup;
	s->n_owned++;
	v[s->n_owned] = NULL;
	return 1;
}

void state_disown(struct state *s, const char *path)
{
	long i = s->owned_files ? owned_index(s, path) : -1;
	if (i >= 0)
		strv_sorted_remove(s->owned_files, &s->n_owned, (size_t)i);
}

static void keys_free(struct state_key *k, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(k[i].fingerprint);
		free(k[i].line);
	}
	free(k);
}

static void user_done(struct state_user *u)
{
	keys_free(u->keys, u->n_keys);
	keys_free(u->stale, u->n_stale);
	free(u->user);
	*u = (struct state_user){ 0 };
}

/* A deep copy of keys[0..n) (skipping fingerprints already copied when
 * unique) in *ret, the count in *ret_n. */
static int keys_copy(const struct state_key *keys, size_t n, bool unique, struct state_key **ret, size_t *ret_n)
{
	struct state_key *v = calloc(n ? n : 1, sizeof(*v));
	size_t k = 0;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		bool dup = false;
		for (size_t j = 0; unique && j < k && !dup; j++)
			dup = strcmp(v[j].fingerprint, keys[i].fingerprint) == 0;
		if (dup)
			continue;
		v[k].fingerprint = strdup(keys[i].fingerprint);
		v[k].line = strdup(keys[i].line);
		v[k].expiry = keys[i].expiry;
		k++;
		if (!v[k - 1].fingerprint || !v[k - 1].line) {
			keys_free(v, k);
			return -ENOMEM;
		}
	}
	*ret = v;
	*ret_n = k;
	return 0;
}

/* The user's entry, created (without keys) when missing; NULL: -ENOMEM. */
static struct state_user *user_get(struct state *s, const char *user)
{
	for (size_t i = 0; i < s->n_users; i++)
		if (strcmp(s->users[i].user, user) == 0)
			return &s->users[i];
	struct state_user nu = { .user = strdup(user), .keys = calloc(1, sizeof(struct state_key)) };
	if (!nu.user || !nu.keys) {
		user_done(&nu);
		return NULL;
	}
	struct state_user *v = realloc(s->users, (s->n_users + 1) * sizeof(*v));
	if (!v) {
		user_done(&nu);
		return NULL;
	}
	s->users = v;
	s->users[s->n_users] = nu;
	return &s->users[s->n_users++];
}

const struct state_user *state_find_user(const struct state *s, const char *user)
{
	for (size_t i = 0; i < s->n_users; i++)
		if (strcmp(s->users[i].user, user) == 0)
			return &s->users[i];
	return NULL;
}

int state_set_user(struct state *s, const char *user, const struct state_key *keys, size_t n)
{
	struct state_key *v;
	size_t nv;
	int r = keys_copy(keys, n, false, &v, &nv);
	if (r < 0)
		return r;
	struct state_user *u = user_get(s, user);
	if (!u) {
		keys_free(v, nv);
		return -ENOMEM;
	}
	keys_free(u->keys, u->n_keys);
	u->keys = v;
	u->n_keys = nv;
	return 0;
}

int state_set_stale(struct state *s, const char *user, const struct state_key *keys, size_t n)
{
	if (n > STATE_STALE_MAX) {
		keys += n - STATE_STALE_MAX;
		n = STATE_STALE_MAX;
	}
	struct state_key *v;
	size_t nv;
	int r = keys_copy(keys, n, true, &v, &nv);
	if (r < 0)
		return r;
	struct state_user *u = NULL;
	for (size_t i = 0; i < s->n_users && !u; i++)
		if (strcmp(s->users[i].user, user) == 0)
			u = &s->users[i];
	if (!u && nv == 0) {
		keys_free(v, nv);
		return 0; /* nothing to record for a user we do not know */
	}
	if (!u && !(u = user_get(s, user))) {
		keys_free(v, nv);
		return -ENOMEM;
	}
	keys_free(u->stale, u->n_stale);
	u->stale = v;
	u->n_stale = nv;
	return 0;
}

void state_done(struct state *s)
{
	strv_free(s->owned_files);
	for (size_t i = 0; i < s->n_users; i++)
		user_done(&s->users[i]);
	free(s->users);
	strv_free(s->progress_units);
	strv_free(s->owned_units);
	free(s->containerd_stamp);
	free(s->containerd_version);
	free(s->inplace_reason);
	free(s->inplace_os_attempted);
	*s = (struct state){ 0 };
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* {"<user>": [{"fingerprint", "line", "expiry"}...]...} (NULL: none) into s
 * through set (state_set_user or state_set_stale). */
static int parse_keys(const cJSON *keys, struct state *s,
		      int (*set)(struct state *, const char *, const struct state_key *, size_t))
{
	if (!keys)
		return 0;
	if (!cJSON_IsObject(keys))
		return -EINVAL;
	const cJSON *u;
	cJSON_ArrayForEach(u, keys) {
		if (!cJSON_IsArray(u))
			return -EINVAL;
		size_t n = (size_t)cJSON_GetArraySize(u), i = 0;
		_cleanup_free_ struct state_key *k = calloc(n ? n : 1, sizeof(*k));
		if (!k)
			return -ENOMEM;
		const cJSON *e;
		cJSON_ArrayForEach(e, u) {
			const cJSON *fp = cJSON_GetObjectItemCaseSensitive(e, "fingerprint");
			const cJSON *line = cJSON_GetObjectItemCaseSensitive(e, "line");
			const cJSON *exp = cJSON_GetObjectItemCaseSensitive(e, "expiry");
			if (!cJSON_IsString(fp) || !cJSON_IsString(line) || (exp && !cJSON_IsNumber(exp)))
				return -EINVAL;
			k[i].fingerprint = fp->valuestring;
			k[i].line = line->valuestring;
			k[i].expiry = exp ? (time_t)exp->valuedouble : 0;
			i++;
		}
		int r = set(s, u->string, k, n); /* deep copies */
		if (r < 0)
			return r;
	}
	return 0;
}

static int format_keys(cJSON *root, const char *name, const struct state *s, bool stale)
{
	cJSON *keys = cJSON_AddObjectToObject(root, name);
	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_users; i++) {
		const struct state_key *v = stale ? s->users[i].stale : s->users[i].keys;
		size_t n = stale ? s->users[i].n_stale : s->users[i].n_keys;
		if (stale && n == 0)
			continue;
		cJSON *u = cJSON_AddArrayToObject(keys, s->users[i].user);
		if (!u)
			return -ENOMEM;
		for (size_t j = 0; j < n; j++) {
			cJSON *e = cJSON_CreateObject();
			if (!e || !cJSON_AddItemToArray(u, e) || !cJSON_AddStringToObject(e, "fingerprint", v[j].fingerprint) ||
			    !cJSON_AddStringToObject(e, "line", v[j].line) ||
			    !cJSON_AddNumberToObject(e, "expiry", (double)v[j].expiry))
				return -ENOMEM;
		}
	}
	return 0;
}

int state_parse(const char *data, size_t len, struct state *ret)
{
	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_ParseWithLength(data, len);
	if (!cJSON_IsObject(root))
		return -EINVAL;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "version");
	if (!cJSON_IsNumber(v) || v->valuedouble != STATE_VERSION)
		return -EINVAL;

	struct state s = { 0 };
	int r = 0;
	const cJSON *owned = cJSON_GetObjectItemCaseSensitive(root, "ownedFiles");
	if (owned)
		r = jsonx_get_strv(owned, SIZE_MAX, &s.owned_files);
	else
		r = (s.owned_files = calloc(1, sizeof(char *))) ? 0 : -ENOMEM;
	if (r < 0)
		goto fail;
	s.n_owned = (size_t)r;
	qsort(s.owned_files, s.n_owned, sizeof(char *), cmp_str);
	for (size_t i = 1; i < s.n_owned; i++)
		if (strcmp(s.owned_files[i - 1], s.owned_files[i]) == 0) {
			strv_sorted_remove(s.owned_files, &s.n_owned, i);
			i--;
		}

	const cJSON *owned_units = cJSON_GetObjectItemCaseSensitive(root, "ownedUnits");
	if (owned_units && (r = jsonx_get_strv(owned_units, SIZE_MAX, &s.owned_units)) < 0)
		goto fail;
	if (s.owned_units) {
		size_t n = 0;
		while (s.owned_units[n])
			n++;
		qsort(s.owned_units, n, sizeof(char *), cmp_str);
	}

	if ((r = parse_keys(cJSON_GetObjectItemCaseSensitive(root, "managedKeys"), &s, state_set_user)) < 0 ||
	    (r = parse_keys(cJSON_GetObjectItemCaseSensitive(root, "staleKeys"), &s, state_set_stale)) < 0)
		goto fail;

	const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "progress");
	if (p) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(p, "checksum");
		const cJSON *steps = cJSON_GetObjectItemCaseSensitive(p, "steps");
		const cJSON *changed = cJSON_GetObjectItemCaseSensitive(p, "changedUnits");
		if (!cJSON_IsString(c) || strlen(c->valuestring) != 64 || !cJSON_IsNumber(steps)) {
			r = -EINVAL;
			goto fail;
		}
		memcpy(s.progress_checksum, c->valuestring, 65);
		s.progress_steps = (unsigned)steps->valuedouble;
		if (changed && (r = jsonx_get_strv(changed, SIZE_MAX, &s.progress_units)) < 0)
			goto fail;
	}
	const cJSON *snap = cJSON_GetObjectItemCaseSensitive(root, "snapshot");
	if (snap) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(snap, "digest");
		const cJSON *g = cJSON_GetObjectItemCaseSensitive(snap, "generation");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(snap, "createdAt");
		if (!cJSON_IsString(d) || strlen(d->valuestring) != 64 || !cJSON_IsNumber(g) || !cJSON_IsNumber(t)) {
			r = -EINVAL;
			goto fail;
		}
		memcpy(s.snapshot_digest, d->valuestring, 65);
		s.snapshot_generation = (uint64_t)g->valuedouble;
		s.snapshot_created_at = (int64_t)t->valuedouble;
	}
	/* The version cache: a malformed one is dropped (asked again), never
	 * a reason to refuse the record. */
	const cJSON *ctd = cJSON_GetObjectItemCaseSensitive(root, "containerd");
	const cJSON *cb = cJSON_GetObjectItemCaseSensitive(ctd, "binary");
	const cJSON *cv = cJSON_GetObjectItemCaseSensitive(ctd, "version");
	if (cJSON_IsString(cb) && cJSON_IsString(cv) && strlen(cb->valuestring) < STATE_STAMP_MAX &&
	    strlen(cv->valuestring) <= 4096) {
		s.containerd_stamp = strdup(cb->valuestring);
		s.containerd_version = strdup(cv->valuestring);
		if (!s.containerd_stamp || !s.containerd_version) {
			r = -ENOMEM;
			goto fail;
		}
	}
	const cJSON *ip = cJSON_GetObjectItemCaseSensitive(root, "inPlace");
	if (ip) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(ip, "checksum");
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(ip, "kinds");
		const cJSON *rem = cJSON_GetObjectItemCaseSensitive(ip, "remaining");
		const cJSON *steps = cJSON_GetObjectItemCaseSensitive(ip, "steps");
		const cJSON *stt = cJSON_GetObjectItemCaseSensitive(ip, "state");
		const cJSON *re = cJSON_GetObjectItemCaseSensitive(ip, "reason");
		const cJSON *at = cJSON_GetObjectItemCaseSensitive(ip, "osAttempted");
		const cJSON *bi = cJSON_GetObjectItemCaseSensitive(ip, "bootId");
		if (cJSON_IsString(bi) && strlen(bi->valuestring) < sizeof(s.inplace_boot_id))
			memcpy(s.inplace_boot_id, bi->valuestring, strlen(bi->valuestring) + 1);
		if (!cJSON_IsString(c) || strlen(c->valuestring) != 64 || !cJSON_IsNumber(k) || !cJSON_IsNumber(rem) ||
		    !cJSON_IsNumber(steps) || !cJSON_IsNumber(stt) || (re && !cJSON_IsString(re)) ||
		    (at && !cJSON_IsString(at))) {
			r = -EINVAL;
			goto fail;
		}
		memcpy(s.inplace_checksum, c->valuestring, 65);
		s.inplace_kinds = (unsigned)k->valuedouble;
		s.inplace_remaining = (unsigned)rem->valuedouble;
		s.inplace_steps = (unsigned)steps->valuedouble;
		s.inplace_state = (int)stt->valuedouble;
		if ((re && !(s.inplace_reason = strdup(re->valuestring))) ||
		    (at && !(s.inplace_os_attempted = strdup(at->valuestring)))) {
			r = -ENOMEM;
			goto fail;
		}
	}
	*ret = s;
	return 0;
fail:
	state_done(&s);
	return r;
}

int state_format(const struct state *s, char **ret, size_t *ret_len)
{
	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_CreateObject();
	if (!root || !cJSON_AddNumberToObject(root, "version", STATE_VERSION))
		return -ENOMEM;
	if (!jsonx_add_strv(root, "ownedFiles", s->owned_files))
		return -ENOMEM;
	if (s->owned_units && !jsonx_add_strv(root, "ownedUnits", s->owned_units))
		return -ENOMEM;
	if (format_keys(root, "managedKeys", s, false) < 0)
		return -ENOMEM;
	bool any_stale = false;
	for (size_t i = 0; i < s->n_users; i++)
		any_stale = any_stale || s->users[i].n_stale;
	if (any_stale && format_keys(root, "staleKeys", s, true) < 0)
		return -ENOMEM;
	if (s->progress_checksum[0]) {
		cJSON *p = cJSON_AddObjectToObject(root, "progress");
		if (!p || !cJSON_AddStringToObject(p, "checksum", s->progress_checksum) ||
		    !cJSON_AddNumberToObject(p, "steps", s->progress_steps))
			return -ENOMEM;
		if (!jsonx_add_strv(p, "changedUnits", s->progress_units))
			return -ENOMEM;
	}
	if (s->snapshot_digest[0]) {
		cJSON *p = cJSON_AddObjectToObject(root, "snapshot");
		if (!p || !cJSON_AddStringToObject(p, "digest", s->snapshot_digest) ||
		    !cJSON_AddNumberToObject(p, "generation", (double)s->snapshot_generation) ||
		    !cJSON_AddNumberToObject(p, "createdAt", (double)s->snapshot_created_at))
			return -ENOMEM;
	}
	if (s->containerd_stamp && s->containerd_version) {
		cJSON *p = cJSON_AddObjectToObject(root, "containerd");
		if (!p || !cJSON_AddStringToObject(p, "binary", s->containerd_stamp) ||
		    !cJSON_AddStringToObject(p, "version", s->containerd_version))
			return -ENOMEM;
	}
	if (s->inplace_checksum[0]) {
		cJSON *p = cJSON_AddObjectToObject(root, "inPlace");
		if (!p || !cJSON_AddStringToObject(p, "checksum", s->inplace_checksum) ||
		    !cJSON_AddNumberToObject(p, "kinds", s->inplace_kinds) ||
		    !cJSON_AddNumberToObject(p, "remaining", s->inplace_remaining) ||
		    !cJSON_AddNumberToObject(p, "steps", s->inplace_steps) ||
		    !cJSON_AddNumberToObject(p, "state", s->inplace_state) ||
		    (s->inplace_reason && !cJSON_AddStringToObject(p, "reason", s->inplace_reason)) ||
		    (s->inplace_os_attempted && !cJSON_AddStringToObject(p, "osAttempted", s->inplace_os_attempted)) ||
		    (s->inplace_boot_id[0] && !cJSON_AddStringToObject(p, "bootId", s->inplace_boot_id)))
			return -ENOMEM;
	}
	return jsonx_print(root, ret, ret_len);
}

void state_stamp(const struct stat *st, char buf[static STATE_STAMP_MAX])
{
	snprintf(buf, STATE_STAMP_MAX, "%llu:%llu:%lld:%lld.%09ld:%lld.%09ld", (unsigned long long)st->st_dev,
		 (unsigned long long)st->st_ino, (long long)st->st_size, (long long)st->st_mtim.tv_sec,
		 st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

int state_load(int dirfd, struct state *ret)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fsx_read_at(dirfd, STATE_FILE, STATE_MAX, &data, &len);
	if (r == -ENOENT) {
		struct state s = { 0 };
		s.owned_files = calloc(1, sizeof(char *));
		if (!s.owned_files)
			return -ENOMEM;
		*ret = s;
		return 0;
	}
	if (r < 0)
		return r;
	return state_parse(data, len, ret);
}

int state_rebuild(int dirfd, char *const *owned, char *const *units, struct state *ret)
{
	struct state s = { 0 };
	s.owned_files = calloc(1, sizeof(char *));
	if (!s.owned_files)
		return -ENOMEM;
	int r = 0;
	for (char *const *p = owned; r >= 0 && p && *p; p++)
		r = state_own(&s, *p);
	size_t n = 0;
	for (char *const *p = units; p && *p; p++)
		n++;
	if (r >= 0 && n) {
		s.owned_units = calloc(n + 1, sizeof(char *));
		if (!s.owned_units)
			r = -ENOMEM;
		for (size_t i = 0; r >= 0 && i < n; i++)
			if (!(s.owned_units[i] = strdup(units[i])))
				r = -ENOMEM;
	}
	if (r >= 0 && renameat(dirfd, STATE_FILE, dirfd, STATE_DAMAGED) < 0 && errno != ENOENT)
		r = -errno;
	if (r < 0) {
		state_done(&s);
		return r;
	}
	*ret = s;
	return 0;
}

int state_save(int dirfd, const struct state *s)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = state_format(s, &text, &len);
	if (r < 0)
		return r;
	return fsx_write_atomic_at(dirfd, STATE_FILE, text, len, 0600, FSX_UID_KEEP, FSX_GID_KEEP,
				   FSX_SKIP_IF_SAME);
}

int state_load_last_applied(int dirfd, char **ret, size_t *ret_len, char checksum[static 65])
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fsx_read_at(dirfd, STATE_LAST_APPLIED, STATE_MAX, &data, &len);
	if (r < 0)
		return r;
	size_t hl = strlen(LAST_APPLIED_HEADER);
	if (len < hl + 65 || memcmp(data, LAST_APPLIED_HEADER, hl) != 0 || data[hl + 64] != '\n')
		return -EBADMSG;
	const char *body = data + hl + 65;
	size_t body_len = len - hl - 65;
	char sum[65];
	desired_sha256_hex(body, body_len, sum);
	if (memcmp(sum, data + hl, 64) != 0)
		return -EBADMSG;
	char *out = malloc(body_len + 1);
	if (!out)
		return -ENOMEM;
	memcpy(out, body, body_len);
	out[body_len] = '\0';
	memcpy(checksum, sum, 65);
	*ret = out;
	*ret_len = body_len;
	return 0;
}

int state_save_last_applied(int dirfd, const char *osc, size_t len)
{
	size_t hl = strlen(LAST_APPLIED_HEADER);
	_cleanup_free_ char *buf = malloc(hl + 65 + len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, LAST_APPLIED_HEADER, hl);
	desired_sha256_hex(osc, len, buf + hl);
	buf[hl + 64] = '\n';
	memcpy(buf + hl + 65, osc, len);
	return fsx_write_atomic_at(dirfd, STATE_LAST_APPLIED, buf, hl + 65 + len, 0600, FSX_UID_KEEP,
				   FSX_GID_KEEP, FSX_SKIP_IF_SAME);
}
