/* node-agent's own client certificate through the CertificateSigningRequest
 * API, as gardener-node-agent gets it (lib/kube/csr.h has the contract and its
 * sources in gardener/gardener).
 *
 * Active when node.machineName is known (node-agent.conf or stock user
 * data) and neither apiServer.tokenFile nor apiServer.clientCertificateFile
 * is configured. The certificate and its key live together in one file,
 * client.pem (0600) in node-agent's state directory and nowhere else,
 * replaced atomically; http.c hands that path to libcurl, which reads it for
 * every new connection, so a renewed certificate needs no restart.
 *
 * States: a valid client.pem in use, renewed at a jittered 80-88 % of its
 * lifetime with the current certificate; otherwise (none, expired, or for
 * another machine or CA) a new key and a CSR created with the bootstrap
 * token, awaited by a watch on that CSR (a GET every 2 s when the watch is
 * refused) until issued or timeouts.csrMs (15 min) pass.
 * Denied or Failed is logged with its reason and retried with backoff (30 s
 * doubling to 10 min); the issued certificate is checked (our key, CN and O,
 * validity, chains to the cluster CA) before it replaces anything. An expired
 * certificate is dropped so the bootstrap token is used again; without one,
 * one error says so and everything else keeps its last good state.
 *
 * The key of a CSR in flight is kept in CREDS_PENDING_FILE, so a restart
 * resumes that CSR (a renewal under way too: it goes on at once).
 *
 * Driven by creds_tick() from the event loop; logs every decision with
 * CSR=<name>. */
#ifndef NA_AGENT_CREDENTIALS_H
#define NA_AGENT_CREDENTIALS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <openssl/evp.h>

#include "config.h"
#include "csr.h"
#include "http.h"

#define CREDS_FILE "client.pem"
/* The key of the CSR in flight (0600, next to client.pem, replaced
 * atomically), written before the CSR is sent and removed once the CSR is
 * issued or given up: an agent restarted meanwhile (a crash, an upgrade, a
 * reboot) sends the same CSR again (the name digests the key and the
 * machine name, so the API server answers 409 and the CSR is awaited)
 * instead of leaving it behind and making another. Its first line names
 * the CSR. */
#define CREDS_PENDING_FILE "csr-pending.pem"

enum creds_state {
	CREDS_OFF,          /* not used: another credential is configured */
	CREDS_IDLE,         /* a certificate in use (or waiting for a retry) */
	CREDS_NEED_CREATE,  /* POST a new CSR when wake_at has passed */
	CREDS_CREATING,
	CREDS_NEED_POLL,    /* watch (or GET) the CSR when wake_at has passed */
	CREDS_POLLING,
	CREDS_WATCHING,     /* a watch on the CSR is open */
};

/* The bootstrap token file as stat(2) sees it (err: its errno, else 0). */
struct creds_token_stamp {
	dev_t dev;
	ino_t ino;
	off_t size;
	time_t mtime_s;
	long mtime_ns;
	int err;
};

/* The last reason the join could not go on, for the console (console.h):
 * a CSR given up (denied, failed, not issued within csrMs, gone, its
 * certificate refused, the request refused as invalid), the bootstrap token
 * refused for good or not usable. seq counts them (0: none yet). */
struct creds_failure {
	unsigned seq;
	char key[24];               /* its kind: "csr-denied", "token-refused", ... */
	char text[400];
};

struct creds {
	struct http_client *http;
	const struct config *cfg;
	int state_fd;               /* the agent's state directory (not owned) */
	char pem_path[64];          /* "/proc/self/fd/<state_fd>/client.pem" for libcurl */
	enum creds_state state;
	bool have_cert;
	time_t not_after;
	time_t renew_at;            /* wall clock */
	bool expired_logged;
	bool auth_logged;           /* the bootstrap token refused for good was logged */
	bool refused_logged;        /* a run of 401s within REFUSED_GRACE_MS was logged */
	uint64_t refused_since;     /* monotonic ms: the first 401 of the run (0: none) */
	struct creds_token_stamp refused_stamp; /* the token file then */
	bool token_waiting;         /* no credential: the step waits (slowly, or for the token file) */
	struct creds_token_stamp token_seen;    /* the token file when the wait began */
	uint64_t token_check_at;    /* monotonic ms: look at the token file again */
	bool nokey_logged;          /* "no credential" said for this condition */
	bool step_logged;           /* a failed step was logged (once per run of failures) */
	unsigned step_failures;     /* failed answers in a row to this step */
	uint64_t revived_until;     /* monotonic ms: the API server answers again after failures */
	EVP_PKEY *pending_key;      /* the key of the CSR in flight */
	bool pending_kept;          /* ... is in CREDS_PENDING_FILE */
	char *csr_name;
	char csr_uid[128];
	char csr_rv[65];            /* resourceVersion to watch from; "" unknown */
	bool watch_refused;         /* this CSR is polled: the watch failed (logged once) */
	uint64_t watch_until;       /* monotonic ms: the open watch is dropped */
	uint64_t watch_started;
	/* Recorded by the watch's line callback, acted on when it ends. */
	bool watch_final;           /* watch_status holds Denied/Failed/Issued */
	bool watch_gone;            /* DELETED */
	struct csr_status watch_status;
	struct http_request *req;
	uint64_t wake_at;           /* monotonic ms */
	uint64_t deadline;          /* monotonic ms: this CSR is given up (0: not created yet) */
	unsigned failures;
	struct creds_failure failure;
	void (*on_cert)(void *userdata); /* a new certificate is in use */
	void *userdata;
};

/* Sets up the duty (CREDS_OFF when it does not apply) and puts a valid
 * client.pem from an earlier run into use. Returns 0 or -ENOMEM. */
int creds_init(struct creds *c, struct http_client *http, const struct config *cfg, int state_fd,
	       void (*on_cert)(void *userdata), void *userdata);

/* Starts what is due; returns the next deadline (monotonic ms, UINT64_MAX
 * for none). */
uint64_t creds_tick(struct creds *c, uint64_t now);
/* Whether requests other than the CSR may go out: another credential is
 * configured, or a valid certificate is held. The bootstrap token is for the
 * CSR alone (gardener-node-agent's bootstrap uses it for nothing else, and
 * Gardener's node-agent authorizer refuses it every read). */
bool creds_usable(const struct creds *c);

/* Asks for a new client certificate at the next tick (a CA rotation:
 * gardener/gardener pkg/nodeagent/controller/operatingsystemconfig/
 * reconciler.go requestNewKubeConfigForNodeAgent), with the current one,
 * which stays in use until the new one is issued and checked against the CA
 * bundle in force (cfg->ca_file) at that time; on_cert tells when. Returns
 * false (and does nothing) when the duty is off or holds no certificate, or
 * a request is already under way. Logs nothing. */
bool creds_renew_now(struct creds *c, uint64_t now);

void creds_done(struct creds *c);

#endif
