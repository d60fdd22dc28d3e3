/* The client certificate duty; see credentials.h.
 *
 * gardener-node-agent (gardener/gardener pkg/nodeagent/certificate.go and
 * pkg/utils/kubernetes/certificatesigningrequest/certificate.go) creates the
 * CSR with the bootstrap token, polls it with GET every 2 s for up to 15 min,
 * treats Denied and Failed as final for that CSR, and renews at
 * NotBefore + wait.Jitter(0.8 x lifetime, 0.1)
 * (pkg/nodeagent/controller/certificate). Gardener's approver
 * (pkg/resourcemanager/controller/csrapprover/reconciler.go) approves a
 * bootstrap requester only while the Node does not exist and a renewal only
 * from the certificate's own user.
 *
 * node-agent awaits issuance with a watch on that one CSR (fieldSelector
 * metadata.name, from the create response's resourceVersion, timeoutSeconds
 * within csrMs), so the certificate is used as soon as the signer writes it
 * instead of up to 2 s later. The bootstrap token may watch CSRs
 * (system:bootstrappers -> ClusterRole system:node-bootstrapper), but
 * Gardener's node-agent authorizer gives a node-agent certificate only get
 * and create (pkg/resourcemanager/webhook/nodeagentauthorizer/authorizer.go,
 * authorizeCertificateSigningRequest): when the watch is refused (403) or
 * fails in any way, that CSR is read with GET every 2 s as gardener-node-agent
 * does, logged once. A watch that the server ends cleanly is opened again
 * from the last version seen. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cleanup.h"
#include "credentials.h"
#include "csr.h"
#include "fsx.h"
#include "gnaconfig.h"
#include "log.h"
#include "stock.h"

#define CSR_PATH "/apis/certificates.k8s.io/v1/certificatesigningrequests"
#define POLL_MS 2000u
#define BACKOFF_MIN_MS 30000u
#define BACKOFF_MAX_MS 600000u
#define CA_MAX (1u << 20)
#define PEM_MAX (128u << 10)

DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY *, EVP_PKEY_free)

static void wipe_free(char **p)
{
	if (*p) {
		OPENSSL_cleanse(*p, strlen(*p));
		free(*p);
	}
}

static int read_ca(const struct creds *c, char **ret, size_t *len)
{
	_cleanup_close_ int fd = open(c->cfg->ca_file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	return fsx_read_fd(fd, CA_MAX, ret, len);
}

/* Checks PEM text holding our certificate and its key; on success *key and
 * *info describe it. */
static int check_pem(struct creds *c, const char *pem, size_t len, EVP_PKEY **key, struct csr_cert_info *info,
		     char *why, size_t whylen)
{
	_cleanup_free_ char *ca = NULL;
	size_t ca_len = 0;
	int r = read_ca(c, &ca, &ca_len);
	if (r < 0) {
		snprintf(why, whylen, "cannot read the CA bundle %s: %s", c->cfg->ca_file, strerror(-r));
		return r;
	}
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
	if (csr_key_from_pem(pem, len, &k) < 0) {
		snprintf(why, whylen, "no P-256 private key");
		return -EINVAL;
	}
	r = csr_cert_check(pem, len, k, c->cfg->machine_name, ca, ca_len, time(NULL), info, why, whylen);
	if (r < 0)
		return r;
	*key = TAKE_PTR(k);
	return 0;
}

static void use_cert(struct creds *c, const struct csr_cert_info *info)
{
	c->have_cert = true;
	c->expired_logged = false;
	c->auth_logged = false;
	c->not_after = info->not_after;
	c->renew_at = csr_renew_at(info, (double)random_below(UINT64_C(1) << 32) / 4294967296.0);
	if (http_set_client_pem(c->http, c->pem_path) < 0)
		log_error("out of memory setting the client certificate");
}

static bool have_bootstrap_token(const struct creds *c)
{
	return c->cfg->bootstrap_token_file && access(c->cfg->bootstrap_token_file, R_OK) == 0;
}

static void backoff(struct creds *c, uint64_t now)
{
	uint64_t d = backoff_half_jitter(backoff_ceiling(BACKOFF_MIN_MS, BACKOFF_MAX_MS, c->failures++));
	EVP_PKEY_free(c->pending_key);
	c->pending_key = NULL;
	c->state = CREDS_NEED_CREATE;
	c->wake_at = now + d;
	if (c->auth_logged)
		log_debug("CSR: next attempt in %llu s", (unsigned long long)(d / 1000u));
	else
		log_notice("CSR: next attempt in %llu s", (unsigned long long)(d / 1000u));
}

/* A 401 on a CSR request: the credential it carried is not accepted. With
 * the bootstrap token (no certificate held) nothing the agent can do helps
 * until someone puts a new token or a valid certificate there: one error
 * saying so, then the CSR backoff (30 s doubling to 10 min, half jitter),
 * quietly, instead of a 401 every POLL_MS until csrMs ends. True when req
 * was such a 401 and has been handled. */
static bool auth_refused(struct creds *c, const struct http_request *req, const char *what, uint64_t now)
{
	if (req->status != 401 || c->have_cert)
		return false;
	if (!c->auth_logged) {
		c->auth_logged = true;
		log_error("%s: the API server refuses the bootstrap token (HTTP 401; %s deleted or expired?) and "
			  "node-agent holds no valid client certificate: it cannot authenticate. Needed: a new bootstrap "
			  "token in %s, or a valid client certificate (%s in node-agent's state directory). The node "
			  "keeps its last applied state; retrying every %u s, backing off to %u min",
			  what, "its Secret kube-system/bootstrap-token-<id>",
			  c->cfg->bootstrap_token_file ? c->cfg->bootstrap_token_file : "apiServer.bootstrapTokenFile",
			  CREDS_FILE, BACKOFF_MIN_MS / 1000u, BACKOFF_MAX_MS / 60000u);
	}
	backoff(c, now);
	return true;
}

/* A node migrating from gardener-node-agent keeps its identity: the
 * certificate and key in its kubeconfig (stock credentials/kubeconfig) are
 * checked like an issued one and become client.pem. */
static int adopt_gna(struct creds *c)
{
	_cleanup_(wipe_free) char *kc = NULL, *cert = NULL, *key = NULL, *pem = NULL;
	size_t kc_len = 0, cert_len = 0, key_len = 0;
	int r = stock_read(c->cfg, "credentials/kubeconfig", PEM_MAX, &kc, &kc_len);
	if (r == -ENOENT)
		return r;
	if (r < 0)
		return log_warning_errno(r, "cannot read gardener-node-agent's kubeconfig");
	char why[CSR_ERROR_MAX];
	r = gna_kubeconfig_client(kc, kc_len, &cert, &cert_len, &key, &key_len, why, sizeof(why));
	if (r < 0) {
		if (r != -ENOENT)
			log_warning("gardener-node-agent's kubeconfig not usable: %s", why);
		return r;
	}
	if (asprintf(&pem, "%s%s%s", cert, cert_len && cert[cert_len - 1] != '\n' ? "\n" : "", key) < 0) {
		pem = NULL;
		return -ENOMEM;
	}
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
	struct csr_cert_info info;
	r = check_pem(c, pem, strlen(pem), &k, &info, why, sizeof(why));
	if (r < 0) {
		log_warning("gardener-node-agent's client certificate not adopted: %s", why);
		return r;
	}
	r = fsx_write_atomic_at(c->state_fd, CREDS_FILE, pem, strlen(pem), 0600, FSX_UID_KEEP, FSX_GID_KEEP, 0);
	if (r < 0)
		return log_error_errno(r, "cannot write %s/%s", c->cfg->state_dir, CREDS_FILE);
	use_cert(c, &info);
	log_notice("adopted gardener-node-agent's client certificate (valid until %lld, renewal at %lld)",
		   (long long)info.not_after, (long long)c->renew_at);
	return 0;
}

int creds_init(struct creds *c, struct http_client *http, const struct config *cfg, int state_fd,
	       void (*on_cert)(void *userdata), void *userdata)
{
	*c = (struct creds){ .http = http, .cfg = cfg, .state_fd = state_fd, .on_cert = on_cert, .userdata = userdata };
	if (!cfg->machine_name || cfg->token_file || cfg->client_cert_file)
		return 0;
	snprintf(c->pem_path, sizeof(c->pem_path), "/proc/self/fd/%d/" CREDS_FILE, state_fd);
	c->state = CREDS_IDLE;

	_cleanup_(wipe_free) char *pem = NULL;
	size_t len = 0;
	int r = fsx_read_at(state_fd, CREDS_FILE, PEM_MAX, &pem, &len);
	if (r == 0) {
		char why[CSR_ERROR_MAX];
		_cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
		struct csr_cert_info info;
		if (check_pem(c, pem, len, &k, &info, why, sizeof(why)) == 0) {
			use_cert(c, &info);
			log_info("client certificate %s/%s in use: valid until %lld, renewal at %lld",
				 cfg->state_dir, CREDS_FILE, (long long)info.not_after, (long long)c->renew_at);
			return 0;
		}
		log_warning("client certificate %s/%s not usable: %s", cfg->state_dir, CREDS_FILE, why);
	} else if (r != -ENOENT)
		log_warning_errno(r, "cannot read the client certificate %s/%s", cfg->state_dir, CREDS_FILE);
	if (adopt_gna(c) == 0)
		return 0;
	if (have_bootstrap_token(c)) {
		c->state = CREDS_NEED_CREATE;
		c->wake_at = 0;
	} else
		log_error("no client certificate and no bootstrap token (%s): node-agent cannot authenticate",
			  cfg->bootstrap_token_file ? cfg->bootstrap_token_file : "apiServer.bootstrapTokenFile unset");
	return 0;
}

static void on_created(struct http_request *req, void *userdata);
static void on_watch_done(struct http_request *req, void *userdata);
static void on_polled(struct http_request *req, void *userdata);

static void start_create(struct creds *c, uint64_t now)
{
	_cleanup_free_ char *pem = NULL, *body = NULL;
	if (!c->pending_key && csr_key_new(&c->pending_key) < 0) {
		log_error("cannot make a P-256 key");
		backoff(c, now);
		return;
	}
	free(c->csr_name);
	c->csr_name = NULL;
	if (csr_name(c->pending_key, c->cfg->machine_name, &c->csr_name) < 0 ||
	    csr_request_pem(c->pending_key, c->cfg->machine_name, &pem) < 0 ||
	    csr_object_json(c->csr_name, pem, &body) < 0) {
		log_error("cannot make the certificate signing request");
		backoff(c, now);
		return;
	}
	int r = http_start(c->http, "POST", CSR_PATH, NULL, body, "application/json", false, NULL, on_created, c,
			   &c->req);
	if (r < 0) {
		log_error_errno(r, "CSR %s: cannot send it%s", c->csr_name,
				r == -ENOKEY ? " (no usable credential)" : "");
		backoff(c, now);
		return;
	}
	c->state = CREDS_CREATING;
	c->deadline = now + c->cfg->csr_timeout_ms;
	log_info("CSR %s: requesting a client certificate for machine %s with the %s", c->csr_name,
		 c->cfg->machine_name, c->have_cert ? "current certificate (renewal)" : "bootstrap token");
}

static void on_created(struct http_request *req, void *userdata)
{
	struct creds *c = userdata;
	uint64_t now = now_ms();
	c->req = NULL;
	if (req->status == 201 || req->status == 200 || req->status == 409) {
		/* 409: the name digests our public key, so it is ours (a retry). */
		c->csr_uid[0] = '\0';
		c->csr_rv[0] = '\0';
		c->watch_refused = false;
		struct csr_status s;
		char err[CSR_ERROR_MAX];
		if (req->status != 409 && req->body &&
		    csr_status_parse(req->body, req->body_len, &s, err, sizeof(err)) == 0) {
			snprintf(c->csr_uid, sizeof(c->csr_uid), "%s", s.uid);
			snprintf(c->csr_rv, sizeof(c->csr_rv), "%s", s.resource_version);
			csr_status_done(&s);
		}
		if (c->auth_logged)
			log_notice("CSR %s: the bootstrap token is accepted again", c->csr_name);
		c->auth_logged = false;
		c->state = CREDS_NEED_POLL;
		c->wake_at = now;
		return;
	}
	if (auth_refused(c, req, "creating a CSR", now))
		return;
	char why[512];
	http_describe_failure(req, why, sizeof(why));
	log_error("CSR %s: creating it failed: %s", c->csr_name, why);
	backoff(c, now);
}

static int install(struct creds *c, const struct csr_status *s, uint64_t now)
{
	_cleanup_(wipe_free) char *key_pem = NULL, *pem = NULL;
	if (csr_key_to_pem(c->pending_key, &key_pem) < 0)
		return -ENOMEM;
	size_t n = s->certificate_len + strlen(key_pem) + 2;
	pem = malloc(n);
	if (!pem)
		return -ENOMEM;
	snprintf(pem, n, "%s%s%s", (const char *)s->certificate,
		 s->certificate_len && s->certificate[s->certificate_len - 1] != '\n' ? "\n" : "", key_pem);

	char why[CSR_ERROR_MAX];
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
	struct csr_cert_info info;
	int r = check_pem(c, pem, strlen(pem), &k, &info, why, sizeof(why));
	if (r < 0) {
		log_error("CSR %s: issued certificate refused: %s", c->csr_name, why);
		return -EINVAL;
	}
	r = fsx_write_atomic_at(c->state_fd, CREDS_FILE, pem, strlen(pem), 0600, FSX_UID_KEEP, FSX_GID_KEEP, 0);
	if (r < 0) {
		log_error_errno(r, "CSR %s: cannot write %s/%s", c->csr_name, c->cfg->state_dir, CREDS_FILE);
		return r;
	}
	use_cert(c, &info);
	log_notice("CSR %s: client certificate issued after %llu ms, valid until %lld, renewal at %lld",
		   c->csr_name, (unsigned long long)(now + c->cfg->csr_timeout_ms - c->deadline),
		   (long long)info.not_after, (long long)c->renew_at);
	return 0;
}

/* Acts on what the CSR says (from a GET or a watch event). */
static void handle_status(struct creds *c, struct csr_status *s, uint64_t now)
{
	if (c->csr_uid[0] && s->uid[0] && strcmp(c->csr_uid, s->uid) != 0) {
		log_error("CSR %s: its uid changed (\"%s\" -> \"%s\"): not ours", c->csr_name, c->csr_uid, s->uid);
		backoff(c, now);
		return;
	}
	switch (s->state) {
	case CSR_PENDING:
	case CSR_APPROVED:
		c->state = CREDS_NEED_POLL;
		c->wake_at = now + POLL_MS;
		break;
	case CSR_DENIED:
	case CSR_FAILED:
		log_error("CSR %s: %s, reason \"%s\", message \"%s\"", c->csr_name,
			  s->state == CSR_DENIED ? "denied" : "failed", s->reason, s->message);
		backoff(c, now);
		break;
	case CSR_ISSUED:
		if (install(c, s, now) < 0) {
			backoff(c, now);
			break;
		}
		EVP_PKEY_free(c->pending_key);
		c->pending_key = NULL;
		c->failures = 0;
		c->state = CREDS_IDLE;
		if (c->on_cert)
			c->on_cert(c->userdata);
		break;
	}
}

static void on_polled(struct http_request *req, void *userdata)
{
	struct creds *c = userdata;
	uint64_t now = now_ms();
	c->req = NULL;
	if (req->status == 404) {
		log_error("CSR %s: gone before it was issued", c->csr_name);
		backoff(c, now);
		return;
	}
	if (auth_refused(c, req, "reading the pending CSR", now))
		return;
	if (req->status != 200) {
		char why[512];
		http_describe_failure(req, why, sizeof(why));
		log_warning("CSR %s: reading it failed: %s", c->csr_name, why);
		c->state = CREDS_NEED_POLL;
		c->wake_at = now + POLL_MS;
		return;
	}
	struct csr_status s;
	char err[CSR_ERROR_MAX];
	if (csr_status_parse(req->body ? req->body : "", req->body_len, &s, err, sizeof(err)) < 0) {
		log_error("CSR %s: unreadable answer: %s", c->csr_name, err);
		backoff(c, now);
		return;
	}
	handle_status(c, &s, now);
	csr_status_done(&s);
}

/* One event of the watch, from inside the transfer: only records. A final
 * state (Denied, Failed, Issued) or DELETED ends the stream (-ECANCELED) and
 * on_watch_done() acts on it. */
static int on_watch_line(const char *line, size_t len, void *userdata)
{
	struct creds *c = userdata;
	enum csr_event_type type;
	struct csr_status s;
	char err[CSR_ERROR_MAX];
	if (csr_event_parse(line, len, &type, &s, err, sizeof(err)) < 0) {
		log_warning("CSR %s: unreadable watch event: %s", c->csr_name, err);
		return -EBADMSG;
	}
	switch (type) {
	case CSR_EVENT_ERROR:
		/* logged by on_watch_done() */
		snprintf(c->watch_status.message, sizeof(c->watch_status.message), "%s", s.message);
		csr_status_done(&s);
		return -ESTALE;
	case CSR_EVENT_BOOKMARK:
		break;
	case CSR_EVENT_DELETED:
		c->watch_gone = true;
		csr_status_done(&s);
		return -ECANCELED;
	case CSR_EVENT_ADDED:
	case CSR_EVENT_MODIFIED:
		if (s.resource_version[0])
			snprintf(c->csr_rv, sizeof(c->csr_rv), "%s", s.resource_version);
		if (s.state == CSR_DENIED || s.state == CSR_FAILED || s.state == CSR_ISSUED) {
			csr_status_done(&c->watch_status);
			c->watch_status = s;
			c->watch_final = true;
			return -ECANCELED;
		}
		break;
	}
	csr_status_done(&s);
	return 0;
}

static void watch_forget(struct creds *c)
{
	c->watch_final = false;
	c->watch_gone = false;
	csr_status_done(&c->watch_status);
	c->watch_status = (struct csr_status){ 0 };
}

/* The watch cannot be used for this CSR: GET it every 2 s from now on. */
static void watch_refuse(struct creds *c, const char *why, uint64_t now)
{
	c->watch_refused = true;
	log_notice("CSR %s: cannot watch it (%s): reading it every %u s instead", c->csr_name, why, POLL_MS / 1000u);
	c->state = CREDS_NEED_POLL;
	c->wake_at = now;
}

static void on_watch_done(struct http_request *req, void *userdata)
{
	struct creds *c = userdata;
	uint64_t now = now_ms();
	c->req = NULL;
	if (c->watch_final) {
		struct csr_status s = c->watch_status;
		c->watch_status = (struct csr_status){ 0 };
		c->watch_final = false;
		handle_status(c, &s, now);
		csr_status_done(&s);
		return;
	}
	if (c->watch_gone) {
		c->watch_gone = false;
		log_error("CSR %s: gone before it was issued", c->csr_name);
		backoff(c, now);
		return;
	}
	if (req->status == 200 && req->result == CURLE_OK && req->error == 0 &&
	    kube_splitter_pending(&req->splitter) == 0) {
		/* Ended by the server (timeoutSeconds): watch again from the
		 * last version seen, at most every 2 s. */
		c->state = CREDS_NEED_POLL;
		c->wake_at = now - c->watch_started < POLL_MS ? c->watch_started + POLL_MS : now;
		return;
	}
	if (auth_refused(c, req, "watching the pending CSR", now))
		return;
	char why[512];
	if (req->error == -ESTALE)
		snprintf(why, sizeof(why), "error event \"%s\"", c->watch_status.message);
	else
		http_describe_failure(req, why, sizeof(why));
	watch_refuse(c, why, now);
}

static void start_watch(struct creds *c, uint64_t now)
{
	uint64_t left = (c->deadline - now + 999u) / 1000u;
	unsigned secs = left > 300u ? 300u : (unsigned)left;
	char query[128 + KUBE_NAME_MAX + sizeof(c->csr_rv)];
	snprintf(query, sizeof(query), "watch=1&fieldSelector=metadata.name%%3D%s%s%s&timeoutSeconds=%u",
		 c->csr_name, c->csr_rv[0] ? "&resourceVersion=" : "", c->csr_rv, secs);
	int r = http_start(c->http, "GET", CSR_PATH, query, NULL, NULL, true, on_watch_line, on_watch_done, c,
			   &c->req);
	if (r < 0) {
		watch_refuse(c, strerror(-r), now);
		return;
	}
	watch_forget(c);
	c->state = CREDS_WATCHING;
	c->watch_started = now;
	/* The server ends the stream after secs; allow it a request's time. */
	c->watch_until = now + (uint64_t)secs * 1000u + c->cfg->request_timeout_ms;
	if (c->watch_until > c->deadline)
		c->watch_until = c->deadline;
}

static void start_poll(struct creds *c, uint64_t now)
{
	if (now >= c->deadline) {
		log_error("CSR %s: not issued within %u s (never approved?)", c->csr_name,
			  c->cfg->csr_timeout_ms / 1000u);
		backoff(c, now);
		return;
	}
	if (!c->watch_refused) {
		start_watch(c, now);
		if (c->state == CREDS_WATCHING)
			return;
	}
	char path[sizeof(CSR_PATH) + 256];
	snprintf(path, sizeof(path), "%s/%s", CSR_PATH, c->csr_name);
	int r = http_start(c->http, "GET", path, NULL, NULL, NULL, false, NULL, on_polled, c, &c->req);
	if (r < 0) {
		log_warning_errno(r, "CSR %s: cannot read it", c->csr_name);
		c->state = CREDS_NEED_POLL;
		c->wake_at = now + POLL_MS;
		return;
	}
	c->state = CREDS_POLLING;
}

static uint64_t ms_until(time_t at, uint64_t now)
{
	time_t t = time(NULL);
	return at <= t ? now : now + (uint64_t)(at - t) * 1000u;
}

bool creds_renew_now(struct creds *c, uint64_t now)
{
	if (c->state != CREDS_IDLE || !c->have_cert)
		return false;
	c->renew_at = time(NULL);
	c->wake_at = now;
	return true;
}

uint64_t creds_tick(struct creds *c, uint64_t now)
{
	if (c->state == CREDS_OFF)
		return UINT64_MAX;
	uint64_t next = UINT64_MAX;
	if (c->have_cert && time(NULL) >= c->not_after) {
		/* Expired: the server refuses it anyway; the bootstrap token
		 * (if still there) gets a new one. */
		c->have_cert = false;
		http_set_client_pem(c->http, NULL);
		if (have_bootstrap_token(c)) {
			log_warning("client certificate expired at %lld: requesting a new one with the bootstrap token",
				    (long long)c->not_after);
			if (c->state == CREDS_IDLE) {
				c->state = CREDS_NEED_CREATE;
				c->wake_at = now;
			}
		} else if (!c->expired_logged) {
			c->expired_logged = true;
			log_error("client certificate expired at %lld and no bootstrap token: node-agent cannot "
				  "authenticate; the node keeps its last applied state",
				  (long long)c->not_after);
		}
	}
	switch (c->state) {
	case CREDS_IDLE:
		if (c->have_cert) {
			if (time(NULL) >= c->renew_at) {
				c->state = CREDS_NEED_CREATE;
				c->wake_at = now;
				return creds_tick(c, now);
			}
			next = ms_until(c->renew_at < c->not_after ? c->renew_at : c->not_after, now);
		}
		break;
	case CREDS_NEED_CREATE:
		if (now >= c->wake_at) {
			start_create(c, now);
			return c->state == CREDS_NEED_CREATE ? c->wake_at : UINT64_MAX;
		}
		next = c->wake_at;
		break;
	case CREDS_NEED_POLL:
		if (now >= c->wake_at) {
			start_poll(c, now);
			if (c->state == CREDS_WATCHING)
				return c->watch_until;
			return c->state == CREDS_POLLING ? UINT64_MAX : c->wake_at;
		}
		next = c->wake_at;
		break;
	case CREDS_WATCHING:
		if (now >= c->watch_until) {
			http_cancel(c->req);
			c->req = NULL;
			watch_forget(c);
			if (now >= c->deadline) {
				c->state = CREDS_NEED_POLL;
				c->wake_at = now;
			} else
				watch_refuse(c, "the stream outlived its timeoutSeconds", now);
			return creds_tick(c, now);
		}
		next = c->watch_until;
		break;
	default:
		break;
	}
	if (c->have_cert)
		next = next < ms_until(c->not_after, now) ? next : ms_until(c->not_after, now);
	return next;
}

bool creds_usable(const struct creds *c)
{
	return c->state == CREDS_OFF || c->have_cert;
}

void creds_done(struct creds *c)
{
	if (c->req)
		http_cancel(c->req);
	watch_forget(c);
	EVP_PKEY_free(c->pending_key);
	free(c->csr_name);
	*c = (struct creds){ .state = CREDS_OFF };
}
