/* containerd's configuration from the OSC's criConfig: pure renderers.
 *
 * What gardener-node-agent writes (Gardener
 * pkg/nodeagent/controller/operatingsystemconfig/containerd_config.go,
 * ensureContainerdConfiguration, and containerd.go, addRegistryToContainerdFunc
 * with templates/containerd-hosts.toml.tpl), rendered from the model instead
 * of patched into `containerd config default`: node-agent has no TOML
 * parser, and a complete file of only the keys the OSC decides lets
 * containerd fill in its own defaults for everything else.
 *
 * No I/O, no logging. */
#ifndef NA_CRICONFIG_H
#define NA_CRICONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "osc.h"

#define CRI_CONFIG_DIR "/etc/containerd"
#define CRI_CONFIG_FILE CRI_CONFIG_DIR "/config.toml"
#define CRI_IMPORTS_DIR CRI_CONFIG_DIR "/conf.d"
#define CRI_CERTS_DIR CRI_CONFIG_DIR "/certs.d"
#define CRI_CNI_BIN_DIR "/opt/cni/bin"
#define CRI_VERSION_OUTPUT_MAX 4096 /* bytes of `containerd --version` read */

/* Which configuration the containerd binary found wants. */
struct cri_target {
	int config_version;         /* 2 (containerd 1.x), 3 (2.0-2.2), 4 (2.3 and later) */
	bool cni_bin_dirs;          /* containerd >= 2.2: cni.bin_dirs (a list) replaces bin_dir */
	unsigned major, minor;
};

/* Reads the output of `containerd --version` ("containerd
 * github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3",
 * "containerd containerd.io v2.0.2 c507a0..."): the third word, an optional
 * "v", then MAJOR.MINOR. Returns 0 and *ret, or -EINVAL (major not 1 or 2). */
int cri_target_from_version(const char *out, size_t len, struct cri_target *ret);

/* containerd's config.toml for cri (cri->present) and target t: version,
 * imports of CRI_IMPORTS_DIR/\*.toml, registry config_path CRI_CERTS_DIR, the
 * sandbox image (when given), the CNI bin dir(s), the runc runtime with
 * SystemdCgroup (when cgroupDriver is given), then one table (and its
 * nested tables) per criConfig.containerd.plugins entry not removed by a
 * later one (see cri_plugins_check()). Returns 0 and a NUL-terminated
 * string in *ret (free()), -EINVAL (no criConfig, unknown version, plugins
 * cri_plugins_check() refuses), -ENOMEM. */
int cri_render_config(const struct osc_cri *cri, const struct cri_target *t, char **ret);

struct toml_node;

/* The configuration version of a parsed config.toml as gardener-node-agent
 * reads it (containerd_config.go getContainerdConfigFileVersion): its
 * "version" key, 1 when there is none. Returns 0 and *ret, -EINVAL (not an
 * integer, outside 1..4) with the reason in why. */
int cri_file_version(const struct toml_node *doc, int *ret, char *why, size_t why_size);

/* config.toml as gardener-node-agent's ensureContainerdDefaultConfig and
 * ensureContainerdConfiguration make it (containerd_config.go): base is
 * the file there (NULL: none, then the document is node-agent's keys
 * alone, where gardener-node-agent writes `containerd config default`:
 * containerd fills in its own defaults either way), patched with exactly
 * the keys node-agent owns (cri_render_config() for t, whose
 * config_version must be base's: cri_file_version(); the executor passes
 * the image's file as kept before its first patch): every other table,
 * runtime (an image's nvidia runtime), plugin and key of base stays;
 * imports gets CRI_IMPORTS_DIR appended when it lacks it; cni.bin_dir goes
 * where bin_dirs is written; a plugin's values replace the keys of its
 * table they name, each whole (gardener-node-agent's json.Unmarshal into
 * the table), and a remove deletes its table. A path through a value that
 * is not a table is refused (gardener-node-agent: "unable to traverse").
 * Comments and layout of base are not kept (nor are they there). Returns 0
 * and the text in *ret (free()), -EINVAL with the reason in why, -ENOMEM. */
int cri_merge_config(const char *base, size_t base_len, const struct osc_cri *cri, const struct cri_target *t,
		     char **ret, char *why, size_t why_size);

/* Checks criConfig.containerd.plugins for t (pure): each add becomes the
 * table plugins.<path> (version >= 3: Gardener's path replacement for
 * io.containerd.grpc.v1.cri.containerd.runtimes) with its values, nested
 * mappings as nested tables; a remove drops earlier plugins at or below its
 * path. Refused (-EINVAL, the reason in why): a key with a byte
 * cri_key_is_safe() refuses (containerd 1.6's parser refuses "]" and "["
 * in a table header), a first path component that is not a plugin URI of
 * four dotted parts (containerd's ValidateV2), a table or key set twice (by
 * node-agent's own keys or another plugin: no merging), a value that is also
 * a table, a remove of something node-agent renders itself or of a part of
 * an earlier plugin's values. ret_active (may be NULL; n_plugins entries)
 * tells which plugins are rendered. */
int cri_plugins_check(const struct osc_cri *cri, const struct cri_target *t, bool *ret_active, char *why,
		      size_t why_size);

/* True when key (a plugin path component, a table or value key) has only
 * bytes of [A-Za-z0-9._:/@+-] and at least one: what every TOML parser
 * containerd reads config.toml with accepts in a quoted key. */
bool cri_key_is_safe(const char *key);

/* CRI_CERTS_DIR/<upstream>/hosts.toml for one registry: server, then one
 * [host."URL"] table per host with capabilities (pull, resolve when none
 * given), ca and override_path (when true), as Gardener's template writes
 * them. Returns 0 and the text in *ret (free()), -ENOMEM. */
int cri_render_hosts(const struct osc_registry *g, char **ret);

/* Lowercase hex SHA-256 of cri_render_hosts(g): names one configuration of
 * a registry (its hosts, CA files, capabilities, server), as the agent
 * probed it and the executor would write it (desired.h readyRegistries).
 * Returns 0, -ENOMEM. */
int cri_hosts_digest(const struct osc_registry *g, char out[static 65]);

/* True when both OSCs' criConfigs render to the same files (configuration
 * and every hosts.toml) for t; a NULL osc counts as "no criConfig". */
bool cri_equal(const struct osc_cri *a, const struct osc_cri *b, const struct cri_target *t);

#endif
