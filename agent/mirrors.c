/* Registry mirrors' readinessProbe, node-agent's half; see mirrors.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "criconfig.h"
#include "fsx.h"
#include "log.h"
#include "mirrors.h"
#include "osc.h"

static void entry_free(struct mirrors_entry *e)
{
	if (e->req)
		http_cancel(e->req);
	free(e->upstream);
	for (size_t i = 0; i < e->n_hosts; i++) {
		free(e->hosts[i].url);
		strv_free(e->hosts[i].ca);
	}
	free(e->hosts);
}

static void entries_free(struct mirrors_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		entry_free(&e[i]);
	free(e);
}

static int entry_fill(struct mirrors_entry *x, const struct osc_registry *g)
{
	if (cri_hosts_digest(g, x->digest) < 0 || !(x->upstream = strdup(g->upstream)))
		return -ENOMEM;
	if (g->n_hosts && !(x->hosts = calloc(g->n_hosts, sizeof(*x->hosts))))
		return -ENOMEM;
	for (size_t i = 0; i < g->n_hosts; i++) {
		struct mirrors_host *h = &x->hosts[x->n_hosts++];
		if (!(h->url = strdup(g->hosts[i].url)) || !(h->ca = calloc(g->hosts[i].n_ca + 1, sizeof(char *))))
			return -ENOMEM;
		for (size_t k = 0; k < g->hosts[i].n_ca; k++)
			if (!(h->ca[k] = strdup(g->hosts[i].ca[k])))
				return -ENOMEM;
	}
	return 0;
}

int mirrors_follow(struct mirrors *m, const char *osc, size_t osc_len, const char *state_dir, const char *node_name,
		   const char *root)
{
	struct osc model;
	struct osc_error oerr = {};
	int r = osc_parse_for_node(osc, osc_len, state_dir, node_name, &model, &oerr);
	if (r < 0)
		return r;
	size_t n = 0;
	for (size_t i = 0; model.cri.present && i < model.cri.n_registries; i++)
		n += model.cri.registries[i].readiness_probe;
	struct mirrors_entry *e = n ? calloc(n, sizeof(*e)) : NULL;
	_cleanup_free_ char *root_copy = root && strcmp(root, "/") != 0 ? strdup(root) : NULL;
	if ((n && !e) || (root && strcmp(root, "/") != 0 && !root_copy)) {
		free(e);
		osc_done(&model);
		return -ENOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; model.cri.present && i < model.cri.n_registries; i++) {
		const struct osc_registry *g = &model.cri.registries[i];
		if (!g->readiness_probe)
			continue;
		struct mirrors_entry *x = &e[k++];
		if (entry_fill(x, g) < 0) {
			entries_free(e, k);
			osc_done(&model);
			return -ENOMEM;
		}
		/* The same configuration keeps its verdict (and a try in
		 * progress goes on). */
		for (size_t j = 0; j < m->n; j++) {
			struct mirrors_entry *o = &m->entries[j];
			if (strcmp(o->upstream, x->upstream) == 0 && strcmp(o->digest, x->digest) == 0) {
				x->ready = o->ready;
				x->host = o->host;
				x->req = TAKE_PTR(o->req);
				if (x->req)
					x->req->userdata = x;
				x->next_at = o->next_at;
				x->warned = o->warned;
			}
		}
		if (!x->ready)
			log_info("Registry %s has readinessProbe: probing its %zu host(s) before its hosts.toml is written",
				 x->upstream, x->n_hosts);
	}
	osc_done(&model);
	entries_free(m->entries, m->n);
	m->entries = e;
	m->n = n;
	for (size_t i = 0; i < n; i++)
		e[i].owner = m;
	free(m->root);
	m->root = TAKE_PTR(root_copy);
	m->changed = true;
	return 0;
}

void mirrors_attach(struct mirrors *m, struct http_client *http)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->entries[i].req) {
			http_cancel(m->entries[i].req);
			m->entries[i].req = NULL;
			m->entries[i].host = 0;
			m->entries[i].next_at = 0;
		}
	m->http = http;
}

static void on_done(struct http_request *req, void *userdata)
{
	struct mirrors_entry *e = userdata;
	struct mirrors *m = e->owner;
	e->req = NULL;
	char desc[512] = "";
	if (req->status == 0)
		http_describe_failure(req, desc, sizeof(desc));
	mirrors_answer(m, (size_t)(e - m->entries), req->status, desc, now_ms());
}

/* The PEM text of host h's caCerts (relative ones below certs.d/<upstream>,
 * as Gardener's filepath.Join(baseDir, caCert)); NULL in *ret when it has
 * none. -errno when one cannot be read, its path in *ret_path. */
static int read_cas(const struct mirrors *m, const struct mirrors_entry *e, const struct mirrors_host *h,
		    char **ret, char *ret_path, size_t path_size)
{
	*ret = NULL;
	_cleanup_free_ char *pem = NULL;
	size_t len = 0;
	for (char **c = h->ca; c && *c; c++) {
		if (**c == '/')
			snprintf(ret_path, path_size, "%s%s", m->root ? m->root : "", *c);
		else
			snprintf(ret_path, path_size, "%s%s/%s/%s", m->root ? m->root : "", MIRRORS_CERTS_DIR, e->upstream, *c);
		_cleanup_close_ int fd = open(ret_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		_cleanup_free_ char *data = NULL;
		size_t n = 0;
		int r = fd < 0 ? -errno : fsx_read_fd(fd, MIRRORS_CA_MAX, &data, &n);
		if (r < 0)
			return r;
		char *p = realloc(pem, len + n + 2);
		if (!p)
			return -ENOMEM;
		pem = p;
		memcpy(pem + len, data, n);
		len += n;
		pem[len++] = '\n';
		pem[len] = '\0';
	}
	*ret = TAKE_PTR(pem);
	return 0;
}

uint64_t mirrors_tick(struct mirrors *m, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	for (size_t i = 0; i < m->n; i++) {
		struct mirrors_entry *e = &m->entries[i];
		if (e->ready || e->req)
			continue;
		if (e->next_at <= now && m->http) {
			if (e->n_hosts == 0) { /* nothing to ask: every host answered */
				mirrors_answer(m, i, 200, NULL, now);
				continue;
			}
			char ca_path[4352];
			_cleanup_free_ char *ca = NULL;
			char why[4500];
			int r = read_cas(m, e, &e->hosts[e->host], &ca, ca_path, sizeof(ca_path));
			if (r < 0)
				snprintf(why, sizeof(why), "cannot read the CA file %s: %s", ca_path, strerror(-r));
			else {
				r = http_mirror_start(m->http, e->hosts[e->host].url, ca, MIRRORS_TIMEOUT_MS, MIRRORS_BODY_MAX,
						      on_done, e, &e->req);
				if (r >= 0)
					continue;
				snprintf(why, sizeof(why), "cannot start the probe of %s: %s", e->hosts[e->host].url,
					 strerror(-r));
			}
			mirrors_answer(m, i, 0, r == -ENOMEM ? "out of memory" : why, now);
		}
		if (!e->ready && !e->req)
			next = e->next_at < next ? e->next_at : next;
	}
	return next;
}

/* A failed try: 2 s (Gardener's retry.Until period) doubling every 30 s up
 * to 1 min, full jitter (lib/base/backoff.h): the one retry policy, so
 * that a fleet does not ask a mirror that is down every 2 s. */
static const struct backoff_policy mirrors_policy = { .base_ms = MIRRORS_RETRY_MS, .double_ms = 30000,
						      .cap_ms = MIRRORS_RETRY_CAP_MS };

void mirrors_answer(struct mirrors *m, size_t i, long status, const char *failure, uint64_t now)
{
	if (i >= m->n)
		return;
	struct mirrors_entry *e = &m->entries[i];
	if (status > 0) {
		/* Any HTTP answer: Gardener looks only at Do()'s error. */
		if (++e->host < e->n_hosts) {
			e->next_at = now; /* the next host, in the same try */
			return;
		}
		e->ready = true;
		e->host = 0;
		backoff_reset(&e->retry, now, NULL, NULL);
		m->changed = true;
		log_info("Registry %s: every host answered its readinessProbe; its hosts.toml can be written", e->upstream);
		return;
	}
	if (!e->warned)
		log_warning("Registry %s waits: its host %s does not answer (%s); asking again with back-off (every "
			    "%u s at most)", e->upstream, e->host < e->n_hosts ? e->hosts[e->host].url : "?",
			    failure && *failure ? failure : "no answer", MIRRORS_RETRY_CAP_MS / 1000u);
	else
		log_debug("Registry %s: host %s does not answer yet (%s)", e->upstream,
			  e->host < e->n_hosts ? e->hosts[e->host].url : "?", failure ? failure : "");
	e->warned = true;
	e->host = 0; /* every host again in the next try */
	if (!e->retry.policy)
		e->retry.policy = &mirrors_policy;
	e->next_at = now + backoff_fail(&e->retry, now, 0);
}

int mirrors_desired(const struct mirrors *m, const char *osc, size_t osc_len, const char *state_dir,
		    const char *node_name, struct desired_ready_registry **ret, size_t *n)
{
	*ret = NULL;
	*n = 0;
	size_t ready = 0;
	for (size_t i = 0; i < m->n; i++)
		ready += m->entries[i].ready;
	if (!ready)
		return 0;
	struct osc model;
	struct osc_error oerr = {};
	if (osc_parse_for_node(osc, osc_len, state_dir, node_name, &model, &oerr) < 0)
		return 0; /* the desired state's own check reports such an OSC */
	struct desired_ready_registry *out = calloc(ready, sizeof(*out));
	if (!out) {
		osc_done(&model);
		return -ENOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct mirrors_entry *e = &m->entries[i];
		if (!e->ready)
			continue;
		for (size_t j = 0; model.cri.present && j < model.cri.n_registries; j++) {
			const struct osc_registry *g = &model.cri.registries[j];
			char digest[65];
			if (!g->readiness_probe || strcmp(g->upstream, e->upstream) != 0)
				continue;
			if (cri_hosts_digest(g, digest) < 0) {
				free(out);
				osc_done(&model);
				return -ENOMEM;
			}
			if (strcmp(digest, e->digest) == 0) {
				out[k].upstream = e->upstream;
				memcpy(out[k].sha256, e->digest, 65);
				k++;
			}
		}
	}
	osc_done(&model);
	if (!k) {
		free(out);
		return 0;
	}
	*ret = out;
	*n = k;
	return 0;
}

void mirrors_done(struct mirrors *m)
{
	entries_free(m->entries, m->n);
	free(m->root);
	*m = (struct mirrors){ 0 };
}
