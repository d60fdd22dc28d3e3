/* libFuzzer target for the key line parser (lib/ssh/keys.c).
 *
 * Every input is parsed as an authorized_keys line with and without options
 * allowed and as a bare public key. Whatever is accepted must render to a
 * line that parses back to the same key (same blob, fingerprint, options,
 * comment, and byte-identical rendering), and its blob must parse on its
 * own as sshd's %t/%k would hand it over; anything else aborts.
 *
 * Inputs of the form "type\0raw blob" also go to keys_parse_blob()
 * directly, so mutations reach the wire-format walker (certificates, mpints,
 * curve points) without having to survive base64 first. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_key(const struct keys_key *a, const struct keys_key *b)
{
	if (a->type != b->type || a->certificate != b->certificate || a->bits != b->bits ||
	    a->blob_len != b->blob_len || memcmp(a->blob, b->blob, a->blob_len) != 0 ||
	    strcmp(a->fingerprint, b->fingerprint) != 0 || strcmp(a->blob_b64, b->blob_b64) != 0 ||
	    strcmp(a->type_name, b->type_name) != 0)
		abort();
	if (a->options.expiry != b->options.expiry || a->options.no_flags != b->options.no_flags ||
	    a->options.restrict_ != b->options.restrict_ || !a->options.from != !b->options.from ||
	    (a->options.from && strcmp(a->options.from, b->options.from) != 0) ||
	    a->options.cert_authority != b->options.cert_authority || !a->options.principals != !b->options.principals ||
	    (a->options.principals && strcmp(a->options.principals, b->options.principals) != 0))
		abort();
	if (a->options.principals && !a->options.cert_authority)
		abort();
	if (!a->comment != !b->comment || (a->comment && strcmp(a->comment, b->comment) != 0))
		abort();
}

static void round_trip(const struct keys_key *k, const struct keys_parse_params *p)
{
	char *line = keys_render_line(k);
	if (!line)
		abort();
	size_t len = strlen(line);
	if (len > KEYS_LINE_MAX || memchr(line, '\n', len) || memchr(line, '\r', len))
		abort();
	struct keys_parse_params all = *p;
	all.allow_options = true;
	struct keys_key k2 = {};
	if (keys_parse_line(line, len, &all, &k2, NULL) != 0)
		abort();
	same_key(k, &k2);
	char *line2 = keys_render_line(&k2);
	if (!line2 || strcmp(line, line2) != 0)
		abort();
	/* Without options allowed the rendering parses only if it has none. */
	bool has_opts = k->options.expiry || k->options.no_flags || k->options.restrict_ || k->options.from ||
			k->options.cert_authority;
	struct keys_key k3 = {};
	int r = keys_parse_public(line, len, p, &k3, NULL);
	if ((r == 0) == has_opts)
		abort();
	keys_key_done(&k3);
	/* The blob alone. */
	struct keys_key k4 = {};
	if (keys_parse_blob(k->type_name, k->blob, k->blob_len, p, &k4, NULL) != 0 ||
	    strcmp(k4.fingerprint, k->fingerprint) != 0)
		abort();
	keys_key_done(&k4);
	keys_key_done(&k2);
	free(line2);
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	for (int allow = 0; allow < 2; allow++) {
		struct keys_parse_params p = { .allow_options = allow };
		struct keys_key k = {};
		struct keys_error e = {};
		int r = keys_parse_line_ex(s, size, &p, &k, &e);
		if (r == 0) {
			round_trip(&k, &p);
			keys_key_done(&k);
		} else if (r > 0 || !e.what || strlen(e.token) >= KEYS_ERROR_TOKEN_MAX) {
			abort();
		}
	}
	const char *nul = memchr(s, '\0', size < 64 ? size : 64);
	if (nul) {
		struct keys_key kb = {};
		struct keys_parse_params p = {};
		if (keys_parse_blob(s, data + (nul - s) + 1, size - (size_t)(nul - s) - 1, &p, &kb, NULL) == 0) {
			round_trip(&kb, &p);
			keys_key_done(&kb);
		}
	}
	struct keys_key k = {};
	if (keys_parse_public(s, size, NULL, &k, NULL) == 0) {
		if (k.options.expiry || k.options.no_flags || k.options.restrict_ || k.options.from)
			abort();
		keys_key_done(&k);
	}
	/* The expiry parser on a NUL-terminated prefix. */
	char buf[24];
	size_t n = size < sizeof(buf) - 1 ? size : sizeof(buf) - 1;
	memcpy(buf, data, n);
	buf[n] = '\0';
	time_t t;
	if (keys_parse_expiry(buf, &t) == 0) {
		char out[16];
		time_t t2;
		keys_format_expiry(t, out);
		if (keys_parse_expiry(out, &t2) != 0 || t2 != t)
			abort();
	}
	return 0;
}
