/* What node-agent serves on its healthz and metrics listeners (agent/httpd.h):
 * /healthz (200 while the loop runs: it answered), /readyz (200 while the
 * last contact with the API server is at most the freshness window old,
 * else 503; see metrics_ready()) on the health port, and /metrics in the
 * Prometheus text format (version 0.0.4) on the metrics port, with the
 * process_* metrics and a build_info as Prometheus client libraries export
 * them.
 *
 * The duties push what they know (the desired state written, the result
 * read, readiness) or are read at scrape time (the Lease duty's counters,
 * the listener's own counts, the client certificate's expiry); API requests
 * are counted through the HTTP client's observer. No duty knows this file
 * but through those calls. */
#ifndef NA_AGENT_METRICS_H
#define NA_AGENT_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "health.h"
#include "http.h"
#include "httpd.h"
#include "lease.h"
#include "result.h"

/* Distinct (verb, code) pairs counted; more go to one overflow counter. */
#define METRICS_REQUEST_KINDS 32

struct metrics_requests {
	char verb[8];
	long code;
	uint64_t n;
};

struct metrics {
	const struct lease *lease;      /* NULL: no Lease duty */
	const struct health *health;    /* NULL or off: no health duty */
	const struct httpd *httpd;
	const char *cert_file;          /* client certificate (NULL: none) */
	bool ready;                     /* READY=1 sent: there was a first contact */
	uint64_t last_contact_ms;       /* monotonic ms of the last answer of the API server (0: never) */
	uint64_t ready_window_ms;       /* readyz: the last contact at most this old */
	time_t start_wall;
	double start_seconds;           /* process start, unix seconds (sub-second) */

	uint64_t desired_generation;
	char desired_checksum[65];
	double desired_wall;            /* when it was written, unix seconds (0: before this process) */

	bool result_valid;
	bool result_success;
	uint64_t result_generation;
	char result_checksum[65];
	char applied_checksum[65];      /* the last successful one */
	uint64_t applied_generation;
	uint64_t results[2];            /* distinct results read: [0] failure, [1] success */
	double apply_seconds;           /* written -> finished, for the last result of what we wrote; < 0 unknown */

	struct metrics_requests req[METRICS_REQUEST_KINDS];
	unsigned n_req;
	uint64_t req_other;
	uint64_t watch_connects[2];     /* [0] secrets, [1] nodes */
};

/* Zeroes m and notes the process start. Call before anything is pushed
 * (metrics_restore(), metrics_set_result()). */
void metrics_init(struct metrics *m);

/* The desired state an earlier run of the agent wrote (picked up from
 * desired.json at start): its generation and checksum, with no time of
 * writing (no apply duration for it). */
void metrics_restore(struct metrics *m, uint64_t generation, const char *checksum);

/* http_client observer: counts watch connects when a request starts and
 * requests by verb and code (0: no HTTP answer) when it ends. */
void metrics_observe(const struct http_request *req, bool done, void *userdata);

/* The desired state written (generation, checksum). */
void metrics_set_desired(struct metrics *m, uint64_t generation, const char *checksum);

/* A result.json read (called for every read; a result seen before is not
 * counted twice). The apply duration of a result for the generation
 * written by this process is the time from the write to the read, capped
 * at finishedAt + 1 s (finishedAt has whole seconds; the read follows at
 * once by inotify), in sub-second resolution. */
void metrics_set_result(struct metrics *m, const struct result *res);

/* readyz: true when there was a contact with the API server at most
 * m->ready_window_ms before now (monotonic ms), counting the Lease's
 * renewals as contact. */
bool metrics_ready(const struct metrics *m, uint64_t now);

/* The /metrics page into b (for tests; metrics_handle() serves it). */
void metrics_render(const struct metrics *m, struct httpd_body *b);

/* The httpd_handler. */
int metrics_handle(enum httpd_listener listener, const struct httpreq *req, struct httpd_body *body,
		   const char **content_type, void *userdata);

#endif
