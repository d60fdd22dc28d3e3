/* node-agent's HTTPS client: libcurl (multi interface) + OpenSSL, locked down.
 *
 * Every request verifies the server against the configured CA bundle only
 * (never the system store), checks the host name, speaks https only, never
 * follows a redirect, ignores proxy environment variables unless the config
 * names a proxy, has a connect deadline, and caps what it accepts: one-shot
 * bodies at limits.responseMaxBytes, watch lines at the same ceiling.
 *
 * Credentials: the bearer token file is re-read whenever its inode, size or
 * mtime change (checked before each request); a client certificate + key; the
 * bootstrap token only when neither is usable. Credentials are never logged.
 *
 * Every API request passes the API server's gate (apigate.h): one back-off
 * per server, shared by all duties, one attempt at a time while nobody
 * serves; the gate logs an outage's start and end.
 *
 * A request's done callback runs from http_dispatch(); the request is freed
 * right after it returns. Logs only at debug level (the gate aside): the
 * caller decides. */
#ifndef NA_AGENT_HTTP_H
#define NA_AGENT_HTTP_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "apigate.h"
#include "config.h"
#include "kube.h"

struct http_request;
typedef void (*http_done_cb)(struct http_request *req, void *userdata);

struct http_client {
	CURLM *multi;
	const struct config *cfg;
	char user_agent[64];
	/* Bearer token cache, keyed by the file's identity. */
	dev_t token_dev;
	ino_t token_ino;
	off_t token_size;
	struct timespec token_mtime;
	char *token;
	char *client_pem;     /* certificate + key from the CSR API (credentials.c); NULL: none */
	int bootstrap_err;    /* why the bootstrap token file was unusable last time (logged once), 0: it was not */
	unsigned n_active;
	uint64_t n_requests;  /* requests started since init (for STATUS and tests) */
	struct apigate gate;  /* does the API server serve? (apigate.h) */
	/* Optional observer (metrics): called when a request has started
	 * (done false) and before its done callback (done true). */
	void (*observe)(const struct http_request *req, bool done, void *userdata);
	void *observe_data;
};

struct http_request {
	struct http_client *client;
	CURL *easy;
	struct curl_slist *headers;
	char *url;
	char *path;                 /* for logs: the path without the query */
	const char *method;
	char *payload;
	bool watch;
	bool probe;                 /* http_probe_start(): no credentials, not observed */
	size_t max;                 /* ceiling of a one-shot body */

	/* Response. */
	long status;                /* HTTP status, 0 before headers */
	char *body;                 /* one-shot body, or the error body of a watch */
	size_t body_len;
	struct kube_splitter splitter; /* watch with status 200 */
	kube_line_cb on_line;
	int error;                  /* -EMSGSIZE (ceiling), or what on_line returned */
	CURLcode result;
	char errbuf[CURL_ERROR_SIZE];
	long retry_after;           /* seconds from Retry-After, 0 if none */
	uint64_t last_activity_ms;  /* monotonic: when the last byte arrived; for a
	                               watch stream, the last complete event line */
	bool got_bytes;
	bool handshake_done;        /* the TLS handshake completed (an answer may have come) */
	bool connect_timeout;       /* timed out before the connection was made */
	bool answered;              /* a final HTTP status line came (the gate has seen it) */
	bool gate_probe;            /* started while the API server did not serve: the gate's probe */
	bool gate_took;             /* the gate took its failure as the server's (http_gate_took()) */

	http_done_cb done;
	void *userdata;
};

int http_client_init(struct http_client *c, const struct config *cfg);
void http_client_done(struct http_client *c);

/* Starts a request: method "GET" or "PATCH", path below the server URL
 * ("/api/v1/nodes/x"), query (may be NULL), an optional JSON body with its
 * content type. With watch set, a 200 response body is split into lines
 * handed to on_line (which may return a negative errno to abort), and the
 * request has no total deadline (the caller watches last_activity_ms);
 * otherwise the body is kept in req->body within the ceiling and the request
 * times out after timeouts.requestMs. Returns 0 and *ret (owned by the
 * client until done runs). Fails with -ENOKEY when no credential is usable,
 * and with -EAGAIN, starting nothing, before http_gate_at(): that is no
 * failure of the duty's (nothing to log, no back-off of its own), it waits
 * for the gate. */
int http_start(struct http_client *c, const char *method, const char *path, const char *query,
	       const char *payload, const char *content_type, bool watch, kube_line_cb on_line,
	       http_done_cb done, void *userdata, struct http_request **ret);

/* Starts a plain-HTTP GET of url for a health probe (agent/health.h); url
 * must pass urlx_loopback_is_valid() (-EINVAL otherwise, checked
 * again here). No credential, no proxy whatever the environment or the
 * config says, no redirect, http only, a fresh connection that is not kept
 * (the API server's connections stay in libcurl's small cache), connect and
 * total deadline timeout_ms, the body capped at max bytes (req->error
 * -EMSGSIZE beyond). Not counted in n_requests nor shown to the observer:
 * those are the API server's. Otherwise like http_start(). */
int http_probe_start(struct http_client *c, const char *url, unsigned timeout_ms, size_t max, http_done_cb done,
		     void *userdata, struct http_request **ret);

/* Starts a GET of a registry mirror's url for its readinessProbe
 * (agent/mirrors.h): http or https only, no credential, no proxy, no
 * redirect, a fresh connection not kept, connect and total deadline
 * timeout_ms, the body capped at max. https verifies the server against
 * ca_pem (PEM text, the host's caCerts) when non-NULL, else against the
 * system's trust store (as Go's default client in gardener-node-agent),
 * TLS 1.2 at least. Not counted in n_requests nor shown to the observer.
 * Returns 0 and *ret, -EINVAL for another scheme, -ENOMEM. */
int http_mirror_start(struct http_client *c, const char *url, const char *ca_pem, unsigned timeout_ms, size_t max,
		      http_done_cb done, void *userdata, struct http_request **ret);

/* Uses the PEM file at path (certificate chain and private key together,
 * replaced atomically by its owner) as the client certificate of every
 * request started from now on, after the bearer token file and before
 * apiServer.clientCertificateFile and the bootstrap token; NULL stops using
 * it. libcurl reads the file for each new connection, so a renewed
 * certificate takes effect without a restart. */
int http_set_client_pem(struct http_client *c, const char *path);

/* Whether the token file at path holds a usable token (what a request
 * would send): 0, or -errno (-ENOENT missing, -EACCES unreadable,
 * -EBADMSG empty or not one token). Reads it, wipes the copy, logs nothing. */
int http_token_file_check(const char *path);
/* What an error of http_token_file_check() means, for logs. */
const char *http_token_strerror(int r);

/* Aborts a request without calling its done callback and frees it. */
void http_cancel(struct http_request *req);

/* Waits up to timeout_ms for network activity or one of the extra fds, like
 * curl_multi_poll(). */
int http_wait(struct http_client *c, struct curl_waitfd *extra, unsigned n_extra, int timeout_ms);

/* Whether a failed request met nobody serving: the connection refused,
 * closed or reset before any HTTP status line (a load balancer in front of
 * a restarting API server accepts and then closes), or the TLS handshake
 * not done within connectMs. A timeout or failure after the handshake is
 * not. Such failures are the gate's (apigate.h). */
bool http_nobody_serving(const struct http_request *req);

/* When an API request may start (monotonic ms): 0 while the API server
 * serves; while it does not, the slot of the gate's next attempt, or
 * UINT64_MAX while that attempt is in flight (its end wakes the loop, and
 * the gate opening lets every duty start at its next tick). */
uint64_t http_gate_at(const struct http_client *c);

/* When the API server last served again after nobody served or it was
 * starting (monotonic ms; 0: not since the start): a duty whose peers
 * catch up after a restart (a CSR's signer) asks more often for a while. */
uint64_t http_gate_up_at(const struct http_client *c);

/* max(wake_at, http_gate_at()): when a duty whose own retry is due at
 * wake_at may start its request. */
uint64_t http_due(const struct http_client *c, uint64_t wake_at);

/* Whether the gate took req's failure as the server's (nobody serving, a
 * starting server's answer: apigate.h): the duty then retries as soon as
 * http_due() lets it, without a back-off of its own and without logging it
 * (the gate logs the outage once). */
bool http_gate_took(const struct http_request *req);

/* Drives transfers and runs done callbacks of finished requests. */
int http_dispatch(struct http_client *c);

/* A one-line description of why the request failed, for logs: the curl
 * error, the ceiling, or the HTTP status with the Status message; a
 * connection that timed out names the host and what to check. Never
 * contains credentials. */
void http_describe_failure(const struct http_request *req, char *buf, size_t len);

/* Every API connection: TCP keepalive after HTTP_KEEPALIVE_IDLE_S idle, a
 * probe every HTTP_KEEPALIVE_INTVL_S, HTTP_KEEPALIVE_PROBES unanswered ones
 * (or data unacknowledged for HTTP_DEAD_PEER_S) end it: a dead peer is
 * noticed within HTTP_DEAD_PEER_S (60 s). */
#define HTTP_KEEPALIVE_IDLE_S 30u
#define HTTP_KEEPALIVE_INTVL_S 10u
#define HTTP_KEEPALIVE_PROBES 3
#define HTTP_DEAD_PEER_S (HTTP_KEEPALIVE_IDLE_S + HTTP_KEEPALIVE_PROBES * HTTP_KEEPALIVE_INTVL_S)

/* Sets the options libcurl 7.88 has no setting for (TCP_KEEPCNT,
 * TCP_USER_TIMEOUT) on socket fd; -errno. */
int http_tune_socket(int fd);

/* host[:port] of a URL (no scheme, userinfo or path), for logs. */
void http_url_authority(const char *url, char *buf, size_t len);

/* Monotonic milliseconds. */
uint64_t now_ms(void);

/* A random number in [0, n) for jitter that is no retry (a renewal time,
 * a poll period): backoff_random(). */
uint64_t random_below(uint64_t n);


#endif
