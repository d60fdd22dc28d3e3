/* Pure parsing of what the kube-apiserver sends node-agent, and building of
 * what node-agent sends back.
 *
 * Secrets, Nodes, Status bodies and watch events are parsed from bytes into
 * small structures holding only what the agent uses; the watch-stream
 * splitter turns arbitrary chunks into complete event lines. No I/O, no
 * logging, no global state: tests and fuzzers call these directly. Errors
 * are -EINVAL (malformed, wrong type), -EMSGSIZE (a ceiling) or -ENOMEM;
 * *err, when non-NULL, receives a static string naming the field. */
#ifndef NA_KUBE_H
#define NA_KUBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Names and annotations the agent reads and writes. */
#define KUBE_SECRET_DATA_KEY "osc.yaml"
#define KUBE_ANN_SECRET_CHECKSUM "checksum/data-script"
#define KUBE_ANN_NODE_CHECKSUM "checksum/cloud-config-data"
#define KUBE_ANN_RESTART "worker.gardener.cloud/restart-systemd-services"
#define KUBE_ANN_AUTHORIZED_KEYS "node-agent.gardener.cloud/authorized-keys"
#define KUBE_ANN_SSH_HOST_KEYS "node-agent.gardener.cloud/ssh-host-keys"
#define KUBE_LABEL_SECRET_NAME "worker.gardener.cloud/gardener-node-agent-secret-name"
#define KUBE_LABEL_K8S_VERSION "worker.gardener.cloud/kubernetes-version"
#define KUBE_LABEL_WORKER_ROLE "node-role.kubernetes.io/worker"
#define KUBE_LABEL_ZONE "topology.kubernetes.io/zone"
#define KUBE_ANN_RECONCILIATION_DELAY "node-agent.gardener.cloud/reconciliation-delay"
/* In-place updates (GEP-31), machine-controller-manager's keys as gardener's
 * node-agent uses them (gardener/machine-controller-manager
 * pkg/apis/machine/v1alpha1: LabelKeyNodeUpdateResult with
 * LabelValueNodeUpdateSuccessful/Failed, AnnotationKeyMachineUpdateFailedReason,
 * the condition type NodeInPlaceUpdate with the reason ReadyForUpdate) and
 * gardener's own annotation (gardener/gardener pkg/nodeagent/controller/
 * operatingsystemconfig/reconciler.go annotationUpdatingOperatingSystemVersion). */
#define KUBE_LABEL_UPDATE_RESULT "node.machine.sapcloud.io/update-result"
#define KUBE_UPDATE_RESULT_SUCCESSFUL "successful"
#define KUBE_UPDATE_RESULT_FAILED "failed"
#define KUBE_ANN_UPDATE_FAILED_REASON "node.machine.sapcloud.io/update-failed-reason"
#define KUBE_ANN_UPDATING_OS_VERSION "node-agent.gardener.cloud/updating-operating-system-version"
#define KUBE_CONDITION_IN_PLACE_UPDATE "InPlaceUpdate"
#define KUBE_REASON_READY_FOR_UPDATE "ReadyForUpdate"
/* On the OSC Secret: "true" -> serial rollouts (agent/serial.h). */
#define KUBE_ANN_SERIAL "reconciliation.osc.node-agent.gardener.cloud/serial"

/* A resourceVersion is an opaque string; etcd's are decimal, well below this.
 * The parsers refuse one with characters outside [0-9A-Za-z._~-]. */
#define KUBE_RV_MAX 64
/* Longest value kept from an annotation or label of interest. */
#define KUBE_VALUE_MAX (1u << 20)
/* DNS-1123 subdomain. */
#define KUBE_NAME_MAX 253

struct kube_status {
	int code;                   /* "code", 0 when absent */
	char *reason;               /* "reason" ("Expired", "Forbidden"...), NULL when absent */
	char *message;              /* "message", NULL when absent */
};

struct kube_secret {
	char *name;                 /* metadata.name, NULL when absent */
	char *resource_version;     /* metadata.resourceVersion, NULL when absent */
	char *checksum;             /* annotation checksum/data-script, NULL when absent */
	char *uid;                  /* metadata.uid (the serial Lease's owner), NULL when absent */
	bool serial;                /* annotation KUBE_ANN_SERIAL is exactly "true" */
	unsigned char *osc;         /* decoded data["osc.yaml"], NUL-terminated; NULL when absent */
	size_t osc_len;
};

#define KUBE_IP_MAX 46 /* INET6_ADDRSTRLEN */

struct kube_node {
	char *name;
	char *resource_version;
	char *uid;                  /* metadata.uid (for the Lease's owner reference), NULL when absent */
	char *applied_checksum;     /* annotation checksum/cloud-config-data */
	char *restart_services;     /* annotation worker.gardener.cloud/restart-systemd-services */
	char *authorized_keys;      /* annotation node-agent.gardener.cloud/authorized-keys */
	char *ssh_host_keys;        /* annotation node-agent.gardener.cloud/ssh-host-keys */
	char *secret_name_label;    /* label worker.gardener.cloud/gardener-node-agent-secret-name */
	char *kubernetes_version;   /* label worker.gardener.cloud/kubernetes-version */
	char *worker_role;          /* label node-role.kubernetes.io/worker ("" when set as usual) */
	char *zone;                 /* label topology.kubernetes.io/zone */
	char *reconciliation_delay; /* annotation node-agent.gardener.cloud/reconciliation-delay */
	/* status.conditions[type=SystemdUnitsReady] (agent/conditions.h): all
	 * four set, or all NULL when the condition is absent or any of its
	 * fields is not a string of at most KUBE_CONDITION_MESSAGE_MAX bytes
	 * (other writers' conditions never make the Node unreadable). */
	char *units_ready_status;
	char *units_ready_reason;
	char *units_ready_message;
	char *units_ready_transition; /* lastTransitionTime, as written */
	int ready;                  /* status.conditions[type=Ready].status: 1 "True", 0 another
	                               value, -1 no such condition (or not readable) */
	/* status.addresses, as gardener-node-agent's ensureNodeInternalIP reads
	 * them (pkg/nodeagent/controller/healthcheck/kubelet.go): has_address
	 * when an InternalIP or ExternalIP entry has a non-empty address;
	 * internal_ip the last InternalIP entry's address when it is an IPv4 or
	 * IPv6 address (canonical form), "" otherwise. Lenient, as for Ready. */
	bool has_address;
	char internal_ip[KUBE_IP_MAX];
	/* In-place updates: the condition InPlaceUpdate has the reason
	 * ReadyForUpdate (as gardener's nodeHasInPlaceUpdateConditionWith
	 * ReasonReadyForUpdate reads it: type and reason, whatever the status;
	 * lenient as for Ready), and the label and annotations above. */
	bool ready_for_update;
	char *update_result;        /* label node.machine.sapcloud.io/update-result */
	char *update_failed_reason; /* annotation node.machine.sapcloud.io/update-failed-reason */
	char *updating_os_version;  /* annotation node-agent.gardener.cloud/updating-operating-system-version */
};

#define KUBE_CONDITION_SYSTEMD_UNITS_READY "SystemdUnitsReady"
#define KUBE_CONDITION_MESSAGE_MAX 32768

enum kube_kind {
	KUBE_KIND_SECRET,
	KUBE_KIND_NODE,
};

enum kube_event_type {
	KUBE_EVENT_ADDED,
	KUBE_EVENT_MODIFIED,
	KUBE_EVENT_DELETED,
	KUBE_EVENT_BOOKMARK,
	KUBE_EVENT_ERROR,
};

struct kube_event {
	enum kube_event_type type;
	/* metadata.resourceVersion of the object (ADDED/MODIFIED/DELETED/BOOKMARK);
	 * NULL for ERROR. */
	char *resource_version;
	struct kube_secret secret;  /* ADDED/MODIFIED/DELETED of a Secret watch */
	struct kube_node node;      /* ADDED/MODIFIED/DELETED of a Node watch */
	struct kube_status status;  /* ERROR */
};

/* Parses a Status body ({"kind":"Status",...,"reason","message","code"}).
 * -EINVAL when it is not a JSON object of kind Status. */
int kube_status_parse(const char *data, size_t len, struct kube_status *ret);
void kube_status_done(struct kube_status *s);

/* Parses a Secret (kind "Secret"). data["osc.yaml"] is strict base64 and at
 * most max_osc decoded bytes (-EMSGSIZE). Absent fields stay NULL: whether
 * that is acceptable is the caller's decision. */
int kube_secret_parse(const char *data, size_t len, size_t max_osc, struct kube_secret *ret,
		      const char **err);
void kube_secret_done(struct kube_secret *s);

/* data[key] of a Secret (kind "Secret"), strict base64, at most max decoded
 * bytes: 0 and *ret (new, NUL-terminated), -ENOENT when the key is absent,
 * -EINVAL/-EMSGSIZE otherwise (err names the problem). Pure. */
int kube_secret_data(const char *data, size_t len, const char *key, size_t max, unsigned char **ret,
		     size_t *ret_len, const char **err);

/* Checks the Secret's checksum annotation against the lowercase hex SHA-256
 * of its decoded osc.yaml. -ENODATA when either is missing, -EBADMSG on a
 * mismatch (including upper-case hex: the producer writes lowercase), 0 when
 * they agree. sum receives the hex SHA-256 it computed ("" when it could not). */
int kube_secret_verify(const struct kube_secret *s, char sum[static 65]);

/* Parses a Node (kind "Node"), keeping the annotations and labels above. */
int kube_node_parse(const char *data, size_t len, struct kube_node *ret, const char **err);
void kube_node_done(struct kube_node *n);

/* Parses one watch event line ({"type":..., "object":{...}}) of a watch on
 * kind. BOOKMARK carries only the resourceVersion. An ERROR event carries a
 * Status (410 Expired: the resourceVersion is too old, re-GET). -EINVAL for
 * unknown types or an object of the wrong kind. */
int kube_event_parse(const char *line, size_t len, enum kube_kind kind, size_t max_osc,
		     struct kube_event *ret, const char **err);
void kube_event_done(struct kube_event *e);

/* Splits a watch stream into lines. Feed it chunks with arbitrary
 * boundaries; every complete, non-empty line (without its "\n", "\r\n"
 * tolerated) is handed to cb. A line longer than max_line bytes makes feed
 * return -EMSGSIZE (the stream cannot be trusted any further: reconnect); a
 * negative return of cb stops the feed and is returned. */
struct kube_splitter {
	char *buf;
	size_t len;
	size_t cap;
	size_t max_line;
	uint64_t lines;     /* lines handed to cb so far: blank ones carry no
			     * event and are not counted, so a peer that sends
			     * only newlines shows no progress */
};

typedef int (*kube_line_cb)(const char *line, size_t len, void *userdata);

void kube_splitter_init(struct kube_splitter *s, size_t max_line);
int kube_splitter_feed(struct kube_splitter *s, const char *data, size_t len, kube_line_cb cb,
		       void *userdata);
/* Bytes of an incomplete line held back (a stream that ends with some is
 * truncated). */
size_t kube_splitter_pending(const struct kube_splitter *s);
void kube_splitter_reset(struct kube_splitter *s);
void kube_splitter_done(struct kube_splitter *s);

/* True for a DNS-1123 subdomain (lowercase alphanumerics, '-', '.', at most
 * 253 bytes, starting and ending alphanumeric): Secret, Namespace and Node
 * names. Such names need no escaping in a URL path or field selector. */
bool kube_name_is_valid(const char *name);

/* The label gardener-node-agent finds its Node by before it knows the name
 * (gardener/gardener pkg/nodeagent FetchNodeByHostName, corev1.LabelHostname). */
#define KUBE_LABEL_HOSTNAME "kubernetes.io/hostname"

/* A NodeList (the answer to a list with labelSelector key=value): the name
 * of the one item whose label key is value. Returns 0 and *ret (new string),
 * -ENOENT when no item has it, -ENOTUNIQ when more than one does (as
 * gardener-node-agent: "found more than one node"), -EINVAL/-EMSGSIZE for
 * anything that is not a NodeList or an item without a valid name (err
 * names the field). Pure. */
int kube_node_list_find(const char *data, size_t len, const char *key, const char *value, char **ret,
			const char **err);

/* A NodeList answering a list with fieldSelector metadata.name=<name>: the
 * item named name parsed as kube_node_parse() does, into *ret. Returns 0,
 * -ENOENT when no item has that name (the Node does not exist), -ENOTUNIQ
 * when more than one has, -EINVAL/-EMSGSIZE for anything that is not a
 * NodeList or an item that does not parse (err names the field). Items of
 * other names (a server ignoring the selector) are skipped. Pure. */
int kube_node_list_named(const char *data, size_t len, const char *name, struct kube_node *ret, const char **err);

/* One entry of a metadata map in a merge patch: value NULL removes the key. */
struct kube_patch_entry {
	const char *key;
	const char *value;
};

/* Builds a JSON merge patch {"metadata":{"annotations":{...},"labels":{...}}}
 * (application/merge-patch+json). Either list may be empty. With
 * resource_version (may be NULL) the patch carries metadata.resourceVersion,
 * which makes the server refuse it with 409 Conflict if the object changed
 * since (optimistic concurrency). Returns a malloc'ed string or NULL on OOM. */
char *kube_merge_patch(const struct kube_patch_entry *annotations, size_t n_annotations,
		       const struct kube_patch_entry *labels, size_t n_labels, const char *resource_version);

#endif
