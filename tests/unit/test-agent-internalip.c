/* Unit tests for agent/internalip.c and the Node's status.addresses in
 * lib/kube.c: the last InternalIP is remembered; a Node with neither an
 * internal nor an external address gets it back when an interface holds it
 * (one patch carrying the resourceVersion, at once and then every
 * interval), not when none does or none was seen; 409 is tried again
 * without a restart, another failure asks the health duty to restart the
 * kubelet (within its limit); /proc/net/if_inet6 lines; the real check of
 * the interfaces' addresses on loopback. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube.h"
#include "../../agent/health.h"
#include "../../agent/internalip.h"

static int held_result;
static unsigned starts;
static char last_body[512];

static int fake_held(const char *ip)
{
	(void)ip;
	return held_result;
}

static int fake_start(struct internalip *ip, const char *body)
{
	starts++;
	snprintf(last_body, sizeof(last_body), "%s", body);
	return 0;
}

static const char *node_name = "node-a";

static void setup(struct internalip *ip, struct health *h)
{
	*ip = (struct internalip){ .held = fake_held, .start = fake_start };
	held_result = 1;
	starts = 0;
	last_body[0] = '\0';
	internalip_init(ip, true, 30000, NULL, NULL, h, &node_name);
}

static struct kube_node parse(const char *json)
{
	struct kube_node n;
	assert_int_equal(kube_node_parse(json, strlen(json), &n, NULL), 0);
	return n;
}

#define NODE(rv, addrs)                                                                                    \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-a\",\"resourceVersion\":\"" rv \
	"\"},\"status\":{\"addresses\":" addrs "}}"

static void addresses_parsed(void **state)
{
	struct kube_node n = parse(NODE("1", "[{\"type\":\"InternalIP\",\"address\":\"10.0.0.1\"},"
					     "{\"type\":\"Hostname\",\"address\":\"node-a\"},"
					     "{\"type\":\"InternalIP\",\"address\":\"10.0.0.2\"}]"));
	assert_true(n.has_address);
	assert_string_equal(n.internal_ip, "10.0.0.2"); /* the last, as gardener's loop */
	kube_node_done(&n);

	n = parse(NODE("1", "[{\"type\":\"InternalIP\",\"address\":\"2001:DB8:0::1\"}]"));
	assert_string_equal(n.internal_ip, "2001:db8::1");
	kube_node_done(&n);

	n = parse(NODE("1", "[{\"type\":\"ExternalIP\",\"address\":\"192.0.2.1\"}]"));
	assert_true(n.has_address);
	assert_string_equal(n.internal_ip, "");
	kube_node_done(&n);

	/* Not an address: present, but nothing to remember. */
	n = parse(NODE("1", "[{\"type\":\"InternalIP\",\"address\":\"not-an-ip\"}]"));
	assert_true(n.has_address);
	assert_string_equal(n.internal_ip, "");
	kube_node_done(&n);

	/* Lenient: odd entries are skipped, the Node stays readable. */
	n = parse(NODE("1", "[{\"type\":\"Hostname\",\"address\":\"node-a\"},{\"type\":\"InternalIP\",\"address\":\"\"},"
			     "{\"type\":7},\"x\",{\"type\":\"InternalIP\",\"address\":[]}]"));
	assert_false(n.has_address);
	kube_node_done(&n);
	n = parse(NODE("1", "{}"));
	assert_false(n.has_address);
	kube_node_done(&n);
}

static void restored(void **state)
{
	struct internalip ip;
	setup(&ip, NULL);
	struct kube_node n = parse(NODE("5", "[{\"type\":\"InternalIP\",\"address\":\"10.250.0.7\"}]"));
	internalip_node(&ip, &n, 1000);
	kube_node_done(&n);
	assert_string_equal(ip.last, "10.250.0.7");
	assert_int_equal(internalip_tick(&ip, 1000), UINT64_MAX);
	assert_int_equal(starts, 0);

	n = parse(NODE("6", "[{\"type\":\"Hostname\",\"address\":\"node-a\"}]"));
	internalip_node(&ip, &n, 2000);
	kube_node_done(&n);
	assert_true(ip.lost);
	assert_int_equal(internalip_tick(&ip, 2000), 2000 + 30000); /* fake start: no request in flight */
	assert_int_equal(starts, 1);
	assert_string_equal(last_body, "{\"metadata\":{\"resourceVersion\":\"6\"},\"status\":{\"addresses\":[{\"type\":"
				       "\"InternalIP\",\"address\":\"10.250.0.7\"}]}}");
	internalip_patched(&ip, 200, NULL, 2100);
	assert_int_equal(ip.restored, 1);
	assert_false(ip.lost);
	assert_int_equal(internalip_tick(&ip, 40000), UINT64_MAX);
	assert_int_equal(starts, 1);
}

static void not_held_or_unknown(void **state)
{
	struct internalip ip;
	setup(&ip, NULL);
	/* Never seen one: nothing to set. */
	struct kube_node n = parse(NODE("1", "[]"));
	internalip_node(&ip, &n, 0);
	assert_int_equal(internalip_tick(&ip, 0), 30000);
	assert_int_equal(starts, 0);

	/* Seen, lost, but no interface holds it: checked every interval. */
	struct kube_node with = parse(NODE("2", "[{\"type\":\"InternalIP\",\"address\":\"10.0.0.9\"}]"));
	internalip_node(&ip, &with, 1000);
	internalip_node(&ip, &n, 1000);
	held_result = 0;
	assert_int_equal(internalip_tick(&ip, 1000), 31000);
	assert_int_equal(internalip_tick(&ip, 30999), 31000);
	assert_int_equal(starts, 0);
	/* The interface has it again: restored at the next check. */
	held_result = 1;
	internalip_tick(&ip, 31000);
	assert_int_equal(starts, 1);
	kube_node_done(&n);
	kube_node_done(&with);
}

static void failures(void **state)
{
	struct health h = { .enabled = true, .repair_interval_ms = 60000 };
	h.probe[HEALTH_KUBELET].unit = "kubelet.service";
	struct internalip ip;
	setup(&ip, &h);
	struct kube_node with = parse(NODE("2", "[{\"type\":\"InternalIP\",\"address\":\"10.0.0.9\"}]"));
	struct kube_node n = parse(NODE("3", "[]"));
	internalip_node(&ip, &with, 0);
	internalip_node(&ip, &n, 0);
	internalip_tick(&ip, 0);
	assert_int_equal(starts, 1);

	/* Conflict: no restart, tried again at the next check. */
	internalip_patched(&ip, 409, "conflict", 10);
	char id[HEALTH_ID_MAX];
	assert_null(health_take_repair(&h, id));
	assert_true(ip.lost);
	internalip_tick(&ip, 30000);
	assert_int_equal(starts, 2);

	/* Another failure: the kubelet is restarted, once per repair interval. */
	internalip_patched(&ip, 403, "forbidden", 30010);
	assert_string_equal(health_take_repair(&h, id), "kubelet.service");
	internalip_tick(&ip, 60000);
	internalip_patched(&ip, 500, "server error", 60010);
	assert_null(health_take_repair(&h, id));
	assert_int_equal(ip.failed, 3);
	kube_node_done(&n);
	kube_node_done(&with);
}

static void off(void **state)
{
	struct internalip ip = { .held = fake_held, .start = fake_start };
	starts = 0;
	internalip_init(&ip, false, 30000, NULL, NULL, NULL, &node_name);
	struct kube_node n = parse(NODE("3", "[]"));
	internalip_node(&ip, &n, 0);
	assert_int_equal(internalip_tick(&ip, 0), UINT64_MAX);
	assert_int_equal(starts, 0);
	kube_node_done(&n);
}

static void inet6_lines(void **state)
{
	unsigned char a[16];
	assert_int_equal(internalip_parse_inet6_line("00000000000000000000000000000001 01 80 10 80       lo\n", a), 0);
	assert_int_equal(a[15], 1);
	assert_int_equal(a[0], 0);
	assert_int_equal(internalip_parse_inet6_line("fe800000000000000000000000000001 02 40 20 80 eth0\n", a), 0);
	assert_int_equal(a[0], 0xfe);
	assert_int_equal(a[1], 0x80);
	assert_int_equal(internalip_parse_inet6_line("fe80000000000000000000000000001 02 40 20 80 eth0\n", a), -EINVAL);
	assert_int_equal(internalip_parse_inet6_line("", a), -EINVAL);
	assert_int_equal(internalip_parse_inet6_line("zz800000000000000000000000000001 02", a), -EINVAL);
	assert_int_equal(internalip_parse_inet6_line("fe8000000000000000000000000000011", a), -EINVAL);
}

static void held_on_loopback(void **state)
{
	assert_int_equal(internalip_held("127.0.0.1"), 1);
	assert_int_equal(internalip_held("192.0.2.201"), 0); /* TEST-NET-1: on no interface */
	assert_int_equal(internalip_held("2001:db8::4711"), 0);
	assert_int_equal(internalip_held("not-an-ip"), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(addresses_parsed), cmocka_unit_test(restored), cmocka_unit_test(not_held_or_unknown),
		cmocka_unit_test(failures),	    cmocka_unit_test(off),	cmocka_unit_test(inet6_lines),
		cmocka_unit_test(held_on_loopback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
