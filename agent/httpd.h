/* node-agent's healthz and metrics listener: plain HTTP/1.x on (by default)
 * loopback, like gardener-node-agent's health probe and metrics servers
 * (gardener/gardener pkg/apis/config/nodeagent/v1alpha1/defaults.go: ports
 * 2751 and 2752; cmd/gardener-node-agent/app/app.go).
 *
 * Built not to widen the attack surface: at most HTTPD_CONNS connections
 * (more are closed at once), each with a fixed HTTPREQ_MAX-byte input
 * buffer inside this struct (no allocation per byte read, none before the
 * head is complete), one request per connection, a deadline of
 * HTTPD_CONN_MS from accept to the last byte written, the request head
 * parsed by the fuzzed httpreq_parse(). GET and HEAD only.
 *
 * The listener knows nothing about what it serves: the handler fills the
 * body and returns the HTTP status. It runs inside the owner's poll loop:
 * httpd_fds() adds its descriptors to curl_multi_poll()'s extra fds,
 * httpd_process() handles what they reported, httpd_tick() enforces the
 * deadlines. Logs a listener that cannot be opened (error) and nothing per
 * request (debug). */
#ifndef NA_AGENT_HTTPD_H
#define NA_AGENT_HTTPD_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "httpreq.h"

#define HTTPD_CONNS 8
#define HTTPD_CONN_MS 3000u
#define HTTPD_BODY_MAX (256u << 10)
/* The fds httpd_fds() may add. */
#define HTTPD_FDS_MAX (2 + HTTPD_CONNS)

enum httpd_listener {
	HTTPD_HEALTH,
	HTTPD_METRICS,
	_HTTPD_LISTENERS,
};

/* A response body under construction, at most HTTPD_BODY_MAX bytes. */
struct httpd_body {
	char *buf;
	size_t len;
	size_t cap;
	bool overflow;
};

/* Appends; past HTTPD_BODY_MAX (or on ENOMEM) sets overflow and drops the
 * rest. */
void httpd_printf(struct httpd_body *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Fills body (and *content_type, default text/plain) for req received on
 * listener; returns the HTTP status. */
typedef int (*httpd_handler)(enum httpd_listener listener, const struct httpreq *req, struct httpd_body *body,
			     const char **content_type, void *userdata);

struct httpd_conn {
	int fd;                     /* -1: free */
	enum httpd_listener listener;
	uint64_t deadline;
	size_t in_len;
	char in[HTTPREQ_MAX];
	char *out;                  /* the response, once the head is complete */
	size_t out_len;
	size_t out_off;
};

struct httpd {
	int lfd[_HTTPD_LISTENERS];  /* -1: off */
	struct httpd_conn conn[HTTPD_CONNS];
	httpd_handler handler;
	void *userdata;
	uint64_t served[_HTTPD_LISTENERS];  /* responses written whole, per listener */
	uint64_t dropped[_HTTPD_LISTENERS]; /* connections closed early: full, deadline, bad head */
};

/* The listener's name in logs and metric labels ("healthz", "metrics"). */
const char *httpd_listener_name(enum httpd_listener l);

/* Parses a listen address: an IPv4 literal ("127.0.0.1") or an IPv6 one,
 * bare or in brackets ("::1", "[::1]"), into *sa with port; returns 0 or
 * -EINVAL. Pure. */
int httpd_parse_address(const char *addr, unsigned port, struct sockaddr_storage *sa, socklen_t *salen);

/* Opens the listeners on addr (httpd_parse_address()); a port of 0
 * leaves that one off. A listener that cannot be opened is logged and
 * left off (the agent's real work does not depend on it). */
void httpd_init(struct httpd *h, const char *addr, unsigned health_port, unsigned metrics_port,
		httpd_handler handler, void *userdata);
void httpd_done(struct httpd *h);

/* Adds up to HTTPD_FDS_MAX descriptors to fds; returns how many. */
unsigned httpd_fds(const struct httpd *h, struct curl_waitfd *fds, unsigned max);

/* Handles what poll reported on the n descriptors httpd_fds() added. */
void httpd_process(struct httpd *h, const struct curl_waitfd *fds, unsigned n, uint64_t now);

/* Closes connections past their deadline; returns the next deadline
 * (monotonic ms, UINT64_MAX for none). */
uint64_t httpd_tick(struct httpd *h, uint64_t now);

#endif
