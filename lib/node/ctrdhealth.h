/* The containerd probe's verdict: what `cloud-config-exec probe-containerd`
 * (root, no network, only containerd's socket; units/cloud-config-exec-
 * containerd-probe.service) found when it asked containerd for its version,
 * for node-agent's health duty (agent/health.h), which decides, reports and
 * repairs as gardener-node-agent's containerd health check does
 * (gardener/gardener pkg/nodeagent/controller/healthcheck/containerd.go).
 *
 * <exec state dir>/containerd-health.json, root-owned 0644, replaced
 * atomically by every probe:
 *
 *   {"version": 1, "healthy": true|false, "checkedAt": <unix seconds>,
 *    "serverVersion": "<containerd's version>" | absent,
 *    "error": "<one line>" | absent}
 *
 * Strict: unknown or duplicate keys, wrong types are errors. healthy true
 * needs serverVersion (1..CTRDHEALTH_VERSION_MAX bytes of [0-9A-Za-z.+~_-])
 * and no error; healthy false needs error (a line of 1..CTRDHEALTH_ERROR_MAX
 * bytes) and no serverVersion. checkedAt is at most 2^53 - 1.
 *
 * Pure functions: no I/O, no logging. */
#ifndef NA_CTRDHEALTH_H
#define NA_CTRDHEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define CTRDHEALTH_FILE "containerd-health.json"
#define CTRDHEALTH_VERSION 1
#define CTRDHEALTH_MAX 4096u
#define CTRDHEALTH_VERSION_MAX 64
#define CTRDHEALTH_ERROR_MAX 160

struct ctrdhealth {
	bool healthy;
	time_t checked_at;
	char server_version[CTRDHEALTH_VERSION_MAX + 1]; /* "" when unhealthy */
	char error[CTRDHEALTH_ERROR_MAX + 1];            /* "" when healthy */
};

/* Parses len bytes. Returns 0 and fills *ret, or -EINVAL / -EMSGSIZE /
 * -EPROTONOSUPPORT with *err (when err is not NULL) a static message naming
 * what was wrong; *ret is written only on success. */
int ctrdhealth_parse(const char *data, size_t len, struct ctrdhealth *ret, const char **err);

/* Formats h (which must be what ctrdhealth_parse() accepts) into a new
 * string the caller frees. Returns 0, -EINVAL for an h the parser would
 * refuse, or -ENOMEM. */
int ctrdhealth_format(const struct ctrdhealth *h, char **ret, size_t *ret_len);

/* The server version `ctr version` printed: the "Version:" line of its
 * "Server:" section, copied to buf (CTRDHEALTH_VERSION_MAX + 1 bytes).
 * Returns 0, or -ENOENT when out (NUL-terminated) has no such line or it is
 * not a version as above. */
int ctrdhealth_server_version(const char *out, char buf[static CTRDHEALTH_VERSION_MAX + 1]);

#endif
