/* Unit tests for agent/health.c, driven with a fake clock and a fake probe
 * starter: the one-minute threshold, the repair limit, the hand-over of a
 * repair and its confirmation by the executor's result, the Events and
 * their texts (gardener-node-agent's), Ready flapping in a floating window;
 * and the health.* settings of lib/node/config.c (loopback only). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../agent/events.h"
#include "../../agent/health.h"
#include "config.h"
#include "osc.h"
#include "urlx.h"

struct fixture {
	struct config cfg;
	struct events ev;
	struct health h;
	unsigned starts[HEALTH_PROBES];
	int start_result;
};

static struct fixture *current;

static int fake_start(struct health *h, struct health_probe *p)
{
	current->starts[p - h->probe]++;
	return current->start_result;
}

static const char *const base_config = "{\"health\": {\"intervalMs\": 1000, \"timeoutMs\": 500, "
				       "\"unhealthyMs\": 3000, \"repairIntervalMs\": 10000, \"readyToggles\": 3, "
				       "\"readyWindowMs\": 20000, \"containerdUrl\": \"http://127.0.0.1:1338/v1/version\"}}";

/* The OSC the agent follows now. */
static void set_osc(struct fixture *f, const char *yaml)
{
	struct osc o;
	struct osc_error err = {};
	if (osc_parse(yaml, strlen(yaml), NULL, &o, &err) < 0)
		fail_msg("osc_parse: %s", err.message);
	health_osc(&f->h, &o);
	osc_done(&o);
}

static struct fixture *fixture_new(const char *json)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	char err[256];
	assert_int_equal(config_parse(json, strlen(json), &f->cfg, err, sizeof(err)), 0);
	assert_int_equal(events_init(&f->ev, NULL, "node1"), 0);
	health_init(&f->h, &f->cfg, NULL, &f->ev);
	f->h.start = fake_start;
	current = f;
	set_osc(f, "spec:\n  units:\n  - name: kubelet.service\n    content: \"[Service]\\nExecStart=/bin/true\\n\"\n");
	return f;
}

static void fixture_free(struct fixture *f)
{
	health_done(&f->h);
	events_done(&f->ev);
	config_done(&f->cfg);
	free(f);
}

/* The ith Event in the queue (oldest first). */
static const struct events_item *event(const struct fixture *f, unsigned i)
{
	assert_true(i < f->ev.n);
	return &f->ev.queue[(f->ev.head + i) % EVENTS_QUEUE];
}

static void healthy_does_nothing(void **state)
{
	struct fixture *f = fixture_new(base_config);
	struct health_probe *k = &f->h.probe[HEALTH_KUBELET];
	for (uint64_t t = 1000; t < 60000; t += 1000) {
		health_tick(&f->h, t, true);
		if (k->probing)
			health_probe_result(&f->h, k, true, NULL, t + 10);
		struct health_probe *c = &f->h.probe[HEALTH_CONTAINERD];
		if (c->probing)
			health_probe_result(&f->h, c, true, NULL, t + 10);
	}
	char id[HEALTH_ID_MAX];
	assert_null(health_take_repair(&f->h, id));
	assert_int_equal(f->ev.n, 0);
	assert_true(f->starts[HEALTH_KUBELET] >= 55);
	assert_int_equal(k->failed, 0);
	assert_int_equal(k->ok, f->starts[HEALTH_KUBELET]);
	fixture_free(f);
}

static void interval_and_inactive(void **state)
{
	struct fixture *f = fixture_new(base_config);
	/* Not active (nothing applied yet): no kubelet probe; containerd is
	 * probed always, as gardener-node-agent's check. */
	assert_int_equal(health_tick(&f->h, 1000, false), 2000);
	assert_int_equal(f->starts[HEALTH_KUBELET], 0);
	assert_int_equal(f->starts[HEALTH_CONTAINERD], 1);
	health_probe_result(&f->h, &f->h.probe[HEALTH_CONTAINERD], true, NULL, 1100);
	f->h.probe[HEALTH_CONTAINERD].next_at = 0;
	f->starts[HEALTH_CONTAINERD] = 0;
	/* Active: both probes start, the next one is due an interval later. */
	assert_int_equal(health_tick(&f->h, 1000, true), 2000);
	assert_int_equal(f->starts[HEALTH_KUBELET], 1);
	assert_int_equal(f->starts[HEALTH_CONTAINERD], 1);
	/* One in flight is not started again, even when due. */
	health_tick(&f->h, 2500, true);
	assert_int_equal(f->starts[HEALTH_KUBELET], 1);
	health_probe_result(&f->h, &f->h.probe[HEALTH_KUBELET], true, NULL, 2600);
	health_tick(&f->h, 2700, true);
	assert_int_equal(f->starts[HEALTH_KUBELET], 2);

	/* An OSC without kubelet.service: the kubelet is not probed (containerd,
	 * an OS unit, still is); a reload keeps what the OSC said. */
	set_osc(f, "spec:\n  files: []\n");
	f->h.probe[HEALTH_KUBELET].next_at = f->h.probe[HEALTH_CONTAINERD].next_at = 0;
	health_probe_result(&f->h, &f->h.probe[HEALTH_CONTAINERD], true, NULL, 2700);
	health_probe_result(&f->h, &f->h.probe[HEALTH_KUBELET], true, NULL, 2700);
	health_tick(&f->h, 2800, true);
	assert_int_equal(f->starts[HEALTH_KUBELET], 2);
	assert_int_equal(f->starts[HEALTH_CONTAINERD], 2);
	health_init(&f->h, &f->cfg, NULL, &f->ev);
	f->h.start = fake_start;
	health_tick(&f->h, 2900, true);
	assert_int_equal(f->starts[HEALTH_KUBELET], 2);
	assert_int_equal(f->starts[HEALTH_CONTAINERD], 3);
	fixture_free(f);

	/* Off switch. */
	f = fixture_new("{\"health\": {\"enabled\": false}}");
	assert_int_equal(health_tick(&f->h, 1000, true), UINT64_MAX);
	health_node_ready(&f->h, 0, 1);
	health_node_ready(&f->h, 1, 2);
	assert_int_equal(f->starts[HEALTH_KUBELET] + f->starts[HEALTH_CONTAINERD], 0);
	fixture_free(f);

	/* Default: the kubelet only; containerdUrl unset. */
	f = fixture_new("{}");
	assert_string_equal(f->h.probe[HEALTH_KUBELET].url, "http://127.0.0.1:10248/healthz");
	assert_null(f->h.probe[HEALTH_CONTAINERD].url);
	assert_int_equal(f->h.interval_ms, 30000);
	assert_int_equal(f->h.timeout_ms, 10000);
	assert_int_equal(f->h.unhealthy_ms, 60000);
	assert_int_equal(f->h.ready_toggles, 5);
	assert_int_equal(f->h.ready_window_ms, 600000);
	health_tick(&f->h, 5, true);
	assert_int_equal(f->starts[HEALTH_CONTAINERD], 0);
	assert_int_equal(f->starts[HEALTH_KUBELET], 1);
	fixture_free(f);
}

/* Fails probe k at time t (starting it first). */
static void fail_at(struct fixture *f, struct health_probe *p, uint64_t t, const char *why)
{
	p->next_at = 0;
	health_tick(&f->h, t, true);
	assert_true(p->probing);
	health_probe_result(&f->h, p, false, why, t);
}

static void repair_after_threshold_and_limit(void **state)
{
	struct fixture *f = fixture_new(base_config);
	struct health_probe *k = &f->h.probe[HEALTH_KUBELET];
	char id[HEALTH_ID_MAX];

	fail_at(f, k, 1000, "HTTP status 500");
	assert_true(k->failing);
	assert_int_equal(f->ev.n, 1);
	assert_true(event(f, 0)->warning);
	assert_string_equal(event(f, 0)->reason, "kubelet");
	assert_string_equal(event(f, 0)->message, "Kubelet is unhealthy, health check error: HTTP status 500");
	/* Below the threshold (3 s here): nothing. */
	fail_at(f, k, 3999, "HTTP status 500");
	assert_null(health_take_repair(&f->h, id));
	assert_int_equal(f->ev.n, 1);
	/* At the threshold: one repair, one Event. */
	fail_at(f, k, 4000, "HTTP status 500");
	assert_int_equal(k->repairs, 1);
	assert_int_equal(f->ev.n, 2);
	assert_string_equal(event(f, 1)->message,
			    "Kubelet is unhealthy for more than 3s, restarting it. Health check error: HTTP status 500");
	assert_string_equal(health_take_repair(&f->h, id), "kubelet.service");
	assert_true(strncmp(id, "health-kubelet.service-", 23) == 0);
	assert_null(health_take_repair(&f->h, id)); /* handed over once */

	/* Still failing: within the repair interval (10 s) no second repair,
	 * however long the spell. */
	for (uint64_t t = 5000; t < 14000; t += 1000)
		fail_at(f, k, t, "HTTP status 500");
	assert_int_equal(k->repairs, 1);
	assert_true(k->held_logged);
	assert_null(health_take_repair(&f->h, id));
	assert_int_equal(f->ev.n, 2);

	/* The executor reports another request: not ours. */
	health_result(&f->h, "0123-other");
	health_result(&f->h, NULL);
	assert_int_equal(k->repairs_done, 0);
	/* It reports ours: done, an Event. */
	health_result(&f->h, id);
	assert_int_equal(k->repairs_done, 1);
	assert_int_equal(f->ev.n, 3);
	assert_false(event(f, 2)->warning);
	char want[256];
	snprintf(want, sizeof(want), "health repair done: kubelet.service restarted by cloud-config-exec (request %s)",
		 id);
	assert_string_equal(event(f, 2)->message, want);
	health_result(&f->h, id); /* read again (resync): counted once */
	assert_int_equal(k->repairs_done, 1);

	/* After the repair interval: the second repair. */
	fail_at(f, k, 14000, "HTTP status 500");
	assert_int_equal(k->repairs, 2);
	char id2[HEALTH_ID_MAX];
	assert_string_equal(health_take_repair(&f->h, id2), "kubelet.service");
	assert_string_not_equal(id, id2);

	/* Healthy again: one Event. */
	k->next_at = 0;
	health_tick(&f->h, 15000, true);
	health_probe_result(&f->h, k, true, NULL, 15000);
	assert_false(k->failing);
	assert_string_equal(event(f, f->ev.n - 1)->message, "Kubelet is healthy");
	fixture_free(f);
}

static void containerd_and_start_failure(void **state)
{
	struct fixture *f = fixture_new(base_config);
	struct health_probe *c = &f->h.probe[HEALTH_CONTAINERD];
	char id[HEALTH_ID_MAX];
	/* A probe that cannot even start counts as unhealthy. */
	f->start_result = -ENOMEM;
	health_tick(&f->h, 1000, true);
	assert_true(c->failing);
	assert_false(c->probing);
	assert_non_null(strstr(c->error, "cannot start the probe"));
	health_tick(&f->h, 4000, true);
	assert_string_equal(event(f, f->ev.n - 1)->reason, "containerd");
	assert_non_null(strstr(event(f, f->ev.n - 1)->message, "Containerd is unhealthy for more than 3s"));
	/* Both units are due: one hand-over each. */
	const char *u1 = health_take_repair(&f->h, id);
	const char *u2 = health_take_repair(&f->h, id);
	assert_non_null(u1);
	assert_non_null(u2);
	assert_string_not_equal(u1, u2);
	assert_null(health_take_repair(&f->h, id));

	/* A failed apply does not end a spell: containerd's repair is most
	 * needed then (an image it cannot pull), and the kubelet runs on. */
	f->start_result = 0;
	health_tick(&f->h, 5000, false);
	assert_true(c->failing);
	assert_true(f->h.probe[HEALTH_KUBELET].failing);
	fixture_free(f);
}

/* Without health.containerdUrl (the default), cloud-config-exec's probe of
 * containerd's socket stands for gardener-node-agent's Version() call
 * (containerd.go): its texts, one minute, one restart per repair interval
 * (set to 10 min here); whatever the OSC and the last apply, while the
 * verdict is new and not stale. */
static void containerd_socket(void **state)
{
	const char *json = "{\"health\": {\"intervalMs\": 30000, \"unhealthyMs\": 60000, "
			   "\"repairIntervalMs\": 600000}}";
	struct fixture *f = fixture_new(json);
	struct health_probe *c = &f->h.probe[HEALTH_CONTAINERD];
	char id[HEALTH_ID_MAX];
	long long wall = 1764170000;
	assert_true(c->socket);
	assert_null(c->url);
	/* The fixture's OSC has no criConfig, the last apply failed: taken
	 * all the same (gardener-node-agent checks containerd always). */
	health_tick(&f->h, 1000, false);
	assert_int_equal(f->starts[HEALTH_CONTAINERD], 0); /* never an HTTP probe */
	assert_true(health_socket_result(&f->h, true, "", wall - 1, wall, 1000));
	/* Stale: older than three intervals. */
	assert_false(health_socket_result(&f->h, false, "x", wall - 91, wall, 1000));
	assert_true(health_socket_result(&f->h, true, "", wall, wall, 1000));
	assert_int_equal(f->ev.n, 0);
	/* The same verdict read again is not a second one. */
	assert_false(health_socket_result(&f->h, true, "", wall, wall, 1000));

	/* Unhealthy at 0 s, 30 s: an Event, no restart; at 60 s: restart. */
	const char *why = "ctr version at /run/containerd/containerd.sock failed";
	assert_true(health_socket_result(&f->h, false, why, wall + 30, wall + 30, 31000));
	assert_int_equal(f->ev.n, 1);
	assert_string_equal(event(f, 0)->reason, "containerd");
	assert_true(event(f, 0)->warning);
	char want[256];
	snprintf(want, sizeof(want), "Containerd is unhealthy: %s", why);
	assert_string_equal(event(f, 0)->message, want);
	assert_true(health_socket_result(&f->h, false, why, wall + 60, wall + 60, 61000));
	assert_null(health_take_repair(&f->h, id));
	assert_true(health_socket_result(&f->h, false, why, wall + 90, wall + 90, 91000));
	assert_int_equal(f->ev.n, 2);
	snprintf(want, sizeof(want), "Containerd is unhealthy for more than 1m0s, restarting it: %s", why);
	assert_string_equal(event(f, 1)->message, want);
	const char *unit = health_take_repair(&f->h, id);
	assert_non_null(unit);
	assert_string_equal(unit, "containerd.service");
	/* Still unhealthy: never a restart loop, one per repairIntervalMs. */
	for (long long t = 120; t <= 600; t += 30)
		health_socket_result(&f->h, false, why, wall + t, wall + t, (uint64_t)t * 1000 + 1000);
	assert_null(health_take_repair(&f->h, id));
	health_socket_result(&f->h, false, why, wall + 720, wall + 720, 721000);
	assert_non_null(health_take_repair(&f->h, id));
	/* Healthy again: gardener-node-agent's Normal Event. */
	size_t n = f->ev.n;
	health_socket_result(&f->h, true, "", wall + 750, wall + 750, 751000);
	assert_int_equal(f->ev.n, n + 1);
	assert_false(event(f, n)->warning);
	assert_string_equal(event(f, n)->message, "Containerd is healthy");
	fixture_free(f);
}

static void ready_flapping(void **state)
{
	struct fixture *f = fixture_new(base_config); /* 3 toggles in 20 s */
	/* The first Ready seen is the starting point, not a toggle. */
	health_node_ready(&f->h, 1, 100);
	health_node_ready(&f->h, 0, 200);
	health_node_ready(&f->h, 1, 300); /* 1 */
	health_node_ready(&f->h, 1, 400); /* no change */
	health_node_ready(&f->h, -1, 500); /* no condition reads as NotReady */
	health_node_ready(&f->h, 1, 600); /* 2 */
	assert_int_equal(f->ev.n, 0);
	health_node_ready(&f->h, 0, 700);
	health_node_ready(&f->h, 1, 800); /* 3 */
	assert_int_equal(f->ev.n, 1);
	assert_true(event(f, 0)->warning);
	assert_string_equal(event(f, 0)->reason, "kubelet");
	assert_string_equal(event(f, 0)->message, "Kubelet toggled between NotReady and Ready at least 3 times in a "
						  "20s time window. Rebooting the node might help");
	/* The window floats: 30 s later the old toggles no longer count. */
	health_node_ready(&f->h, 0, 30000);
	health_node_ready(&f->h, 1, 30100);
	health_node_ready(&f->h, 0, 30200);
	health_node_ready(&f->h, 1, 30300);
	assert_int_equal(f->ev.n, 1);
	assert_int_equal(f->h.n_toggles, 2);
	health_node_ready(&f->h, 0, 30400);
	health_node_ready(&f->h, 1, 30500);
	assert_int_equal(f->ev.n, 2);
	assert_int_equal(f->h.flapping_events, 2);
	fixture_free(f);

	/* Many toggles: the record stays bounded. */
	f = fixture_new("{\"health\": {\"readyToggles\": 64, \"readyWindowMs\": 86400000}}");
	health_node_ready(&f->h, 0, 1);
	for (uint64_t t = 2; t < 1000; t += 2) {
		health_node_ready(&f->h, 1, t);
		health_node_ready(&f->h, 0, t + 1);
	}
	assert_int_equal(f->h.n_toggles, CONFIG_READY_TOGGLES_MAX);
	fixture_free(f);
}

static void config_loopback_only(void **state)
{
	static const char *const good[] = {
		"http://127.0.0.1:10248/healthz", "http://127.0.0.1/healthz", "http://127.1.2.3:80",
		"http://[::1]:10248/healthz",      "http://127.0.0.1:65535/",
	};
	static const char *const bad[] = {
		"https://127.0.0.1:10248/healthz", "http://10.0.0.1:10248/healthz", "http://localhost:10248/healthz",
		"http://127.1:10248/",             "http://[::2]:1/",             "http://127.0.0.1:0/",
		"http://127.0.0.1:65536/",         "http://127.0.0.1:x/",         "http://user@127.0.0.1/",
		"http://127.0.0.1/a b",            "http://127.0.0.1/?q",         "http://127.0.0.1.evil.com/",
		"http://0x7f.0.0.1/",              "http://[::ffff:127.0.0.1]/",  "ftp://127.0.0.1/",
		"http://",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(urlx_loopback_is_valid(good[i]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (urlx_loopback_is_valid(bad[i]))
			fail_msg("accepted \"%s\"", bad[i]);
	}

	struct config c;
	char err[512];
	const char *j = "{\"health\": {\"kubeletUrl\": \"http://10.250.0.5:10248/healthz\"}}";
	assert_int_equal(config_parse(j, strlen(j), &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "health.kubeletUrl: probes go to loopback only"));
	assert_non_null(strstr(err, "10.250.0.5"));
	j = "{\"health\": {\"readyToggles\": 0}}";
	assert_int_equal(config_parse(j, strlen(j), &c, err, sizeof(err)), -EINVAL);
	j = "{\"health\": {\"readyToggles\": 65}}";
	assert_int_equal(config_parse(j, strlen(j), &c, err, sizeof(err)), -EINVAL);
	j = "{\"health\": {\"probe\": 1}}";
	assert_int_equal(config_parse(j, strlen(j), &c, err, sizeof(err)), -EINVAL);
	/* "" switches a probe off. */
	j = "{\"health\": {\"kubeletUrl\": \"\"}}";
	assert_int_equal(config_parse(j, strlen(j), &c, err, sizeof(err)), 0);
	struct health h = { 0 };
	health_init(&h, &c, NULL, NULL);
	assert_null(h.probe[HEALTH_KUBELET].url);
	config_done(&c);
}

static void print_config(void **state)
{
	struct config c;
	char err[256], *buf = NULL;
	size_t len = 0;
	assert_int_equal(config_parse(base_config, strlen(base_config), &c, err, sizeof(err)), 0);
	FILE *m = open_memstream(&buf, &len);
	assert_non_null(m);
	health_print_config(&c, m);
	fclose(m);
	assert_non_null(strstr(buf, "kubelet probe http://127.0.0.1:10248/healthz"));
	assert_non_null(strstr(buf, "containerd probe http://127.0.0.1:1338/v1/version"));
	assert_non_null(strstr(buf, "restart after 3000 ms unhealthy, at most once per unit in 10000 ms"));
	free(buf);
	config_done(&c);
}

/* ---- http_probe_start() against a real loopback peer ---------------------- */

struct probe_outcome {
	bool done;
	long status;
	CURLcode result;
	int error;
	size_t body_len;
};

static void probe_done(struct http_request *req, void *userdata)
{
	struct probe_outcome *o = userdata;
	*o = (struct probe_outcome){ .done = true, .status = req->status, .result = req->result, .error = req->error,
				     .body_len = req->body_len };
}

/* A peer on 127.0.0.1 that answers its nth connection as modes[n] says:
 * 'o' 200 ok, 'f' 500, 'b' 200 with a 64 KiB body, 'h' reads the request
 * and never answers. Returns the port; the child is *pid. */
static unsigned short peer_start(const char *modes, pid_t *pid)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	*pid = fork();
	assert_true(*pid >= 0);
	if (*pid > 0) {
		close(fd);
		return ntohs(a.sin_port);
	}
	static char big[65536 + 256];
	for (const char *m = modes; *m; m++) {
		int c = accept(fd, NULL, NULL);
		if (c < 0)
			_exit(1);
		char req[4096];
		if (read(c, req, sizeof(req)) <= 0)
			_exit(1);
		const char *reply = *m == 'o' ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
				    : *m == 'f' ? "HTTP/1.1 500 X\r\nContent-Length: 4\r\nConnection: close\r\n\r\nfail"
						: NULL;
		if (*m == 'b') {
			int n = snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
			memset(big + n, 'x', sizeof(big) - (size_t)n - 1);
			big[sizeof(big) - 1] = '\0';
			reply = big;
		}
		if (reply && write(c, reply, strlen(reply)) < 0)
			_exit(1);
		if (*m == 'h')
			while (read(c, req, sizeof(req)) > 0) /* until the client goes */
				;
		close(c);
	}
	_exit(0);
}

static struct probe_outcome probe_once(struct http_client *c, const char *url, unsigned timeout_ms)
{
	struct probe_outcome o = {};
	struct http_request *req = NULL;
	assert_int_equal(http_probe_start(c, url, timeout_ms, HEALTH_BODY_MAX, probe_done, &o, &req), 0);
	uint64_t deadline = now_ms() + 10000;
	while (!o.done && now_ms() < deadline) {
		assert_int_equal(http_wait(c, NULL, 0, 100), 0);
		assert_int_equal(http_dispatch(c), 0);
	}
	assert_true(o.done);
	return o;
}

static void http_probe(void **state)
{
	struct config cfg;
	assert_int_equal(config_defaults(&cfg), 0);
	struct http_client c;
	assert_int_equal(http_client_init(&c, &cfg), 0);
	struct http_request *req = NULL;
	/* Off loopback, https, a name: refused before any connection. */
	assert_int_equal(http_probe_start(&c, "http://10.0.0.1:10248/healthz", 1000, 64, probe_done, NULL, &req),
			 -EINVAL);
	assert_int_equal(http_probe_start(&c, "https://127.0.0.1/", 1000, 64, probe_done, NULL, &req), -EINVAL);
	assert_int_equal(http_probe_start(&c, "http://localhost/", 1000, 64, probe_done, NULL, &req), -EINVAL);
	assert_null(req);

	pid_t pid;
	unsigned short port = peer_start("ofbh", &pid);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", port);
	struct probe_outcome o = probe_once(&c, url, 5000);
	assert_int_equal(o.result, CURLE_OK);
	assert_int_equal(o.status, 200);
	assert_int_equal(o.body_len, 2);
	o = probe_once(&c, url, 5000);
	assert_int_equal(o.result, CURLE_OK);
	assert_int_equal(o.status, 500);
	/* A body over the ceiling: cut off, not buffered. */
	o = probe_once(&c, url, 5000);
	assert_true(o.result != CURLE_OK);
	assert_int_equal(o.error, -EMSGSIZE);
	assert_true(o.body_len <= HEALTH_BODY_MAX);
	/* A peer that never answers: the deadline ends it. */
	uint64_t t0 = now_ms();
	o = probe_once(&c, url, 300);
	assert_int_equal(o.result, CURLE_OPERATION_TIMEDOUT);
	assert_true(now_ms() - t0 >= 250);
	assert_true(now_ms() - t0 < 5000);
	/* None of them is an API request. */
	assert_int_equal(c.n_requests, 0);
	assert_int_equal(c.n_active, 0);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	http_client_done(&c);
	config_done(&cfg);
}

/* The cadence of gardener-node-agent's checks with the defaults: a unit
 * that stays unhealthy is restarted after each minute of failure (its
 * firstFailure reset by the restart), containerd and the kubelet alike,
 * also while the executor's applies fail. */
static void cadence_as_gardener(void **state)
{
	struct fixture *f = fixture_new("{\"health\": {}}");
	struct health_probe *k = &f->h.probe[HEALTH_KUBELET], *c = &f->h.probe[HEALTH_CONTAINERD];
	char id[HEALTH_ID_MAX];
	long long wall = 1764170000;
	assert_int_equal(f->h.interval_ms, 30000);
	assert_int_equal(f->h.unhealthy_ms, 60000);
	health_tick(&f->h, 0, true); /* an apply succeeded once */
	health_probe_result(&f->h, k, true, NULL, 0);
	unsigned kr[8], cr[8], nk = 0, nc = 0;
	/* Both fail from 30 s on, for ten minutes; every apply fails meanwhile. */
	for (uint64_t t = 30000; t <= 630000; t += 30000) {
		k->next_at = 0;
		health_tick(&f->h, t, false);
		if (k->probing)
			health_probe_result(&f->h, k, false, "connection refused", t);
		health_socket_result(&f->h, false, "ctr version failed", wall + (long long)t / 1000,
				     wall + (long long)t / 1000, t);
		const char *u;
		while ((u = health_take_repair(&f->h, id))) {
			if (strcmp(u, "kubelet.service") == 0 && nk < 8)
				kr[nk++] = (unsigned)(t / 1000);
			else if (strcmp(u, "containerd.service") == 0 && nc < 8)
				cr[nc++] = (unsigned)(t / 1000);
		}
	}
	/* First failure at 30 s: restarts at 90 s, then each minute after. */
	assert_int_equal(nk, 8);
	assert_int_equal(nc, 8);
	for (unsigned i = 0; i < 8; i++) {
		if (kr[i] != 90 + 60 * i || cr[i] != 90 + 60 * i)
			fail_msg("restart %u: kubelet at %u s, containerd at %u s, want %u s", i, kr[i], cr[i], 90 + 60 * i);
	}
	assert_int_equal(k->repairs, c->repairs);
	fixture_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(healthy_does_nothing),
		cmocka_unit_test(interval_and_inactive),
		cmocka_unit_test(cadence_as_gardener),
		cmocka_unit_test(repair_after_threshold_and_limit),
		cmocka_unit_test(containerd_and_start_failure),
		cmocka_unit_test(containerd_socket),
		cmocka_unit_test(ready_flapping),
		cmocka_unit_test(config_loopback_only),
		cmocka_unit_test(print_config),
		cmocka_unit_test(http_probe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
