/* The image-file step: content.imageRef files copied out of container
 * images through the node's containerd, as gardener-node-agent's
 * pkg/nodeagent/registry/containerd_extractor.go does (namespace "default"
 * or $CONTAINERD_NAMESPACE there, hosts dir /etc/containerd/certs.d),
 * without mounting anything and without network in the executor:
 *
 *  - the pull never runs in the executor: containerd 1.6's ctr fetches in
 *    its own process, which the executor's filter (AF_UNIX only) and its
 *    unit (PrivateNetwork=yes) forbid. Under systemd it runs in
 *    cloud-config-exec-pull@<escaped reference>.service (units/), started
 *    over the system bus and waited for (images_pull_unit_name()); without
 *    systemd (--no-systemd, tests, runs by hand) in the puller, a process
 *    forked before the executor confines itself (images_puller_start()),
 *    which only accepts an image reference over a socketpair. Both run
 *    `ctr images pull --hosts-dir` with a deadline;
 *  - the executor (confined, AF_UNIX only) reads the image with `ctr images
 *    ls` and `ctr content get`: every blob is checked against its SHA-256
 *    digest, every layer after gunzip against the config's diff_ids, then
 *    filePathInImage is looked up from the top layer down (lib/node/ociimage.h);
 *    layers are streamed (child_run_sink, oci_layer_*), the file going to a
 *    temporary next to its path, so memory stays bounded whatever the
 *    image's size; a config naming another platform than linux/<this
 *    machine's GOARCH> is refused (containerd's unpacker refuses it under
 *    gardener-node-agent);
 *  - the file is written atomically with the OSC's mode only when its bytes
 *    differ; images.json in the state directory records, per path, the
 *    reference, the manifest digest, the SHA-256 of the file written and
 *    its identity (images.c identity_of()), so an unchanged reference whose
 *    file is intact needs neither containerd nor the registry, and one whose
 *    identity is unchanged (and settled, with no writer: images.c) is not
 *    even read. */
#ifndef CCE_IMAGES_H
#define CCE_IMAGES_H

#include <stdbool.h>
#include <sys/types.h>

#include "osc.h"

#define IMAGES_CTR "/usr/bin/ctr"
#define IMAGES_ADDRESS_DEFAULT "/run/containerd/containerd.sock"
#define IMAGES_NAMESPACE "default"
#define IMAGES_STATE_FILE "images.json"
#define IMAGES_PULL_TIMEOUT_MS (300u * 1000) /* containerd's image_pull_progress_timeout */
#define IMAGES_CTR_TIMEOUT_MS (60u * 1000)
/* A layer streamed out of containerd: IMAGES_CTR_TIMEOUT_MS without data,
 * or this in all (the kubelet's 28 MiB layer took more than 60 s to inflate
 * and hash under qemu's TCG; child_run_stream()). */
#define IMAGES_LAYER_TIMEOUT_MS (5u * 60 * 1000)
#define IMAGES_BLOB_MAX (1024u << 20)        /* bytes of one layer, compressed or not (time, disk) */
#define IMAGES_PULL_UNIT_PREFIX "cloud-config-exec-pull@"
#define IMAGES_UNIT_NAME_MAX 255              /* systemd's UNIT_NAME_MAX - 1 */

struct sd_bus;

struct images_ctx {
	const char *address;        /* containerd's socket */
	int puller_fd;              /* -1: no puller */
	struct sd_bus *bus;         /* non-NULL: pull through the pull unit, not the puller */
};

/* The pull unit's name for ref: IMAGES_PULL_UNIT_PREFIX, ref escaped as
 * systemd's unit_name_escape() does (and %I undoes: "/" -> "-", bytes other
 * than [A-Za-z0-9:_.] and a leading "." -> "\xNN"), ".service". Pure.
 * Returns 0, -EINVAL for an unsafe reference or one with a byte outside
 * [A-Za-z0-9._/:@-] (systemd would expand "$VAR" in the unit's ExecStart=
 * after %I), -ENAMETOOLONG when the name
 * would exceed IMAGES_UNIT_NAME_MAX or size. */
int images_pull_unit_name(const char *ref, char *buf, size_t size);

/* Forks the puller (before confine_install()): hosts_dir is the certs.d
 * directory to pass to ctr. Returns 0 and the executor's end of the
 * socketpair in *ret_fd; the puller ends when that end is closed. */
int images_puller_start(const char *address, const char *hosts_dir, int *ret_fd);

struct stat;
struct timespec;

/* Whether an identity taken from st may be trusted at now
 * (CLOCK_REALTIME_COARSE, the clock the kernel stamps files with): the
 * clock has left the tick of st's ctime, so a later write cannot get the
 * same ctime. Whole-second stamps (ctime and mtime without nanoseconds: a
 * file system with 1-second, or FAT's 2-second, granularity) need 2 s.
 * Pure. */
bool images_identity_settled(const struct stat *st, const struct timespec *now);

/* The images step's plan (reads only, hashes a file whose identity is not
 * trusted): the image files it will ask containerd about (no record, another
 * reference, or the file not the one recorded) into *ret_check, and of
 * those the ones it will rewrite for sure (same reference, file missing or
 * not the bytes recorded) into *ret_write (files_strv_add()). Returns 0,
 * -ENOMEM. */
int images_plan(int rootfd, int statefd, const struct osc *new, char ***ret_check, char ***ret_write);

/* Writes every image file of new (see above). Paths written are added to
 * *changed (files_strv_add). Each file that fails is logged and named in
 * *ret_error (free(); "IMAGE for PATH: reason; ..."), the others still go
 * on; returns -errno of the first failure or 0. A path that fails is
 * removed from *changed, so its units restart once the file is written,
 * not for an old binary under a new reference. */
int images_apply(const struct images_ctx *ic, int rootfd, int statefd, const struct osc *new, char ***changed,
		 char **ret_error);

#endif
