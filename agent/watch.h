/* One watched object (the OSC Secret or the agent's own Node): a read, then a
 * watch by name. The Secret is read with a GET; the Node with a list by
 * name (fieldSelector metadata.name=<node>), which answers "absent" with
 * an empty list where Gardener's node-agent authorizer refuses a GET of a
 * Node that does not exist yet (403; list and watch of Nodes it always
 * allows), falling back to a GET when the list is refused (403: RBAC
 * without list on nodes). The watch is resumed from the last version a
 * stream showed after every clean end of the stream, and started without a
 * version (a synthetic ADDED first) when there is none: never from the
 * read's version, which a restarted API server answers with 410. Re-read at once after 410 Gone
 * (backing off only when the re-read's watch expires again), and at every
 * resync interval; a 403 on the watch logs the missing verb once and leaves
 * updates to a GET before each new try of the watch (0.5 s doubling every
 * minute up to 5 min or the resync interval); what the API server's gate
 * takes (nobody serving, a starting server: apigate.h) waits for it, the
 * watch's own failures back off (lib/base/backoff.h: 0.5 s doubling every
 * second up to 30 s, full jitter, 429 Retry-After honoured), and a stream
 * silent (not even a bookmark) for timeouts.watchIdleMs is dropped.
 *
 * The owner calls watch_tick() from its loop; it starts requests when due
 * and returns the next deadline. Objects are handed to the on_object
 * callback from inside the transfer, so the callback must only record state:
 * libcurl forbids starting requests from its callbacks. Logs with SECRET=
 * or NODE= a condition of its own when it starts and when it ends (a single
 * cut stream at info), 410 at info, each retry at debug only. */
#ifndef NA_AGENT_WATCH_H
#define NA_AGENT_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "backoff.h"
#include "http.h"
#include "kube.h"

enum watch_state {
	WATCH_STOPPED,
	WATCH_NEED_GET,     /* GET when wake_at has passed */
	WATCH_GETTING,
	WATCH_NEED_WATCH,   /* watch from rv (or without one) when wake_at has passed */
	WATCH_WATCHING,
	WATCH_FAILED,       /* one-shot mode: the GET failed */
};

struct watch;

enum {
	WATCH_DENIED_GET = 1u << 0,
	WATCH_DENIED_WATCH = 1u << 1,
	WATCH_DENIED_LIST = 1u << 2,  /* the Node is read by GET instead */
};

struct watch_ops {
	/* An object from the GET (type ADDED) or an event. Ownership of the
	 * object stays with the watch (it is released after the call). */
	void (*on_object)(struct watch *w, enum kube_event_type type, const struct kube_secret *secret,
			  const struct kube_node *node, void *userdata);
	/* The object does not exist (GET 404, or an empty list by name;
	 * DELETED is delivered as an event). */
	void (*on_missing)(struct watch *w, void *userdata);
	/* A request failed; why is one line for STATUS=. */
	void (*on_error)(struct watch *w, const char *why, void *userdata);
	/* A request succeeded (contact with the API server). */
	void (*on_contact)(struct watch *w, void *userdata);
};

struct watch {
	struct http_client *http;
	enum kube_kind kind;
	const char *what;           /* "Secret" / "Node" for logs */
	char *ns;                   /* NULL for cluster-scoped Nodes */
	char *name;
	char rv[KUBE_RV_MAX + 1];   /* "" when unknown */
	enum watch_state state;
	struct http_request *req;
	bool oneshot;               /* GET only, no watch, no retry */
	bool synced;                /* at least one read (GET or list) answered */
	bool listing;               /* the read under way is a list by name */
	bool list_denied_logged;    /* the fallback to GET was logged (once) */
	bool got_event;             /* the current stream delivered an event */
	int stream_error;           /* set by the line callback */
	char stream_why[400];       /* ... and why, for the log */
	struct backoff fail;        /* the watch's own failures (the gate's wait elsewhere) */
	bool fail_logged;           /* their condition's start was logged */
	bool failing;               /* the last request failed (own or the gate's), none worked since */
	struct backoff expired;     /* 410s in a row without an event in between */
	unsigned denied;            /* WATCH_DENIED_*: verbs answered 403 (logged once) */
	struct backoff_policy denied_policy;
	struct backoff denied_backoff; /* watches answered 403 in a row */
	uint64_t watch_not_before;  /* a refused watch's next try */
	uint64_t wake_at;
	uint64_t resync_at;
	uint64_t stream_started_ms;
	size_t max_osc;
	const struct watch_ops *ops;
	void *userdata;
};

/* Sets up a watch of kind for ns/name (ns NULL for a Node); starts with a GET
 * at the next tick. */
int watch_init(struct watch *w, struct http_client *http, enum kube_kind kind, const char *ns,
	       const char *name, bool oneshot, const struct watch_ops *ops, void *userdata);
void watch_done(struct watch *w);

/* Points the watch at another object name (the Secret named by the Node
 * label): drops the stream and the resourceVersion, GETs the new one. */
int watch_retarget(struct watch *w, const char *name);

/* Forces a fresh GET now (resync, SIGHUP). */
void watch_resync(struct watch *w);

/* Starts what is due, drops an idle stream; returns the next deadline
 * (monotonic ms, UINT64_MAX for none). */
uint64_t watch_tick(struct watch *w, uint64_t now);

#endif
