/* Files from a Secret, node-agent's half (content.secretRef).
 *
 * For each file of the OSC in force that takes its bytes from a Secret
 * (OSC_SOURCE_SECRET, after the node filter), node-agent GETs
 * kube-system/<secretRef.name> and takes data[<secretRef.dataKey>] as the
 * file's raw bytes, as gardener-node-agent does (gardener/gardener
 * pkg/nodeagent/controller/operatingsystemconfig/reconciler.go,
 * getFileContentData: an uncached APIReader.Get of the Secret in
 * metav1.NamespaceSystem, secret.Data[DataKey], no further decoding; the
 * type is pkg/apis/extensions/v1alpha1/types_operatingsystemconfig.go
 * FileContentSecretRef{Name, DataKey}). Gardener's authorizer lets exactly
 * these be read (pkg/resourcemanager/webhook/nodeagentauthorizer/
 * authorizer.go, secretRefNamesFromOSCSecret: the secretRef names of the
 * OSC's spec.files and status.extensionFiles whose hostName is unset or
 * the Node's kubernetes.io/hostname label; get, list and watch).
 *
 * They are read when the OSC changes and again whenever the OSC Secret is
 * delivered (a watch event, the GET of each resync: secretref_refresh()),
 * and a failed read again after a back-off (lib/base/backoff.h:
 * SECRETREF_RETRY_MS doubling every 30 s up to SECRETREF_RETRY_CAP_MS, full
 * jitter), or, when the API server's gate took it (apigate.h), as soon as
 * the gate lets a request through. The bytes go to the executor
 * in desired.json (secretFiles), which writes them like an inline file.
 * A Secret that does not exist (404) or has no such key, or bytes over
 * DESIRED_SECRET_FILE_MAX, drop the file's bytes: the executor then fails
 * that file and keeps what is on disk. Any other failure (no answer, 403,
 * 5xx) keeps the last bytes read. Driven by secretref_tick() from the event
 * loop; `changed` tells the loop to write the desired state again. */
#ifndef NA_AGENT_SECRETREF_H
#define NA_AGENT_SECRETREF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backoff.h"
#include "desired.h"
#include "http.h"

#define SECRETREF_RETRY_MS 10000u
#define SECRETREF_RETRY_CAP_MS 120000u

struct secretref_entry {
	char *path;
	char *secret;
	char *key;
	unsigned char *data;        /* the last bytes read; NULL: none (never read, or gone) */
	size_t len;
	bool answered;              /* a first answer (either way) came for this reference */
	struct http_request *req;
	uint64_t next_at;           /* monotonic ms; 0: read at the next tick; and not before the
	                               API server's gate (http_due()) */
	struct backoff retry;       /* failed reads in a row (set up at the first) */
	bool warned;
};

struct secretref {
	struct http_client *http;   /* NULL while detached (reload) */
	struct secretref_entry *entries;
	size_t n;
	char checksum[65];          /* the OSC the entries are for */
	bool changed;               /* bytes changed: the desired state must be rewritten */
};

/* Follows the secretRef files of osc (NUL-terminated, already verified and
 * parsed once by the Secret duty) as parsed for node_name. An entry whose
 * (path, Secret, key) stays keeps its bytes (until re-read); every entry is
 * read again at the next tick. Returns 0, -ENOMEM or the osc_parse error. */
int secretref_follow(struct secretref *s, const char *osc, size_t osc_len, const char *checksum,
		     const char *state_dir, const char *node_name);

/* Reads every Secret again at the next tick (the OSC Secret was delivered). */
void secretref_refresh(struct secretref *s);

/* Attaches to (or, with NULL, detaches from: requests are cancelled) the
 * HTTP client. */
void secretref_attach(struct secretref *s, struct http_client *http);

/* Starts the reads that are due; returns the next deadline. */
uint64_t secretref_tick(struct secretref *s, uint64_t now);

/* Takes the answer to entry i's GET (status 0: no answer; body may be NULL),
 * as described above; logs a failure once until it clears. For tests too. */
void secretref_answer(struct secretref *s, size_t i, long status, const char *body, size_t len, const char *failure,
		      uint64_t now);

/* True while an entry of the followed OSC has not had its first answer:
 * the desired state waits for it rather than fail a file for a moment. */
bool secretref_pending(const struct secretref *s);

/* The bytes read so far, as desired.json entries for the OSC osc with
 * checksum (pointers into s, valid until the next tick; *ret NULL when
 * *n is 0). For another OSC than the one followed (a rollout holding the
 * previous one back) only the entries whose (path, Secret, key) that OSC
 * has too. Returns 0 or -ENOMEM. */
int secretref_desired(const struct secretref *s, const char *osc, size_t osc_len, const char *checksum,
		      const char *state_dir, const char *node_name, struct desired_secret_file **ret, size_t *n);

void secretref_done(struct secretref *s);

#endif
