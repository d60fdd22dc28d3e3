/* libFuzzer target for lib/kube/kubelease.c: the input is the API server's answer
 * to a Lease request (agent/lease.c). Never a crash or a leak; what the
 * parser keeps respects its ceilings; and a body the agent builds from what
 * it parsed parses back to the same holder and owner. The renewTime goes
 * through the serial rollout verdict (kube_microtime_parse()): a time it
 * accepts is a valid one, and the verdict is one of the four. The input is
 * also the base of an update (kube_lease_update_body(),
 * kube_serial_lease_update_body()): what comes out parses as a Lease with
 * the same resourceVersion and the spec the agent set. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube.h"
#include "kubelease.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* parsed: the input itself parses as a Lease (else what comes out need
 * not: a malformed metadata.name is carried over as it is). */
static void update(const uint8_t *data, size_t size, bool parsed)
{
	char *b = NULL;
	struct kube_lease back;
	if (kube_lease_update_body((const char *)data, size, "gardener-node-agent-n", "n", "uid-1",
				   "2026-01-01T00:00:00.000000Z", &b, NULL) == 0) {
		if (!b)
			abort();
		if (!parsed) {
			free(b);
			b = NULL;
		} else if (kube_lease_parse(b, strlen(b), &back, NULL) < 0 || !back.resource_version ||
		    !back.holder || strcmp(back.holder, "gardener-node-agent-n") != 0 || !back.owner_uid ||
		    strcmp(back.owner_uid, "uid-1") != 0)
			abort();
		else
			kube_lease_done(&back);
	} else if (b)
		abort();
	free(b);
	b = NULL;
	if (kube_serial_lease_update_body((const char *)data, size, "node-1", "2026-01-01T00:00:00.000000Z",
					  "2026-01-01T00:00:00.000000Z", &b, NULL) == 0) {
		if (!b)
			abort();
		if (parsed) {
			if (kube_lease_parse(b, strlen(b), &back, NULL) < 0 || !back.holder ||
			    strcmp(back.holder, "node-1") != 0)
				abort();
			kube_lease_done(&back);
		}
	}
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_lease l;
	int parsed = kube_lease_parse((const char *)data, size, &l, NULL);
	update(data, size, parsed == 0);
	if (parsed < 0)
		return 0;
	if ((l.name && strlen(l.name) > KUBE_NAME_MAX) || (l.holder && strlen(l.holder) > KUBE_NAME_MAX) ||
	    (l.resource_version && strlen(l.resource_version) > KUBE_RV_MAX) ||
	    (l.owner_uid && strlen(l.owner_uid) > KUBE_UID_MAX))
		abort();
	if (l.holder && l.owner_uid && l.resource_version) {
		char *body = kube_lease_body(true, l.holder, "node", l.owner_uid, NULL, "2026-01-01T00:00:00.000000Z");
		struct kube_lease back;
		if (!body || kube_lease_parse(body, strlen(body), &back, NULL) < 0)
			abort();
		if (!back.holder || strcmp(back.holder, l.holder) != 0 || !back.owner_uid ||
		    strcmp(back.owner_uid, l.owner_uid) != 0 || !back.has_duration ||
		    back.duration_s != KUBE_LEASE_DURATION_S)
			abort();
		kube_lease_done(&back);
		free(body);
	}
	struct timespec now = { .tv_sec = 1795658462 }, t;
	if (l.renew_time && kube_microtime_parse(l.renew_time, &t) == 0 && (t.tv_nsec < 0 || t.tv_nsec >= 1000000000L))
		abort();
	uint64_t left;
	int v = kube_serial_judge(&l, "node-1", &now, &left);
	if (v != -EINVAL && v != KUBE_SERIAL_FREE && v != KUBE_SERIAL_MINE && v != KUBE_SERIAL_EXPIRED &&
	    v != KUBE_SERIAL_TAKEN)
		abort();
	if (v != KUBE_SERIAL_TAKEN && left != 0)
		abort();
	kube_lease_done(&l);
	return 0;
}
