/* In-place node updates (GEP-31): which kinds of change an OSC brings, and
 * the small pure helpers around them.
 *
 * inplace_classify() is gardener-node-agent's computeOperatingSystemConfigChanges()
 * for its inPlaceUpdates part (gardener/gardener
 * pkg/nodeagent/controller/operatingsystemconfig/changes.go, the flags of
 * osc_changes.go inPlaceUpdates), and inplace_kinds != 0 is its
 * isInPlaceUpdate() (reconciler.go). The rules, in Gardener's words:
 *  - nothing is in-place unless both the last applied OSC and the new one
 *    carry spec.inPlaceUpdates (no last applied OSC: the first apply, all
 *    false);
 *  - os-version: the running OS version (GetOSVersion: the PRETTY_NAME of
 *    /etc/os-release, inplace_os_version()) differs from
 *    spec.inPlaceUpdates.operatingSystemVersion (IsOsVersionUpToDate,
 *    CompareVersions "="); note: against the running OS, not the old OSC;
 *  - kubelet-minor-version: spec.inPlaceUpdates.kubelet differs and its minor
 *    differs (versionutils.CheckIfMinorVersionUpdate);
 *  - kubelet-config / kubelet-cpu-manager-policy: ComputeKubeletConfigChange
 *    on the kubelet configuration file of both OSCs
 *    (/var/lib/kubelet/config/kubelet): cpuManagerPolicy differs; config: the
 *    evictionHard entries memory.available, imagefs.available,
 *    imagefs.inodesFree, nodefs.available, nodefs.inodesFree differ, or else
 *    the kubeReserved entries cpu, memory, ephemeral-storage, pid differ
 *    (every kubeReserved value must then be a Kubernetes quantity);
 *  - kubelet-ca-rotation and node-agent-ca-rotation (always together):
 *    ComputeCredentialsRotationChanges on certificateAuthorities;
 *  - sa-key-rotation: the same on serviceAccountKey. A rotation is a change
 *    when the new OSC has the lastInitiationTime and the old had no
 *    credentialsRotation at all, or when both have the rotation and the times
 *    differ (Time.Equal: instants, so "...T10:00:00Z" equals
 *    "...T12:00:00+02:00").
 *
 * Pure: no I/O, no logging. */
#ifndef NA_INPLACE_H
#define NA_INPLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct osc;

/* The kinds, as bits of one unsigned; their names are those of result.json. */
enum {
	INPLACE_OS_VERSION = 1u << 0,              /* "os-version" */
	INPLACE_KUBELET_MINOR_VERSION = 1u << 1,   /* "kubelet-minor-version" */
	INPLACE_KUBELET_CONFIG = 1u << 2,          /* "kubelet-config" */
	INPLACE_KUBELET_CPU_MANAGER_POLICY = 1u << 3, /* "kubelet-cpu-manager-policy" */
	INPLACE_KUBELET_CA_ROTATION = 1u << 4,     /* "kubelet-ca-rotation" */
	INPLACE_NODE_AGENT_CA_ROTATION = 1u << 5,  /* "node-agent-ca-rotation" */
	INPLACE_SA_KEY_ROTATION = 1u << 6,         /* "sa-key-rotation" */
	INPLACE_KINDS_ALL = (1u << 7) - 1,
	/* reconciler.go isInPlaceKubeletUpdate(): the kubelet must be healthy after them */
	INPLACE_KUBELET_ANY = INPLACE_KUBELET_MINOR_VERSION | INPLACE_KUBELET_CONFIG |
			      INPLACE_KUBELET_CPU_MANAGER_POLICY,
};
#define INPLACE_N_KINDS 7

/* The state of an in-place update as result.json reports it. */
enum inplace_state {
	INPLACE_STATE_WAITING,    /* pending, the Node is not ReadyForUpdate: nothing applied */
	INPLACE_STATE_RUNNING,    /* being applied (the OS update ran, reboot pending) */
	INPLACE_STATE_SUCCESSFUL, /* update-result=successful */
	INPLACE_STATE_FAILED,     /* update-result=failed, with a reason */
};

#define INPLACE_VERSION_MAX 128   /* bytes of a version string we keep */

/* "os-version" for INPLACE_OS_VERSION...; NULL for anything but one kind bit. */
const char *inplace_kind_name(unsigned kind);
/* The bit of a kind name; 0 when unknown. */
unsigned inplace_kind_from_name(const char *name);
/* "waiting", "running", "successful", "failed"; NULL when out of range. */
const char *inplace_state_name(enum inplace_state s);
/* 0 and *ret for a state name, -EINVAL when unknown. */
int inplace_state_from_name(const char *name, enum inplace_state *ret);

/* Gardener's versionutils.CompareVersions(a, "=", b): both Normalize()d
 * (every 'v' removed, cut at the first of "-+~"), then read as Masterminds
 * semver (1..3 dot-separated decimal numbers, missing ones 0). 0 and *ret;
 * -EINVAL when one is not a version. */
int inplace_version_equal(const char *a, const char *b, bool *ret);

/* versionutils.CheckIfMinorVersionUpdate(old, new): true when the minors
 * differ (only the minor: 1.31 -> 2.31 is false, as in Gardener). -EINVAL. */
int inplace_minor_differs(const char *old_version, const char *new_version, bool *ret);

/* GetOSVersion() on the bytes of /etc/os-release (reconciler.go
 * getOperatingSystem + nodeagentconfigv1alpha1.OSVersionRegex): the value of
 * the first "PRETTY_NAME=" (anywhere on a line, as the unanchored regex
 * matches), every leading and trailing '"' trimmed, then the first
 * \b\d+(?:\.\d+)*\b in it. Writes it NUL-terminated to out (size bytes).
 * 0; -ENOENT when no PRETTY_NAME or no version in it; -EMSGSIZE when the
 * version does not fit. */
int inplace_os_version(const char *os_release, size_t len, char *out, size_t size);

/* An RFC 3339 time as Go's time.Parse(time.RFC3339, s) takes it
 * ("2006-01-02T15:04:05Z", optional fraction, "Z" or "+hh:mm"): its instant
 * in *sec (Unix seconds) and *nsec. 0; -EINVAL. */
int inplace_parse_time(const char *s, int64_t *sec, int32_t *nsec);

/* A Kubernetes resource quantity as resource.ParseQuantity takes it
 * (sign, digits with an optional fraction, then one of the suffixes
 * Ki Mi Gi Ti Pi Ei n u m "" k M G T P E, or an exponent e/E<int>). */
bool inplace_quantity_is_valid(const char *s);

#define INPLACE_ERROR_MAX 256

/* Classifies the change from old (the last applied OSC; NULL when there is
 * none) to new, on a node whose running OS version is running_os_version
 * (inplace_os_version(); may be NULL when new has no spec.inPlaceUpdates).
 * 0 and the kinds in *ret (0: nothing in-place, applied at once as
 * before); on an error Gardener also stops at (no running OS version, a
 * version that is not one, a kubelet configuration missing or unreadable,
 * a kubeReserved value that is not a quantity) -EINVAL, with the reason in
 * err (INPLACE_ERROR_MAX bytes, may be NULL). */
int inplace_classify(const struct osc *old, const struct osc *new, const char *running_os_version, unsigned *ret,
		     char *err);

#endif
