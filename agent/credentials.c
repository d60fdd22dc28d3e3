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
 * from the last version seen.
 *
 * A CSR is given up (a new key, a new CSR) only when it is known to be
 * unusable: Denied, Failed, gone (404), its uid changed, not issued within
 * csrMs, the issued certificate refused, or the API server refuses the
 * request as invalid. Anything else retries the same step with the same key:
 * a POST that got no answer is sent again (the name digests the key, so a
 * 409 says it is ours) and a CSR that could not be read is read again, so a
 * restart of the API server leaves no CSR behind. A restarting
 * kube-apiserver answers the bootstrap token with 401 until its caches are
 * synced: a 401 is retried within a second (REFUSED_CAP_MS) for
 * REFUSED_GRACE_MS, and only a token refused longer than that is taken to
 * be gone (one error), retried with the slow backoff and at once when the
 * token file changes. Nobody serving waits for the API server's gate
 * (agent/apigate.h) like every request. Every other wait of the duty comes
 * from backoff(), on lib/base/backoff.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
/* A CSR read with GET (the watch refused) is read every REVIVED_POLL_MS for
 * REVIVED_MS after the API server answers again following failures: its
 * approver and signer catch up then, and the certificate is in use within
 * a second of it being issued rather than two. */
#define REVIVED_MS 15000u
#define REVIVED_POLL_MS 500u
/* A new CSR, or a token that is refused for good: 30 s doubling to 10 min. */
#define BACKOFF_MIN_MS 30000u
#define BACKOFF_MAX_MS 600000u
/* The same step again after the API server answered with a failure (5xx,
 * 403, 429, a timeout): 1 s doubling every 2 s to 30 s, never sooner than
 * Retry-After. */
#define STEP_MIN_MS 1000u
#define STEP_MAX_MS 30000u
/* A 401 for the bootstrap token within REFUSED_GRACE_MS: uniformly in
 * [1, 1000] ms, so the CSR goes on within a second of the API server's
 * caches being synced. */
#define REFUSED_CAP_MS 1000u
/* How long a run of 401s for the bootstrap token is taken for a restarting
 * API server: v1.20's bootstrap token authenticator reads Secrets through
 * an informer, whose cache is synced seconds after the server listens
 * (tests/integration/082-agent-csr-restarts.sh). */
#define REFUSED_GRACE_MS 60000u
/* ... or a quarter of csrMs when that is shorter (tests give 4 s). */
static uint64_t refused_grace_ms(const struct creds *c)
{
	uint64_t q = c->cfg->csr_timeout_ms / 4u;
	return q < REFUSED_GRACE_MS ? q : REFUSED_GRACE_MS;
}
/* The bootstrap token file is looked at this often while it is refused or
 * unreadable (a local stat, no request). */
#define TOKEN_CHECK_MS 2000u
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

/* 0 when the bootstrap token file holds a token node-agent's user can read,
 * else -errno (-ENOENT also when none is configured). */
static int token_check(const struct creds *c)
{
	if (!c->cfg->bootstrap_token_file)
		return -ENOENT;
	return http_token_file_check(c->cfg->bootstrap_token_file);
}

static bool have_bootstrap_token(const struct creds *c)
{
	return token_check(c) == 0;
}

/* What identifies the token file's content without reading it: a new token
 * written in place or by rename changes it. */
static void token_stamp(const struct creds *c, struct creds_token_stamp *ret)
{
	struct stat st;
	*ret = (struct creds_token_stamp){ 0 };
	if (!c->cfg->bootstrap_token_file || stat(c->cfg->bootstrap_token_file, &st) < 0) {
		ret->err = errno ? errno : ENOENT;
		return;
	}
	*ret = (struct creds_token_stamp){ .dev = st.st_dev, .ino = st.st_ino, .size = st.st_size,
					   .mtime_s = st.st_mtim.tv_sec, .mtime_ns = st.st_mtim.tv_nsec };
}

static bool stamp_eq(const struct creds_token_stamp *a, const struct creds_token_stamp *b)
{
	return a->err == b->err && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_s == b->mtime_s && a->mtime_ns == b->mtime_ns;
}

/* The key of the CSR in flight, kept for a restart (CREDS_PENDING_FILE,
 * first line "# CSR <name> ..."). A failure costs only that: logged. */
static void pending_save(struct creds *c)
{
	_cleanup_(wipe_free) char *key_pem = NULL, *text = NULL;
	if (csr_key_to_pem(c->pending_key, &key_pem) < 0 ||
	    asprintf(&text, "# CSR %s for machine %s: the key of node-agent's request in flight\n%s", c->csr_name,
		     c->cfg->machine_name, key_pem) < 0) {
		text = NULL;
		log_error("CSR %s: out of memory keeping its key", c->csr_name);
		return;
	}
	int r = fsx_write_atomic_at(c->state_fd, CREDS_PENDING_FILE, text, strlen(text), 0600, FSX_UID_KEEP,
				    FSX_GID_KEEP, 0);
	if (r < 0) {
		log_warning_errno(r, "CSR %s: cannot keep its key in %s/%s (a restart before it is issued will make "
				  "another CSR)", c->csr_name, c->cfg->state_dir, CREDS_PENDING_FILE);
		return;
	}
	c->pending_kept = true;
}

static void pending_remove(struct creds *c)
{
	if (unlinkat(c->state_fd, CREDS_PENDING_FILE, 0) < 0 && errno != ENOENT)
		log_warning_errno(-errno, "cannot remove %s/%s", c->cfg->state_dir, CREDS_PENDING_FILE);
	c->pending_kept = false;
}

/* The CSR an earlier run had in flight: its key becomes pending_key, so the
 * next create sends that CSR again (409: it exists) and awaits it. Not when
 * it is unreadable, for another machine name (its first line names another
 * CSR than this key's for this machine) or the key of cert_key, the
 * certificate in use (issued, and the agent stopped before removing the
 * file): then the file goes. Returns true when a CSR is resumed. */
static bool pending_resume(struct creds *c, EVP_PKEY *cert_key)
{
	_cleanup_(wipe_free) char *pem = NULL;
	_cleanup_free_ char *name = NULL;
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
	size_t len = 0;
	const char *why = NULL;
	int r = fsx_read_at(c->state_fd, CREDS_PENDING_FILE, PEM_MAX, &pem, &len);
	if (r == -ENOENT)
		return false;
	if (r < 0)
		why = strerror(-r);
	else if (csr_key_from_pem(pem, len, &k) < 0)
		why = "no P-256 private key";
	else if (csr_name(k, c->cfg->machine_name, &name) < 0)
		why = "out of memory";
	else if (!strstr(pem, name))
		why = "not a request for this machine name";
	else if (cert_key && EVP_PKEY_eq(k, cert_key) == 1)
		why = "its certificate is the one in use";
	if (why) {
		log_info("%s/%s not resumed (%s): removed", c->cfg->state_dir, CREDS_PENDING_FILE, why);
		pending_remove(c);
		return false;
	}
	c->pending_key = TAKE_PTR(k);
	c->pending_kept = true;
	log_notice("CSR %s: resuming the request of an earlier run (its key kept in %s/%s)", name, c->cfg->state_dir,
		   CREDS_PENDING_FILE);
	return true;
}

static void drop_csr(struct creds *c)
{
	if (c->pending_kept)
		pending_remove(c);
	EVP_PKEY_free(c->pending_key);
	c->pending_key = NULL;
	c->deadline = 0;
	c->watch_refused = false;
	backoff_reset(&c->step_retry, 0, NULL, NULL);
}

/* A reason the join cannot go on (creds_failure, for the console) of kind
 * key; with log, also the duty's error line (the same text). */
static void note_failure(struct creds *c, bool log, const char *key, const char *fmt, ...) _printf_(4, 5);
static void note_failure(struct creds *c, bool log, const char *key, const char *fmt, ...)
{
	va_list ap;
	c->failure.seq++;
	snprintf(c->failure.key, sizeof(c->failure.key), "%s", key);
	va_start(ap, fmt);
	vsnprintf(c->failure.text, sizeof(c->failure.text), fmt, ap);
	va_end(ap);
	if (log)
		log_error("%s", c->failure.text);
}

enum retry {
	RETRY_FAST,  /* nobody served, or a 401 within REFUSED_GRACE_MS: the same step */
	RETRY_STEP,  /* the server answered with a failure: the same step, backing off */
	RETRY_TOKEN, /* no credential (the token refused for good, or unreadable): the same step, slowly */
	RETRY_NEW,   /* the CSR cannot be used: a new key and a new CSR, backing off */
};

/* The duty's one retry schedule: every wait before a retry is set here
 * (next: CREDS_NEED_CREATE or CREDS_NEED_POLL, the step to do again;
 * RETRY_NEW always creates). */
/* The retries' paces (lib/base/backoff.h, the one retry policy): a step
 * the server answered with a failure 1 s doubling every 2 s up to 30 s, a
 * new CSR or a token to wait for 30 s doubling every minute up to 10 min,
 * full jitter. Nobody serving is the API server's gate's (agent/apigate.h):
 * the step waits for http_due(), no back-off of its own. */
static const struct backoff_policy step_policy = { .base_ms = STEP_MIN_MS, .double_ms = 2000, .cap_ms = STEP_MAX_MS };
static const struct backoff_policy new_policy = { .base_ms = BACKOFF_MIN_MS, .double_ms = 60000,
						  .cap_ms = BACKOFF_MAX_MS };

static void backoff(struct creds *c, uint64_t now, enum retry kind, enum creds_state next, long retry_after_s)
{
	uint64_t d;
	switch (kind) {
	case RETRY_FAST:
		d = random_below(REFUSED_CAP_MS) + 1;
		break;
	case RETRY_STEP:
		d = backoff_fail(&c->step_retry, now, retry_after_s > 0 ? (uint64_t)retry_after_s * 1000u : 0);
		break;
	case RETRY_TOKEN:
	case RETRY_NEW:
	default:
		d = backoff_fail(&c->retry, now, 0);
		break;
	}
	if (kind == RETRY_NEW) {
		drop_csr(c);
		next = CREDS_NEED_CREATE;
	}
	c->state = next;
	c->wake_at = now + d;
	if (kind == RETRY_NEW)
		log_notice("CSR: next attempt in %llu s", (unsigned long long)(d / 1000u));
	c->token_waiting = kind == RETRY_TOKEN;
	if (c->token_waiting)
		token_stamp(c, &c->token_seen);
}

/* An answer from the API server to the bootstrap token (or the
 * certificate): the token is not refused (any more). */
static void answered(struct creds *c)
{
	if (c->auth_logged)
		log_notice("CSR %s: the bootstrap token is accepted again", c->csr_name);
	c->auth_logged = false;
	c->refused_logged = false;
	c->refused_since = 0;
	c->token_waiting = false;
	c->nokey_logged = false;
}

/* A 401 on a CSR request with the bootstrap token (no certificate held).
 * A restarting API server answers so until its caches are synced: the same
 * step again within a second, for REFUSED_GRACE_MS (a new token file starts
 * that again). Refused longer, the token is deleted or expired: nothing the
 * agent can do helps until someone puts a new token or a valid certificate
 * there: one error saying so, then the slow backoff, quietly, with the same
 * CSR (still good when a token comes back). True when req was such a 401
 * and has been handled. */
static bool auth_refused(struct creds *c, const struct http_request *req, const char *what, uint64_t now,
			 enum creds_state step)
{
	if (req->status != 401 || c->have_cert)
		return false;
	struct creds_token_stamp st;
	token_stamp(c, &st);
	if (!c->refused_since || !stamp_eq(&st, &c->refused_stamp)) {
		c->refused_since = now;
		c->refused_stamp = st;
	}
	if (now - c->refused_since < refused_grace_ms(c)) {
		if (!c->refused_logged) {
			c->refused_logged = true;
			log_notice("CSR %s: %s: HTTP 401 for the bootstrap token (a restarting API server answers so "
				   "until its caches are synced): trying again for up to %u s",
				   c->csr_name, what, (unsigned)((refused_grace_ms(c) + 999u) / 1000u));
		}
		backoff(c, now, RETRY_FAST, step, 0);
		return true;
	}
	if (!c->auth_logged) {
		c->auth_logged = true;
		note_failure(c, false, "token-refused", "the API server has refused the bootstrap token for %u s (HTTP 401; "
			     "deleted or expired?)", (unsigned)((refused_grace_ms(c) + 999u) / 1000u));
		log_error("%s: the API server has refused the bootstrap token for %u s (HTTP 401; %s deleted or "
			  "expired?) and node-agent holds no valid client certificate: it cannot authenticate. Needed: "
			  "a new bootstrap token in %s, or a valid client certificate (%s in node-agent's state "
			  "directory). The node keeps its last applied state; retrying in %u s, backing off to %u min, "
			  "and as soon as the token file changes",
			  what, (unsigned)((refused_grace_ms(c) + 999u) / 1000u), "its Secret kube-system/bootstrap-token-<id>",
			  c->cfg->bootstrap_token_file ? c->cfg->bootstrap_token_file : "apiServer.bootstrapTokenFile",
			  CREDS_FILE, BACKOFF_MIN_MS / 1000u, BACKOFF_MAX_MS / 60000u);
	}
	backoff(c, now, RETRY_TOKEN, step, 0);
	return true;
}

/* A request that could not be sent for want of a credential (-ENOKEY: no
 * certificate, the bootstrap token file unreadable or gone): once, naming
 * the file and why, then waiting for it (TOKEN_CHECK_MS). */
static void no_credential(struct creds *c, const char *what, uint64_t now, enum creds_state step)
{
	if (!c->nokey_logged) {
		c->nokey_logged = true;
		int r = token_check(c);
		char file[PATH_MAX + 128];
		snprintf(file, sizeof(file), "the bootstrap token file %s %s%s",
			 c->cfg->bootstrap_token_file ? c->cfg->bootstrap_token_file : "(apiServer.bootstrapTokenFile)",
			 !c->cfg->bootstrap_token_file ? "is not configured"
			 : r == 0		       ? "was not usable a moment ago"
						       : "is not usable: ",
			 c->cfg->bootstrap_token_file && r < 0 ? http_token_strerror(r) : "");
		note_failure(c, false, "no-credential", "no client certificate, and %s", file);
		log_error("CSR %s: cannot %s: node-agent holds no valid client certificate and %s; waiting for one",
			  c->csr_name ? c->csr_name : "-", what, file);
	}
	backoff(c, now, RETRY_TOKEN, step, 0);
}

/* A step that worked ends a run of failures. */
static void step_ok(struct creds *c, uint64_t now)
{
	if (c->step_logged || backoff_failing(&c->step_retry) || c->refused_since)
		c->revived_until = now + REVIVED_MS;
	if (c->step_logged)
		log_notice("CSR %s: the API server answers again", c->csr_name);
	c->step_logged = false;
	backoff_reset(&c->step_retry, now, NULL, NULL);
}

/* A failed answer (not a 401 to the bootstrap token): logged once per run
 * of failures, the same step again. */
static void step_failed(struct creds *c, const struct http_request *req, const char *what, uint64_t now,
			enum creds_state step)
{
	char why[512];
	http_describe_failure(req, why, sizeof(why));
	if (http_gate_took(req)) {
		/* Nobody serving, a starting server: the gate paces the
		 * next try for every duty and logs the outage once. */
		log_debug("CSR %s: %s failed: %s; waiting for the API server", c->csr_name, what, why);
		c->state = step;
		c->wake_at = now;
		return;
	}
	if (!c->step_logged) {
		c->step_logged = true;
		log_warning("CSR %s: %s failed: %s; trying again", c->csr_name, what, why);
	} else
		log_debug("CSR %s: %s failed: %s", c->csr_name, what, why);
	backoff(c, now, RETRY_STEP, step, req->retry_after);
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
	backoff_init(&c->retry, &new_policy);
	backoff_init(&c->step_retry, &step_policy);
	if (!cfg->machine_name || cfg->token_file || cfg->client_cert_file)
		return 0;
	snprintf(c->pem_path, sizeof(c->pem_path), "/proc/self/fd/%d/" CREDS_FILE, state_fd);
	c->state = CREDS_IDLE;
	char why_name[CSR_ERROR_MAX];
	if (csr_machine_name_check(cfg->machine_name, why_name, sizeof(why_name)) < 0) {
		/* node-agent.conf and the stock file are checked when read:
		 * only a broken invariant gets here. No CSR, no retry. */
		log_error("no client certificate can be requested: %s", why_name);
		return 0;
	}

	_cleanup_(wipe_free) char *pem = NULL;
	size_t len = 0;
	int r = fsx_read_at(state_fd, CREDS_FILE, PEM_MAX, &pem, &len);
	if (r == 0) {
		char why[CSR_ERROR_MAX];
		_cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
		struct csr_cert_info info;
		if (check_pem(c, pem, len, &k, &info, why, sizeof(why)) == 0) {
			use_cert(c, &info);
			/* A renewal under way when the agent stopped goes on now. */
			if (pending_resume(c, k))
				c->renew_at = time(NULL);
			log_info("client certificate %s/%s in use: valid until %lld, renewal at %lld",
				 cfg->state_dir, CREDS_FILE, (long long)info.not_after, (long long)c->renew_at);
			return 0;
		}
		log_warning("client certificate %s/%s not usable: %s", cfg->state_dir, CREDS_FILE, why);
	} else if (r != -ENOENT)
		log_warning_errno(r, "cannot read the client certificate %s/%s", cfg->state_dir, CREDS_FILE);
	if (adopt_gna(c) == 0) {
		pending_remove(c);
		return 0;
	}
	(void)pending_resume(c, NULL);
	/* With or without a readable token: start_create() names what is
	 * missing once and waits for the token file. */
	c->state = CREDS_NEED_CREATE;
	c->wake_at = 0;
	return 0;
}

static void on_created(struct http_request *req, void *userdata);
static void on_watch_done(struct http_request *req, void *userdata);
static void on_polled(struct http_request *req, void *userdata);

/* POSTs the CSR of pending_key, a new key when there is none (a POST
 * repeated after no or a failed answer carries the same key, name and
 * subject: a 409 then says the first one was created). */
static void start_create(struct creds *c, uint64_t now)
{
	_cleanup_free_ char *pem = NULL, *body = NULL;
	bool again = c->pending_key != NULL;
	if (!c->pending_key && csr_key_new(&c->pending_key) < 0) {
		log_error("cannot make a P-256 key");
		backoff(c, now, RETRY_NEW, CREDS_NEED_CREATE, 0);
		return;
	}
	free(c->csr_name);
	c->csr_name = NULL;
	char why[CSR_ERROR_MAX];
	int r = csr_machine_name_check(c->cfg->machine_name, why, sizeof(why));
	if (r < 0 || (r = csr_name(c->pending_key, c->cfg->machine_name, &c->csr_name)) < 0 ||
	    (r = csr_request_pem(c->pending_key, c->cfg->machine_name, &pem)) < 0 ||
	    (r = csr_object_json(c->csr_name, pem, &body)) < 0) {
		if (r == -ENOMEM)
			snprintf(why, sizeof(why), "out of memory");
		log_error("cannot make the certificate signing request: %s", why);
		backoff(c, now, RETRY_NEW, CREDS_NEED_CREATE, 0);
		return;
	}
	if (!again)
		pending_save(c);
	r = http_start(c->http, "POST", CSR_PATH, NULL, body, "application/json", false, NULL, on_created, c,
		       &c->req);
	if (r == -EAGAIN) /* the API server's gate closed meanwhile: creds_tick() waits for it */
		return;
	if (r == -ENOKEY) {
		no_credential(c, "send it", now, CREDS_NEED_CREATE);
		return;
	}
	if (r < 0) {
		log_error_errno(r, "CSR %s: cannot send it", c->csr_name);
		backoff(c, now, RETRY_STEP, CREDS_NEED_CREATE, 0);
		return;
	}
	c->state = CREDS_CREATING;
	if (!again)
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
		if (!c->deadline)
			c->deadline = now + c->cfg->csr_timeout_ms;
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
		step_ok(c, now);
		answered(c);
		c->state = CREDS_NEED_POLL;
		c->wake_at = now;
		return;
	}
	if (auth_refused(c, req, "creating a CSR", now, CREDS_NEED_CREATE))
		return;
	if (req->status == 400 || req->status == 422) {
		/* The request itself is refused: another one may not be. */
		char why[512];
		http_describe_failure(req, why, sizeof(why));
		note_failure(c, true, "csr-invalid", "CSR %s: creating it failed: %s", c->csr_name, why);
		backoff(c, now, RETRY_NEW, CREDS_NEED_CREATE, 0);
		return;
	}
	step_failed(c, req, "creating it", now, CREDS_NEED_CREATE);
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
		note_failure(c, true, "csr-refused", "CSR %s: issued certificate refused: %s", c->csr_name, why);
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

/* Within REVIVED_MS of the API server answering again: after this duty's
 * own failed steps, or after the API server's gate (agent/apigate.h) was
 * closed for every duty (then this duty's requests waited and never
 * failed). */
static bool reviving(const struct creds *c, uint64_t now)
{
	uint64_t up_at = http_gate_up_at(c->http);
	return now < c->revived_until || (up_at && now - up_at < REVIVED_MS);
}

/* Acts on what the CSR says (from a GET or a watch event). */
static void handle_status(struct creds *c, struct csr_status *s, uint64_t now)
{
	if (c->csr_uid[0] && s->uid[0] && strcmp(c->csr_uid, s->uid) != 0) {
		log_error("CSR %s: its uid changed (\"%s\" -> \"%s\"): not ours", c->csr_name, c->csr_uid, s->uid);
		backoff(c, now, RETRY_NEW, CREDS_NEED_CREATE, 0);
		return;
	}
	switch (s->state) {
	case CSR_PENDING:
	case CSR_APPROVED:
		c->state = CREDS_NEED_POLL;
		c->wake_at = !c->watch_refused ? now : now + (reviving(c, now) ? REVIVED_POLL_MS : POLL_MS);
		break;
	case CSR_DENIED:
	case CSR_FAILED:
		note_failure(c, true, s->state == CSR_DENIED ? "csr-denied" : "csr-failed",
			     "CSR %s: %s, reason \"%s\", message \"%s\"", c->csr_name,
			     s->state == CSR_DENIED ? "denied" : "failed", s->reason, s->message);
		backoff(c, now, RETRY_NEW, CREDS_NEED_CREATE, 0);
		break;
	case CSR_ISSUED:
		if (install(c, s, now) < 0) {
			backoff(c, now, RETRY_NEW, CREDS_NEED_CREATE, 0);
			break;
		}
		drop_csr(c);
		backoff_reset(&c->retry, now, NULL, NULL);
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
		note_failure(c, true, "csr-gone", "CSR %s: gone before it was issued", c->csr_name);
		backoff(c, now, RETRY_NEW, CREDS_NEED_CREATE, 0);
		return;
	}
	if (auth_refused(c, req, "reading the pending CSR", now, CREDS_NEED_POLL))
		return;
	if (req->status != 200) {
		step_failed(c, req, "reading it", now, CREDS_NEED_POLL);
		return;
	}
	step_ok(c, now);
	answered(c);
	struct csr_status s;
	char err[CSR_ERROR_MAX];
	if (csr_status_parse(req->body ? req->body : "", req->body_len, &s, err, sizeof(err)) < 0) {
		log_error("CSR %s: unreadable answer: %s", c->csr_name, err);
		backoff(c, now, RETRY_NEW, CREDS_NEED_CREATE, 0);
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
		note_failure(c, true, "csr-gone", "CSR %s: gone before it was issued", c->csr_name);
		backoff(c, now, RETRY_NEW, CREDS_NEED_CREATE, 0);
		return;
	}
	if (req->status == 200) {
		step_ok(c, now);
		answered(c);
	}
	if (req->status == 200 && req->result == CURLE_OK && req->error == 0 &&
	    kube_splitter_pending(&req->splitter) == 0) {
		/* Ended by the server (timeoutSeconds): watch again from the
		 * last version seen, at most every 2 s. */
		c->state = CREDS_NEED_POLL;
		c->wake_at = now - c->watch_started < POLL_MS ? c->watch_started + POLL_MS : now;
		return;
	}
	if (auth_refused(c, req, "watching the pending CSR", now, CREDS_NEED_POLL))
		return;
	/* Nobody serving, a restarting server's 5xx, a stream cut: the same
	 * watch again (from the last version seen). A refusal (403: Gardener's
	 * authorizer lets a node-agent certificate get but not watch), an
	 * error event (410) or a stream that breaks in another way: GET. */
	if (req->status != 403 && req->error != -ESTALE && req->error != -EBADMSG &&
	    (http_nobody_serving(req) || req->status >= 500 || req->status == 429 ||
	     (req->status == 200 && req->result != CURLE_OK))) {
		step_failed(c, req, "watching it", now, CREDS_NEED_POLL);
		return;
	}
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
	if (r == -EAGAIN) /* the API server's gate: start_poll() and creds_tick() wait for it */
		return;
	if (r == -ENOKEY) {
		no_credential(c, "watch it", now, CREDS_NEED_POLL);
		return;
	}
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
	if (c->deadline && now >= c->deadline) {
		note_failure(c, true, "csr-timeout", "CSR %s: not issued within %u s (never approved?)", c->csr_name,
			     c->cfg->csr_timeout_ms / 1000u);
		backoff(c, now, RETRY_NEW, CREDS_NEED_CREATE, 0);
		return;
	}
	if (!c->watch_refused) {
		start_watch(c, now);
		if (c->state == CREDS_WATCHING || c->token_waiting || http_due(c->http, now) > now)
			return;
	}
	char path[sizeof(CSR_PATH) + 256];
	snprintf(path, sizeof(path), "%s/%s", CSR_PATH, c->csr_name);
	int r = http_start(c->http, "GET", path, NULL, NULL, NULL, false, NULL, on_polled, c, &c->req);
	if (r == -EAGAIN) /* the API server's gate */
		return;
	if (r == -ENOKEY) {
		no_credential(c, "read it", now, CREDS_NEED_POLL);
		return;
	}
	if (r < 0) {
		log_warning_errno(r, "CSR %s: cannot read it", c->csr_name);
		backoff(c, now, RETRY_STEP, CREDS_NEED_POLL, 0);
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
			int r = token_check(c);
			log_error("client certificate expired at %lld and no bootstrap token (%s%s%s): node-agent "
				  "cannot authenticate; the node keeps its last applied state until a bootstrap token "
				  "is there",
				  (long long)c->not_after,
				  c->cfg->bootstrap_token_file ? c->cfg->bootstrap_token_file : "apiServer.bootstrapTokenFile unset",
				  c->cfg->bootstrap_token_file ? ": " : "",
				  c->cfg->bootstrap_token_file ? http_token_strerror(r) : "");
			/* Said: the request that finds no credential waits quietly. */
			c->nokey_logged = true;
			if (c->state == CREDS_IDLE) {
				c->state = CREDS_NEED_CREATE;
				c->wake_at = now;
			}
		}
	}
	if (c->token_waiting && (c->state == CREDS_NEED_CREATE || c->state == CREDS_NEED_POLL) && now < c->wake_at) {
		/* A new token (or one readable again) is tried at once. */
		if (now >= c->token_check_at) {
			struct creds_token_stamp st;
			token_stamp(c, &st);
			c->token_check_at = now + TOKEN_CHECK_MS;
			if (!stamp_eq(&st, &c->token_seen)) {
				log_notice("bootstrap token file %s changed: trying it",
					   c->cfg->bootstrap_token_file ? c->cfg->bootstrap_token_file : "-");
				c->token_seen = st;
				c->wake_at = now;
				backoff_reset(&c->retry, now, NULL, NULL);
				c->refused_since = 0;
				c->auth_logged = false;
				c->nokey_logged = false;
				c->refused_logged = false;
			}
		}
		if (now < c->wake_at)
			next = c->token_check_at < c->wake_at ? c->token_check_at : c->wake_at;
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
		/* Not before the API server's gate lets a request through. */
		if (now >= http_due(c->http, c->wake_at)) {
			start_create(c, now);
			return c->state == CREDS_NEED_CREATE ? creds_tick(c, now) : UINT64_MAX;
		}
		if (next == UINT64_MAX || http_due(c->http, c->wake_at) < next)
			next = http_due(c->http, c->wake_at);
		break;
	case CREDS_NEED_POLL:
		if (now >= http_due(c->http, c->wake_at)) {
			start_poll(c, now);
			if (c->state == CREDS_WATCHING)
				return c->watch_until;
			return c->state == CREDS_POLLING ? UINT64_MAX : creds_tick(c, now);
		}
		if (next == UINT64_MAX || http_due(c->http, c->wake_at) < next)
			next = http_due(c->http, c->wake_at);
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
