/* The loop and the reconcile logic of node-agent; see agent.h.
 *
 * State flows one way: the Secret watch yields the last good (verified,
 * validated) OSC; the Node watch yields the restart request, the optional
 * key document, the Secret-name label and what the Node already carries;
 * reconcile() turns that into desired.json (written only when it changed)
 * and, once result.json reports success for the checksum we wrote, into one
 * merge patch of the Node.
 *
 * The duties keep their state in their own files (the Secret: oscsecret.c;
 * what the Node asks for: nodereq.c; the Node patch: annotate.c;
 * desired.json: handover.c; result.json: execdir.c; the other duties in
 * theirs); this file holds what ties them together, and the loop
 * (agent_loop()). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "agent.h"
#include "annotate.h"
#include "cleanup.h"
#include "config.h"
#include "desired.h"
#include "fsx.h"
#include "gnaconfig.h"
#include "handover.h"
#include "conditions.h"
#include "events.h"
#include "execdir.h"
#include "health.h"
#include "hostname.h"
#include "internalip.h"
#include "http.h"
#include "httpd.h"
#include "kube.h"
#include "lease.h"
#include "log.h"
#include "metrics.h"
#include "node.h"
#include "nodereq.h"
#include "inplace.h"
#include "nodeupdate.h"
#include "podsweep.h"
#include "notify.h"
#include "osc.h"
#include "oscsecret.h"
#include "credentials.h"
#include "result.h"
#include "rollout.h"
#include "serial.h"
#include "console.h"
#include "settings.h"
#include "filter.h"
#include "nodefind.h"
#include "stock.h"
#include "strx.h"
#include "secretref.h"
#include "mirrors.h"
#include "tokensync.h"
#include "watch.h"

#define EXEC_DIR_RETRY_MS 1000u
/* The local inputs (result.json, host keys) are re-read this often; see
 * tick_duties(). */
#define LOCAL_RESYNC_MS 300000u

struct agent {
	const struct agent_options *opts;
	struct config cfg;
	int root_fd;
	int state_fd;
	int inotify_fd;
	int signal_fd;
	struct http_client http;
	struct watch secret;
	struct watch node;
	struct creds creds;         /* client certificate through the CSR API */
	struct console console;     /* why the node cannot join, on the console (console.h) */
	struct tokensync tokens;    /* token sync (tokensync.c) */
	struct secretref secretref; /* files from a Secret (secretref.h) */
	struct mirrors mirrors;     /* registry mirrors' readinessProbe (mirrors.h) */
	struct nodefind nodefind;   /* the Node by the hostname label (nodefind.c) */
	struct hostname host;       /* the hostname, followed (hostname.c) */
	bool node_follows_host;     /* node.name is the hostname or was found by its label */
	bool new_credentials;       /* creds installed a certificate: re-read now */
	struct lease lease;         /* zeroed: off */
	struct httpd httpd;
	struct metrics metrics;
	struct rollout rollout;
	struct serial serial;       /* zeroed: off */
	struct events events;       /* zeroed: off */
	struct conditions conditions; /* SystemdUnitsReady (conditions.h); zeroed: off */
	struct health health;       /* zeroed: off */
	struct internalip internalip; /* the lost InternalIP (internalip.h); zeroed: off */
	struct nodeupdate update;   /* in-place updates: handshake and result (nodeupdate.h) */
	struct podsweep sweep;      /* the Pods left on the Node after one (podsweep.h) */
	/* The last good OSC from the Secret (oscsecret.h). */
	struct oscsecret good;
	/* Stock user data and where each setting came from (stock.h); the
	 * gardener-node-agent configuration followed last (gna_followed,
	 * applied again after a SIGHUP reload). */
	struct stock stock;
	struct gnaconfig gna_followed;
	bool gna_followed_set;
	bool reconnect;             /* server or CA changed: set the client up again */

	/* The Node as last seen. */
	bool node_seen;
	bool node_exists;
	struct annotate annotate;   /* its fields we patch, and the patch (annotate.h) */
	/* What it asks for: key document, restart request (nodereq.h). */
	struct nodereq req;

	/* desired.json as last written (handover.h); settled: written (or
	 * found unchanged) by this run from the OSC it received. */
	struct handover handover;
	bool desired_settled;

	/* The executor's state directory and result.json as last read (execdir.h). */
	struct execdir exec;

	char *host_keys;

	/* sd_notify */
	struct notify notify;
	bool ready;
	uint64_t last_contact_ms;
	char last_error[256];
	char last_status[512];
	uint64_t watchdog_ms;
	uint64_t next_watchdog;

	char *switch_secret;        /* Secret to switch to, from the Node label */

	uint64_t next_local_resync;

	bool quit;
	bool reload;
	bool dirty;
};

/* ---- status ------------------------------------------------------------- */

static void set_error(struct agent *a, const char *fmt, ...) _printf_(2, 3);
static void set_error(struct agent *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->last_error, sizeof(a->last_error), fmt, ap);
	va_end(ap);
}

static void notify_status(struct agent *a, uint64_t now)
{
	char status[512];
	char age[48] = "no API contact yet";
	/* Age is coarse on purpose: STATUS changes when something happened,
	 * not every second. */
	if (a->last_contact_ms && now - a->last_contact_ms < 60000u)
		snprintf(age, sizeof(age), "API contact <1m ago");
	else if (a->last_contact_ms)
		snprintf(age, sizeof(age), "API contact %llum ago",
			 (unsigned long long)((now - a->last_contact_ms) / 60000u));
	char held[160];
	rollout_describe(&a->rollout, now, held, sizeof(held));
	snprintf(status, sizeof(status), "STATUS=applied %.12s (generation %llu); %s%s%s%s",
		 a->exec.valid && a->exec.result.success ? a->exec.result.checksum : "none",
		 (unsigned long long)a->handover.generation, age, held, a->last_error[0] ? "; last error: " : "",
		 a->last_error);
	/* Server-provided text ends up in last_error: one line only, or it
	 * could add assignments of its own to the notification. */
	for (char *p = status; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	if (strcmp(status, a->last_status) == 0)
		return;
	snprintf(a->last_status, sizeof(a->last_status), "%s", status);
	notify_send(&a->notify, status);
}

/* ---- desired state -------------------------------------------------------- */

/* The desired state the agent hands over for an OSC, with the buffers its
 * fields point into. */
struct agent_doc {
	struct desired d;
	struct desired_token *tokens;
	struct desired_secret_file *secret_files;
	struct desired_ready_registry *ready_registries;
	char kb_ca[PATH_MAX];
	char kb_token[PATH_MAX];
};

/* Fills doc for osc (NUL-terminated) with the agent's key document, restart
 * request, tokens and the kubelet's bootstrap; release with doc_done(). */
static int doc_fill(struct agent *a, struct agent_doc *doc, char *osc, size_t osc_len, const char *checksum)
{
	doc->d = (struct desired){
		.osc = osc,
		.osc_len = osc_len,
		.key_document = a->cfg.keys_from_node_annotation ? a->req.key_document : NULL,
		.ssh_access = true,
		.restart_id = a->req.restart_units ? a->req.restart_id : NULL,
		.restart_units = a->req.restart_units,
		/* In-place updates: the drain handshake (nodeupdate.h); absent
		 * means not ready, so a node without one writes what it did. */
		.inplace_present = nodeupdate_ready(&a->update),
		.inplace_ready = nodeupdate_ready(&a->update),
	};
	doc->tokens = NULL;
	snprintf(doc->d.checksum, sizeof(doc->d.checksum), "%s", checksum);
	if (tokensync_desired(&a->tokens, &doc->tokens, &doc->d.n_tokens) < 0)
		return -ENOMEM;
	doc->d.tokens = doc->tokens;
	doc->secret_files = NULL;
	if (secretref_desired(&a->secretref, osc, osc_len, checksum, a->cfg.state_dir, a->cfg.node_name,
			      &doc->secret_files, &doc->d.n_secret_files) < 0) {
		free(doc->tokens);
		return -ENOMEM;
	}
	doc->d.secret_files = doc->secret_files;
	doc->ready_registries = NULL;
	if (mirrors_desired(&a->mirrors, osc, osc_len, a->cfg.state_dir, a->cfg.node_name, &doc->ready_registries,
			    &doc->d.n_ready_registries) < 0) {
		free(doc->tokens);
		free(doc->secret_files);
		return -ENOMEM;
	}
	doc->d.ready_registries = doc->ready_registries;
	/* The kubelet's bootstrap kubeconfig, until the Node is registered. */
	if (stock_kubelet_paths(&a->cfg, doc->kb_ca, sizeof(doc->kb_ca), doc->kb_token, sizeof(doc->kb_token))) {
		doc->d.kb_server = a->cfg.server;
		doc->d.kb_ca_file = doc->kb_ca;
		doc->d.kb_token_file = doc->kb_token;
		doc->d.kb_node_registered = a->node_exists;
	}
	return 0;
}

static void doc_done(struct agent_doc *doc)
{
	free(doc->tokens);
	doc->tokens = NULL;
	free(doc->secret_files);
	doc->secret_files = NULL;
	free(doc->ready_registries);
	doc->ready_registries = NULL;
}

/* The desired state for osc (NUL-terminated), generation 0, as written. */
static int format_desired(struct agent *a, char *osc, size_t osc_len, const char *checksum, char **ret)
{
	struct agent_doc doc;
	int r = doc_fill(a, &doc, osc, osc_len, checksum);
	if (r >= 0)
		r = desired_format(&doc.d, ret, NULL);
	doc_done(&doc);
	return r;
}

/* Writes desired.json when its content (all but the generation) changed
 * (handover.h). */
static int write_desired(struct agent *a, uint64_t now)
{
	if (!a->good.osc)
		return 0;
	/* The Secrets of a new OSC's secretRef files are read first, rather
	 * than failing those files for a moment (secretref.h). */
	if (secretref_pending(&a->secretref) && strcmp(a->secretref.checksum, a->good.checksum) == 0)
		return 0;
	/* A change that would restart units may wait for the Node's
	 * reconciliation delay (rollout.h); meanwhile the OSC in force is
	 * written with whatever else changed (a restart request, keys). */
	char *osc = a->good.osc;
	size_t osc_len = a->good.osc_len;
	const char *checksum = a->good.checksum;
	if (!a->opts->once && !rollout_admit(&a->rollout, a->handover.osc, a->handover.osc_len, a->good.osc,
					     a->good.osc_len, a->good.checksum, a->cfg.state_dir, now)) {
		osc = a->handover.osc;
		osc_len = a->handover.osc_len;
		checksum = a->handover.checksum;
	}
	struct agent_doc doc;
	char why[sizeof(a->last_error)];
	int r = doc_fill(a, &doc, osc, osc_len, checksum);
	if (r < 0) {
		set_error(a, "cannot format the desired state: %s", strerror(-r));
		return log_error_errno(r, "cannot format the desired state");
	}
	r = handover_write(&a->handover, a->state_fd, a->cfg.state_dir, &doc.d, now, why, sizeof(why));
	doc_done(&doc);
	if (r < 0)
		set_error(a, "%s", why);
	else
		a->desired_settled = true;
	if (r > 0)
		metrics_set_desired(&a->metrics, a->handover.generation, a->handover.checksum);
	return r;
}

/* ---- gardener-node-agent's configuration from the OSC ------------------- */

/* Applies g to the settings stock data provides (stock_follow()); logs
 * what changed once, or why nothing did. */
static void apply_gna_config(struct agent *a, const struct gnaconfig *g, const char *checksum)
{
	char what[1024], state_path[PATH_MAX];
	snprintf(state_path, sizeof(state_path), "%s%s",
		 a->opts->root && strcmp(a->opts->root, "/") != 0 ? a->opts->root : "", a->cfg.state_dir);
	int r = stock_follow(&a->stock, &a->cfg, g, a->state_fd, state_path, what, sizeof(what));
	if (r < 0) {
		log_error("gardener-node-agent's configuration in the OSC %.12s not followed: %s; keeping the last "
			  "good settings",
			  checksum, r == -ENOMEM ? "out of memory" : what);
		return;
	}
	if (r == 0)
		return;
	log_notice("gardener-node-agent's configuration in the OSC %.12s: now %s", checksum, what);
	if (r & STOCK_NEW_CONNECTION)
		a->reconnect = true; /* the watches start again with the new Secret name too */
	else if (r & STOCK_NEW_SECRET) {
		free(a->switch_secret);
		a->switch_secret = strdup(a->cfg.secret_name);
	}
}

/* The OSC checksum was applied: its gardener-node-agent configuration, when
 * it brought one, is followed now (as gardener-node-agent restarts itself
 * once its new config file is on disk). */
static void follow_gna_config(struct agent *a, const char *checksum)
{
	struct gnaconfig g;
	if (!oscsecret_take_gna(&a->good, checksum, &g))
		return;
	apply_gna_config(a, &g, checksum);
	gnaconfig_done(&a->gna_followed);
	a->gna_followed = g;
	a->gna_followed_set = true;
}

/* ---- result ---------------------------------------------------------------- */

static void read_result(struct agent *a)
{
	int seen = execdir_read(&a->exec, a->cfg.exec_state_dir);
	if (seen == 0)
		return;
	const struct result *res = &a->exec.result;
	a->dirty = true;
	pickup_result(&a->handover.pickup, res->generation);
	metrics_set_result(&a->metrics, res);
	conditions_set_result(&a->conditions, &res->units_ready);
	health_result(&a->health, res->restart_id);
	if (seen == 1)
		return; /* reported before */
	/* An in-place update that waits for the handshake or runs is no
	 * failure (nodeupdate.c logs it); a failed one is. */
	if (!res->success && res->inplace.present &&
	    (res->inplace.state == INPLACE_STATE_WAITING || res->inplace.state == INPLACE_STATE_RUNNING))
		return;
	char cs[80], gen[48];
	snprintf(cs, sizeof(cs), "CHECKSUM=%s", res->checksum);
	snprintf(gen, sizeof(gen), "GENERATION=%llu", (unsigned long long)res->generation);
	if (res->success) {
		log_fields(LOG_INFO, LOG_FIELDS(cs, gen), "executor applied checksum %.12s (generation %llu)",
			   res->checksum, (unsigned long long)res->generation);
		events_emit(&a->events, false, "OSCApplied",
			    "Operating system config %.12s (generation %llu) has been applied successfully%s",
			    res->checksum, (unsigned long long)res->generation,
			    res->changed_units && res->changed_units[0] ? "; units changed" : "");
		events_units(&a->events, res);
		if (strcmp(res->checksum, a->handover.checksum) == 0) {
			a->last_error[0] = '\0';
			follow_gna_config(a, res->checksum);
		}
	} else {
		char step[96];
		snprintf(step, sizeof(step), "FAILED_STEP=%s", res->failed_step ? res->failed_step : "?");
		log_fields(LOG_ERR, LOG_FIELDS(cs, gen, step),
			   "executor failed to apply checksum %.12s (generation %llu) at step %s: %s; Node not annotated",
			   res->checksum, (unsigned long long)res->generation, res->failed_step ? res->failed_step : "?",
			   res->error ? res->error : "no reason given");
		set_error(a, "apply of %.12s failed at %s", res->checksum, res->failed_step ? res->failed_step : "?");
		events_emit(&a->events, true, "OSCApplyFailed", "Applying operating system config %.12s failed at step %s: %s",
			    res->checksum, res->failed_step ? res->failed_step : "?", res->error ? res->error : "no reason given");
		events_units(&a->events, res);
	}
}

/* True when result.json reports on the desired state we wrote last. */
static bool result_current(const struct agent *a)
{
	return a->exec.valid && a->handover.checksum[0] &&
	       strcmp(a->exec.result.checksum, a->handover.checksum) == 0 &&
	       a->exec.result.generation >= a->handover.generation;
}

/* True when result.json says the executor applied what we wrote last. */
static bool applied_ok(const struct agent *a)
{
	return result_current(a) && a->exec.result.success;
}

/* The in-place update as result.json reports it, for the desired state
 * written last or not (nodeupdate.h); at every reconcile, as what is
 * "current" changes with each desired.json write. */
static void take_update_report(struct agent *a)
{
	struct nodeupdate_report r;
	nodeupdate_report_from(a->exec.valid ? &a->exec.result : NULL, result_current(a), &r);
	nodeupdate_result(&a->update, &r);
}

static bool applied_failed(const struct agent *a)
{
	return result_current(a) && !a->exec.result.success;
}

/* ---- Secret --------------------------------------------------------------- */

/* oscsecret_env.check: the agent can write its desired state with this OSC. */
static int check_desired(void *userdata, char *osc, size_t osc_len, const char *checksum)
{
	_cleanup_free_ char *trial = NULL;
	return format_desired(userdata, osc, osc_len, checksum, &trial);
}

static void on_secret(struct agent *a, enum kube_event_type type, const struct kube_secret *s)
{
	if (type == KUBE_EVENT_DELETED) {
		char sf[320];
		snprintf(sf, sizeof(sf), "SECRET=%s/%s", a->cfg.secret_namespace, a->secret.name);
		log_fields(LOG_WARNING, LOG_FIELDS(sf), "Secret %s was deleted; keeping the last good state",
			   a->secret.name);
		set_error(a, "Secret %s deleted", a->secret.name);
		return;
	}
	/* Serial rollouts follow the Secret's annotation (serial.h). */
	serial_set_secret(&a->serial, a->cfg.secret_namespace, a->secret.name, s->uid, s->serial);
	if (a->rollout.serial != s->serial) {
		rollout_set_serial(&a->rollout, s->serial);
		a->dirty = true;
	}
	const struct oscsecret_env env = {
		.ns = a->cfg.secret_namespace,
		.name = a->secret.name,
		.state_dir = a->cfg.state_dir,
		.health = &a->health,
		.events = &a->events,
		.tokens = &a->tokens,
		.check = check_desired,
		.userdata = a,
		.error = a->last_error,
		.errlen = sizeof(a->last_error),
	};
	if (oscsecret_take(&a->good, s, &env) > 0) {
		a->dirty = true;
		int r = secretref_follow(&a->secretref, a->good.osc, a->good.osc_len, a->good.checksum,
					 a->cfg.state_dir, a->cfg.node_name);
		if (r < 0)
			log_error_errno(r, "cannot follow the files from a Secret of OSC %.12s", a->good.checksum);
		r = mirrors_follow(&a->mirrors, a->good.osc, a->good.osc_len, a->cfg.state_dir, a->cfg.node_name,
				   a->opts->root);
		if (r < 0)
			log_error_errno(r, "cannot follow the registry mirrors of OSC %.12s", a->good.checksum);
	} else
		secretref_refresh(&a->secretref); /* delivered again: the Secrets are read again */
}

/* ---- Node ------------------------------------------------------------------ */

static void on_node(struct agent *a, enum kube_event_type type, const struct kube_node *n)
{
	char nf[300];
	snprintf(nf, sizeof(nf), "NODE=%s", a->cfg.node_name);
	a->node_seen = true;
	lease_set_node(&a->lease, type == KUBE_EVENT_DELETED ? NULL : n->uid);
	events_set_node(&a->events, type == KUBE_EVENT_DELETED ? NULL : n->uid);
	conditions_set_node(&a->conditions, type == KUBE_EVENT_DELETED ? NULL : n);
	if (nodeupdate_node(&a->update, type == KUBE_EVENT_DELETED ? NULL : n))
		a->dirty = true;
	serial_set_node(&a->serial, type != KUBE_EVENT_DELETED, n->secret_name_label);
	if (type == KUBE_EVENT_DELETED) {
		log_fields(LOG_WARNING, LOG_FIELDS(nf), "Node %s was deleted", a->cfg.node_name);
		a->node_exists = false;
		return;
	}
	a->node_exists = true;
	rollout_set_delay(&a->rollout, n->reconciliation_delay);
	health_node_ready(&a->health, n->ready, now_ms());
	internalip_node(&a->internalip, n, now_ms());
	if (annotate_record(&a->annotate, n) < 0)
		return;
	a->dirty = true;

	nodereq_update(&a->req, n, a->cfg.keys_from_node_annotation, nf);
	a->annotate.has_restart = n->restart_services != NULL;

	/* The Secret to follow. */
	if (a->cfg.follow_secret_name_label && n->secret_name_label &&
	    strcmp(n->secret_name_label, a->secret.name) != 0 && !strx_eq(n->secret_name_label, a->switch_secret)) {
		if (!kube_name_is_valid(n->secret_name_label)) {
			log_fields(LOG_ERR, LOG_FIELDS(nf), "label %s=\"%.64s\" is not a valid Secret name; ignored",
				   KUBE_LABEL_SECRET_NAME, n->secret_name_label);
		} else {
			log_fields(LOG_NOTICE, LOG_FIELDS(nf), "label %s switches the OSC Secret from %s to %s",
				   KUBE_LABEL_SECRET_NAME, a->secret.name, n->secret_name_label);
			/* Inside a transfer callback libcurl forbids touching other
			 * transfers: the loop switches after the dispatch. */
			strx_replace(&a->switch_secret, n->secret_name_label);
		}
	}
}

/* ---- watch callbacks -------------------------------------------------------- */

static void cb_object(struct watch *w, enum kube_event_type type, const struct kube_secret *s,
		      const struct kube_node *n, void *userdata)
{
	struct agent *a = userdata;
	a->last_contact_ms = now_ms();
	if (s)
		on_secret(a, type, s);
	else if (n)
		on_node(a, type, n);
}

static void cb_missing(struct watch *w, void *userdata)
{
	struct agent *a = userdata;
	if (w == &a->node) {
		a->node_seen = true;
		a->node_exists = false;
		/* reconcile() waits for the Node's first answer: a 404 is
		 * one (without this, a Secret that came first waited for the
		 * next unrelated wake-up). */
		a->dirty = true;
		lease_set_node(&a->lease, NULL);
		conditions_set_node(&a->conditions, NULL);
		serial_set_node(&a->serial, false, NULL);
	} else {
		set_error(a, "Secret %s not found", w->name);
	}
}

static void cb_error(struct watch *w, const char *why, void *userdata)
{
	struct agent *a = userdata;
	set_error(a, "%s", why);
}

static void cb_contact(struct watch *w, void *userdata)
{
	struct agent *a = userdata;
	a->last_contact_ms = now_ms();
}

static const struct watch_ops watch_ops = {
	.on_object = cb_object,
	.on_missing = cb_missing,
	.on_error = cb_error,
	.on_contact = cb_contact,
};

/* ---- Node patch ----------------------------------------------------------- */

/* What the Node should show now (annotate.h). */
static void node_want(void *userdata, struct annotate_want *w)
{
	const struct agent *a = userdata;
	struct nodeupdate_want u;
	nodeupdate_want(&a->update, &u);
	*w = (struct annotate_want){
		/* An in-place update not over holds the checksum (nodeupdate.h). */
		.applied = applied_ok(a) && !u.hold_checksum,
		.checksum = a->handover.checksum,
		.k8s_version = a->good.k8s_version ? a->good.k8s_version : a->cfg.kubernetes_version,
		/* As gardener-node-agent sets it on every reconcile (gardener/
		 * gardener pkg/nodeagent/controller/operatingsystemconfig/
		 * reconciler.go, "Setting node labels on Node object"): with
		 * stock data, or with Gardener's node-agent identity from the
		 * CSR API (node.machineName in node-agent.conf), which
		 * Gardener's authorizer lets label the Node. Not with a token
		 * or static files: a node identity (system:node:) may not set
		 * node-role.kubernetes.io/ labels (NodeRestriction), and the
		 * whole patch would fail. */
		.worker_role = a->cfg.gna_dir != NULL || a->creds.state != CREDS_OFF,
		.zone = a->cfg.zone,
		.host_keys = a->host_keys,
		.restart_done = a->exec.valid && a->req.restart_units &&
				nodereq_restart_done(&a->req, a->exec.result.restart_id) && a->req.restart_value,
		.restart_invalid = a->req.restart_invalid,
		.update_result = u.update_result,
		.failed_reason = u.failed_reason,
		.failed_reason_remove = u.failed_reason_remove,
		.updating_os = u.updating_os,
		.updating_os_remove = u.updating_os_remove,
	};
}

static void on_patch_done(void *userdata, uint64_t now, bool contact, const char *error)
{
	struct agent *a = userdata;
	if (contact)
		a->last_contact_ms = now;
	if (error)
		set_error(a, "%s", error);
	a->dirty = true;
}

static const struct annotate_ops annotate_ops = {
	.want = node_want,
	.done = on_patch_done,
};

/* Starts the merge patch the Node needs, if any (annotate_start()). */
static int maybe_patch(struct agent *a, uint64_t now)
{
	if (!a->node_exists)
		return 0;
	struct annotate_want w;
	node_want(a, &w);
	return annotate_start(&a->annotate, &a->http, &w, now);
}

/* ---- reconcile -------------------------------------------------------------- */

/* A repair the health duty decided becomes the desired state's restart
 * request, the one the Node annotation fills, once the request in force
 * (the annotation's or an earlier repair's) has been carried out. */
static void take_health_repair(struct agent *a)
{
	if (!a->good.osc ||
	    (a->req.restart_units && !(a->exec.valid && nodereq_restart_done(&a->req, a->exec.result.restart_id))))
		return;
	char id[HEALTH_ID_MAX], bad[64];
	char **units = NULL;
	const char *unit = health_take_repair(&a->health, id);
	if (!unit || node_parse_restart(unit, &units, bad, sizeof(bad)) < 0)
		return;
	nodereq_set_restart(&a->req, units, id);
	a->dirty = true;
}

/* The kubelet's /healthz as the health duty found it, for the executor's
 * in-place update (HEALTH_KUBELET_VERDICT_FILE; 0644 in the agent's own
 * state directory, which only root reads besides it). */
static void write_kubelet_verdict(void *userdata, bool ok, const char *why)
{
	struct agent *a = userdata;
	struct ctrdhealth v = { .healthy = ok, .checked_at = time(NULL) };
	if (ok)
		snprintf(v.server_version, sizeof(v.server_version), "ok");
	else
		snprintf(v.error, sizeof(v.error), "%.*s", CTRDHEALTH_ERROR_MAX, why);
	for (char *c = v.error; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = a->state_fd < 0 ? -EBADF : ctrdhealth_format(&v, &text, &len);
	if (r >= 0)
		r = fsx_write_atomic_at(a->state_fd, HEALTH_KUBELET_VERDICT_FILE, text, len, 0644, FSX_UID_KEEP,
					FSX_GID_KEEP, 0);
	if (r < 0)
		log_debug("cannot write %s/%s: %s", a->cfg.state_dir, HEALTH_KUBELET_VERDICT_FILE, strerror(-r));
}

/* A new verdict of cloud-config-exec's containerd probe (its socket is
 * root's; ctrdprobe.h) goes to the health duty. */
static void take_probe_verdict(struct agent *a, uint64_t now)
{
	struct ctrdhealth v;
	if (!a->exec.probe_written || execdir_read_probe(&a->exec, a->cfg.exec_state_dir, &v) < 0)
		return;
	(void)health_socket_result(&a->health, v.healthy, v.error, (long long)v.checked_at, (long long)time(NULL),
				   now);
}

static void reconcile(struct agent *a, uint64_t now)
{
	a->dirty = false;
	/* The Node may carry a restart request or the key document: wait for
	 * its first answer (or failure) rather than write one desired state
	 * without them and another a moment later. A Node that cannot be read
	 * does not hold up the OSC, unless the keys come from it. */
	if (a->node.synced || a->node_seen || (!a->cfg.keys_from_node_annotation && a->node.failures > 0))
		write_desired(a, now);
	take_update_report(a);
	const char *why;
	bool go = nodeupdate_sweep_go(&a->update, podsweep_running(&a->sweep), a->desired_settled, &why);
	podsweep_want(&a->sweep, go, why, now);
	/* A rotation it asks for is started by the next pass (take_rotations()). */
	if (a->update.resync_tokens || a->update.renew_cert || a->update.recheck)
		a->dirty = true;
	if (!a->opts->once || applied_ok(a))
		maybe_patch(a, now);
}

/* ---- files, inotify, signals ------------------------------------------------- */

static int open_exec_dir(struct agent *a)
{
	return execdir_open(&a->exec, a->root_fd, a->inotify_fd, a->cfg.exec_state_dir);
}

static void handle_inotify(struct agent *a)
{
	if (execdir_inotify(&a->exec, a->inotify_fd, a->cfg.exec_state_dir))
		read_result(a);
}

static void handle_signals(struct agent *a)
{
	struct signalfd_siginfo si;
	while (read(a->signal_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP)
			a->reload = true;
		else
			a->quit = true;
	}
}

static int open_state(struct agent *a)
{
	a->state_fd = fsx_open_dir_at(a->root_fd, a->cfg.state_dir, FSX_MKDIR, 0700);
	if (a->state_fd < 0)
		return log_error_errno(a->state_fd, "cannot open the state directory %s", a->cfg.state_dir);
	handover_remove_temporaries(a->state_fd, a->cfg.state_dir);
	int r = open_exec_dir(a);
	if (r < 0)
		log_warning_errno(r, "cannot watch %s (the executor's state directory) yet", a->cfg.exec_state_dir);
	return 0;
}

static void refresh_host_keys(struct agent *a)
{
	char *keys = NULL;
	unsigned skipped = 0;
	if (node_read_host_keys(a->root_fd, a->cfg.rsa_min_bits, &keys, &skipped) < 0)
		return;
	if (skipped)
		log_warning("%u SSH host public key file(s) in /etc/ssh unreadable or invalid; not published", skipped);
	if (!strx_eq(keys, a->host_keys)) {
		log_info("SSH host keys: %s", keys ? "read" : "none found");
		free(a->host_keys);
		a->host_keys = keys;
		a->dirty = true;
	} else
		free(keys);
}

/* ---- lifecycle ----------------------------------------------------------------- */

static void on_new_credentials(void *userdata)
{
	struct agent *a = userdata;
	a->new_credentials = true;
	if (nodeupdate_cert_renewed(&a->update))
		a->dirty = true;
}

/* A round of deleting the Pods left on the Node ended (podsweep.h). */
static void on_sweep_round(void *userdata, bool ok, const char *why)
{
	struct agent *a = userdata;
	if (ok)
		nodeupdate_pods_deleted(&a->update);
	else
		set_error(a, "%s", why);
	a->dirty = true;
}

/* The rotations an in-place update asks the agent for (nodeupdate.h). */
static void take_rotations(struct agent *a, uint64_t now)
{
	if (a->update.recheck) {
		a->update.recheck = false;
		handover_rewrite(a->state_fd, a->cfg.state_dir);
	}
	if (a->update.resync_tokens) {
		a->update.resync_tokens = false;
		tokensync_resync_now(&a->tokens);
	}
	if (a->update.renew_cert) {
		a->update.renew_cert = false;
		/* A request under way ends in on_new_credentials() too; with
		 * no certificate of the agent's own (a token, static files),
		 * there is nothing to rotate here. */
		if (!creds_renew_now(&a->creds, now) && (a->creds.state == CREDS_OFF || (!a->creds.have_cert && a->creds.state == CREDS_IDLE))) {
			log_notice("certificate authorities rotation: node-agent holds no client certificate of its "
				   "own; nothing to renew");
			nodeupdate_cert_renewed(&a->update);
		}
		a->dirty = true;
	}
}

/* Every API request: the metrics, and a failed join's reason for the
 * console. */
static void observe_request(const struct http_request *req, bool done, void *userdata)
{
	struct agent *a = userdata;
	metrics_observe(req, done, &a->metrics);
	if (done)
		console_request(&a->console, req, creds_usable(&a->creds), a->cfg.server);
}

static int start_watches(struct agent *a)
{
	int r = http_client_init(&a->http, &a->cfg);
	if (r < 0)
		return log_error_errno(r, "cannot initialise libcurl");
	r = creds_init(&a->creds, &a->http, &a->cfg, a->state_fd, on_new_credentials, a);
	if (r < 0)
		return log_error_errno(r, "cannot set up the client certificate");
	tokensync_attach(&a->tokens, &a->http);
	secretref_attach(&a->secretref, &a->http);
	mirrors_attach(&a->mirrors, &a->http);
	a->http.observe = observe_request;
	a->http.observe_data = a;
	r = watch_init(&a->secret, &a->http, KUBE_KIND_SECRET, a->cfg.secret_namespace, a->cfg.secret_name,
		       a->opts->once, &watch_ops, a);
	if (r >= 0)
		r = watch_init(&a->node, &a->http, KUBE_KIND_NODE, NULL, a->cfg.node_name, a->opts->once, &watch_ops,
			       a);
	if (r < 0)
		return log_error_errno(r, "cannot set up the watches");
	if (!a->opts->once) {
		/* The label holds the hostname as the kubelet reports it:
		 * lowercased (gardener-node-agent's too); the hostname duty
		 * keeps it current. */
		if (nodefind_init(&a->nodefind, &a->http, a->host.name, a->cfg.node_name) < 0)
			return log_error_errno(-ENOMEM, "cannot set up the Node search");
	}
	if (a->cfg.lease_enabled && !a->opts->once)
		(void)lease_init(&a->lease, &a->http, a->cfg.node_name); /* logged; runs without */
	if (!a->opts->once)
		serial_init(&a->serial, &a->http, a->cfg.node_name);
	if (a->cfg.events_enabled && !a->opts->once && events_init(&a->events, &a->http, a->cfg.node_name) < 0)
		log_warning("cannot set up Node Events; running without");
	if (!a->opts->once && conditions_init(&a->conditions, &a->http, a->cfg.node_name) < 0)
		log_warning("cannot set up the SystemdUnitsReady condition; running without");
	conditions_set_result(&a->conditions, a->exec.valid ? &a->exec.result.units_ready : NULL);
	if (!a->opts->once) /* a listener that cannot open is logged and left off */
		httpd_init(&a->httpd, a->cfg.server_bind_address, a->cfg.server_health_port,
			   a->cfg.server_metrics_port, metrics_handle, &a->metrics);
	if (!a->opts->once) {
		a->health.kubelet_verdict = write_kubelet_verdict;
		a->health.verdict_userdata = a;
		health_init(&a->health, &a->cfg, &a->http, &a->events);
	}
	internalip_init(&a->internalip, a->cfg.health_enabled && !a->opts->once, a->cfg.health_interval_ms, &a->http,
			&a->events, &a->health, (const char *const *)&a->cfg.node_name);
	podsweep_init(&a->sweep, &a->http, (const char *const *)&a->cfg.node_name, on_sweep_round, a);
	a->metrics.health = &a->health;
	a->metrics.lease = a->cfg.lease_enabled ? &a->lease : NULL;
	a->metrics.httpd = &a->httpd;
	a->metrics.cert_file = a->cfg.client_cert_file;
	return 0;
}

static void stop_watches(struct agent *a)
{
	annotate_cancel(&a->annotate);
	watch_done(&a->secret);
	watch_done(&a->node);
	nodefind_done(&a->nodefind);
	creds_done(&a->creds);
	tokensync_attach(&a->tokens, NULL);
	secretref_attach(&a->secretref, NULL);
	mirrors_attach(&a->mirrors, NULL);
	lease_done(&a->lease);
	serial_done(&a->serial);
	events_done(&a->events);
	conditions_done(&a->conditions);
	health_done(&a->health);
	internalip_done(&a->internalip);
	podsweep_done(&a->sweep);
	httpd_done(&a->httpd);
	http_client_done(&a->http);
}

static void reload_config(struct agent *a)
{
	struct config c;
	struct stock st;
	char err[1024];
	a->reload = false;
	if (settings_load(a->opts->config_path, false, &c, &st, err, sizeof(err)) < 0) {
		log_error("configuration not reloaded, keeping the old one: %s", err);
		return;
	}
	log_notice("reloading configuration from %s", a->opts->config_path);
	bool new_state_dir = strcmp(a->cfg.state_dir, c.state_dir) != 0;
	stop_watches(a);
	execdir_close(&a->exec, a->inotify_fd);
	if (a->state_fd >= 0)
		close(a->state_fd);
	a->state_fd = -1;
	config_done(&a->cfg);
	a->cfg = c;
	a->node_follows_host = strcmp(a->cfg.node_name, a->host.name) == 0;
	stock_done(&a->stock);
	a->stock = st;
	if (open_state(a) < 0) {
		a->quit = true;
		return;
	}
	/* The stock copy is from the service's start: what the OSC brought
	 * since still holds. */
	if (a->gna_followed_set)
		apply_gna_config(a, &a->gna_followed, a->good.checksum);
	a->reconnect = false;
	if (start_watches(a) < 0) {
		a->quit = true;
		return;
	}
	if (new_state_dir) {
		/* What was written went to the old directory. */
		handover_forget(&a->handover);
		handover_load(&a->handover, a->state_fd, a->cfg.state_dir, a->req.restart_id,
			      sizeof(a->req.restart_id), &a->req.restart_units, now_ms());
		metrics_restore(&a->metrics, a->handover.generation, a->handover.checksum);
	}
	read_result(a);
	refresh_host_keys(a);
	a->dirty = true;
}

static void agent_free(struct agent *a)
{
	stop_watches(a);
	execdir_done(&a->exec, a->inotify_fd);
	if (a->inotify_fd >= 0)
		close(a->inotify_fd);
	if (a->signal_fd >= 0)
		close(a->signal_fd);
	hostname_done(&a->host);
	if (a->state_fd >= 0)
		close(a->state_fd);
	if (a->root_fd >= 0)
		close(a->root_fd);
	notify_close(&a->notify);
	oscsecret_done(&a->good);
	stock_done(&a->stock);
	gnaconfig_done(&a->gna_followed);
	tokensync_done(&a->tokens);
	secretref_done(&a->secretref);
	mirrors_done(&a->mirrors);
	annotate_done(&a->annotate);
	nodereq_done(&a->req);
	handover_done(&a->handover);
	free(a->host_keys);
	free(a->switch_secret);
	config_done(&a->cfg);
}

static uint64_t min_u64(uint64_t x, uint64_t y)
{
	return x < y ? x : y;
}

/* --once: what is left to wait for, and the exit code when nothing is. */
static int once_step(struct agent *a, uint64_t now, uint64_t deadline, bool *done)
{
	*done = true;
	if (a->secret.state == WATCH_FAILED || a->node.state == WATCH_FAILED)
		return AGENT_EXIT_API;
	if (a->secret.state != WATCH_STOPPED || a->node.state != WATCH_STOPPED) {
		*done = false;
		return 0;
	}
	if (!a->good.osc) {
		log_error("no valid OSC from Secret %s/%s: nothing applied", a->cfg.secret_namespace, a->secret.name);
		return AGENT_EXIT_APPLY;
	}
	/* While the write fails, the executor's result is about an older
	 * version: the retries go on until the deadline. */
	if (a->handover.failures) {
		if (now >= deadline) {
			log_error("desired state for checksum %.12s not written within %u ms: nothing applied",
				  a->good.checksum, a->cfg.apply_timeout_ms);
			return AGENT_EXIT_APPLY;
		}
		*done = false;
		return 0;
	}
	if (applied_failed(a))
		return AGENT_EXIT_APPLY;
	if (!applied_ok(a)) {
		if (now >= deadline) {
			log_error("no result for checksum %.12s (generation %llu) from the executor within %u ms",
				  a->handover.checksum, (unsigned long long)a->handover.generation, a->cfg.apply_timeout_ms);
			return AGENT_EXIT_APPLY;
		}
		*done = false;
		return 0;
	}
	if (!a->node_exists) {
		log_warning("Node %s does not exist: applied, but not annotated", a->cfg.node_name);
		return AGENT_EXIT_OK;
	}
	if (a->annotate.req) {
		*done = false;
		return 0;
	}
	if (a->annotate.failed_once)
		return AGENT_EXIT_API;
	if (maybe_patch(a, now) > 0) {
		*done = false;
		return 0;
	}
	return AGENT_EXIT_OK;
}

/* Is the retry at *at (0: none) due? Then it is cleared; otherwise next is
 * lowered to it. */
static bool retry_due(uint64_t *at, uint64_t now, uint64_t *next)
{
	if (*at == 0)
		return false;
	if (*at > now) {
		*next = min_u64(*next, *at);
		return false;
	}
	*at = 0;
	return true;
}

/* The descriptors the loop waits on (signals, inotify), the root, and the
 * service manager's socket. Logs what fails. */
static int open_descriptors(struct agent *a)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	a->signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	a->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	a->root_fd = fsx_open_root(a->opts->root);
	if (!a->opts->once) {
		int r = notify_open(&a->notify);
		if (r < 0)
			log_warning_errno(r, "cannot use $NOTIFY_SOCKET; not telling the service manager anything");
	}
	if (a->signal_fd < 0 || a->inotify_fd < 0 || a->root_fd < 0)
		return log_error_errno(negerrno(), "cannot set up signal, inotify or root descriptors");
	if (!a->opts->once) {
		(void)hostname_init(&a->host, true, now_ms()); /* logged; its timer retries */
		a->node_follows_host = strcmp(a->cfg.node_name, a->host.name) == 0;
	}
	return 0;
}

/* Everything up to the first pass of the loop, in this order: descriptors,
 * the state directory and what it holds from an earlier run, the local
 * inputs, the API client and every duty, the watchdog, and last the
 * seccomp filter. Logs what fails. */
static int agent_start(struct agent *a)
{
	const struct agent_options *o = a->opts;
	int r = open_descriptors(a);
	if (r < 0)
		return r;
	r = open_state(a);
	if (r < 0)
		return r;
	/* The metrics start empty before the state of an earlier run is
	 * picked up into them (desired.json, result.json). */
	metrics_init(&a->metrics);
	handover_load(&a->handover, a->state_fd, a->cfg.state_dir, a->req.restart_id,
		      sizeof(a->req.restart_id), &a->req.restart_units, now_ms());
	metrics_restore(&a->metrics, a->handover.generation, a->handover.checksum);
	/* (a result that names the generation loaded ends its wait) */
	read_result(a);
	refresh_host_keys(a);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_error("cannot initialise libcurl");
		return -EIO;
	}
	r = start_watches(a);
	if (r < 0)
		return r;

	uint64_t usec = 0;
	if (!o->once && (usec = notify_watchdog_usec()) > 0) {
		a->watchdog_ms = usec / 2000u;
		if (a->watchdog_ms == 0)
			a->watchdog_ms = 1;
	}

	/* Everything is open; from here on the network talks to us. */
	if (!o->no_sandbox) {
		const char *bad = NULL;
		r = filter_install(&bad);
		if (r < 0)
			return log_error_errno(r, "cannot install the seccomp filter%s%s%s",
					       bad ? " (unknown system call " : "", bad ? bad : "", bad ? ")" : "");
	}

	char sf[320];
	snprintf(sf, sizeof(sf), "SECRET=%s/%s", a->cfg.secret_namespace, a->cfg.secret_name);
	log_fields(LOG_INFO, LOG_FIELDS(sf), "%s: Secret %s/%s, Node %s, API server %s",
		   o->once ? "one reconcile" : "starting", a->cfg.secret_namespace, a->cfg.secret_name, a->cfg.node_name,
		   a->cfg.server);
	return 0;
}

/* What the last pass or a callback asked for: a reload (SIGHUP), a new
 * connection (server, CA or Node changed), another Secret, new
 * credentials. Fails only when the client cannot be set up again. */
static int take_requests(struct agent *a)
{
	if (a->reload) {
		/* systemctl reload waits for READY=1 after RELOADING=1 (only
		 * once READY=1 was sent: before, the start is not over). */
		if (a->ready)
			notify_reloading(&a->notify);
		reload_config(a);
		if (a->ready)
			notify_send(&a->notify, "READY=1");
	}
	if (a->reconnect) {
		a->reconnect = false;
		log_info("connecting again: API server %s, CA %s, Secret %s", a->cfg.server, a->cfg.ca_file,
			 a->cfg.secret_name);
		stop_watches(a);
		if (start_watches(a) < 0)
			return -EIO;
		a->dirty = true;
	}

	if (a->switch_secret) {
		/* --once applies what the label names or nothing. */
		if (a->opts->once) {
			oscsecret_drop(&a->good);
		}
		int r = watch_retarget(&a->secret, a->switch_secret);
		if (r < 0)
			log_error_errno(r, "cannot switch to Secret %s", a->switch_secret);
		free(a->switch_secret);
		a->switch_secret = NULL;
	}
	if (a->new_credentials) {
		/* Requests that failed without it are retried now. */
		a->new_credentials = false;
		watch_resync(&a->secret);
		watch_resync(&a->node);
		nodefind_resync(&a->nodefind);
	}
	return 0;
}

/* The hostname changed (hostname.h): the Node is looked for again, by the
 * new name when node.name followed the old one (it was the hostname or the
 * Node found by its label), and by the new kubernetes.io/hostname label;
 * every duty tied to the Node starts again, as gardener-node-agent's
 * restart does (gardener/gardener pkg/nodeagent/controller/hostnamecheck/
 * reconciler.go), without leaving the process. Returns true when it did. */
static bool follow_hostname(struct agent *a)
{
	char old[HOST_NAME_MAX + 1];
	if (!hostname_take_change(&a->host, old))
		return false;
	const char *host = a->host.name;
	bool rename = a->node_follows_host && strcmp(a->cfg.node_name, host) != 0;
	if (rename && !kube_name_is_valid(host)) {
		log_warning("hostname changed from %s to \"%.64s\", which is no Node name: staying with Node %s", old,
			    host, a->cfg.node_name);
		rename = false;
	}
	char *name = rename ? strdup(host) : NULL;
	if (rename && !name) {
		log_error_errno(-ENOMEM, "hostname changed from %s to %s: cannot follow it", old, host);
		return false;
	}
	log_notice("hostname changed from %s to %s: %s%s, looking for the Node by label %s=%s", old, host,
		   rename ? "following Node " : "staying with Node ", rename ? name : a->cfg.node_name,
		   KUBE_LABEL_HOSTNAME, host);
	if (rename) {
		free(a->cfg.node_name);
		a->cfg.node_name = name;
	}
	a->node_seen = false;
	a->node_exists = false;
	serial_set_node(&a->serial, false, NULL);
	a->reconnect = true;
	return true;
}

/* Ticks every duty that runs before the reconcile, re-reads the local
 * inputs when due and marks the state dirty for each retry or held change
 * that is due. Returns the earliest deadline among them (UINT64_MAX: none). */
static uint64_t tick_duties(struct agent *a, uint64_t now)
{
	take_rotations(a, now);
	/* Until the CSR brings a certificate, the watches wait (a certificate
	 * that arrives marks the state dirty, and the next tick connects). */
	uint64_t next = creds_tick(&a->creds, now);
	console_creds(&a->console, a->creds.failure.seq, a->creds.failure.key, a->creds.failure.text);
	if (a->last_contact_ms && creds_usable(&a->creds))
		console_joined(&a->console, a->cfg.server);
	if (creds_usable(&a->creds))
		next = min_u64(next, min_u64(watch_tick(&a->secret, now), watch_tick(&a->node, now)));
	next = min_u64(next, nodefind_tick(&a->nodefind, now, a->node_seen && !a->node_exists));
	if (a->nodefind.found) {
		/* The Node the kubelet registered under another name
		 * than ours: it is the one to watch, annotate and
		 * hold the Lease for. */
		log_notice("Node %s does not exist; Node %s has label %s=%s: following it", a->cfg.node_name,
			   a->nodefind.found, KUBE_LABEL_HOSTNAME, a->nodefind.hostname);
		free(a->cfg.node_name);
		a->cfg.node_name = TAKE_PTR(a->nodefind.found);
		a->node_follows_host = true;
		a->node_seen = false;
		a->reconnect = true;
		next = now;
	}
	next = min_u64(next, hostname_tick(&a->host, now));
	if (follow_hostname(a))
		next = now;
	next = min_u64(next, tokensync_tick(&a->tokens, now));
	if (a->tokens.changed) {
		a->tokens.changed = false;
		a->dirty = true;
	}
	next = min_u64(next, secretref_tick(&a->secretref, now));
	if (a->secretref.changed) {
		a->secretref.changed = false;
		a->dirty = true;
	}
	next = min_u64(next, mirrors_tick(&a->mirrors, now));
	if (a->mirrors.changed) {
		a->mirrors.changed = false;
		a->dirty = true;
	}
	/* Without a usable credential (the certificate expired, no token to
	 * get another) the Lease and the Events send nothing: each request
	 * would only be refused (401). They go on when a certificate comes. */
	if (creds_usable(&a->creds)) {
		next = min_u64(next, lease_tick(&a->lease, now));
		next = min_u64(next, events_tick(&a->events, now));
	}
	next = min_u64(next, httpd_tick(&a->httpd, now));
	next = min_u64(next, conditions_tick(&a->conditions, now));
	next = min_u64(next, internalip_tick(&a->internalip, now));
	next = min_u64(next, podsweep_tick(&a->sweep, now));
	/* The kubelet is repaired on a node configured once (an agent
	 * restarted while the applies fail still repairs it). */
	next = min_u64(next, health_tick(&a->health, now, applied_ok(a) || execdir_applied_once(&a->exec)));
	take_probe_verdict(a, now);
	take_health_repair(a);
	/* The local inputs are re-read every LOCAL_RESYNC_MS (or resyncMs if
	 * shorter): inotify covers result.json; this covers missed events and
	 * the host keys, which nothing announces. It costs no request. */
	if (!a->opts->once) {
		if (now >= a->next_local_resync) {
			if (a->next_local_resync) {
				read_result(a);
				a->exec.probe_written = true; /* a missed event */
				refresh_host_keys(a);
			}
			a->next_local_resync =
				now + (a->cfg.resync_interval_ms < LOCAL_RESYNC_MS ? a->cfg.resync_interval_ms
										  : LOCAL_RESYNC_MS);
		}
		next = min_u64(next, a->next_local_resync);
	}

	/* The executor's directory, until it exists (again). */
	if (a->exec.fd < 0)
		next = min_u64(next, now + EXEC_DIR_RETRY_MS);

	/* A Node patch or a desired.json write that failed is retried
	 * when its backoff ends. */
	if (retry_due(&a->annotate.wake_at, now, &next))
		a->dirty = true;
	if (retry_due(&a->handover.wake_at, now, &next))
		a->dirty = true;
	/* A held OSC change whose reconciliation delay is over. */
	if (rollout_due(&a->rollout, now))
		a->dirty = true;
	return next;
}

/* Reconciles when something changed and it may (can_reconcile), starting
 * --once's apply deadline with the first OSC, then ticks what follows from
 * the reconcile. Returns the earliest deadline among them. */
static uint64_t reconcile_step(struct agent *a, uint64_t now, bool can_reconcile, uint64_t *once_deadline)
{
	if (a->dirty && can_reconcile) {
		reconcile(a, now);
		if (a->opts->once && *once_deadline == UINT64_MAX && a->good.osc)
			*once_deadline = now + a->cfg.apply_timeout_ms;
	}
	/* After the reconcile: it may just have started holding a change. */
	uint64_t next = rollout_deadline(&a->rollout);
	/* Serial mode: the Lease while a change needs it (serial.h). */
	serial_want(&a->serial, rollout_lock_wanted(&a->rollout, a->annotate.applied_checksum));
	next = min_u64(next, serial_tick(&a->serial, now));
	if (serial_changed(&a->serial))
		a->dirty = true;
	rollout_set_lock(&a->rollout, a->serial.held, a->serial.holder, a->serial.holder_until);
	/* A write that failed just now: its retry is a deadline too
	 * (before, only another wake-up, e.g. a 10 s watchIdleMs, made
	 * the agent try again). */
	if (a->handover.wake_at)
		next = min_u64(next, a->handover.wake_at);
	/* desired.json written, but not picked up (pickup.h); after the
	 * reconcile, so that a write made just now sets its deadline too. */
	if (!a->opts->once && pickup_due(&a->handover.pickup, now, &next))
		handover_rewrite(a->state_fd, a->cfg.state_dir);
	return next;
}

/* Tells the service manager what it needs to know: READY=1 once the
 * configuration is loaded and the loop runs (the first pass), STATUS= when
 * it changed, WATCHDOG=1 when due. Contact with the API server does not gate
 * READY: a package upgrade (postinst try-restart) or a boot must not wait
 * for the network; it is in STATUS= ("no API contact yet") and /readyz.
 * Returns the next watchdog deadline (UINT64_MAX: none). */
static uint64_t tell_manager(struct agent *a, uint64_t now, uint64_t start)
{
	if (!a->ready && !a->opts->once) {
		a->ready = true;
		notify_send(&a->notify, "READY=1");
		log_info("ready: configuration loaded, loop running after %llu ms (API contact: see STATUS and /readyz)",
			 (unsigned long long)(now - start));
	}
	if (!a->metrics.ready && !a->opts->once && (a->secret.synced || a->last_contact_ms)) {
		a->metrics.ready = true;
		log_info("first contact with the API server after %llu ms", (unsigned long long)(now - start));
	}
	if (!a->opts->once)
		notify_status(a, now);
	a->metrics.last_contact_ms = a->last_contact_ms;
	/* With the Lease (renewed every 20 s) contact is recent on a healthy
	 * node: 120 s + requestMs. Without it only the watches answer, and an
	 * idle one stays silent up to watchIdleMs (720 s by default). */
	uint64_t quiet_ms = a->cfg.lease_enabled && a->cfg.watch_idle_timeout_ms > 120000u ? 120000u
											    : a->cfg.watch_idle_timeout_ms;
	a->metrics.ready_window_ms = quiet_ms + a->cfg.request_timeout_ms;
	if (!a->watchdog_ms)
		return UINT64_MAX;
	if (now >= a->next_watchdog) {
		notify_send(&a->notify, "WATCHDOG=1");
		a->next_watchdog = now + a->watchdog_ms;
	}
	return a->next_watchdog;
}

/* Waits until next (at once when busy) for the network, a signal, inotify
 * or a listener, and dispatches what came. Fails only when the wait does. */
static int wait_and_dispatch(struct agent *a, uint64_t now, uint64_t next, bool busy)
{
	/* curl_multi_poll() takes no "forever". */
	int timeout = INT_MAX;
	if (next != UINT64_MAX)
		timeout = next <= now ? 0 : (int)min_u64(next - now, INT_MAX);
	if (busy)
		timeout = 0;
	struct curl_waitfd extra[3 + HTTPD_FDS_MAX] = {
		{ .fd = a->signal_fd, .events = CURL_WAIT_POLLIN },
		{ .fd = a->inotify_fd, .events = CURL_WAIT_POLLIN },
	};
	unsigned n_httpd = httpd_fds(&a->httpd, extra + 2, HTTPD_FDS_MAX);
	unsigned n = 2 + n_httpd;
	/* /proc/sys/kernel/hostname: only POLLPRI (it is always readable). */
	if (hostname_fd(&a->host) >= 0)
		extra[n++] = (struct curl_waitfd){ .fd = hostname_fd(&a->host), .events = CURL_WAIT_POLLPRI };
	if (http_wait(&a->http, extra, n, timeout) < 0)
		return -EIO;
	if (extra[0].revents)
		handle_signals(a);
	if (extra[1].revents)
		handle_inotify(a);
	if (n > 2 + n_httpd && extra[n - 1].revents)
		hostname_wake(&a->host);
	httpd_process(&a->httpd, extra + 2, n_httpd, now_ms());
	if (a->exec.fd < 0 && open_exec_dir(a) == 0)
		read_result(a);
	http_dispatch(&a->http);
	return 0;
}

/* The loop: one pass per wake-up until a signal (or --once is done).
 * Returns an AGENT_EXIT_* code (1 when the client cannot be set up again or
 * the wait fails). */
static int agent_loop(struct agent *a)
{
	const struct agent_options *o = a->opts;
	uint64_t start = now_ms();
	uint64_t once_deadline = UINT64_MAX;
	int ret = AGENT_EXIT_OK;
	a->dirty = true;

	while (!a->quit) {
		uint64_t now = now_ms();
		if (take_requests(a) < 0) {
			ret = 1;
			break;
		}
		uint64_t next = tick_duties(a, now);
		/* In --once mode nothing is written before both GETs answered (the
		 * Node may name another Secret). */
		bool can_reconcile = !o->once || (a->secret.state == WATCH_STOPPED && a->node.state == WATCH_STOPPED);
		next = min_u64(next, reconcile_step(a, now, can_reconcile, &once_deadline));
		next = min_u64(next, tell_manager(a, now, start));
		if (o->once) {
			bool done;
			int code = once_step(a, now, once_deadline, &done);
			if (done) {
				ret = code;
				break;
			}
			next = min_u64(next, once_deadline);
		}
		if (wait_and_dispatch(a, now, next, a->dirty && can_reconcile) < 0) {
			log_error("curl_multi_poll failed");
			ret = o->once ? AGENT_EXIT_API : 1;
			break;
		}
	}
	if (a->quit)
		log_info("exiting on signal");
	if (!o->once)
		notify_send(&a->notify, "STOPPING=1");
	return ret;
}

int agent_run(const struct agent_options *o)
{
	struct agent a = {
		.opts = o,
		.root_fd = -1,
		.state_fd = -1,
		.exec = EXECDIR_INIT,
		.inotify_fd = -1,
		.signal_fd = -1,
		.notify = { .fd = -1 },
		.httpd = { .lfd = { -1, -1 } },
	};
	char err[1024];
	for (size_t i = 0; i < HTTPD_CONNS; i++)
		a.httpd.conn[i].fd = -1;
	annotate_init(&a.annotate, &a.cfg.node_name, o->once, &annotate_ops, &a);
	console_init(&a.console, o->once ? -1 : STDOUT_FILENO);

	char why[1024];
	if (!settings_present(o->config_path, GNA_DIR_DEFAULT, secure_getenv("CREDENTIALS_DIRECTORY"), why,
			      sizeof(why))) {
		/* Not an error in the configuration but none at all: one line,
		 * and no restart (RestartPreventExitStatus=); node-agent.path
		 * starts the unit when one appears. */
		log_error("%s", why);
		return AGENT_EXIT_NOCONFIG;
	}
	int lr = settings_load(o->config_path, false, &a.cfg, &a.stock, err, sizeof(err));
	if (lr < 0) {
		log_error("%s", err);
		return AGENT_EXIT_CONFIG;
	}
	int ret = AGENT_EXIT_CONFIG;
	if (agent_start(&a) >= 0)
		ret = agent_loop(&a);
	agent_free(&a);
	curl_global_cleanup();
	return ret;
}
