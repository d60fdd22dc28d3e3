/* The InternalIP duty; see internalip.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "events.h"
#include "health.h"
#include "http.h"
#include "internalip.h"
#include "strx.h"
#include "log.h"

#define IFCONF_MAX 256 /* interfaces with an IPv4 address looked at */
#define INET6_FILE_MAX (256u * 1024u)

/* ---- which addresses the interfaces hold -------------------------------- */

int internalip_parse_inet6_line(const char *line, unsigned char out[static 16])
{
	unsigned char a[16];
	for (size_t i = 0; i < 16; i++) {
		int hi = strx_hexval(line[2 * i]);
		int lo = hi < 0 ? -1 : strx_hexval(line[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		a[i] = (unsigned char)(hi << 4 | lo);
	}
	if (line[32] != ' ')
		return -EINVAL;
	memcpy(out, a, sizeof(a));
	return 0;
}

static int held_inet4(const struct in_addr *want)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	_cleanup_free_ struct ifreq *reqs = calloc(IFCONF_MAX, sizeof(*reqs));
	if (!reqs)
		return -ENOMEM;
	struct ifconf ifc = { .ifc_len = (int)(IFCONF_MAX * sizeof(*reqs)), .ifc_req = reqs };
	if (ioctl(fd, SIOCGIFCONF, &ifc) < 0)
		return -errno;
	size_t n = (size_t)ifc.ifc_len / sizeof(*reqs);
	for (size_t i = 0; i < n && i < IFCONF_MAX; i++) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)&reqs[i].ifr_addr;
		if (sin->sin_family == AF_INET && sin->sin_addr.s_addr == want->s_addr)
			return 1;
	}
	return 0;
}

static int held_inet6(const struct in6_addr *want)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/net/if_inet6", "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno; /* no IPv6 on this host */
	char line[256];
	size_t total = 0;
	while (fgets(line, sizeof(line), f)) {
		total += strlen(line);
		if (total > INET6_FILE_MAX)
			return -EFBIG;
		unsigned char a[16];
		if (internalip_parse_inet6_line(line, a) == 0 && memcmp(a, want->s6_addr, 16) == 0)
			return 1;
	}
	return ferror(f) ? -EIO : 0;
}

int internalip_held(const char *ip)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, ip, &a4) == 1)
		return held_inet4(&a4);
	if (inet_pton(AF_INET6, ip, &a6) == 1)
		return held_inet6(&a6);
	return -EINVAL;
}

/* ---- the duty -------------------------------------------------------------- */

static void on_done(struct http_request *req, void *userdata)
{
	struct internalip *ip = userdata;
	ip->req = NULL;
	char why[256] = "";
	bool ok = req->result == CURLE_OK && req->error == 0 && req->status == 200;
	if (!ok)
		http_describe_failure(req, why, sizeof(why));
	internalip_patched(ip, req->result == CURLE_OK ? req->status : 0, why, now_ms());
}

static int start_http(struct internalip *ip, const char *body)
{
	char path[320];
	snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", *ip->node_name);
	return http_start(ip->http, "PATCH", path, NULL, body, "application/merge-patch+json", false, NULL, on_done,
			  ip, &ip->req);
}

void internalip_init(struct internalip *ip, bool enabled, unsigned interval_ms, struct http_client *http,
		     struct events *events, struct health *health, const char *const *node_name)
{
	ip->enabled = enabled;
	ip->interval_ms = interval_ms ? interval_ms : 30000u;
	ip->http = http;
	ip->events = events;
	ip->health = health;
	ip->node_name = node_name;
	if (!ip->held)
		ip->held = internalip_held;
	if (!ip->start)
		ip->start = start_http;
}

void internalip_done(struct internalip *ip)
{
	if (ip->req)
		http_cancel(ip->req);
	ip->req = NULL;
	ip->lost = false;
}

void internalip_node(struct internalip *ip, const struct kube_node *n, uint64_t now)
{
	if (!ip->enabled)
		return;
	snprintf(ip->rv, sizeof(ip->rv), "%s", n->resource_version ? n->resource_version : "");
	if (n->has_address) {
		if (ip->lost)
			log_info("Node %s has an address again", *ip->node_name);
		ip->lost = false;
		ip->none_logged = false;
		/* gardener-node-agent remembers the InternalIP only. */
		if (n->internal_ip[0])
			memcpy(ip->last, n->internal_ip, sizeof(ip->last));
		return;
	}
	if (!ip->lost) {
		ip->lost = true;
		ip->next_at = now; /* at once; then every interval */
	}
}

uint64_t internalip_tick(struct internalip *ip, uint64_t now)
{
	if (!ip->enabled || !ip->lost || ip->req)
		return UINT64_MAX;
	if (now < ip->next_at)
		return ip->next_at;
	ip->next_at = now + ip->interval_ms;
	if (!ip->last[0]) {
		if (!ip->none_logged)
			log_warning("Node %s has neither an internal nor an external IP address, and none was seen before",
				    *ip->node_name);
		ip->none_logged = true;
		if (ip->events)
			events_emit(ip->events, true, "kubelet",
				    "Node status does neither have an internal nor an external IP");
		return ip->next_at;
	}
	if (ip->events)
		events_emit(ip->events, true, "kubelet",
			    "Node status does neither have an internal nor an external IP, try to recover from last "
			    "known internal IP: %s",
			    ip->last);
	int r = ip->held(ip->last);
	if (r <= 0) {
		if (!ip->none_logged) {
			if (r < 0)
				log_error_errno(r, "Node %s lost its addresses; cannot read the interfaces' addresses",
						*ip->node_name);
			else
				log_warning("Node %s lost its addresses; no interface holds %s (its last InternalIP) "
					    "any more: not restored",
					    *ip->node_name, ip->last);
		}
		ip->none_logged = true;
		return ip->next_at;
	}
	char body[256];
	/* A merge patch replaces the list; the resourceVersion makes it an
	 * update of the Node as seen (409 when it changed meanwhile). */
	snprintf(body, sizeof(body),
		 "{\"metadata\":{\"resourceVersion\":\"%s\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\","
		 "\"address\":\"%s\"}]}}",
		 ip->rv, ip->last);
	r = ip->start(ip, body);
	if (r < 0)
		internalip_patched(ip, 0, strerror(-r), now);
	return ip->req ? UINT64_MAX : ip->next_at;
}

void internalip_patched(struct internalip *ip, long status, const char *why, uint64_t now)
{
	if (status == 200) {
		ip->restored++;
		ip->lost = false;
		ip->none_logged = false;
		log_notice("Node %s had neither an internal nor an external IP address: set InternalIP %s again",
			   *ip->node_name, ip->last);
		if (ip->events)
			events_emit(ip->events, false, "kubelet",
				    "Updated the lost internal IP address of node status to the previous known: %s ",
				    ip->last);
		return;
	}
	ip->failed++;
	if (status == 409) {
		/* Changed meanwhile: the watch brings the new version, the
		 * next check decides again (gardener-node-agent returns the
		 * conflict and is requeued). */
		log_info("Node %s changed while its InternalIP was restored; checking again", *ip->node_name);
		return;
	}
	log_error("Node %s: cannot set InternalIP %s again: %s", *ip->node_name, ip->last, why && *why ? why : "failed");
	if (ip->events)
		events_emit(ip->events, true, "kubelet", "Unable to update node status with internal IP: %s",
			    why && *why ? why : "failed");
	if (ip->health) {
		char reason[160];
		snprintf(reason, sizeof(reason), "Node %s: the lost InternalIP could not be set again", *ip->node_name);
		health_request_restart(ip->health, HEALTH_KUBELET, reason, now);
	}
}
