/* Unit tests for lib/node/datavol.c: which disk gets the kubelet data volume
 * (gardener/gardener pkg/nodeagent/bootstrap/templates/scripts/
 * format-kubelet-data-volume.tpl.sh's rule, plus never a disk with a
 * partition table, a signature, partitions, holders or a mount), and the
 * parsers of blkid's export output, /proc/self/mountinfo and /proc/swaps. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "datavol.h"

#define GiB (1024ull * 1024 * 1024)
static const char *const disk_only[] = { "disk", NULL };

static struct datavol_disk disk(const char *name, uint64_t size)
{
	struct datavol_disk d = { .size = size };
	snprintf(d.name, sizeof(d.name), "%s", name);
	datavol_disk_type(name, 0, d.type, sizeof(d.type));
	return d;
}

static void picks_first_blank_of_the_size(void **state)
{
	(void)state;
	struct datavol_disk d[] = { disk("nvme0n1", 50 * GiB), disk("nvme1n1", 100 * GiB), disk("nvme2n1", 100 * GiB) };
	size_t k = 99;
	assert_int_equal(datavol_pick(d, ELEMENTSOF(d), 100 * GiB, disk_only, &k), DATAVOL_PICKED);
	assert_int_equal(k, 1);
	/* exact bytes, as Gardener's SIZE="<bytes>" match */
	assert_int_equal(datavol_pick(d, ELEMENTSOF(d), 100 * GiB + 512, disk_only, &k), DATAVOL_NONE);
}

static void refusals(void **state)
{
	(void)state;
	uint64_t s = 20 * GiB;
	struct datavol_disk d = disk("sdb", s);
	assert_null(datavol_refusal(&d, s, disk_only));
	struct datavol_disk t = d;
	snprintf(t.probe.pttype, sizeof(t.probe.pttype), "gpt"); /* Gardener would take it: PARTTYPE of a disk is "" */
	t.probe.found = true;
	assert_string_equal(datavol_refusal(&t, s, disk_only), "has a partition table");
	t = d;
	snprintf(t.probe.type, sizeof(t.probe.type), "xfs");
	t.probe.found = true;
	assert_string_equal(datavol_refusal(&t, s, disk_only), "has a file system or another signature");
	t = d;
	t.probe.found = true; /* blkid printed something we do not name (e.g. only UUID) */
	assert_string_equal(datavol_refusal(&t, s, disk_only), "has a signature");
	t = d;
	t.n_partitions = 1;
	assert_string_equal(datavol_refusal(&t, s, disk_only), "has partitions");
	t = d;
	t.n_holders = 1;
	assert_non_null(datavol_refusal(&t, s, disk_only));
	t = d;
	t.in_use = true;
	assert_string_equal(datavol_refusal(&t, s, disk_only), "mounted or used as swap");
	t = d;
	t.ro = true;
	assert_string_equal(datavol_refusal(&t, s, disk_only), "read-only");
	t = d;
	t.probe_status = -EIO;
	assert_string_equal(datavol_refusal(&t, s, disk_only), "could not be probed");
	t = disk("loop0", s);
	assert_string_equal(datavol_refusal(&t, s, disk_only), "not of type disk");
	const char *const with_loop[] = { "disk", "loop", NULL };
	assert_null(datavol_refusal(&t, s, with_loop));
	t = disk("sr0", s);
	assert_non_null(datavol_refusal(&t, s, with_loop));
	t = disk("dm-0", s);
	assert_non_null(datavol_refusal(&t, s, with_loop));
	t = disk("md0", s);
	assert_non_null(datavol_refusal(&t, s, with_loop));
}

static void labelled_wins(void **state)
{
	(void)state;
	uint64_t s = 20 * GiB;
	struct datavol_disk d[] = { disk("sdb", s), disk("sdc", s) };
	d[1].probe.found = true;
	snprintf(d[1].probe.type, sizeof(d[1].probe.type), "ext4");
	snprintf(d[1].probe.label, sizeof(d[1].probe.label), "KUBEDEV");
	size_t k = 99;
	assert_int_equal(datavol_pick(d, 2, s, disk_only, &k), DATAVOL_LABELLED);
	assert_int_equal(k, 1);
	/* a KUBEDEV label on something else is not the volume */
	snprintf(d[1].probe.type, sizeof(d[1].probe.type), "xfs");
	assert_int_equal(datavol_pick(d, 2, s, disk_only, &k), DATAVOL_PICKED);
	assert_int_equal(k, 0);
}

static void parse_probe(void **state)
{
	(void)state;
	struct datavol_probe p;
	static const char out[] = "DEVNAME=/dev/sdb\nLABEL=KUBEDEV\nUUID=1-2\nBLOCK_SIZE=4096\nTYPE=ext4\n";
	assert_int_equal(datavol_parse_probe(out, strlen(out), &p), 0);
	assert_true(p.found);
	assert_string_equal(p.type, "ext4");
	assert_string_equal(p.label, "KUBEDEV");
	assert_string_equal(p.pttype, "");
	static const char pt[] = "DEVNAME=/dev/sdc\nPTUUID=abc\nPTTYPE=gpt\n";
	assert_int_equal(datavol_parse_probe(pt, strlen(pt), &p), 0);
	assert_string_equal(p.pttype, "gpt");
	assert_int_equal(datavol_parse_probe("", 0, &p), 0);
	assert_false(p.found);
	assert_int_equal(datavol_parse_probe("garbage\n", 8, &p), -EINVAL);
	assert_int_equal(datavol_parse_probe("lower=x\n", 8, &p), -EINVAL);
	assert_int_equal(datavol_parse_probe("=x\n", 3, &p), -EINVAL);
	char big[200];
	memset(big, 'a', sizeof(big));
	memcpy(big, "TYPE=", 5);
	assert_int_equal(datavol_parse_probe(big, sizeof(big), &p), -EINVAL);
}

static void parse_mountinfo(void **state)
{
	(void)state;
	static const char mi[] =
		"22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
		"30 22 0:26 / /sys rw shared:7 - sysfs sysfs rw\n"
		"99 22 8:16 / /var/lib/kubelet rw - ext4 /dev/sdb rw\n";
	uint64_t devs[8];
	size_t n = 0;
	assert_int_equal(datavol_parse_mountinfo(mi, strlen(mi), devs, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_true(devs[0] == datavol_dev(259, 2));
	assert_true(devs[2] == datavol_dev(8, 16));
	assert_int_equal(datavol_parse_mountinfo(mi, strlen(mi), devs, 2, &n), -E2BIG);
	assert_int_equal(datavol_parse_mountinfo("1 2 x:y / /\n", 12, devs, 8, &n), -EINVAL);
	assert_int_equal(datavol_parse_mountinfo("1 2\n", 4, devs, 8, &n), -EINVAL);
	unsigned maj = 0, min = 0;
	assert_int_equal(datavol_parse_dev("259:12", &maj, &min), 0);
	assert_int_equal(maj, 259);
	assert_int_equal(min, 12);
	assert_int_equal(datavol_parse_dev("259:", &maj, &min), -EINVAL);
	assert_int_equal(datavol_parse_dev(":1", &maj, &min), -EINVAL);
	assert_int_equal(datavol_parse_dev("1:2:3", &maj, &min), -EINVAL);
	assert_int_equal(datavol_parse_dev("99999999999:1", &maj, &min), -EINVAL);
}

static void parse_swaps(void **state)
{
	(void)state;
	static const char sw[] = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
				 "/dev/sdc                                partition\t8388604\t\t0\t\t-2\n"
				 "/swapfile                               file\t\t1048572\t\t0\t\t-3\n";
	char names[4][DATAVOL_NAME_MAX + 1];
	size_t n = 0;
	assert_int_equal(datavol_parse_swaps(sw, strlen(sw), names, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], "sdc");
	assert_string_equal(names[1], "/swapfile");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(picks_first_blank_of_the_size), cmocka_unit_test(refusals),
		cmocka_unit_test(labelled_wins),                 cmocka_unit_test(parse_probe),
		cmocka_unit_test(parse_mountinfo),               cmocka_unit_test(parse_swaps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
