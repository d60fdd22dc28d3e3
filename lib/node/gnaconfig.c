/* gardener-node-agent's stock user data; see gnaconfig.h.
 *
 * The types and field names follow gardener/gardener
 * pkg/apis/config/nodeagent/v1alpha1/types.go (NodeAgentConfiguration,
 * APIServer, OperatingSystemConfigControllerConfig, TokenControllerConfig,
 * TokenSecretSyncConfig). Gardener decodes the file with a strict-enough
 * Kubernetes codec but keeps adding fields, so unknown keys are ignored
 * here; the keys this project uses must have Gardener's types. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "b64.h"
#include "cleanup.h"
#include "errbuf.h"
#include "fsx.h"
#include "gnaconfig.h"
#include "kube.h"
#include "osc.h"
#include "urlx.h"
#include "ytree.h"

#define GNA_API_VERSION "nodeagent.config.gardener.cloud/v1alpha1"
#define GNA_KIND "NodeAgentConfiguration"
#define STRING_MAX 4096u
#define DURATION_MAX_MS (366ull * 24 * 3600 * 1000)

struct ctx {
	char *err;
	size_t errlen;
};

#define fail(c, r, ...) errbuf_set((c)->err, (c)->errlen, r, __VA_ARGS__)

static int map_get(struct ctx *c, const struct ynode *map, const char *where, const char *key,
		   const struct ynode **ret)
{
	size_t line = 0;
	if (ytree_map_get(map, key, ret, &line) < 0)
		return fail(c, -EINVAL, "%s%s: duplicate key (line %zu)", where, key, line);
	return 0;
}

static int wrong_type(struct ctx *c, const char *where, const char *key, const struct ynode *n, const char *want)
{
	char d[YTREE_DESCRIBE_MAX];
	return fail(c, -EINVAL, "%s%s: expected %s, got %s", where, key, want, ytree_describe(d, sizeof(d), n));
}

static int get_map(struct ctx *c, const struct ynode *map, const char *where, const char *key,
		   const struct ynode **ret)
{
	const struct ynode *n;
	int r = map_get(c, map, where, key, &n);
	if (r < 0)
		return r;
	if (n && n->type != Y_MAP)
		return wrong_type(c, where, key, n, "a mapping");
	*ret = n;
	return 0;
}

/* A string without NUL or control characters, at most STRING_MAX bytes;
 * *ret is a copy (NULL when absent). */
static int get_str(struct ctx *c, const struct ynode *map, const char *where, const char *key, char **ret)
{
	const struct ynode *n;
	int r = map_get(c, map, where, key, &n);
	if (r < 0)
		return r;
	if (!n) {
		*ret = NULL;
		return 0;
	}
	if (n->type != Y_SCALAR || n->kind != YS_STR)
		return wrong_type(c, where, key, n, "a string");
	if (n->len > STRING_MAX)
		return fail(c, -EMSGSIZE, "%s%s: longer than %u bytes (line %zu)", where, key, STRING_MAX, n->line);
	for (size_t i = 0; i < n->len; i++) {
		unsigned char ch = (unsigned char)n->value[i];
		if (ch < 0x20 || ch == 0x7f) {
			char q[YTREE_QUOTE_MAX * 4 + 8];
			return fail(c, -EINVAL, "%s%s: control character in '%s' (line %zu)", where, key,
				    ytree_quote(q, sizeof(q), n->value, n->len), n->line);
		}
	}
	char *s = strdup(n->value);
	if (!s)
		return fail(c, -ENOMEM, "out of memory");
	*ret = s;
	return 0;
}

/* Semantic version text as Masterminds/semver accepts it (loosely):
 * an optional "v", then digits, dots, and [-+] suffix characters. */
static bool version_ok(const char *s)
{
	if (*s == 'v')
		s++;
	if (!(*s >= '0' && *s <= '9') || strlen(s) > 64)
		return false;
	for (; *s; s++) {
		char ch = *s;
		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '.' ||
		      ch == '-' || ch == '+'))
			return false;
	}
	return true;
}

int gna_duration_parse(const char *s, uint64_t *ret_ms)
{
	static const struct {
		const char *unit;
		double ms;
	} units[] = {
		/* Longest first, so "ms" is not read as "m" + "s". */
		{ "ns", 1e-6 }, { "us", 1e-3 }, { "\xc2\xb5s", 1e-3 }, { "ms", 1.0 },
		{ "s", 1e3 },	{ "m", 6e4 },	{ "h", 3.6e6 },
	};
	if (!s || !*s)
		return -EINVAL;
	double total = 0;
	const char *p = s;
	while (*p) {
		double v = 0, scale = 1;
		bool digits = false;
		while (*p >= '0' && *p <= '9') {
			v = v * 10 + (*p++ - '0');
			digits = true;
			if (v > 1e15)
				return -ERANGE;
		}
		if (*p == '.') {
			p++;
			while (*p >= '0' && *p <= '9') {
				scale /= 10;
				v += (*p++ - '0') * scale;
				digits = true;
			}
		}
		if (!digits)
			return -EINVAL;
		size_t i;
		for (i = 0; i < ELEMENTSOF(units); i++) {
			size_t ul = strlen(units[i].unit);
			if (strncmp(p, units[i].unit, ul) == 0) {
				total += v * units[i].ms;
				p += ul;
				break;
			}
		}
		if (i == ELEMENTSOF(units))
			return -EINVAL;
		if (total > (double)DURATION_MAX_MS)
			return -ERANGE;
	}
	if (total < 1.0)
		return -EINVAL;
	*ret_ms = (uint64_t)total;
	return 0;
}

static int get_duration(struct ctx *c, const struct ynode *map, const char *where, const char *key,
			uint64_t *ret)
{
	_cleanup_free_ char *s = NULL;
	int r = get_str(c, map, where, key, &s);
	if (r < 0)
		return r;
	if (!s) {
		*ret = 0;
		return 0;
	}
	r = gna_duration_parse(s, ret);
	if (r < 0) {
		char q[YTREE_QUOTE_MAX * 4 + 8];
		return fail(c, -EINVAL, "%s%s: not a positive duration up to 366 days: '%s'", where, key,
			    ytree_quote(q, sizeof(q), s, strlen(s)));
	}
	return 0;
}

static void syncs_free(struct gna_token_sync *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(t[i].secret_name);
		free(t[i].path);
	}
	free(t);
}

static int parse_syncs(struct ctx *c, const struct ynode *token, struct gnaconfig *g)
{
	const struct ynode *list;
	int r = map_get(c, token, "controllers.token.", "syncConfigs", &list);
	if (r < 0)
		return r;
	if (!list)
		return 0;
	if (list->type != Y_SEQ)
		return wrong_type(c, "controllers.token.", "syncConfigs", list, "a list");
	if (list->n_items > GNACONFIG_SYNCS_MAX)
		return fail(c, -EMSGSIZE, "controllers.token.syncConfigs: more than %u entries", GNACONFIG_SYNCS_MAX);
	if (list->n_items == 0)
		return 0;
	g->token_syncs = calloc(list->n_items, sizeof(*g->token_syncs));
	if (!g->token_syncs)
		return fail(c, -ENOMEM, "out of memory");
	for (size_t i = 0; i < list->n_items; i++) {
		const struct ynode *e = list->items[i];
		char where[64];
		snprintf(where, sizeof(where), "controllers.token.syncConfigs[%zu].", i);
		if (e->type != Y_MAP)
			return wrong_type(c, where, "", e, "a mapping");
		struct gna_token_sync *t = &g->token_syncs[g->n_token_syncs++];
		if ((r = get_str(c, e, where, "secretName", &t->secret_name)) < 0 ||
		    (r = get_str(c, e, where, "path", &t->path)) < 0)
			return r;
		if (!t->secret_name || !t->path)
			return fail(c, -EINVAL, "%s%s: missing", where, t->secret_name ? "path" : "secretName");
		if (!kube_name_is_valid(t->secret_name))
			return fail(c, -EINVAL, "%ssecretName: not a valid Kubernetes name", where);
		if (!fsx_path_is_safe(t->path, PATH_MAX))
			return fail(c, -EINVAL, "%spath: not an absolute normalised path", where);
		for (size_t j = 0; j + 1 < g->n_token_syncs; j++)
			if (strcmp(g->token_syncs[j].path, t->path) == 0)
				return fail(c, -EINVAL, "%spath: also the path of syncConfigs[%zu]", where, j);
	}
	return 0;
}

static int parse_root(struct ctx *c, const struct ynode *root, struct gnaconfig *g)
{
	char q[YTREE_QUOTE_MAX * 4 + 8];
	_cleanup_free_ char *api = NULL, *kind = NULL, *bundle = NULL;
	int r;

	if (root->type != Y_MAP)
		return wrong_type(c, "", "(document)", root, "a mapping");
	if ((r = get_str(c, root, "", "apiVersion", &api)) < 0 || (r = get_str(c, root, "", "kind", &kind)) < 0)
		return r;
	if (!api || strcmp(api, GNA_API_VERSION) != 0)
		return fail(c, -EINVAL, "apiVersion: '%s' is not " GNA_API_VERSION,
			    api ? ytree_quote(q, sizeof(q), api, strlen(api)) : "");
	if (!kind || strcmp(kind, GNA_KIND) != 0)
		return fail(c, -EINVAL, "kind: '%s' is not " GNA_KIND,
			    kind ? ytree_quote(q, sizeof(q), kind, strlen(kind)) : "");

	const struct ynode *apiserver, *controllers, *osc = NULL, *token = NULL, *bootstrap, *dv = NULL;
	if ((r = get_map(c, root, "", "apiServer", &apiserver)) < 0 ||
	    (r = get_map(c, root, "", "controllers", &controllers)) < 0 ||
	    (r = get_map(c, root, "", "bootstrap", &bootstrap)) < 0)
		return r;
	if (bootstrap && (r = map_get(c, bootstrap, "bootstrap.", "kubeletDataVolumeSize", &dv)) < 0)
		return r;
	if (dv) {
		if (dv->type != Y_SCALAR || dv->kind != YS_INT)
			return wrong_type(c, "bootstrap.", "kubeletDataVolumeSize", dv, "an integer");
		if (dv->int_value <= 0)
			return fail(c, -EINVAL, "bootstrap.kubeletDataVolumeSize: expected a size in bytes > 0, got %lld (line %zu)",
				    (long long)dv->int_value, dv->line);
		g->kubelet_data_volume_size = (uint64_t)dv->int_value;
	}
	if (apiserver) {
		if ((r = get_str(c, apiserver, "apiServer.", "server", &g->server)) < 0 ||
		    (r = get_str(c, apiserver, "apiServer.", "caFile", &g->ca_file)) < 0 ||
		    (r = get_str(c, apiserver, "apiServer.", "caBundle", &bundle)) < 0)
			return r;
		if (g->server && !urlx_https_is_valid(g->server))
			return fail(c, -EINVAL, "apiServer.server: expected an https:// URL: '%s'",
				    ytree_quote(q, sizeof(q), g->server, strlen(g->server)));
		if (g->ca_file && !fsx_path_is_safe(g->ca_file, PATH_MAX))
			return fail(c, -EINVAL, "apiServer.caFile: not an absolute normalised path: '%s'",
				    ytree_quote(q, sizeof(q), g->ca_file, strlen(g->ca_file)));
		if (bundle) {
			/* []byte in Go: base64 in JSON and YAML. */
			r = b64_decode(bundle, strlen(bundle), GNACONFIG_CA_MAX, 0, &g->ca_bundle, &g->ca_bundle_len);
			if (r < 0)
				return fail(c, -EINVAL, "apiServer.caBundle: not base64 of at most %u bytes",
					    GNACONFIG_CA_MAX);
		}
	}
	if (controllers) {
		if ((r = get_map(c, controllers, "controllers.", "operatingSystemConfig", &osc)) < 0 ||
		    (r = get_map(c, controllers, "controllers.", "token", &token)) < 0)
			return r;
	}
	if (osc) {
		const char *w = "controllers.operatingSystemConfig.";
		const struct ynode *v;
		if ((r = get_str(c, osc, w, "secretName", &g->secret_name)) < 0 ||
		    (r = get_duration(c, osc, w, "syncPeriod", &g->sync_period_ms)) < 0)
			return r;
		/* *semver.Version: a JSON string; a YAML 1.33 would be a float
		 * and fails Gardener's decoder too. */
		if ((r = map_get(c, osc, w, "kubernetesVersion", &v)) < 0)
			return r;
		if (v && (v->type != Y_SCALAR || v->kind != YS_STR))
			return wrong_type(c, w, "kubernetesVersion", v, "a string");
		if ((r = get_str(c, osc, w, "kubernetesVersion", &g->kubernetes_version)) < 0)
			return r;
		if (g->secret_name && !kube_name_is_valid(g->secret_name))
			return fail(c, -EINVAL, "%ssecretName: not a valid Kubernetes name: '%s'", w,
				    ytree_quote(q, sizeof(q), g->secret_name, strlen(g->secret_name)));
		if (g->kubernetes_version && !version_ok(g->kubernetes_version))
			return fail(c, -EINVAL, "%skubernetesVersion: not a version: '%s'", w,
				    ytree_quote(q, sizeof(q), g->kubernetes_version, strlen(g->kubernetes_version)));
	}
	if (token) {
		if ((r = get_duration(c, token, "controllers.token.", "syncPeriod", &g->token_sync_period_ms)) < 0 ||
		    (r = parse_syncs(c, token, g)) < 0)
			return r;
	}
	return 0;
}

int gnaconfig_parse(const char *data, size_t len, struct gnaconfig *ret, char *err, size_t errlen)
{
	struct ctx c = { .err = err, .errlen = errlen };
	if (err && errlen > 0)
		*err = '\0';
	if (!data && len > 0)
		return fail(&c, -EINVAL, "no input");
	if (len > GNACONFIG_INPUT_MAX)
		return fail(&c, -EMSGSIZE, "larger than %u bytes", GNACONFIG_INPUT_MAX);
	_cleanup_(ynode_freep) struct ynode *root = NULL;
	int r = ytree_load(data ? data : "", len, &root, err, errlen);
	if (r < 0)
		return r;
	struct gnaconfig g = {};
	r = parse_root(&c, root, &g);
	if (r < 0) {
		gnaconfig_done(&g);
		return r;
	}
	*ret = g;
	return 0;
}

void gnaconfig_done(struct gnaconfig *c)
{
	if (!c)
		return;
	free(c->server);
	free(c->ca_file);
	free(c->ca_bundle);
	free(c->secret_name);
	free(c->kubernetes_version);
	syncs_free(c->token_syncs, c->n_token_syncs);
	*c = (struct gnaconfig){};
}

int gna_machine_name_parse(const char *data, size_t len, char **ret, char *err, size_t errlen)
{
	struct ctx c = { .err = err, .errlen = errlen };
	if (err && errlen > 0)
		*err = '\0';
	size_t n = 0;
	while (n < len && data[n] != '\n')
		n++;
	while (n > 0 && (data[n - 1] == ' ' || data[n - 1] == '\t' || data[n - 1] == '\r'))
		n--;
	if (n == 0)
		return fail(&c, -EINVAL, "empty");
	if (n > GNA_MACHINE_NAME_MAX)
		return fail(&c, -EINVAL, "longer than %u bytes", GNA_MACHINE_NAME_MAX);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)data[i];
		if (ch < 0x20 || ch >= 0x7f) {
			char q[YTREE_QUOTE_MAX * 4 + 8];
			return fail(&c, -EINVAL, "control or non-ASCII character at byte %zu in '%s'", i,
				    ytree_quote(q, sizeof(q), data, n));
		}
	}
	if (n == 16 && memcmp(data, "<<MACHINE_NAME>>", 16) == 0)
		return fail(&c, -EINVAL, "still the user-data placeholder '<<MACHINE_NAME>>'");
	char *s = strndup(data, n);
	if (!s)
		return fail(&c, -ENOMEM, "out of memory");
	*ret = s;
	return 0;
}

/* Compares two version strings (without "v"): dotted numbers, then a
 * release above its pre-releases ("1.2.3" > "1.2.3-dev"). */
static int version_cmp(const char *a, const char *b)
{
	for (;;) {
		unsigned long long x = 0, y = 0;
		bool dx = false, dy = false;
		while (*a >= '0' && *a <= '9' && x < ULLONG_MAX / 10) {
			x = x * 10 + (unsigned)(*a++ - '0');
			dx = true;
		}
		while (*b >= '0' && *b <= '9' && y < ULLONG_MAX / 10) {
			y = y * 10 + (unsigned)(*b++ - '0');
			dy = true;
		}
		if (dx != dy)
			return dx ? 1 : -1;
		if (x != y)
			return x < y ? -1 : 1;
		if (*a == '.' && *b == '.') {
			a++;
			b++;
			continue;
		}
		if (*a == '.')
			return 1;
		if (*b == '.')
			return -1;
		/* Both at a suffix or the end: no suffix is the release. */
		if (!*a || !*b)
			return !*a && !*b ? 0 : !*a ? 1 : -1;
		return strcmp(a, b) < 0 ? -1 : strcmp(a, b) > 0;
	}
}

/* The version in "config-<version>.yaml", or NULL. */
static const char *config_version(const char *name, size_t *len)
{
	size_t n = strlen(name);
	if (n <= 12 || strncmp(name, "config-", 7) != 0 || strcmp(name + n - 5, ".yaml") != 0)
		return NULL;
	const char *v = name + 7;
	*len = n - 12;
	if (*v == 'v') {
		v++;
		(*len)--;
	}
	if (*len == 0 || !(*v >= '0' && *v <= '9'))
		return NULL;
	for (size_t i = 0; i < *len; i++)
		if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') ||
		      v[i] == '.' || v[i] == '-' || v[i] == '+'))
			return NULL;
	return v;
}

int gna_config_pick(const char *const *names, size_t n)
{
	int best = -ENOENT, plain = -ENOENT;
	_cleanup_free_ char *best_v = NULL;
	for (size_t i = 0; i < n && i < INT_MAX; i++) {
		if (strcmp(names[i], "config.yaml") == 0) {
			plain = (int)i;
			continue;
		}
		size_t len;
		const char *v = config_version(names[i], &len);
		if (!v)
			continue;
		_cleanup_free_ char *copy = strndup(v, len);
		if (!copy)
			return -ENOMEM;
		if (best < 0 || version_cmp(copy, best_v) > 0) {
			free(best_v);
			best_v = TAKE_PTR(copy);
			best = (int)i;
		}
	}
	return best >= 0 ? best : plain;
}

int gnaconfig_from_osc(const struct osc *o, struct gnaconfig *ret, char *err, size_t errlen)
{
	static const char dir[] = GNA_DIR_DEFAULT "/";
	const char *names[GNACONFIG_SYNCS_MAX];
	const struct osc_file *files[GNACONFIG_SYNCS_MAX];
	size_t n = 0;
	for (size_t i = 0; i < o->n_files && n < ELEMENTSOF(names); i++) {
		const struct osc_file *f = &o->files[i];
		if (f->source != OSC_SOURCE_INLINE || strncmp(f->path, dir, sizeof(dir) - 1) != 0 ||
		    strchr(f->path + sizeof(dir) - 1, '/'))
			continue;
		names[n] = f->path + sizeof(dir) - 1;
		files[n++] = f;
	}
	int i = gna_config_pick(names, n);
	if (i < 0)
		return i;
	return gnaconfig_parse((const char *)files[i]->content, files[i]->content_len, ret, err, errlen);
}

int gna_kubeconfig_client(const char *data, size_t len, char **cert, size_t *cert_len, char **key, size_t *key_len,
			  char *err, size_t errlen)
{
	struct ctx c = { .err = err, .errlen = errlen };
	if (err && errlen > 0)
		*err = '\0';
	if (len > GNACONFIG_INPUT_MAX)
		return fail(&c, -EMSGSIZE, "larger than %u bytes", GNACONFIG_INPUT_MAX);
	_cleanup_(ynode_freep) struct ynode *root = NULL;
	int r = ytree_load(data ? data : "", len, &root, err, errlen);
	if (r < 0)
		return r;
	if (root->type != Y_MAP)
		return wrong_type(&c, "", "(document)", root, "a mapping");
	const struct ynode *users;
	if ((r = map_get(&c, root, "", "users", &users)) < 0)
		return r;
	if (!users)
		return -ENOENT;
	if (users->type != Y_SEQ)
		return wrong_type(&c, "", "users", users, "a list");
	for (size_t i = 0; i < users->n_items; i++) {
		const struct ynode *u = users->items[i], *user;
		char where[48];
		snprintf(where, sizeof(where), "users[%zu].user.", i);
		if (u->type != Y_MAP)
			return wrong_type(&c, "users[].", "", u, "a mapping");
		if ((r = get_map(&c, u, "users[].", "user", &user)) < 0)
			return r;
		if (!user)
			continue;
		_cleanup_free_ char *c64 = NULL, *k64 = NULL;
		if ((r = get_str(&c, user, where, "client-certificate-data", &c64)) < 0 ||
		    (r = get_str(&c, user, where, "client-key-data", &k64)) < 0)
			return r;
		if (!c64 || !k64) {
			if (k64)
				OPENSSL_cleanse(k64, strlen(k64));
			continue;
		}
		unsigned char *cd = NULL, *kd = NULL;
		size_t cl = 0, kl = 0;
		r = b64_decode(c64, strlen(c64), GNACONFIG_CA_MAX, 0, &cd, &cl);
		if (r >= 0)
			r = b64_decode(k64, strlen(k64), GNACONFIG_CA_MAX, 0, &kd, &kl);
		OPENSSL_cleanse(k64, strlen(k64));
		if (r < 0) {
			free(cd);
			return fail(&c, -EINVAL, "%sclient-%s-data: not base64", where, cd ? "key" : "certificate");
		}
		*cert = (char *)cd;
		*cert_len = cl;
		*key = (char *)kd;
		*key_len = kl;
		return 0;
	}
	return -ENOENT;
}

bool gna_label_value_is_valid(const char *v)
{
	size_t n = strlen(v);
	if (n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = v[i];
		bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
		if (!alnum && ch != '-' && ch != '_' && ch != '.')
			return false;
		if ((i == 0 || i == n - 1) && !alnum)
			return false;
	}
	return true;
}

int gna_zone_parse(const char *data, size_t len, char **ret)
{
	size_t n = 0;
	while (n < len && data[n] != '\n')
		n++;
	while (n > 0 && (data[n - 1] == ' ' || data[n - 1] == '\t' || data[n - 1] == '\r'))
		n--;
	if (n == 0 || n > 63 || memchr(data, '\0', n))
		return -EINVAL;
	_cleanup_free_ char *z = strndup(data, n);
	if (!z)
		return -ENOMEM;
	if (!gna_label_value_is_valid(z))
		return -EINVAL;
	*ret = TAKE_PTR(z);
	return 0;
}
