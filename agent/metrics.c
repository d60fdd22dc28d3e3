/* healthz, readyz and Prometheus metrics; see metrics.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/asn1.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cleanup.h"
#include "metrics.h"


static double wall_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void metrics_init(struct metrics *m)
{
	double now = wall_seconds();
	*m = (struct metrics){ .start_wall = (time_t)now, .start_seconds = now, .apply_seconds = -1.0 };
}

void metrics_restore(struct metrics *m, uint64_t generation, const char *checksum)
{
	m->desired_generation = generation;
	snprintf(m->desired_checksum, sizeof(m->desired_checksum), "%s", checksum);
	m->desired_wall = 0;
}

/* The last contact with the API server, monotonic ms (0: never): an
 * answer the agent noted, or a Lease renewal. */
static uint64_t last_contact(const struct metrics *m)
{
	uint64_t last = m->last_contact_ms;
	if (m->lease && m->lease->last_renew_ms > last)
		last = m->lease->last_renew_ms;
	return last;
}

bool metrics_ready(const struct metrics *m, uint64_t now)
{
	uint64_t last = last_contact(m);
	return last && now >= last && now - last <= m->ready_window_ms;
}

void metrics_observe(const struct http_request *req, bool done, void *userdata)
{
	struct metrics *m = userdata;
	if (!done) {
		if (req->watch && req->path)
			m->watch_connects[strstr(req->path, "/nodes") ? 1 : 0]++;
		return;
	}
	const char *verb = req->watch ? "WATCH" : req->method;
	long code = req->result == CURLE_OK ? req->status : 0;
	for (unsigned i = 0; i < m->n_req; i++)
		if (m->req[i].code == code && strcmp(m->req[i].verb, verb) == 0) {
			m->req[i].n++;
			return;
		}
	if (m->n_req == METRICS_REQUEST_KINDS || strlen(verb) >= sizeof(m->req[0].verb)) {
		m->req_other++;
		return;
	}
	struct metrics_requests *r = &m->req[m->n_req++];
	snprintf(r->verb, sizeof(r->verb), "%s", verb);
	r->code = code;
	r->n = 1;
}

void metrics_set_desired(struct metrics *m, uint64_t generation, const char *checksum)
{
	m->desired_generation = generation;
	snprintf(m->desired_checksum, sizeof(m->desired_checksum), "%s", checksum);
	m->desired_wall = wall_seconds();
}

void metrics_set_result(struct metrics *m, const struct result *res)
{
	if (m->result_valid && m->result_generation == res->generation && m->result_success == res->success &&
	    strcmp(m->result_checksum, res->checksum) == 0)
		return;
	m->result_valid = true;
	m->result_success = res->success;
	m->result_generation = res->generation;
	snprintf(m->result_checksum, sizeof(m->result_checksum), "%s", res->checksum);
	m->results[res->success ? 1 : 0]++;
	if (res->success) {
		snprintf(m->applied_checksum, sizeof(m->applied_checksum), "%s", res->checksum);
		m->applied_generation = res->generation;
	}
	/* finishedAt has whole seconds: the apply ended before finishedAt + 1;
	 * and it ended before this read. */
	if (m->desired_wall > 0 && res->generation == m->desired_generation &&
	    (double)res->finished_at + 1.0 >= m->desired_wall) {
		double end = wall_seconds();
		if (end > (double)res->finished_at + 1.0)
			end = (double)res->finished_at + 1.0;
		m->apply_seconds = end > m->desired_wall ? end - m->desired_wall : 0.0;
	}
}

/* notAfter of the client certificate as unix seconds; -1 when unknown. */
static long long cert_expiry(const char *path)
{
	if (!path)
		return -1;
	BIO *bio = BIO_new_file(path, "r");
	if (!bio)
		return -1;
	X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	BIO_free(bio);
	if (!x)
		return -1;
	struct tm tm;
	long long t = -1;
	if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1)
		t = (long long)timegm(&tm);
	X509_free(x);
	return t;
}

/* Resident set size in bytes from /proc/self/statm ("size resident ...",
 * in pages); -1 when unknown. */
static long long resident_bytes(void)
{
	_cleanup_close_ int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[128];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *end;
	errno = 0;
	(void)strtoull(buf, &end, 10);
	if (errno || end == buf || *end != ' ')
		return -1;
	const char *p = end + 1;
	unsigned long long pages = strtoull(p, &end, 10);
	if (errno || end == p)
		return -1;
	long page = sysconf(_SC_PAGESIZE);
	return page > 0 ? (long long)pages * page : -1;
}

/* Descriptors open in this process (/proc/self/fd, less the one reading
 * it); -1 when unknown. */
static long long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	long long n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n > 0 ? n - 1 : 0;
}

#define HELP(b, name, type, text) httpd_printf(b, "# HELP " name " " text "\n# TYPE " name " " type "\n")

/* The process_* metrics as Prometheus client libraries define them
 * (client_golang's process collector: same names, types and units). */
static void render_process(const struct metrics *m, struct httpd_body *b)
{
	struct timespec cpu;
	HELP(b, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) == 0)
		httpd_printf(b, "process_cpu_seconds_total %.3f\n", (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9);
	long long rss = resident_bytes();
	HELP(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	if (rss >= 0)
		httpd_printf(b, "process_resident_memory_bytes %lld\n", rss);
	long long fds = open_fds();
	HELP(b, "process_open_fds", "gauge", "Number of open file descriptors.");
	if (fds >= 0)
		httpd_printf(b, "process_open_fds %lld\n", fds);
	struct rlimit rl;
	HELP(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		httpd_printf(b, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
	HELP(b, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
	httpd_printf(b, "process_start_time_seconds %.3f\n", m->start_seconds);
}

void metrics_render(const struct metrics *m, struct httpd_body *b)
{
	HELP(b, "node_agent_build_info", "gauge", "Always 1; the version of node-agent in a label.");
	httpd_printf(b, "node_agent_build_info{version=\"%s\"} 1\n", NA_VERSION);
	render_process(m, b);
	HELP(b, "node_agent_ready", "gauge",
	     "1 while the last contact with the API server is within the readiness window (as /readyz).");
	httpd_printf(b, "node_agent_ready %d\n", metrics_ready(m, now_ms()));
	HELP(b, "node_agent_last_contact_age_seconds", "gauge", "Seconds since the last contact with the API server.");
	if (last_contact(m)) {
		uint64_t now = now_ms(), last = last_contact(m);
		httpd_printf(b, "node_agent_last_contact_age_seconds %.3f\n", now > last ? (double)(now - last) / 1e3 : 0.0);
	}
	HELP(b, "node_agent_start_time_seconds", "gauge", "Start of the process, unix seconds.");
	httpd_printf(b, "node_agent_start_time_seconds %lld\n", (long long)m->start_wall);

	HELP(b, "node_agent_desired_generation", "gauge", "Generation of the desired state last written.");
	httpd_printf(b, "node_agent_desired_generation %llu\n", (unsigned long long)m->desired_generation);
	HELP(b, "node_agent_desired_info", "gauge", "Checksum of the OSC in the desired state last written.");
	if (m->desired_checksum[0])
		httpd_printf(b, "node_agent_desired_info{checksum=\"%s\"} 1\n", m->desired_checksum);
	HELP(b, "node_agent_applied_generation", "gauge", "Generation the executor last applied successfully.");
	httpd_printf(b, "node_agent_applied_generation %llu\n", (unsigned long long)m->applied_generation);
	HELP(b, "node_agent_applied_info", "gauge", "Checksum of the OSC the executor last applied successfully.");
	if (m->applied_checksum[0])
		httpd_printf(b, "node_agent_applied_info{checksum=\"%s\"} 1\n", m->applied_checksum);
	HELP(b, "node_agent_apply_success", "gauge", "1 when the last result of the executor is a success, 0 a failure.");
	if (m->result_valid)
		httpd_printf(b, "node_agent_apply_success %d\n", m->result_success);
	HELP(b, "node_agent_apply_results_total", "counter", "Distinct results of the executor read, by outcome.");
	httpd_printf(b, "node_agent_apply_results_total{result=\"success\"} %llu\n",
		     (unsigned long long)m->results[1]);
	httpd_printf(b, "node_agent_apply_results_total{result=\"failure\"} %llu\n",
		     (unsigned long long)m->results[0]);
	HELP(b, "node_agent_apply_duration_seconds", "gauge",
	     "From writing the desired state to the executor's finishedAt, for the last result of it.");
	if (m->apply_seconds >= 0)
		httpd_printf(b, "node_agent_apply_duration_seconds %.3f\n", m->apply_seconds);

	HELP(b, "node_agent_api_requests_total", "counter",
	     "Requests to the API server by verb and HTTP code (0: no answer), counted when they end.");
	for (unsigned i = 0; i < m->n_req; i++)
		httpd_printf(b, "node_agent_api_requests_total{verb=\"%s\",code=\"%ld\"} %llu\n", m->req[i].verb,
			     m->req[i].code, (unsigned long long)m->req[i].n);
	if (m->req_other)
		httpd_printf(b, "node_agent_api_requests_total{verb=\"other\",code=\"other\"} %llu\n",
			     (unsigned long long)m->req_other);
	static const char *const res[2] = { "secrets", "nodes" };
	HELP(b, "node_agent_watch_connects_total", "counter", "Watch requests started, by resource.");
	for (int i = 0; i < 2; i++)
		httpd_printf(b, "node_agent_watch_connects_total{resource=\"%s\"} %llu\n", res[i],
			     (unsigned long long)m->watch_connects[i]);
	HELP(b, "node_agent_watch_reconnects_total", "counter", "Watch requests started after the first, by resource.");
	for (int i = 0; i < 2; i++)
		httpd_printf(b, "node_agent_watch_reconnects_total{resource=\"%s\"} %llu\n", res[i],
			     (unsigned long long)(m->watch_connects[i] ? m->watch_connects[i] - 1 : 0));

	if (m->lease && m->lease->node_name) {
		HELP(b, "node_agent_lease_renewals_total", "counter", "Successful writes of the Lease.");
		httpd_printf(b, "node_agent_lease_renewals_total %llu\n", (unsigned long long)m->lease->renewals);
		HELP(b, "node_agent_lease_failures_total", "counter", "Failed Lease requests.");
		httpd_printf(b, "node_agent_lease_failures_total %llu\n", (unsigned long long)m->lease->failed);
		HELP(b, "node_agent_lease_renew_time_seconds", "gauge", "renewTime of the last successful write.");
		if (m->lease->last_renew_wall)
			httpd_printf(b, "node_agent_lease_renew_time_seconds %lld\n",
				     (long long)m->lease->last_renew_wall);
	}
	if (m->health && m->health->enabled) {
		const struct health *h = m->health;
		HELP(b, "node_agent_health_probes_total", "counter", "Health probes ended, by unit and result.");
		for (unsigned i = 0; i < HEALTH_PROBES; i++)
			if (h->probe[i].url)
				httpd_printf(b,
					     "node_agent_health_probes_total{unit=\"%s\",result=\"healthy\"} %llu\n"
					     "node_agent_health_probes_total{unit=\"%s\",result=\"unhealthy\"} %llu\n",
					     h->probe[i].unit, (unsigned long long)h->probe[i].ok, h->probe[i].unit,
					     (unsigned long long)h->probe[i].failed);
		HELP(b, "node_agent_health_unhealthy", "gauge", "1 while the unit's last probes failed.");
		for (unsigned i = 0; i < HEALTH_PROBES; i++)
			if (h->probe[i].url)
				httpd_printf(b, "node_agent_health_unhealthy{unit=\"%s\"} %d\n", h->probe[i].unit,
					     h->probe[i].failing);
		HELP(b, "node_agent_health_repairs_total", "counter",
		     "Restarts requested by the health duty, by unit and state (requested, done).");
		for (unsigned i = 0; i < HEALTH_PROBES; i++)
			if (h->probe[i].url)
				httpd_printf(b,
					     "node_agent_health_repairs_total{unit=\"%s\",state=\"requested\"} %llu\n"
					     "node_agent_health_repairs_total{unit=\"%s\",state=\"done\"} %llu\n",
					     h->probe[i].unit, (unsigned long long)h->probe[i].repairs, h->probe[i].unit,
					     (unsigned long long)h->probe[i].repairs_done);
		HELP(b, "node_agent_health_ready_flapping_total", "counter",
		     "Events for the kubelet's Ready condition toggling too often.");
		httpd_printf(b, "node_agent_health_ready_flapping_total %llu\n", (unsigned long long)h->flapping_events);
	}
	long long exp = cert_expiry(m->cert_file);
	HELP(b, "node_agent_client_certificate_expiry_seconds", "gauge",
	     "notAfter of the client certificate, unix seconds.");
	if (exp >= 0)
		httpd_printf(b, "node_agent_client_certificate_expiry_seconds %lld\n", exp);
	if (m->httpd) {
		HELP(b, "node_agent_http_responses_total", "counter", "Responses written whole, by listener.");
		for (int l = 0; l < _HTTPD_LISTENERS; l++)
			httpd_printf(b, "node_agent_http_responses_total{listener=\"%s\"} %llu\n",
				     httpd_listener_name((enum httpd_listener)l), (unsigned long long)m->httpd->served[l]);
		HELP(b, "node_agent_http_dropped_total", "counter",
		     "Connections closed early (no slot, deadline, client gone), by listener.");
		for (int l = 0; l < _HTTPD_LISTENERS; l++)
			httpd_printf(b, "node_agent_http_dropped_total{listener=\"%s\"} %llu\n",
				     httpd_listener_name((enum httpd_listener)l), (unsigned long long)m->httpd->dropped[l]);
	}
}

int metrics_handle(enum httpd_listener listener, const struct httpreq *req, struct httpd_body *body,
		   const char **content_type, void *userdata)
{
	const struct metrics *m = userdata;
	if (listener == HTTPD_HEALTH && strcmp(req->path, "/healthz") == 0) {
		httpd_printf(body, "ok\n");
		return 200;
	}
	if (listener == HTTPD_HEALTH && strcmp(req->path, "/readyz") == 0) {
		uint64_t now = now_ms();
		if (metrics_ready(m, now)) {
			httpd_printf(body, "ok\n");
			return 200;
		}
		uint64_t last = last_contact(m);
		if (!last)
			httpd_printf(body, "no contact with the API server yet\n");
		else
			httpd_printf(body, "no contact with the API server for %llu s (more than %llu s)\n",
				     (unsigned long long)(now > last ? now - last : 0) / 1000u,
				     (unsigned long long)m->ready_window_ms / 1000u);
		return 503;
	}
	if (listener == HTTPD_METRICS && strcmp(req->path, "/metrics") == 0) {
		*content_type = "text/plain; version=0.0.4; charset=utf-8";
		metrics_render(m, body);
		return 200;
	}
	httpd_printf(body, "not found\n");
	return 404;
}
