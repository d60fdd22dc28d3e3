/* Merging managed SSH keys into authorized_keys; see keymerge.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "keymerge.h"

int keymerge_split(const char *text, size_t len, struct keymerge_line **ret)
{
	size_t n = 0, cap = 0;
	struct keymerge_line *v = NULL;
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			struct keymerge_line *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = (struct keymerge_line){ .text = p, .len = (size_t)(e - p), .fingerprint = NULL };
		p = nl ? nl + 1 : end;
	}
	*ret = v;
	return (int)n;
}

bool keymerge_shrink_refused(size_t n_prev, size_t n_new, double max_shrink, bool ssh_access)
{
	if (!ssh_access || n_prev == 0)
		return false;
	if (n_new == 0)
		return true;
	if (n_new >= n_prev)
		return false;
	return (double)(n_prev - n_new) > max_shrink * (double)n_prev;
}

static bool expired(const struct state_key *k, time_t now)
{
	return k->expiry != 0 && k->expiry <= now;
}

static const struct state_key *find_key(const struct state_key *v, size_t n, const char *fp)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].fingerprint, fp) == 0)
			return &v[i];
	return NULL;
}

void keymerge_result_done(struct keymerge_result *r)
{
	for (size_t i = 0; i < r->n_managed; i++) {
		free(r->managed[i].fingerprint);
		free(r->managed[i].line);
	}
	free(r->managed);
	free(r->content);
	*r = (struct keymerge_result){ 0 };
}

static int append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 2 > *cap) {
		size_t nc = (*cap ? *cap : 256);
		while (nc < *len + n + 2)
			nc *= 2;
		char *nb = realloc(*buf, nc);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[(*len)++] = '\n';
	(*buf)[*len] = '\0';
	return 0;
}

int keymerge_compute(const struct keymerge_line *lines, size_t n_lines, const struct state_user *prev,
		     const struct state_key *want, size_t n_want, const struct keymerge_params *p,
		     struct keymerge_result *ret)
{
	struct keymerge_result r = { 0 };
	const struct state_key *prev_keys = prev ? prev->keys : NULL;
	size_t n_prev = prev ? prev->n_keys : 0, n_prev_live = 0;
	int e = -ENOMEM;

	/* The wanted set: valid (unexpired) keys, unique by fingerprint. */
	_cleanup_free_ const struct state_key **valid = calloc(n_want + n_prev + 1, sizeof(*valid));
	size_t n_valid = 0;
	if (!valid)
		return -ENOMEM;
	for (size_t i = 0; i < n_want; i++) {
		if (expired(&want[i], p->now))
			continue;
		bool dup = false;
		for (size_t j = 0; j < n_valid && !dup; j++)
			dup = strcmp(valid[j]->fingerprint, want[i].fingerprint) == 0;
		if (!dup)
			valid[n_valid++] = &want[i];
	}
	for (size_t i = 0; i < n_prev; i++)
		if (!expired(&prev_keys[i], p->now))
			n_prev_live++;

	if (keymerge_shrink_refused(n_prev_live, n_valid, p->max_shrink, p->ssh_access)) {
		r.refused = true;
		n_valid = 0;
		for (size_t i = 0; i < n_prev; i++)
			if (!expired(&prev_keys[i], p->now))
				valid[n_valid++] = &prev_keys[i];
	}

	r.managed = calloc(n_valid ? n_valid : 1, sizeof(*r.managed));
	if (!r.managed)
		goto fail;
	for (size_t i = 0; i < n_valid; i++) {
		r.managed[i].fingerprint = strdup(valid[i]->fingerprint);
		r.managed[i].line = strdup(valid[i]->line);
		r.managed[i].expiry = valid[i]->expiry;
		r.n_managed++;
		if (!r.managed[i].fingerprint || !r.managed[i].line)
			goto fail;
		if (!find_key(prev_keys, n_prev, valid[i]->fingerprint))
			r.added++;
	}
	for (size_t i = 0; i < n_prev; i++) {
		if (find_key(r.managed, r.n_managed, prev_keys[i].fingerprint))
			continue;
		if (expired(&prev_keys[i], p->now))
			r.expired++;
		else
			r.dropped++;
	}
	/* Wanted keys that had expired before they were ever applied. */
	for (size_t i = 0; i < n_want; i++)
		if (expired(&want[i], p->now) && !find_key(prev_keys, n_prev, want[i].fingerprint))
			r.expired++;

	size_t cap = 0;
	for (size_t i = 0; i < n_lines; i++) {
		const char *fp = lines[i].fingerprint;
		bool ours = fp && (find_key(prev_keys, n_prev, fp) || find_key(want, n_want, fp) ||
				   find_key(r.managed, r.n_managed, fp) ||
				   (prev && find_key(prev->stale, prev->n_stale, fp)));
		if (ours)
			continue;
		if (p->exclusive || (p->keys_only && !fp)) {
			r.unmanaged_dropped++;
			continue;
		}
		if (append(&r.content, &r.len, &cap, lines[i].text, lines[i].len) < 0)
			goto fail;
		r.unmanaged_kept++;
	}
	for (size_t i = 0; i < r.n_managed; i++)
		if (append(&r.content, &r.len, &cap, r.managed[i].line, strlen(r.managed[i].line)) < 0)
			goto fail;
	if (!r.content && !(r.content = calloc(1, 1)))
		goto fail;
	*ret = r;
	return 0;
fail:
	keymerge_result_done(&r);
	return e;
}
