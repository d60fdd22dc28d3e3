/* The operator's revocation files; see revlist.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "revlist.h"

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* One line (without its newline) into *h: 1 an entry, 0 nothing (blank
 * or comment), -EBADMSG with why. */
static int parse_line(const char *p, size_t n, const struct keys_parse_params *params, struct krl_hash *h,
		      const char **why)
{
	while (n && blank(*p))
		p++, n--;
	while (n && (blank(p[n - 1]) || p[n - 1] == '\r'))
		n--;
	if (n == 0 || *p == '#')
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 && p[i] != '\t') {
			*why = "control character";
			return -EBADMSG;
		}
	if (n >= 7 && memcmp(p, "SHA256:", 7) == 0) {
		size_t k = 7;
		while (k < n && !blank(p[k]))
			k++;
		char fp[KEYS_FINGERPRINT_MAX];
		if (k >= sizeof(fp)) {
			*why = "not a SHA256 fingerprint (SHA256: and 43 characters of base64)";
			return -EBADMSG;
		}
		memcpy(fp, p, k);
		fp[k] = '\0';
		if (krl_hash_from_fingerprint(fp, h) < 0) {
			*why = "not a SHA256 fingerprint (SHA256: and 43 characters of base64)";
			return -EBADMSG;
		}
		return 1;
	}
	if (n > KEYS_LINE_MAX) {
		*why = "line too long";
		return -EBADMSG;
	}
	struct keys_key key;
	const char *what = NULL;
	int r = keys_parse_public(p, n, params, &key, &what);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		*why = what ? what : "not a public key";
		return -EBADMSG;
	}
	r = krl_hash_from_fingerprint(key.fingerprint, h);
	keys_key_done(&key);
	if (r < 0) {
		*why = "no SHA256 fingerprint";
		return -EBADMSG;
	}
	return 1;
}

int revlist_parse(const char *data, size_t len, const struct keys_parse_params *params, struct krl_hash **ret,
		  char *err, size_t err_size)
{
	if (len > REVLIST_FILE_MAX) {
		if (err_size)
			snprintf(err, err_size, "more than %d bytes", REVLIST_FILE_MAX);
		return -E2BIG;
	}
	struct krl_hash *v = NULL;
	size_t n = 0, cap = 0;
	unsigned line = 0;
	for (size_t off = 0; off < len;) {
		const char *p = data + off;
		const char *nl = memchr(p, '\n', len - off);
		size_t l = nl ? (size_t)(nl - p) : len - off;
		off += l + (nl ? 1 : 0);
		line++;
		struct krl_hash h;
		const char *why = NULL;
		int r = parse_line(p, l, params, &h, &why);
		if (r == 0)
			continue;
		if (r < 0) {
			free(v);
			if (r == -EBADMSG && err_size)
				snprintf(err, err_size, "line %u: %s", line, why ? why : "invalid");
			return r;
		}
		if (n == REVLIST_ENTRIES_MAX) {
			free(v);
			if (err_size)
				snprintf(err, err_size, "line %u: more than %d keys", line, REVLIST_ENTRIES_MAX);
			return -E2BIG;
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct krl_hash *nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = h;
	}
	n = krl_hash_sort_unique(v, n);
	if (n == 0) {
		free(v);
		v = NULL;
	}
	*ret = v;
	return (int)n;
}
