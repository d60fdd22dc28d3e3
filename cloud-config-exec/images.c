/* The image-file step; see images.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "child.h"
#include "cleanup.h"
#include "desired.h"
#include "files.h"
#include "fsx.h"
#include "images.h"
#include "jsonx.h"
#include "log.h"
#include "ociimage.h"
#include "systemd.h"

#define REPLY_MAX 512

/* The platform whose manifest an index resolves to: this machine's, in
 * GOARCH spelling, as containerd's platforms.DefaultSpec() picks it. */
#if defined(__x86_64__)
#define IMAGES_ARCH "amd64"
#elif defined(__aarch64__)
#define IMAGES_ARCH "arm64"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define IMAGES_ARCH "ppc64le"
#elif defined(__s390x__)
#define IMAGES_ARCH "s390x"
#else
#error "unknown GOARCH for this architecture"
#endif

static char e_path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin", e_lang[] = "LANG=C", e_lc[] = "LC_ALL=C";
static char *const child_env[] = { e_path, e_lang, e_lc, NULL };

/* An image reference we hand to ctr: printable ASCII without space, quote
 * or backslash, not an option. osc_parse() checked most of it already. */
static bool ref_is_safe(const char *ref, size_t len)
{
	if (len == 0 || len > OSC_IMAGE_MAX || ref[0] == '-')
		return false;
	for (size_t i = 0; i < len; i++)
		if (ref[i] <= 0x20 || ref[i] >= 0x7f || ref[i] == '"' || ref[i] == '\\')
			return false;
	return true;
}

/* ---- the puller (unconfined, forked before the filter) -------------------- */

static _Noreturn void puller_main(int fd, const char *address, const char *hosts_dir)
{
	char ref[OSC_IMAGE_MAX + 1];
	for (;;) {
		ssize_t n = recv(fd, ref, sizeof(ref) - 1, 0);
		if (n <= 0)
			_exit(0);
		char reply[REPLY_MAX];
		if (!ref_is_safe(ref, (size_t)n)) {
			snprintf(reply, sizeof(reply), "1refused: not an image reference");
			(void)send(fd, reply, strlen(reply), MSG_NOSIGNAL);
			continue;
		}
		ref[n] = '\0';
		char a0[] = "ctr", a1[] = "--address", a3[] = "--namespace", a4[] = IMAGES_NAMESPACE, a5[] = "images",
		     a6[] = "pull", a7[] = "--hosts-dir";
		char *argv[] = { a0, a1, (char *)(uintptr_t)address, a3, a4, a5, a6, a7, (char *)(uintptr_t)hosts_dir,
				 ref, NULL };
		int status = 0;
		int r = child_run(IMAGES_CTR, argv, child_env, IMAGES_PULL_TIMEOUT_MS, 4u << 20, NULL, NULL, &status);
		if (r == -EFBIG)
			r = 0; /* progress output beyond the cap; the exit status decides */
		if (r < 0)
			snprintf(reply, sizeof(reply), "1%s %s", r == -ETIMEDOUT ? "timed out:" : "cannot run:",
				 strerror(-r));
		else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			snprintf(reply, sizeof(reply), "1ctr images pull failed (%s %d; see the journal)",
				 WIFEXITED(status) ? "exit status" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		else
			snprintf(reply, sizeof(reply), "0");
		(void)send(fd, reply, strlen(reply), MSG_NOSIGNAL);
	}
}

int images_puller_start(const char *address, const char *hosts_dir, int *ret_fd)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return log_error_errno(negerrno(), "Cannot create the puller's socket pair");
	pid_t pid = fork();
	if (pid < 0) {
		int r = negerrno();
		close(sv[0]);
		close(sv[1]);
		return log_error_errno(r, "Cannot fork the puller");
	}
	if (pid == 0) {
		/* Nothing of the executor but the socket and stdio. */
		if (dup2(sv[1], 3) < 0)
			_exit(1);
		syscall(SYS_close_range, 4U, ~0U, 0U);
		puller_main(3, address, hosts_dir);
	}
	close(sv[1]);
	*ret_fd = sv[0];
	return 0;
}

int images_pull_unit_name(const char *ref, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t rl = strlen(ref), n = 0, pl = strlen(IMAGES_PULL_UNIT_PREFIX);
	if (!ref_is_safe(ref, rl))
		return -EINVAL;
	/* Only the bytes of the reference grammar (distribution/reference:
	 * names, tags, digests): systemd expands "$VAR" in ExecStart= after
	 * %I is substituted, so "$" (and anything else) must not get there. */
	if (strspn(ref, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@") != rl)
		return -EINVAL;
	if (size <= pl)
		return -ENAMETOOLONG;
	memcpy(buf, IMAGES_PULL_UNIT_PREFIX, pl);
	n = pl;
	for (size_t i = 0; i < rl; i++) {
		unsigned char ch = (unsigned char)ref[i];
		char esc[4];
		size_t el = 1;
		if (ch == '/')
			esc[0] = '-';
		else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == ':' ||
			 ch == '_' || (ch == '.' && i > 0))
			esc[0] = (char)ch;
		else {
			esc[0] = '\\';
			esc[1] = 'x';
			esc[2] = hex[ch >> 4];
			esc[3] = hex[ch & 15];
			el = 4;
		}
		if (n + el >= size)
			return -ENAMETOOLONG;
		memcpy(buf + n, esc, el);
		n += el;
	}
	static const char suffix[] = ".service";
	if (n + sizeof(suffix) > size || n + sizeof(suffix) - 1 > IMAGES_UNIT_NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(buf + n, suffix, sizeof(suffix));
	return 0;
}

/* Through cloud-config-exec-pull@.service: a StartUnit job waited for a
 * little longer than the unit's own TimeoutStartSec. */
static int pull_unit(const struct images_ctx *ic, const char *ref, char *why, size_t why_size)
{
	char unit[IMAGES_UNIT_NAME_MAX + 1];
	int r = images_pull_unit_name(ref, unit, sizeof(unit));
	if (r < 0) {
		snprintf(why, why_size, "%s", r == -ENAMETOOLONG ? "reference too long for a unit name"
						     : "reference with a byte outside [A-Za-z0-9._/:@-]");
		return r;
	}
	struct systemd_job job = { .unit = unit, .verb = SYSTEMD_START };
	r = systemd_run_jobs(ic->bus, &job, 1, IMAGES_PULL_TIMEOUT_MS + 60000);
	if (r >= 0 && job.error == 0) {
		systemd_job_done(&job);
		return 0;
	}
	if (job.error == -ENOENT)
		snprintf(why, why_size, "pull failed: %s is not installed", unit);
	else if (job.result)
		snprintf(why, why_size, "pull failed: %s: job %.16s (see its journal)", unit, job.result);
	else
		snprintf(why, why_size, "pull failed: %s: %.200s", unit,
			 job.message ? job.message : strerror(-(job.error ? job.error : r)));
	r = job.error ? job.error : (r < 0 ? r : -EIO);
	systemd_job_done(&job);
	/* Not left "failed": one instance per reference would pile up in
	 * systemctl --failed (and node monitoring); the journal keeps ctr's
	 * reason, result.json names the unit, the next run retries. */
	_cleanup_free_ char *rf_error = NULL;
	(void)systemd_reset_failed(ic->bus, unit, &rf_error);
	return r;
}

static int pull(const struct images_ctx *ic, const char *ref, char *why, size_t why_size)
{
	if (ic->bus)
		return pull_unit(ic, ref, why, why_size);
	if (ic->puller_fd < 0) {
		snprintf(why, why_size, "not in containerd and nothing may pull it here");
		return -ENOENT;
	}
	if (send(ic->puller_fd, ref, strlen(ref), MSG_NOSIGNAL) < 0) {
		snprintf(why, why_size, "the puller is gone: %s", strerror(errno));
		return -EPIPE;
	}
	struct pollfd p = { .fd = ic->puller_fd, .events = POLLIN };
	int n = poll(&p, 1, (int)(IMAGES_PULL_TIMEOUT_MS + 10000));
	char reply[REPLY_MAX + 1];
	ssize_t k = n > 0 ? recv(ic->puller_fd, reply, REPLY_MAX, 0) : -1;
	if (k <= 0) {
		snprintf(why, why_size, "no answer from the puller");
		return -ETIMEDOUT;
	}
	reply[k] = '\0';
	if (reply[0] == '0')
		return 0;
	snprintf(why, why_size, "pull failed: %.400s", reply + 1);
	return -EIO;
}

/* ---- reading the image through ctr (AF_UNIX only) ------------------------- */

static int ctr(const struct images_ctx *ic, char *const *args, size_t max, char **out, size_t *len, char *why,
	       size_t why_size)
{
	char a0[] = "ctr", a1[] = "--address", a3[] = "--namespace", a4[] = IMAGES_NAMESPACE;
	char *argv[12] = { a0, a1, (char *)(uintptr_t)ic->address, a3, a4 };
	size_t n = 5;
	for (; *args && n < ELEMENTSOF(argv) - 1; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	int status = 0;
	int r = child_run(IMAGES_CTR, argv, child_env, IMAGES_CTR_TIMEOUT_MS, max, out, len, &status);
	if (r < 0) {
		snprintf(why, why_size, "ctr %s %s: %s", argv[5], argv[6] ? argv[6] : "", strerror(-r));
		return r;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		free(*out);
		*out = NULL;
		snprintf(why, why_size, "ctr %s %s failed (containerd not running?)", argv[5], argv[6] ? argv[6] : "");
		return -EIO;
	}
	return 0;
}

/* The manifest (or index) digest containerd has for ref; -ENOENT if none. */
static int image_digest(const struct images_ctx *ic, const char *ref, char digest[static OCI_DIGEST_LEN + 1],
			char *why, size_t why_size)
{
	_cleanup_free_ char *filter = NULL, *out = NULL;
	if (asprintf(&filter, "name==\"%s\"", ref) < 0)
		return -ENOMEM;
	char a0[] = "images", a1[] = "ls";
	char *args[] = { a0, a1, filter, NULL };
	size_t len = 0;
	int r = ctr(ic, args, 1u << 20, &out, &len, why, why_size);
	if (r < 0)
		return r;
	/* "REF TYPE DIGEST SIZE ..." header, then one line per image. */
	size_t rl = strlen(ref);
	for (char *line = strchr(out, '\n'); line && *++line; line = strchr(line, '\n')) {
		/* first word: the name; skip the second (type); the third: digest */
		if (strncmp(line, ref, rl) != 0 || (line[rl] != ' ' && line[rl] != '\t'))
			continue;
		char *p = line + rl;
		for (int word = 0; word < 2; word++) {
			p += strspn(p, " \t");
			if (word == 0)
				p += strcspn(p, " \t\n");
		}
		char d[OCI_DIGEST_LEN + 1];
		size_t dl = strcspn(p, " \t\n");
		if (dl != OCI_DIGEST_LEN)
			continue;
		memcpy(d, p, dl);
		d[dl] = '\0';
		if (oci_digest_is_valid(d)) {
			memcpy(digest, d, OCI_DIGEST_LEN + 1);
			return 0;
		}
	}
	return -ENOENT;
}

static int blob(const struct images_ctx *ic, const char *digest, size_t max, char **out, size_t *len, char *why,
		size_t why_size)
{
	char a0[] = "content", a1[] = "get";
	char d[OCI_DIGEST_LEN + 1];
	memcpy(d, digest, sizeof(d));
	char *args[] = { a0, a1, d, NULL };
	int r = ctr(ic, args, max, out, len, why, why_size);
	if (r < 0)
		return r;
	if (!oci_digest_matches(digest, *out, *len)) {
		free(*out);
		*out = NULL;
		snprintf(why, why_size, "content of %.19s does not match its digest", digest);
		return -EBADMSG;
	}
	return 0;
}

/* The file being copied out: a temporary next to its target, written as
 * the layer streams by (a later tar entry of the path starts it over), and
 * its SHA-256. */
struct out_file {
	int fd;
	EVP_MD_CTX *md;
	uint64_t len;
	const char *path;           /* the OSC's path, for messages */
	int write_error;            /* the temporary could not be written */
};

static int out_sink(void *userdata, const void *data, size_t len, bool start)
{
	struct out_file *o = userdata;
	if (start) {
		o->len = 0;
		if (ftruncate(o->fd, 0) < 0 || lseek(o->fd, 0, SEEK_SET) < 0)
			return (o->write_error = negerrno());
		return EVP_DigestInit_ex(o->md, EVP_sha256(), NULL) ? 0 : -ENOMEM;
	}
	const char *p = data;
	for (size_t done = 0; done < len;) {
		ssize_t k = write(o->fd, p + done, len - done);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return (o->write_error = negerrno());
		}
		done += (size_t)k;
	}
	o->len += len;
	return EVP_DigestUpdate(o->md, data, len) ? 0 : -ENOMEM;
}

struct layer_feed {
	struct oci_layer *l;
	uint64_t n;
};

static int layer_sink(void *userdata, const void *data, size_t len)
{
	struct layer_feed *f = userdata;
	if (len > IMAGES_BLOB_MAX - f->n)
		return -EFBIG;
	f->n += len;
	return oci_layer_feed(f->l, data, len);
}

/* One layer streamed from `ctr content get` through the layer reader
 * (ociimage.h): memory stays a pipe buffer, the inflate window and the tar
 * header, whatever the layer's size. */
static int layer(const struct images_ctx *ic, const char *digest, bool gzip, const char *diff_id, const char *path,
		 struct out_file *o, uint64_t *ret_size, char *why, size_t why_size)
{
	struct oci_layer *l = NULL;
	int r = oci_layer_new(gzip, path, IMAGES_BLOB_MAX, out_sink, o, &l);
	if (r < 0) {
		snprintf(why, why_size, "%s", r == -ENOMEM ? "out of memory" : "not a path in an image");
		return r;
	}
	char a0[] = "ctr", a1[] = "--address", a3[] = "--namespace", a4[] = IMAGES_NAMESPACE, a5[] = "content",
	     a6[] = "get";
	char d[OCI_DIGEST_LEN + 1];
	memcpy(d, digest, sizeof(d));
	char *argv[] = { a0, a1, (char *)(uintptr_t)ic->address, a3, a4, a5, a6, d, NULL };
	struct layer_feed f = { .l = l };
	int status = 0;
	r = child_run_stream(IMAGES_CTR, argv, child_env, IMAGES_CTR_TIMEOUT_MS, IMAGES_LAYER_TIMEOUT_MS, layer_sink, &f,
			     &status);
	if (r < 0) {
		if (r == -EFBIG)
			snprintf(why, why_size, "layer %.19s: more than %u MiB (compressed or not)", digest,
				 IMAGES_BLOB_MAX >> 20);
		else if (o->write_error)
			snprintf(why, why_size, "cannot write %s: %s", o->path, strerror(-r));
		else
			snprintf(why, why_size, "ctr content get %.19s: %s", digest,
				 r == -ETIMEDOUT ? "no data for 60 s or not done in 5 min" : strerror(-r));
		oci_layer_free(l);
		return r;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(why, why_size, "ctr content get failed (containerd not running?)");
		oci_layer_free(l);
		return -EIO;
	}
	mode_t mode = 0;
	const char *which = NULL;
	r = oci_layer_finish(l, digest, diff_id, ret_size, &mode, &which);
	oci_layer_free(l);
	if (r == -EBADMSG)
		snprintf(why, why_size, "%s %.19s does not match its %s", strcmp(which, "digest") == 0 ? "content of" : "layer",
			 digest, which);
	else if (r < 0)
		snprintf(why, why_size, "layer %.19s: corrupt gzip or malformed tar", digest);
	return r;
}

/* Copies path_in_image of the image whose top digest is top into o. */
static int extract(const struct images_ctx *ic, const char *top, const char *path_in_image, struct out_file *o,
		   char *why, size_t why_size)
{
	char next[OCI_DIGEST_LEN + 1];
	memcpy(next, top, sizeof(next));
	struct oci_manifest m = { 0 };
	int r = -EINVAL;
	for (int depth = 0; depth < 2; depth++) {
		_cleanup_free_ char *json = NULL;
		size_t len = 0;
		if ((r = blob(ic, next, OCI_JSON_MAX, &json, &len, why, why_size)) < 0)
			return r;
		r = oci_parse_top(json, len, IMAGES_ARCH, next, &m);
		if (r == 0)
			break;
		if (r == 1 && depth == 0)
			continue;
		snprintf(why, why_size, "%s", r == -ENOENT ? "no linux/" IMAGES_ARCH " manifest" : "not an image manifest");
		return r == 1 ? -EINVAL : r;
	}
	if (r != 0) {
		snprintf(why, why_size, "not an image manifest");
		return -EINVAL;
	}
	_cleanup_free_ char(*diff_ids)[OCI_DIGEST_LEN + 1] = calloc(m.n_layers, sizeof(*diff_ids));
	_cleanup_free_ char *config = NULL;
	size_t clen = 0;
	char got[160];
	if (!diff_ids)
		r = -ENOMEM;
	else if ((r = blob(ic, m.config, OCI_JSON_MAX, &config, &clen, why, why_size)) >= 0 &&
		 (r = oci_parse_config(config, clen, m.n_layers, diff_ids)) < 0)
		snprintf(why, why_size, "image config without matching rootfs.diff_ids");
	/* A manifest on its own (no index choosing the platform) says what it
	 * is for in its config: gardener-node-agent's CopyFromImage
	 * (pkg/nodeagent/registry/containerd_extractor.go) pulls with
	 * containerd.WithPullUnpack, and containerd's unpacker refuses a
	 * config of another platform ("unpacker does not support platform",
	 * core/unpack in 1.7; 2.x unpacks nothing and the mount fails), so an
	 * s390x binary never lands on an amd64 node. Same for an index entry
	 * whose config contradicts it. */
	if (r >= 0 && (r = oci_config_platform(config, clen, IMAGES_ARCH, got, sizeof(got))) < 0) {
		if (r == -EXDEV)
			snprintf(why, why_size, "the image is for %s, this node is linux/" IMAGES_ARCH, got);
		else
			snprintf(why, why_size, "image config is not a JSON object");
	}
	for (size_t i = m.n_layers; r >= 0 && i-- > 0;) {
		uint64_t size = 0;
		int e = layer(ic, m.layers[i], m.layer_gzip[i], diff_ids[i], path_in_image, o, &size, why, why_size);
		if (e < 0)
			r = e;
		else if (e == OCI_ENTRY_FILE) {
			oci_manifest_done(&m);
			return 0;
		} else if (e == OCI_ENTRY_OTHER) {
			snprintf(why, why_size, "%s in the image is not a regular file (directory, symlink, link)",
				 path_in_image);
			r = -EISDIR;
		} else if (e == OCI_ENTRY_WHITEOUT) {
			snprintf(why, why_size, "%s is deleted in the image", path_in_image);
			r = -ENOENT;
		}
	}
	if (r >= 0) {
		snprintf(why, why_size, "%s is not in the image", path_in_image);
		r = -ENOENT;
	}
	oci_manifest_done(&m);
	return r;
}

/* ---- the record --------------------------------------------------------------- */

static cJSON *load_record(int statefd)
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	cJSON *root = NULL;
	if (fsx_read_at(statefd, IMAGES_STATE_FILE, 4u << 20, &data, &len) >= 0)
		root = jsonx_parse(data, len);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		root = cJSON_CreateObject();
	}
	return root;
}

static const char *rec_str(const cJSON *rec, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, name);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}


static void md_freep(EVP_MD_CTX **p)
{
	EVP_MD_CTX_free(*p);
}

/* The SHA-256 (hex) of fd's content, read in pieces. */
static int fd_sha256(int fd, char out[static 65])
{
	static const char hex[] = "0123456789abcdef";
	_cleanup_(md_freep) EVP_MD_CTX *md = EVP_MD_CTX_new();
	if (!md || !EVP_DigestInit_ex(md, EVP_sha256(), NULL))
		return -ENOMEM;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return negerrno();
	for (;;) {
		unsigned char buf[64 * 1024];
		ssize_t k = read(fd, buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return negerrno();
		if (k == 0)
			break;
		if (!EVP_DigestUpdate(md, buf, (size_t)k))
			return -ENOMEM;
	}
	unsigned char v[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	if (!EVP_DigestFinal_ex(md, v, &n) || n != 32)
		return -ENOMEM;
	for (unsigned i = 0; i < 32; i++) {
		out[2 * i] = hex[v[i] >> 4];
		out[2 * i + 1] = hex[v[i] & 15];
	}
	out[64] = '\0';
	return 0;
}

/* A file's identity: device, inode, size, and modification and change
 * times to the nanosecond. While it is the same, the bytes are the ones
 * hashed when it was taken: nobody but root may write the file (root's, in
 * a directory only root may write: check_parent()), and the kernel sets
 * ctime on every write, truncate, chmod, chown and rename; no system call
 * sets it back (only a clock set back could). So an intact file is not read
 * again on every run (the kubelet's 105 MB cost 30-44 s of each run on a
 * TCG VM, issue 23), and any change to it is hashed.
 *
 * Two changes the kernel does not stamp with a new time, closed here
 * (images_identity_settled(), no_writers()):
 *  - a write in the same timestamp tick as the one the identity records
 *    (the same second on a file system with 1-second timestamps: ext4 with
 *    128-byte inodes, ext3, FAT's 2 s): an identity is only trusted once
 *    the clock has left the tick of its ctime when it is recorded, as git's
 *    racy-index check does; one taken too early is recorded empty, so the
 *    next run hashes the file (a fine-grained one waits the few ms instead,
 *    settle());
 *  - a writer with a shared writable mapping: the kernel updates the times
 *    when a clean page is first written, not when a page already dirty
 *    changes again, so bytes can change under an unchanged identity while
 *    the mapping lives. A mapping keeps the file open for writing, and a
 *    read lease is refused while anyone has it open for writing: an
 *    identity is neither recorded nor trusted while the lease is refused
 *    (the file is hashed then). What remains: docs/security.md. */
#define IDENTITY_MAX 128
/* How long a fine-grained identity is waited for to settle (the kernel's
 * coarse clock ticks every 1-10 ms). */
#define SETTLE_MAX_MS 50

static void identity_of(const struct stat *st, char out[static IDENTITY_MAX])
{
	snprintf(out, IDENTITY_MAX, "%ju:%ju:%jd:%jd.%09ld:%jd.%09ld", (uintmax_t)st->st_dev, (uintmax_t)st->st_ino,
		 (intmax_t)st->st_size, (intmax_t)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
		 (intmax_t)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

bool images_identity_settled(const struct stat *st, const struct timespec *now)
{
	const struct timespec *c = &st->st_ctim;
	if (c->tv_nsec == 0 && st->st_mtim.tv_nsec == 0)
		/* whole-second time stamps: 1 s (2 s on FAT) granularity */
		return now->tv_sec >= c->tv_sec + 2;
	return now->tv_sec > c->tv_sec || (now->tv_sec == c->tv_sec && now->tv_nsec > c->tv_nsec);
}

/* False when someone has fd's file open for writing (a writable mapping
 * included) or that cannot be told: F_SETLEASE F_RDLCK is refused with
 * EAGAIN exactly then (fcntl(2); the owner, root, needs no CAP_LEASE). The
 * lease is dropped at once; a writer opening meanwhile would break it with
 * SIGURG, which is ignored by default, instead of SIGIO, which kills. */
static bool no_writers(int fd)
{
	if (fcntl(fd, F_SETSIG, SIGURG) < 0 || fcntl(fd, F_SETLEASE, F_RDLCK) < 0) {
		if (errno != EAGAIN)
			log_debug("Cannot take a read lease (%m): the file's identity is not trusted");
		return false;
	}
	(void)fcntl(fd, F_SETLEASE, F_UNLCK);
	return true;
}

/* The identity of fd (st its fstat) to record, or "" when it may not be
 * trusted (see above). */
static void trusted_identity(int fd, const struct stat *st, char out[static IDENTITY_MAX])
{
	struct timespec now;
	out[0] = '\0';
	if (clock_gettime(CLOCK_REALTIME_COARSE, &now) < 0 || !images_identity_settled(st, &now) || !no_writers(fd))
		return;
	identity_of(st, out);
}

/* After our own write: a fine-grained ctime settles within a tick or two of
 * the coarse clock; wait that long rather than hash the file next run. */
static void settle(int fd, struct stat *st)
{
	struct timespec now;
	for (unsigned ms = 0; ms < SETTLE_MAX_MS; ms++) {
		if (clock_gettime(CLOCK_REALTIME_COARSE, &now) < 0 || images_identity_settled(st, &now) ||
		    (st->st_ctim.tv_nsec == 0 && st->st_mtim.tv_nsec == 0))
			return;
		struct timespec d = { 0, 1000 * 1000 };
		nanosleep(&d, NULL);
		if (fstat(fd, st) < 0)
			return;
	}
}

static bool owned_as(const struct stat *st, mode_t mode)
{
	return S_ISREG(st->st_mode) && (st->st_mode & 07777) == mode && st->st_uid == 0 && st->st_gid == 0 &&
	       (uint64_t)st->st_size <= IMAGES_BLOB_MAX;
}

/* True when name in dfd is a regular file of root's, of mode, whose
 * SHA-256 is hex (read in pieces: a large binary costs no memory); its
 * identity goes to ident ("" when it may not be trusted), taken before it
 * is read: a change while it is read gives another identity, so the next
 * run reads it again. */
static bool file_is(int dfd, const char *name, mode_t mode, const char *hex, char ident[static IDENTITY_MAX])
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	char sum[65];
	ident[0] = '\0';
	if (!hex || fd < 0 || fstat(fd, &st) < 0 || !owned_as(&st, mode))
		return false;
	trusted_identity(fd, &st, ident);
	return fd_sha256(fd, sum) >= 0 && strcmp(sum, hex) == 0;
}

enum { DISK_DIFFERS, DISK_SAME, DISK_SAME_HASHED };

/* Whether path below rootfd is a regular file of mode whose SHA-256 is hex:
 * DISK_SAME when its identity is still ident and nobody has it open for
 * writing (not read), DISK_SAME_HASHED when its bytes were read and match
 * (the identity to record now in ident_now, "" when not to be trusted). */
static int on_disk(int rootfd, const char *path, mode_t mode, const char *hex, const char *ident,
		   char ident_now[static IDENTITY_MAX])
{
	const char *base;
	_cleanup_close_ int dfd = fsx_open_parent_at(rootfd, path, FSX_FOLLOW_ROOT_SYMLINKS, 0, &base);
	struct stat st;
	if (dfd < 0 || !hex)
		return DISK_DIFFERS;
	_cleanup_close_ int fd = openat(dfd, base, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !owned_as(&st, mode))
		return DISK_DIFFERS;
	identity_of(&st, ident_now);
	if (ident && ident[0] && strcmp(ident, ident_now) == 0 && no_writers(fd))
		return DISK_SAME;
	return file_is(dfd, base, mode, hex, ident_now) ? DISK_SAME_HASHED : DISK_DIFFERS;
}

/* The directory a file goes to must be root's and not writable by group or
 * others: a user who may rename in it could swap the binary root runs. */
static int check_parent(int dfd, const char *path, char *why, size_t why_size)
{
	struct stat st;
	if (fstat(dfd, &st) < 0)
		return negerrno();
	if (st.st_uid != 0 || (st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid != 0)) {
		snprintf(why, why_size, "the directory of %s is writable by a user (owner %u, mode %04o)", path,
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

static int one(const struct images_ctx *ic, int rootfd, const struct osc_file *f, cJSON *record, char ***changed,
	       char *why, size_t why_size)
{
	cJSON *rec = cJSON_GetObjectItemCaseSensitive(record, f->path);
	const char *rimage = rec_str(rec, "image"), *rsum = rec_str(rec, "sha256");
	char ident[IDENTITY_MAX] = "";
	if (rimage && strcmp(rimage, f->image) == 0) {
		switch (on_disk(rootfd, f->path, f->mode, rsum, rec_str(rec, "identity"), ident)) {
		case DISK_SAME:
			log_debug("Image file %s is up to date (%s)", f->path, f->image);
			return 0;
		case DISK_SAME_HASHED: /* intact under a new identity, or a record without one */
			log_debug("Image file %s is up to date (%s), hashed", f->path, f->image);
			if (strcmp(ident, rec_str(rec, "identity") ? rec_str(rec, "identity") : "") == 0)
				return 0;
			cJSON_DeleteItemFromObjectCaseSensitive(rec, "identity");
			return cJSON_AddStringToObject(rec, "identity", ident) ? 1 : -ENOMEM;
		}
	}
	if (!ref_is_safe(f->image, strlen(f->image))) {
		snprintf(why, why_size, "refusing the image reference");
		return -EINVAL;
	}
	const char *base;
	_cleanup_close_ int dfd = fsx_open_parent_at(rootfd, f->path, FSX_MKDIR | FSX_FOLLOW_ROOT_SYMLINKS, 0755, &base);
	if (dfd < 0) {
		snprintf(why, why_size, "cannot open the directory of %s: %s", f->path, strerror(-dfd));
		return dfd;
	}
	int r = check_parent(dfd, f->path, why, why_size);
	if (r < 0)
		return r;

	char digest[OCI_DIGEST_LEN + 1];
	r = image_digest(ic, f->image, digest, why, why_size);
	if (r == -ENOENT) {
		log_info("Pulling %s for %s", f->image, f->path);
		if ((r = pull(ic, f->image, why, why_size)) < 0)
			return r;
		r = image_digest(ic, f->image, digest, why, why_size);
		if (r == -ENOENT)
			snprintf(why, why_size, "not in containerd after the pull");
	}
	if (r < 0)
		return r;
	/* The file streams into a temporary next to it (".#NAME.<hex>", the
	 * names fsx_write_atomic_at() uses), renamed over it once complete and
	 * checked, unless the bytes on disk are the same already. */
	char tmp[NAME_MAX + 1];
	_cleanup_close_ int ofd = fsx_open_temp_at(dfd, base, O_RDWR, tmp);
	if (ofd < 0) {
		snprintf(why, why_size, "cannot create a temporary file next to %s: %s", f->path, strerror(-ofd));
		return ofd;
	}
	struct out_file o = { .fd = ofd, .path = f->path };
	char sum[65];
	o.md = EVP_MD_CTX_new();
	r = o.md ? extract(ic, digest, f->path_in_image, &o, why, why_size) : -ENOMEM;
	if (r >= 0)
		r = fd_sha256(o.fd, sum); /* what is on disk, not what was meant to be */
	EVP_MD_CTX_free(o.md);
	bool same = r >= 0 && file_is(dfd, base, f->mode, sum, ident);
	if (r >= 0 && !same) {
		struct stat st;
		if (fchown(o.fd, 0, 0) < 0 || fchmod(o.fd, f->mode & 07777) < 0 || fsync(o.fd) < 0 ||
		    renameat(dfd, tmp, dfd, base) < 0 || fstat(o.fd, &st) < 0) {
			r = negerrno();
			snprintf(why, why_size, "cannot write %s: %s", f->path, strerror(-r));
		} else {
			(void)fsx_fsync_dir(dfd);
			/* The identity after the rename, which sets ctime, and
			 * with our own writable fd closed (it is a writer too). */
			close(TAKE_FD(ofd));
			o.fd = -1;
			ident[0] = '\0';
			_cleanup_close_ int rfd = openat(dfd, base, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
			struct stat rst;
			if (rfd >= 0 && fstat(rfd, &rst) == 0 && rst.st_ino == st.st_ino && rst.st_dev == st.st_dev) {
				settle(rfd, &rst);
				trusted_identity(rfd, &rst, ident);
			}
		}
	}
	if (r < 0 || same)
		(void)unlinkat(dfd, tmp, 0);
	if (r < 0)
		return r;
	if (!same) {
		log_info("Wrote %s from %s (%s, %llu bytes)", f->path, f->image, digest, (unsigned long long)o.len);
		if (files_strv_add(changed, f->path) < 0)
			return -ENOMEM;
	}
	cJSON *n = cJSON_CreateObject();
	if (!n || !cJSON_AddStringToObject(n, "image", f->image) || !cJSON_AddStringToObject(n, "digest", digest) ||
	    !cJSON_AddStringToObject(n, "sha256", sum) || !cJSON_AddStringToObject(n, "identity", ident)) {
		cJSON_Delete(n);
		return -ENOMEM;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(record, f->path);
	cJSON_AddItemToObject(record, f->path, n);
	return 1;
}

static void strv_remove(char **v, const char *s)
{
	size_t j = 0;
	for (size_t i = 0; v && v[i]; i++) {
		if (strcmp(v[i], s) == 0)
			free(v[i]);
		else
			v[j++] = v[i];
	}
	if (v)
		v[j] = NULL;
}

int images_plan(int rootfd, int statefd, const struct osc *new, char ***ret_check, char ***ret_write)
{
	_cleanup_(cJSON_Deletep) cJSON *record = statefd >= 0 ? load_record(statefd) : cJSON_CreateObject();
	if (!record)
		return -ENOMEM;
	for (size_t i = 0; i < new->n_files; i++) {
		const struct osc_file *f = &new->files[i];
		if (f->source != OSC_SOURCE_IMAGE || files_image_superseded(f->path))
			continue;
		cJSON *rec = cJSON_GetObjectItemCaseSensitive(record, f->path);
		const char *rimage = rec_str(rec, "image"), *rsum = rec_str(rec, "sha256");
		char ident[IDENTITY_MAX] = "";
		int d = rimage && strcmp(rimage, f->image) == 0 ?
				on_disk(rootfd, f->path, f->mode, rsum, rec_str(rec, "identity"), ident) :
				DISK_DIFFERS;
		if (d != DISK_DIFFERS)
			continue; /* intact: neither containerd nor the registry asked */
		if (files_strv_add(ret_check, f->path) < 0)
			return -ENOMEM;
		/* What containerd gives differs from what is there when the
		 * file is not the one recorded (missing, edited); with no
		 * record or another reference that is not known before. */
		if (rimage && strcmp(rimage, f->image) == 0 && files_strv_add(ret_write, f->path) < 0)
			return -ENOMEM;
	}
	return 0;
}

int images_apply(const struct images_ctx *ic, int rootfd, int statefd, const struct osc *new, char ***changed,
		 char **ret_error)
{
	_cleanup_(cJSON_Deletep) cJSON *record = load_record(statefd);
	if (!record)
		return -ENOMEM;
	int first = 0;
	bool dirty = false;
	for (size_t i = 0; i < new->n_files; i++) {
		const struct osc_file *f = &new->files[i];
		if (f->source != OSC_SOURCE_IMAGE)
			continue;
		if (files_image_superseded(f->path)) {
			log_info("Image file %s (%s) not written: gardener-node-agent's binary, superseded with its unit "
				 "by node-agent", f->path, f->image);
			continue;
		}
		char why[512] = "";
		int r = one(ic, rootfd, f, record, changed, why, sizeof(why));
		if (r > 0)
			dirty = true;
		if (r >= 0)
			continue;
		log_error_errno(r, "Image file %s from %s not written: %s", f->path, f->image, why);
		/* The old file stays: the units naming it are not restarted for
		 * it (an old kubelet under a new config, the issue Gardener's
		 * patch upgrades hit); once a later run writes it, they are. */
		strv_remove(*changed, f->path);
		char *s = NULL;
		if (asprintf(&s, "%s%s%s for %s: %s", *ret_error ? *ret_error : "", *ret_error ? "; " : "", f->image,
			     f->path, why[0] ? why : strerror(-r)) >= 0) {
			free(*ret_error);
			*ret_error = s;
		}
		if (!first)
			first = r;
	}
	/* Records of paths that are no longer image files go: a path dropped
	 * and added again later is copied out again, never trusted from an
	 * old record. */
	for (cJSON *rec = record->child, *next; rec; rec = next) {
		next = rec->next;
		bool keep = false;
		for (size_t i = 0; !keep && i < new->n_files; i++)
			keep = new->files[i].source == OSC_SOURCE_IMAGE && rec->string &&
			       strcmp(new->files[i].path, rec->string) == 0;
		if (!keep) {
			cJSON_Delete(cJSON_DetachItemViaPointer(record, rec));
			dirty = true;
		}
	}
	if (dirty) {
		_cleanup_free_ char *out = NULL;
		size_t len = 0;
		int r = jsonx_print(record, &out, &len);
		if (r >= 0)
			r = fsx_write_atomic_at(statefd, IMAGES_STATE_FILE, out, len, 0644, 0, 0, FSX_SKIP_IF_SAME);
		if (r < 0) {
			log_error_errno(r, "Cannot save %s", IMAGES_STATE_FILE);
			if (!first)
				first = r;
		}
	}
	return first;
}
