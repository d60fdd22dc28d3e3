/* The coordination.k8s.io/v1 Lease that tells gardenlet the node's agent is
 * alive, as pure helpers: the body node-agent writes and the few fields it
 * reads back from the server's answer.
 *
 * The contract is gardener-node-agent's (gardener/gardener
 * pkg/nodeagent/controller/lease/reconciler.go and add.go): Lease
 * kube-system/gardener-node-agent-<node> (pkg/utils/gardener/machines.go
 * NodeAgentLeaseName), spec.holderIdentity = the Lease's own name,
 * spec.leaseDurationSeconds = 40, spec.renewTime = now (MicroTime, UTC), and
 * a controller ownerReference to the Node (so the Lease goes with it). The
 * consumer is gardenlet's CheckNodeAgentLeases
 * (pkg/gardenlet/controller/shoot/care/health.go): Lease missing or
 * renewTime + leaseDurationSeconds in the past -> EveryNodeReady=False,
 * reason NodeAgentUnhealthy.
 *
 * No I/O, no logging; errors -EINVAL (malformed), -EMSGSIZE (a ceiling),
 * -ENOMEM; *err names the field. */
#ifndef NA_KUBELEASE_H
#define NA_KUBELEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define KUBE_LEASE_NAMESPACE "kube-system"
#define KUBE_LEASE_PREFIX "gardener-node-agent-"
#define KUBE_LEASE_DURATION_S 40u
/* A Kubernetes UID (a UUID); longer is refused. */
#define KUBE_UID_MAX 128
/* "2006-01-02T15:04:05.000000Z" plus NUL. */
#define KUBE_MICROTIME_LEN 28

/* What node-agent reads from a Lease. Absent fields are NULL / false. */
struct kube_lease {
	char *name;
	char *resource_version;
	char *holder;               /* spec.holderIdentity */
	bool has_duration;
	int64_t duration_s;         /* spec.leaseDurationSeconds */
	char *renew_time;           /* spec.renewTime, as sent */
	char *owner_uid;            /* uid of the controller ownerReference of kind Node */
};

/* Parses a Lease (kind "Lease" or no kind). Strings are capped
 * (KUBE_NAME_MAX, KUBE_RV_MAX, KUBE_UID_MAX, 64 for the time). */
int kube_lease_parse(const char *data, size_t len, struct kube_lease *ret, const char **err);
void kube_lease_done(struct kube_lease *l);

/* Formats a wall-clock time as a MicroTime ("...T...:05.000000Z", UTC).
 * -EINVAL when it does not fit the format (before year 0 or after 9999). */
int kube_microtime(const struct timespec *t, char out[static KUBE_MICROTIME_LEN]);

/* The name of the Lease for node_name into out (size outlen): -ENAMETOOLONG
 * when the result is no valid name (longer than KUBE_NAME_MAX). */
int kube_lease_name(const char *node_name, char *out, size_t outlen);

/* The body node-agent sends, as a malloc'ed JSON string (NULL on ENOMEM):
 * with create, the whole Lease for a POST; otherwise a JSON merge patch
 * (application/merge-patch+json) carrying metadata.resourceVersion rv as the
 * precondition (409 Conflict if someone else wrote meanwhile), the owner
 * reference and the spec, the fields gardener-node-agent does not set
 * (acquireTime, leaseTransitions) nulled as its whole-spec update does.
 * renew_time is a kube_microtime() string. */
char *kube_lease_body(bool create, const char *name, const char *node_name, const char *node_uid, const char *rv,
		      const char *renew_time);

/* Gardener's node-agent authorizer allows get, list, watch, create and
 * update on Leases, not patch (gardener/gardener
 * pkg/resourcemanager/webhook/nodeagentauthorizer/authorizer.go
 * authorizeLease), and gardener-node-agent renews with
 * controllerutil.CreateOrUpdate() (pkg/nodeagent/controller/lease/
 * reconciler.go): a GET, then an update (PUT) of the object it read with the
 * spec replaced. The bodies below are that update: the Lease obj (len bytes,
 * the last answer read or written; its metadata.resourceVersion is the
 * optimistic-concurrency precondition, 409 Conflict if someone wrote since)
 * as it is, without metadata.managedFields (an update without them keeps the
 * server's), apiVersion and kind set, and the change applied. Returns 0 and
 * a malloc'ed JSON string in *ret; -EINVAL (obj is no Lease with a
 * metadata.resourceVersion; *err names what), -ENOMEM. */

/* The agent's Lease: the controller reference to the Node (any other
 * controller reference, and any other reference to a Node, replaced:
 * SetControllerReference()) and the whole spec replaced by holderIdentity =
 * name, leaseDurationSeconds 40, renewTime. */
int kube_lease_update_body(const char *obj, size_t len, const char *name, const char *node_name, const char *node_uid,
			   const char *renew_time, char **ret, const char **err);

/* ---- the serial rollout Lease -------------------------------------------
 *
 * With the OSC Secret's annotation reconciliation.osc.node-agent.gardener.
 * cloud/serial: "true", gardener-node-agent lets one node at a time apply
 * the OSC through a Lease named like the Secret, in the Secret's namespace
 * (kube-system), controller-owned by the Secret (gardener/gardener
 * pkg/nodeagent/controller/operatingsystemconfig/serial.go,
 * newLeaderElectorForSecret). spec.holderIdentity is the agent's host name
 * (cmd/gardener-node-agent/app/app.go nodeagent.GetHostName(), the Node's
 * name); taking it sets leaseDurationSeconds 600, acquireTime and
 * renewTime; renewing sets renewTime only; releasing sets all four to null
 * (leaderElector.tryAcquireOrRenew, release). Another holder counts until
 * renewTime + leaseDurationSeconds has passed (renewedInTime), and an
 * empty holder is free (acquiredByAnotherInstance). */
#define KUBE_SERIAL_LEASE_DURATION_S 600u

/* Parses a MicroTime/Time as the API server writes it ("2006-01-02T15:04:05Z",
 * optional fraction of up to 9 digits, "Z" or "+hh:mm"/"-hh:mm") into
 * *ret (UTC). -EINVAL when malformed or out of range. */
int kube_microtime_parse(const char *s, struct timespec *ret);

enum kube_serial_verdict {
	KUBE_SERIAL_FREE,       /* no holder: take it */
	KUBE_SERIAL_MINE,       /* holderIdentity is me: renew it */
	KUBE_SERIAL_EXPIRED,    /* someone else's, not renewed in time: take it over */
	KUBE_SERIAL_TAKEN,      /* someone else's and valid: wait (*ret_left_ms) */
};

/* gardener-node-agent's verdict on a serial Lease for identity me at wall
 * time now. For KUBE_SERIAL_TAKEN, *ret_left_ms is the time until it
 * expires. -EINVAL when the renewTime of another holder is malformed
 * (GNA's client would fail to decode it: retried, not taken over). */
int kube_serial_judge(const struct kube_lease *l, const char *me, const struct timespec *now, uint64_t *ret_left_ms);

/* The body for the serial Lease name, as a malloc'ed JSON string (NULL on
 * ENOMEM): create: the whole Lease for a POST in namespace ns (owner: Secret secret_name
 * with uid secret_uid); otherwise a merge patch with metadata.
 * resourceVersion rv as the precondition. holder NULL: the release (the four
 * spec fields null); acquire_time NULL: a renewal (renewTime only). */
/* The serial Lease's update (see kube_lease_update_body()): holder NULL,
 * the release (holderIdentity, leaseDurationSeconds, acquireTime, renewTime
 * removed); acquire_time set, taking it (holderIdentity, 600 s, acquireTime,
 * renewTime; leaseTransitions + 1 when it had another holder, as client-go's
 * leader elector counts); otherwise a renewal (renewTime only). */
int kube_serial_lease_update_body(const char *obj, size_t len, const char *holder, const char *acquire_time,
				  const char *renew_time, char **ret, const char **err);

char *kube_serial_lease_body(bool create, const char *ns, const char *name, const char *secret_uid, const char *rv,
			     const char *holder, const char *acquire_time, const char *renew_time);

#endif
