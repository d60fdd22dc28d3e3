/* Stock user data as input; see stock.h.
 *
 * File names follow gardener/gardener pkg/apis/config/nodeagent/v1alpha1/
 * types.go (ClusterCAFilePath, BootstrapTokenFilePath, MachineNameFilePath)
 * and pkg/api/config/nodeagent/v1alpha1/helper/utils.go (config-<version>.yaml,
 * GetConfigFilePath); gardener-node-agent picks the file of its own version,
 * node-agent has none and takes the newest (gna_config_pick). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "fsx.h"
#include "stock.h"

#define MACHINE_NAME_FILE_MAX 4096u
#define NAMES_MAX 256u /* directory entries considered when looking for the config */

static const char ca_rel[] = "cluster-ca.crt";
static const char token_rel[] = "credentials/bootstrap-token";
static const char machine_rel[] = "machine-name";
static const char zone_rel[] = "zone"; /* gardener/gardener ZoneFilePath: the topology.kubernetes.io/zone label */

/* The name of rel inside the directory we read from: rel itself, or the
 * credential's flattened name. */
static char *source_name(const struct stock *s, const char *rel)
{
	if (!s->creds_dir)
		return strdup(rel);
	size_t n = strlen(STOCK_CREDENTIAL_ID) + 1 + strlen(rel) + 1;
	char *name = malloc(n);
	if (!name)
		return NULL;
	snprintf(name, n, "%s_%s", STOCK_CREDENTIAL_ID, rel);
	for (char *p = name; *p; p++)
		if (*p == '/')
			*p = '_';
	return name;
}

/* The full path of rel as we read it (for libcurl and for messages). */
static char *source_path(const struct stock *s, const char *rel)
{
	_cleanup_free_ char *name = source_name(s, rel);
	if (!name)
		return NULL;
	const char *base = s->creds_dir ? s->creds_dir : s->dir;
	size_t n = strlen(base) + 1 + strlen(name) + 1;
	char *path = malloc(n);
	if (path)
		snprintf(path, n, "%s/%s", base, name);
	return path;
}

static int fail_path(char *err, size_t errlen, const char *path, const char *why)
{
	snprintf(err, errlen, "%s: %s", path, why);
	return -EINVAL;
}

/* Reads rel (a missing file is *ret = NULL and 0). */
static int read_rel(const struct stock *s, int dfd, const char *rel, size_t max, char **ret, size_t *ret_len,
		    char *err, size_t errlen)
{
	_cleanup_free_ char *name = source_name(s, rel);
	_cleanup_free_ char *path = source_path(s, rel);
	if (!name || !path)
		return -ENOMEM;
	int r = fsx_read_at(dfd, name, max, ret, ret_len);
	if (r == -ENOENT) {
		*ret = NULL;
		return 0;
	}
	if (r == -EFBIG) {
		snprintf(err, errlen, "%s: larger than %zu bytes", path, max);
		return -EINVAL;
	}
	if (r < 0)
		return fail_path(err, errlen, path, strerror(-r));
	return 0;
}

static bool exists_rel(const struct stock *s, int dfd, const char *rel)
{
	_cleanup_free_ char *name = source_name(s, rel);
	return name && faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

/* The newest config-<version>.yaml (or config.yaml) below dfd, as a name
 * relative to the stock directory; NULL when there is none. */
static int find_config(bool creds, int dfd, char **ret)
{
	/* A descriptor of its own for the DIR: openat(".") and not dup(),
	 * which the agent's seccomp allow-list (filter.c) does not have: a
	 * reload (SIGHUP) with stock data was killed by SIGSYS. */
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	_cleanup_(closedirp) DIR *d = fdopendir(fd);
	if (!d) {
		int r = -errno;
		close(fd);
		return r;
	}
	const char *prefix = creds ? STOCK_CREDENTIAL_ID "_" : "";
	size_t plen = strlen(prefix);
	char *names[NAMES_MAX];
	size_t n = 0;
	int r = 0;
	struct dirent *de;
	while (n < NAMES_MAX && (de = readdir(d))) {
		if (strncmp(de->d_name, prefix, plen) != 0 || strncmp(de->d_name + plen, "config", 6) != 0)
			continue;
		names[n] = strdup(de->d_name + plen);
		if (!names[n]) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	int i = r < 0 ? r : gna_config_pick((const char *const *)names, n);
	*ret = NULL;
	if (i >= 0) {
		*ret = names[i];
		names[i] = NULL;
	}
	for (size_t j = 0; j < n; j++)
		free(names[j]);
	return i == -ENOENT ? 0 : i < 0 ? i : 0;
}

int stock_load(const char *dir, const char *creds_dir, struct stock *ret, char *err, size_t errlen)
{
	struct stock s = {};
	_cleanup_close_ int dfd = -EBADF;
	_cleanup_free_ char *cfg_rel = NULL, *machine = NULL, *zone = NULL;
	int r = -ENOMEM;
	if (!(s.dir = strdup(dir)) || (creds_dir && !(s.creds_dir = strdup(creds_dir))))
		goto out;

	const char *base = s.creds_dir ? s.creds_dir : s.dir;
	dfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = -errno;
		if (r == -ENOENT) {
			/* Not a Gardener node (yet): nothing to merge. */
			*ret = s;
			return 0;
		}
		r = fail_path(err, errlen, base, strerror(-r));
		goto out;
	}

	r = find_config(s.creds_dir != NULL, dfd, &cfg_rel);
	if (r < 0) {
		r = fail_path(err, errlen, base, strerror(-r));
		goto out;
	}
	if (cfg_rel) {
		_cleanup_free_ char *data = NULL;
		size_t len = 0;
		s.config_path = source_path(&s, cfg_rel);
		if (!s.config_path) {
			r = -ENOMEM;
			goto out;
		}
		r = read_rel(&s, dfd, cfg_rel, GNACONFIG_INPUT_MAX, &data, &len, err, errlen);
		if (r < 0)
			goto out;
		if (data) {
			char why[GNACONFIG_ERROR_MAX];
			r = gnaconfig_parse(data, len, &s.gna, why, sizeof(why));
			if (r < 0) {
				r = fail_path(err, errlen, s.config_path, why);
				goto out;
			}
			s.have_config = true;
		}
	}

	size_t mlen = 0;
	r = read_rel(&s, dfd, machine_rel, MACHINE_NAME_FILE_MAX, &machine, &mlen, err, errlen);
	if (r < 0)
		goto out;
	if (machine) {
		char why[GNACONFIG_ERROR_MAX];
		r = gna_machine_name_parse(machine, mlen, &s.machine_name, why, sizeof(why));
		if (r < 0) {
			_cleanup_free_ char *path = source_path(&s, machine_rel);
			snprintf(err, errlen, "%s: machine name refused: %s", path ? path : machine_rel, why);
			r = -EINVAL;
			goto out;
		}
	}
	size_t zlen = 0;
	r = read_rel(&s, dfd, zone_rel, MACHINE_NAME_FILE_MAX, &zone, &zlen, err, errlen);
	if (r < 0)
		goto out;
	if (zone && gna_zone_parse(zone, zlen, &s.zone) < 0) {
		_cleanup_free_ char *path = source_path(&s, zone_rel);
		snprintf(err, errlen, "%s: not a valid zone (label value)", path ? path : zone_rel);
		r = -EINVAL;
		goto out;
	}
	r = -ENOMEM;
	if (exists_rel(&s, dfd, ca_rel) && !(s.ca_path = source_path(&s, ca_rel)))
		goto out;
	if (exists_rel(&s, dfd, token_rel) && !(s.bootstrap_token_path = source_path(&s, token_rel)))
		goto out;
	*ret = s;
	return 0;
out:
	stock_done(&s);
	return r;
}

bool stock_present(const char *dir, const char *creds_dir)
{
	_cleanup_close_ int dfd = open(creds_dir ? creds_dir : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_free_ char *rel = NULL;
	return dfd >= 0 && find_config(creds_dir != NULL, dfd, &rel) == 0 && rel;
}

static bool streq(const char *x, const char *y)
{
	return x && y && strcmp(x, y) == 0;
}

static int replace(char **slot, const char *v)
{
	char *n = strdup(v);
	if (!n)
		return -ENOMEM;
	free(*slot);
	*slot = n;
	return 0;
}

static int set_from(char **slot, const char *value, const char **from, const char *origin)
{
	if (*slot || !value)
		return 0;
	if (!(*slot = strdup(value)))
		return -ENOMEM;
	*from = origin;
	return 0;
}

static const char *below(const char *path, const char *dir)
{
	size_t dl = strlen(dir);
	return strncmp(path, dir, dl) == 0 && path[dl] == '/' ? path + dl + 1 : NULL;
}

/* The CA file the config names, mapped to what we read when it lies in the
 * stock directory or in gardener-node-agent's own (under LoadCredential= the
 * original is not readable; a test keeps the stock files elsewhere). */
static char *config_ca(const struct stock *s)
{
	const char *ca = s->gna.ca_file, *rel;
	if (!ca)
		return NULL;
	if ((rel = below(ca, s->dir)) || (rel = below(ca, GNA_DIR_DEFAULT)))
		return source_path(s, rel);
	return strdup(ca);
}

int stock_merge(struct stock *s, struct config *c)
{
	int r;
	const char *cfg = s->config_path;
	if ((r = set_from(&c->server, s->gna.server, &s->from_server, cfg)) < 0 ||
	    (r = set_from(&c->secret_name, s->gna.secret_name, &s->from_secret, cfg)) < 0 ||
	    (r = set_from(&c->kubernetes_version, s->gna.kubernetes_version, &s->from_version, cfg)) < 0 ||
	    (r = set_from(&c->machine_name, s->machine_name, &s->from_machine, "stock user data")) < 0 ||
	    (r = set_from(&c->zone, s->zone, &s->from_zone, "stock user data")) < 0 ||
	    (r = set_from(&c->bootstrap_token_file, s->bootstrap_token_path, &s->from_bootstrap,
			  "stock user data")) < 0)
		return r;
	if (!c->ca_file) {
		_cleanup_free_ char *ca = config_ca(s);
		if (s->gna.ca_file && !ca)
			return -ENOMEM;
		if ((r = set_from(&c->ca_file, ca, &s->from_ca, cfg)) < 0 ||
		    (r = set_from(&c->ca_file, s->ca_path, &s->from_ca, "stock user data")) < 0)
			return r;
	}
	return 0;
}

static void say(char *what, size_t len, const char *key, const char *from, const char *to)
{
	size_t used = strlen(what);
	if (used < len)
		snprintf(what + used, len - used, "%s%s \"%s\" -> \"%s\"", used ? ", " : "", key, from ? from : "",
			 to);
}

/* True when the file at path holds exactly data. */
static bool file_holds(const char *path, const unsigned char *data, size_t len)
{
	_cleanup_close_ int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) : -EBADF;
	_cleanup_free_ char *have = NULL;
	size_t have_len = 0;
	return fd >= 0 && fsx_read_fd(fd, GNACONFIG_CA_MAX, &have, &have_len) == 0 && have_len == len &&
	       memcmp(have, data, len) == 0;
}

static const char osc_origin[] = "the OSC's gardener-node-agent configuration";

int stock_follow(struct stock *s, struct config *c, const struct gnaconfig *g, int state_fd, const char *state_path,
		 char *what, size_t what_len)
{
	int flags = 0, r;
	what[0] = '\0';
	/* The CA first: the only step that can fail for another reason than
	 * memory, before anything else changed. */
	if (s->from_ca && g->ca_bundle && !file_holds(c->ca_file, g->ca_bundle, g->ca_bundle_len)) {
		char path[PATH_MAX];
		int n = snprintf(path, sizeof(path), "%s/%s", state_path, STOCK_OSC_CA_FILE);
		if (n < 0 || (size_t)n >= sizeof(path)) {
			snprintf(what, what_len, "%s: path too long", state_path);
			return -ENAMETOOLONG;
		}
		r = fsx_write_atomic_at(state_fd, STOCK_OSC_CA_FILE, g->ca_bundle, g->ca_bundle_len, 0600, FSX_UID_KEEP,
					FSX_GID_KEEP, 0);
		if (r < 0) {
			snprintf(what, what_len, "cannot write %s: %s", path, strerror(-r));
			return r;
		}
		say(what, what_len, "apiServer.caFile", c->ca_file, path);
		if ((r = replace(&c->ca_file, path)) < 0)
			return r;
		s->from_ca = osc_origin;
		flags |= STOCK_NEW_CONNECTION;
	} else if (s->from_ca && !g->ca_bundle && g->ca_file) {
		const char *rel = below(g->ca_file, s->dir);
		if (!rel)
			rel = below(g->ca_file, GNA_DIR_DEFAULT);
		_cleanup_free_ char *ca = rel ? source_path(s, rel) : strdup(g->ca_file);
		if (!ca)
			return -ENOMEM;
		if (!streq(c->ca_file, ca)) {
			say(what, what_len, "apiServer.caFile", c->ca_file, ca);
			free(c->ca_file);
			c->ca_file = TAKE_PTR(ca);
			s->from_ca = osc_origin;
			flags |= STOCK_NEW_CONNECTION;
		}
	}
	if (s->from_server && g->server && !streq(c->server, g->server)) {
		say(what, what_len, "apiServer.server", c->server, g->server);
		if ((r = replace(&c->server, g->server)) < 0)
			return r;
		s->from_server = osc_origin;
		flags |= STOCK_NEW_CONNECTION;
	}
	if (s->from_secret && g->secret_name && !streq(c->secret_name, g->secret_name)) {
		say(what, what_len, "osc.secretName", c->secret_name, g->secret_name);
		if ((r = replace(&c->secret_name, g->secret_name)) < 0)
			return r;
		s->from_secret = osc_origin;
		flags |= STOCK_NEW_SECRET;
	}
	return flags;
}

static void row(FILE *f, bool defaulted, const char *key, const char *value, const char *from)
{
	fprintf(f, "  %-28s %-48s %s\n", key, value ? value : "(unset)",
		!value ? "" : from ? from : defaulted ? "default" : "node-agent.conf");
}

void stock_print(const struct stock *s, const struct config *c, FILE *f)
{
	fprintf(f, "gardener-node-agent stock data: %s%s%s%s\n", s->dir, s->creds_dir ? " via credentials in " : "",
		s->creds_dir ? s->creds_dir : "",
		s->defaulted ? " (no node-agent.conf: gardener.nodeAgentDir by default)" : "");
	fprintf(f, "  %-28s %s\n", "configuration", s->have_config ? s->config_path : "(none found)");
	row(f, s->defaulted, "apiServer.server", c->server, s->from_server);
	row(f, s->defaulted, "apiServer.caFile", c->ca_file, s->from_ca);
	row(f, s->defaulted, "apiServer.bootstrapTokenFile", c->bootstrap_token_file, s->from_bootstrap);
	row(f, s->defaulted, "osc.secretName", c->secret_name, s->from_secret);
	row(f, s->defaulted, "node.kubernetesVersion", c->kubernetes_version, s->from_version);
	row(f, s->defaulted, "node.machineName", c->machine_name, s->from_machine);
	row(f, s->defaulted, "node.zone", c->zone, s->from_zone);
	for (size_t i = 0; i < s->gna.n_token_syncs; i++)
		fprintf(f, "  token sync %-17zu Secret kube-system/%s -> %s (from the OSC's copy)\n", i,
			s->gna.token_syncs[i].secret_name, s->gna.token_syncs[i].path);
}

bool stock_kubelet_paths(const struct config *c, char *ca, size_t ca_size, char *token, size_t token_size)
{
	int n, m;
	if (!c->server)
		return false;
	if (!c->gna_dir)
		return false;
	n = snprintf(ca, ca_size, "%s/%s", c->gna_dir, ca_rel);
	m = snprintf(token, token_size, "%s/%s", c->gna_dir, token_rel);
	return n > 0 && (size_t)n < ca_size && m > 0 && (size_t)m < token_size;
}

int stock_read(const struct config *c, const char *rel, size_t max, char **ret, size_t *ret_len)
{
	if (!c->gna_dir)
		return -ENOENT;
	struct stock s = { .dir = c->gna_dir, .creds_dir = secure_getenv("CREDENTIALS_DIRECTORY") };
	_cleanup_free_ char *name = source_name(&s, rel);
	if (!name)
		return -ENOMEM;
	_cleanup_close_ int dfd = open(s.creds_dir ? s.creds_dir : s.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	return fsx_read_at(dfd, name, max, ret, ret_len);
}

void stock_done(struct stock *s)
{
	if (!s)
		return;
	free(s->dir);
	free(s->creds_dir);
	free(s->config_path);
	gnaconfig_done(&s->gna);
	free(s->machine_name);
	free(s->zone);
	free(s->ca_path);
	free(s->bootstrap_token_path);
	*s = (struct stock){};
}
