/* libFuzzer target for lib/kube/kube.c: the input is a watch stream. The first
 * byte picks the watched kind and seeds the chunk sizes; the stream is fed
 * to the splitter once whole and once at pseudo-random chunk boundaries, the
 * two must yield the same lines and hold back the same unfinished tail, and
 * every line goes through the event parser. The whole input also goes
 * through the Secret, Node, NodeList (by label and by name) and Status
 * parsers, a Node's Secret-name label through the name check the agent
 * applies to it, and its remembered InternalIP through
 * inet_pton()/inet_ntop(). Never a crash, a leak, or a disagreement. */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ctx {
	enum kube_kind kind;
	uint64_t hash;
	size_t lines;
};

static int on_line(const char *line, size_t len, void *userdata)
{
	struct ctx *c = userdata;
	for (size_t i = 0; i < len; i++)
		c->hash = (c->hash ^ (unsigned char)line[i]) * 1099511628211ull;
	c->hash = (c->hash ^ 0x100) * 1099511628211ull;
	c->lines++;
	struct kube_event e;
	if (kube_event_parse(line, len, c->kind, 1 << 16, &e, NULL) == 0) {
		if (e.type != KUBE_EVENT_ERROR && !e.resource_version)
			abort();
		kube_event_done(&e);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint32_t seed = data[0];
	struct ctx whole = { .kind = (data[0] & 1) ? KUBE_KIND_NODE : KUBE_KIND_SECRET, .hash = 14695981039346656037ull };
	struct ctx chunked = whole;
	const char *s = (const char *)data + 1;
	size_t n = size - 1;

	struct kube_splitter sp;
	kube_splitter_init(&sp, 4096);
	int r1 = kube_splitter_feed(&sp, s, n, on_line, &whole);
	size_t pending1 = kube_splitter_pending(&sp);
	kube_splitter_done(&sp);

	kube_splitter_init(&sp, 4096);
	int r2 = 0;
	for (size_t off = 0; off < n && r2 == 0;) {
		seed = seed * 1103515245u + 12345u;
		size_t chunk = 1 + (seed >> 16) % 64;
		if (chunk > n - off)
			chunk = n - off;
		r2 = kube_splitter_feed(&sp, s + off, chunk, on_line, &chunked);
		off += chunk;
	}
	size_t pending2 = kube_splitter_pending(&sp);
	kube_splitter_reset(&sp);
	if (kube_splitter_pending(&sp) != 0)
		abort();
	kube_splitter_done(&sp);
	if (r1 != r2)
		abort();
	if (r1 == 0 && (whole.lines != chunked.lines || whole.hash != chunked.hash))
		abort();
	/* What is held back is exactly the bytes after the last newline. */
	const char *nl = memrchr(s, '\n', n);
	size_t tail = nl ? n - (size_t)(nl - s) - 1 : n;
	if (r1 == 0 && (pending1 != tail || pending2 != tail))
		abort();

	struct kube_secret sec;
	unsigned char *tok = NULL;
	size_t tok_len = 0;
	if (kube_secret_data(s, n, "token", 1 << 16, &tok, &tok_len, NULL) == 0) {
		if (!tok || tok_len > (1u << 16) || tok[tok_len] != '\0')
			abort();
		free(tok);
	}
	if (kube_secret_parse(s, n, 1 << 16, &sec, NULL) == 0) {
		char sum[65];
		(void)kube_secret_verify(&sec, sum);
		kube_secret_done(&sec);
	}
	char *found = NULL;
	int rl = kube_node_list_find(s, n, KUBE_LABEL_HOSTNAME, "node-1", &found, NULL);
	if ((rl == 0) != (found != NULL) || (found && !kube_name_is_valid(found)))
		abort();
	free(found);
	/* The agent's list of its own Node by name: the one item of that name. */
	struct kube_node named = {};
	int rn = kube_node_list_named(s, n, "node-1", &named, NULL);
	if ((rn == 0) != (named.name != NULL) || (rn == 0 && strcmp(named.name, "node-1") != 0))
		abort();
	kube_node_done(&named);
	struct kube_node node;
	if (kube_node_parse(s, n, &node, NULL) == 0) {
		/* The agent follows this label only when it is a valid name. */
		const char *l = node.secret_name_label;
		if (l && kube_name_is_valid(l)) {
			size_t len = strlen(l);
			if (len == 0 || len > KUBE_NAME_MAX || strspn(l, "abcdefghijklmnopqrstuvwxyz0123456789-.") != len ||
			    l[0] == '-' || l[0] == '.' || l[len - 1] == '-' || l[len - 1] == '.')
				abort();
		}
		/* status.addresses: a remembered InternalIP is an address in
		 * canonical form (it goes into a JSON patch unescaped). */
		if (node.internal_ip[0]) {
			unsigned char bin[16];
			char again[KUBE_IP_MAX];
			int af = strchr(node.internal_ip, ':') ? AF_INET6 : AF_INET;
			if (!node.has_address || inet_pton(af, node.internal_ip, bin) != 1 ||
			    !inet_ntop(af, bin, again, sizeof(again)) || strcmp(again, node.internal_ip) != 0)
				abort();
		}
		kube_node_done(&node);
	}
	struct kube_status st;
	if (kube_status_parse(s, n, &st) == 0)
		kube_status_done(&st);
	return 0;
}
