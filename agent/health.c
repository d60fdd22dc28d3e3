/* The health duty; see health.h. */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "health.h"
#include "log.h"
#include "osc.h"

/* gardener/gardener pkg/apis/core/v1beta1/constants (OperatingSystemConfigUnitNameKubeletService,
 * ...ContainerDService): the units gardener-node-agent's checks restart. */
#define KUBELET_UNIT "kubelet.service"
#define CONTAINERD_UNIT "containerd.service"

/* A duration as Go's time.Duration prints it ("1m0s", "10m0s", "30s",
 * "1.5s", "500ms"), so our Event messages read like gardener-node-agent's. */
static void go_duration(uint64_t ms, char *buf, size_t len)
{
	if (ms < 1000) {
		snprintf(buf, len, "%" PRIu64 "ms", ms);
		return;
	}
	uint64_t h = ms / 3600000u, m = ms / 60000u % 60u, s = ms / 1000u % 60u, f = ms % 1000u;
	char frac[8] = "";
	if (f) {
		snprintf(frac, sizeof(frac), ".%03" PRIu64, f);
		for (size_t n = strlen(frac); frac[n - 1] == '0'; n--)
			frac[n - 1] = '\0';
	}
	if (h)
		snprintf(buf, len, "%" PRIu64 "h%" PRIu64 "m%" PRIu64 "%ss", h, m, s, frac);
	else if (m)
		snprintf(buf, len, "%" PRIu64 "m%" PRIu64 "%ss", m, s, frac);
	else
		snprintf(buf, len, "%" PRIu64 "%ss", s, frac);
}

static void on_probe_done(struct http_request *req, void *userdata)
{
	struct health_probe *p = userdata;
	struct health *h = p->owner;
	p->req = NULL;
	bool ok = req->result == CURLE_OK && req->error == 0 && req->status == 200;
	char why[HEALTH_ERROR_MAX];
	if (ok)
		why[0] = '\0';
	else if (req->result == CURLE_OK && req->error == 0)
		snprintf(why, sizeof(why), "HTTP status %ld", req->status);
	else
		http_describe_failure(req, why, sizeof(why));
	health_probe_result(h, p, ok, why, now_ms());
}

static int start_http(struct health *h, struct health_probe *p)
{
	if (!h->http)
		return -ENOTCONN;
	return http_probe_start(h->http, p->url, h->timeout_ms, HEALTH_BODY_MAX, on_probe_done, p, &p->req);
}

void health_init(struct health *h, const struct config *cfg, struct http_client *http, struct events *events)
{
	/* A reload re-initialises; the OSC has not changed with the config,
	 * nor has the node stopped being configured. */
	bool in_osc[HEALTH_PROBES], armed = h->armed;
	void (*verdict)(void *, bool, const char *) = h->kubelet_verdict;
	void *verdict_userdata = h->verdict_userdata;
	for (unsigned i = 0; i < HEALTH_PROBES; i++)
		in_osc[i] = h->probe[i].in_osc;
	*h = (struct health){
		.enabled = cfg->health_enabled,
		.interval_ms = cfg->health_interval_ms,
		.timeout_ms = cfg->health_timeout_ms,
		.unhealthy_ms = cfg->health_unhealthy_ms,
		.repair_interval_ms = cfg->health_repair_interval_ms,
		.ready_toggles = cfg->health_ready_toggles,
		.ready_window_ms = cfg->health_ready_window_ms,
		.http = http,
		.events = events,
		.start = start_http,
	};
	h->probe[HEALTH_KUBELET] = (struct health_probe){
		.owner = h,
		.name = "kubelet",
		.title = "Kubelet",
		.unit = KUBELET_UNIT,
		.needs_osc_unit = true,
		.url = cfg->health_kubelet_url && *cfg->health_kubelet_url ? cfg->health_kubelet_url : NULL,
	};
	h->probe[HEALTH_CONTAINERD] = (struct health_probe){
		.owner = h,
		.name = "containerd",
		.title = "Containerd",
		.unit = CONTAINERD_UNIT,
		.url = cfg->health_containerd_url && *cfg->health_containerd_url ? cfg->health_containerd_url : NULL,
	};
	/* No HTTP probe of containerd (the default): the verdicts of
	 * cloud-config-exec-containerd-probe.service, which can reach the
	 * socket, stand for gardener-node-agent's Version() call. */
	h->probe[HEALTH_CONTAINERD].socket = !h->probe[HEALTH_CONTAINERD].url;
	for (unsigned i = 0; i < HEALTH_PROBES; i++)
		h->probe[i].in_osc = in_osc[i];
	h->armed = armed;
	h->kubelet_verdict = verdict;
	h->verdict_userdata = verdict_userdata;
	if (h->ready_toggles == 0 || h->ready_toggles > CONFIG_READY_TOGGLES_MAX)
		h->ready_toggles = 5;
}

void health_done(struct health *h)
{
	for (unsigned i = 0; i < HEALTH_PROBES; i++)
		if (h->probe[i].req) {
			http_cancel(h->probe[i].req);
			h->probe[i].req = NULL;
		}
}

static void emit(struct health *h, bool warning, const char *reason, const char *fmt, ...) _printf_(4, 5);
static void emit(struct health *h, bool warning, const char *reason, const char *fmt, ...)
{
	if (!h->events)
		return;
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	events_emit(h->events, warning, reason, "%s", msg);
}

/* Whether p is probed now (see health.h): containerd always, as
 * gardener-node-agent's containerd check (a failing apply, an image pull
 * that containerd cannot serve, is when it most needs the repair); the
 * kubelet once an apply succeeded and while the OSC has kubelet.service. */
static bool probed(const struct health *h, const struct health_probe *p)
{
	if (p == &h->probe[HEALTH_CONTAINERD])
		return true;
	return h->armed && (!p->needs_osc_unit || p->in_osc);
}

uint64_t health_tick(struct health *h, uint64_t now, bool active)
{
	if (!h->enabled)
		return UINT64_MAX;
	uint64_t next = UINT64_MAX;
	h->active = active;
	h->armed = h->armed || active;
	for (unsigned i = 0; i < HEALTH_PROBES; i++) {
		struct health_probe *p = &h->probe[i];
		if (!p->url && !p->socket)
			continue;
		if (!probed(h, p)) {
			/* Not configured (yet): no verdict on the unit, and a
			 * spell does not span it. */
			p->failing = false;
			p->held_logged = false;
			continue;
		}
		if (p->probing || p->socket)
			continue;
		if (now < p->next_at) {
			next = next < p->next_at ? next : p->next_at;
			continue;
		}
		p->next_at = now + h->interval_ms;
		next = next < p->next_at ? next : p->next_at;
		p->probing = true;
		int r = h->start(h, p);
		if (r < 0) {
			char why[HEALTH_ERROR_MAX];
			snprintf(why, sizeof(why), "cannot start the probe: %s", strerror(-r));
			health_probe_result(h, p, false, why, now);
		}
	}
	return next;
}

static void decide_repair(struct health *h, struct health_probe *p, uint64_t now)
{
	char spell[32], limit[32];
	go_duration(h->unhealthy_ms, spell, sizeof(spell));
	if (p->repaired && now - p->last_repair < h->repair_interval_ms) {
		if (!p->held_logged) {
			go_duration(p->last_repair + h->repair_interval_ms - now, limit, sizeof(limit));
			log_warning("%s unhealthy for more than %s (%s); not restarting %s again for another %s "
				    "(health.repairIntervalMs)",
				    p->name, spell, p->error, p->unit, limit);
			p->held_logged = true;
		}
		return;
	}
	if (p->repair_id[0])
		log_warning("%s: the restart request %s was not reported done by cloud-config-exec; requesting "
			    "another",
			    p->name, p->repair_id);
	p->repair_wanted = true;
	p->repaired = true;
	p->last_repair = now;
	p->repairs++;
	p->held_logged = false;
	p->first_failure = now; /* a new spell, as gardener-node-agent resets firstFailure */
	log_warning("%s unhealthy for more than %s (%s); requesting a restart of %s from cloud-config-exec",
		    p->name, spell, p->error, p->unit);
	/* The messages of gardener-node-agent's kubelet.go and containerd.go. */
	if (p == &h->probe[HEALTH_CONTAINERD])
		emit(h, true, p->name, "Containerd is unhealthy for more than %s, restarting it: %s", spell, p->error);
	else
		emit(h, true, p->name, "%s is unhealthy for more than %s, restarting it. Health check error: %s",
		     p->title, spell, p->error);
}

bool health_request_restart(struct health *h, unsigned which, const char *why, uint64_t now)
{
	if (!h->enabled || which >= HEALTH_PROBES)
		return false;
	struct health_probe *p = &h->probe[which];
	if (p->repaired && now - p->last_repair < h->repair_interval_ms) {
		log_warning("%s; not restarting %s: restarted less than health.repairIntervalMs ago", why, p->unit);
		return false;
	}
	p->repair_wanted = true;
	p->repaired = true;
	p->last_repair = now;
	p->repairs++;
	log_warning("%s; requesting a restart of %s from cloud-config-exec", why, p->unit);
	return true;
}

void health_probe_result(struct health *h, struct health_probe *p, bool ok, const char *why, uint64_t now)
{
	p->probing = false;
	if (p == &h->probe[HEALTH_KUBELET] && h->kubelet_verdict)
		h->kubelet_verdict(h->verdict_userdata, ok, ok ? NULL : why && *why ? why : "unknown error");
	if (ok) {
		p->ok++;
		if (p->failing) {
			log_notice("%s is healthy again", p->name);
			emit(h, false, p->name, "%s is healthy", p->title);
		}
		p->failing = false;
		p->held_logged = false;
		p->error[0] = '\0';
		return;
	}
	p->failed++;
	snprintf(p->error, sizeof(p->error), "%s", why && *why ? why : "unknown error");
	if (!p->failing) {
		char spell[32];
		go_duration(h->unhealthy_ms, spell, sizeof(spell));
		p->failing = true;
		p->first_failure = now;
		log_warning("%s is unhealthy: %s at %s (a restart of %s after %s)", p->name, p->error,
			    p->url ? p->url : "its socket (cloud-config-exec-containerd-probe)", p->unit, spell);
		if (p == &h->probe[HEALTH_CONTAINERD])
			emit(h, true, p->name, "Containerd is unhealthy: %s", p->error);
		else
			emit(h, true, p->name, "%s is unhealthy, health check error: %s", p->title, p->error);
	}
	if (now - p->first_failure >= h->unhealthy_ms)
		decide_repair(h, p, now);
}

bool health_socket_result(struct health *h, bool healthy, const char *why, long long checked_at,
			  long long wall_now, uint64_t now)
{
	struct health_probe *p = &h->probe[HEALTH_CONTAINERD];
	if (!h->enabled || !p->socket || checked_at == p->last_checked_at)
		return false;
	/* Three intervals, at least 2 s (checkedAt has whole seconds). */
	long long stale_s = 3ll * h->interval_ms / 1000 < 2 ? 2 : 3ll * h->interval_ms / 1000;
	if (checked_at < wall_now - stale_s) {
		log_debug("containerd: ignoring the probe's verdict of %lld (stale)", checked_at);
		return false;
	}
	p->last_checked_at = checked_at;
	health_probe_result(h, p, healthy, why, now);
	return true;
}

void health_osc(struct health *h, const struct osc *osc)
{
	for (unsigned i = 0; i < HEALTH_PROBES; i++)
		h->probe[i].in_osc = osc && osc_find_unit(osc, h->probe[i].unit);
}

const char *health_take_repair(struct health *h, char id[static HEALTH_ID_MAX])
{
	for (unsigned i = 0; i < HEALTH_PROBES; i++) {
		struct health_probe *p = &h->probe[i];
		if (!p->repair_wanted)
			continue;
		p->repair_wanted = false;
		/* Unique across restarts of the agent too: the executor runs a
		 * request whose id differs from the last one it ran. */
		snprintf(p->repair_id, sizeof(p->repair_id), "health-%s-%lld.%" PRIu64, p->unit, (long long)time(NULL),
			 ++h->seq);
		memcpy(id, p->repair_id, HEALTH_ID_MAX);
		return p->unit;
	}
	return NULL;
}

void health_result(struct health *h, const char *restart_id)
{
	if (!restart_id)
		return;
	for (unsigned i = 0; i < HEALTH_PROBES; i++) {
		struct health_probe *p = &h->probe[i];
		if (!p->repair_id[0] || strcmp(p->repair_id, restart_id) != 0)
			continue;
		p->repairs_done++;
		log_notice("health repair done: cloud-config-exec restarted %s (request %s)", p->unit, p->repair_id);
		emit(h, false, p->name, "health repair done: %s restarted by cloud-config-exec (request %s)", p->unit,
		     p->repair_id);
		p->repair_id[0] = '\0';
	}
}

void health_node_ready(struct health *h, int ready, uint64_t now)
{
	if (!h->enabled)
		return;
	bool r = ready == 1;
	bool toggled = h->node_seen && !h->node_ready && r;
	h->node_seen = true;
	h->node_ready = r;
	if (!toggled)
		return;
	/* The window floats: toggles older than it no longer count. */
	unsigned drop = 0;
	while (drop < h->n_toggles && now - h->toggles[drop] > h->ready_window_ms)
		drop++;
	if (h->n_toggles == CONFIG_READY_TOGGLES_MAX && drop == 0)
		drop = 1;
	memmove(h->toggles, h->toggles + drop, (h->n_toggles - drop) * sizeof(h->toggles[0]));
	h->n_toggles -= drop;
	h->toggles[h->n_toggles++] = now;
	log_info("kubelet became Ready (%u change(s) from NotReady in the last %u s)", h->n_toggles,
		 h->ready_window_ms / 1000u);
	if (h->n_toggles < h->ready_toggles)
		return;
	char window[32];
	go_duration(h->ready_window_ms, window, sizeof(window));
	h->flapping_events++;
	log_warning("kubelet toggled between NotReady and Ready %u times within %s (threshold %u)", h->n_toggles,
		    window, h->ready_toggles);
	/* gardener-node-agent's kubelet.go verifyNodeReady: an Event, no reboot. */
	emit(h, true, "kubelet",
	     "Kubelet toggled between NotReady and Ready at least %u times in a %s time window. Rebooting the node "
	     "might help",
	     h->ready_toggles, window);
}

void health_print_config(const struct config *cfg, FILE *f)
{
	if (!cfg->health_enabled) {
		fprintf(f, "health repair: off (health.enabled false)\n");
		return;
	}
	const char *k = cfg->health_kubelet_url && *cfg->health_kubelet_url ? cfg->health_kubelet_url : NULL;
	const char *c = cfg->health_containerd_url && *cfg->health_containerd_url ? cfg->health_containerd_url : NULL;
	fprintf(f, "health repair: kubelet probe %s, containerd probe %s\n", k ? k : "off",
		c ? c : "its socket (cloud-config-exec-containerd-probe.timer's verdicts)");
	fprintf(f,
		"  every %u ms, timeout %u ms; restart after %u ms unhealthy, at most once per unit in %u ms; "
		"Ready flapping: %u toggles in %u ms\n",
		cfg->health_interval_ms, cfg->health_timeout_ms, cfg->health_unhealthy_ms,
		cfg->health_repair_interval_ms, cfg->health_ready_toggles, cfg->health_ready_window_ms);
}
