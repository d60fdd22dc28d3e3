/* The containerd step; see containerd.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "child.h"
#include "cleanup.h"
#include "containerd.h"
#include "criconfig.h"
#include "desired.h"
#include "fsx.h"
#include "log.h"
#include "state.h"
#include "toml.h"

static int verrorf(char **ret_error, int r, const char *fmt, va_list ap) _printf_(3, 0);
static int verrorf(char **ret_error, int r, const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	free(*ret_error);
	*ret_error = s;
	return r;
}

static int errorf(char **ret_error, int r, const char *fmt, ...) _printf_(3, 4);
static int errorf(char **ret_error, int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	r = verrorf(ret_error, r, fmt, ap);
	va_end(ap);
	return r;
}

const char *containerd_cached_version(const struct state *s, const struct stat *st)
{
	char stamp[STATE_STAMP_MAX];
	if (!s->containerd_stamp || !s->containerd_version || !S_ISREG(st->st_mode))
		return NULL;
	state_stamp(st, stamp);
	return strcmp(stamp, s->containerd_stamp) == 0 ? s->containerd_version : NULL;
}

static char e_path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin", e_lang[] = "LANG=C", e_lc[] = "LC_ALL=C";
static char *const child_env[] = { e_path, e_lang, e_lc, NULL };

/* Asks bin --version, or takes the answer st's cache holds for this very
 * binary (issue 27: a 32 MB Go child and ~20 ms on every no-op apply).
 * The binary is stat()ed before and after the child: only an answer of a
 * binary that did not change meanwhile is cached. */
static int find_target(const char *bin, struct state *st, struct cri_target *ret, char **ret_error)
{
	struct stat before, after;
	bool have_stat = stat(bin, &before) == 0;
	const char *cached = have_stat ? containerd_cached_version(st, &before) : NULL;
	if (cached && cri_target_from_version(cached, strlen(cached), ret) == 0) {
		log_debug("%s unchanged since it said '%s': not asked again", bin, cached);
		return 0;
	}
	char a0[] = "containerd", a1[] = "--version";
	char *argv[] = { a0, a1, NULL };
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	int status = 0;
	int r = child_run(bin, argv, child_env, CONTAINERD_VERSION_TIMEOUT_MS, CRI_VERSION_OUTPUT_MAX, &out, &len,
			  &status);
	if (r < 0) {
		log_error_errno(r, "Cannot run %s --version", bin);
		return errorf(ret_error, r, "cannot run %s --version: %s", bin, strerror(-r));
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		log_error("%s --version failed (%s %d)", bin, WIFEXITED(status) ? "exit status" : "signal",
			  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return errorf(ret_error, -EIO, "%s --version failed (%s %d)", bin,
			      WIFEXITED(status) ? "exit status" : "signal",
			      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
	size_t n = strcspn(out, "\n");
	r = cri_target_from_version(out, len, ret);
	if (r < 0) {
		log_error("%s --version printed '%.*s': not containerd 1.x or 2.x", bin, (int)(n > 120 ? 120 : n), out);
		return errorf(ret_error, r, "unknown containerd version '%.*s'", (int)(n > 120 ? 120 : n), out);
	}
	char b[STATE_STAMP_MAX], a[STATE_STAMP_MAX];
	if (have_stat && stat(bin, &after) == 0 && S_ISREG(after.st_mode)) {
		state_stamp(&before, b);
		state_stamp(&after, a);
		char *stamp = strcmp(a, b) == 0 ? strdup(a) : NULL, *version = stamp ? strndup(out, n) : NULL;
		if (stamp && version) {
			free(st->containerd_stamp);
			free(st->containerd_version);
			st->containerd_stamp = stamp;
			st->containerd_version = version;
		} else {
			free(stamp);
			free(version);
		}
	}
	return 0;
}

static int discard(void *userdata, const void *data, size_t len)
{
	return 0;
}

/* containerd's own verdict on a candidate config.toml (host path): `bin
 * --config PATH config dump` loads it as containerd would at start (TOML
 * parse, version, plugin URIs, each plugin's config decoded into its
 * type). 0 accepted; -EBADMSG refused, the first line of its complaint in
 * *ret_error. */
static int containerd_accepts(const char *bin, const char *path, char **ret_error)
{
	char a0[] = "containerd", a1[] = "--config", a3[] = "config", a4[] = "dump";
	char *argv[] = { a0, a1, (char *)(uintptr_t)path, a3, a4, NULL };
	int status = 0;
	/* Its stdout (the whole effective configuration) is read and
	 * dropped; its complaint goes to stderr, which is the journal. */
	int r = child_run_sink(bin, argv, child_env, CONTAINERD_VERSION_TIMEOUT_MS, discard, NULL, &status);
	if (r < 0) {
		log_error_errno(r, "Cannot run %s config dump", bin);
		return errorf(ret_error, r, "cannot run %s --config %s config dump: %s", bin, path, strerror(-r));
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		log_error("containerd refuses the new %s (%s --config %s config dump: %s %d; its reason above); "
			  "the old one stays and containerd is not restarted",
			  CRI_CONFIG_FILE, bin, path, WIFEXITED(status) ? "exit status" : "signal",
			  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return errorf(ret_error, -EBADMSG,
			      "containerd refuses the rendered %s (`containerd config dump` failed, see the journal); "
			      "the old file stays, containerd not restarted",
			      CRI_CONFIG_FILE);
	}
	return 0;
}

/* Writes path below rootfd (its directory created 0755); 1 written, 0 same. */
static int write_file(int rootfd, const char *path, const char *content, char **ret_error)
{
	const char *base;
	_cleanup_close_ int dfd = fsx_open_parent_at(rootfd, path, FSX_MKDIR | FSX_FOLLOW_ROOT_SYMLINKS, 0755, &base);
	if (dfd < 0) {
		log_error_errno(dfd, "Cannot open the directory of %s", path);
		return errorf(ret_error, dfd, "cannot open the directory of %s: %s", path, strerror(-dfd));
	}
	int r = fsx_write_atomic_at(dfd, base, content, strlen(content), 0644, 0, 0, FSX_SKIP_IF_SAME);
	if (r < 0) {
		log_error_errno(r, "Cannot write %s", path);
		return errorf(ret_error, r, "cannot write %s: %s", path, strerror(-r));
	}
	if (r > 0)
		log_info("Wrote %s", path);
	return r > 0;
}

static const struct osc_registry *find_registry(const struct osc_cri *cri, const char *upstream)
{
	for (size_t i = 0; i < cri->n_registries; i++)
		if (strcmp(cri->registries[i].upstream, upstream) == 0)
			return &cri->registries[i];
	return NULL;
}

/* Removes certs.d/<upstream>/hosts.toml and the directory when empty (a CA
 * the operator put there stays). */
static int remove_registry(int rootfd, const char *upstream, bool *ret_changed, char **ret_error)
{
	_cleanup_free_ char *dir = NULL;
	if (asprintf(&dir, "%s/%s", CRI_CERTS_DIR, upstream) < 0)
		return errorf(ret_error, -ENOMEM, "out of memory");
	_cleanup_close_ int dfd = fsx_open_dir_at(rootfd, dir, FSX_FOLLOW_ROOT_SYMLINKS, 0);
	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0) {
		log_error_errno(dfd, "Cannot open %s", dir);
		return errorf(ret_error, dfd, "cannot open %s: %s", dir, strerror(-dfd));
	}
	if (unlinkat(dfd, "hosts.toml", 0) < 0) {
		if (errno != ENOENT) {
			int r = negerrno();
			log_error_errno(r, "Cannot remove %s/hosts.toml", dir);
			return errorf(ret_error, r, "cannot remove %s/hosts.toml: %s", dir, strerror(-r));
		}
	} else {
		*ret_changed = true;
		log_info("Removed %s/hosts.toml (registry no longer in the OSC)", dir);
	}
	_cleanup_close_ int certs = fsx_open_dir_at(rootfd, CRI_CERTS_DIR, FSX_FOLLOW_ROOT_SYMLINKS, 0);
	if (certs >= 0 && unlinkat(certs, upstream, AT_REMOVEDIR) < 0 && errno != ENOTEMPTY && errno != ENOENT)
		log_warning_errno(negerrno(), "Cannot remove %s", dir);
	return 0;
}

/* Replaces config.toml by config once containerd accepted it: the bytes go
 * to CANDIDATE next to it, `config dump` reads that (its host path below
 * root), then it is renamed over config.toml. containerd is asked only
 * when the text changed: bytes it accepted before are not asked about
 * again (issue 36: `config dump` was 130 ms of a first apply). 1 written,
 * 0 already the same, -errno (old file kept). */
static int write_config(int rootfd, const char *root, const char *bin, const char *config, char **ret_error)
{
	const char *base;
	_cleanup_close_ int dfd =
		fsx_open_parent_at(rootfd, CRI_CONFIG_FILE, FSX_MKDIR | FSX_FOLLOW_ROOT_SYMLINKS, 0755, &base);
	if (dfd < 0) {
		log_error_errno(dfd, "Cannot open the directory of %s", CRI_CONFIG_FILE);
		return errorf(ret_error, dfd, "cannot open the directory of %s: %s", CRI_CONFIG_FILE, strerror(-dfd));
	}
	_cleanup_free_ char *cur = NULL;
	size_t cur_len = 0;
	bool same = fsx_read_at(dfd, base, 4u << 20, &cur, &cur_len) >= 0 && cur_len == strlen(config) &&
		    memcmp(cur, config, cur_len) == 0;
	if (same)
		return 0;
	const char *name = CONTAINERD_CANDIDATE;
	int r;
	if ((r = fsx_write_atomic_at(dfd, name, config, strlen(config), 0644, 0, 0, 0)) < 0) {
		log_error_errno(r, "Cannot write %s/%s", CRI_CONFIG_DIR, name);
		return errorf(ret_error, r, "cannot write %s/%s: %s", CRI_CONFIG_DIR, name, strerror(-r));
	}
	_cleanup_free_ char *hostpath = NULL;
	if (asprintf(&hostpath, "%s%s/%s", strcmp(root, "/") == 0 ? "" : root, CRI_CONFIG_DIR, name) < 0)
		return errorf(ret_error, -ENOMEM, "out of memory");
	r = containerd_accepts(bin, hostpath, ret_error);
	if (r < 0) {
		(void)unlinkat(dfd, name, 0);
		return r;
	}
	if (renameat(dfd, name, dfd, base) < 0) {
		r = negerrno();
		(void)unlinkat(dfd, name, 0);
		log_error_errno(r, "Cannot rename %s over %s", name, CRI_CONFIG_FILE);
		return errorf(ret_error, r, "cannot replace %s: %s", CRI_CONFIG_FILE, strerror(-r));
	}
	(void)fsync(dfd);
	log_info("Wrote %s (containerd accepts it)", CRI_CONFIG_FILE);
	return 1;
}

bool containerd_mirror_may_write(const struct osc_registry *g, const char *hosts, const char *digest, const char *cur,
				 size_t cur_len, const struct desired *d)
{
	if (!g->readiness_probe || !d)
		return true;
	if (cur && cur_len == strlen(hosts) && memcmp(cur, hosts, cur_len) == 0)
		return true;
	for (size_t i = 0; i < d->n_ready_registries; i++)
		if (strcmp(d->ready_registries[i].upstream, g->upstream) == 0)
			return strcmp(d->ready_registries[i].sha256, digest) == 0;
	return false;
}

/* The current bytes of path below rootfd (NULL when absent or unreadable). */
static char *read_current(int rootfd, const char *path, size_t *ret_len)
{
	const char *base;
	_cleanup_close_ int dfd = fsx_open_parent_at(rootfd, path, FSX_FOLLOW_ROOT_SYMLINKS, 0, &base);
	char *data = NULL;
	if (dfd < 0 || fsx_read_at(dfd, base, 1u << 20, &data, ret_len) < 0)
		return NULL;
	return data;
}

/* The image's config.toml as it was before node-agent first patched it,
 * in the executor's state directory: its bytes, or the marker that there
 * was none. Written once; restored when the OSC drops its criConfig. */
#define IMAGE_CONFIG "containerd-config.image.toml"
#define IMAGE_CONFIG_NONE "containerd-config.image-none"
/* What node-agent wrote before it patched (a file of its keys alone). */
#define OWN_HEADER_OLD "# managed by node-agent's cloud-config-exec from the OSC's criConfig"

static bool ours_alone(const char *cur, size_t len)
{
	return len >= strlen(OWN_HEADER_OLD) && memcmp(cur, OWN_HEADER_OLD, strlen(OWN_HEADER_OLD)) == 0;
}

/* The image's config.toml kept before: 1 and its bytes in *ret (NULL:
 * it had none), 0 when nothing was kept yet. */
static int kept_image_config(int statefd, char **ret, size_t *ret_len)
{
	struct stat sb;
	if (statefd < 0)
		return 0;
	if (fstatat(statefd, IMAGE_CONFIG_NONE, &sb, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	return fsx_read_at(statefd, IMAGE_CONFIG, 4u << 20, ret, ret_len) >= 0 ? 1 : 0;
}

/* Keeps the image's config.toml (cur, NULL: none) once, before the first
 * patch. */
static int keep_image_config(int statefd, const char *cur, size_t cur_len, char **ret_error)
{
	struct stat sb;
	if (statefd < 0 || fstatat(statefd, IMAGE_CONFIG, &sb, AT_SYMLINK_NOFOLLOW) == 0 ||
	    fstatat(statefd, IMAGE_CONFIG_NONE, &sb, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	bool none = !cur || ours_alone(cur, cur_len);
	int r = fsx_write_atomic_at(statefd, none ? IMAGE_CONFIG_NONE : IMAGE_CONFIG, none ? "" : cur,
				    none ? 0 : cur_len, 0600, 0, 0, 0);
	if (r < 0) {
		log_error_errno(r, "Cannot keep the image's %s", CRI_CONFIG_FILE);
		return errorf(ret_error, r, "cannot keep the image's %s: %s", CRI_CONFIG_FILE, strerror(-r));
	}
	log_notice("Kept the image's %s (%s) before patching it; it comes back when the OSC drops its criConfig",
		   CRI_CONFIG_FILE, none ? "there was none" : "its bytes");
	return 0;
}

void containerd_plan_done(struct containerd_plan *p)
{
	free(p->config);
	strv_free(p->hosts_path);
	strv_free(p->hosts_text);
	strv_free(p->hosts_remove);
	free(p->waiting);
	free(p->error);
	free(p->image);
	*p = (struct containerd_plan){};
}

static int plan_fail(struct containerd_plan *p, int r, const char *fmt, ...) _printf_(3, 4);
static int plan_fail(struct containerd_plan *p, int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	p->error_code = verrorf(&p->error, r, fmt, ap);
	va_end(ap);
	return r;
}

static int strv_push(char ***v, size_t *n, const char *s)
{
	char **x = reallocarray(*v, *n + 2, sizeof(char *));
	if (!x)
		return -ENOMEM;
	*v = x;
	if (!(x[*n] = strdup(s)))
		return -ENOMEM;
	x[++*n] = NULL;
	return 0;
}

int containerd_plan_compute(int rootfd, int statefd, const char *containerd_bin, struct state *st,
			    const struct osc *old, const struct osc *new, const struct desired *d,
			    struct containerd_plan *p)
{
	int r;
	*p = (struct containerd_plan){};
	if (!new->cri.present) {
		/* The OSC has no criConfig (any more): what the image had comes back. */
		struct stat sb;
		p->restore_none = statefd >= 0 && fstatat(statefd, IMAGE_CONFIG_NONE, &sb, AT_SYMLINK_NOFOLLOW) == 0;
		size_t len = 0;
		p->restore = p->restore_none ||
			     (statefd >= 0 && fsx_read_at(statefd, IMAGE_CONFIG, 4u << 20, &p->image, &len) >= 0);
		p->image_len = len;
		p->restart = p->restore;
		return 0;
	}
	p->present = true;
	/* The base every apply patches: the image's file as it was before
	 * the first patch (kept then), so the file is a function of the
	 * image's and the OSC's (a plugin the OSC drops leaves;
	 * gardener-node-agent patches the file it patched before and keeps
	 * it). Its version decides the key paths (containerd_config.go
	 * getContainerdConfigFileVersion); the binary is asked only when that
	 * is not enough: no file, or version 3 and later (bin_dirs from
	 * containerd 2.2). */
	size_t cur_len = 0;
	_cleanup_free_ char *cur = NULL;
	if (kept_image_config(statefd, &cur, &cur_len) == 0) {
		/* nothing kept yet: what is there now is the image's */
		cur = read_current(rootfd, CRI_CONFIG_FILE, &cur_len);
		p->keep_image = true;
		p->image_len = cur_len;
		if (cur && !(p->image = strndup(cur, cur_len)))
			return plan_fail(p, -ENOMEM, "out of memory");
		p->image_none = !cur || ours_alone(cur, cur_len);
	}
	const char *based = cur && !ours_alone(cur, cur_len) ? cur : NULL;
	struct cri_target t = { .config_version = 2 };
	int fv = 0;
	if (based) {
		_cleanup_(toml_freep) struct toml_node *doc = NULL;
		char err[TOML_ERROR_MAX], why[256];
		if ((r = toml_parse(based, cur_len, &doc, err, sizeof(err))) < 0)
			return plan_fail(p, r, "%s does not parse: %s", CRI_CONFIG_FILE, err);
		if ((r = cri_file_version(doc, &fv, why, sizeof(why))) < 0)
			return plan_fail(p, r, "%s", why);
		if (fv == 1)
			return plan_fail(p, -EINVAL, "%s is of version 1 (containerd before 1.3): not patched",
					 CRI_CONFIG_FILE);
	}
	if (!based || fv >= 3) {
		_cleanup_free_ char *err = NULL;
		if ((r = find_target(containerd_bin, st, &t, &err)) < 0)
			return plan_fail(p, r, "%s", err ? err : strerror(-r));
		log_info("containerd %u.%u: configuration version %d", t.major, t.minor, t.config_version);
	}
	if (based)
		t.config_version = fv;
	char why[512] = "";
	if (new->cri.n_plugins && (r = cri_plugins_check(&new->cri, &t, NULL, why, sizeof(why))) < 0)
		/* Nothing written: a config.toml containerd would refuse must
		 * not replace one it reads. */
		return plan_fail(p, r, "criConfig.containerd.%s", why);
	if ((r = cri_merge_config(based, cur_len, &new->cri, &t, &p->config, why, sizeof(why))) < 0)
		return plan_fail(p, r, "%s", why[0] ? why : strerror(-r));
	size_t on_disk_len = 0;
	_cleanup_free_ char *on_disk = read_current(rootfd, CRI_CONFIG_FILE, &on_disk_len);
	p->config_write = !on_disk || on_disk_len != strlen(p->config) || memcmp(on_disk, p->config, on_disk_len) != 0;
	/* Whether containerd must restart: as GNA's computeChanges
	 * (changes.go, ConfigFileChanged): sandbox image, plugins and cgroup
	 * driver restart containerd; registries do not, containerd reads
	 * hosts.toml at each pull. Models that differ restart it too, the
	 * file written or not (a crash between the write and the restart). */
	_cleanup_free_ char *old_config = NULL, *new_config = NULL;
	bool differs = !old || !old->cri.present || cri_render_config(&old->cri, &t, &old_config) < 0 ||
		       cri_render_config(&new->cri, &t, &new_config) < 0 || strcmp(old_config, new_config) != 0 ||
		       old->cri.n_plugins != new->cri.n_plugins;
	p->restart = p->config_write || differs;

	size_t nw = 0, nt = 0, nr = 0, waiting_len = 0;
	for (size_t i = 0; i < new->cri.n_registries; i++) {
		const struct osc_registry *g = &new->cri.registries[i];
		_cleanup_free_ char *path = NULL, *hosts = NULL;
		if (asprintf(&path, "%s/%s/hosts.toml", CRI_CERTS_DIR, g->upstream) < 0 ||
		    cri_render_hosts(g, &hosts) < 0)
			return plan_fail(p, -ENOMEM, "out of memory");
		size_t hcur_len = 0;
		_cleanup_free_ char *hcur = read_current(rootfd, path, &hcur_len);
		if (g->readiness_probe && d) {
			/* Gardener's addRegistryToContainerdFunc with
			 * shouldProbe (containerd.go): the probe itself
			 * runs in node-agent (agent/mirrors.h). */
			char digest[65];
			desired_sha256_hex(hosts, strlen(hosts), digest); /* = cri_hosts_digest(), rendered once */
			if (!digest[0])
				return plan_fail(p, -ENOMEM, "out of memory");
			if (!containerd_mirror_may_write(g, hosts, digest, hcur, hcur_len, d)) {
				log_notice("Registry %s waits for its readinessProbe (node-agent has not seen every host "
					   "answer): %s %s",
					   g->upstream, path, hcur ? "keeps its previous content" : "not written yet");
				size_t ul = strlen(g->upstream);
				char *w = realloc(p->waiting, waiting_len + ul + 2);
				if (!w)
					return plan_fail(p, -ENOMEM, "out of memory");
				p->waiting = w;
				if (waiting_len)
					p->waiting[waiting_len++] = ' ';
				memcpy(p->waiting + waiting_len, g->upstream, ul + 1);
				waiting_len += ul;
				continue;
			}
		}
		if (hcur && hcur_len == strlen(hosts) && memcmp(hcur, hosts, hcur_len) == 0)
			continue;
		if (strv_push(&p->hosts_path, &nw, path) < 0 || strv_push(&p->hosts_text, &nt, hosts) < 0)
			return plan_fail(p, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; old && old->cri.present && i < old->cri.n_registries; i++) {
		const char *u = old->cri.registries[i].upstream;
		if (find_registry(&new->cri, u))
			continue;
		_cleanup_free_ char *path = NULL;
		if (asprintf(&path, "%s/%s/hosts.toml", CRI_CERTS_DIR, u) < 0)
			return plan_fail(p, -ENOMEM, "out of memory");
		size_t l;
		_cleanup_free_ char *there = read_current(rootfd, path, &l);
		if (there && strv_push(&p->hosts_remove, &nr, u) < 0)
			return plan_fail(p, -ENOMEM, "out of memory");
	}
	return 0;
}

int containerd_plan_apply(int rootfd, int statefd, const char *root, const char *containerd_bin,
			  struct containerd_plan *p, char **ret_error)
{
	int r;
	if (p->error) {
		log_error("%s", p->error);
		return errorf(ret_error, p->error_code < 0 ? p->error_code : -EINVAL, "%s", p->error);
	}
	if (!p->present) {
		if (!p->restore)
			return 0;
		const char *base;
		_cleanup_close_ int dfd = fsx_open_parent_at(rootfd, CRI_CONFIG_FILE, FSX_FOLLOW_ROOT_SYMLINKS, 0, &base);
		r = dfd < 0 ? dfd : p->restore_none ? (unlinkat(dfd, base, 0) < 0 && errno != ENOENT ? negerrno() : 0)
						    : fsx_write_atomic_at(dfd, base, p->image, p->image_len, 0644, 0, 0,
									  FSX_SKIP_IF_SAME);
		if (r < 0 && r != -ENOENT) {
			log_error_errno(r, "Cannot restore the image's %s", CRI_CONFIG_FILE);
			return errorf(ret_error, r, "cannot restore the image's %s: %s", CRI_CONFIG_FILE, strerror(-r));
		}
		(void)unlinkat(statefd, p->restore_none ? IMAGE_CONFIG_NONE : IMAGE_CONFIG, 0);
		log_notice("The OSC has no criConfig: %s is the image's again (%s)", CRI_CONFIG_FILE,
			   p->restore_none ? "removed: the image had none" : "its bytes restored");
		return 0;
	}
	if (p->keep_image && (r = keep_image_config(statefd, p->image_none ? NULL : p->image, p->image_len,
						    ret_error)) < 0)
		return r;
	/* Gardener's ensureContainerdConfigDirectories(). */
	static const char *const dirs[] = { CONTAINERD_RUNTIMES_BIN_DIR, CRI_IMPORTS_DIR, CRI_CERTS_DIR };
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		_cleanup_close_ int dfd = fsx_open_dir_at(rootfd, dirs[i], FSX_MKDIR | FSX_FOLLOW_ROOT_SYMLINKS, 0755);
		if (dfd < 0) {
			log_error_errno(dfd, "Cannot create %s", dirs[i]);
			return errorf(ret_error, dfd, "cannot create %s: %s", dirs[i], strerror(-dfd));
		}
	}
	/* Whatever restarts containerd is first read by containerd itself: a
	 * file it refuses would keep it down. */
	if (p->config_write && (r = write_config(rootfd, root, containerd_bin, p->config, ret_error)) < 0)
		return r;
	bool written = false;
	for (size_t i = 0; p->hosts_path && p->hosts_path[i]; i++) {
		if ((r = write_file(rootfd, p->hosts_path[i], p->hosts_text[i], ret_error)) < 0)
			return r;
		written = true;
	}
	for (size_t i = 0; p->hosts_remove && p->hosts_remove[i]; i++)
		if ((r = remove_registry(rootfd, p->hosts_remove[i], &written, ret_error)) < 0)
			return r;
	if (written)
		log_debug("hosts.toml changed: containerd reads it at each pull, no restart");
	if (p->waiting)
		return errorf(ret_error, -EAGAIN,
			      "registries waiting for their readinessProbe (a host does not answer node-agent yet): %s",
			      p->waiting);
	return 0;
}

int containerd_plan_print(FILE *f, const struct containerd_plan *p)
{
	if (p->error)
		fprintf(f, "containerd fails: %s\n", p->error);
	if (p->restore)
		fprintf(f, "containerd %s %s (the image's: the OSC has no criConfig)\n",
			p->restore_none ? "remove" : "restore", CRI_CONFIG_FILE);
	if (p->keep_image)
		fprintf(f, "containerd keep the image's %s\n", CRI_CONFIG_FILE);
	if (p->config_write)
		fprintf(f, "containerd write %s (loaded by containerd config dump first)\n", CRI_CONFIG_FILE);
	for (size_t i = 0; p->hosts_path && p->hosts_path[i]; i++)
		fprintf(f, "containerd write %s\n", p->hosts_path[i]);
	for (size_t i = 0; p->hosts_remove && p->hosts_remove[i]; i++)
		fprintf(f, "containerd remove %s/%s/hosts.toml\n", CRI_CERTS_DIR, p->hosts_remove[i]);
	if (p->waiting)
		fprintf(f, "containerd wait for the readinessProbe of %s\n", p->waiting);
	return 0;
}

int containerd_apply(int rootfd, int statefd, const char *root, const char *containerd_bin, struct state *st,
		     const struct osc *old, const struct osc *new, const struct desired *d, bool *ret_restart,
		     char **ret_error)
{
	struct containerd_plan p;
	*ret_restart = false;
	(void)containerd_plan_compute(rootfd, statefd, containerd_bin, st, old, new, d, &p);
	int r = containerd_plan_apply(rootfd, statefd, root, containerd_bin, &p, ret_error);
	if (r >= 0 || r == -EAGAIN)
		*ret_restart = p.restart;
	containerd_plan_done(&p);
	return r;
}

int containerd_env_dropin(struct osc *osc, const char *path)
{
	if (!osc->cri.present)
		return 0;
	_cleanup_free_ char *content = NULL;
	if (asprintf(&content, "[Service]\nEnvironment=\"PATH=%s:%s\"\n", CONTAINERD_RUNTIMES_BIN_DIR, path) < 0)
		return -ENOMEM;
	return osc_set_dropin(osc, CONTAINERD_UNIT, CONTAINERD_ENV_DROPIN, content);
}

static bool path_is_plain(const char *s)
{
	if (!s || !*s || strlen(s) > CONTAINERD_PATH_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr("/._:+-", *s)))
			return false;
	return true;
}

/* PATH=... from the manager's Environment property, or NULL. */
static char *manager_path(sd_bus *bus)
{
	_cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
	_cleanup_strv_free_ char **env = NULL;
	int r = sd_bus_get_property_strv(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
					 "org.freedesktop.systemd1.Manager", "Environment", &error, &env);
	if (r < 0) {
		log_debug("Cannot read the manager's environment: %s", error.message ? error.message : strerror(-r));
		return NULL;
	}
	for (char **e = env; e && *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			return path_is_plain(*e + 5) ? strdup(*e + 5) : NULL;
	return NULL;
}

char *containerd_service_path(struct sd_bus *bus)
{
	char *p = bus ? manager_path(bus) : NULL;
	if (p) {
		log_debug("containerd's PATH drop-in: the manager's PATH %s", p);
		return p;
	}
	const char *env = getenv("PATH");
	if (path_is_plain(env)) {
		log_debug("containerd's PATH drop-in: $PATH %s", env);
		return strdup(env);
	}
	log_debug("containerd's PATH drop-in: the fallback %s", CONTAINERD_PATH_FALLBACK);
	return strdup(CONTAINERD_PATH_FALLBACK);
}
