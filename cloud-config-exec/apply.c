/* One run of the executor; see apply.h.
 *
 * The order, and why a crash at any instant is harmless:
 *  1. the new OSC is parsed and validated: a rejected OSC changes nothing;
 *  2. the progress record (state.json) names the target checksum before any
 *     file is touched; files about to be created are recorded as ours first;
 *  3. files (atomic each), then units, then keys and the snapshot, each step
 *     persisted as finished in the progress record;
 *  4. last-applied.yaml is replaced only at the very end, then the progress
 *     record is cleared.
 * The plan (plan.h) comes from the models (last applied vs new) and the
 * disk's drift from the new one, so a re-run after a crash computes the
 * same file changes and unit restarts (the models' part is unchanged, and
 * what the crash left unwritten is drift) and completes the apply; a unit
 * step that finished is not repeated for the same checksum. apply_osc() is
 * the pipeline of steps below, over that one plan. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apply.h"
#include "bounds.h"
#include "cleanup.h"
#include "containerd.h"
#include "desired.h"
#include "files.h"
#include "kubelet.h"
#include "kubeletvol.h"
#include "fsx.h"
#include "images.h"
#include "ipupdate.h"
#include "log.h"
#include "osc.h"
#include "plan.h"
#include "result.h"
#include "unitcheck.h"
#include "revoke.h"
#include "sshkeys.h"
#include "tokens.h"
#include "secretfiles.h"
#include "state.h"
#include "status.h"
#include "units.h"


static void osc_donep(struct osc **o)
{
	if (*o) {
		osc_done(*o);
		free(*o);
	}
}

int apply_read_input(const char *path, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return log_error_errno(negerrno(), "Cannot open %s", path);
	int r = fsx_read_fd(fd, OSC_INPUT_MAX, ret, ret_len);
	if (r == -EFBIG)
		return log_error_errno(r, "%s is larger than %u bytes", path, OSC_INPUT_MAX);
	if (r < 0)
		return log_error_errno(r, "Cannot read %s", path);
	return 0;
}

static bool path_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Parses and validates; logs the reason on failure. */
static int parse_osc(const struct apply_ctx *c, const char *data, size_t len, const char *what, struct osc **ret)
{
	struct osc_error err = { { 0 } };
	_cleanup_(osc_donep) struct osc *o = calloc(1, sizeof(*o));
	if (!o)
		return log_error_errno(-ENOMEM, "Out of memory");
	int r = osc_parse_for_node(data, len, c->cfg->exec_state_dir, c->cfg->node_name, o, &err);
	if (r < 0) {
		free(TAKE_PTR(o));
		return log_error_errno(r, "%s rejected: %s", what, err.message[0] ? err.message : "invalid");
	}
	/* gardener-node-agent adds containerd's PATH drop-in to the OSC before
	 * it computes its changes and keeps it in its last-applied OSC
	 * (containerd.h): every model, old and new, gets it the same way. */
	if (c->service_path && (r = containerd_env_dropin(o, c->service_path)) < 0)
		return log_error_errno(r, "%s: cannot add containerd's drop-in %s", what, CONTAINERD_ENV_DROPIN);
	for (size_t i = 0; i < o->n_files; i++) {
		const char *p = o->files[i].path;
		/* The agent's state directory is off limits, except the key
		 * document an OSC may carry there (it is only data). */
		bool keydoc = c->cfg->key_document_path && strcmp(p, c->cfg->key_document_path) == 0;
		if ((c->cfg->state_dir && path_below(p, c->cfg->state_dir) && !keydoc) ||
		    (c->cfg->snapshot_path && strcmp(p, c->cfg->snapshot_path) == 0) || path_below(p, "/" UNITS_DIR)) {
			char ffield[1100];
			snprintf(ffield, sizeof(ffield), "FILE=%s", p);
			return log_fields_errno(LOG_ERR, -EPERM, LOG_FIELDS(ffield),
						"%s rejected: spec.files: path '%s' is in the agent's own state or "
						"the systemd unit directory (units go through spec.units)", what, p);
		}
	}
	*ret = TAKE_PTR(o);
	return 0;
}

static bool any_path(const char *path, void *userdata)
{
	return true; /* the state directory holds only our own records */
}

/* One run at a time (the path unit, the timer and a run by hand): an
 * exclusive flock on the state directory itself, held until the fd is
 * closed at exit. Creates nothing, so a no-op run still writes nothing. */
static int lock_state_dir(const struct apply_ctx *c, int fd)
{
	unsigned timeout_ms = c->cfg->apply_timeout_ms ? c->cfg->apply_timeout_ms : 300000;
	struct timespec start, now;
	bool told = false;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return log_error_errno(negerrno(), "Cannot lock %s", c->cfg->exec_state_dir);
		if (!told) {
			log_notice("Waiting for another cloud-config-exec run to finish (lock on %s)",
				   c->cfg->exec_state_dir);
			told = true;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
		if (ms > (long)timeout_ms)
			return log_error_errno(-ETIMEDOUT, "Another cloud-config-exec run held %s for %u ms",
					       c->cfg->exec_state_dir, timeout_ms);
		struct timespec d = { 0, 50 * 1000 * 1000 };
		nanosleep(&d, NULL);
	}
}

static int open_state_dir(const struct apply_ctx *c, bool create)
{
	int fd = fsx_open_dir_at(c->rootfd, c->cfg->exec_state_dir, create ? FSX_MKDIR : 0, 0755);
	if (fd < 0 && (create || fd != -ENOENT))
		log_error_errno(fd, "Cannot open the state directory %s", c->cfg->exec_state_dir);
	if (fd >= 0 && create) {
		/* Root-owned 0755: authkeys-cmd reads the snapshot in here, and
		 * nobody but root may plant anything. */
		struct stat st;
		if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 0022)) {
			if (fchown(fd, 0, 0) < 0 || fchmod(fd, 0755) < 0) {
				int r = log_error_errno(negerrno(), "Cannot make %s root-owned 0755",
							c->cfg->exec_state_dir);
				close(fd);
				return r;
			}
			log_notice("Fixed owner and mode of %s", c->cfg->exec_state_dir);
		}
		int r = lock_state_dir(c, fd);
		if (r < 0) {
			close(fd);
			return r;
		}
		(void)files_remove_stale_temps(fd, c->cfg->exec_state_dir, any_path, NULL);
	}
	return fd;
}

/* gardener-node-agent's record of what it applied last (gardener/gardener
 * pkg/apis/config/nodeagent/v1alpha1/types.go
 * LastAppliedOperatingSystemConfigFilePath, written by the OSC reconciler
 * with the whole OperatingSystemConfig), relative to the root. */
#define GNA_LAST_APPLIED "var/lib/gardener-node-agent/last-applied-osc.yaml"

/* On a node gardener-node-agent configured, its last-applied OSC stands in
 * for ours until we have one: taking over then restarts only the units whose
 * definition differs, not every unit (containerd and the kubelet included).
 * Its files stay not ours (they are never removed by us). */
static struct osc *adopt_gna(const struct apply_ctx *c)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fsx_read_at(c->rootfd, GNA_LAST_APPLIED, OSC_INPUT_MAX, &data, &len);
	if (r == -ENOENT)
		return NULL;
	if (r < 0) {
		log_warning_errno(r, "Cannot read gardener-node-agent's /%s; doing a full apply", GNA_LAST_APPLIED);
		return NULL;
	}
	struct osc *o = NULL;
	if (parse_osc(c, data, len, "gardener-node-agent's last applied OSC", &o) < 0) {
		log_warning("gardener-node-agent's /%s does not parse; doing a full apply", GNA_LAST_APPLIED);
		return NULL;
	}
	log_notice("No last-applied record of our own: adopting gardener-node-agent's /%s (%zu files, %zu units), "
		   "so only units whose definition differs restart",
		   GNA_LAST_APPLIED, o->n_files, o->n_units);
	return o;
}

/* The last applied OSC, or NULL when there is none or it cannot be trusted. */
static struct osc *load_old(const struct apply_ctx *c, int statefd, char checksum[static 65])
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	checksum[0] = '\0';
	if (statefd < 0)
		return adopt_gna(c);
	int r = state_load_last_applied(statefd, &data, &len, checksum);
	if (r == -ENOENT)
		return adopt_gna(c);
	if (r < 0) {
		log_warning_errno(r, "%s/%s is damaged or unreadable; doing a full apply (every unit restarts)",
				  c->cfg->exec_state_dir, STATE_LAST_APPLIED);
		checksum[0] = '\0';
		return NULL;
	}
	struct osc *o = NULL;
	if (parse_osc(c, data, len, "last applied OSC", &o) < 0) {
		log_warning("The last applied OSC no longer parses; doing a full apply");
		checksum[0] = '\0';
		return NULL;
	}
	return o;
}

/* state.json, or, when it is damaged, rebuilt from the last applied OSC
 * (ours only, never gardener-node-agent's: its files are not ours) with
 * state_rebuild(): the damaged file is kept beside it, the apply goes on,
 * and files a later OSC drops are still removed. */
static int load_state(const struct apply_ctx *c, int statefd, struct state *st)
{
	int r = state_load(statefd, st);
	if (r != -EINVAL && r != -EBADMSG && r != -EFBIG)
		return r;
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	char checksum[65];
	_cleanup_(osc_donep) struct osc *last = NULL;
	if (state_load_last_applied(statefd, &data, &len, checksum) < 0 ||
	    parse_osc(c, data, len, "last applied OSC", &last) < 0)
		last = NULL;
	_cleanup_strv_free_ char **files = calloc(last ? last->n_files + 1 : 1, sizeof(char *));
	_cleanup_strv_free_ char **units = NULL;
	if (!files || (last && units_owned_paths(last, &units) < 0))
		return log_error_errno(-ENOMEM, "Out of memory");
	for (size_t i = 0; last && i < last->n_files; i++)
		if (!(files[i] = strdup(last->files[i].path)))
			return log_error_errno(-ENOMEM, "Out of memory");
	size_t n_units = 0;
	for (char **u = units; u && *u; u++)
		n_units++;
	int k = state_rebuild(statefd, files, units, st);
	if (k < 0)
		return log_error_errno(k, "%s/%s is damaged and cannot be rebuilt", c->cfg->exec_state_dir, STATE_FILE);
	log_error("%s/%s is damaged (%s): moved to %s and rebuilt from %s: %zu owned file(s), %zu unit file(s); "
		  "the managed SSH keys follow this run's key sources",
		  c->cfg->exec_state_dir, STATE_FILE, strerror(-r), STATE_DAMAGED,
		  last ? STATE_LAST_APPLIED " (the last applied OSC)" : "nothing (no last applied OSC)", st->n_owned,
		  n_units);
	return 0;
}

static bool strv_equal(char *const *a, char *const *b)
{
	for (; a && *a && b && *b; a++, b++)
		if (strcmp(*a, *b) != 0)
			return false;
	return (!a || !*a) && (!b || !*b);
}

static bool str_equal(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The condition's content; checkedAt alone does not make a new result (a
 * timer run that finds the same state writes nothing). */
static bool units_ready_equal(const struct result_units_ready *a, const struct result_units_ready *b)
{
	return a->present == b->present &&
	       (!a->present || (a->ready == b->ready && strcmp(a->reason, b->reason) == 0 &&
				str_equal(a->message, b->message)));
}

/* The SystemdUnitsReady condition for osc's units into res (unitcheck.h);
 * nothing without a bus or an OSC (the check is then not reported). */
static bool inplace_equal(const struct result_inplace *a, const struct result_inplace *b)
{
	return a->present == b->present &&
	       (!a->present || (a->kinds == b->kinds && a->state == b->state && str_equal(a->reason, b->reason) &&
				str_equal(a->os_desired, b->os_desired) && str_equal(a->os_running, b->os_running)));
}

/* An in-place update that is not finished but not failed either (waiting
 * for ReadyForUpdate, or the reboot into the new OS pending): success
 * false so that the checksum is not taken as applied (ipupdate.h,
 * result.h), logged as a notice, not an error. */
static int write_result(int statefd, const struct result *res, bool changed_anything);

static int pending_result(int statefd, struct result *res, const char *step, const char *msg)
{
	res->success = false;
	res->failed_step = (char *)(uintptr_t)step;
	res->error = (char *)(uintptr_t)msg;
	res->finished_at = time(NULL);
	(void)write_result(statefd, res, false);
	log_notice("Apply of %.12s: %s", res->checksum, msg);
	res->failed_step = NULL;
	res->error = NULL;
	return APPLY_EXIT_OK;
}

/* ipu_started_fn: "running" in result.json before the OS update command
 * runs (it reboots the node: the executor may not get to write after it). */
struct os_update_started {
	int rootfd;
	int statefd;
	struct result *res;
	const struct osc *new;
	char **changed_units;
};

/* result.json for an in-place update that is not done yet: filled from the
 * state with the running OS version, "pending" at the OS update step with
 * how (verb) it stands. */
static int os_update_pending(int rootfd, int statefd, const struct state *st, const struct osc *new,
			     char **changed_units, char running[static INPLACE_VERSION_MAX + 1], const char *verb,
			     struct result *res)
{
	(void)ipu_running_os_version(rootfd, running);
	ipu_fill_result(st, new, running, res);
	res->changed_units = changed_units;
	char msg[256];
	snprintf(msg, sizeof(msg), "the OS update to %s %s", new->inplace.os_version, verb);
	int x = pending_result(statefd, res, "inplace-os-update", msg);
	res->changed_units = NULL;
	return x;
}

static void os_update_started(void *data, const struct state *st)
{
	struct os_update_started *o = data;
	char running[INPLACE_VERSION_MAX + 1] = "";
	(void)os_update_pending(o->rootfd, o->statefd, st, o->new, o->changed_units, running, "is running", o->res);
	ipu_fill_result(st, o->new, NULL, o->res); /* no pointer to running kept */
}

static void check_units(const struct apply_ctx *c, const struct osc *osc, struct result *res)
{
	if (!c->bus || !osc || res->units_ready.present)
		return;
	(void)unitcheck_run(c->bus, osc, &res->units_ready); /* logged */
}

static void result_done_units_ready(struct result *res)
{
	free(res->units_ready.message);
	res->units_ready = (struct result_units_ready){};
}

/* Writes result.json unless an identical outcome is already recorded (a
 * no-op re-apply then writes nothing at all). */
static int write_result(int statefd, const struct result *res, bool changed_anything)
{
	_cleanup_free_ char *old = NULL;
	size_t old_len;
	if (!changed_anything && fsx_read_at(statefd, STATE_RESULT, RESULT_MAX, &old, &old_len) >= 0) {
		struct result prev = { 0 };
		if (result_parse(old, old_len, &prev, NULL) >= 0) {
			bool same = prev.success == res->success && strcmp(prev.checksum, res->checksum) == 0 &&
				    prev.generation == res->generation && str_equal(prev.restart_id, res->restart_id) &&
				    str_equal(prev.failed_step, res->failed_step) && str_equal(prev.error, res->error) &&
				    (res->success || strv_equal(prev.changed_units, res->changed_units)) &&
				    units_ready_equal(&prev.units_ready, &res->units_ready) &&
				    inplace_equal(&prev.inplace, &res->inplace);
			result_done(&prev);
			if (same)
				return 0;
		}
	}
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = result_format(res, &text, &len);
	if (r < 0)
		return log_error_errno(r, "Cannot format %s", STATE_RESULT);
	r = fsx_write_atomic_at(statefd, STATE_RESULT, text, len, 0644, 0, 0, FSX_SKIP_IF_SAME);
	if (r < 0)
		return log_error_errno(r, "Cannot write %s", STATE_RESULT);
	return 1;
}

/* The restart request last executed (from result.json), or NULL. */
static char *previous_restart_id(int statefd)
{
	_cleanup_free_ char *old = NULL;
	size_t len;
	if (fsx_read_at(statefd, STATE_RESULT, RESULT_MAX, &old, &len) < 0)
		return NULL;
	struct result prev = { 0 };
	if (result_parse(old, len, &prev, NULL) < 0)
		return NULL;
	char *id = TAKE_PTR(prev.restart_id);
	result_done(&prev);
	return id;
}

static int fail_result(int statefd, struct result *res, const char *step, const char *error)
{
	res->success = false;
	res->failed_step = (char *)(uintptr_t)step;
	res->error = (char *)(uintptr_t)error;
	res->finished_at = time(NULL);
	if (statefd >= 0)
		(void)write_result(statefd, res, true);
	char cfield[80];
	snprintf(cfield, sizeof(cfield), "CHECKSUM=%s", res->checksum);
	log_fields(LOG_ERR, LOG_FIELDS(cfield), "Apply of %.12s failed in step %s: %s",
		   res->checksum[0] ? res->checksum : "(no desired state)", step, error);
	res->failed_step = NULL;
	res->error = NULL;
	return APPLY_EXIT_FAILED;
}

/* A failed files or units step must not hold back a key rotation: the keys
 * step still runs (its own failure is logged); the run still fails. */
static void keys_anyway(const struct apply_ctx *c, const struct osc *new, const struct desired *d, struct state *st,
			int statefd)
{
	struct sshkeys_input in = { .osc = new, .key_document = d ? d->key_document : NULL,
				    .ssh_access = d ? d->ssh_access : true, .now = time(NULL),
				    .osc_checksum = d ? d->checksum : NULL };
	bool changed = false;
	log_notice("Applying the SSH keys despite the failed step");
	(void)revoke_keys_step(c->rootfd, c->root, c->cfg, &in, st, statefd, &changed, NULL, 0);
}

/* ---- the apply: a pipeline of steps over one plan ------------------------
 *
 * apply_osc() runs the steps below in order; each either lets the next run
 * (STEP_NEXT) or has recorded how the run ends (result.json, run->exit)
 * and stops it (STEP_STOP). The plan (plan.h) is computed once, by
 * step_plan(), with the function "check" prints; the steps after it carry
 * it out and decide nothing of their own but what only the moment knows
 * (a write that fails, the bytes containerd gives for an image file). */

enum { STEP_NEXT = 0, STEP_STOP = 1 };

static bool strv_contains(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (strcmp(*v, s) == 0)
			return true;
	return false;
}

struct run {
	const struct apply_ctx *c;
	const char *osc;
	size_t len;
	const struct desired *d;
	int exit;                   /* APPLY_EXIT_*, once a step stopped the run */
	struct result res;
	char cfield[80];
	struct osc *new, *old;
	char old_checksum[65];
	bool same_as_last;
	int statefd;
	struct state st;
	char running[INPLACE_VERSION_MAX + 1];
	char *secret_error;         /* files from a Secret not at hand, reported at the end */
	char *prev_restart;         /* the restart request last executed */
	char **requests;            /* the restart requests this run executes */
	struct plan_input in;
	struct plan plan;
	bool planned;
	bool changed;               /* something on the node changed */
	char **changed_units, **restarted, **stopped;
	bool held;                  /* an image file was not written: units held back */
	char *img_error, *held_units;
	int cri_r;
	char *cri_error;
};

static void run_done(struct run *r)
{
	r->res.changed_units = NULL;
	r->res.restarted_units = r->res.stopped_units = NULL;
	r->res.restart_id = NULL;
	result_done_units_ready(&r->res);
	osc_donep(&r->new);
	osc_donep(&r->old);
	if (r->statefd >= 0)
		close(r->statefd);
	state_done(&r->st);
	free(r->secret_error);
	free(r->prev_restart);
	strv_free(r->requests);
	if (r->planned)
		plan_done(&r->plan);
	strv_free(r->changed_units);
	strv_free(r->restarted);
	strv_free(r->stopped);
	free(r->img_error);
	free(r->held_units);
	free(r->cri_error);
}

/* Ends the run as failed in step (result.json, one log line). */
static int stop_failed(struct run *r, const char *step, const char *error)
{
	r->exit = fail_result(r->statefd, &r->res, step, error);
	return STEP_STOP;
}

/* As stop_failed(), after the SSH keys were applied all the same: a failed
 * step never holds back a key rotation (keys_anyway()). */
static int stop_failed_keys(struct run *r, const char *step, const char *error)
{
	keys_anyway(r->c, r->new, r->d, &r->st, r->statefd);
	return stop_failed(r, step, error);
}

/* As stop_failed_keys(), reporting the units this run changed so far and
 * the condition of the units in force. */
static int stop_failed_units(struct run *r, const struct osc *condition_of, const char *step, const char *error)
{
	r->res.changed_units = r->changed_units;
	check_units(r->c, condition_of, &r->res);
	int s = stop_failed(r, step, error);
	r->res.changed_units = NULL;
	r->res.restarted_units = r->res.stopped_units = NULL;
	result_done_units_ready(&r->res);
	return s;
}

/* Parse and check everything before anything is touched: a rejected OSC or
 * desired state changes nothing on the node. */
static int step_validate(struct run *r)
{
	const struct apply_ctx *c = r->c;
	if (parse_osc(c, r->osc, r->len, "OSC", &r->new) < 0) {
		r->statefd = open_state_dir(c, true);
		return stop_failed(r, "validate", "the OSC was rejected (see the journal)");
	}
	if ((r->statefd = open_state_dir(c, true)) < 0)
		return stop_failed(r, "state", "cannot open the state directory");
	int e = load_state(c, r->statefd, &r->st);
	if (e < 0)
		return stop_failed(r, "state", "state.json cannot be read or rebuilt (see the journal)");
	r->old = load_old(c, r->statefd, r->old_checksum);
	r->same_as_last = r->old && strcmp(r->old_checksum, r->res.checksum) == 0;
	/* Every field of desired.json beyond the OSC stays within what the OSC
	 * and the stock user data allow (bounds.h). */
	struct bounds b = { .gna_dir = c->cfg->gna_dir, .exec_state_dir = c->cfg->exec_state_dir,
			    .snapshot_path = c->cfg->snapshot_path, .osc = r->new, .last = r->old };
	char berr[BOUNDS_ERROR_MAX];
	e = bounds_check(r->d, &b, berr, sizeof(berr));
	if (e == -ENOMEM)
		return stop_failed(r, "validate", "out of memory");
	if (e < 0) {
		char msg[BOUNDS_ERROR_MAX + 64];
		snprintf(msg, sizeof(msg), "desired.json refused: %s", berr);
		return stop_failed(r, "validate", msg);
	}
	/* The bytes of the files from a Secret (secretfiles.h); one without
	 * is reported at the end. */
	e = secretfiles_resolve(r->new, r->d);
	if (e == -ENOMEM || (e > 0 && secretfiles_describe_missing(r->new, &r->secret_error) < 0))
		return stop_failed(r, "files", "out of memory");
	return STEP_NEXT;
}

/* In-place updates (GEP-31; ipupdate.h): classify, and hold the whole OSC
 * back while the Node is not ReadyForUpdate. "apply FILE" (no desired
 * state) is an operator's explicit apply: ready. */
static int step_inplace_gate(struct run *r)
{
	const struct apply_ctx *c = r->c;
	(void)ipu_running_os_version(c->rootfd, r->running);
	char ierr[INPLACE_ERROR_MAX] = "";
	int e = ipu_begin(c->rootfd, r->statefd, &r->st, r->old, r->new, r->res.checksum, ierr);
	if (e == -EINVAL || e == -ENOMEM)
		return stop_failed_keys(r, "inplace-classify", ierr[0] ? ierr : "out of memory");
	if (e < 0)
		return stop_failed(r, "state", "cannot save the in-place update record");
	ipu_fill_result(&r->st, r->new, r->running, &r->res);
	/* A failed OS update (the command failed, or the node came back on
	 * the old version) is final for this OSC, as Gardener's "OS update
	 * has failed with error" (reconciler.go performInPlaceUpdate); a
	 * kubelet that was not healthy is tried again, as there. */
	if (r->res.inplace.present && r->st.inplace_state == INPLACE_STATE_FAILED &&
	    !((r->st.inplace_remaining & INPLACE_OS_VERSION) && r->st.inplace_os_attempted)) {
		r->st.inplace_state = INPLACE_STATE_RUNNING;
		ipu_fill_result(&r->st, r->new, r->running, &r->res);
	}
	if (r->res.inplace.present && r->st.inplace_state == INPLACE_STATE_FAILED) {
		keys_anyway(c, r->new, r->d, &r->st, r->statefd);
		(void)tokens_apply(c->rootfd, r->d);
		return stop_failed(r, "inplace-failed", r->st.inplace_reason ? r->st.inplace_reason : "in-place update failed");
	}
	if (r->res.inplace.present && r->st.inplace_remaining && !(!r->d || r->d->inplace_ready)) {
		/* reconciler.go: "Node is not ready for in-place update" returns
		 * before any file or unit; SSH keys and token sync are other
		 * controllers there and go on. */
		keys_anyway(c, r->new, r->d, &r->st, r->statefd);
		if (tokens_apply(c->rootfd, r->d) < 0)
			log_warning("A synced token could not be written (see the journal)");
		r->res.inplace.state = INPLACE_STATE_WAITING;
		r->exit = pending_result(r->statefd, &r->res, "inplace-waiting",
					 "in-place update waits for the Node condition InPlaceUpdate with reason ReadyForUpdate");
		return STEP_STOP;
	}
	return STEP_NEXT;
}

/* The progress record names the target before any file is touched. */
static int step_progress(struct run *r)
{
	struct state *st = &r->st;
	if (r->same_as_last && st->progress_checksum[0] && strcmp(st->progress_checksum, r->res.checksum) == 0) {
		/* Crashed after last-applied was replaced: the apply had finished. */
		st->progress_checksum[0] = '\0';
		st->progress_steps = 0;
		strv_free(TAKE_PTR(st->progress_units));
	}
	if (strcmp(st->progress_checksum, r->res.checksum) != 0) {
		if (st->progress_checksum[0])
			log_fields(LOG_NOTICE, LOG_FIELDS(r->cfield), "An apply of %.12s did not finish; applying %.12s over it",
				   st->progress_checksum, r->res.checksum);
		st->progress_checksum[0] = '\0';
		st->progress_steps = 0;
		strv_free(TAKE_PTR(st->progress_units));
		if (!r->same_as_last) {
			memcpy(st->progress_checksum, r->res.checksum, 65);
			int e = state_save(r->statefd, st);
			if (e < 0) {
				log_error_errno(e, "Cannot save %s", STATE_FILE);
				return stop_failed(r, "state", "cannot save the progress record");
			}
		}
	} else
		log_fields(LOG_NOTICE, LOG_FIELDS(r->cfield), "Resuming the unfinished apply of %.12s", r->res.checksum);
	log_fields(LOG_INFO, LOG_FIELDS(r->cfield), "Applying OSC %.12s: %zu files, %zu units (last applied: %.12s)",
		   r->res.checksum, r->new->n_files, r->new->n_units, r->old ? r->old_checksum : "none");
	return STEP_NEXT;
}

/* Logs the plan, one journal line per line of "check". */
static void log_plan(const struct run *r)
{
	_cleanup_free_ char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	if (!f)
		return;
	plan_print(f, r->new, &r->plan);
	if (fclose(f) != 0 || !text)
		return;
	for (char *line = text, *nl; *line; line = nl + 1) {
		nl = strchrnul(line, '\n');
		/* (the units' summary is logged as the units step carries it out) */
		if (nl > line && strncmp(line, "units: ", 7) != 0)
			log_fields(LOG_INFO, LOG_FIELDS(r->cfield), "Plan: %.*s", (int)(nl - line), line);
		if (!*nl)
			break;
	}
}

/* The plan, once: what "check" prints for the same OSC and disk. */
static int step_plan(struct run *r)
{
	/* The Node's restart request, run once per id. */
	r->prev_restart = previous_restart_id(r->statefd);
	if (r->d && r->d->restart_id && r->d->restart_units && !str_equal(r->prev_restart, r->d->restart_id))
		for (char *const *q = r->d->restart_units; *q; q++)
			if (files_strv_add(&r->requests, *q) < 0)
				return stop_failed(r, "units", "out of memory");
	r->in = (struct plan_input){ .rootfd = r->c->rootfd, .statefd = r->statefd, .containerd_bin = CONTAINERD_BIN,
				     .st = &r->st, .old = r->old, .new = r->new, .d = r->d, .requests = r->requests };
	if (plan_compute(&r->in, &r->plan) < 0)
		return stop_failed(r, "plan", "out of memory");
	r->planned = true;
	(void)state_save(r->statefd, &r->st); /* containerd's version, if it was learnt (unchanged: no write) */
	log_plan(r);
	return STEP_NEXT;
}

/* The kubelet data volume, once, before any file or unit (Gardener formats
 * it in gardener-node-agent's bootstrap, before its first reconcile;
 * kubeletvol.h). Without it nothing else goes on, as there: the kubelet
 * would fill the root disk. Keys still apply. */
static int step_data_volume(struct run *r)
{
	if (!r->c->gna_dir)
		return STEP_NEXT;
	_cleanup_free_ char *why = NULL;
	if (datavol_step(r->c->rootfd, r->statefd, r->c->gna_dir, r->c->bus, &why) < 0)
		return stop_failed_keys(r, "kubelet-data-volume", why ? why : "the kubelet data volume was not formatted");
	return STEP_NEXT;
}

/* Files: the plan's writes; those the OSC dropped go after the units
 * (step_dropped_files), as gardener-node-agent's removeDeletedFiles comes
 * last. */
static int step_files(struct run *r)
{
	struct files_plan now = { .changed = r->plan.files.changed };
	_cleanup_strv_free_ char **written = NULL;
	int e = files_apply(r->c->rootfd, r->new, &now, &r->st, r->statefd, &written);
	if (e < 0)
		return stop_failed_keys(r, "files", "a file could not be written or removed (see the journal)");
	r->changed = r->changed || (written && written[0]);
	/* What the plan did not foresee (the disk changed since): its units
	 * restart all the same. */
	_cleanup_strv_free_ char **extra = NULL;
	for (char **w = written; w && *w; w++)
		if (!strv_contains(r->plan.files.write, *w) && files_strv_add(&extra, *w) < 0)
			return stop_failed(r, "files", "out of memory");
	if (extra) {
		log_notice("Wrote files the plan did not name (changed since it was made): their units restart too");
		if (plan_units(&r->in, &r->plan, extra, NULL) < 0)
			return stop_failed(r, "files", "out of memory");
	}
	if (!r->same_as_last) {
		r->st.progress_steps |= STATE_STEP_FILES;
		if (state_save(r->statefd, &r->st) < 0)
			return stop_failed(r, "files", "cannot save the progress record");
	}
	return STEP_NEXT;
}

/* The kubelet's bootstrap kubeconfig, before the units step (re)starts the
 * kubelet; synced tokens, before units that check for them start. */
static int step_bootstrap_and_tokens(struct run *r)
{
	int e = kubelet_bootstrap_apply(r->c->rootfd, r->d);
	if (e < 0)
		return stop_failed_keys(r, "kubelet-bootstrap", "cannot write " KUBELET_BOOTSTRAP_KUBECONFIG);
	r->changed = r->changed || e > 0;
	if ((e = tokens_apply(r->c->rootfd, r->d)) < 0)
		return stop_failed_keys(r, "tokens", "a synced token could not be written (see the journal)");
	r->changed = r->changed || e > 0;
	return STEP_NEXT;
}

/* containerd's configuration (criConfig; containerd.h), as planned. A
 * failure is reported at the end: units, keys and the snapshot still
 * apply. */
static int step_containerd(struct run *r)
{
	r->cri_r = containerd_plan_apply(r->c->rootfd, r->statefd, r->c->root, CONTAINERD_BIN, &r->plan.cri,
					 &r->cri_error);
	if (r->cri_r < 0 && r->cri_r != -EAGAIN && r->plan.cri.restart) {
		/* Not written: containerd is not restarted for it. */
		r->plan.cri.restart = false;
		if (plan_units(&r->in, &r->plan, NULL, NULL) < 0)
			return stop_failed(r, "containerd", "out of memory");
	}
	return STEP_NEXT;
}

/* Image files (images.h). A failed pull keeps the old file and holds back
 * what gardener-node-agent holds back when applyChangedImageRefFiles fails
 * (gardener/gardener pkg/nodeagent/controller/operatingsystemconfig/
 * reconciler.go: it returns before applyChangedUnits, removeDeletedUnits,
 * the daemon-reload, executeUnitCommands, removeDeletedFiles and the
 * last-applied record): no unit of the OSC is written, removed, enabled,
 * restarted or stopped (units_plan_compute_held()), containerd is not
 * restarted for its config, no dropped file is removed, and
 * last-applied.yaml stays, so the next run plans the same changes. Files,
 * the bootstrap kubeconfig, tokens, containerd's files, the other image
 * files, the Node's restart requests (Gardener's node controller) and the
 * SSH keys still apply; the run fails in the step "images". A new
 * kubelet.service never starts an old /opt/bin/kubelet. */
static int step_images(struct run *r)
{
	const struct apply_ctx *c = r->c;
	struct images_ctx ic = { .address = c->containerd_address ? c->containerd_address : IMAGES_ADDRESS_DEFAULT,
				 .puller_fd = c->puller_fd, .bus = c->bus };
	_cleanup_strv_free_ char **written = NULL;
	int e = images_apply(&ic, c->rootfd, r->statefd, r->new, &written, &r->img_error);
	r->held = e < 0;
	_cleanup_strv_free_ char **extra = NULL;
	for (char **w = written; w && *w; w++)
		if (!strv_contains(r->plan.changed_files, *w) && files_strv_add(&extra, *w) < 0)
			return stop_failed(r, "images", "out of memory");
	if (r->held || extra) {
		if (extra)
			log_notice("containerd gave new bytes for image files the plan could not know of: their units restart");
		if (plan_units(&r->in, &r->plan, extra, r->held ? "an image file was not written" : NULL) < 0)
			return stop_failed(r, "units", "out of memory");
		_cleanup_free_ char *summary = NULL;
		if (units_plan_format(r->plan.units, &summary) >= 0)
			log_fields(LOG_INFO, LOG_FIELDS(r->cfield), "Plan, after the images step: units: %s", summary);
	}
	/* A CPU manager policy change: its state file goes before the kubelet
	 * restarts (reconciler.go applyChangedUnits). */
	if (!r->held && ipu_before_units(c->rootfd, r->statefd, &r->st) < 0)
		return stop_failed_keys(r, "inplace-kubelet", "cannot remove /" IPU_CPU_MANAGER_STATE);
	return STEP_NEXT;
}

/* Units, as planned (and the Node's restart requests). */
static int step_units(struct run *r)
{
	struct state *st = &r->st;
	if ((st->progress_steps & STATE_STEP_UNITS) && !r->plan.requests) {
		log_fields(LOG_INFO, LOG_FIELDS(r->cfield), "Units of %.12s were already applied before the interruption",
			   r->res.checksum);
		r->changed_units = TAKE_PTR(st->progress_units);
		return STEP_NEXT;
	}
	for (size_t i = 0; r->held && i < units_plan_size(r->plan.units); i++) {
		const struct units_plan_entry *e = units_plan_get(r->plan.units, i);
		if (!(e->actions & UNITS_HELD) || !e->held)
			continue;
		char *h = NULL;
		if (asprintf(&h, "%s%s%s", r->held_units ? r->held_units : "", r->held_units ? " " : "", e->unit) < 0)
			return stop_failed(r, "units", "out of memory");
		free(r->held_units);
		r->held_units = h;
	}
	/* Unit files are recorded as ours before they are written, and the
	 * plan counts the record: units of an apply that failed or was
	 * interrupted are removed once the OSC no longer has them instead of
	 * leaking (Gardener #10972). Held back: nothing of this OSC's is
	 * written, so nothing new is ours yet. */
	_cleanup_strv_free_ char **unit_paths = NULL;
	bool grew = false;
	if (units_owned_paths(r->new, &unit_paths) < 0)
		return stop_failed(r, "units", "out of memory");
	for (char **p = unit_paths; !r->held && *p; p++) {
		int e = files_strv_add(&st->owned_units, *p);
		if (e < 0)
			return stop_failed(r, "units", "out of memory");
		grew = grew || e > 0;
	}
	if (grew && state_save(r->statefd, st) < 0)
		return stop_failed(r, "units", "cannot save the ownership record");
	_cleanup_free_ char *summary = NULL;
	if (units_plan_format(r->plan.units, &summary) >= 0)
		log_fields(LOG_INFO, LOG_FIELDS(r->cfield), "Units: %s", summary);
	_cleanup_free_ char *uerr = NULL;
	int e = units_apply_report(r->plan.units, r->c->rootfd, r->c->bus, r->c->job_timeout_ms, &r->changed_units,
				   &r->restarted, &r->stopped, &uerr);
	if (r->restarted && r->restarted[0])
		r->res.restarted_units = r->restarted;
	if (r->stopped && r->stopped[0])
		r->res.stopped_units = r->stopped;
	if (e < 0) {
		char buf[1024];
		snprintf(buf, sizeof(buf), "%s", uerr ? uerr : strerror(-e));
		keys_anyway(r->c, r->new, r->d, st, r->statefd);
		/* The units of this OSC are on disk: a unit that failed to
		 * restart shows in the condition right away. */
		return stop_failed_units(r, r->new, "units", buf);
	}
	/* Applied: what we own is now exactly what this OSC has. */
	if (!r->held) {
		strv_free(st->owned_units);
		st->owned_units = TAKE_PTR(unit_paths);
	}
	if (!r->held && (!r->same_as_last || (r->changed_units && r->changed_units[0]))) {
		strv_free(st->progress_units);
		st->progress_units = NULL;
		for (char **u = r->changed_units; u && *u; u++)
			if (files_strv_add(&st->progress_units, *u) < 0)
				return stop_failed(r, "units", "out of memory");
		if (!r->same_as_last) {
			st->progress_steps |= STATE_STEP_UNITS;
			if (state_save(r->statefd, st) < 0)
				return stop_failed(r, "units", "cannot save the progress record");
		}
	}
	return STEP_NEXT;
}

/* The kubelet healthy after an in-place kubelet change
 * (completeKubeletInPlaceUpdate). */
static int step_inplace_kubelet(struct run *r)
{
	if (r->changed_units && r->changed_units[0])
		r->changed = true;
	if (r->held || ipu_kubelet_done(r->c, r->statefd, &r->st) >= 0)
		return STEP_NEXT;
	keys_anyway(r->c, r->new, r->d, &r->st, r->statefd);
	ipu_fill_result(&r->st, r->new, r->running, &r->res);
	r->res.changed_units = r->changed_units;
	int s = stop_failed(r, "inplace-kubelet", r->st.inplace_reason ? r->st.inplace_reason : "kubelet not healthy");
	r->res.changed_units = NULL;
	r->res.restarted_units = r->res.stopped_units = NULL;
	return s;
}

/* Files the OSC dropped, now that their units are stopped or rewritten
 * (not while units are held back). */
static int step_dropped_files(struct run *r)
{
	if (!r->held && r->plan.files.remove && r->plan.files.remove[0]) {
		if (files_remove_dropped(r->c->rootfd, &r->plan.files, &r->st, r->statefd) < 0) {
			keys_anyway(r->c, r->new, r->d, &r->st, r->statefd);
			r->res.changed_units = r->changed_units;
			int s = stop_failed(r, "files", "a dropped file could not be removed (see the journal)");
			r->res.changed_units = NULL;
			r->res.restarted_units = r->res.stopped_units = NULL;
			return s;
		}
		r->changed = true;
	}
	if (r->requests) {
		r->res.restart_id = r->d->restart_id;
		r->changed = true;
	} else if (r->d && r->d->restart_id && str_equal(r->prev_restart, r->d->restart_id))
		r->res.restart_id = r->d->restart_id;
	return STEP_NEXT;
}

/* Keys and the snapshot. */
static int step_keys(struct run *r)
{
	struct sshkeys_input in = { .osc = r->new, .key_document = r->d ? r->d->key_document : NULL,
				    .ssh_access = r->d ? r->d->ssh_access : true, .now = time(NULL),
				    .osc_checksum = r->res.checksum };
	bool keys_changed = false;
	char kerr[SSHKEYS_ERROR_MAX] = "";
	if (revoke_keys_step(r->c->rootfd, r->c->root, r->c->cfg, &in, &r->st, r->statefd, &keys_changed, kerr,
			     sizeof(kerr)) < 0) {
		r->res.restart_id = NULL;
		return stop_failed(r, "keys", kerr[0] ? kerr : "the SSH keys could not be applied (see the journal)");
	}
	r->changed = r->changed || keys_changed;
	return STEP_NEXT;
}

/* Held back: nothing committed; last-applied.yaml and the progress record
 * stay, so the next run plans the held-back changes again. The condition is
 * that of the units in force (Gardener's systemdunitcheck reads the
 * last-applied OSC). */
static int step_held(struct run *r)
{
	if (!r->held)
		return STEP_NEXT;
	_cleanup_free_ char *msg = NULL;
	if (asprintf(&msg, "%s; held back until it is written: %s%s",
		     r->img_error ? r->img_error : "an image file was not written",
		     r->held_units ? "units " : "unit changes (none planned)", r->held_units ? r->held_units : "") < 0)
		msg = NULL;
	return stop_failed_units(r, r->old, "images", msg ? msg : "an image file was not written");
}

/* The rest of the in-place update (performInPlaceUpdate): the OS update,
 * the kubelet's CA rotation. Not committed until it is done. */
static int step_inplace_finish(struct run *r)
{
	struct os_update_started started = { .rootfd = r->c->rootfd, .statefd = r->statefd, .res = &r->res,
					     .new = r->new, .changed_units = r->changed_units };
	int e = ipu_finish(r->c, r->statefd, &r->st, r->new, os_update_started, &started);
	if (e > 0) {
		r->exit = os_update_pending(r->c->rootfd, r->statefd, &r->st, r->new, r->changed_units, r->running,
					    "ran; waiting for the node to run it (reboot)", &r->res);
		r->res.restarted_units = r->res.stopped_units = NULL;
		return STEP_STOP;
	}
	if (e < 0) {
		(void)ipu_running_os_version(r->c->rootfd, r->running);
		ipu_fill_result(&r->st, r->new, r->running, &r->res);
		r->res.changed_units = r->changed_units;
		int s = stop_failed(r, (r->st.inplace_remaining & INPLACE_OS_VERSION) ? "inplace-os-update" : "inplace-kubelet",
				    r->st.inplace_reason ? r->st.inplace_reason : "in-place update failed");
		r->res.changed_units = NULL;
		r->res.restarted_units = r->res.stopped_units = NULL;
		return s;
	}
	ipu_fill_result(&r->st, r->new, r->running, &r->res);
	return STEP_NEXT;
}

/* Commit: last-applied, then the progress record. */
static int step_commit(struct run *r)
{
	if (!r->same_as_last) {
		int e = state_save_last_applied(r->statefd, r->osc, r->len);
		if (e < 0) {
			log_error_errno(e, "Cannot write %s", STATE_LAST_APPLIED);
			r->res.restart_id = NULL;
			return stop_failed(r, "commit", "cannot write last-applied.yaml");
		}
	}
	r->st.progress_checksum[0] = '\0';
	r->st.progress_steps = 0;
	strv_free(TAKE_PTR(r->st.progress_units));
	int e = state_save(r->statefd, &r->st);
	if (e < 0) {
		log_error_errno(e, "Cannot save %s", STATE_FILE);
		return stop_failed(r, "commit", "cannot save the progress record");
	}
	return STEP_NEXT;
}

/* The outcome: the failures reported at the end (containerd, files from a
 * Secret), else success. */
static int step_report(struct run *r)
{
	if (r->cri_r < 0)
		return stop_failed_units(r, r->new, "containerd",
					 r->cri_error ? r->cri_error : "containerd's configuration was not written (see the journal)");
	if (r->secret_error)
		return stop_failed_units(r, r->new, "files", r->secret_error);
	r->res.success = true;
	r->res.changed_units = r->changed_units;
	r->res.finished_at = time(NULL);
	check_units(r->c, r->new, &r->res);
	int e = write_result(r->statefd, &r->res, r->changed || !r->same_as_last);
	r->res.changed_units = NULL;
	r->res.restarted_units = r->res.stopped_units = NULL;
	result_done_units_ready(&r->res);
	if (e < 0) {
		r->exit = APPLY_EXIT_FAILED;
		return STEP_STOP;
	}
	log_fields(LOG_INFO, LOG_FIELDS(r->cfield), "Applied OSC %.12s%s", r->res.checksum,
		   r->changed || !r->same_as_last ? "" : " (nothing changed)");
	r->exit = APPLY_EXIT_OK;
	return STEP_STOP;
}

int apply_osc(const struct apply_ctx *c, const char *osc, size_t len, const struct desired *d)
{
	static int (*const steps[])(struct run *) = {
		step_validate,	      step_inplace_gate, step_progress, step_plan,	      step_data_volume,
		step_files,	      step_bootstrap_and_tokens,	 step_containerd, step_images,	      step_units,
		step_inplace_kubelet, step_dropped_files,		 step_keys,	  step_held,	      step_inplace_finish,
		step_commit,	      step_report,
	};
	struct run r = { .c = c, .osc = osc, .len = len, .d = d, .statefd = -1, .exit = APPLY_EXIT_FAILED,
			 .res = { .generation = d ? d->generation : 0 } };
	desired_sha256_hex(osc, len, r.res.checksum);
	snprintf(r.cfield, sizeof(r.cfield), "CHECKSUM=%s", r.res.checksum);
	for (size_t i = 0; i < ELEMENTSOF(steps); i++)
		if (steps[i](&r) == STEP_STOP)
			break;
	int exit_code = r.exit;
	run_done(&r);
	return exit_code;
}

/* why (may be NULL): on failure, what was wrong, for result.json. */
static int load_desired(const struct apply_ctx *c, struct desired *ret, bool quiet_absent, char *why, size_t why_size)
{
	_cleanup_close_ int dfd = fsx_open_dir_at(c->rootfd, c->cfg->state_dir, 0, 0);
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = dfd < 0 ? dfd : fsx_read_at(dfd, "desired.json", DESIRED_MAX, &data, &len);
	if (r == -ENOENT && quiet_absent)
		return r;
	if (r < 0) {
		if (why)
			snprintf(why, why_size, "cannot be read: %s", strerror(-r));
		return log_error_errno(r, "Cannot read %s/desired.json", c->cfg->state_dir);
	}
	const char *err = NULL;
	r = desired_parse(data, len, ret, &err);
	if (r < 0) {
		if (why)
			snprintf(why, why_size, "rejected: %s", err ? err : "invalid");
		return log_error_errno(r, "%s/desired.json rejected: %s", c->cfg->state_dir, err ? err : "invalid");
	}
	return 0;
}

/* How many applies one run makes at most when desired.json keeps changing. */
#define APPLY_DESIRED_ROUNDS 3

/* desired.json is applied; if node-agent wrote a new generation meanwhile,
 * that one too. The path unit does not see a change made while this service
 * runs (it stops watching until the service is inactive again: systemd#5770),
 * so without this a change during a long apply would wait for the timer. */
int apply_desired(const struct apply_ctx *c)
{
	uint64_t applied = 0;
	int ret = APPLY_EXIT_OK;
	for (unsigned round = 0; round < APPLY_DESIRED_ROUNDS; round++) {
		struct desired d = { 0 };
		char why[256] = "";
		int r = load_desired(c, &d, true, why, sizeof(why));
		if (r == -ENOENT && round == 0) {
			/* The timer may fire before node-agent wrote anything. */
			log_notice("No desired state yet (%s/desired.json): nothing to apply", c->cfg->state_dir);
			return APPLY_EXIT_OK;
		}
		if (r < 0 && round == 0 && r != -ENOMEM) {
			/* In result.json, for status and node-agent: no run gets
			 * further until node-agent writes it again, which it does
			 * when it starts (it does not trust what it finds). */
			_cleanup_close_ int sfd = open_state_dir(c, true);
			struct result res = { 0 };
			char msg[512];
			snprintf(msg, sizeof(msg),
				 "%s/desired.json %s; node-agent writes it anew when it restarts: systemctl restart node-agent",
				 c->cfg->state_dir, why);
			return sfd < 0 ? APPLY_EXIT_FAILED : fail_result(sfd, &res, "desired", msg);
		}
		if (r < 0)
			return round == 0 ? APPLY_EXIT_FAILED : ret;
		if (round > 0 && d.generation == applied) {
			desired_done(&d);
			break;
		}
		if (round > 0)
			log_notice("desired.json changed during the run (generation %llu -> %llu): applying again",
				   (unsigned long long)applied, (unsigned long long)d.generation);
		ret = apply_osc(c, d.osc, d.osc_len, &d);
		applied = d.generation;
		desired_done(&d);
	}
	return ret;
}

int apply_keys_only(const struct apply_ctx *c)
{
	_cleanup_close_ int statefd = open_state_dir(c, true);
	if (statefd < 0)
		return APPLY_EXIT_FAILED;
	_cleanup_(state_done) struct state st = { 0 };
	int r = load_state(c, statefd, &st);
	if (r < 0)
		return APPLY_EXIT_FAILED;
	char checksum[65];
	_cleanup_(osc_donep) struct osc *old = load_old(c, statefd, checksum);
	struct desired d = { 0 };
	bool have_d = load_desired(c, &d, true, NULL, 0) >= 0;
	struct sshkeys_input in = { .osc = old, .key_document = have_d ? d.key_document : NULL,
				    .ssh_access = have_d ? d.ssh_access : true, .now = time(NULL),
				    .osc_checksum = old && checksum[0] ? checksum : NULL };
	bool changed = false;
	char kerr[SSHKEYS_ERROR_MAX] = "";
	r = revoke_keys_step(c->rootfd, c->root, c->cfg, &in, &st, statefd, &changed, kerr, sizeof(kerr));
	if (have_d)
		desired_done(&d);
	if (r < 0)
		return APPLY_EXIT_FAILED;
	log_info("Keys reconciled%s", changed ? "" : " (nothing changed)");
	return APPLY_EXIT_OK;
}

int apply_revoke(const struct apply_ctx *c, bool replace)
{
	_cleanup_close_ int statefd = open_state_dir(c, true);
	if (statefd < 0)
		return APPLY_EXIT_FAILED;
	/* A damaged state.json only means no managed keys to keep unrevoked. */
	_cleanup_(state_done) struct state st = { 0 };
	if (state_load(statefd, &st) < 0)
		state_done(&st);
	char checksum[65];
	_cleanup_(osc_donep) struct osc *old = load_old(c, statefd, checksum);
	struct desired d = { 0 };
	bool have_d = load_desired(c, &d, true, NULL, 0) >= 0;
	struct sshkeys_input in = { .osc = old, .key_document = have_d ? d.key_document : NULL,
				    .ssh_access = have_d ? d.ssh_access : true, .now = time(NULL) };
	bool changed = false;
	char err[SSHKEYS_ERROR_MAX] = "";
	int r = revoke_sync(c->rootfd, c->cfg, &in, &st, statefd, replace, &changed, err, sizeof(err));
	if (have_d)
		desired_done(&d);
	if (r < 0)
		return APPLY_EXIT_FAILED;
	log_info("Revoked keys brought up to date%s", changed ? "" : " (nothing changed)");
	return APPLY_EXIT_OK;
}

int apply_check(const struct apply_ctx *c, const char *osc, size_t len)
{
	_cleanup_(osc_donep) struct osc *new = NULL;
	if (parse_osc(c, osc, len, "OSC", &new) < 0)
		return APPLY_EXIT_FAILED;
	_cleanup_close_ int statefd = open_state_dir(c, false);
	_cleanup_(state_done) struct state st = { 0 };
	if (statefd >= 0 && state_load(statefd, &st) < 0)
		log_warning("%s/%s is damaged; assuming no owned files", c->cfg->exec_state_dir, STATE_FILE);
	char checksum[65], sum[65];
	_cleanup_(osc_donep) struct osc *old = load_old(c, statefd, checksum);
	desired_sha256_hex(osc, len, sum);
	printf("checksum %s (last applied: %s)\n", sum, old ? checksum : "none");
	printf("%zu files, %zu units: valid\n", new->n_files, new->n_units);
	/* The plan an apply of this file computes now ("apply FILE": no
	 * desired state, so no restart request, token or kubeconfig). */
	struct plan_input in = { .rootfd = c->rootfd, .statefd = statefd, .containerd_bin = CONTAINERD_BIN,
				 .st = &st, .old = old, .new = new };
	struct plan p;
	if (plan_compute(&in, &p) < 0)
		return APPLY_EXIT_FAILED;
	plan_print(stdout, new, &p);
	plan_done(&p);
	return APPLY_EXIT_OK;
}

int apply_status(const struct apply_ctx *c)
{
	/* Local times: the zone is read before anything is printed. */
	tzset();
	_cleanup_close_ int statefd = open_state_dir(c, false);
	struct status_view v = { .exec_state_dir = c->cfg->exec_state_dir, .state_dir = c->cfg->state_dir,
				 .exec_dir_missing = statefd < 0,
				 .timer_hint = "the next run (cloud-config-exec.timer, or a new desired.json)" };
	char checksum[65] = "";
	_cleanup_(osc_donep) struct osc *old = statefd >= 0 ? load_old(c, statefd, checksum) : NULL;
	v.applied_checksum = checksum;
	_cleanup_(state_done) struct state st = { 0 };
	int r = statefd < 0 ? -ENOENT : state_load(statefd, &st);
	if (r >= 0)
		v.st = &st;
	else if (r != -ENOENT)
		v.st_problem = r == -EINVAL ? "not what the executor writes" : strerror(-r);
	_cleanup_free_ char *data = NULL;
	size_t len;
	struct result res = { 0 };
	char res_why[128];
	r = statefd < 0 ? -ENOENT : fsx_read_at(statefd, STATE_RESULT, RESULT_MAX, &data, &len);
	if (r >= 0) {
		const char *err = NULL;
		if (result_parse(data, len, &res, &err) >= 0)
			v.res = &res;
		else {
			snprintf(res_why, sizeof(res_why), "%s", err ? err : "invalid");
			v.res_problem = res_why;
		}
	} else if (r != -ENOENT) {
		snprintf(res_why, sizeof(res_why), "%s", strerror(-r));
		v.res_problem = res_why;
	}
	struct desired d = { 0 };
	char d_why[160];
	{
		_cleanup_close_ int dfd = fsx_open_dir_at(c->rootfd, c->cfg->state_dir, 0, 0);
		_cleanup_free_ char *ddata = NULL;
		size_t dlen;
		r = dfd < 0 ? dfd : fsx_read_at(dfd, "desired.json", DESIRED_MAX, &ddata, &dlen);
		if (r >= 0) {
			const char *err = NULL;
			r = desired_parse(ddata, dlen, &d, &err);
			if (r >= 0)
				v.desired = &d;
			else
				snprintf(d_why, sizeof(d_why), "%s", err ? err : strerror(-r));
		} else
			snprintf(d_why, sizeof(d_why), "%s", strerror(-r));
		if (!v.desired && r != -ENOENT)
			v.desired_problem = d_why;
	}
	int ret = status_print(stdout, &v, time(NULL));
	if (v.st)
		revoke_print_status(c->cfg, old, &st, statefd, time(NULL));
	result_done(&res);
	if (v.desired)
		desired_done(&d);
	return ret ? APPLY_EXIT_FAILED : APPLY_EXIT_OK;
}
