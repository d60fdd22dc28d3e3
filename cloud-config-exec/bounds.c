/* What desired.json may ask of root beyond the OSC; see bounds.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bounds.h"
#include "cleanup.h"
#include "gnaconfig.h"

/* Is path dir itself or below it (component-wise: "/etc/passwdx" is not
 * below "/etc/passwd")? */
static bool at_or_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 1 && dir[0] == '/')
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Every directory systemd reads units, drop-ins or generators from, for the
 * system manager and for user managers (`systemd-analyze unit-paths`, with
 * --global and --user; systemd's src/basic/path-lookup.c), by the
 * directory above: /etc/systemd/system.control, /run/systemd/transient,
 * /usr/local/lib/systemd/system, /usr/share/systemd/user... A user's own
 * (~/.config/systemd/user, ~/.local/share/systemd/user) is below
 * user_unit_dirs in any home, its runtime ones below /run/user/<uid>/systemd. test-exec-bounds asks systemd-analyze. */
static const char *const unit_dirs[] = { "/etc/systemd",	   "/run/systemd",	     "/usr/lib/systemd",
					 "/lib/systemd",	   "/usr/local/lib/systemd", "/usr/local/share/systemd",
					 "/usr/share/systemd",	   "/etc/xdg/systemd" };
static const char *const user_unit_dirs[] = { "/.config/systemd", "/.local/share/systemd" };

static bool below_user_unit_dir(const char *path)
{
	/* $XDG_RUNTIME_DIR/systemd: /run/user/<uid>/systemd (user.control,
	 * transient, generators) */
	if (strncmp(path, "/run/user/", 10) == 0) {
		const char *rest = path + 10 + strcspn(path + 10, "/");
		if (strncmp(rest, "/systemd", 8) == 0 && (rest[8] == '\0' || rest[8] == '/'))
			return true;
	}
	for (size_t i = 0; i < ELEMENTSOF(user_unit_dirs); i++) {
		size_t n = strlen(user_unit_dirs[i]);
		for (const char *p = strstr(path, user_unit_dirs[i]); p; p = strstr(p + 1, user_unit_dirs[i]))
			if (p[n] == '\0' || p[n] == '/')
				return true;
	}
	return false;
}

static const char *const account_dbs[] = {
	"/etc/passwd",  "/etc/passwd-", "/etc/shadow",	"/etc/shadow-", "/etc/group",	 "/etc/group-",
	"/etc/gshadow", "/etc/gshadow-", "/etc/subuid", "/etc/subgid",	"/etc/sudoers", "/etc/sudoers.d",
};

const char *bounds_forbidden_place(const char *path, const char *exec_state_dir, const char *snapshot_path)
{
	if (exec_state_dir && at_or_below(path, exec_state_dir))
		return "the executor's state directory";
	if (snapshot_path) {
		const char *slash = strrchr(snapshot_path, '/');
		char dir[4096];
		if (slash && (size_t)(slash - snapshot_path) < sizeof(dir)) {
			memcpy(dir, snapshot_path, (size_t)(slash - snapshot_path));
			dir[slash - snapshot_path] = '\0';
			if (dir[0] && at_or_below(path, dir))
				return "the key snapshot's directory";
		}
	}
	for (size_t i = 0; i < ELEMENTSOF(unit_dirs); i++)
		if (at_or_below(path, unit_dirs[i]))
			return "a systemd unit directory";
	if (below_user_unit_dir(path))
		return "a systemd unit directory";
	for (size_t i = 0; i < ELEMENTSOF(account_dbs); i++)
		if (at_or_below(path, account_dbs[i]))
			return "an account database";
	return NULL;
}

/* One line into err: "<field> '<value>': <why>", control bytes of the
 * value shown as '?', the value cut at 300 bytes. Returns -EPERM. */
static int refuse(char *err, size_t err_size, const char *field, const char *value, const char *why)
{
	char v[301];
	size_t n = 0;
	for (; value && value[n] && n < sizeof(v) - 1; n++)
		v[n] = (unsigned char)value[n] < 0x20 || value[n] == 0x7f ? '?' : value[n];
	v[n] = '\0';
	if (err_size)
		snprintf(err, err_size, "%s '%s'%s: %s", field, v, value && value[n] ? "..." : "", why);
	return -EPERM;
}

/* The syncConfigs paths the OSC's gardener-node-agent configuration names:
 * 1 found in c, 0 the OSC has none, -EINVAL malformed, -ENOMEM. */
static int osc_syncs(const struct osc *o, struct gnaconfig *c)
{
	if (!o)
		return 0;
	char e[GNACONFIG_ERROR_MAX];
	int r = gnaconfig_from_osc(o, c, e, sizeof(e));
	if (r == -ENOENT)
		return 0;
	if (r == -ENOMEM)
		return r;
	return r < 0 ? -EINVAL : 1;
}

static bool names_path(const struct gnaconfig *c, const char *path)
{
	for (size_t i = 0; i < c->n_token_syncs; i++)
		if (c->token_syncs[i].path && strcmp(c->token_syncs[i].path, path) == 0)
			return true;
	return false;
}

static int check_tokens(const struct desired *d, const struct bounds *b, char *err, size_t err_size)
{
	if (d->n_tokens == 0)
		return 0;
	_cleanup_(gnaconfig_done) struct gnaconfig now = { 0 }, last = { 0 };
	int r = osc_syncs(b->osc, &now);
	if (r == -ENOMEM)
		return r;
	const struct gnaconfig *allowed = r > 0 ? &now : NULL;
	const char *which = "the OSC's gardener-node-agent configuration";
	if (r == -EINVAL) {
		/* node-agent keeps the last good token syncs then (oscsecret.c). */
		int k = osc_syncs(b->last, &last);
		if (k == -ENOMEM)
			return k;
		allowed = k > 0 ? &last : NULL;
		which = "the last applied OSC's gardener-node-agent configuration (the new one is malformed)";
	}
	for (size_t i = 0; i < d->n_tokens; i++) {
		char field[48];
		snprintf(field, sizeof(field), "tokens[%zu].path", i);
		const char *path = d->tokens[i].path;
		const char *place = bounds_forbidden_place(path, b->exec_state_dir, b->snapshot_path);
		if (place) {
			char why[160];
			snprintf(why, sizeof(why), "below %s, where no synced token may go", place);
			return refuse(err, err_size, field, path, why);
		}
		if (!allowed || !names_path(allowed, path)) {
			char why[256];
			snprintf(why, sizeof(why), "not a path %s names in controllers.token.syncConfigs", which);
			return refuse(err, err_size, field, path, why);
		}
	}
	return 0;
}

static int check_kubelet(const struct desired *d, const struct bounds *b, char *err, size_t err_size)
{
	if (!d->kb_server)
		return 0;
	const char *dir = b->gna_dir ? b->gna_dir : GNA_DIR_DEFAULT;
	char token[4200], ca[4200];
	snprintf(token, sizeof(token), "%s/credentials/bootstrap-token", dir);
	snprintf(ca, sizeof(ca), "%s/cluster-ca.crt", dir);
	if (strcmp(d->kb_token_file, token) != 0) {
		char why[4300];
		snprintf(why, sizeof(why), "not the stock bootstrap token file %s", token);
		return refuse(err, err_size, "kubeletBootstrap.tokenFile", d->kb_token_file, why);
	}
	if (strcmp(d->kb_ca_file, ca) != 0) {
		char why[4300];
		snprintf(why, sizeof(why), "not the stock cluster CA file %s", ca);
		return refuse(err, err_size, "kubeletBootstrap.caFile", d->kb_ca_file, why);
	}
	return 0;
}

static int check_secret_files(const struct desired *d, const struct bounds *b, char *err, size_t err_size)
{
	for (size_t i = 0; i < d->n_secret_files; i++) {
		char field[48];
		snprintf(field, sizeof(field), "secretFiles[%zu].path", i);
		const char *path = d->secret_files[i].path;
		const struct osc_file *f = b->osc ? osc_find_file(b->osc, path) : NULL;
		if (!f || f->source != OSC_SOURCE_SECRET)
			return refuse(err, err_size, field, path, "not a file the OSC takes from a Secret (content.secretRef)");
	}
	return 0;
}

static int check_ready_registries(const struct desired *d, const struct bounds *b, char *err, size_t err_size)
{
	for (size_t i = 0; i < d->n_ready_registries; i++) {
		char field[48];
		snprintf(field, sizeof(field), "readyRegistries[%zu].upstream", i);
		const char *u = d->ready_registries[i].upstream;
		const struct osc_registry *g = NULL;
		for (size_t k = 0; b->osc && b->osc->cri.present && k < b->osc->cri.n_registries; k++)
			if (strcmp(b->osc->cri.registries[k].upstream, u) == 0)
				g = &b->osc->cri.registries[k];
		if (!g || !g->readiness_probe)
			return refuse(err, err_size, field, u, "not a registry of the OSC's criConfig with readinessProbe");
	}
	return 0;
}

static int check_restart(const struct desired *d, char *err, size_t err_size)
{
	size_t i = 0;
	for (char **u = d->restart_units; u && *u; u++, i++) {
		char field[48];
		snprintf(field, sizeof(field), "restart.units[%zu]", i);
		if (!osc_unit_name_is_valid(*u))
			return refuse(err, err_size, field, *u, "not a valid systemd unit name");
		const char *dot = strrchr(*u, '.');
		if (dot && dot > *u && dot[-1] == '@')
			return refuse(err, err_size, field, *u, "a template, not a unit that can be restarted");
	}
	return 0;
}

int bounds_check(const struct desired *d, const struct bounds *b, char *err, size_t err_size)
{
	if (err_size)
		err[0] = '\0';
	if (!d)
		return 0;
	int r = check_kubelet(d, b, err, err_size);
	if (r >= 0)
		r = check_tokens(d, b, err, err_size);
	if (r >= 0)
		r = check_secret_files(d, b, err, err_size);
	if (r >= 0)
		r = check_ready_registries(d, b, err, err_size);
	if (r >= 0)
		r = check_restart(d, err, err_size);
	return r;
}
