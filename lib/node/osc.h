/* The OperatingSystemConfig model: what node-agent validates and
 * cloud-config-exec applies.
 *
 * osc_parse() is a pure parser (libyaml; JSON is YAML) from the bytes of
 * Gardener's osc.yaml into this validated, normalised model: files with
 * decoded content (or, for content.imageRef, the image reference that is
 * not resolved here), units with spec and status.extensionUnits merged by
 * name. No I/O, no logging; errors name the field ("spec.files[3].path")
 * and the offending value. */
#ifndef NA_OSC_H
#define NA_OSC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Ceilings on what the network may hand us. */
#define OSC_INPUT_MAX (8u << 20)      /* bytes of osc.yaml */
#define OSC_FILE_CONTENT_MAX (4u << 20) /* decoded bytes of one file */
#define OSC_FILES_MAX 1024
#define OSC_UNITS_MAX 512
#define OSC_DROPINS_MAX 64            /* per unit */
#define OSC_FILE_PATHS_MAX 256        /* per unit */
#define OSC_PATH_MAX 1024
#define OSC_UNIT_CONTENT_MAX (256u << 10)
#define OSC_ERROR_MAX 512
#define OSC_SECRET_NAME_MAX 253       /* secretRef.name, secretRef.dataKey: Kubernetes' limits */
#define OSC_IMAGE_MAX 512             /* bytes of an imageRef.image reference */
#define OSC_YAML_EVENTS_MAX (1u << 18) /* libyaml events (nodes) in one document */
#define OSC_YAML_DEPTH_MAX 64         /* nesting of mappings and sequences */

enum osc_command {
	OSC_COMMAND_NONE,    /* not given */
	OSC_COMMAND_START,
	OSC_COMMAND_RESTART,
	OSC_COMMAND_STOP,
};

/* Where a file's bytes come from. */
enum osc_file_source {
	OSC_SOURCE_INLINE,          /* content.inline: the bytes are in content */
	OSC_SOURCE_IMAGE,           /* content.imageRef: a file inside a container image.
	                             * Gardener's agent pulls the image through containerd and
	                             * copies the file out (kubelet, gardener-node-agent);
	                             * only described here: cloud-config-exec's images
	                             * step (cloud-config-exec/images.h) copies it. */
	OSC_SOURCE_SECRET,          /* content.secretRef: data[dataKey] of a Secret in the
	                             * OSC's namespace, kube-system; gardener/gardener
	                             * pkg/apis/extensions/v1alpha1/types_operatingsystemconfig.go
	                             * FileContentSecretRef. node-agent reads it
	                             * (agent/secretref.h) and hands the bytes over in
	                             * desired.json; the executor puts them into content
	                             * (cloud-config-exec/secretfiles.h). */
};

struct osc_file {
	char *path;                 /* absolute, normalised (fsx_path_is_safe) */
	mode_t mode;                /* permissions; 0600 when not given */
	enum osc_file_source source;
	unsigned char *content;     /* INLINE: decoded bytes (may contain NUL); IMAGE: empty.
	                             * Never NULL, with a NUL after content_len for
	                             * convenience */
	size_t content_len;         /* 0 for IMAGE */
	bool transmit_unencoded;
	char *image;                /* IMAGE: the image reference as written (1..OSC_IMAGE_MAX
	                             * bytes of printable ASCII, no space); INLINE: NULL */
	char *path_in_image;        /* IMAGE: filePathInImage, absolute and normalised like
	                             * path (fsx_path_is_safe); INLINE: NULL */
	char *secret_name;          /* SECRET: secretRef.name, a DNS subdomain name
	                             * (osc_secret_name_is_valid()); else NULL */
	char *secret_key;           /* SECRET: secretRef.dataKey, a Secret data key
	                             * (osc_secret_key_is_valid()); else NULL */
	bool secret_resolved;       /* SECRET: content holds the Secret's bytes (set by the
	                             * executor only; osc_parse() leaves it false with
	                             * content empty) */
};

struct osc_dropin {
	char *name;                 /* "10-foo.conf": one path component, ends in .conf */
	char *content;              /* never NULL ("" when not given) */
};

struct osc_unit {
	char *name;                 /* valid systemd unit name ("kubelet.service") */
	int enable;                 /* -1 unset (means enable), 0, 1 */
	enum osc_command command;
	char *content;              /* NULL: an OS unit the OSC only adds drop-ins to */
	struct osc_dropin *dropins; /* sorted by name, unique */
	size_t n_dropins;
	char **file_paths;          /* files whose change restarts this unit; sorted, unique,
	                             * safe absolute paths (not necessarily files of this OSC) */
	size_t n_file_paths;
};

/* spec.criConfig (pkg/apis/extensions/v1alpha1/types_operatingsystemconfig.go:
 * CRIConfig, ContainerdConfig, RegistryConfig, RegistryHost, PluginConfig). */
#define OSC_REGISTRIES_MAX 64        /* criConfig.containerd.registries */
#define OSC_REGISTRY_HOSTS_MAX 16    /* hosts per registry */
#define OSC_REGISTRY_CAS_MAX 16      /* caCerts per host */
#define OSC_URL_MAX 1024             /* bytes of a URL, server or CA path */

enum osc_cgroup_driver {
	OSC_CGROUP_UNSET,
	OSC_CGROUP_CGROUPFS,
	OSC_CGROUP_SYSTEMD,
};

/* RegistryCapability bits; a host without any gets pull + resolve. */
enum {
	OSC_CAP_PULL = 1u << 0,
	OSC_CAP_RESOLVE = 1u << 1,
	OSC_CAP_PUSH = 1u << 2,
};

struct osc_registry_host {
	char *url;                  /* printable ASCII, no space, 1..OSC_URL_MAX */
	unsigned capabilities;      /* OSC_CAP_* as given (0: not given) */
	char **ca;                  /* caCerts, NULL-terminated (never NULL), as given */
	size_t n_ca;
	int override_path;          /* -1 unset, 0, 1 */
};

struct osc_registry {
	char *upstream;             /* one path component: [A-Za-z0-9._:-], not starting
	                             * with "."; unique; the certs.d directory name */
	char *server;               /* NULL when not given */
	struct osc_registry_host *hosts;
	size_t n_hosts;
	bool readiness_probe;       /* readinessProbe: true: hosts.toml only once
	                             * every host answered (agent/mirrors.h) */
};

/* A value of criConfig.containerd.plugins[].values (arbitrary JSON in
 * Gardener's API), kept as far as it maps onto TOML without escapes:
 * strings and keys printable ASCII without space, quote or backslash;
 * integers; finite floats; booleans; null (gardener-node-agent's go-toml
 * drops a key whose value is nil: the key is deleted); tables (mappings);
 * arrays whose items are all of one type (scalars, tables or arrays; no
 * null). Infinite and NaN floats (no JSON has them) and mixed arrays
 * (containerd 1.6's TOML parser refuses them) are refused. */
#define OSC_PLUGINS_MAX 16
#define OSC_PLUGIN_PATH_MAX 16      /* components of plugins[].path */
#define OSC_TVAL_ITEMS_MAX 64       /* entries of one table or array */
#define OSC_TVAL_DEPTH_MAX 6        /* nested tables below plugins[].values */

enum osc_tval_type { OSC_TV_STR, OSC_TV_INT, OSC_TV_BOOL, OSC_TV_TABLE, OSC_TV_ARRAY, OSC_TV_FLOAT, OSC_TV_NULL };

struct osc_tval {
	enum osc_tval_type type;
	char *key;                  /* a table's entry: its key; NULL in an array */
	char *str;                  /* OSC_TV_STR */
	int64_t i;                  /* OSC_TV_INT */
	bool b;                     /* OSC_TV_BOOL */
	double f;                   /* OSC_TV_FLOAT (finite) */
	struct osc_tval *items;     /* OSC_TV_TABLE: entries (keys unique); OSC_TV_ARRAY: items of one type */
	size_t n_items;
};

struct osc_plugin {
	char **path;                /* below "plugins"; n_path >= 1 TOML-safe strings */
	size_t n_path;
	bool remove;                /* op: remove (default add) */
	struct osc_tval values;     /* OSC_TV_TABLE; no entries when not given */
};

struct osc_cri {
	bool present;               /* criConfig given (name: containerd) */
	enum osc_cgroup_driver cgroup_driver;
	bool containerd;            /* criConfig.containerd given */
	char *sandbox_image;        /* NULL when containerd not given or "" */
	struct osc_registry *registries; /* sorted by upstream, unique */
	size_t n_registries;
	struct osc_plugin *plugins; /* criConfig.containerd.plugins[], in order */
	size_t n_plugins;
};

/* spec.inPlaceUpdates and status.inPlaceUpdates (GEP-31;
 * pkg/apis/extensions/v1alpha1/types_operatingsystemconfig.go: InPlaceUpdates,
 * CredentialsRotation, CARotation, ServiceAccountKeyRotation,
 * InPlaceUpdatesStatus, OSUpdate). lib/node/inplace.h classifies them. */
#define OSC_VERSION_MAX 128          /* operatingSystemVersion, kubelet */
#define OSC_OS_UPDATE_ARGS_MAX 64    /* osUpdate.args */
#define OSC_OS_UPDATE_ARG_MAX 4096   /* bytes of osUpdate.command or one arg */
#define OSC_TIME_MAX 64              /* bytes of a lastInitiationTime */

struct osc_rotation {
	bool present;               /* certificateAuthorities / serviceAccountKey given */
	char *time;                 /* lastInitiationTime as written (RFC 3339); NULL when absent */
	int64_t sec;                /* its instant (inplace_parse_time()) */
	int32_t nsec;
};

struct osc_inplace {
	bool present;               /* spec.inPlaceUpdates given */
	char *os_version;           /* operatingSystemVersion; "" when not given (present only) */
	char *kubelet_version;      /* kubelet; "" when not given (present only) */
	bool credentials_rotation;  /* credentialsRotation given */
	struct osc_rotation ca;     /* credentialsRotation.certificateAuthorities */
	struct osc_rotation sa;     /* credentialsRotation.serviceAccountKey */
};

struct osc_os_update {
	char *command;              /* status.inPlaceUpdates.osUpdate.command; NULL: no osUpdate;
	                             * "" when osUpdate has no command */
	char **args;                /* NULL-terminated, never NULL when command is set */
	size_t n_args;
};

struct osc {
	struct osc_file *files;     /* sorted by path, unique */
	size_t n_files;
	struct osc_unit *units;     /* sorted by name, unique */
	size_t n_units;
	struct osc_cri cri;         /* spec.criConfig */
	struct osc_inplace inplace; /* spec.inPlaceUpdates */
	struct osc_os_update os_update; /* status.inPlaceUpdates.osUpdate */
};

struct osc_error {
	char message[OSC_ERROR_MAX]; /* "spec.files[3].path: relative path 'etc/x'" */
};

/* Invariants of a model osc_parse() returned (the fuzzer checks them):
 * files sorted by path and unique, every path safe and outside
 * forbidden_prefix, content never NULL and NUL-terminated, content_len and
 * mode within the ceilings; an IMAGE file has content_len 0 and non-NULL
 * image and path_in_image, an INLINE file has both NULL; units sorted by
 * name and unique with valid names, drop-ins sorted and unique with valid
 * names and non-NULL content, filePaths sorted, unique and safe. */

/* Parses and validates len bytes of osc.yaml (YAML or JSON). On success fills
 * *ret (release with osc_done()) and returns 0; on failure returns -EINVAL
 * (malformed, wrong type, invalid value), -EMSGSIZE (a ceiling above) or
 * -ENOMEM, fills *err when non-NULL, and leaves *ret untouched. Paths below
 * forbidden_prefix (the agent's own state directory, may be NULL) are refused.
 *
 * Same as osc_parse_for_node(..., NULL, ...): files that carry a `hostName`
 * or `nodeName` are dropped, since they are meant for one particular node. */
int osc_parse(const char *data, size_t len, const char *forbidden_prefix, struct osc *ret,
	      struct osc_error *err);

/* As osc_parse(), for the node called node_name (the Node's name, which is
 * the lowercased hostname on Gardener nodes; may be NULL). A file whose
 * `hostName` or `nodeName` is set is kept only when it equals node_name
 * (ASCII case-insensitively), as gardener-node-agent's CollectAllFiles does.
 *
 * What the parser accepts, in the words of Gardener's API
 * (extensions.gardener.cloud/v1alpha1 OperatingSystemConfig):
 *  - apiVersion / kind: checked when present; metadata and every other
 *    unknown field are ignored; a known field of the wrong type is an error;
 *    `null` counts as absent.
 *  - spec.files[] and status.extensionFiles[] (concatenated, then filtered by
 *    node): path (absolute, normalised, printable ASCII, not below forbidden_prefix),
 *    permissions (integer 0..07777; YAML 1.1 reads 0644 as octal, Gardener
 *    writes decimal 420; default 0600), content.transmitUnencoded, and
 *    exactly one of:
 *     - content.inline.{encoding "" | "b64", data} (source INLINE);
 *     - content.imageRef.{image, filePathInImage} (source IMAGE): image
 *       non-empty, at most OSC_IMAGE_MAX bytes of printable ASCII without
 *       space; filePathInImage required, checked like path (but not against
 *       forbidden_prefix: it names a path inside the image). The file is
 *       kept in the model with empty content; nothing here pulls images.
 *     - content.secretRef.{name, dataKey} (source SECRET): name a DNS
 *       subdomain name (lowercase, at most 253 bytes), dataKey a Secret
 *       data key ([-._a-zA-Z0-9]+, at most 253 bytes, not "." or ".."),
 *       both required. Only self-hosted shoots keep these (gardenlet
 *       inlines them for every other shoot); the file is kept with empty
 *       content, its bytes come from desired.json.
 *    Two files with the same path are an error.
 *  - spec.units[] and status.extensionUnits[] (unit names unique within each
 *    list), merged by name exactly like gardener-node-agent's mergeUnits():
 *    a later entry overwrites enable/command/content when it sets them and
 *    appends dropIns and filePaths. After the merge a drop-in name that occurs
 *    twice keeps the later content (what writing both in order yields);
 *    filePaths are sorted and de-duplicated.
 *  - YAML: one document, no aliases (no billion-laughs), at most
 *    OSC_YAML_EVENTS_MAX nodes nested at most OSC_YAML_DEPTH_MAX deep;
 *    scalars are typed like Go's yaml.v2 (YAML 1.1: true/false/yes/no/on/off
 *    are booleans, 0644 is octal) so that a document Gardener accepts is read
 *    the same way here; quoted scalars are always strings.
 *  - spec.criConfig: name must be "containerd"; cgroupDriver "cgroupfs" or
 *    "systemd"; containerd.sandboxImage (an image reference like
 *    imageRef.image, "" allowed), containerd.registries[] (upstream,
 *    server, hosts[].{url, capabilities pull|resolve|push, caCerts,
 *    overridePath}, readinessProbe), containerd.plugins[]
 *    (path: 1..OSC_PLUGIN_PATH_MAX non-empty strings, op add|remove,
 *    values: a mapping, see struct osc_tval; at most OSC_PLUGINS_MAX).
 *    Strings that end up in containerd's TOML are printable ASCII without
 *    '"' or '\'.
 *  - spec.inPlaceUpdates: operatingSystemVersion and kubelet (strings of at
 *    most OSC_VERSION_MAX printable ASCII bytes without space; unquoted
 *    1592.1 is a YAML float and refused, as Gardener's decoder refuses it),
 *    credentialsRotation.{certificateAuthorities,serviceAccountKey}
 *    .lastInitiationTime (RFC 3339, inplace_parse_time()).
 *    status.inPlaceUpdates.osUpdate: command (at most OSC_OS_UPDATE_ARG_MAX
 *    bytes without NUL or newline; "" when absent, refused only when run), args (0..OSC_OS_UPDATE_ARGS_MAX strings
 *    of that kind). Unknown fields below them are ignored like elsewhere. */
int osc_parse_for_node(const char *data, size_t len, const char *forbidden_prefix,
		       const char *node_name, struct osc *ret, struct osc_error *err);

/* Lookups in the sorted arrays; NULL when absent. */
const struct osc_file *osc_find_file(const struct osc *osc, const char *path);
const struct osc_unit *osc_find_unit(const struct osc *osc, const char *name);

/* True for a valid systemd unit name of a type the OSC may carry: systemd's
 * unit_name_is_valid() for plain, instance ("getty@tty1.service") and
 * template ("getty@.service") names: 1..255 bytes of [A-Za-z0-9:_.\\-@], a
 * non-empty prefix not starting with "@", and one of the suffixes .service
 * .socket .target .timer .path .mount .automount .slice .scope .swap .device. */
bool osc_unit_name_is_valid(const char *name);

/* A secretRef.name: a DNS subdomain name as Kubernetes names Secrets
 * (at most OSC_SECRET_NAME_MAX bytes of [a-z0-9.-], alphanumeric at both
 * ends). Also what keeps it a single safe URL path component. */
bool osc_secret_name_is_valid(const char *name);

/* A secretRef.dataKey: a key of a Secret's data ([-._a-zA-Z0-9]+, at most
 * OSC_SECRET_NAME_MAX bytes, not "." or "..", as Kubernetes validates it). */
bool osc_secret_key_is_valid(const char *key);

/* True for a drop-in file name the OSC may carry: one path component of
 * [A-Za-z0-9._@:+,=~-], at most 255 bytes, not starting with ".", ending in
 * ".conf" with at least one byte before it. */
bool osc_dropin_name_is_valid(const char *name);

/* Sets the drop-in `name` of `unit` to a copy of content, as a drop-in the
 * OSC itself listed: adds the unit (an OS unit the OSC only adds drop-ins
 * to: no content, enable unset) when osc has none, replaces the content of
 * a drop-in of that name, keeps units and drop-ins sorted. For what the
 * executor adds to every OSC it applies (gardener-node-agent adds such
 * drop-ins to the OSC in memory before it computes its changes). Returns 0,
 * -EINVAL for an invalid unit or drop-in name, -EMSGSIZE beyond
 * OSC_UNITS_MAX or OSC_DROPINS_MAX, -ENOMEM (osc unchanged on failure). */
int osc_set_dropin(struct osc *osc, const char *unit, const char *name, const char *content);

/* Frees everything osc owns and zeroes it; NULL and a zeroed struct are fine. */
void osc_done(struct osc *osc);

#endif
