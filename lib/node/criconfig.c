/* containerd configuration renderers; see criconfig.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "criconfig.h"
#include "desired.h"
#include "toml.h"

static const char header[] = "# managed by node-agent's cloud-config-exec from the OSC's criConfig; "
			     "edits are overwritten\n";

int cri_target_from_version(const char *out, size_t len, struct cri_target *ret)
{
	/* Third whitespace-separated word of the first line. */
	size_t i = 0, word = 0;
	while (i < len && out[i] != '\n' && word < 2) {
		while (i < len && (out[i] == ' ' || out[i] == '\t'))
			i++;
		while (i < len && out[i] != ' ' && out[i] != '\t' && out[i] != '\n')
			i++;
		word++;
	}
	while (i < len && (out[i] == ' ' || out[i] == '\t'))
		i++;
	if (word != 2 || i >= len)
		return -EINVAL;
	if (out[i] == 'v')
		i++;
	unsigned v[2] = { 0, 0 };
	for (int k = 0; k < 2; k++) {
		size_t digits = 0;
		while (i < len && out[i] >= '0' && out[i] <= '9' && digits < 4) {
			v[k] = v[k] * 10 + (unsigned)(out[i] - '0');
			i++;
			digits++;
		}
		if (digits == 0 || digits >= 4)
			return -EINVAL;
		if (k == 0) {
			if (i >= len || out[i] != '.')
				return -EINVAL;
			i++;
		}
	}
	struct cri_target t = { .major = v[0], .minor = v[1] };
	if (v[0] == 1)
		t.config_version = 2; /* 1.6 and 1.7 read version 2 */
	else if (v[0] == 2) {
		/* containerd_config.go: bin_dirs from 2.2 (Gardener #13826),
		 * config version 4 for 2.3 (#14856), same key paths as 3. */
		t.config_version = v[1] >= 3 ? 4 : 3;
		t.cni_bin_dirs = v[1] >= 2;
	} else
		return -EINVAL;
	*ret = t;
	return 0;
}

/* ---- criConfig.containerd.plugins -------------------------------------------
 * gardener-node-agent sets each plugin's values into the parsed config tree
 * (containerd_config.go, ensureContainerdConfiguration: op add unmarshals
 * the JSON values over the table at plugins.<path>, op remove deletes the
 * subtree; from config version 3 the prefix in pluginPathReplacements is
 * moved). node-agent renders its config from the model and has no TOML
 * tree to merge into, so a plugin becomes tables of its own, appended, and
 * what TOML (and so containerd) would refuse is refused here: a table
 * defined twice, a key that is both a value and a table. A remove drops
 * earlier plugins under its path; what is not rendered at all is
 * containerd's default anyway. */

#define NODE_DEPTH (OSC_PLUGIN_PATH_MAX + OSC_TVAL_DEPTH_MAX + 4)

struct tnode {
	const char *comp[NODE_DEPTH];
	size_t n;
	bool table;
	int owner;                  /* -1: node-agent's own keys; else the plugin's index */
};

struct tnodes {
	struct tnode *v;
	size_t n, cap;
};

static int tnodes_add(struct tnodes *ns, const char *const *comp, size_t n, bool table, int owner)
{
	if (n > NODE_DEPTH)
		return -E2BIG;
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 32;
		struct tnode *v = realloc(ns->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ns->v = v;
		ns->cap = cap;
	}
	struct tnode *x = &ns->v[ns->n++];
	memcpy(x->comp, comp, n * sizeof(*comp));
	x->n = n;
	x->table = table;
	x->owner = owner;
	return 0;
}

static bool path_prefix(const char *const *a, size_t na, const char *const *b, size_t nb)
{
	if (na > nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

/* plugins.<path>, with containerd_config.go's pluginPathReplacements for
 * config version >= 3. Returns the number of components. */
static size_t plugin_path(const struct osc_plugin *pl, const struct cri_target *t, const char *comp[NODE_DEPTH])
{
	static const char *const from[] = { "io.containerd.grpc.v1.cri", "containerd", "runtimes" };
	size_t n = 0;
	comp[n++] = "plugins";
	size_t skip = 0;
	if (t->config_version >= 3 && pl->n_path >= 3 && path_prefix(from, 3, (const char *const *)pl->path, pl->n_path)) {
		comp[n++] = "io.containerd.cri.v1.runtime";
		skip = 1;
	}
	for (size_t i = skip; i < pl->n_path; i++)
		comp[n++] = pl->path[i];
	return n;
}

static int tval_nodes(struct tnodes *ns, const char *comp[NODE_DEPTH], size_t n, const struct osc_tval *v, int owner)
{
	int r = tnodes_add(ns, comp, n, true, owner);
	for (size_t i = 0; r >= 0 && i < v->n_items; i++) {
		if (n >= NODE_DEPTH)
			return -E2BIG;
		if (v->items[i].type == OSC_TV_NULL)
			continue; /* deletes the key: sets nothing */
		comp[n] = v->items[i].key;
		r = v->items[i].type == OSC_TV_TABLE ? tval_nodes(ns, comp, n + 1, &v->items[i], owner)
						      : tnodes_add(ns, comp, n + 1, false, owner);
	}
	return r;
}

/* node-agent's own keys for t (as rendered below). */
static int own_nodes(const struct osc_cri *cri, const struct cri_target *t, struct tnodes *ns)
{
	bool v2 = t->config_version == 2;
	const char *images = v2 ? "io.containerd.grpc.v1.cri" : "io.containerd.cri.v1.images";
	const char *runtime = v2 ? "io.containerd.grpc.v1.cri" : "io.containerd.cri.v1.runtime";
	const char *const version[] = { "version" }, *const imports[] = { "imports" };
	const char *const sb2[] = { "plugins", images, "sandbox_image" };
	const char *const sb3[] = { "plugins", images, "pinned_images", "sandbox" };
	const char *const reg[] = { "plugins", images, "registry", "config_path" };
	const char *const cni[] = { "plugins", runtime, "cni", t->cni_bin_dirs ? "bin_dirs" : "bin_dir" };
	const char *const runc[] = { "plugins", runtime, "containerd", "runtimes", "runc", "runtime_type" };
	const char *const opts[] = { "plugins", runtime, "containerd", "runtimes", "runc", "options", "SystemdCgroup" };
	int r = 0;
	if ((r = tnodes_add(ns, version, 1, false, -1)) < 0 || (r = tnodes_add(ns, imports, 1, false, -1)) < 0)
		return r;
	if (cri->sandbox_image && ((r = tnodes_add(ns, v2 ? sb2 : sb3, v2 ? 2 : 3, true, -1)) < 0 ||
				   (r = tnodes_add(ns, v2 ? sb2 : sb3, v2 ? 3 : 4, false, -1)) < 0))
		return r;
	if ((r = tnodes_add(ns, reg, 3, true, -1)) < 0 || (r = tnodes_add(ns, reg, 4, false, -1)) < 0 ||
	    (r = tnodes_add(ns, cni, 3, true, -1)) < 0 || (r = tnodes_add(ns, cni, 4, false, -1)) < 0)
		return r;
	if (cri->cgroup_driver != OSC_CGROUP_UNSET &&
	    ((r = tnodes_add(ns, runc, 5, true, -1)) < 0 || (r = tnodes_add(ns, runc, 6, false, -1)) < 0 ||
	     (r = tnodes_add(ns, opts, 6, true, -1)) < 0 || (r = tnodes_add(ns, opts, 7, false, -1)) < 0))
		return r;
	return 0;
}

static void join(char *buf, size_t size, const char *const *comp, size_t n)
{
	size_t k = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && k < size; i++) {
		int w = snprintf(buf + k, size - k, "%s%s", i ? "." : "", comp[i]);
		if (w < 0)
			return;
		k += (size_t)w;
	}
}

/* The bytes a key (a plugin path component, a table or value key) may
 * have. containerd 1.6 and 1.7 read config.toml with pelletier/go-toml v1,
 * whose table-header lexer ends a quoted key at its first "]" and refuses
 * a "[" ("invalid table array key: unclosed double-quoted key", found with
 * Debian's containerd 1.6.20 `containerd --config F config dump`);
 * osc_parse() already refused spaces, quotes, backslashes and control
 * bytes. An allow-list rather than those two bytes: what every TOML parser
 * containerd ever used reads the same, and every key Gardener and its
 * extensions write (plugin URIs, runtime handler names, Go field names)
 * fits. */
static const char key_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:/@+";

bool cri_key_is_safe(const char *key)
{
	return key && key[0] && strspn(key, key_chars) == strlen(key);
}

/* A plugin's key URI as containerd's Config.ValidateV2() wants it: at least
 * four dot-separated parts ("io.containerd.x.vx"), else "invalid plugin key
 * URI". */
static bool plugin_uri_ok(const char *uri)
{
	size_t dots = 0;
	for (const char *p = uri; *p; p++)
		dots += *p == '.';
	return dots >= 3;
}

static int tval_keys_check(const struct osc_tval *v, size_t i, char *why, size_t why_size)
{
	for (size_t k = 0; k < v->n_items; k++) {
		const struct osc_tval *e = &v->items[k];
		if (e->type == OSC_TV_ARRAY && tval_keys_check(e, i, why, why_size) < 0)
			return -EINVAL;
		if (!e->key) {
			if (e->type == OSC_TV_TABLE && tval_keys_check(e, i, why, why_size) < 0)
				return -EINVAL;
			continue;
		}
		if (!cri_key_is_safe(e->key)) {
			snprintf(why, why_size, "plugins[%zu]: key '%s' has a byte outside [A-Za-z0-9._:/@+-] "
				 "(containerd could not read the file)", i, e->key);
			return -EINVAL;
		}
		if (e->type == OSC_TV_TABLE && tval_keys_check(e, i, why, why_size) < 0)
			return -EINVAL;
	}
	return 0;
}

static int keys_check(const struct osc_cri *cri, char *why, size_t why_size)
{
	for (size_t i = 0; i < cri->n_plugins; i++) {
		const struct osc_plugin *pl = &cri->plugins[i];
		for (size_t j = 0; j < pl->n_path; j++)
			if (!cri_key_is_safe(pl->path[j])) {
				snprintf(why, why_size, "plugins[%zu].path[%zu]: '%s' has a byte outside "
					 "[A-Za-z0-9._:/@+-] (containerd could not read the file)", i, j, pl->path[j]);
				return -EINVAL;
			}
		if (pl->n_path && !plugin_uri_ok(pl->path[0])) {
			snprintf(why, why_size, "plugins[%zu].path[0]: '%s' is not a plugin URI as containerd wants "
				 "it (io.containerd.x.vx)", i, pl->path[0]);
			return -EINVAL;
		}
		if (!pl->remove && tval_keys_check(&pl->values, i, why, why_size) < 0)
			return -EINVAL;
	}
	return 0;
}

int cri_plugins_check(const struct osc_cri *cri, const struct cri_target *t, bool *ret_active, char *why,
		      size_t why_size)
{
	_cleanup_free_ struct tnode *keep = NULL;
	struct tnodes ns = { 0 };
	if (keys_check(cri, why, why_size) < 0)
		return -EINVAL;
	int r = own_nodes(cri, t, &ns);
	for (size_t i = 0; r >= 0 && i < cri->n_plugins; i++) {
		const struct osc_plugin *pl = &cri->plugins[i];
		const char *comp[NODE_DEPTH];
		size_t n = plugin_path(pl, t, comp);
		if (ret_active)
			ret_active[i] = !pl->remove;
		if (!pl->remove) {
			r = tval_nodes(&ns, comp, n, &pl->values, (int)i);
			continue;
		}
		/* remove: earlier plugins under the path go; ours may not */
		size_t j = 0;
		for (size_t k = 0; k < ns.n; k++) {
			struct tnode *x = &ns.v[k];
			if (path_prefix(comp, n, x->comp, x->n)) {
				if (x->owner < 0) {
					char p[256];
					join(p, sizeof(p), comp, n);
					snprintf(why, why_size, "plugins[%zu]: removing %s would remove what node-agent "
						 "renders itself (not supported)", i, p);
					free(ns.v);
					return -EINVAL;
				}
				if (ret_active)
					ret_active[x->owner] = false;
				continue;
			}
			if (x->owner >= 0 && x->table && x->n < n && path_prefix(x->comp, x->n, comp, n)) {
				char p[256];
				join(p, sizeof(p), comp, n);
				snprintf(why, why_size, "plugins[%zu]: removing %s inside plugins[%d]'s values is not "
					 "supported", i, p, x->owner);
				free(ns.v);
				return -EINVAL;
			}
			ns.v[j++] = *x;
		}
		ns.n = j;
	}
	keep = ns.v;
	if (r < 0) {
		snprintf(why, why_size, "%s", r == -E2BIG ? "plugins: nested too deep" : "out of memory");
		return r;
	}
	for (size_t a = 0; a < ns.n; a++)
		for (size_t b = 0; b < ns.n; b++) {
			const struct tnode *x = &ns.v[a], *y = &ns.v[b];
			if (a == b || (x->owner < 0 && y->owner < 0))
				continue;
			bool same = x->n == y->n && path_prefix(x->comp, x->n, y->comp, y->n);
			bool under_value = !x->table && x->n < y->n && path_prefix(x->comp, x->n, y->comp, y->n);
			if ((same && a < b) || under_value) {
				char p[256];
				join(p, sizeof(p), y->comp, y->n);
				int who = x->owner >= 0 && y->owner >= 0 ? (x->owner > y->owner ? x->owner : y->owner)
									  : (x->owner >= 0 ? x->owner : y->owner);
				snprintf(why, why_size, "plugins[%d]: %s is set %s (TOML allows a table or key once; "
					 "merging into it is not supported)", who, p,
					 x->owner < 0 || y->owner < 0 ? "by node-agent itself too" : "by another plugin too");
				return -EINVAL;
			}
		}
	return 0;
}

/* A value after "key = ": scalars, floats in the shortest form that reads
 * back the same (1.0, not 1: a float stays one), arrays, and tables in an
 * array as inline tables (what gardener-node-agent's go-toml writes for a
 * list of JSON objects). */
static void render_value(FILE *f, const struct osc_tval *v)
{
	switch (v->type) {
	case OSC_TV_STR:
		fprintf(f, "\"%s\"", v->str);
		break;
	case OSC_TV_INT:
		fprintf(f, "%" PRId64, v->i);
		break;
	case OSC_TV_FLOAT: {
		char b[40];
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(b, sizeof(b), "%.*g", prec, v->f);
			if (strtod(b, NULL) == v->f)
				break;
		}
		fprintf(f, "%s%s", b, strpbrk(b, ".e") ? "" : ".0");
		break;
	}
	case OSC_TV_BOOL:
		fputs(v->b ? "true" : "false", f);
		break;
	case OSC_TV_ARRAY:
		fputc('[', f);
		for (size_t j = 0; j < v->n_items; j++) {
			if (j)
				fputs(", ", f);
			render_value(f, &v->items[j]);
		}
		fputc(']', f);
		break;
	case OSC_TV_TABLE: {
		fputc('{', f);
		bool first = true;
		for (size_t j = 0; j < v->n_items; j++) {
			if (v->items[j].type == OSC_TV_NULL)
				continue;
			fprintf(f, "%s\"%s\" = ", first ? " " : ", ", v->items[j].key);
			render_value(f, &v->items[j]);
			first = false;
		}
		fputs(first ? "}" : " }", f);
		break;
	}
	case OSC_TV_NULL:
		break;
	}
}

static void render_table(FILE *f, const char *comp[NODE_DEPTH], size_t n, const struct osc_tval *v)
{
	fputs("\n[plugins", f);
	for (size_t i = 1; i < n; i++)
		fprintf(f, ".\"%s\"", comp[i]);
	fputs("]\n", f);
	for (size_t i = 0; i < v->n_items; i++) {
		const struct osc_tval *e = &v->items[i];
		if (e->type == OSC_TV_TABLE || e->type == OSC_TV_NULL)
			continue;
		fprintf(f, "  \"%s\" = ", e->key);
		render_value(f, e);
		fputc('\n', f);
	}
	for (size_t i = 0; i < v->n_items && n < NODE_DEPTH; i++)
		if (v->items[i].type == OSC_TV_TABLE) {
			comp[n] = v->items[i].key;
			render_table(f, comp, n + 1, &v->items[i]);
		}
}

/* The strings were validated by osc_parse() (no quote, no backslash, printable
 * ASCII); TOML basic strings need no escape then. */
int cri_render_config(const struct osc_cri *cri, const struct cri_target *t, char **ret)
{
	if (!cri || !cri->present || !t || t->config_version < 2 || t->config_version > 4)
		return -EINVAL;
	_cleanup_free_ bool *active = cri->n_plugins ? calloc(cri->n_plugins, sizeof(bool)) : NULL;
	char why[8];
	if (cri->n_plugins && (!active || cri_plugins_check(cri, t, active, why, sizeof(why)) < 0))
		return active ? -EINVAL : -ENOMEM;
	bool v2 = t->config_version == 2;
	/* Key paths: containerdConfigPaths in containerd_config.go. */
	const char *images = v2 ? "io.containerd.grpc.v1.cri" : "io.containerd.cri.v1.images";
	const char *runtime = v2 ? "io.containerd.grpc.v1.cri" : "io.containerd.cri.v1.runtime";

	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fprintf(f, "%sversion = %d\nimports = [\"%s/*.toml\"]\n", header, t->config_version, CRI_IMPORTS_DIR);
	if (cri->sandbox_image) {
		if (v2)
			fprintf(f, "\n[plugins.\"%s\"]\n  sandbox_image = \"%s\"\n", images, cri->sandbox_image);
		else
			fprintf(f, "\n[plugins.\"%s\".pinned_images]\n  sandbox = \"%s\"\n", images,
				cri->sandbox_image);
	}
	fprintf(f, "\n[plugins.\"%s\".registry]\n  config_path = \"%s\"\n", images, CRI_CERTS_DIR);
	if (t->cni_bin_dirs)
		fprintf(f, "\n[plugins.\"%s\".cni]\n  bin_dirs = [\"%s\"]\n", runtime, CRI_CNI_BIN_DIR);
	else
		fprintf(f, "\n[plugins.\"%s\".cni]\n  bin_dir = \"%s\"\n", runtime, CRI_CNI_BIN_DIR);
	if (cri->cgroup_driver != OSC_CGROUP_UNSET) {
		/* A runtimes.runc table replaces containerd's default entry,
		 * so the runtime type has to be named again. */
		fprintf(f, "\n[plugins.\"%s\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n",
			runtime);
		fprintf(f, "\n[plugins.\"%s\".containerd.runtimes.runc.options]\n  SystemdCgroup = %s\n", runtime,
			cri->cgroup_driver == OSC_CGROUP_SYSTEMD ? "true" : "false");
	}
	for (size_t i = 0; i < cri->n_plugins; i++)
		if (active[i]) {
			const char *comp[NODE_DEPTH];
			size_t n = plugin_path(&cri->plugins[i], t, comp);
			render_table(f, comp, n, &cri->plugins[i].values);
		}
	if (fclose(f) != 0)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

int cri_render_hosts(const struct osc_registry *g, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	_cleanup_(fclosep) FILE *f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fputs(header, f);
	if (g->server)
		fprintf(f, "server = \"%s\"\n", g->server);
	for (size_t i = 0; i < g->n_hosts; i++) {
		const struct osc_registry_host *h = &g->hosts[i];
		unsigned caps = h->capabilities ? h->capabilities : OSC_CAP_PULL | OSC_CAP_RESOLVE;
		fprintf(f, "\n[host.\"%s\"]\n  capabilities = [", h->url);
		const char *comma = "";
		static const struct {
			unsigned bit;
			const char *name;
		} names[] = { { OSC_CAP_PULL, "pull" }, { OSC_CAP_RESOLVE, "resolve" }, { OSC_CAP_PUSH, "push" } };
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			if (caps & names[k].bit) {
				fprintf(f, "%s\"%s\"", comma, names[k].name);
				comma = ",";
			}
		fputs("]\n", f);
		if (h->n_ca) {
			fputs("  ca = [", f);
			for (size_t k = 0; k < h->n_ca; k++)
				fprintf(f, "%s\"%s\"", k ? "," : "", h->ca[k]);
			fputs("]\n", f);
		}
		if (h->override_path == 1)
			fputs("  override_path = true\n", f);
	}
	FILE *done = TAKE_PTR(f);
	if (fclose(done) != 0)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

int cri_hosts_digest(const struct osc_registry *g, char out[static 65])
{
	_cleanup_free_ char *hosts = NULL;
	int r = cri_render_hosts(g, &hosts);
	if (r < 0)
		return r;
	desired_sha256_hex(hosts, strlen(hosts), out);
	return out[0] ? 0 : -ENOMEM;
}

static bool render_same(int ra, const char *a, int rb, const char *b)
{
	if (ra < 0 || rb < 0)
		return ra == rb;
	return strcmp(a, b) == 0;
}

bool cri_equal(const struct osc_cri *a, const struct osc_cri *b, const struct cri_target *t)
{
	bool pa = a && a->present, pb = b && b->present;
	if (pa != pb)
		return false;
	if (!pa)
		return true;
	_cleanup_free_ char *ca = NULL, *cb = NULL;
	int ra = cri_render_config(a, t, &ca), rb = cri_render_config(b, t, &cb);
	if (!render_same(ra, ca, rb, cb) || a->n_registries != b->n_registries || a->n_plugins != b->n_plugins)
		return false;
	for (size_t i = 0; i < a->n_registries; i++) {
		if (strcmp(a->registries[i].upstream, b->registries[i].upstream) != 0)
			return false;
		_cleanup_free_ char *ha = NULL, *hb = NULL;
		ra = cri_render_hosts(&a->registries[i], &ha);
		rb = cri_render_hosts(&b->registries[i], &hb);
		if (!render_same(ra, ha, rb, hb))
			return false;
	}
	return true;
}

/* ---- patching an existing config.toml ------------------------------------ */

static const char merged_header[] = "# node-agent's cloud-config-exec patched the keys of the OSC's criConfig into "
				    "this file (as gardener-node-agent does); the rest is the image's\n";

int cri_file_version(const struct toml_node *doc, int *ret, char *why, size_t why_size)
{
	const struct toml_node *v = toml_get(doc, "version");
	if (!v) {
		*ret = 1;
		return 0;
	}
	if (v->type != TOML_INT || v->i < 1 || v->i > 4) {
		snprintf(why, why_size, "%s: version is not 1, 2, 3 or 4", CRI_CONFIG_FILE);
		return -EINVAL;
	}
	*ret = (int)v->i;
	return 0;
}

/* The table at comp[0..n) below t, created when missing; NULL with why set
 * when a value on the way is not a table. */
static struct toml_node *table_at(struct toml_node *t, const char *const *comp, size_t n, char *why,
				  size_t why_size)
{
	for (size_t i = 0; i < n; i++) {
		struct toml_node *x = toml_get(t, comp[i]);
		if (!x) {
			x = toml_new(TOML_TABLE);
			if (!x || toml_set(t, comp[i], x) < 0) {
				snprintf(why, why_size, "out of memory");
				return NULL;
			}
		} else if (x->type != TOML_TABLE) {
			char p[256];
			join(p, sizeof(p), comp, i + 1);
			snprintf(why, why_size, "%s: %s is not a table (gardener-node-agent: unable to traverse into data "
				 "structure)", CRI_CONFIG_FILE, p);
			return NULL;
		}
		t = x;
	}
	return t;
}

/* Every value of src into dst, tables merged key by key, arrays and
 * scalars replaced; imports appended to. */
static int merge(struct toml_node *dst, const struct toml_node *src, bool top, char *why, size_t why_size)
{
	for (size_t i = 0; i < src->n_items; i++) {
		const struct toml_node *v = src->items[i];
		struct toml_node *d = toml_get(dst, v->key);
		if (v->type == TOML_TABLE && !(v->flags & TOML_F_INLINE)) {
			const char *k = v->key;
			struct toml_node *sub = table_at(dst, &k, 1, why, why_size);
			if (!sub)
				return -EINVAL;
			if (merge(sub, v, false, why, why_size) < 0)
				return -EINVAL;
			continue;
		}
		if (top && strcmp(v->key, "imports") == 0 && d && d->type == TOML_ARRAY) {
			/* containerd_config.go: append ours unless it is there */
			for (size_t k = 0; k < v->n_items; k++) {
				bool have = false;
				for (size_t j = 0; j < d->n_items && !have; j++)
					have = d->items[j]->type == TOML_STRING && strcmp(d->items[j]->str, v->items[k]->str) == 0;
				struct toml_node *c = have ? NULL : toml_copy(v->items[k]);
				if (!have && (!c || toml_append(d, c) < 0))
					goto oom;
			}
			continue;
		}
		struct toml_node *c = toml_copy(v);
		if (!c || toml_set(dst, v->key, c) < 0)
			goto oom;
	}
	return 0;
oom:
	snprintf(why, why_size, "out of memory");
	return -ENOMEM;
}

/* Removes comp[n-1] from the table at comp[0..n-1) when that exists. */
static void remove_at(struct toml_node *t, const char *const *comp, size_t n)
{
	for (size_t i = 0; t && i + 1 < n; i++)
		t = toml_get(t, comp[i]);
	if (t && t->type == TOML_TABLE)
		toml_remove(t, comp[n - 1]);
}

int cri_merge_config(const char *base, size_t base_len, const struct osc_cri *cri, const struct cri_target *t,
		     char **ret, char *why, size_t why_size)
{
	_cleanup_free_ char *ours = NULL;
	_cleanup_(toml_freep) struct toml_node *doc = NULL, *patch = NULL;
	char err[TOML_ERROR_MAX];
	int r = cri_render_config(cri, t, &ours);
	if (r < 0) {
		snprintf(why, why_size, "cannot render the criConfig: %s", strerror(-r));
		return r;
	}
	if ((r = toml_parse(ours, strlen(ours), &patch, err, sizeof(err))) < 0) {
		snprintf(why, why_size, "node-agent's own rendering does not parse: %s", err);
		return -EINVAL;
	}
	if (!base) {
		doc = TAKE_PTR(patch);
	} else {
		if ((r = toml_parse(base, base_len, &doc, err, sizeof(err))) < 0) {
			snprintf(why, why_size, "%s does not parse: %s", CRI_CONFIG_FILE, err);
			return r;
		}
		/* A plugin's values replace the keys of its table they name,
		 * each whole; a remove deletes its table (in order). */
		_cleanup_free_ bool *active = cri->n_plugins ? calloc(cri->n_plugins, sizeof(bool)) : NULL;
		char w[8];
		if (cri->n_plugins && (!active || cri_plugins_check(cri, t, active, w, sizeof(w)) < 0))
			return active ? -EINVAL : -ENOMEM;
		for (size_t i = 0; i < cri->n_plugins; i++) {
			const char *comp[NODE_DEPTH];
			size_t n = plugin_path(&cri->plugins[i], t, comp);
			if (cri->plugins[i].remove) {
				remove_at(doc, comp, n);
				continue;
			}
			if (!active[i])
				continue;
			struct toml_node *pt = table_at(doc, comp, n, why, why_size);
			if (!pt)
				return -EINVAL;
			for (size_t k = 0; k < cri->plugins[i].values.n_items; k++)
				toml_remove(pt, cri->plugins[i].values.items[k].key);
		}
		if (t->cni_bin_dirs) {
			const char *cni[] = { "plugins", t->config_version == 2 ? "io.containerd.grpc.v1.cri"
									      : "io.containerd.cri.v1.runtime",
					      "cni", "bin_dir" };
			remove_at(doc, cni, 4);
		}
		if ((r = merge(doc, patch, true, why, why_size)) < 0)
			return r;
	}
	_cleanup_free_ char *text = NULL;
	if ((r = toml_format(doc, &text)) < 0) {
		snprintf(why, why_size, "cannot write %s back: %s", CRI_CONFIG_FILE, strerror(-r));
		return r;
	}
	if (asprintf(ret, "%s%s", merged_header, text) < 0)
		return -ENOMEM;
	return 0;
}
