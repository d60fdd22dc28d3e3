/* The containerd step: the OSC's criConfig as containerd's config.toml and
 * certs.d/<upstream>/hosts.toml (lib/node/criconfig.h renders them), as
 * gardener-node-agent's ReconcileContainerdConfig and
 * ReconcileContainerdRegistries do (Gardener
 * pkg/nodeagent/controller/operatingsystemconfig/containerd.go). */
#ifndef CCE_CONTAINERD_H
#define CCE_CONTAINERD_H

#include <stdbool.h>
#include <stdio.h>

#include "osc.h"

struct sd_bus;

#define CONTAINERD_BIN "/usr/bin/containerd"
#define CONTAINERD_UNIT "containerd.service"
#define CONTAINERD_VERSION_TIMEOUT_MS 10000
/* The candidate config.toml containerd is asked about, next to it. */
#define CONTAINERD_CANDIDATE ".config.toml.node-agent-candidate"

struct state;
struct stat;
struct desired;

/* The cache decision (pure): the version line s holds for the binary st
 * describes, or NULL when s has none or it was learnt from another binary
 * (another device, inode, size, mtime or ctime: replaced, upgraded,
 * rewritten in place). */
const char *containerd_cached_version(const struct state *s, const struct stat *st);

/* When new has no criConfig: the image's config.toml comes back (kept in
 * statefd before the first patch: its bytes, or none), *ret_restart set;
 * nothing when none was kept. Otherwise patches CRI_CONFIG_FILE as
 * gardener-node-agent does (cri_merge_config(): what is there stays but the
 * keys node-agent owns; the file's version decides the key paths), asking
 * containerd_bin which configuration it reads only when that file does not
 * tell ("containerd --version", a child with a deadline, see child.h; the
 * answer is cached in st per binary, containerd_cached_version(), and asked
 * again only when the binary changed), and writes one hosts.toml per registry below
 * rootfd (atomically, 0644, only when the bytes differ; conf.d and certs.d
 * created 0755) and removes the hosts.toml of registries old had and new
 * has not. A config.toml that would restart containerd is first loaded by
 * containerd itself (`containerd_bin --config CANDIDATE config dump`, the
 * candidate's host path below root): one it refuses never replaces the old
 * file, the step fails and containerd is not restarted. *ret_restart:
 * containerd must be restarted, because config.toml was written or because
 * the two models' config.toml differ (so a re-run after a crash between
 * the write and the restart still restarts it); never for hosts.toml alone
 * (containerd reads it at each pull; GNA's changes.go) nor on a reconcile
 * that changes nothing (Gardener #11120). Plugins that cri_plugins_check()
 * refuses fail the step before anything is written. On failure returns
 * -errno and *ret_error (free()) says why in one line; logs each file
 * written and each error.
 *
 * A registry with readinessProbe: true is written only as
 * containerd_mirror_may_write() says, with d the desired state (NULL: an
 * operator's "apply FILE", written at once); one that must wait keeps its
 * previous hosts.toml (or none), is logged as waiting, and the step then
 * fails with -EAGAIN naming the registries that wait, after everything
 * else of the step was done (Gardener's reconcile does not finish either
 * until they answered). */
int containerd_apply(int rootfd, int statefd, const char *root, const char *containerd_bin, struct state *st,
		     const struct osc *old, const struct osc *new, const struct desired *d, bool *ret_restart,
		     char **ret_error);

/* The containerd step's plan (decided before anything is written; what
 * "check" prints): containerd_plan_compute() reads the files there and
 * the kept image file, asks the binary only what the file does not tell,
 * and writes nothing; containerd_plan_apply() carries it out as
 * containerd_apply() describes. */
struct containerd_plan {
	bool present;               /* the OSC has a criConfig */
	bool restore;               /* no criConfig and an image file kept: it comes back */
	bool restore_none;          /* ... the image had none: config.toml is removed */
	bool keep_image;            /* the image's file is kept first (first patch) */
	bool image_none;            /* ... the image had none */
	char *image;                /* the image's bytes (keep or restore); NULL: none */
	size_t image_len;
	char *config;               /* config.toml's text (present) */
	bool config_write;          /* it differs from the file there */
	bool restart;               /* containerd.service restarts (the file or the models changed, restore) */
	char **hosts_path;          /* hosts.toml to write (bytes differ), NULL-terminated or NULL */
	char **hosts_text;          /* ... their bytes, in the same order */
	char **hosts_remove;        /* upstreams whose hosts.toml goes (dropped by the OSC) */
	char *waiting;              /* "a b": registries waiting for their readinessProbe */
	char *error;                /* the step fails with this (nothing is written) */
	int error_code;
};

int containerd_plan_compute(int rootfd, int statefd, const char *containerd_bin, struct state *st,
			    const struct osc *old, const struct osc *new, const struct desired *d,
			    struct containerd_plan *ret);
int containerd_plan_apply(int rootfd, int statefd, const char *root, const char *containerd_bin,
			  struct containerd_plan *p, char **ret_error);
/* One line per action ("containerd write /etc/containerd/config.toml ..."). */
int containerd_plan_print(FILE *f, const struct containerd_plan *p);
void containerd_plan_done(struct containerd_plan *p);

/* Whether the hosts.toml of registry g (rendered as hosts, digest its
 * cri_hosts_digest()) may be written now (pure): always for a registry
 * without readinessProbe, or when there is no desired state (d NULL); when
 * the file already holds exactly these bytes (cur, cur_len; cur NULL: no
 * file), i.e. this configuration was written before: gardener-node-agent
 * probes only a registry that is new or changed against the last applied
 * OSC (changes.go UpstreamsToProbe); and when d's readyRegistries lists
 * g's upstream with this very digest (node-agent saw every host of this
 * configuration answer; agent/mirrors.h). */
bool containerd_mirror_may_write(const struct osc_registry *g, const char *hosts, const char *digest, const char *cur,
				 size_t cur_len, const struct desired *d);

/* Where extensions install container runtime shims (gVisor's runsc, Kata):
 * gardener/gardener pkg/apis/extensions/v1alpha1/
 * types_operatingsystemconfig.go ContainerDRuntimeContainersBinFolder.
 * containerd_apply() creates it 0755 (ensureContainerdConfigDirectories). */
#define CONTAINERD_RUNTIMES_BIN_DIR "/var/bin/containerruntimes"
#define CONTAINERD_ENV_DROPIN "30-env_config.conf"
/* When neither the manager nor the environment gives a usable PATH:
 * systemd's default for a split-/usr system. */
#define CONTAINERD_PATH_FALLBACK "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define CONTAINERD_PATH_MAX 4096

/* As gardener-node-agent's addContainerdEnvironmentDropIn (gardener/gardener
 * pkg/nodeagent/controller/operatingsystemconfig/containerd.go): when osc
 * has a criConfig, containerd.service (added without content when the OSC
 * lacks it) gets the drop-in CONTAINERD_ENV_DROPIN
 *   [Service]
 *   Environment="PATH=/var/bin/containerruntimes:<path>"
 * byte for byte as Gardener renders it, so shims installed there are found
 * and a node gardener-node-agent configured keeps the same file (no
 * restart). A drop-in of that name the OSC already has is replaced (systemd
 * would read the one gardener-node-agent appends last). Nothing without a
 * criConfig. path: containerd_service_path(). Pure. Returns 0, -ENOMEM,
 * -EMSGSIZE (osc unchanged on failure). */
int containerd_env_dropin(struct osc *osc, const char *path);

/* The PATH a service without Environment= gets, i.e. what
 * gardener-node-agent's own os.Getenv("PATH") is: the system manager's
 * environment (org.freedesktop.systemd1.Manager.Environment, what
 * `systemctl show-environment` prints) when bus is non-NULL; else this
 * process's $PATH; else CONTAINERD_PATH_FALLBACK. A value with a byte
 * outside [A-Za-z0-9/._:+-] (a quote, "%" or "$" that systemd would
 * interpret in the drop-in) or longer than CONTAINERD_PATH_MAX is not used
 * (the next source is). Returns a new string or NULL (out of memory); logs
 * at debug level which source it took. */
char *containerd_service_path(struct sd_bus *bus);

#endif
