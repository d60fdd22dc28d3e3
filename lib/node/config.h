/* The node's configuration file (JSON, strict), shared by node-agent and
 * cloud-config-exec; man page node-agent.conf(5).
 *
 * Unknown keys and wrong types are errors naming the file and the key
 * ("/etc/node-agent/config.json: apiServer.caFile: expected a string").
 * Defaults are filled after parsing. Pure: config_parse() takes bytes;
 * config_load() opens the file, checks it on the fd (regular file, owned by
 * root or the caller, not world-writable) and parses it. */
#ifndef NA_CONFIG_H
#define NA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_PATH_DEFAULT "/etc/node-agent/config.json"
#define CONFIG_MAX (256u << 10)

struct config {
	/* apiServer */
	char *server;               /* "https://host[:port]" */
	char *ca_file;
	char *token_file;           /* bearer token, re-read when it changes */
	char *client_cert_file;
	char *client_key_file;
	char *bootstrap_token_file;
	char *https_proxy;          /* NULL: no proxy, whatever the environment says */
	char *no_proxy;

	/* node */
	char *node_name;            /* default: lowercased hostname */
	char *kubernetes_version;   /* for the worker.gardener.cloud/kubernetes-version label */
	char *machine_name;         /* the Machine's name: a client certificate through the CSR API */
	char *zone;                 /* label topology.kubernetes.io/zone (stock: the zone file) */

	/* osc */
	char *secret_namespace;     /* default "kube-system" */
	char *secret_name;
	bool follow_secret_name_label; /* default true */

	/* ssh */
	char *login_user;           /* default "gardener" */
	bool keys_exclusive;        /* default false: keep keys we do not manage */
	bool create_user;           /* default true */
	char *sudoers;              /* default "ALL=(ALL) NOPASSWD:ALL"; "" = no sudoers entry */
	unsigned rsa_min_bits;      /* default 2048 */
	bool keys_from_node_annotation; /* default false */
	char *key_document_path;    /* OSC file carrying the expiring-key document;
	                               default "/var/lib/node-agent/authorized-keys.json" */
	double max_key_shrink;      /* default 0.5: refuse to drop more than half the managed keys */
	bool allow_root;            /* default false: authkeys-cmd never serves root */

	/* gardener */
	char *gna_dir;              /* gardener-node-agent's stock user data directory
	                               (/var/lib/gardener-node-agent); NULL: not read */

	/* paths (all below --root) */
	char *state_dir;            /* default "/var/lib/node-agent" (agent-owned) */
	char *exec_state_dir;       /* default "/var/lib/cloud-config-exec" (root-owned) */
	char *snapshot_path;        /* default "/var/lib/cloud-config-exec/authkeys.snap" */

	/* timeouts, milliseconds */
	unsigned connect_timeout_ms;  /* default 10000 */
	unsigned request_timeout_ms;  /* default 30000 (non-watch requests) */
	unsigned watch_idle_timeout_ms; /* default 720000: no event, not even a bookmark */
	unsigned resync_interval_ms;  /* default 36000000 (10 h, controller-runtime's SyncPeriod) */
	unsigned apply_timeout_ms;    /* default 300000: --once waits this long for a result */
	unsigned csr_timeout_ms;      /* default 900000: a CSR not issued by then is given up */
	size_t response_max;          /* default 16 MiB */

	/* lease (node-agent: agent/lease.h) */
	bool lease_enabled;           /* default true */
	/* events (node-agent: agent/events.h) */
	bool events_enabled;          /* default true */

	/* server: healthz and metrics listener (node-agent: agent/httpd.h) */
	char *server_bind_address;    /* IPv4, default "127.0.0.1" */
	unsigned server_health_port;  /* default 2751, 0: off */
	unsigned server_metrics_port; /* default 2752, 0: off */

	/* health: probes and repair of the kubelet and containerd (node-agent: agent/health.h) */
	bool health_enabled;          /* default true */
	char *health_kubelet_url;     /* default "http://127.0.0.1:10248/healthz"; "": no kubelet probe */
	char *health_containerd_url;  /* default NULL: no containerd probe (see health.h) */
	unsigned health_interval_ms;  /* default 30000 */
	unsigned health_timeout_ms;   /* default 10000 */
	unsigned health_unhealthy_ms; /* default 60000: unhealthy this long -> restart */
	unsigned health_repair_interval_ms; /* default 60000: at most one restart per unit in this time */
	unsigned health_ready_toggles; /* default 5 (1 .. HEALTH_TOGGLES_MAX) */
	unsigned health_ready_window_ms; /* default 600000 */
};

/* The most Ready toggles health.readyToggles may name. */
#define CONFIG_READY_TOGGLES_MAX 64

/* Parses len bytes of JSON into *ret (defaults filled). On failure returns
 * -EINVAL and writes "key: reason" to err (errlen bytes). */
int config_parse(const char *data, size_t len, struct config *ret, char *err, size_t errlen);

/* Opens, checks and parses path (relative to nothing: config paths are host
 * paths, not below --root). Error text is prefixed with the path. */
int config_load(const char *path, struct config *ret, char *err, size_t errlen);

/* A config with every default filled and no API server (for the executor and
 * authkeys-cmd when no file exists). */
int config_defaults(struct config *ret);

void config_done(struct config *c);

/* Called by config_each() for one setting: "section.key", its value as
 * text (NULL: unset), and whether the configuration file sets it. */
typedef void (*config_setting_fn)(const char *name, const char *value, bool in_file, void *userdata);

/* Every setting of c in the order of node-agent.conf(5), with whether the
 * JSON document data (len bytes, the file c was loaded from; NULL: none)
 * sets it (a JSON null does not: it means the default). Values: strings as
 * they are, except the userinfo of apiServer.httpsProxy ("user:password@"),
 * shown as "***@"; booleans "true"/"false"; numbers in decimal. Returns 0,
 * -EINVAL for data that does not parse, -ENOMEM. Pure. */
int config_each(const struct config *c, const char *data, size_t len, config_setting_fn fn, void *userdata);

#endif
