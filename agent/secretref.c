/* Files from a Secret, node-agent's half; see secretref.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "kube.h"
#include "log.h"
#include "osc.h"
#include "secretref.h"

static void entry_free(struct secretref_entry *e)
{
	if (e->req)
		http_cancel(e->req);
	free(e->path);
	free(e->secret);
	free(e->key);
	if (e->data) {
		explicit_bzero(e->data, e->len);
		free(e->data);
	}
}

static void entries_free(struct secretref_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		entry_free(&e[i]);
	free(e);
}

static bool same_ref(const struct secretref_entry *e, const struct osc_file *f)
{
	return strcmp(e->path, f->path) == 0 && strcmp(e->secret, f->secret_name) == 0 &&
	       strcmp(e->key, f->secret_key) == 0;
}

int secretref_follow(struct secretref *s, const char *osc, size_t osc_len, const char *checksum,
		     const char *state_dir, const char *node_name)
{
	struct osc model;
	struct osc_error oerr = {};
	int r = osc_parse_for_node(osc, osc_len, state_dir, node_name, &model, &oerr);
	if (r < 0)
		return r;
	size_t n = 0;
	for (size_t i = 0; i < model.n_files; i++)
		n += model.files[i].source == OSC_SOURCE_SECRET;
	struct secretref_entry *e = n ? calloc(n, sizeof(*e)) : NULL;
	if (n && !e) {
		osc_done(&model);
		return -ENOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < model.n_files; i++) {
		const struct osc_file *f = &model.files[i];
		if (f->source != OSC_SOURCE_SECRET)
			continue;
		struct secretref_entry *x = &e[k++];
		x->path = strdup(f->path);
		x->secret = strdup(f->secret_name);
		x->key = strdup(f->secret_key);
		if (!x->path || !x->secret || !x->key) {
			entries_free(e, k);
			osc_done(&model);
			return -ENOMEM;
		}
		/* The same reference keeps its bytes until it is read again. */
		for (size_t j = 0; j < s->n; j++)
			if (same_ref(&s->entries[j], f)) {
				x->data = TAKE_PTR(s->entries[j].data);
				x->len = s->entries[j].len;
				x->answered = s->entries[j].answered;
			}
	}
	osc_done(&model);
	bool was = s->n > 0;
	entries_free(s->entries, s->n);
	s->entries = e;
	s->n = n;
	snprintf(s->checksum, sizeof(s->checksum), "%s", checksum);
	s->changed = true;
	if (n || was)
		log_info("files from a Secret: following %zu file(s) of OSC %.12s", n, checksum);
	return 0;
}

void secretref_refresh(struct secretref *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (!s->entries[i].req)
			s->entries[i].next_at = 0;
}

void secretref_attach(struct secretref *s, struct http_client *http)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->entries[i].req)
			http_cancel(s->entries[i].req);
		s->entries[i].req = NULL;
		s->entries[i].next_at = 0;
	}
	s->http = http;
}

static void set_data(struct secretref *s, struct secretref_entry *e, unsigned char *data, size_t len)
{
	bool same = (!data && !e->data) ||
		    (data && e->data && len == e->len && (len == 0 || memcmp(data, e->data, len) == 0));
	if (e->data) {
		explicit_bzero(e->data, e->len);
		free(e->data);
	}
	e->data = data;
	e->len = len;
	if (!same)
		s->changed = true;
}

/* A read that failed (not the gate's): 10 s doubling every 30 s up to
 * 2 min, full jitter (lib/base/backoff.h). */
static const struct backoff_policy secretref_policy = { .base_ms = SECRETREF_RETRY_MS, .double_ms = 30000,
							.cap_ms = SECRETREF_RETRY_CAP_MS };

void secretref_answer(struct secretref *s, size_t i, long status, const char *body, size_t len, const char *failure,
		      uint64_t now)
{
	if (i >= s->n)
		return;
	struct secretref_entry *e = &s->entries[i];
	bool first = !e->answered;
	e->answered = true;
	if (first)
		s->changed = true; /* the desired state no longer waits */
	unsigned char *data = NULL;
	size_t dlen = 0;
	const char *why = NULL;
	char desc[256];
	int r;
	bool drop = false; /* the Secret's own answer: its bytes are gone */
	if (status == 200) {
		r = kube_secret_data(body ? body : "", body ? len : 0, e->key, DESIRED_SECRET_FILE_MAX, &data, &dlen,
				     &why);
		if (r == -ENOENT) {
			snprintf(desc, sizeof(desc), "the Secret has no key \"%s\"", e->key);
			drop = true;
		} else if (r < 0) {
			snprintf(desc, sizeof(desc), "%s", why ? why : strerror(-r));
			drop = r != -ENOMEM;
		}
	} else if (status == 404) {
		r = -ENOENT;
		snprintf(desc, sizeof(desc), "the Secret does not exist (404)");
		drop = true;
	} else {
		r = -EIO;
		snprintf(desc, sizeof(desc), "%s", failure ? failure : "no answer");
	}
	if (r < 0) {
		if (!e->warned)
			log_warning("files from a Secret: %s from Secret kube-system/%s key \"%s\": %s; %s, retrying "
				    "with back-off", e->path, e->secret, e->key, desc,
				    drop ? "the executor keeps the file on disk and reports it" : "keeping the last bytes read");
		e->warned = true;
		if (drop)
			set_data(s, e, NULL, 0);
		if (!e->retry.policy)
			e->retry.policy = &secretref_policy;
		e->next_at = now + backoff_fail(&e->retry, now, 0);
		return;
	}
	if (e->warned || first || !e->data || e->len != dlen || memcmp(e->data, data, dlen) != 0)
		log_info("files from a Secret: %s read from Secret kube-system/%s key \"%s\" (%zu bytes)", e->path,
			 e->secret, e->key, dlen);
	e->warned = false;
	backoff_reset(&e->retry, now, NULL, NULL);
	e->next_at = UINT64_MAX; /* until the OSC Secret is delivered again */
	set_data(s, e, data, dlen);
}

static void on_done(struct http_request *req, void *userdata)
{
	struct secretref *s = userdata;
	for (size_t i = 0; i < s->n; i++)
		if (s->entries[i].req == req) {
			s->entries[i].req = NULL;
			if (http_gate_took(req)) {
				/* The gate paces it (and logs the outage); the
				 * desired state does not wait for it meanwhile. */
				struct secretref_entry *e = &s->entries[i];
				if (!e->answered) {
					e->answered = true;
					s->changed = true;
				}
				e->next_at = now_ms();
				return;
			}
			char desc[512] = "";
			if (req->status != 200 && req->status != 404)
				http_describe_failure(req, desc, sizeof(desc));
			secretref_answer(s, i, req->status, req->body, req->body_len, desc, now_ms());
			return;
		}
}

uint64_t secretref_tick(struct secretref *s, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	if (!s->http)
		return next;
	for (size_t i = 0; i < s->n; i++) {
		struct secretref_entry *e = &s->entries[i];
		if (e->req)
			continue;
		if (now >= http_due(s->http, e->next_at)) {
			char path[512];
			/* The name is a DNS subdomain name (osc_secret_name_is_valid()):
			 * one URL path component as it stands. */
			snprintf(path, sizeof(path), "/api/v1/namespaces/kube-system/secrets/%s", e->secret);
			int r = http_start(s->http, "GET", path, NULL, NULL, NULL, false, NULL, on_done, s, &e->req);
			if (r >= 0)
				continue;
			if (r == -EAGAIN) { /* the gate closed meanwhile */
				uint64_t due = http_due(s->http, e->next_at);
				next = due < next ? due : next;
				continue;
			}
			e->next_at = now + SECRETREF_RETRY_MS;
			if (!e->answered) { /* the desired state waits no longer */
				e->answered = true;
				s->changed = true;
			}
			log_debug_errno(r, "files from a Secret: cannot read Secret %s yet", e->secret);
		}
		uint64_t due = e->next_at == UINT64_MAX ? UINT64_MAX : http_due(s->http, e->next_at);
		next = due < next ? due : next;
	}
	return next;
}

bool secretref_pending(const struct secretref *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (!s->entries[i].answered)
			return true;
	return false;
}

int secretref_desired(const struct secretref *s, const char *osc, size_t osc_len, const char *checksum,
		      const char *state_dir, const char *node_name, struct desired_secret_file **ret, size_t *n)
{
	*ret = NULL;
	*n = 0;
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++)
		k += s->entries[i].data != NULL;
	if (!k)
		return 0;
	/* Another OSC than the one followed: only what it names too. */
	struct osc model = {};
	bool other = strcmp(checksum, s->checksum) != 0;
	if (other) {
		struct osc_error oerr = {};
		if (osc_parse_for_node(osc, osc_len, state_dir, node_name, &model, &oerr) < 0)
			return 0; /* not one we hand over bytes for */
	}
	struct desired_secret_file *d = calloc(k, sizeof(*d));
	if (!d) {
		if (other)
			osc_done(&model);
		return -ENOMEM;
	}
	k = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct secretref_entry *e = &s->entries[i];
		if (!e->data)
			continue;
		if (other) {
			const struct osc_file *f = osc_find_file(&model, e->path);
			if (!f || f->source != OSC_SOURCE_SECRET || !same_ref(e, f))
				continue;
		}
		d[k++] = (struct desired_secret_file){ .path = e->path, .data = e->data, .len = e->len };
	}
	if (other)
		osc_done(&model);
	if (!k) {
		free(d);
		return 0;
	}
	*ret = d;
	*n = k;
	return 0;
}

void secretref_done(struct secretref *s)
{
	entries_free(s->entries, s->n);
	*s = (struct secretref){};
}
