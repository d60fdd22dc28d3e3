/* The health duty: probes of the kubelet and containerd on loopback, their
 * repair through the desired state, and the kubelet's Ready flapping, after
 * gardener-node-agent's health-check controller (gardener/gardener
 * pkg/nodeagent/controller/healthcheck/: kubelet.go, containerd.go,
 * healthcheck.go, add.go).
 *
 * Every health.intervalMs each configured probe does one plain-HTTP GET
 * (http_probe_start(): loopback only, health.timeoutMs deadline, a 4 KiB
 * body ceiling); 200 is healthy, anything else (a code, a refused
 * connection, the deadline) unhealthy. A unit unhealthy for
 * health.unhealthyMs gets a restart request, at most one per unit per
 * health.repairIntervalMs; both default to one minute, so a unit that stays
 * unhealthy is restarted after each minute of failure, containerd and the
 * kubelet alike, as gardener-node-agent's checks do (kubelet.go,
 * containerd.go: maxFailureDuration, firstFailure reset by the restart;
 * healthcheck.go). node-agent has no root and no system bus: it does
 * not restart anything itself. The request goes into desired.json's
 * "restart" field, the field the Node annotation
 * worker.gardener.cloud/restart-systemd-services fills, and
 * cloud-config-exec (root, no network) restarts the unit and reports the
 * request's id in result.json; then the repair is "done" (Event, metric).
 *
 * containerd is probed always, as gardener-node-agent checks it: an apply
 * that fails (an image file containerd cannot pull) is when containerd
 * most needs its repair, so neither the last result nor the OSC gates it.
 * The kubelet is probed once an apply succeeded or the executor has a
 * last-applied record (a node whose OSC was never applied has no kubelet
 * to repair yet; gardener-node-agent restarts a kubelet.service that does
 * not exist then) and while the OSC has the unit
 * kubelet.service; a later failed apply does not stop it (the kubelet runs
 * on the last good configuration). containerd.service is an OS unit: its
 * HTTP probe runs when health.containerdUrl is set; without that URL (the
 * default) the containerd probe is the socket check gardener-node-agent
 * makes (containerd.go: Version()), which node-agent cannot make (the
 * socket is root's): cloud-config-exec-containerd-probe.service makes it
 * every 30 s and node-agent takes its verdicts (health_socket_result()).
 *
 * The kubelet's Ready condition (from the Node watch): every NotReady ->
 * Ready change is a toggle; health.readyToggles toggles within
 * health.readyWindowMs -> a Warning Event (gardener-node-agent does the
 * same instead of the old health-monitor's reboot). The first Node seen
 * sets the starting point and is not a toggle (gardener-node-agent starts
 * from "not ready" and so counts the first Ready it sees).
 *
 * Events use gardener-node-agent's reasons ("kubelet", "containerd") and
 * messages, so a filter written for it finds ours. Each decision (unhealthy,
 * repair requested, repair held back by the limit, repair done, healthy
 * again, flapping) is logged once.
 *
 * Time is the caller's monotonic milliseconds (now_ms()), so the unit tests
 * drive the duty with a fake clock and a fake probe starter. */
#ifndef NA_AGENT_HEALTH_H
#define NA_AGENT_HEALTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "events.h"
#include "http.h"

#define HEALTH_BODY_MAX 4096u
/* node-agent's verdict of the kubelet's /healthz, in its state directory,
 * in containerd-health.json's format (lib/node/ctrdhealth.h; serverVersion
 * is the answer, "ok"): what cloud-config-exec's in-place update waits for
 * after it restarted the kubelet (gardener-node-agent's checkKubeletHealth
 * GETs /healthz; the executor has no network). */
#define HEALTH_KUBELET_VERDICT_FILE "kubelet-health.json"
#define HEALTH_ID_MAX 96
#define HEALTH_ERROR_MAX 160

enum { HEALTH_KUBELET, HEALTH_CONTAINERD, HEALTH_PROBES };

struct health;

struct health_probe {
	struct health *owner;
	const char *name;           /* "kubelet", "containerd": the Event reason */
	const char *title;          /* "Kubelet", "Containerd": for messages */
	const char *unit;           /* what a repair restarts */
	const char *url;            /* NULL: this probe is off (unless socket) */
	bool socket;                /* containerd with no URL: verdicts from
	                             * cloud-config-exec's probe of its socket
	                             * (health_socket_result()) */
	long long last_checked_at;  /* socket: the verdict last taken (Unix s) */
	bool needs_osc_unit;        /* probed only while the OSC has the unit */
	bool in_osc;                /* the OSC last seen has the unit */
	struct http_request *req;   /* in flight */
	bool probing;               /* started, no answer yet */
	uint64_t next_at;           /* next start (0: at once) */
	bool failing;
	uint64_t first_failure;     /* start of this unhealthy spell (reset by a repair) */
	bool held_logged;           /* "repair held back" logged for this spell */
	uint64_t last_repair;       /* when the last repair was decided */
	bool repaired;              /* last_repair is valid */
	bool repair_wanted;         /* decided, not yet in the desired state */
	char repair_id[HEALTH_ID_MAX]; /* handed over, not yet reported done; "" none */
	char error[HEALTH_ERROR_MAX];
	uint64_t ok, failed, repairs, repairs_done;
};

struct health {
	bool enabled;
	bool active;                /* the last health_tick()'s active */
	bool armed;                 /* some health_tick() was active: an apply succeeded */
	unsigned interval_ms, timeout_ms, unhealthy_ms, repair_interval_ms;
	unsigned ready_toggles, ready_window_ms;
	struct http_client *http;
	struct events *events;      /* may be off (no-op) */
	struct health_probe probe[HEALTH_PROBES];
	/* Starts probe p's request; its end must call health_probe_result().
	 * health_init() sets the real one (http_probe_start()); tests replace
	 * it. */
	int (*start)(struct health *h, struct health_probe *p);
	/* Told each verdict of the kubelet's HTTP probe (its /healthz): the
	 * agent writes it for the executor's in-place update
	 * (HEALTH_KUBELET_VERDICT_FILE). NULL: not told. Kept by a reload. */
	void (*kubelet_verdict)(void *userdata, bool ok, const char *why);
	void *verdict_userdata;
	uint64_t seq;               /* makes repair ids unique */
	/* Ready toggles. */
	bool node_seen;
	bool node_ready;
	uint64_t toggles[CONFIG_READY_TOGGLES_MAX]; /* times of the toggles in the window, oldest first */
	unsigned n_toggles;
	uint64_t flapping_events;
};

/* Sets the duty up from cfg (health.*), for the http client and the Events
 * duty (both may be NULL in tests). h must be zeroed or set up before (a
 * reload calls it again: what health_osc() said is kept). Off (every call a no-op) when
 * health.enabled is false. Copies nothing from cfg but the numbers: the URLs
 * point into cfg, which must outlive h. */
void health_init(struct health *h, const struct config *cfg, struct http_client *http, struct events *events);

/* Cancels probes in flight. */
void health_done(struct health *h);

/* Starts the probes that are due, and returns the next deadline
 * (UINT64_MAX: none). active: the executor's last result is a success, or
 * it has a last-applied record (execdir_applied_once(): the node was
 * configured, also before this agent started); the
 * kubelet is probed from the first active tick on (see above), and its
 * unhealthy spell ends (without an Event) while it is not probed. */
uint64_t health_tick(struct health *h, uint64_t now, bool active);

/* One probe's outcome: ok, or why not. Logs and records Events for the
 * decisions it takes (see above). */
void health_probe_result(struct health *h, struct health_probe *p, bool ok, const char *why, uint64_t now);

/* A verdict of cloud-config-exec's probe of containerd's socket
 * (lib/node/ctrdhealth.h; healthy, or why not, checked at checked_at Unix
 * seconds), which stands for the containerd probe when health.containerdUrl
 * is "" (the default): taken like an HTTP probe's outcome (thresholds,
 * Events, repair). Ignored when the duty is off, the containerd URL is set,
 * the verdict was taken before (same
 * checked_at), or it is older than wall_now minus three health.intervalMs (at least 2 s)
 * (a probe timer that stopped gives no verdict, not a stale one). Returns
 * true when taken. */
bool health_socket_result(struct health *h, bool healthy, const char *why, long long checked_at,
			  long long wall_now, uint64_t now);

/* A repair decided and not yet handed over: copies its id ("health-<unit>-
 * <n>") to id and returns its unit, and marks it handed over (the caller
 * writes it into the desired state now). NULL when there is none. */
const char *health_take_repair(struct health *h, char id[static HEALTH_ID_MAX]);

/* A restart of probe which's unit that another duty decided (the InternalIP
 * duty's kubelet restart, internalip.h), taken like a repair: within
 * health.repairIntervalMs of the last one it is held back. why is logged.
 * Returns true when requested. A no-op (false) when the duty is off. */
bool health_request_restart(struct health *h, unsigned which, const char *why, uint64_t now);

/* The OSC (verified, parsed) the agent now follows: which units it has. */
struct osc;
void health_osc(struct health *h, const struct osc *osc);

/* The executor's result named restart request restart_id (may be NULL):
 * a repair of ours with that id is done (logged, Event, counted). */
void health_result(struct health *h, const char *restart_id);

/* The Node's Ready condition (kube_node.ready: 1 True, 0 other, -1 none). */
void health_node_ready(struct health *h, int ready, uint64_t now);

/* The effective settings, for node-agent --check-config. */
void health_print_config(const struct config *cfg, FILE *f);

#endif
