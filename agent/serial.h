/* The serial rollout duty: with the OSC Secret's annotation
 * reconciliation.osc.node-agent.gardener.cloud/serial: "true", one node of
 * the pool at a time applies an OSC change that restarts units, through the
 * Lease named like the Secret (lib/kube/kubelease.h has the contract and the
 * gardener/gardener paths: pkg/nodeagent/controller/operatingsystemconfig/
 * serial.go and reconciler.go). The decision which change needs the Lease is
 * the rollout duty's (rollout.h); this duty only takes, keeps and gives back
 * the Lease as serial_want() says.
 *
 * Like gardener-node-agent:
 *  - holderIdentity is the node's name (GNA: the host name, which the Node's
 *    name is by default, config node.name), leaseDurationSeconds 600,
 *    acquireTime when taken, renewTime on every write;
 *  - a free Lease (no holder), our own (a restart while holding it) or one
 *    not renewed in time (renewTime + leaseDurationSeconds passed: the
 *    holder died) is taken with a write that carries the resourceVersion
 *    read (409: someone was faster; read again); a missing one is created
 *    with the Secret as controller owner;
 *  - another holder's valid Lease is respected: wait;
 *  - released (holder and times null) once the change is applied and the
 *    Node shows its checksum, as GNA releases after its Node patch;
 *  - no release on shutdown: a holder that dies blocks the pool until its
 *    Lease expires (10 min), then the next node takes it over.
 * Differences: GNA watches the Lease through its own cache; this duty polls
 * it by GET, and only while a change waits for it (every SERIAL_POLL_MS,
 * jittered, and at the holder's expiry): nothing while no change is pending.
 * GNA renews at the start of each reconcile; this duty renews every
 * SERIAL_RENEW_MS while it holds the Lease, so a slow apply (an image pull)
 * does not lose it. A failed apply keeps the Lease (renewed) as GNA's
 * retries do: the pool stops at a node that cannot apply, which is the
 * point of serial mode (etcd quorum, docs/concepts/node-agent.md "Serial
 * Reconciliation"). At start, a Lease still held by this node from before
 * a restart is released when nothing needs it.
 *
 * Nothing is sent about the Lease while the Node does not exist, nor while
 * the Node's label worker.gardener.cloud/gardener-node-agent-secret-name
 * names another Secret (serial_set_node()): Gardener's node-agent authorizer
 * (gardener/gardener pkg/resourcemanager/webhook/nodeagentauthorizer/
 * authorizer.go, authorizeLease) refuses every Lease request of a
 * node-agent whose Node does not exist, and allows only the Leases
 * gardener-node-agent-<node> and the one named by that label; and
 * gardener-node-agent itself has no client for this Lease until it knows
 * its Node (pkg/nodeagent/controller/operatingsystemconfig/add.go: the
 * Lease cache is set up only "if r.NodeName != \"\""). A change that needs
 * the Lease waits meanwhile (a first OSC, with nothing in force yet, does
 * not need it: rollout_admit()), and says why, once. With plain RBAC the
 * label may be absent: then the Node's existence is enough. A Lease held
 * when the label moves on to another Secret is still given back; a 403 on
 * that drops the hold (the Lease expires on its own).
 *
 * Every request has a deadline (SERIAL_REQUEST_MS); failures back off
 * (lib/base/backoff.h: 1 s doubling every 2 s, at most 30 s, full jitter)
 * and are logged once per state change, what the API server's gate takes
 * waits for it (apigate.h); a 403 says what the authorizer allows and backs off to
 * SERIAL_FORBIDDEN_CAP_MS; a change of the Node (its label) retries at once. Only records state in its setters; requests start in
 * serial_tick() (libcurl forbids starting them in its callbacks). */
#ifndef NA_AGENT_SERIAL_H
#define NA_AGENT_SERIAL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "backoff.h"
#include "http.h"
#include "kube.h"
#include "kubelease.h"

#define SERIAL_POLL_MS 5000u
#define SERIAL_RENEW_MS 200000u     /* a third of the 600 s */
#define SERIAL_REQUEST_MS 10000u
#define SERIAL_RETRY_BASE_MS 1000u
#define SERIAL_RETRY_CAP_MS 30000u
#define SERIAL_FORBIDDEN_CAP_MS 300000u /* after a 403: rights change rarely */

enum serial_step {
	SERIAL_IDLE,
	SERIAL_GET,
	SERIAL_CREATE,
	SERIAL_TAKE,        /* PATCH: holder, duration, acquireTime, renewTime */
	SERIAL_RENEW,       /* PATCH: renewTime */
	SERIAL_RELEASE,     /* PATCH: all null */
};

struct serial {
	struct http_client *http;
	char identity[KUBE_NAME_MAX + 1];
	char ns[KUBE_NAME_MAX + 1];
	char name[KUBE_NAME_MAX + 1];       /* "" while not in serial mode */
	char path[2 * KUBE_NAME_MAX + 96];
	char secret_uid[KUBE_UID_MAX + 1];
	bool want;
	bool held;
	bool check;                         /* read once: still ours from before? */
	bool changed;                       /* held flipped; see serial_changed() */
	enum serial_step step;
	char rv[KUBE_RV_MAX + 1];
	char *obj;                          /* the Lease last read or written (JSON), NULL: none */
	size_t obj_len;
	struct http_request *req;
	uint64_t req_deadline;
	uint64_t wake_at;
	uint64_t renewed_at;                /* monotonic ms of the last good write */
	struct backoff retry;       /* failed requests in a row (not the gate's) */
	unsigned conflicts;         /* 409s in a row answered by a re-read at once */
	char holder[KUBE_NAME_MAX + 1];     /* another holder seen ("" none) */
	time_t holder_until;                /* wall clock: when its Lease expires */
	char logged_holder[KUBE_NAME_MAX + 1];
	bool node_exists;                   /* serial_set_node() */
	char node_label[KUBE_NAME_MAX + 1]; /* its secret-name label, "" none */
	bool node_told;                     /* the wait for the Node was logged */
};

/* Sets up the duty for the node identity (the node's name). Nothing is
 * sent before serial_set_secret() names a Secret in serial mode. */
void serial_init(struct serial *s, struct http_client *http, const char *identity);
void serial_done(struct serial *s);

/* The OSC Secret as last seen: its namespace, name, uid (NULL: unknown) and
 * whether it asks for serial rollouts. Only records. */
void serial_set_secret(struct serial *s, const char *ns, const char *name, const char *uid, bool serial);

/* The Node as last seen: whether it exists and its label
 * worker.gardener.cloud/gardener-node-agent-secret-name (NULL: none). Only
 * records; the Lease is requested only while serial_node_allows(). */
void serial_set_node(struct serial *s, bool exists, const char *secret_label);

/* Whether Gardener's authorizer would allow this node-agent the Lease now:
 * the Node exists and its label is absent or names the Lease (the Secret). */
bool serial_node_allows(const struct serial *s);

/* Whether a change needs the Lease now (rollout_lock_wanted()). */
void serial_want(struct serial *s, bool want);

/* Starts what is due, cancels a request past its deadline; returns the
 * next deadline (monotonic ms, UINT64_MAX for none). */
uint64_t serial_tick(struct serial *s, uint64_t now);

/* True once after the Lease was taken or lost: the owner re-evaluates. */
bool serial_changed(struct serial *s);

#endif
