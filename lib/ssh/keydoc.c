/* Key documents; see keydoc.h. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "cleanup.h"
#include "errbuf.h"
#include "jsonx.h"
#include "keydoc.h"

/* "reason" or "reason \"token\"" from a keys_error. */
static const char *kerr_tok_pre(const struct keys_error *e)
{
	return e->token[0] ? " \"" : "";
}

static const char *kerr_tok_post(const struct keys_error *e)
{
	return e->token[0] ? "\"" : "";
}

bool keydoc_user_valid(const char *s)
{
	size_t n = s ? strnlen(s, KEYDOC_USER_MAX + 1) : 0;
	if (n == 0 || n > KEYDOC_USER_MAX)
		return false;
	if (!((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++) {
		char c = s[i];
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')
			continue;
		if (c == '$' && i == n - 1)
			continue;
		return false;
	}
	return true;
}

int keydoc_parse_time(const char *s, time_t *ret)
{
	/* 2026-12-01T00:00:00[.fff]Z */
	if (!s || strnlen(s, 20) < 20)
		return -EINVAL;
	if (s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':')
		return -EINVAL;
	const char *p = s + 19;
	if (*p == '.') {
		size_t k = 0;
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (++k > 9)
				return -EINVAL;
		if (k == 0)
			return -EINVAL;
	}
	if (p[0] != 'Z' || p[1] != '\0')
		return -EINVAL;
	/* Reuse the sshd form's range checks: YYYYMMDDHHMMSSZ. */
	char compact[16];
	const int at[] = { 0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18 };
	for (size_t i = 0; i < 14; i++) {
		if (s[at[i]] < '0' || s[at[i]] > '9')
			return -EINVAL;
		compact[i] = s[at[i]];
	}
	compact[14] = 'Z';
	compact[15] = '\0';
	return keys_parse_expiry(compact, ret);
}

void keydoc_done(struct keydoc *doc)
{
	if (!doc)
		return;
	for (size_t i = 0; i < doc->n; i++) {
		free(doc->entries[i].user);
		free(doc->entries[i].revoked_serials);
		keys_key_done(&doc->entries[i].key);
	}
	free(doc->entries);
	*doc = (struct keydoc){};
}

/* Parameters for keys from a document: the caller's RSA floor, never options. */
static struct keys_parse_params doc_params(const struct keys_parse_params *params)
{
	return (struct keys_parse_params){ .rsa_min_bits = params ? params->rsa_min_bits : 0 };
}

static int find_dup(const struct keydoc *doc, const char *user, const char *fingerprint, size_t *ret)
{
	for (size_t i = 0; i < doc->n; i++)
		if (strcmp(doc->entries[i].user, user) == 0 &&
		    strcmp(doc->entries[i].key.fingerprint, fingerprint) == 0) {
			*ret = i;
			return 1;
		}
	return 0;
}

/* ---- JSON ------------------------------------------------------------- */

/* cJSON decodes "\u0000" into a NUL that silently ends the C string, so a
 * value could mean one thing to cJSON's reader and another to whoever wrote
 * it. Raw NUL bytes are refused too. */
static bool has_nul(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\0')
			return true;
		if (s[i] == '\\' && i + 1 < len) {
			if (s[i + 1] == 'u' && i + 5 < len && s[i + 2] == '0' && s[i + 3] == '0' && s[i + 4] == '0' &&
			    s[i + 5] == '0')
				return true;
			i++; /* skip the escaped character */
		}
	}
	return false;
}

enum { F_USER, F_TYPE, F_PUBLICKEY, F_COMMENT, F_UNTIL, F_REVOKED, F_CA, F_PRINCIPALS, F_SERIALS, _F_MAX };
static const char *const field_names[_F_MAX] = { "user",    "type",          "publicKey", "comment",
						 "until",   "revoked",       "certAuthority", "principals",
						 "revokedSerials" };

/* "revokedSerials": a non-empty array of certificate serials, each a JSON
 * integer 1..2^53-1 or a string of decimal digits 1..2^64-1 (serials are
 * uint64; a JSON number is exact only up to 2^53). */
static int parse_serials(const cJSON *a, size_t idx, uint64_t **ret, size_t *ret_n, char *err, size_t errlen)
{
	if (!cJSON_IsArray(a) || !a->child)
		return errbuf_set(err, errlen, -EINVAL, "[%zu].revokedSerials: not a non-empty array", idx);
	size_t n = 0;
	for (const cJSON *c = a->child; c; c = c->next)
		if (++n > KEYDOC_SERIALS_MAX)
			return errbuf_set(err, errlen, -EMSGSIZE, "[%zu].revokedSerials: more than %d", idx, KEYDOC_SERIALS_MAX);
	uint64_t *v = calloc(n, sizeof(*v));
	if (!v)
		return errbuf_set(err, errlen, -ENOMEM, "out of memory");
	n = 0;
	for (const cJSON *c = a->child; c; c = c->next, n++) {
		bool ok = false;
		if (cJSON_IsNumber(c)) {
			double d = c->valuedouble;
			ok = d >= 1 && d <= 9007199254740991.0 && (double)(uint64_t)d == d;
			if (ok)
				v[n] = (uint64_t)d;
		} else if (cJSON_IsString(c)) {
			const char *t = c->valuestring;
			size_t l = strlen(t);
			ok = l > 0 && l <= 20 && strspn(t, "0123456789") == l && t[0] != '0';
			if (ok) {
				char *end;
				errno = 0;
				unsigned long long x = strtoull(t, &end, 10);
				ok = errno == 0 && *end == '\0';
				v[n] = x;
			}
		}
		if (!ok) {
			free(v);
			return errbuf_set(err, errlen, -EINVAL, "[%zu].revokedSerials[%zu]: not a serial 1..2^64-1", idx, n);
		}
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* "principals": a non-empty array of names, joined into sshd's list. */
static int parse_principals(const cJSON *a, size_t idx, char **ret, char *err, size_t errlen)
{
	if (!cJSON_IsArray(a) || !a->child)
		return errbuf_set(err, errlen, -EINVAL, "[%zu].principals: not a non-empty array", idx);
	size_t len = 0, n = 0;
	for (const cJSON *c = a->child; c; c = c->next) {
		if (!cJSON_IsString(c) || !c->valuestring[0] || strchr(c->valuestring, ','))
			return errbuf_set(err, errlen, -EINVAL, "[%zu].principals[%zu]: not a principal name", idx, n);
		len += strlen(c->valuestring) + 1;
		if (len > KEYS_PRINCIPALS_MAX + 1)
			return errbuf_set(err, errlen, -EMSGSIZE, "[%zu].principals: longer than %d bytes", idx,
				    KEYS_PRINCIPALS_MAX);
		n++;
	}
	char *buf = malloc(len);
	if (!buf)
		return errbuf_set(err, errlen, -ENOMEM, "out of memory");
	size_t off = 0;
	for (const cJSON *c = a->child; c; c = c->next) {
		size_t l = strlen(c->valuestring);
		memcpy(buf + off, c->valuestring, l);
		off += l;
		buf[off++] = c->next ? ',' : '\0';
	}
	if (!keys_principals_valid(buf, off - 1)) {
		free(buf);
		return errbuf_set(err, errlen, -EINVAL, "[%zu].principals: a name with characters other than [A-Za-z0-9._@+-]",
			    idx);
	}
	*ret = buf;
	return 0;
}

static int parse_entry(const cJSON *item, size_t idx, const struct keys_parse_params *params,
		       struct keydoc_entry *ret, char *err, size_t errlen)
{
	const cJSON *f[_F_MAX] = {};
	struct keys_error e = {};
	int r;

	if (!cJSON_IsObject(item))
		return errbuf_set(err, errlen, -EINVAL, "[%zu]: not an object", idx);
	for (const cJSON *c = item->child; c; c = c->next) {
		for (size_t j = 0; j < _F_MAX; j++) {
			if (!c->string || strcmp(c->string, field_names[j]) != 0)
				continue;
			if (f[j])
				return errbuf_set(err, errlen, -EINVAL, "[%zu].%s: duplicate field", idx, field_names[j]);
			f[j] = c;
		}
	}
	for (size_t j = 0; j < _F_MAX; j++) {
		bool optional = j == F_COMMENT || j == F_UNTIL || j == F_REVOKED || j == F_CA || j == F_PRINCIPALS ||
				j == F_SERIALS;
		if (!f[j] || (optional && cJSON_IsNull(f[j]))) {
			f[j] = NULL;
			if (!optional)
				return errbuf_set(err, errlen, -EINVAL, "[%zu].%s: missing", idx, field_names[j]);
			continue;
		}
		if (j == F_REVOKED || j == F_CA) {
			if (!cJSON_IsBool(f[j]))
				return errbuf_set(err, errlen, -EINVAL, "[%zu].%s: not a boolean", idx, field_names[j]);
		} else if (j != F_UNTIL && j != F_PRINCIPALS && j != F_SERIALS && !cJSON_IsString(f[j]))
			return errbuf_set(err, errlen, -EINVAL, "[%zu].%s: not a string", idx, field_names[j]);
	}
	bool revoked = f[F_REVOKED] && cJSON_IsTrue(f[F_REVOKED]);
	bool ca = f[F_CA] && cJSON_IsTrue(f[F_CA]);
	if (revoked && f[F_UNTIL])
		return errbuf_set(err, errlen, -EINVAL, "[%zu].until: not allowed on a revoked entry", idx);
	if (f[F_PRINCIPALS] && !ca)
		return errbuf_set(err, errlen, -EINVAL, "[%zu].principals: only with \"certAuthority\": true", idx);
	if (f[F_SERIALS] && !ca)
		return errbuf_set(err, errlen, -EINVAL, "[%zu].revokedSerials: only with \"certAuthority\": true", idx);

	const char *user = f[F_USER]->valuestring;
	if (!keydoc_user_valid(user))
		return errbuf_set(err, errlen, -EINVAL, "[%zu].user: invalid user name", idx);

	const char *type = f[F_TYPE]->valuestring;
	const char *pk = f[F_PUBLICKEY]->valuestring;
	struct keys_parse_params p = doc_params(params);
	struct keys_key key = {};

	if (strlen(pk) > KEYS_LINE_MAX)
		return errbuf_set(err, errlen, -EMSGSIZE, "[%zu].publicKey: too long", idx);
	if (strchr(pk, ' ') || strchr(pk, '\t')) {
		/* "type base64 [comment]" */
		r = keys_parse_public_ex(pk, strlen(pk), &p, &key, &e);
		if (r < 0)
			return errbuf_set(err, errlen, r, "[%zu].publicKey: %s%s%s%s", idx, e.what, kerr_tok_pre(&e), e.token,
				    kerr_tok_post(&e));
		if (strcmp(key.type_name, type) != 0) {
			keys_key_done(&key);
			return errbuf_set(err, errlen, -EINVAL, "[%zu].type: does not match the key's type", idx);
		}
	} else {
		/* The bare blob, typed by "type". */
		_cleanup_free_ unsigned char *blob = NULL;
		size_t blob_len;
		r = b64_decode(pk, strlen(pk), KEYS_LINE_MAX, 0, &blob, &blob_len);
		if (r == -ENOMEM)
			return errbuf_set(err, errlen, r, "out of memory");
		if (r < 0)
			return errbuf_set(err, errlen, -EINVAL, "[%zu].publicKey: not canonical base64", idx);
		r = keys_parse_blob(type, blob, blob_len, &p, &key, &e);
		if (r < 0)
			return errbuf_set(err, errlen, r, "[%zu].%s: %s%s%s%s", idx,
				    r == -EPROTONOSUPPORT && e.token[0] ? "type" : "publicKey", e.what, kerr_tok_pre(&e),
				    e.token, kerr_tok_post(&e));
	}

	if (f[F_COMMENT]) {
		/* Validate the comment exactly as on a key line, by parsing the
		 * line it will be rendered into. */
		const char *c = f[F_COMMENT]->valuestring;
		_cleanup_free_ char *line = NULL;
		struct keys_key k2 = {};
		if (strlen(c) > KEYS_COMMENT_MAX) {
			keys_key_done(&key);
			return errbuf_set(err, errlen, -EMSGSIZE, "[%zu].comment: comment too long", idx);
		}
		if (asprintf(&line, "%s %s %s", key.type_name, key.blob_b64, c) < 0) {
			keys_key_done(&key);
			return errbuf_set(err, errlen, -ENOMEM, "out of memory");
		}
		r = keys_parse_public_ex(line, strlen(line), &p, &k2, &e);
		keys_key_done(&key);
		if (r < 0)
			return errbuf_set(err, errlen, r, "[%zu].comment: %s", idx, e.what);
		key = k2;
	}

	if (f[F_UNTIL]) {
		time_t t;
		const cJSON *u = f[F_UNTIL];
		if (cJSON_IsString(u)) {
			if (keydoc_parse_time(u->valuestring, &t) < 0) {
				keys_key_done(&key);
				return errbuf_set(err, errlen, -EINVAL, "[%zu].until: not an RFC 3339 UTC time", idx);
			}
		} else if (cJSON_IsNumber(u)) {
			double d = u->valuedouble;
			if (!(d >= 1 && d <= (double)KEYS_EXPIRY_MAX) || (double)(int64_t)d != d) {
				keys_key_done(&key);
				return errbuf_set(err, errlen, -EINVAL, "[%zu].until: not a unix time in range", idx);
			}
			t = (time_t)d;
		} else {
			keys_key_done(&key);
			return errbuf_set(err, errlen, -EINVAL, "[%zu].until: not a string or number", idx);
		}
		key.options.expiry = t;
	}

	if (ca) {
		if (key.certificate) {
			keys_key_done(&key);
			return errbuf_set(err, errlen, -EINVAL, "[%zu].certAuthority: a certificate is no CA key", idx);
		}
		key.options.cert_authority = true;
		if (f[F_PRINCIPALS] && (r = parse_principals(f[F_PRINCIPALS], idx, &key.options.principals, err,
							       errlen)) < 0) {
			keys_key_done(&key);
			return r;
		}
	}

	/* What the executor will write must fit one key line. */
	_cleanup_free_ char *rendered = keys_render_line(&key);
	if (!rendered || strlen(rendered) > KEYS_LINE_MAX) {
		keys_key_done(&key);
		return errbuf_set(err, errlen, rendered ? -EMSGSIZE : -ENOMEM, "[%zu].publicKey: rendered line too long", idx);
	}

	uint64_t *serials = NULL;
	size_t n_serials = 0;
	if (f[F_SERIALS] && (r = parse_serials(f[F_SERIALS], idx, &serials, &n_serials, err, errlen)) < 0) {
		keys_key_done(&key);
		return r;
	}
	ret->user = strdup(user);
	if (!ret->user) {
		free(serials);
		keys_key_done(&key);
		return errbuf_set(err, errlen, -ENOMEM, "out of memory");
	}
	ret->key = key;
	ret->revoked = revoked;
	ret->revoked_serials = serials;
	ret->n_revoked_serials = n_serials;
	return 0;
}

int keydoc_parse_json(const char *data, size_t len, const struct keys_parse_params *params, struct keydoc *ret,
		      char *err, size_t errlen)
{
	if (len > KEYDOC_SIZE_MAX)
		return errbuf_set(err, errlen, -EMSGSIZE, "document: larger than %zu bytes", KEYDOC_SIZE_MAX);
	if (!data && len > 0)
		return errbuf_set(err, errlen, -EINVAL, "document: missing");
	if (has_nul(data, len))
		return errbuf_set(err, errlen, -EINVAL, "document: NUL byte or \\u0000 escape");

	/* A NUL-terminated copy, so nothing in cJSON can read past the end. */
	_cleanup_free_ char *copy = malloc(len + 1);
	if (!copy)
		return errbuf_set(err, errlen, -ENOMEM, "out of memory");
	if (len)
		memcpy(copy, data, len);
	copy[len] = '\0';

	const char *end = NULL;
	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_ParseWithLengthOpts(copy, len, &end, false);
	if (!root) {
		size_t off = end && end >= copy ? (size_t)(end - copy) : 0;
		return errbuf_set(err, errlen, -EINVAL, "document: invalid JSON near byte %zu", off);
	}
	/* Nothing but whitespace after the value. */
	for (size_t i = (size_t)(end - copy); i < len; i++)
		if (!(copy[i] == ' ' || copy[i] == '\t' || copy[i] == '\n' || copy[i] == '\r'))
			return errbuf_set(err, errlen, -EINVAL, "document: trailing data at byte %zu", i);
	if (!cJSON_IsArray(root))
		return errbuf_set(err, errlen, -EINVAL, "document: not a JSON array");

	size_t n = 0;
	for (const cJSON *c = root->child; c; c = c->next)
		if (++n > KEYDOC_ENTRIES_MAX)
			return errbuf_set(err, errlen, -EMSGSIZE, "document: more than %d entries", KEYDOC_ENTRIES_MAX);

	struct keydoc doc = {};
	doc.entries = calloc(n ? n : 1, sizeof(*doc.entries));
	if (!doc.entries)
		return errbuf_set(err, errlen, -ENOMEM, "out of memory");
	size_t idx = 0;
	for (const cJSON *c = root->child; c; c = c->next, idx++) {
		struct keydoc_entry ent = {};
		int r = parse_entry(c, idx, params, &ent, err, errlen);
		if (r < 0) {
			keydoc_done(&doc);
			return r;
		}
		size_t dup;
		if (find_dup(&doc, ent.user, ent.key.fingerprint, &dup)) {
			free(ent.user);
			free(ent.revoked_serials);
			keys_key_done(&ent.key);
			keydoc_done(&doc);
			return errbuf_set(err, errlen, -EINVAL, "[%zu]: same user and key as [%zu]", idx, dup);
		}
		doc.entries[doc.n++] = ent;
	}
	*ret = doc;
	return 0;
}

/* ---- Gardener's lines ------------------------------------------------- */

int keydoc_parse_lines(const char *data, size_t len, const char *user, const struct keys_parse_params *params,
		       struct keydoc *ret, char *err, size_t errlen)
{
	if (!keydoc_user_valid(user))
		return errbuf_set(err, errlen, -EINVAL, "user: invalid user name");
	if (len > KEYDOC_SIZE_MAX)
		return errbuf_set(err, errlen, -EMSGSIZE, "document: larger than %zu bytes", KEYDOC_SIZE_MAX);
	if (!data && len > 0)
		return errbuf_set(err, errlen, -EINVAL, "document: missing");

	struct keys_parse_params p = doc_params(params);
	struct keydoc doc = {};
	size_t cap = 0, lineno = 0, i = 0;
	int r;

	while (i < len) {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - data) : len;
		const char *s = data + i;
		size_t n = e - i;
		i = nl ? e + 1 : len;
		lineno++;

		size_t k = 0;
		while (k < n && (s[k] == ' ' || s[k] == '\t'))
			k++;
		if (k == n || s[k] == '#')
			continue;

		struct keys_key key = {};
		struct keys_error ke = {};
		/* Options only for a CA line: cert-authority, principals=,
		 * expiry-time=. */
		struct keys_parse_params po = p;
		po.allow_options = true;
		r = keys_parse_line_ex(s, n, &po, &key, &ke);
		if (r < 0) {
			keydoc_done(&doc);
			return errbuf_set(err, errlen, r, "line %zu: %s%s%s%s", lineno, ke.what, kerr_tok_pre(&ke), ke.token,
				    kerr_tok_post(&ke));
		}
		const struct keys_options *o = &key.options;
		if ((!o->cert_authority && (o->expiry || o->principals)) || o->restrict_ || o->no_flags || o->from) {
			keys_key_done(&key);
			keydoc_done(&doc);
			return errbuf_set(err, errlen, -EINVAL,
				    "line %zu: options other than cert-authority, principals= and expiry-time= of a CA",
				    lineno);
		}
		size_t dup;
		if (find_dup(&doc, user, key.fingerprint, &dup)) {
			keys_key_done(&key);
			continue;
		}
		if (doc.n >= KEYDOC_ENTRIES_MAX) {
			keys_key_done(&key);
			keydoc_done(&doc);
			return errbuf_set(err, errlen, -EMSGSIZE, "line %zu: more than %d keys", lineno, KEYDOC_ENTRIES_MAX);
		}
		if (doc.n == cap) {
			size_t nc = cap ? cap * 2 : 4;
			struct keydoc_entry *ne = realloc(doc.entries, nc * sizeof(*ne));
			if (!ne) {
				keys_key_done(&key);
				keydoc_done(&doc);
				return errbuf_set(err, errlen, -ENOMEM, "out of memory");
			}
			doc.entries = ne;
			cap = nc;
		}
		char *u = strdup(user);
		if (!u) {
			keys_key_done(&key);
			keydoc_done(&doc);
			return errbuf_set(err, errlen, -ENOMEM, "out of memory");
		}
		doc.entries[doc.n++] = (struct keydoc_entry){ .user = u, .key = key };
	}
	*ret = doc;
	return 0;
}
