/* gardener-node-agent's stock user data as input.
 *
 * Gardener's user data leaves on a new machine what gardener-node-agent
 * needs, in /var/lib/gardener-node-agent (gardener/gardener
 * pkg/apis/config/nodeagent/v1alpha1/types.go: BaseDir, ClusterCAFilePath,
 * BootstrapTokenFilePath, MachineNameFilePath):
 *   cluster-ca.crt, credentials/bootstrap-token, machine-name and
 *   config-<gardener version>.yaml (pkg/api/config/nodeagent/v1alpha1/helper/
 *   utils.go GetConfigFilePath; before v1.125 config.yaml).
 * This module holds the pure parts: the NodeAgentConfiguration parser
 * (nodeagent.config.gardener.cloud/v1alpha1, same types.go), the machine
 * name check and the choice of the newest config-<version>.yaml. No I/O, no
 * logging; errors name the field and quote the value. */
#ifndef NA_GNACONFIG_H
#define NA_GNACONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GNACONFIG_INPUT_MAX (256u << 10) /* bytes of the YAML */
#define GNACONFIG_SYNCS_MAX 64           /* controllers.token.syncConfigs entries */
#define GNACONFIG_CA_MAX (1u << 20)      /* decoded apiServer.caBundle */
#define GNACONFIG_ERROR_MAX 512
#define GNA_MACHINE_NAME_MAX 253         /* a Kubernetes object name */

#define GNA_DIR_DEFAULT "/var/lib/gardener-node-agent"

/* gardener-node-agent re-applies the OSC every
 * controllers.operatingSystemConfig.syncPeriod (gardener/gardener
 * pkg/nodeagent/controller/operatingsystemconfig/reconciler.go: RequeueAfter
 * r.Config.SyncPeriod), default 10 min (pkg/apis/config/nodeagent/v1alpha1/
 * defaults.go SetDefaults_OperatingSystemConfigControllerConfig), and
 * gardenlet never sets it (pkg/component/extensions/operatingsystemconfig/
 * original/components/nodeagent/component.go sets only the token
 * controller's 12 h). Here the re-apply is cloud-config-exec.timer's
 * OnUnitInactiveSec=10min, a static unit: following another value would
 * take root rewriting its own timer from a file the OSC carries, for a
 * field no shoot sets. node-agent logs a notice when the value differs. */
#define GNA_OSC_SYNC_PERIOD_MS (10u * 60 * 1000)

struct gna_token_sync {
	char *secret_name;   /* Secret kube-system/<secret_name>, key "token" */
	char *path;          /* absolute, normalised: where the token goes */
};

struct gnaconfig {
	char *server;               /* apiServer.server: https://... (NULL if not given) */
	char *ca_file;              /* apiServer.caFile: absolute path (NULL if not given) */
	unsigned char *ca_bundle;   /* apiServer.caBundle (v1.92, base64 in the YAML): decoded PEM */
	size_t ca_bundle_len;
	char *secret_name;          /* controllers.operatingSystemConfig.secretName */
	char *kubernetes_version;   /* controllers.operatingSystemConfig.kubernetesVersion */
	uint64_t sync_period_ms;    /* controllers.operatingSystemConfig.syncPeriod (0: not given);
				     * parsed, checked and not followed: see GNA_OSC_SYNC_PERIOD_MS */
	struct gna_token_sync *token_syncs; /* controllers.token.syncConfigs */
	size_t n_token_syncs;
	uint64_t token_sync_period_ms; /* controllers.token.syncPeriod (0: not given) */
	uint64_t kubelet_data_volume_size; /* bootstrap.kubeletDataVolumeSize in bytes (*int64 in
					    * gardener/gardener pkg/apis/config/nodeagent/v1alpha1/
					    * types.go BootstrapConfiguration; 0: not given); a
					    * negative or zero size is an error */
};

/* Parses len bytes of a NodeAgentConfiguration (YAML or JSON). apiVersion
 * and kind must be Gardener's; fields this project does not use are ignored
 * as Gardener adds new ones; a used field of the wrong type or with an
 * invalid value is an error. On success fills *ret (free with
 * gnaconfig_done()); on failure returns -EINVAL/-EMSGSIZE/-ENOMEM, writes
 * "field: reason" to err and leaves *ret untouched. */
int gnaconfig_parse(const char *data, size_t len, struct gnaconfig *ret, char *err, size_t errlen);

void gnaconfig_done(struct gnaconfig *c);

/* Parses a Go time.Duration ("10m", "1h30m", "1.5h", "300ms") into
 * milliseconds; sub-millisecond parts are rounded down. 0 and negative
 * durations are invalid. Returns 0 or -EINVAL/-ERANGE (above 366 days). */
int gna_duration_parse(const char *s, uint64_t *ret_ms);

/* The machine name from the content of the machine-name file: its first
 * line (gardener/gardener pkg/nodeagent/certificate.go reads only that),
 * without trailing whitespace. Refused: empty, longer than
 * GNA_MACHINE_NAME_MAX bytes, control or non-ASCII characters, and the
 * unreplaced user-data placeholder "<<MACHINE_NAME>>". On success *ret is a
 * new string. */
int gna_machine_name_parse(const char *data, size_t len, char **ret, char *err, size_t errlen);

/* A Kubernetes label value: at most 63 bytes of [A-Za-z0-9._-], beginning
 * and ending with an alphanumeric (or empty). */
bool gna_label_value_is_valid(const char *v);

/* The zone from the content of the stock zone file (first line, trailing
 * whitespace dropped); -EINVAL when it is no valid label value or empty. */
int gna_zone_parse(const char *data, size_t len, char **ret);

/* Among file names, the index of the configuration gardener-node-agent
 * would use: the config-<version>.yaml with the highest version (numeric
 * dotted comparison, a leading "v" ignored, a pre-release suffix "-..."
 * below its release), else "config.yaml"; -ENOENT when there is none. */
int gna_config_pick(const char *const *names, size_t n);

/* The NodeAgentConfiguration an OperatingSystemConfig carries for
 * gardener-node-agent: the newest inline <GNA_DIR_DEFAULT>/config-<version>.yaml
 * (or config.yaml) among its files (Gardener puts it there with
 * gardener-node-agent's unit: pkg/component/extensions/operatingsystemconfig/
 * original/components/nodeagent, Files()). Returns 0 and *ret, -ENOENT when
 * the OSC has none, or what gnaconfig_parse() returns (err filled). Pure. */
/* The client certificate and key embedded in gardener-node-agent's
 * kubeconfig (credentials/kubeconfig: users[].user.client-certificate-data
 * and client-key-data, base64 PEM; written by RequestAndStoreKubeconfig in
 * gardener/gardener pkg/nodeagent/certificate.go), so a node migrating from
 * it keeps its identity. The first user that has both is taken. Returns 0
 * with *cert and *key (new, NUL-terminated; wipe the key), -ENOENT when no
 * user has both, -EINVAL (err filled) for anything malformed. Pure. */
int gna_kubeconfig_client(const char *data, size_t len, char **cert, size_t *cert_len, char **key, size_t *key_len,
			  char *err, size_t errlen);

struct osc;
int gnaconfig_from_osc(const struct osc *o, struct gnaconfig *ret, char *err, size_t errlen);

#endif
