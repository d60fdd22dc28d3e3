/* The Node patch: what node-agent shows on its own Node once the executor
 * applied an OSC (the checksum annotation, the kubernetes-version label),
 * the labels gardener-node-agent sets from its stock data (worker role,
 * zone), the SSH host keys annotation, and the removal of a restart request
 * that was carried out. One merge patch at a time, retried with back-off
 * (lib/base/backoff.h), or when the API server's gate opens (apigate.h) for
 * what the gate took; the restart request is removed only from the version of the Node
 * it was read from (a new request set meanwhile is not dropped).
 *
 * The duty keeps the fields of the Node it patches as last seen (from the
 * watch, annotate_record(), or from a patch's answer). What the Node should
 * show is the agent's (struct annotate_want, asked for through the ops when
 * an answer comes). */
#ifndef NA_AGENT_ANNOTATE_H
#define NA_AGENT_ANNOTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backoff.h"
#include "http.h"
#include "kube.h"

#define ANNOTATE_BACKOFF_BASE_MS 1000u
#define ANNOTATE_BACKOFF_CAP_MS 30000u

/* What the Node should show. Strings are borrowed for the call. */
struct annotate_want {
	bool applied;               /* the executor applied checksum (what was written last) */
	const char *checksum;       /* the OSC checksum written last ("" none) */
	const char *k8s_version;    /* the kubernetes-version label once applied, or NULL */
	bool worker_role;           /* the worker-role label when the Node lacks it (stock data) */
	const char *zone;           /* the zone label, or NULL */
	const char *host_keys;      /* the SSH host keys annotation, or NULL */
	bool restart_done;          /* the executor reports the restart request carried out */
	bool restart_invalid;       /* the restart request cannot be executed */
	/* The in-place update (nodeupdate.h): NULL has no opinion. */
	const char *update_result;  /* label node.machine.sapcloud.io/update-result */
	const char *failed_reason;  /* annotation node.machine.sapcloud.io/update-failed-reason */
	bool failed_reason_remove;
	const char *updating_os;    /* annotation ...updating-operating-system-version */
	bool updating_os_remove;
};

struct annotate_ops {
	/* What the Node should show now (asked when a patch's answer came). */
	void (*want)(void *userdata, struct annotate_want *w);
	/* A patch ended: contact when the API server answered it, error (NULL:
	 * none) a one-line reason for the service status. The agent
	 * reconciles again after each. */
	void (*done)(void *userdata, uint64_t now, bool contact, const char *error);
};

struct annotate {
	/* The Node as last seen. */
	char *rv;
	char *applied_checksum;
	char *k8s_version;
	char *worker_role;          /* label node-role.kubernetes.io/worker, NULL: absent */
	char *zone;
	char *host_keys;
	char *update_result;
	char *failed_reason;
	char *updating_os;
	bool has_restart;           /* it carries a restart request */

	/* The patch. */
	char *const *node_name;     /* the agent's, followed when it changes */
	bool once;                  /* --once: a conflict counts as a failure */
	const struct annotate_ops *ops;
	void *userdata;
	struct http_request *req;   /* in flight, or NULL */
	bool removes_restart;       /* the patch in flight removes the request */
	uint64_t wake_at;           /* no patch before (monotonic ms); 0: none due; the owner
	                               also waits for the API server's gate (http_due()) */
	struct backoff retry;       /* failed patches in a row (not the gate's) */
	bool fail_logged;           /* their start was logged (so their end is) */
	bool failed_once;           /* a patch failed (--once's exit code) */
	bool denied;                /* the last PATCH got 403 (logged once) */
};

/* Sets the duty up for the Node *node_name (read at every use: the name may
 * change while the duty runs). Logs nothing. */
void annotate_init(struct annotate *n, char *const *node_name, bool once, const struct annotate_ops *ops,
		   void *userdata);

/* Records the fields of k that the duty patches, and its resourceVersion.
 * Returns 0, or -ENOMEM (logged; the record is then partly updated). Does
 * not touch has_restart: the caller knows which view is the newest. */
int annotate_record(struct annotate *n, const struct kube_node *k);

#define ANNOTATE_ANN_MAX 4
#define ANNOTATE_LAB_MAX 4
/* The annotations (at most ANNOTATE_ANN_MAX) and labels (at most
 * ANNOTATE_LAB_MAX) the Node lacks or should lose (value NULL), the restart
 * request aside; values point into n and w. Pure. */
void annotate_entries(const struct annotate *n, const struct annotate_want *w,
		      struct kube_patch_entry ann[static ANNOTATE_ANN_MAX], size_t *n_ann,
		      struct kube_patch_entry lab[static ANNOTATE_LAB_MAX], size_t *n_lab);

/* Starts the merge patch the Node needs, if any, unless one is in flight or
 * its backoff has not ended. Returns 1 when a patch was started, 0 when
 * nothing is due, -errno when it could not start (logged; tried again
 * after ANNOTATE_BACKOFF_CAP_MS). */
int annotate_start(struct annotate *n, struct http_client *http, const struct annotate_want *w, uint64_t now);

/* Cancels the patch in flight, if any (the client goes away). */
void annotate_cancel(struct annotate *n);

/* Frees the record (the patch must be cancelled). */
void annotate_done(struct annotate *n);

#endif
