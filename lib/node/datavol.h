/* The kubelet data volume: which disk gardener-node-agent's bootstrap would
 * format for /var/lib/kubelet, decided from a description of the disks.
 *
 * Gardener (gardener/gardener pkg/nodeagent/bootstrap/kubelet_data_volume.go
 * and templates/scripts/format-kubelet-data-volume.tpl.sh): when no device
 * has the label KUBEDEV yet, the first line of
 * `lsblk -dbsnP -o NAME,PARTTYPE,FSTYPE,SIZE,PATH,TYPE` with TYPE "disk",
 * PARTTYPE "", FSTYPE "" and SIZE equal to kubeletDataVolumeSize (bytes)
 * whose partitions are not mounted is formatted with `mkfs.ext4 -L KUBEDEV
 * -O quota -E lazy_itable_init=0,lazy_journal_init=0,quotatype=usrquota:
 * grpquota:prjquota`. The script's mount check greps lines of TYPE "part"
 * from `lsblk -d`, which never lists partitions, so it never skips; and a
 * whole disk's PARTTYPE is always "", so a disk with a partition table but
 * no file system on the disk itself qualifies. datavol_pick() keeps
 * Gardener's rule (type, exact size, first in kernel name order) and
 * refuses, in addition, a disk with a partition table, any signature the
 * low-level probe (`blkid -p`) reports, partitions, holders (device mapper,
 * md), a mount or swap of the disk or one of its partitions, a read-only
 * disk, and a disk whose probe failed.
 *
 * Pure: no I/O, no logging. The parsers take the text of outside programs
 * and files (blkid's export output, /proc/self/mountinfo, /proc/swaps). */
#ifndef NA_DATAVOL_H
#define NA_DATAVOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DATAVOL_LABEL "KUBEDEV"
#define DATAVOL_DISKS_MAX 256
#define DATAVOL_NAME_MAX 32         /* a kernel block device name */
#define DATAVOL_VALUE_MAX 64        /* one blkid value kept */
#define DATAVOL_PROBE_MAX 4096      /* bytes of blkid's output */
#define DATAVOL_DEVS_MAX 65536      /* mount entries collected (a node with many pods has thousands) */

/* What blkid -p -o export printed about a device. */
struct datavol_probe {
	bool found;                     /* exit status 0: some signature */
	char type[DATAVOL_VALUE_MAX];   /* TYPE (a file system, swap, LVM2_member, ...) */
	char pttype[DATAVOL_VALUE_MAX]; /* PTTYPE (gpt, dos, ...) */
	char label[DATAVOL_VALUE_MAX];  /* LABEL */
};

struct datavol_disk {
	char name[DATAVOL_NAME_MAX + 1]; /* "sdb", "nvme1n1", "loop3" */
	unsigned major, minor;
	char type[16];                   /* as lsblk: "disk", "loop", "rom", "dm", "md", ... */
	uint64_t size;                   /* bytes */
	bool ro;
	unsigned n_partitions;
	unsigned n_holders;
	bool in_use;                     /* it or a partition is mounted or used as swap */
	int probe_status;                /* 0 probed; -errno: the probe failed */
	struct datavol_probe probe;
};

enum datavol_verdict {
	DATAVOL_NONE,                    /* no disk qualifies */
	DATAVOL_PICKED,                  /* *ret_index: format this one */
	DATAVOL_LABELLED,                /* *ret_index already has an ext4 file system labelled KUBEDEV */
};

/* Parses blkid's `-o export` output (KEY=value lines; values as blkid
 * escapes them, kept verbatim) into *ret, found set when anything was
 * printed. Returns 0, -EMSGSIZE beyond DATAVOL_PROBE_MAX, -EINVAL for a
 * line that is not KEY=value or a value longer than DATAVOL_VALUE_MAX. */
int datavol_parse_probe(const char *out, size_t len, struct datavol_probe *ret);

/* The type lsblk gives a whole disk from its kernel name and, for SCSI
 * devices, /sys/block/<name>/device/type (scsi_type: -1 unknown): "loop"
 * for loop*, "dm" for dm-*, "md" for md*, "rom" for sr* and SCSI type 5,
 * "disk" for SCSI type 0 and everything else (lsblk's default). Writes
 * into buf (size >= 16). */
const char *datavol_disk_type(const char *name, int scsi_type, char *buf, size_t size);

/* Collects the "major:minor" of the mounted devices from
 * /proc/self/mountinfo text (the third field) into devs (up to max; the
 * count in *ret_n). Returns 0, -EINVAL for a malformed line, -E2BIG when
 * more than max. */
int datavol_parse_mountinfo(const char *data, size_t len, uint64_t *devs, size_t max, size_t *ret_n);

/* The device names (first field, "/dev/" stripped) of /proc/swaps
 * (header line skipped) into names[max][DATAVOL_NAME_MAX + 1]. Returns 0,
 * -EINVAL, -E2BIG. */
int datavol_parse_swaps(const char *data, size_t len, char (*names)[DATAVOL_NAME_MAX + 1], size_t max,
			size_t *ret_n);

/* "major:minor" (decimal, as sysfs' dev files and mountinfo write it; the
 * whole string) into *maj and *min. Returns 0 or -EINVAL. */
int datavol_parse_dev(const char *s, unsigned *maj, unsigned *min);

/* major:minor as one number (for the lists above). */
static inline uint64_t datavol_dev(unsigned major, unsigned minor)
{
	return ((uint64_t)major << 32) | minor;
}

/* Why disk d does not qualify for size (a phrase), or NULL when it does.
 * types: the accepted types, "disk" alone for Gardener's rule. */
const char *datavol_refusal(const struct datavol_disk *d, uint64_t size, const char *const *types);

/* The decision over n disks (sorted by name as /sys/block lists them,
 * which is lsblk's order): DATAVOL_LABELLED for the first disk whose probe
 * says TYPE ext4 and LABEL KUBEDEV, else DATAVOL_PICKED for the first one
 * datavol_refusal() accepts, else DATAVOL_NONE. */
enum datavol_verdict datavol_pick(const struct datavol_disk *disks, size_t n, uint64_t size,
				  const char *const *types, size_t *ret_index);

#endif
