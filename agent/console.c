/* Why the node cannot join the cluster, on the console; see console.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "console.h"
#include "http.h"

#define PREFIX "node-agent: "
/* gardener-node-agent's second line (pkg/nodeagent/bootstrap/bootstrap.go). */
#define HINT_NETWORK "Node may fail to join the cluster - check network configuration and API server endpoint"

void console_init(struct console *c, int fd)
{
	*c = (struct console){ .fd = fd };
}

/* Writes text whole (a console is slow, a pipe may be full: a line that
 * cannot be written is dropped, never waited for beyond the write). */
static void put(const struct console *c, const char *text)
{
	size_t n = strlen(text);
	while (n > 0) {
		ssize_t w = write(c->fd, text, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		text += w;
		n -= (size_t)w;
	}
}

/* A reason of kind key: printed (two lines) unless the last one printed
 * was of the same kind. */
static void reason(struct console *c, const char *key, const char *why, const char *hint)
{
	if (c->fd < 0 || c->joined || strncmp(c->key, key, sizeof(c->key)) == 0)
		return;
	snprintf(c->key, sizeof(c->key), "%s", key);
	char line[700], text[1024];
	snprintf(line, sizeof(line), "%s", why);
	/* One line: a reason from the network never adds lines. */
	for (char *p = line; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	snprintf(text, sizeof(text), PREFIX "WARNING: the node cannot join the cluster: %s\n" PREFIX "%s\n", line, hint);
	put(c, text);
	c->warned = true;
	c->printed++;
}

void console_request(struct console *c, const struct http_request *req, bool own_credential, const char *server)
{
	if (c->fd < 0 || c->joined)
		return;
	char why[512], text[700], hint[400];
	if (req->status == 0) {
		http_describe_failure(req, why, sizeof(why));
		snprintf(text, sizeof(text), "no answer from the API server at %s: %s", server, why);
		snprintf(hint, sizeof(hint), "%s %s", HINT_NETWORK, server);
		reason(c, "unreachable", text, hint);
	} else if (own_credential && (req->status == 401 || req->status == 403)) {
		char key[CONSOLE_KEY_MAX];
		http_describe_failure(req, why, sizeof(why));
		snprintf(key, sizeof(key), "http-%ld", req->status);
		snprintf(text, sizeof(text), "the API server at %s refuses node-agent's credential: %s", server, why);
		reason(c, key, text,
		       "Node may fail to join the cluster - check node-agent's credential (node-agent.conf(5) apiServer) "
		       "and what it may read");
	}
}

void console_creds(struct console *c, unsigned seq, const char *key, const char *text)
{
	if (seq == c->creds_seq)
		return;
	c->creds_seq = seq;
	reason(c, key, text,
	       "Node may fail to join the cluster - check the bootstrap token and the approval of node-agent's "
	       "certificate signing request (gardener-resource-manager)");
}

void console_joined(struct console *c, const char *server)
{
	if (c->joined)
		return;
	c->joined = true;
	if (c->fd < 0 || !c->warned)
		return;
	char text[600];
	snprintf(text, sizeof(text), PREFIX "joined the cluster: the API server at %s answers node-agent\n", server);
	put(c, text);
}
