/* The kubelet data volume; see kubeletvol.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "child.h"
#include "cleanup.h"
#include "kubeletvol.h"
#include "fsx.h"
#include "gnaconfig.h"
#include "label.h"
#include "log.h"
#include "systemd.h"
#include "datavol.h"

static char e_path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin", e_lang[] = "LANG=C", e_lc[] = "LC_ALL=C";
static char *const child_env[] = { e_path, e_lang, e_lc, NULL };

int datavol_configured_size(int rootfd, const char *gna_dir, uint64_t *ret_size)
{
	*ret_size = 0;
	_cleanup_close_ int dfd = fsx_open_dir_at(rootfd, gna_dir, FSX_FOLLOW_ROOT_SYMLINKS, 0);
	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return log_error_errno(dfd, "Cannot open %s", gna_dir);
	int dup_fd = dup(dfd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return log_error_errno(negerrno(), "Cannot list %s", gna_dir);
	}
	char *names[64];
	size_t n = 0;
	struct dirent *de;
	while (n < ELEMENTSOF(names) && (de = readdir(d)))
		if (strncmp(de->d_name, "config", 6) == 0 && (names[n] = strdup(de->d_name)))
			n++;
	closedir(d);
	int k = gna_config_pick((const char *const *)names, n);
	int r = 0;
	if (k >= 0) {
		_cleanup_free_ char *data = NULL;
		size_t len;
		char err[GNACONFIG_ERROR_MAX] = "";
		struct gnaconfig g = { 0 };
		r = fsx_read_at(dfd, names[k], GNACONFIG_INPUT_MAX, &data, &len);
		if (r < 0)
			log_error_errno(r, "Cannot read %s/%s", gna_dir, names[k]);
		else if ((r = gnaconfig_parse(data, len, &g, err, sizeof(err))) < 0)
			log_error_errno(r, "%s/%s: %s", gna_dir, names[k], err);
		else {
			*ret_size = g.kubelet_data_volume_size;
			gnaconfig_done(&g);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	return r;
}

static int read_sys(int dfd, const char *name, char *buf, size_t size)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fsx_read_at(dfd, name, 4096, &data, &len);
	if (r < 0)
		return r;
	while (len && (data[len - 1] == '\n' || data[len - 1] == ' '))
		len--;
	if (len >= size)
		return -EMSGSIZE;
	memcpy(buf, data, len);
	buf[len] = 0;
	return 0;
}

static int read_u64(int dfd, const char *name, uint64_t *ret)
{
	char buf[32];
	int r = read_sys(dfd, name, buf, sizeof(buf));
	if (r < 0)
		return r;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 10);
	if (errno || end == buf || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int read_majmin(int dfd, const char *name, unsigned *maj, unsigned *min)
{
	char buf[32];
	int r = read_sys(dfd, name, buf, sizeof(buf));
	if (r < 0)
		return r;
	return datavol_parse_dev(buf, maj, min);
}

struct usage {
	uint64_t devs[DATAVOL_DEVS_MAX];
	size_t n_devs;
	char swaps[64][DATAVOL_NAME_MAX + 1];
	size_t n_swaps;
};

struct scan {
	struct usage usage;
	struct datavol_disk disks[DATAVOL_DISKS_MAX];
};

static bool used(const struct usage *u, unsigned maj, unsigned min, const char *name)
{
	for (size_t i = 0; i < u->n_devs; i++)
		if (u->devs[i] == datavol_dev(maj, min))
			return true;
	for (size_t i = 0; i < u->n_swaps; i++)
		if (strcmp(u->swaps[i], name) == 0)
			return true;
	return false;
}

/* A file of /proc (absolute, symlinks such as /proc/self followed). */
static int read_proc(const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return negerrno();
	return fsx_read_fd(fd, max, ret, ret_len);
}

static int load_usage(struct usage *u)
{
	_cleanup_free_ char *mi = NULL, *sw = NULL;
	size_t len;
	int r = read_proc("/proc/self/mountinfo", 4u << 20, &mi, &len);
	if (r < 0)
		return log_error_errno(r, "Cannot read /proc/self/mountinfo");
	if ((r = datavol_parse_mountinfo(mi, len, u->devs, ELEMENTSOF(u->devs), &u->n_devs)) < 0)
		return log_error_errno(r, "Cannot parse /proc/self/mountinfo");
	r = read_proc("/proc/swaps", 1u << 20, &sw, &len);
	if (r < 0 && r != -ENOENT)
		return log_error_errno(r, "Cannot read /proc/swaps");
	if (r >= 0 && (r = datavol_parse_swaps(sw, len, u->swaps, ELEMENTSOF(u->swaps), &u->n_swaps)) < 0)
		return log_error_errno(r, "Cannot parse /proc/swaps");
	return 0;
}

/* One disk from /sys/block/<name> (partitions and holders counted, their use
 * checked too). */
static int describe(int blockfd, const char *name, const struct usage *u, struct datavol_disk *d)
{
	_cleanup_close_ int dfd = openat(blockfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return negerrno();
	*d = (struct datavol_disk){ 0 };
	snprintf(d->name, sizeof(d->name), "%s", name);
	uint64_t sectors = 0, ro = 0;
	int r;
	if ((r = read_majmin(dfd, "dev", &d->major, &d->minor)) < 0 || (r = read_u64(dfd, "size", &sectors)) < 0)
		return r;
	d->size = sectors * 512; /* sysfs counts 512-byte sectors whatever the block size */
	if (read_u64(dfd, "ro", &ro) >= 0)
		d->ro = ro != 0;
	char st[16];
	int scsi = -1;
	if (read_sys(dfd, "device/type", st, sizeof(st)) >= 0) {
		char *end;
		long t = strtol(st, &end, 10);
		if (end != st && !*end && t >= 0 && t < 256)
			scsi = (int)t;
	}
	datavol_disk_type(name, scsi, d->type, sizeof(d->type));
	d->in_use = used(u, d->major, d->minor, name);

	int dup_fd = dup(dfd);
	DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!dir) {
		if (dup_fd >= 0)
			close(dup_fd);
		return -ENOMEM;
	}
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, name, strlen(name)) != 0)
			continue;
		_cleanup_close_ int pfd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0 || faccessat(pfd, "partition", F_OK, 0) < 0)
			continue;
		d->n_partitions++;
		unsigned pmaj, pmin;
		if (read_majmin(pfd, "dev", &pmaj, &pmin) >= 0 && used(u, pmaj, pmin, de->d_name))
			d->in_use = true;
	}
	closedir(dir);
	_cleanup_close_ int hfd = openat(dfd, "holders", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *h = hfd >= 0 ? fdopendir(TAKE_FD(hfd)) : NULL;
	while (h && (de = readdir(h)))
		if (de->d_name[0] != '.')
			d->n_holders++;
	if (h)
		closedir(h);
	return 0;
}

static void probe(struct datavol_disk *d)
{
	_cleanup_free_ char *dev = NULL, *out = NULL;
	size_t len = 0;
	int status = 0;
	if (asprintf(&dev, "/dev/%s", d->name) < 0) {
		d->probe_status = -ENOMEM;
		return;
	}
	char a0[] = "blkid", a1[] = "-p", a2[] = "-o", a3[] = "export";
	char *argv[] = { a0, a1, a2, a3, dev, NULL };
	int r = child_run(DATAVOL_BLKID, argv, child_env, DATAVOL_TIMEOUT_MS, DATAVOL_PROBE_MAX, &out, &len, &status);
	if (r < 0) {
		log_error_errno(r, "%s -p %s did not run", DATAVOL_BLKID, dev);
		d->probe_status = r;
		return;
	}
	/* 2: nothing identified; 0: something; anything else (8: ambivalent,
	 * 4: usage) counts as a failed probe, so the disk is not touched. */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
		d->probe_status = 0;
		return;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		log_warning("%s -p %s: %s %d", DATAVOL_BLKID, dev, WIFEXITED(status) ? "exit status" : "signal",
			    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		d->probe_status = -EIO;
		return;
	}
	if ((r = datavol_parse_probe(out, len, &d->probe)) < 0) {
		log_warning("%s -p %s printed what is not KEY=value lines", DATAVOL_BLKID, dev);
		d->probe_status = r;
		return;
	}
	d->probe.found = true;
	d->probe_status = 0;
}

static int run(const char *path, char *const argv[], unsigned timeout_ms)
{
	int status = 0;
	int r = child_run(path, argv, child_env, timeout_ms, 64u << 10, NULL, NULL, &status);
	if (r < 0)
		return log_error_errno(r, "%s did not %s", path, r == -ETIMEDOUT ? "finish in time" : "run");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return log_error_errno(-EIO, "%s failed (%s %d)", path, WIFEXITED(status) ? "exit status" : "signal",
				       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return 0;
}

static int cmp_disk(const void *a, const void *b)
{
	return strcmp(((const struct datavol_disk *)a)->name, ((const struct datavol_disk *)b)->name);
}

/* mkfs labels nothing: the new file system's lost+found gets the type it
 * has at its final path (label.h); its root gets /var/lib/kubelet's from
 * cp -a, which keeps the copied directory's. Nothing stays open (the
 * temporary mount is unmounted next). */
static int label_lost_found(const char *mnt)
{
	_cleanup_close_ int dfd = open(mnt, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int fd = dfd < 0 ? -1 : openat(dfd, "lost+found", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? 0 : label_fd_as(fd, "/var/lib/kubelet/lost+found", S_IFDIR);
}

/* Gardener's script after mkfs: mount at a temporary directory, copy
 * /var/lib/kubelet onto it, unmount, mount at /var/lib/kubelet. */
static int move_kubelet_dir(const char *root, int rootfd, const char *dev)
{
	bool scratch = strcmp(root, "/") != 0;
	_cleanup_free_ char *kdir = NULL, *tmp = NULL, *src = NULL;
	if (asprintf(&kdir, "%s/var/lib/kubelet", scratch ? root : "") < 0 ||
	    asprintf(&tmp, "%s/run/cloud-config-exec-kubedev.XXXXXX", scratch ? root : "") < 0 ||
	    asprintf(&src, "%s/.", kdir) < 0)
		return log_error_errno(-ENOMEM, "Out of memory");
	_cleanup_close_ int kfd = fsx_open_dir_at(rootfd, "/var/lib/kubelet", FSX_MKDIR | FSX_FOLLOW_ROOT_SYMLINKS, 0755);
	_cleanup_close_ int rfd = fsx_open_dir_at(rootfd, "/run", FSX_MKDIR | FSX_FOLLOW_ROOT_SYMLINKS, 0755);
	if (kfd < 0 || rfd < 0)
		return log_error_errno(kfd < 0 ? kfd : rfd, "Cannot create /var/lib/kubelet or /run");
	if (!mkdtemp(tmp))
		return log_error_errno(negerrno(), "Cannot create %s", tmp);
	char m0[] = "mount", m1[] = "-t", m2[] = "ext4", u0[] = "umount", c0[] = "cp", c1[] = "-a", o[] = "-o";
	char opts[] = DATAVOL_MOUNT_OPTIONS;
	char *mnt_tmp[] = { m0, m1, m2, (char *)(uintptr_t)dev, tmp, NULL };
	char *cp[] = { c0, c1, src, tmp, NULL };
	char *umnt[] = { u0, tmp, NULL };
	char *mnt[] = { m0, m1, m2, o, opts, (char *)(uintptr_t)dev, kdir, NULL };
	int r = run(DATAVOL_MOUNT, mnt_tmp, DATAVOL_TIMEOUT_MS);
	if (r >= 0) {
		int c = label_lost_found(tmp);
		if (c >= 0)
			c = run(DATAVOL_CP, cp, DATAVOL_MKFS_TIMEOUT_MS);
		r = run(DATAVOL_UMOUNT, umnt, DATAVOL_TIMEOUT_MS);
		if (c < 0)
			r = c;
	}
	if (rmdir(tmp) < 0)
		log_warning_errno(negerrno(), "Cannot remove %s", tmp);
	if (r < 0)
		return r;
	log_notice("Copied /var/lib/kubelet onto %s", dev);
	if ((r = run(DATAVOL_MOUNT, mnt, DATAVOL_TIMEOUT_MS)) < 0)
		return r;
	log_notice("Mounted %s on /var/lib/kubelet (%s)", dev, DATAVOL_MOUNT_OPTIONS);
	return 0;
}

int datavol_format(const char *root, int rootfd, const char *gna_dir, bool allow_loop)
{
	uint64_t size = 0;
	int r = datavol_configured_size(rootfd, gna_dir, &size);
	if (r < 0)
		return r;
	if (size == 0) {
		log_info("No bootstrap.kubeletDataVolumeSize in gardener-node-agent's configuration: no data volume");
		return 0;
	}
	if (access("/dev/disk/by-label/" DATAVOL_LABEL, F_OK) == 0) {
		log_info("A device labelled " DATAVOL_LABEL " exists: the kubelet data volume is formatted");
		return 0;
	}
	_cleanup_free_ struct scan *sc = calloc(1, sizeof(*sc));
	if (!sc)
		return log_error_errno(-ENOMEM, "Out of memory");
	struct usage *u = &sc->usage;
	struct datavol_disk *disks = sc->disks;
	if ((r = load_usage(u)) < 0)
		return r;
	_cleanup_close_ int blockfd = open("/sys/block", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int dup_fd = blockfd >= 0 ? dup(blockfd) : -1;
	DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!dir) {
		if (dup_fd >= 0)
			close(dup_fd);
		return log_error_errno(negerrno(), "Cannot list /sys/block");
	}
	size_t n = 0;
	struct dirent *de;
	while (n < DATAVOL_DISKS_MAX && (de = readdir(dir))) {
		if (de->d_name[0] == '.' || strlen(de->d_name) > DATAVOL_NAME_MAX)
			continue;
		if (describe(blockfd, de->d_name, u, &disks[n]) >= 0)
			n++;
	}
	closedir(dir);
	qsort(disks, n, sizeof(*disks), cmp_disk);
	const char *disk_only[] = { "disk", NULL }, *with_loop[] = { "disk", "loop", NULL };
	const char *const *types = allow_loop ? with_loop : disk_only;
	/* Only disks of the size are probed (the label check included: a
	 * volume formatted earlier has that size). */
	for (size_t i = 0; i < n; i++) {
		disks[i].probe_status = -ENOTCONN; /* not probed: never picked */
		const char *why = datavol_refusal(&disks[i], size, types);
		if (why && strcmp(why, "could not be probed") != 0)
			continue;
		probe(&disks[i]);
	}
	size_t k = 0;
	enum datavol_verdict v = datavol_pick(disks, n, size, types, &k);
	for (size_t i = 0; i < n; i++) {
		const char *why = datavol_refusal(&disks[i], size, types);
		if (disks[i].size == size && why)
			log_notice("/dev/%s (%llu bytes, %s): not used for the kubelet data volume: %s%s%s%s", disks[i].name,
				   (unsigned long long)disks[i].size, disks[i].type, why,
				   disks[i].probe.pttype[0] ? " (PTTYPE " : "", disks[i].probe.pttype,
				   disks[i].probe.pttype[0] ? ")" : "");
	}
	if (v == DATAVOL_LABELLED) {
		log_info("/dev/%s already has the ext4 file system " DATAVOL_LABEL, disks[k].name);
		return 0;
	}
	if (v == DATAVOL_NONE)
		return log_error_errno(-ENODEV, "No unformatted disk of %llu bytes for the kubelet data volume",
				       (unsigned long long)size);
	_cleanup_free_ char *dev = NULL;
	if (asprintf(&dev, "/dev/%s", disks[k].name) < 0)
		return log_error_errno(-ENOMEM, "Out of memory");
	log_notice("Formatting %s (%llu bytes, no partition table, no signature, unused) as ext4 " DATAVOL_LABEL
		   " for /var/lib/kubelet", dev, (unsigned long long)size);
	char a0[] = "mkfs.ext4", a1[] = "-L", a2[] = DATAVOL_LABEL, a3[] = "-O", a4[] = "quota", a5[] = "-E",
	     a6[] = "lazy_itable_init=0,lazy_journal_init=0,quotatype=usrquota:grpquota:prjquota";
	char *argv[] = { a0, a1, a2, a3, a4, a5, a6, dev, NULL };
	if ((r = run(DATAVOL_MKFS, argv, DATAVOL_MKFS_TIMEOUT_MS)) < 0)
		return r;
	log_notice("Formatted %s as ext4 " DATAVOL_LABEL, dev);
	return move_kubelet_dir(root, rootfd, dev);
}

int datavol_step(int rootfd, int statefd, const char *gna_dir, struct sd_bus *bus, char **ret_error)
{
	uint64_t size = 0;
	int r = datavol_configured_size(rootfd, gna_dir, &size);
	if (r < 0) {
		/* node-agent reports its configuration; the apply goes on. */
		log_warning("No kubelet data volume: gardener-node-agent's configuration is unusable here");
		return 0;
	}
	if (size == 0 || faccessat(statefd, DATAVOL_STATE_FILE, F_OK, 0) == 0)
		return 0;
	if (!bus) {
		log_notice("bootstrap.kubeletDataVolumeSize is %llu, but without systemd the data volume is not formatted "
			   "here (run `cloud-config-exec kubelet-data-volume` by hand)", (unsigned long long)size);
		return 0;
	}
	struct systemd_job job = { .unit = DATAVOL_UNIT, .verb = SYSTEMD_START };
	r = systemd_run_jobs(bus, &job, 1, DATAVOL_MKFS_TIMEOUT_MS + 60000);
	if (r >= 0 && job.error == 0) {
		systemd_job_done(&job);
		r = fsx_write_atomic_at(statefd, DATAVOL_STATE_FILE, "", 0, 0644, 0, 0, 0);
		if (r < 0)
			log_warning_errno(r, "Cannot record the data volume in %s", DATAVOL_STATE_FILE);
		log_notice("Kubelet data volume of %llu bytes ready (%s)", (unsigned long long)size, DATAVOL_UNIT);
		return 1;
	}
	if (asprintf(ret_error, "%s: %s (see its journal)", DATAVOL_UNIT,
		     job.result ? job.result : job.message ? job.message : strerror(-(job.error ? job.error : -r))) < 0)
		*ret_error = NULL;
	r = job.error ? job.error : (r < 0 ? r : -EIO);
	log_error_errno(r, "The kubelet data volume was not formatted: %s", *ret_error ? *ret_error : "?");
	systemd_job_done(&job);
	return r;
}
