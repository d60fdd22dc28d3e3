/* Host keys and restart requests; see node.h. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "desired.h"
#include "fsx.h"
#include "keys.h"
#include "node.h"
#include "osc.h"

static const char *const host_key_files[] = {
	"ssh_host_ed25519_key.pub",
	"ssh_host_ecdsa_key.pub",
	"ssh_host_rsa_key.pub",
};

int node_read_host_keys(int root_fd, unsigned rsa_min_bits, char **ret, unsigned *ret_skipped)
{
	_cleanup_close_ int dir = fsx_open_dir_at(root_fd, "/etc/ssh", 0, 0);
	unsigned skipped = 0;
	if (dir < 0) {
		*ret = NULL;
		*ret_skipped = 0;
		return 0;
	}
	_cleanup_free_ char *out = NULL;
	size_t out_len = 0;
	for (size_t i = 0; i < ELEMENTSOF(host_key_files); i++) {
		_cleanup_free_ char *text = NULL;
		size_t len;
		int r = fsx_read_at(dir, host_key_files[i], KEYS_LINE_MAX, &text, &len);
		if (r == -ENOENT)
			continue;
		if (r < 0) {
			skipped++;
			continue;
		}
		struct keys_key k = {};
		struct keys_parse_params p = { .rsa_min_bits = rsa_min_bits };
		if (keys_parse_public(text, len, &p, &k, NULL) < 0 || k.certificate) {
			keys_key_done(&k);
			skipped++;
			continue;
		}
		size_t add = strlen(k.type_name) + 1 + strlen(k.blob_b64) + 1;
		char *b = realloc(out, out_len + add + 1);
		if (!b) {
			keys_key_done(&k);
			return -ENOMEM;
		}
		out = b;
		snprintf(out + out_len, add + 1, "%s%s %s", out_len ? "\n" : "", k.type_name, k.blob_b64);
		out_len += strlen(out + out_len);
		keys_key_done(&k);
	}
	*ret = TAKE_PTR(out);
	*ret_skipped = skipped;
	return 0;
}

int node_parse_restart(const char *value, char ***ret, char *bad, size_t badlen)
{
	_cleanup_strv_free_ char **units = NULL;
	size_t n = 0;
	const char *p = value;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		/* Trim blanks around the item. */
		const char *s = p;
		size_t l = len;
		while (l > 0 && (*s == ' ' || *s == '\t')) {
			s++;
			l--;
		}
		while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t'))
			l--;
		p = end ? end + 1 : p + len;
		if (l == 0)
			continue;
		if (n >= DESIRED_RESTART_UNITS_MAX)
			return -E2BIG;
		if (l > 250) {
			snprintf(bad, badlen, "%.40s...", s);
			return -EINVAL;
		}
		char name[272];
		memcpy(name, s, l);
		name[l] = '\0';
		if (!osc_unit_name_is_valid(name)) {
			memcpy(name + l, ".service", sizeof(".service"));
			if (!osc_unit_name_is_valid(name)) {
				snprintf(bad, badlen, "%.*s", (int)l, s);
				return -EINVAL;
			}
		}
		/* Duplicates are dropped: one restart each. */
		bool dup = false;
		for (size_t i = 0; i < n; i++)
			if (strcmp(units[i], name) == 0)
				dup = true;
		if (dup)
			continue;
		char **u = realloc(units, (n + 2) * sizeof(char *));
		if (!u)
			return -ENOMEM;
		units = u;
		units[n] = strdup(name);
		if (!units[n])
			return -ENOMEM;
		units[++n] = NULL;
	}
	if (n == 0)
		return -ENODATA;
	*ret = TAKE_PTR(units);
	return 0;
}

void node_restart_id(const char *rv, const char *value, char out[static NODE_RESTART_ID_MAX])
{
	unsigned char md[32];
	unsigned int l = 0;
	EVP_Digest(value, strlen(value), md, &l, EVP_sha256(), NULL);
	snprintf(out, NODE_RESTART_ID_MAX, "%.64s-%02x%02x%02x%02x%02x%02x%02x%02x", rv ? rv : "0", md[0], md[1],
		 md[2], md[3], md[4], md[5], md[6], md[7]);
}
