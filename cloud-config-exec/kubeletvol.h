/* The kubelet data volume, as gardener-node-agent's bootstrap formats it
 * (gardener/gardener pkg/nodeagent/bootstrap/kubelet_data_volume.go,
 * templates/scripts/format-kubelet-data-volume.tpl.sh): with
 * bootstrap.kubeletDataVolumeSize in gardener-node-agent's configuration
 * (the stock user data's config-<version>.yaml), the unformatted disk of
 * exactly that size (lib/node/datavol.h: Gardener's rule, plus never a disk with
 * a partition table, a signature, partitions, holders or a mount) gets an
 * ext4 file system labelled KUBEDEV, /var/lib/kubelet's content is copied
 * onto it and it is mounted there; the OSC's var-lib-kubelet.mount
 * (What=/dev/disk/by-label/KUBEDEV) takes it over.
 *
 * The disks are read natively from /sys/block, /proc/self/mountinfo and
 * /proc/swaps; their content is probed by exec'ing blkid -p (libblkid's
 * low-level probe, no cache) and formatted by exec'ing mkfs.ext4, then
 * mount, cp -a and umount as Gardener's script does, each by absolute path
 * with a minimal environment, stdin /dev/null (mke2fs then refuses a
 * device where it finds a signature instead of asking), closed fds and a
 * deadline. Why exec and not libblkid: the executor links no libblkid, and
 * blkid -p is the same probe mke2fs itself runs; lsblk is not needed (its
 * columns come from sysfs, which is read directly).
 *
 * It needs the block devices, CAP_SYS_ADMIN for the mounts and mounts
 * visible to the host, none of which cloud-config-exec.service has: under
 * systemd the apply starts cloud-config-exec-kubelet-data-volume.service
 * (the verb kubelet-data-volume) and waits for it, once, before the files
 * and units; a success is recorded in the state directory. */
#ifndef CCE_KUBELETVOL_H
#define CCE_KUBELETVOL_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

#define DATAVOL_UNIT "cloud-config-exec-kubelet-data-volume.service"
#define DATAVOL_STATE_FILE "kubelet-data-volume.done"
#define DATAVOL_BLKID "/usr/sbin/blkid"
#define DATAVOL_MKFS "/usr/sbin/mkfs.ext4"
#define DATAVOL_MOUNT "/usr/bin/mount"
#define DATAVOL_UMOUNT "/usr/bin/umount"
#define DATAVOL_CP "/usr/bin/cp"
#define DATAVOL_MKFS_TIMEOUT_MS (15u * 60 * 1000) /* lazy_itable_init=0 writes every inode table */
#define DATAVOL_TIMEOUT_MS (60u * 1000)
#define DATAVOL_MOUNT_OPTIONS "defaults,prjquota,errors=remount-ro"

struct sd_bus;

/* bootstrap.kubeletDataVolumeSize from gardener-node-agent's newest
 * config-<version>.yaml in gna_dir below rootfd: 0 and *ret_size (0: not
 * configured, or no configuration at all); -errno when it does not parse
 * (logged). */
int datavol_configured_size(int rootfd, const char *gna_dir, uint64_t *ret_size);

/* The verb: decides and formats as described above, below root (the mount
 * point and the copied directory are <root>/var/lib/kubelet; disks are the
 * machine's). allow_loop also accepts loop devices (tests). Returns 0 done
 * or nothing to do (logged), -ENODEV when no disk qualifies (each disk of
 * that size logged with why not), -errno (logged). */
int datavol_format(const char *root, int rootfd, const char *gna_dir, bool allow_loop);

/* The apply's step: nothing when no size is configured or the state
 * directory (statefd) records a success; with a bus starts DATAVOL_UNIT and
 * waits for it, then records the success; without one logs that it is
 * skipped (run the verb by hand). A configuration that does not parse is
 * logged and means no data volume (node-agent reports it). Returns 1
 * formatted now, 0 nothing to do, -errno (logged; why in *ret_error,
 * free()). */
int datavol_step(int rootfd, int statefd, const char *gna_dir, struct sd_bus *bus, char **ret_error);

#endif
