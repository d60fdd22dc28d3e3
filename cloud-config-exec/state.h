/* The executor's own records below <execStateDir> (root-owned, 0755):
 *
 *   last-applied.yaml  the osc.yaml bytes of the last fully successful apply,
 *                      behind one header line "# cloud-config-exec
 *                      last-applied sha256=<hex of the rest>" so a torn or
 *                      corrupted record is recognised (Gardener #10819) and
 *                      treated as absent (a full apply) instead of trusted;
 *   state.json         what the executor owns and where an apply stands:
 *                      the files it created (only those are ever removed),
 *                      the SSH keys it manages per user, and the progress of
 *                      an unfinished apply (target checksum, finished steps,
 *                      units changed so far). Rewritten after each step, and
 *                      before files are created (ownership is recorded first,
 *                      so a crash can never leak a created file: #10972);
 *                      It also caches `containerd --version` per binary;
 *   result.json        lib/node/result.h, for node-agent.
 *
 * Every write is atomic (fsx_write_atomic_at) and skipped when the bytes
 * are unchanged. Functions return -errno and do not log above debug; the
 * caller decides. */
#ifndef CCE_STATE_H
#define CCE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#define STATE_LAST_APPLIED "last-applied.yaml"
#define STATE_FILE "state.json"
#define STATE_RESULT "result.json"
#define STATE_MAX (16u << 20)
#define STATE_STALE_MAX 256

enum {
	STATE_STEP_FILES = 1 << 0,
	STATE_STEP_UNITS = 1 << 1,
	STATE_STEP_KEYS = 1 << 2,
};

struct state_key {
	char *fingerprint;          /* "SHA256:..." */
	char *line;                 /* the rendered authorized_keys line */
	time_t expiry;              /* 0: none */
};

struct state_user {
	char *user;
	struct state_key *keys;     /* managed: the desired set in force, whether or not the home took it */
	size_t n_keys;
	/* Keys the executor managed and dropped while the user's
	 * authorized_keys could not be rewritten: they may still sit in that
	 * file, so its lines with these fingerprints are still ours (removed
	 * by the next write that succeeds, then the list is emptied). They
	 * are revoked (revoke.h) the moment they are dropped, not when the
	 * file is fixed. At most STATE_STALE_MAX, the oldest dropped first. */
	struct state_key *stale;
	size_t n_stale;
};

struct state {
	char **owned_files;         /* NULL-terminated, sorted, unique; never NULL after load */
	size_t n_owned;
	struct state_user *users;   /* managed keys, per user */
	size_t n_users;
	char progress_checksum[65]; /* "" when no apply is in progress */
	unsigned progress_steps;    /* STATE_STEP_* finished for progress_checksum */
	char **progress_units;      /* units changed so far by that apply (NULL-terminated or NULL) */
	/* Unit files and drop-ins we wrote (units_owned_paths(), sorted,
	 * NULL-terminated or NULL): recorded before they are written, so units
	 * of an apply that never finished are known as ours (Gardener #10972). */
	char **owned_units;
	/* The key snapshot last written: a digest of its entries, and the
	 * generation and creation time it was built with, so an unchanged key
	 * set rebuilds byte-identical and is not rewritten. */
	char snapshot_digest[65];
	uint64_t snapshot_generation;
	int64_t snapshot_created_at;
	/* What `containerd --version` printed (its first line) for the binary
	 * whose stat stamp (state_stamp()) is containerd_stamp: asked again
	 * only when the binary changed (containerd.c). NULL when unknown. */
	char *containerd_stamp;
	char *containerd_version;
	/* The in-place update (GEP-31) of the OSC inplace_checksum
	 * (cloud-config-exec/ipupdate.h), persisted across reboots and
	 * crashes like gardener-node-agent's osc-changes file
	 * (pkg/nodeagent/controller/operatingsystemconfig/osc_changes.go):
	 * "" when none. Kinds are lib/node/inplace.h bits. */
	char inplace_checksum[65];
	unsigned inplace_kinds;     /* all kinds of that OSC */
	unsigned inplace_remaining; /* still to do (completed ones are cleared) */
	unsigned inplace_steps;     /* IPU_STEP_* finished */
	int inplace_state;          /* enum inplace_state */
	char *inplace_reason;       /* with INPLACE_STATE_FAILED */
	char *inplace_os_attempted; /* the OS version the update command ran for
	                             * (Gardener's updating-operating-system-version
	                             * annotation); NULL: not run */
	char inplace_boot_id[40];   /* the boot it ran in ("" unknown): the same
	                             * boot is a reboot still pending, another one
	                             * on the old version a rolled-back update */
};

#define STATE_STAMP_MAX 128

/* The identity of a file for a cache: device, inode, size, mtime and
 * ctime in nanoseconds ("dev:ino:size:mtime:ctime"; ctime cannot be set
 * back by a user, so an in-place rewrite that restores mtime still
 * changes it). Pure. */
void state_stamp(const struct stat *st, char buf[static STATE_STAMP_MAX]);

/* Parses state.json bytes (pure). -EINVAL on malformed input. */
int state_parse(const char *data, size_t len, struct state *ret);
/* Serialises (pure); malloc'ed NUL-terminated text in *ret. */
int state_format(const struct state *s, char **ret, size_t *ret_len);

/* Loads <dirfd>/state.json; an absent file gives an empty state. */
int state_load(int dirfd, struct state *ret);

#define STATE_DAMAGED "state.json.damaged"
/* A state.json that does not parse, rebuilt from what is known: it is moved
 * aside to STATE_DAMAGED (for a person to read; an older one there is
 * replaced) and *ret becomes a state that owns the files owned[] and the
 * unit files units[] (deep copies; either may be NULL), with no managed
 * keys and no apply in progress. The caller passes the last applied OSC's
 * files and units: what the executor wrote for it (a file the OSC named
 * that was there before the first apply is claimed too). Returns 0 or
 * -errno (nothing moved then). */
int state_rebuild(int dirfd, char *const *owned, char *const *units, struct state *ret);
/* Writes <dirfd>/state.json atomically (0600), skipping identical bytes.
 * Returns 1 when written, 0 when unchanged. */
int state_save(int dirfd, const struct state *s);
void state_done(struct state *s);

/* Owned-file set operations (keep the array sorted and unique). */
bool state_owns(const struct state *s, const char *path);
int state_own(struct state *s, const char *path);
void state_disown(struct state *s, const char *path);

/* Managed keys of user, NULL when none are recorded. */
const struct state_user *state_find_user(const struct state *s, const char *user);
/* Replaces the managed keys of user with a deep copy of keys[0..n); the
 * user's stale keys stay. */
int state_set_user(struct state *s, const char *user, const struct state_key *keys, size_t n);
/* Replaces the stale keys of user (see struct state_user) with a deep copy
 * of keys[0..n), each fingerprint once, the last STATE_STALE_MAX of them. */
int state_set_stale(struct state *s, const char *user, const struct state_key *keys, size_t n);

/* Reads last-applied.yaml: -ENOENT when absent, -EBADMSG when the header is
 * missing or the body does not match it. *ret is the osc body (malloc'ed,
 * NUL-terminated), checksum the hex SHA-256 of it. */
int state_load_last_applied(int dirfd, char **ret, size_t *ret_len, char checksum[static 65]);
/* Writes last-applied.yaml (header + osc), 0600. 1 written, 0 unchanged. */
int state_save_last_applied(int dirfd, const char *osc, size_t len);

#endif
