/* Why the node cannot join the cluster, on the node's console.
 *
 * An operator looking at a serial console (or a cloud provider's console
 * log) of a node that never joined has no journal and no ssh. gardener-node-
 * agent prints the reason there (gardener/gardener #14760): its bootstrap
 * tests the API server and prints "WARNING: API server connectivity test
 * failed: API server unreachable at <server>: <error>" and "Node may fail
 * to join the cluster - check network configuration and API server
 * endpoint" on stdout (pkg/nodeagent/bootstrap/bootstrap.go,
 * testAPIServerConnectivity), and it prints the error it exits with
 * (cmd/gardener-node-agent/main.go); its unit says
 * StandardOutput=journal+console and StandardError=journal (pkg/component/
 * extensions/operatingsystemconfig/original/components/nodeagent/
 * component.go), so those lines reach the console and its logs do not.
 *
 * node-agent does the same with its stdout (units/node-agent.service has
 * the same two settings; its log goes to the journal natively, never to
 * stdout): until it has joined (an API request answered to its own
 * credential: the client certificate, a token, static files), each new
 * kind of reason it cannot join is printed once, two lines, prefixed
 * "node-agent: ":
 *
 *   - no answer from the API server (a connection refused or timed out, a
 *     name that does not resolve, TLS refused): the request's failure, and
 *     Gardener's hint to check the network and the endpoint;
 *   - the credential refused (401/403 to node-agent's own credential);
 *   - what the credentials duty gives up on while joining (credentials.h
 *     struct creds_failure: a CSR denied, failed, not issued in time, its
 *     certificate refused; the bootstrap token refused for good or not
 *     usable).
 *
 * The same kind again (every retry of an unreachable server) prints
 * nothing; another kind prints again. Once joined after a warning, one line
 * says so; after the join nothing more is printed (the journal has the
 * rest). Off with --once. */
#ifndef NA_AGENT_CONSOLE_H
#define NA_AGENT_CONSOLE_H

#include <stdbool.h>

struct http_request;

#define CONSOLE_KEY_MAX 24

struct console {
	int fd;                       /* where the lines go (stdout); -1: off */
	bool joined;
	bool warned;                  /* a reason was printed */
	char key[CONSOLE_KEY_MAX];    /* the kind of the last reason printed */
	unsigned creds_seq;           /* the last credentials failure taken */
	unsigned printed;             /* reasons printed (tests) */
};

void console_init(struct console *c, int fd);

/* A finished API request: with own_credential, it went out with node-agent's
 * own credential (not the bootstrap token). Prints a reason when it met
 * nobody (no HTTP status) or was refused (401/403 to its own credential);
 * server names the endpoint in the hint. */
void console_request(struct console *c, const struct http_request *req, bool own_credential, const char *server);

/* The credentials duty's last failure (seq counts them, 0: none; key its
 * kind, text what happened): printed when seq is new and the kind is. */
void console_creds(struct console *c, unsigned seq, const char *key, const char *text);

/* The API server answers node-agent's own credential: joined (said when a
 * reason was printed before). */
void console_joined(struct console *c, const char *server);

#endif
