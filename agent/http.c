/* libcurl wrapper; see http.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "backoff.h"
#include "cleanup.h"
#include "fsx.h"
#include "http.h"
#include "log.h"
#include "urlx.h"


#define TOKEN_MAX (64u << 10)

uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t random_below(uint64_t n)
{
	return backoff_random(NULL, n);
}

int http_client_init(struct http_client *c, const struct config *cfg)
{
	*c = (struct http_client){ .cfg = cfg };
	apigate_init(&c->gate, cfg->server);
	snprintf(c->user_agent, sizeof(c->user_agent), "node-agent/%s", NA_VERSION);
	c->multi = curl_multi_init();
	if (!c->multi)
		return -ENOMEM;
	/* No cap on connections to the API server: each duty has at most one
	 * request in flight, which bounds them (about 15, two of them the
	 * watches). With a cap (it was 4) a request beyond it waits in
	 * libcurl's pending list, behind watches that hold their connections
	 * for minutes: a Lease renewal got no answer within 10 s in a CI run,
	 * and removing the pending handle then crashed libcurl 7.88
	 * (SIGSEGV in libcurl; the pending list's history: curl/curl#2677,
	 * #21396). Idle connections kept for reuse: at most 8. */
	curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, 8L);
	return 0;
}

static void token_forget(struct http_client *c)
{
	if (c->token) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
	}
	c->token = NULL;
	c->token_ino = 0;
	c->token_dev = 0;
}

void http_client_done(struct http_client *c)
{
	if (c->multi)
		curl_multi_cleanup(c->multi);
	token_forget(c);
	free(c->client_pem);
	*c = (struct http_client){};
}

/* A token is one line of visible ASCII; anything else could smuggle header
 * lines. Trailing whitespace (an editor's newline) is dropped. */
static int token_clean(char *t)
{
	size_t n = strlen(t);
	while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' ' || t[n - 1] == '\t'))
		t[--n] = '\0';
	if (n == 0)
		return -ENODATA;
	for (size_t i = 0; i < n; i++)
		if (t[i] <= 0x20 || t[i] >= 0x7f)
			return -EBADMSG;
	return 0;
}

static int read_token_file(const char *path, char **ret)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return negerrno();
	char *t = NULL;
	size_t len;
	int r = fsx_read_fd(fd, TOKEN_MAX, &t, &len);
	if (r < 0)
		return r;
	if (memchr(t, '\0', len) || (r = token_clean(t)) < 0) {
		explicit_bzero(t, len);
		free(t);
		return r < 0 ? r : -EBADMSG;
	}
	*ret = t;
	return 0;
}

int http_token_file_check(const char *path)
{
	char *t = NULL;
	int r = read_token_file(path, &t);
	if (r < 0)
		return r;
	explicit_bzero(t, strlen(t));
	free(t);
	return 0;
}

const char *http_token_strerror(int r)
{
	return r == -EBADFD ? "not a regular file" : r == -EBADMSG ? "empty, or not one token" : strerror(-r);
}

/* The bearer token, re-read when the file's identity changed since last time.
 * -ENOENT when there is no token file (configured or present). */
static int current_token(struct http_client *c, const char **ret)
{
	const char *path = c->cfg->token_file;
	if (!path)
		return -ENOENT;
	struct stat st;
	if (stat(path, &st) < 0) {
		int r = negerrno();
		token_forget(c);
		return r;
	}
	if (c->token && st.st_ino == c->token_ino && st.st_dev == c->token_dev && st.st_size == c->token_size &&
	    st.st_mtim.tv_sec == c->token_mtime.tv_sec && st.st_mtim.tv_nsec == c->token_mtime.tv_nsec) {
		*ret = c->token;
		return 0;
	}
	char *t;
	int r = read_token_file(path, &t);
	token_forget(c);
	if (r < 0)
		return r;
	log_debug("bearer token (re-)read from %s", path);
	c->token = t;
	c->token_ino = st.st_ino;
	c->token_dev = st.st_dev;
	c->token_size = st.st_size;
	c->token_mtime = st.st_mtim;
	*ret = c->token;
	return 0;
}

static void request_free(struct http_request *r)
{
	if (!r)
		return;
	if (r->easy)
		curl_easy_cleanup(r->easy);
	if (r->headers) {
		/* The Authorization header holds a credential. */
		for (struct curl_slist *h = r->headers; h; h = h->next)
			explicit_bzero(h->data, strlen(h->data));
		curl_slist_free_all(r->headers);
	}
	free(r->url);
	free(r->path);
	free(r->payload);
	free(r->body);
	kube_splitter_done(&r->splitter);
	free(r);
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct http_request *r = userdata;
	size_t n = size * nmemb;
	size_t max = r->max;

	r->got_bytes = true;
	if (r->status == 0)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);

	if (r->watch && r->status == 200) {
		uint64_t lines = r->splitter.lines;
		int k = kube_splitter_feed(&r->splitter, data, n, r->on_line, r->userdata);
		if (k < 0) {
			r->error = k;
			return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
		}
		/* Only a complete event is progress: a peer that trickles one
		 * line a byte at a time must not keep a watch (and stale data)
		 * alive past timeouts.watchIdleMs. */
		if (r->splitter.lines != lines)
			r->last_activity_ms = now_ms();
		return n;
	}
	r->last_activity_ms = now_ms();
	if (r->body_len + n > max) {
		r->error = -EMSGSIZE;
		return 0;
	}
	char *b = realloc(r->body, r->body_len + n + 1);
	if (!b) {
		r->error = -ENOMEM;
		return 0;
	}
	memcpy(b + r->body_len, data, n);
	r->body_len += n;
	b[r->body_len] = '\0';
	r->body = b;
	return n;
}

/* The first final status line of an API answer goes to the gate as soon as
 * it comes: a watch that is answered 200 may send nothing else for
 * minutes. (A proxy's answer to CONNECT is not the response code.) */
static void gate_answer(struct http_request *r)
{
	long code = 0;
	if (r->answered || r->probe || curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK ||
	    code < 200)
		return;
	r->answered = true;
	r->gate_took = apigate_answer(&r->client->gate, code, r->gate_probe, now_ms());
	r->gate_probe = false;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct http_request *r = userdata;
	(void)data;
	r->last_activity_ms = now_ms();
	gate_answer(r);
	return size * nmemb;
}

static int add_header(struct curl_slist **list, const char *h)
{
	struct curl_slist *n = curl_slist_append(*list, h);
	if (!n)
		return -ENOMEM;
	*list = n;
	return 0;
}

/* Picks the credential for this request: bearer token, client certificate,
 * bootstrap token, in that order. */
static int set_credentials(struct http_client *c, struct http_request *r)
{
	const struct config *cfg = c->cfg;
	const char *token = NULL;
	_cleanup_free_ char *bootstrap = NULL;
	int r_tok = current_token(c, &token);

	if (r_tok < 0 && r_tok != -ENOENT)
		log_debug_errno(r_tok, "bearer token file %s unusable", cfg->token_file);
	if (r_tok < 0 && c->client_pem) {
		curl_easy_setopt(r->easy, CURLOPT_SSLCERT, c->client_pem);
		curl_easy_setopt(r->easy, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(r->easy, CURLOPT_SSLKEY, c->client_pem);
		curl_easy_setopt(r->easy, CURLOPT_SSLKEYTYPE, "PEM");
		return 0;
	}
	if (r_tok < 0 && cfg->client_cert_file && cfg->client_key_file) {
		curl_easy_setopt(r->easy, CURLOPT_SSLCERT, cfg->client_cert_file);
		curl_easy_setopt(r->easy, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(r->easy, CURLOPT_SSLKEY, cfg->client_key_file);
		curl_easy_setopt(r->easy, CURLOPT_SSLKEYTYPE, "PEM");
		return 0;
	}
	if (r_tok < 0 && cfg->bootstrap_token_file) {
		int k = read_token_file(cfg->bootstrap_token_file, &bootstrap);
		if (k < 0) {
			/* Named once per cause (every request would say it again);
			 * a missing file is the normal end of the bootstrap. */
			log_full(k != c->bootstrap_err && k != -ENOENT ? LOG_WARNING : LOG_DEBUG, 0, __FILE__, __LINE__,
				 NULL, "bootstrap token file %s not usable: %s", cfg->bootstrap_token_file,
				 http_token_strerror(k));
			c->bootstrap_err = k;
			return -ENOKEY;
		}
		if (c->bootstrap_err && c->bootstrap_err != -ENOENT)
			log_notice("bootstrap token file %s usable again", cfg->bootstrap_token_file);
		c->bootstrap_err = 0;
		token = bootstrap;
	}
	if (!token)
		return -ENOKEY;

	size_t n = strlen("Authorization: Bearer ") + strlen(token) + 1;
	_cleanup_free_ char *h = malloc(n);
	if (!h)
		return -ENOMEM;
	snprintf(h, n, "Authorization: Bearer %s", token);
	int k = add_header(&r->headers, h);
	explicit_bzero(h, n);
	if (bootstrap)
		explicit_bzero(bootstrap, strlen(bootstrap));
	return k;
}

int http_set_client_pem(struct http_client *c, const char *path)
{
	char *p = NULL;
	if (path && !(p = strdup(path)))
		return -ENOMEM;
	free(c->client_pem);
	c->client_pem = p;
	return 0;
}

int http_tune_socket(int fd)
{
	/* libcurl 7.88 (Debian 12) sets TCP_KEEPIDLE and TCP_KEEPINTVL but has no
	 * CURLOPT_TCP_KEEPCNT (8.9): without it Linux sends 9 probes, a peer gone
	 * without a FIN/RST is noticed after 30 + 9 * 10 = 120 s. With 3 probes
	 * and TCP_USER_TIMEOUT (unacknowledged data, where keepalive does not
	 * probe) a dead connection ends after HTTP_DEAD_PEER_S, so a watch needs
	 * no idle timer shorter than its stream: kube-apiserver sends no
	 * bookmark on a watch without events (v1.20: bookmarks only ride on
	 * the cacher's progress, see docs/design.md "watchIdleMs"). */
	static const int cnt = HTTP_KEEPALIVE_PROBES;
	static const unsigned user_ms = HTTP_DEAD_PEER_S * 1000u;
	if (setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms)) < 0)
		return -errno;
	return 0;
}

static int on_sockopt(void *userdata, curl_socket_t fd, curlsocktype purpose)
{
	(void)userdata;
	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKOPT_OK;
	int k = http_tune_socket(fd);
	if (k < 0 && k != -ENOPROTOOPT && k != -EOPNOTSUPP) /* a unix socket (tests) has no TCP options */
		log_debug("TCP keepalive options not set: %s", strerror(-k));
	return CURL_SOCKOPT_OK;
}

/* The options every request has, the API's and the probes': no signals,
 * HTTP/1.1, our User-Agent, no content encoding, the request's error
 * buffer and callbacks. */
static void set_common_options(CURL *e, struct http_request *r, const char *user_agent)
{
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_USERAGENT, user_agent);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, NULL);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
}


int http_start(struct http_client *c, const char *method, const char *path, const char *query,
	       const char *payload, const char *content_type, bool watch, kube_line_cb on_line,
	       http_done_cb done, void *userdata, struct http_request **ret)
{
	const struct config *cfg = c->cfg;
	bool probe = false;
	if (!apigate_admit(&c->gate, now_ms(), &probe))
		return -EAGAIN;
	struct http_request *r = calloc(1, sizeof(*r));
	if (!r) {
		if (probe)
			apigate_probe_gone(&c->gate);
		return -ENOMEM;
	}
	r->client = c;
	r->gate_probe = probe;
	r->method = method;
	r->watch = watch;
	r->on_line = on_line;
	r->done = done;
	r->userdata = userdata;
	r->max = cfg->response_max;
	kube_splitter_init(&r->splitter, cfg->response_max);
	int k = -ENOMEM;

	size_t n = strlen(cfg->server) + strlen(path) + (query ? strlen(query) + 1 : 0) + 1;
	r->url = malloc(n);
	r->path = strdup(path);
	if (!r->url || !r->path)
		goto fail;
	/* The configured server may end in "/". */
	const char *server = cfg->server;
	size_t sl = strlen(server);
	while (sl > 0 && server[sl - 1] == '/')
		sl--;
	snprintf(r->url, n, "%.*s%s%s%s", (int)sl, server, path, query ? "?" : "", query ? query : "");

	r->easy = curl_easy_init();
	if (!r->easy)
		goto fail;
	CURL *e = r->easy;

	/* Transport policy: a request that cannot have all of it (libcurl out
	 * of memory for a string option) is not made, rather than made with
	 * libcurl's defaults (its own CA bundle, the environment's proxy). */
	if (curl_easy_setopt(e, CURLOPT_URL, r->url) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https") != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "https") != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_CAINFO, cfg->ca_file) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_CAPATH, NULL) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_PROXY, cfg->https_proxy ? cfg->https_proxy : "") != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_NOPROXY, cfg->no_proxy ? cfg->no_proxy : "") != CURLE_OK) {
		k = -ENOMEM;
		goto fail;
	}
	set_common_options(e, r, c->user_agent);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)cfg->connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, (long)HTTP_KEEPALIVE_IDLE_S);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, (long)HTTP_KEEPALIVE_INTVL_S);
	curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, on_sockopt);
	if (!watch) {
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)cfg->request_timeout_ms);
		curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)cfg->response_max);
	}

	if ((k = add_header(&r->headers, "Accept: application/json")) < 0)
		goto fail;
	if (payload) {
		r->payload = strdup(payload);
		if (!r->payload)
			goto fail;
		char ct[128];
		snprintf(ct, sizeof(ct), "Content-Type: %s", content_type ? content_type : "application/json");
		if ((k = add_header(&r->headers, ct)) < 0)
			goto fail;
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->payload);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(r->payload));
	}
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if ((k = set_credentials(c, r)) < 0)
		goto fail;
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);

	r->last_activity_ms = now_ms();
	if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
		k = -ENOMEM;
		goto fail;
	}
	c->n_active++;
	c->n_requests++;
	if (c->observe)
		c->observe(r, false, c->observe_data);
	*ret = r;
	return 0;
fail:
	if (r->gate_probe)
		apigate_probe_gone(&c->gate);
	request_free(r);
	return k;
}

/* A GET without credentials or proxy, on a fresh connection, never
 * followed, one deadline: the health probes (http only, loopback) and the
 * registry mirrors' readinessProbe (http or https; with ca_pem, only that
 * CA; TLS 1.2 at least). */
static int probe_start(struct http_client *c, const char *url, bool tls, const char *ca_pem, unsigned timeout_ms,
		       size_t max, http_done_cb done, void *userdata, struct http_request **ret)
{
	struct http_request *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->client = c;
	r->method = "GET";
	r->probe = true;
	r->max = max;
	r->done = done;
	r->userdata = userdata;
	kube_splitter_init(&r->splitter, max);
	r->url = strdup(url);
	r->path = strdup(url);
	r->easy = curl_easy_init();
	if (!r->url || !r->path || !r->easy)
		goto fail;
	CURL *e = r->easy;
	const char *protocols = tls ? "http,https" : "http";
	if (curl_easy_setopt(e, CURLOPT_URL, r->url) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, protocols) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, protocols) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_PROXY, "") != CURLE_OK || curl_easy_setopt(e, CURLOPT_NOPROXY, "*") != CURLE_OK)
		goto fail;
	if (tls && (curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK ||
		    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK ||
		    curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2) != CURLE_OK))
		goto fail;
	if (ca_pem) {
		struct curl_blob blob = { .data = (void *)(uintptr_t)ca_pem, .len = strlen(ca_pem),
					  .flags = CURL_BLOB_COPY };
		if (curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob) != CURLE_OK)
			goto fail;
	}
	set_common_options(e, r, c->user_agent);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max);
	curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	r->last_activity_ms = now_ms();
	if (curl_multi_add_handle(c->multi, e) != CURLM_OK)
		goto fail;
	c->n_active++;
	*ret = r;
	return 0;
fail:
	request_free(r);
	return -ENOMEM;
}

int http_probe_start(struct http_client *c, const char *url, unsigned timeout_ms, size_t max, http_done_cb done,
		     void *userdata, struct http_request **ret)
{
	if (!urlx_loopback_is_valid(url))
		return -EINVAL;
	return probe_start(c, url, false, NULL, timeout_ms, max, done, userdata, ret);
}

int http_mirror_start(struct http_client *c, const char *url, const char *ca_pem, unsigned timeout_ms, size_t max,
		      http_done_cb done, void *userdata, struct http_request **ret)
{
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
		return -EINVAL;
	return probe_start(c, url, true, ca_pem, timeout_ms, max, done, userdata, ret);
}

void http_cancel(struct http_request *r)
{
	if (!r)
		return;
	if (r->gate_probe)
		apigate_probe_gone(&r->client->gate);
	curl_multi_remove_handle(r->client->multi, r->easy);
	r->client->n_active--;
	request_free(r);
}

int http_wait(struct http_client *c, struct curl_waitfd *extra, unsigned n_extra, int timeout_ms)
{
	CURLMcode m = curl_multi_poll(c->multi, extra, n_extra, timeout_ms, NULL);
	return m == CURLM_OK ? 0 : -EIO;
}

int http_dispatch(struct http_client *c)
{
	int running = 0;
	CURLMcode m = curl_multi_perform(c->multi, &running);
	if (m != CURLM_OK)
		return -EIO;
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(c->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		struct http_request *r = NULL;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		r->result = msg->data.result;
		if (r->result == CURLE_OPERATION_TIMEDOUT) {
			/* No connect time: the TCP (or TLS) connection was never
			 * made; a filter or firewall dropping packets looks
			 * exactly like this. */
			curl_off_t ct = 0;
			r->connect_timeout = curl_easy_getinfo(r->easy, CURLINFO_CONNECT_TIME_T, &ct) == CURLE_OK && ct == 0;
		}
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
		curl_off_t hs = 0;
		r->handshake_done = curl_easy_getinfo(r->easy, CURLINFO_APPCONNECT_TIME_T, &hs) == CURLE_OK && hs > 0;
		curl_off_t ra = 0;
		if (curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
			r->retry_after = ra > 3600 ? 3600 : (long)ra;
		if (!r->probe) {
			gate_answer(r);
			if (!r->answered) {
				/* No answer at all: nobody serving is the
				 * server's; so is any failure of the probe. */
				char why[512];
				http_describe_failure(r, why, sizeof(why));
				r->gate_took = apigate_failed(&c->gate, http_nobody_serving(r), r->gate_probe, why, now_ms());
				r->gate_probe = false;
			}
		}
		curl_multi_remove_handle(c->multi, r->easy);
		c->n_active--;
		if (c->observe && !r->probe)
			c->observe(r, true, c->observe_data);
		if (r->done)
			r->done(r, r->userdata);
		request_free(r);
	}
	return 0;
}

bool http_nobody_serving(const struct http_request *req)
{
	if (req->status != 0 || req->error != 0)
		return false;
	switch (req->result) {
	case CURLE_COULDNT_CONNECT:    /* refused */
	case CURLE_SSL_CONNECT_ERROR:  /* accepted, closed during the TLS handshake */
	case CURLE_GOT_NOTHING:        /* closed before any answer */
	case CURLE_RECV_ERROR:         /* reset before any answer */
	case CURLE_SEND_ERROR:
		return true;
	case CURLE_OPERATION_TIMEDOUT: /* the handshake not done within connectMs */
		return !req->handshake_done;
	default:
		return false;
	}
}

uint64_t http_gate_at(const struct http_client *c)
{
	return apigate_at(&c->gate);
}

uint64_t http_gate_up_at(const struct http_client *c)
{
	return c->gate.up_at;
}

uint64_t http_due(const struct http_client *c, uint64_t wake_at)
{
	uint64_t g = apigate_at(&c->gate);
	return g > wake_at ? g : wake_at;
}

bool http_gate_took(const struct http_request *req)
{
	return req->gate_took;
}

void http_url_authority(const char *url, char *buf, size_t len)
{
	const char *p = url ? strstr(url, "://") : NULL;
	p = p ? p + 3 : url ? url : "";
	size_t n = strcspn(p, "/?#");
	/* userinfo never appears in the server URL, but do not log it. */
	const char *at = memchr(p, '@', n);
	if (at) {
		n -= (size_t)(at + 1 - p);
		p = at + 1;
	}
	snprintf(buf, len, "%.*s", (int)n, p);
}

void http_describe_failure(const struct http_request *r, char *buf, size_t len)
{
	if (r->error == -EMSGSIZE || r->result == CURLE_FILESIZE_EXCEEDED) {
		snprintf(buf, len, "response larger than %zu bytes", r->max);
		return;
	}
	if (r->error < 0) {
		snprintf(buf, len, "%s", strerror(-r->error));
		return;
	}
	if (r->result == CURLE_OPERATION_TIMEDOUT && r->connect_timeout) {
		char host[256];
		http_url_authority(r->url, host, sizeof(host));
		snprintf(buf, len, "connection to %s timed out: check the network path / firewall to the API server (%s)",
			 host, r->errbuf[0] ? r->errbuf : curl_easy_strerror(r->result));
		return;
	}
	if (r->result != CURLE_OK) {
		snprintf(buf, len, "%s", r->errbuf[0] ? r->errbuf : curl_easy_strerror(r->result));
		return;
	}
	struct kube_status st;
	if (r->body && kube_status_parse(r->body, r->body_len, &st) == 0) {
		snprintf(buf, len, "HTTP %ld %s: %s", r->status, st.reason ? st.reason : "",
			 st.message ? st.message : "");
		kube_status_done(&st);
		return;
	}
	snprintf(buf, len, "HTTP %ld", r->status);
}
