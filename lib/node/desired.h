/* The desired state: what node-agent hands cloud-config-exec.
 *
 * node-agent writes it (0600, atomically) to <state dir>/desired.json after it
 * verified the Secret's checksum and validated the OSC; the path unit starts
 * cloud-config-exec on it. The document carries the verified osc.yaml bytes
 * themselves rather than a re-serialised model: the root side must not trust
 * the unprivileged side, so it re-checks the checksum and re-parses the OSC
 * with the same osc_parse() the agent used, and there is one parser, not two.
 *
 *   {"version": 1,
 *    "checksum": "<sha256 hex of osc>",          the Secret's checksum/data-script
 *    "osc": "<osc.yaml bytes>",
 *    "keyDocument": "<JSON key list>" | absent, from the Node annotation, when enabled
 *    "sshAccess": true | false,                   false: the control plane disabled SSH
 *    "restart": {"id": "<opaque>", "units": ["a.service", ...]} | absent,
 *    "tokens": [{"path": "/abs", "token": "..."}] | absent, token sync: the
 *                        executor writes each token to its path (0640) when it differs
 *    "secretFiles": [{"path": "/abs", "data": "<base64>"}] | absent, the bytes of
 *                        the OSC's content.secretRef files node-agent read
 *                        (agent/secretfiles.h); a secretRef file without an
 *                        entry is one whose Secret could not be read
 *    "readyRegistries": [{"upstream": "host[:port]", "sha256": "<hex>"}] | absent,
 *                        registry mirrors with readinessProbe (agent/mirrors.h):
 *                        every host of that registry's configuration, whose
 *                        rendered hosts.toml has this SHA-256
 *                        (cri_hosts_digest()), answered node-agent's probe;
 *                        the executor writes such a hosts.toml only then
 *    "kubeletBootstrap": {"server": "https://...", "caFile": "/abs", "tokenFile": "/abs",
 *                         "nodeRegistered": bool} | absent,
 *                        the kubelet's bootstrap kubeconfig (cloud-config-exec/kubelet.c):
 *                        written from the bootstrap token until the Node is registered,
 *                        then removed together with the token file
 *    "inPlaceUpdate": {"readyForUpdate": true|false} | absent,
 *                        in-place updates (GEP-31, lib/node/inplace.h): true once
 *                        the Node has the condition type InPlaceUpdate with reason
 *                        ReadyForUpdate (machine-controller-manager drained it).
 *                        gardener-node-agent also proceeds while the Node carries
 *                        node.machine.sapcloud.io/update-result=failed (its retry,
 *                        pkg/nodeagent/controller/operatingsystemconfig/reconciler.go
 *                        Reconcile); node-agent folds that into true as well.
 *                        Absent is the same as false.
 *    "generation": <uint>}                        bumps on every write by the agent
 *
 * Strict both ways: an unknown or duplicate key, a wrong type, a missing
 * required key (version, checksum, osc, generation) is an error, since only
 * our own programs write this document. "sshAccess", "keyDocument" and
 * "restart" are optional; "restart" needs both "id" (1..DESIRED_RESTART_ID_MAX
 * bytes, no control characters) and "units" (0..DESIRED_RESTART_UNITS_MAX
 * valid, distinct systemd unit names: the agent adds ".service" to bare
 * names and de-duplicates before writing). osc must not contain NUL bytes.
 * generation is at most DESIRED_GENERATION_MAX (exact in a JSON number).
 *
 * What these fields may ask of root is bounded beyond this syntax by the
 * executor (cloud-config-exec/bounds.h: the stock bootstrap token and CA
 * files only, token paths only those the OSC's gardener-node-agent
 * configuration names and never in the executor's state, unit directories
 * or account databases, secretFiles only for the OSC's own secretRef
 * files, restarts only of units), since node-agent, which
 * writes this document, is not trusted by root beyond the OSC itself.
 *
 * Pure functions: no I/O, no logging. */
#ifndef NA_DESIRED_H
#define NA_DESIRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DESIRED_VERSION 1
#define DESIRED_MAX (16u << 20)
#define DESIRED_RESTART_UNITS_MAX 64
#define DESIRED_KEY_DOCUMENT_MAX (1u << 20)
#define DESIRED_RESTART_ID_MAX 256
#define DESIRED_GENERATION_MAX ((UINT64_C(1) << 53) - 1)
#define DESIRED_TOKENS_MAX 64
#define DESIRED_TOKEN_MAX (64u << 10)
/* secretFiles: at most one per OSC file; each at most a Secret's size
 * (Kubernetes refuses a Secret over 1 MiB: MaxSecretSize). */
#define DESIRED_SECRET_FILES_MAX 256
#define DESIRED_SECRET_FILE_MAX (1u << 20)
/* readyRegistries: at most one per registry of the OSC (OSC_REGISTRIES_MAX). */
#define DESIRED_READY_REGISTRIES_MAX 64
#define DESIRED_UPSTREAM_MAX 253

struct desired_token {
	char *path;                 /* absolute, normalised */
	char *token;                /* no NUL, at most DESIRED_TOKEN_MAX bytes */
};

struct desired_secret_file {
	char *path;                 /* absolute, normalised */
	unsigned char *data;        /* the file's bytes (may contain NUL), NUL after len */
	size_t len;                 /* at most DESIRED_SECRET_FILE_MAX */
};

struct desired_ready_registry {
	char *upstream;             /* 1..DESIRED_UPSTREAM_MAX printable bytes, no space */
	char sha256[65];            /* cri_hosts_digest() of the configuration probed */
};

struct desired {
	char checksum[65];          /* lowercase hex SHA-256 of osc */
	char *osc;                  /* osc.yaml bytes, NUL-terminated */
	size_t osc_len;
	char *key_document;         /* NULL when absent */
	bool ssh_access;            /* true unless the document says false */
	char *restart_id;           /* NULL when no restart request */
	char **restart_units;       /* NULL-terminated, NULL when none */
	char *kb_server;            /* kubeletBootstrap.server; NULL: no kubeletBootstrap */
	char *kb_ca_file;           /* kubeletBootstrap.caFile (host path) */
	char *kb_token_file;        /* kubeletBootstrap.tokenFile (host path) */
	bool kb_node_registered;    /* kubeletBootstrap.nodeRegistered */
	bool inplace_present;       /* "inPlaceUpdate" given */
	bool inplace_ready;         /* inPlaceUpdate.readyForUpdate */
	struct desired_token *tokens; /* token sync; NULL when none */
	size_t n_tokens;
	struct desired_secret_file *secret_files; /* NULL when none; paths distinct */
	size_t n_secret_files;
	struct desired_ready_registry *ready_registries; /* NULL when none; upstreams distinct */
	size_t n_ready_registries;
	uint64_t generation;
};

/* Serialises d as JSON (pretty-printed, ending in a newline). d must pass the
 * same checks desired_parse() applies, so every document written parses:
 * -EINVAL / -EMSGSIZE for a bad field or a document over DESIRED_MAX,
 * -EBADMSG when checksum is not the SHA-256 of osc. Returns 0, a malloc'ed NUL-terminated buffer in *ret and its
 * length in *ret_len (may be NULL); -ENOMEM. */
int desired_format(const struct desired *d, char **ret, size_t *ret_len);

/* Parses and checks a desired-state document: version (-EPROTONOSUPPORT for
 * another one), field types, the checksum against SHA-256 of osc (-EBADMSG on
 * mismatch), restart unit names (osc_unit_name_is_valid), ceilings
 * (-EMSGSIZE). Other failures are -EINVAL or -ENOMEM. On failure *err (may be
 * NULL) receives a static string naming the field and *ret is untouched.
 * The OSC itself is not parsed here: the caller runs osc_parse() on d.osc.
 * Release with desired_done(). */
int desired_parse(const char *data, size_t len, struct desired *ret, const char **err);

/* Frees what d owns and zeroes it; NULL and a zeroed struct are fine. */
void desired_done(struct desired *d);

/* Lowercase hex SHA-256 of data (OpenSSL). On an OpenSSL allocation failure
 * out is the empty string, which never matches a checksum. */
void desired_sha256_hex(const void *data, size_t len, char out[static 65]);

#endif
