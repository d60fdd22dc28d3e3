/* What node-agent serves on its healthz and metrics listeners (agent/httpd.h):
 * /healthz (200 while the loop runs: it answered), /readyz (200 after the
 * first contact with the API server, else 503) on the health port, and
 * /metrics in the Prometheus text format (version 0.0.4) on the metrics port.
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
	bool ready;
	time_t start_wall;

	uint64_t desired_generation;
	char desired_checksum[65];
	time_t desired_wall;            /* when it was written */

	bool result_valid;
	bool result_success;
	uint64_t result_generation;
	char result_checksum[65];
	char applied_checksum[65];      /* the last successful one */
	uint64_t applied_generation;
	uint64_t results[2];            /* distinct results read: [0] failure, [1] success */
	double apply_seconds;           /* finishedAt - written, for the last result of what we wrote; < 0 unknown */

	struct metrics_requests req[METRICS_REQUEST_KINDS];
	unsigned n_req;
	uint64_t req_other;
	uint64_t watch_connects[2];     /* [0] secrets, [1] nodes */
};

void metrics_init(struct metrics *m);

/* http_client observer: counts watch connects when a request starts and
 * requests by verb and code (0: no HTTP answer) when it ends. */
void metrics_observe(const struct http_request *req, bool done, void *userdata);

/* The desired state written (generation, checksum). */
void metrics_set_desired(struct metrics *m, uint64_t generation, const char *checksum);

/* A result.json read (called for every read; a result seen before is not
 * counted twice). */
void metrics_set_result(struct metrics *m, const struct result *res);

/* The httpd_handler. */
int metrics_handle(enum httpd_listener listener, const struct httpreq *req, struct httpd_body *body,
		   const char **content_type, void *userdata);

#endif
