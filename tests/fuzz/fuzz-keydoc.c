/* libFuzzer target for the key documents (lib/ssh/keydoc.c): the JSON document
 * and Gardener's lines. Every accepted key must render to a line that
 * parses back with the same fingerprint and expiry; anything else aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "keydoc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct keydoc *d)
{
	struct keys_parse_params p = { .allow_options = true };
	if (d->n > KEYDOC_ENTRIES_MAX)
		abort();
	for (size_t i = 0; i < d->n; i++) {
		const struct keydoc_entry *e = &d->entries[i];
		if (!keydoc_user_valid(e->user))
			abort();
		if (e->key.options.no_flags || e->key.options.restrict_ || e->key.options.from)
			abort();
		if (e->revoked && e->key.options.expiry)
			abort();
		char *line = keys_render_line(&e->key);
		if (!line)
			abort();
		struct keys_key k = {};
		if (keys_parse_line(line, strlen(line), &p, &k, NULL) != 0 ||
		    strcmp(k.fingerprint, e->key.fingerprint) != 0 || k.options.expiry != e->key.options.expiry)
			abort();
		keys_key_done(&k);
		free(line);
		for (size_t j = 0; j < i; j++)
			if (strcmp(d->entries[j].user, e->user) == 0 &&
			    strcmp(d->entries[j].key.fingerprint, e->key.fingerprint) == 0)
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct keydoc d = {};
	char err[KEYDOC_ERR_MAX];
	if (keydoc_parse_json((const char *)data, size, NULL, &d, err, sizeof(err)) == 0) {
		check(&d);
		keydoc_done(&d);
	} else if (strnlen(err, sizeof(err)) >= sizeof(err)) {
		abort();
	}
	if (keydoc_parse_lines((const char *)data, size, "gardener", NULL, &d, err, sizeof(err)) == 0) {
		check(&d);
		keydoc_done(&d);
	}
	return 0;
}
