/* The InternalIP duty: when the Node's status has neither an InternalIP nor
 * an ExternalIP address, node-agent sets the last InternalIP it saw again,
 * if an interface of this host still holds it, as gardener-node-agent's
 * kubelet health check does (gardener/gardener pkg/nodeagent/controller/
 * healthcheck/kubelet.go ensureNodeInternalIP: "mimics the old weird logic
 * which restores the internalIP of the node if this was lost").
 *
 * Gardener's contract, kept here:
 *  - every Node seen with an InternalIP address: it is remembered (the
 *    last entry of that type);
 *  - a Node without both (status.addresses empty, or only Hostname
 *    entries), at each check (every health.intervalMs, 30 s, and at once
 *    when the Node watch shows the loss): a Warning Event, reason
 *    "kubelet", "Node status does neither have an internal nor an external
 *    IP, try to recover from last known internal IP: <ip>" (without the
 *    remembered address: "Node status does neither have an internal nor an
 *    external IP");
 *  - when an interface holds the remembered address: the Node's status
 *    addresses become that one InternalIP entry (Gardener: a status Update
 *    of the cached Node; here a merge patch of nodes/<name>/status that
 *    carries the Node's resourceVersion, so a Node changed meanwhile
 *    answers 409 as Gardener's Update does, and the next check tries
 *    again); then a Normal Event "Updated the lost internal IP address of
 *    node status to the previous known: <ip> ";
 *  - a patch that fails otherwise: a Warning Event "Unable to update node
 *    status with internal IP: <why>" and a restart of kubelet.service
 *    (through the health duty's repair, health_request_restart(), with its
 *    limit).
 * RBAC: Gardener's node-agent authorizer allows patch and update of the
 * own Node's "status" subresource (pkg/resourcemanager/webhook/
 * nodeagentauthorizer/authorizer.go authorizeNode, checkSubresource
 * "status"); so do the Node authorizer and NodeRestriction for a
 * system:node identity.
 *
 * Which addresses an interface holds: node-agent is unprivileged and its
 * unit allows only AF_INET, AF_INET6 and AF_UNIX sockets, so glibc's
 * getifaddrs() (a netlink socket) is not available; IPv4 comes from
 * ioctl(SIOCGIFCONF) on an AF_INET socket, IPv6 from
 * /proc/self/net/if_inet6 (visible under ProcSubset=pid: it is the
 * process's own directory). Both read the host's network namespace, the
 * agent's.
 *
 * On with the health duty (health.enabled), off in --once. */
#ifndef NA_AGENT_INTERNALIP_H
#define NA_AGENT_INTERNALIP_H

#include <stdbool.h>
#include <stdint.h>

#include "kube.h"

struct events;
struct health;
struct http_client;
struct http_request;

struct internalip {
	bool enabled;
	unsigned interval_ms;
	struct http_client *http;
	struct events *events;      /* may be NULL */
	struct health *health;      /* for the kubelet restart; may be NULL */
	const char *const *node_name; /* the owner's, followed across renames */
	char last[KUBE_IP_MAX];     /* the last InternalIP seen ("": none) */
	bool lost;                  /* the Node last seen has no internal or external address */
	char rv[64];                /* its resourceVersion */
	bool none_logged;           /* "no interface holds it" logged for this spell */
	uint64_t next_at;           /* next check while lost */
	struct http_request *req;
	/* Does an interface hold ip (canonical text)? 1 yes, 0 no, -errno.
	 * internalip_init() sets internalip_held(); tests replace it. */
	int (*held)(const char *ip);
	/* Starts the status patch; its end must call internalip_patched().
	 * internalip_init() sets the real one; tests replace it. */
	int (*start)(struct internalip *ip, const char *body);
	uint64_t restored, failed;
};

/* Sets the duty up (on when enabled); node_name points to the owner's
 * current Node name. Copies nothing. */
void internalip_init(struct internalip *ip, bool enabled, unsigned interval_ms, struct http_client *http,
		     struct events *events, struct health *health, const char *const *node_name);
/* Cancels the patch in flight; the remembered address stays (a reconnect
 * or a rename keeps it, as gardener-node-agent's process would not). */
void internalip_done(struct internalip *ip);

/* The Node as the watch shows it now. */
void internalip_node(struct internalip *ip, const struct kube_node *n, uint64_t now);

/* Checks when due while the Node has no address; returns the next
 * deadline (UINT64_MAX: none). */
uint64_t internalip_tick(struct internalip *ip, uint64_t now);

/* The patch's outcome: HTTP status (0: no answer) and, on failure, why. */
void internalip_patched(struct internalip *ip, long status, const char *why, uint64_t now);

/* 1 when an interface of this host holds ip, 0 when none does, -errno when
 * the addresses cannot be read (see above). */
int internalip_held(const char *ip);

/* One line of /proc/net/if_inet6 ("<32 hex digits> <ifindex> ..."): the
 * address into out. Returns 0, or -EINVAL for a line that is not one.
 * Pure; the kernel writes the file (no fuzzer: not outside input). */
int internalip_parse_inet6_line(const char *line, unsigned char out[static 16]);

#endif
