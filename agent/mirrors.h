/* Registry mirrors' readinessProbe, node-agent's half.
 *
 * gardener-node-agent writes certs.d/<upstream>/hosts.toml of a registry of
 * criConfig.containerd.registries with readinessProbe: true only once every
 * one of its hosts answered (gardener/gardener
 * pkg/nodeagent/controller/operatingsystemconfig/containerd.go,
 * addRegistryToContainerdFunc with shouldProbe; which registries: changes.go,
 * UpstreamsToProbe, the new or changed ones): a try GETs each hosts[].url as
 * written, with an http.Client{Timeout: 1 s} and, when the host has
 * caCerts, a pool of those files (relative to certs.d/<upstream>) and TLS
 * 1.2 at least; any HTTP answer counts (the response is not looked at),
 * every host must answer in the same try, and a failed try is repeated
 * every 2 s (retry.Until) with no other deadline.
 *
 * The executor has no network, so the probe runs here: this duty follows
 * the registries with the flag of the OSC in force and probes each
 * configuration (its cri_hosts_digest()) until one try saw every host
 * answer: MIRRORS_TIMEOUT_MS per request, between tries a back-off
 * (lib/base/backoff.h: MIRRORS_RETRY_MS, Gardener's period, doubling every
 * 30 s up to MIRRORS_RETRY_CAP_MS, full jitter, where Gardener asks every
 * 2 s for as long as it takes),
 * no credential, no proxy, no redirect, the body discarded (http.h
 * http_mirror_start()). The requests go through the agent's curl multi
 * handle: the loop never blocks on a mirror. A configuration seen ready
 * stays ready (as in Gardener, which probes it once); a changed one is
 * probed again. The ready ones go to the executor in desired.json
 * (readyRegistries: upstream and digest), which then writes their
 * hosts.toml (cloud-config-exec/containerd.h containerd_mirror_may_write();
 * one it already wrote with the same bytes needs no probe there). Every
 * flagged registry of the OSC is probed after node-agent starts, even one
 * unchanged on disk: the probe costs a request, the executor decides.
 * Driven by mirrors_tick(); `changed` tells the loop to write the desired
 * state again. */
#ifndef NA_AGENT_MIRRORS_H
#define NA_AGENT_MIRRORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backoff.h"
#include "desired.h"
#include "http.h"

#define MIRRORS_RETRY_MS 2000u   /* retry.Until(ctx, 2*time.Second, ...): the first wait's ceiling */
#define MIRRORS_RETRY_CAP_MS 60000u
#define MIRRORS_TIMEOUT_MS 1000u /* http.Client{Timeout: 1 * time.Second} */
#define MIRRORS_BODY_MAX 65536u  /* what is read of an answer before it is dropped */
#define MIRRORS_CA_MAX (1u << 20) /* bytes of one CA file */
/* Where containerd's registry directories are (Gardener's certsDir). */
#define MIRRORS_CERTS_DIR "/etc/containerd/certs.d"

struct mirrors;

struct mirrors_host {
	char *url;
	char **ca;                  /* caCerts as given, NULL-terminated */
};

struct mirrors_entry {
	struct mirrors *owner;
	char *upstream;
	char digest[65];            /* cri_hosts_digest() of the configuration */
	struct mirrors_host *hosts;
	size_t n_hosts;
	bool ready;                 /* one try saw every host answer */
	size_t host;                /* the host the try in progress asks */
	struct http_request *req;
	uint64_t next_at;           /* monotonic ms; 0: try at the next tick */
	struct backoff retry;       /* failed tries in a row (set up at the first) */
	bool warned;                /* the failure was logged (once until ready) */
};

struct mirrors {
	struct http_client *http;   /* NULL while detached (reload) */
	char *root;                 /* prefix of MIRRORS_CERTS_DIR and CA paths; NULL: "/" */
	struct mirrors_entry *entries;
	size_t n;
	bool changed;               /* a registry became ready: rewrite the desired state */
};

/* Follows the registries with readinessProbe of osc (NUL-terminated, the
 * OSC in force, parsed for node_name). A registry whose upstream and
 * digest stay keeps its verdict; the others start not ready and are
 * probed at the next tick. root: see struct mirrors (copied). Returns 0,
 * -ENOMEM or the osc_parse error (nothing changed then). */
int mirrors_follow(struct mirrors *m, const char *osc, size_t osc_len, const char *state_dir, const char *node_name,
		   const char *root);

/* Attaches to (or, with NULL, detaches from: requests are cancelled and
 * their tries start again) the HTTP client. */
void mirrors_attach(struct mirrors *m, struct http_client *http);

/* Starts the requests that are due; returns the next deadline. */
uint64_t mirrors_tick(struct mirrors *m, uint64_t now);

/* Takes the answer to the request of entry i (status 0: no HTTP answer,
 * failure then says why): an answer moves the try on to the next host or,
 * after the last, makes the registry ready; no answer ends the try, the
 * next after the back-off. Logs the first failure and the readiness. For
 * tests too. */
void mirrors_answer(struct mirrors *m, size_t i, long status, const char *failure, uint64_t now);

/* The ready registries as desired.json entries for osc (pointers into m,
 * valid until the next follow; *ret NULL when *n is 0): only those whose
 * upstream osc has with readinessProbe and the same digest (a rollout may
 * hold an older OSC back). Returns 0, -ENOMEM. */
int mirrors_desired(const struct mirrors *m, const char *osc, size_t osc_len, const char *state_dir,
		    const char *node_name, struct desired_ready_registry **ret, size_t *n);

void mirrors_done(struct mirrors *m);

#endif
