/* One run of the executor: the steps of an apply, the progress record, the
 * last-applied record and the result (state.h). Logs every decision. */
#ifndef CCE_APPLY_H
#define CCE_APPLY_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "desired.h"

struct sd_bus;

struct apply_ctx {
	const char *root;           /* "/" or the --root prefix */
	int rootfd;
	const struct config *cfg;
	struct sd_bus *bus;         /* NULL: no systemd (files only) */
	unsigned job_timeout_ms;
	const char *containerd_address; /* containerd's socket (images.h); NULL: the default */
	int puller_fd;              /* images_puller_start(), or -1: image files are not pulled */
	const char *service_path;   /* PATH for containerd's drop-in (containerd_service_path());
				     * NULL: the drop-in is not added */
	const char *gna_dir;        /* gardener-node-agent's directory (kubeletvol.h); NULL: no data volume */
};

/* Exit statuses of the program. */
enum {
	APPLY_EXIT_OK = 0,
	APPLY_EXIT_FAILED = 1,
	APPLY_EXIT_USAGE = 2,
};

/* Applies the OSC bytes osc[0..len) (already read, not yet trusted). d is
 * the desired state they came from (checksum verified, key document,
 * sshAccess, restart request), or NULL for "apply FILE". Files, units, keys
 * and snapshot, then last-applied; result.json records the outcome either
 * way. Returns APPLY_EXIT_*. */
int apply_osc(const struct apply_ctx *c, const char *osc, size_t len, const struct desired *d);

/* "apply-desired": reads <stateDir>/desired.json, re-checks it
 * (desired_parse: version, checksum) and applies it. */
int apply_desired(const struct apply_ctx *c);

/* "keys": only the keys step and the snapshot, from the last applied OSC
 * and the key document of the current desired state (the timer's purge of
 * expired keys). */
int apply_keys_only(const struct apply_ctx *c);

/* "revoke": only the KRL (revoke_sync()): the operator's revoked keys and
 * the revocations of the last applied OSC and the records, now, without
 * an apply; replace overwrites a KRL changed outside this program. */
int apply_revoke(const struct apply_ctx *c, bool replace);

/* "check": validates the OSC file and prints what an apply would change.
 * Writes nothing. */
int apply_check(const struct apply_ctx *c, const char *osc, size_t len);

/* "status": prints the last result, last-applied checksum and progress. */
int apply_status(const struct apply_ctx *c);

/* Reads a whole file given on the command line (a host path, not below
 * --root), at most OSC_INPUT_MAX bytes. */
int apply_read_input(const char *path, char **ret, size_t *ret_len);

#endif
