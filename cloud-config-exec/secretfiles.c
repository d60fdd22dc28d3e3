/* Files from a Secret, the executor's half; see secretfiles.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "secretfiles.h"

static const struct desired_secret_file *find(const struct desired *d, const char *path)
{
	for (size_t i = 0; d && i < d->n_secret_files; i++)
		if (strcmp(d->secret_files[i].path, path) == 0)
			return &d->secret_files[i];
	return NULL;
}

int secretfiles_resolve(struct osc *o, const struct desired *d)
{
	int missing = 0;
	for (size_t i = 0; i < o->n_files; i++) {
		struct osc_file *f = &o->files[i];
		if (f->source != OSC_SOURCE_SECRET)
			continue;
		const struct desired_secret_file *s = find(d, f->path);
		if (!s) {
			missing++;
			continue;
		}
		unsigned char *c = malloc(s->len + 1);
		if (!c)
			return -ENOMEM;
		if (s->len)
			memcpy(c, s->data, s->len);
		c[s->len] = '\0';
		free(f->content);
		f->content = c;
		f->content_len = s->len;
		f->secret_resolved = true;
	}
	return missing;
}

int secretfiles_describe_missing(const struct osc *o, char **ret)
{
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	for (size_t i = 0; i < o->n_files; i++) {
		const struct osc_file *f = &o->files[i];
		if (f->source != OSC_SOURCE_SECRET || f->secret_resolved)
			continue;
		char *n = NULL;
		int k = asprintf(&n, "%s%s%s (Secret kube-system/%s, key %s)", out ? out : "file ", out ? ", " : "", f->path,
				 f->secret_name, f->secret_key);
		if (k < 0)
			return -ENOMEM;
		/* "file A (...), B (...)": the prefix only once. */
		free(out);
		out = n;
		len = (size_t)k;
		if (len > 2048)
			break; /* enough to name the problem */
	}
	if (out) {
		char *n = NULL;
		if (asprintf(&n, "%s not read by node-agent: not written, the content on disk stays", out) < 0)
			return -ENOMEM;
		free(out);
		out = n;
	}
	*ret = TAKE_PTR(out);
	return 0;
}
