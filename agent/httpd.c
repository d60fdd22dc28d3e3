/* The healthz/metrics listener; see httpd.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "httpd.h"
#include "log.h"

void httpd_printf(struct httpd_body *b, const char *fmt, ...)
{
	if (b->overflow)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		size_t room = b->cap - b->len;
		int n = vsnprintf(b->buf ? b->buf + b->len : NULL, b->buf ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->overflow = true;
			return;
		}
		if (b->buf && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t want = b->len + (size_t)n + 1;
		if (want > HTTPD_BODY_MAX) {
			b->overflow = true;
			return;
		}
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < want)
			cap *= 2;
		if (cap > HTTPD_BODY_MAX)
			cap = HTTPD_BODY_MAX;
		char *nb = realloc(b->buf, cap);
		if (!nb) {
			b->overflow = true;
			return;
		}
		b->buf = nb;
		b->cap = cap;
	}
}

const char *httpd_listener_name(enum httpd_listener l)
{
	return l == HTTPD_HEALTH ? "healthz" : "metrics";
}

int httpd_parse_address(const char *addr, unsigned port, struct sockaddr_storage *sa, socklen_t *salen)
{
	if (!addr || port > 65535)
		return -EINVAL;
	struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, addr, &v4.sin_addr) == 1) {
		memset(sa, 0, sizeof(*sa));
		memcpy(sa, &v4, sizeof(v4));
		*salen = sizeof(v4);
		return 0;
	}
	char buf[INET6_ADDRSTRLEN + 2];
	size_t len = strlen(addr);
	if (len >= sizeof(buf))
		return -EINVAL;
	if (addr[0] == '[') {
		if (len < 3 || addr[len - 1] != ']')
			return -EINVAL;
		memcpy(buf, addr + 1, len - 2);
		buf[len - 2] = '\0';
	} else
		memcpy(buf, addr, len + 1);
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET6, buf, &v6.sin6_addr) != 1)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	memcpy(sa, &v6, sizeof(v6));
	*salen = sizeof(v6);
	return 0;
}

static int open_listener(const char *addr, unsigned port)
{
	struct sockaddr_storage sa;
	socklen_t salen;
	if (httpd_parse_address(addr, port, &sa, &salen) < 0)
		return -EINVAL;
	_cleanup_close_ int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return negerrno();
	int one = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* "::" means IPv6 only: 0.0.0.0 is its own address to configure. */
	if (sa.ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, salen) < 0 || listen(fd, HTTPD_CONNS) < 0)
		return negerrno();
	return TAKE_FD(fd);
}

void httpd_init(struct httpd *h, const char *addr, unsigned health_port, unsigned metrics_port,
		httpd_handler handler, void *userdata)
{
	*h = (struct httpd){ .handler = handler, .userdata = userdata };
	for (size_t i = 0; i < HTTPD_CONNS; i++)
		h->conn[i].fd = -1;
	const unsigned ports[_HTTPD_LISTENERS] = { health_port, metrics_port };
	/* An IPv6 literal in a URL goes in brackets. */
	bool v6 = addr && strchr(addr, ':') && addr[0] != '[';
	for (size_t i = 0; i < _HTTPD_LISTENERS; i++) {
		const char *what = httpd_listener_name((enum httpd_listener)i);
		h->lfd[i] = -1;
		if (!ports[i])
			continue;
		int fd = open_listener(addr, ports[i]);
		if (fd < 0) {
			log_error_errno(fd, "cannot listen on %s%s%s:%u for %s; serving it not at all", v6 ? "[" : "",
					addr, v6 ? "]" : "", ports[i], what);
			continue;
		}
		h->lfd[i] = fd;
		log_info("serving %s on http://%s%s%s:%u/", what, v6 ? "[" : "", addr, v6 ? "]" : "", ports[i]);
	}
}

static void conn_close(struct httpd_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	*c = (struct httpd_conn){ .fd = -1 };
}

void httpd_done(struct httpd *h)
{
	for (size_t i = 0; i < HTTPD_CONNS; i++)
		conn_close(&h->conn[i]);
	for (size_t i = 0; i < _HTTPD_LISTENERS; i++)
		if (h->lfd[i] >= 0)
			close(h->lfd[i]);
	*h = (struct httpd){ .lfd = { -1, -1 } };
	for (size_t i = 0; i < HTTPD_CONNS; i++)
		h->conn[i].fd = -1;
}

unsigned httpd_fds(const struct httpd *h, struct curl_waitfd *fds, unsigned max)
{
	unsigned n = 0;
	for (size_t i = 0; i < _HTTPD_LISTENERS && n < max; i++)
		if (h->lfd[i] >= 0)
			fds[n++] = (struct curl_waitfd){ .fd = h->lfd[i], .events = CURL_WAIT_POLLIN };
	for (size_t i = 0; i < HTTPD_CONNS && n < max; i++)
		if (h->conn[i].fd >= 0)
			fds[n++] = (struct curl_waitfd){ .fd = h->conn[i].fd,
							 .events = h->conn[i].out ? CURL_WAIT_POLLOUT : CURL_WAIT_POLLIN };
	return n;
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Unknown";
	}
}

/* The whole response (head and, unless HEAD, body) into c->out. */
static void respond(struct httpd *h, struct httpd_conn *c, int status, const struct httpreq *req,
		    struct httpd_body *body, const char *content_type)
{
	struct httpd_body out = {};
	if (body->overflow) {
		status = 500;
		body->len = 0;
		httpd_printf(body, "response too large\n");
	}
	httpd_printf(&out,
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n"
		     "Cache-Control: no-store\r\n%s\r\n",
		     status, reason(status), content_type, body->len,
		     status == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (!(req && req->method == HTTPREQ_HEAD) && body->len && !out.overflow) {
		/* Bodies are text without NULs. */
		httpd_printf(&out, "%.*s", (int)body->len, body->buf);
	}
	free(body->buf);
	*body = (struct httpd_body){};
	if (out.overflow) {
		free(out.buf);
		h->dropped[c->listener]++;
		conn_close(c);
		return;
	}
	c->out = out.buf;
	c->out_len = out.len;
	c->out_off = 0;
}

static void on_readable(struct httpd *h, struct httpd_conn *c)
{
	ssize_t n = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) { /* gone before asking */
		h->dropped[c->listener]++;
		conn_close(c);
		return;
	}
	c->in_len += (size_t)n;
	struct httpreq req;
	struct httpd_body body = {};
	int r = httpreq_parse(c->in, c->in_len, &req);
	if (r == -EAGAIN)
		return;
	if (r == -EMSGSIZE) {
		httpd_printf(&body, "request head too large\n");
		respond(h, c, 431, NULL, &body, "text/plain; charset=utf-8");
		return;
	}
	if (r < 0) {
		httpd_printf(&body, "bad request\n");
		respond(h, c, 400, NULL, &body, "text/plain; charset=utf-8");
		return;
	}
	if (req.method == HTTPREQ_OTHER) {
		httpd_printf(&body, "method not allowed\n");
		respond(h, c, 405, &req, &body, "text/plain; charset=utf-8");
		return;
	}
	const char *ctype = "text/plain; charset=utf-8";
	int status = h->handler(c->listener, &req, &body, &ctype, h->userdata);
	respond(h, c, status, &req, &body, ctype);
}

static void on_writable(struct httpd *h, struct httpd_conn *c)
{
	ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		h->dropped[c->listener]++;
		conn_close(c);
		return;
	}
	c->out_off += (size_t)n;
	if (c->out_off == c->out_len) {
		h->served[c->listener]++;
		/* Half-close and go: the client reads to the end. */
		shutdown(c->fd, SHUT_WR);
		conn_close(c);
	}
}

static void on_accept(struct httpd *h, enum httpd_listener which, uint64_t now)
{
	/* Everything waiting, up to the free slots; the rest closed at once. */
	for (unsigned k = 0; k < 2 * HTTPD_CONNS; k++) {
		int fd = accept4(h->lfd[which], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		struct httpd_conn *c = NULL;
		for (size_t i = 0; i < HTTPD_CONNS && !c; i++)
			if (h->conn[i].fd < 0)
				c = &h->conn[i];
		if (!c) {
			h->dropped[which]++;
			close(fd);
			continue;
		}
		*c = (struct httpd_conn){ .fd = fd, .listener = which, .deadline = now + HTTPD_CONN_MS };
	}
}

void httpd_process(struct httpd *h, const struct curl_waitfd *fds, unsigned n, uint64_t now)
{
	for (unsigned i = 0; i < n; i++) {
		if (!fds[i].revents)
			continue;
		for (size_t l = 0; l < _HTTPD_LISTENERS; l++)
			if (fds[i].fd == h->lfd[l])
				on_accept(h, (enum httpd_listener)l, now);
		for (size_t k = 0; k < HTTPD_CONNS; k++) {
			struct httpd_conn *c = &h->conn[k];
			/* httpd_fds() puts the listeners first: a connection
			 * accepted above gets a number no polled connection had
			 * (those were all open at poll time). */
			if (c->fd != fds[i].fd)
				continue;
			if (c->out)
				on_writable(h, c);
			else
				on_readable(h, c);
		}
	}
}

uint64_t httpd_tick(struct httpd *h, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	for (size_t i = 0; i < HTTPD_CONNS; i++) {
		struct httpd_conn *c = &h->conn[i];
		if (c->fd < 0)
			continue;
		if (now >= c->deadline) {
			log_debug("closing a %s connection past its %u ms deadline", httpd_listener_name(c->listener),
				  HTTPD_CONN_MS);
			h->dropped[c->listener]++;
			conn_close(c);
			continue;
		}
		if (c->deadline < next)
			next = c->deadline;
	}
	return next;
}
