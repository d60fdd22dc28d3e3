/* The executor's in-place update steps; see ipupdate.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <openssl/evp.h>

#include "child.h"
#include "ctrdhealth.h"
#include "cleanup.h"
#include "fsx.h"
#include "gnaconfig.h"
#include "ipupdate.h"
#include "jsonx.h"
#include "kubelet.h"
#include "log.h"
#include "systemd.h"

#define OS_RELEASE_MAX (64u << 10)
#define OUTPUT_MAX (64u << 10)
/* What a command without '/' is looked up in (exec.LookPath on a node). */
#define IPU_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int ipu_running_os_version(int rootfd, char out[static INPLACE_VERSION_MAX + 1])
{
	static const char *const paths[] = { "etc/os-release", "usr/lib/os-release" };
	for (size_t i = 0; i < 2; i++) {
		_cleanup_free_ char *data = NULL;
		size_t len;
		int r = fsx_read_at(rootfd, paths[i], OS_RELEASE_MAX, &data, &len);
		if (r == -ENOENT || r == -ELOOP)
			continue;
		if (r < 0)
			return r;
		r = inplace_os_version(data, len, out, INPLACE_VERSION_MAX + 1);
		return r == -EMSGSIZE ? -ENOENT : r;
	}
	return -ENOENT;
}

/* This boot's identity, to tell "the reboot is still to come" from "the
 * node came back": with systemd the manager's UserspaceTimestamp (the
 * executor's unit has ProcSubset=pid, which hides /proc/sys, and a run by
 * hand must give the same answer), else the kernel's boot id below the root
 * (proc/sys/kernel/random/boot_id: what a test root holds); "" when
 * neither can be read. */
static void boot_id(const struct apply_ctx *c, char out[static 40])
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	uint64_t ts;
	out[0] = '\0';
	if (c->bus && systemd_userspace_timestamp(c->bus, &ts) == 0) {
		snprintf(out, 40, "userspace-%llu", (unsigned long long)ts);
		return;
	}
	if (fsx_read_at(c->rootfd, "proc/sys/kernel/random/boot_id", 64, &data, &len) < 0)
		return;
	size_t n = strcspn(data, "\n");
	if (n > 0 && n < 40) {
		memcpy(out, data, n);
		out[n] = '\0';
	}
}

static int save(int statefd, const struct state *st)
{
	int r = state_save(statefd, st);
	if (r < 0)
		return log_error_errno(r, "Cannot save %s (in-place update record)", STATE_FILE);
	return 0;
}

static void set_state(struct state *st, enum inplace_state s, const char *reason)
{
	st->inplace_state = (int)s;
	free(st->inplace_reason);
	st->inplace_reason = NULL;
	if (reason) {
		/* One line, as result.json wants it. */
		char *c = strndup(reason, IPU_REASON_MAX);
		for (char *p = c; p && *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = ' ';
			else if ((unsigned char)*p >= 0x80)
				*p = '?'; /* a command's output cut anywhere: never invalid UTF-8 */
		st->inplace_reason = c ? c : strdup("in-place update failed");
	}
}

static bool os_version_is_desired(const char *running, const char *desired)
{
	bool eq = false;
	return running && inplace_version_equal(running, desired, &eq) == 0 && eq;
}

int ipu_begin(int rootfd, int statefd, struct state *st, const struct osc *old, const struct osc *new,
	      const char *checksum, char *err)
{
	char running[INPLACE_VERSION_MAX + 1];
	bool have_running = new->inplace.present && ipu_running_os_version(rootfd, running) == 0;
	bool dirty = false;
	if (strcmp(st->inplace_checksum, checksum) != 0) {
		unsigned kinds = 0;
		int r = inplace_classify(old, new, have_running ? running : NULL, &kinds, err);
		if (r < 0)
			return r;
		if (kinds || st->inplace_checksum[0]) {
			free(st->inplace_reason);
			free(st->inplace_os_attempted);
			st->inplace_reason = st->inplace_os_attempted = NULL;
			st->inplace_boot_id[0] = '\0';
			st->inplace_checksum[0] = '\0';
			st->inplace_kinds = st->inplace_remaining = st->inplace_steps = 0;
			st->inplace_state = INPLACE_STATE_WAITING;
			if (kinds) {
				memcpy(st->inplace_checksum, checksum, 65);
				st->inplace_kinds = st->inplace_remaining = kinds;
				_cleanup_free_ char *names = NULL;
				for (unsigned i = 0; i < INPLACE_N_KINDS; i++)
					if (kinds & (1u << i)) {
						char *n = NULL;
						if (asprintf(&n, "%s%s%s", names ? names : "", names ? " " : "",
							     inplace_kind_name(1u << i)) < 0)
							return -ENOMEM;
						free(names);
						names = n;
					}
				log_notice("In-place update: %s (running OS %s, desired %s)", names,
					   have_running ? running : "unknown", new->inplace.os_version);
			}
			dirty = true;
		}
	}
	/* Gardener's Reconcile: "If the node-agent has restarted after OS
	 * update, we need to persist the change" (completeOSUpdate). */
	if (st->inplace_checksum[0] && (st->inplace_remaining & INPLACE_OS_VERSION) && have_running &&
	    os_version_is_desired(running, new->inplace.os_version)) {
		log_notice("In-place update: the running OS is %s now, the OS update is complete", running);
		st->inplace_remaining &= ~(unsigned)INPLACE_OS_VERSION;
		dirty = true;
	}
	if (dirty)
		return save(statefd, st);
	return 0;
}

void ipu_fill_result(const struct state *st, const struct osc *new, const char *running, struct result *res)
{
	if (!st->inplace_checksum[0] || !st->inplace_kinds) {
		res->inplace = (struct result_inplace){};
		return;
	}
	bool ended = st->inplace_state == INPLACE_STATE_SUCCESSFUL || st->inplace_state == INPLACE_STATE_FAILED;
	res->inplace = (struct result_inplace){
		.present = true,
		.kinds = ended || !st->inplace_remaining ? st->inplace_kinds : st->inplace_remaining,
		.state = st->inplace_state,
		.reason = st->inplace_state == INPLACE_STATE_FAILED ? st->inplace_reason : NULL,
	};
	if ((st->inplace_kinds & INPLACE_OS_VERSION) && new->inplace.os_version && new->inplace.os_version[0]) {
		res->inplace.os_desired = new->inplace.os_version;
		res->inplace.os_running = (char *)(uintptr_t)(running ? running : "");
	}
}

int ipu_before_units(int rootfd, int statefd, struct state *st)
{
	if (!st->inplace_checksum[0] || !(st->inplace_remaining & INPLACE_KUBELET_CPU_MANAGER_POLICY) ||
	    (st->inplace_steps & IPU_STEP_CPU_STATE_REMOVED))
		return 0;
	/* https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/#changing-the-cpu-manager-policy */
	if (unlinkat(rootfd, IPU_CPU_MANAGER_STATE, 0) < 0 && errno != ENOENT)
		return log_error_errno(-errno, "Cannot remove /%s", IPU_CPU_MANAGER_STATE);
	log_notice("In-place update: removed /%s (CPU manager policy change)", IPU_CPU_MANAGER_STATE);
	st->inplace_steps |= IPU_STEP_CPU_STATE_REMOVED;
	return save(statefd, st);
}

/* checkKubeletHealth (reconciler.go: GET the kubelet's /healthz every 5 s
 * for 5 min until 200): the executor has no network, node-agent does and
 * probes /healthz (agent/health.h), writing each verdict to its state
 * directory (HEALTH_KUBELET_VERDICT_FILE, ctrdhealth.h's format). Healthy
 * is a healthy verdict checked after the kubelet's restart (since);
 * unhealthy verdicts are waited through until the deadline, the last one's
 * error the reason. 0 healthy, -ETIMEDOUT not within the deadline, 1 when
 * node-agent writes no verdicts (its kubelet probe off): the caller falls
 * back. With or without systemd. */
#define KUBELET_VERDICT_FILE "kubelet-health.json" /* agent/health.h HEALTH_KUBELET_VERDICT_FILE */

static int kubelet_healthz(const struct apply_ctx *c, time_t since, char *why, size_t why_size)
{
	_cleanup_close_ int dfd = c->cfg->state_dir ? fsx_open_dir_at(c->rootfd, c->cfg->state_dir, 0, 0) : -ENOENT;
	uint64_t deadline = mono_ms() + IPU_KUBELET_HEALTH_TIMEOUT_MS;
	bool seen = false;
	for (;;) {
		_cleanup_free_ char *data = NULL;
		size_t len;
		struct ctrdhealth v;
		const char *err = NULL;
		int r = dfd < 0 ? dfd : fsx_read_at(dfd, KUBELET_VERDICT_FILE, CTRDHEALTH_MAX, &data, &len);
		if (r == -ENOENT && !seen)
			return 1;
		if (r >= 0 && ctrdhealth_parse(data, len, &v, &err) >= 0) {
			seen = true;
			if (v.checked_at > since && v.healthy) {
				log_info("In-place update: the kubelet is healthy (its /healthz, node-agent's probe at %lld)",
					 (long long)v.checked_at);
				return 0;
			}
			if (v.checked_at > since)
				snprintf(why, why_size, "/healthz: %s", v.error);
		} else if (r >= 0)
			log_warning("Ignoring %s/%s: %s", c->cfg->state_dir, KUBELET_VERDICT_FILE, err ? err : "invalid");
		if (mono_ms() >= deadline) {
			if (!why[0])
				snprintf(why, why_size, "no verdict of its /healthz since the restart");
			return -ETIMEDOUT;
		}
		sleep_ms(1000);
	}
}

/* Without node-agent's verdicts, "healthy" is what systemd says of
 * kubelet.service: active, and still active IPU_KUBELET_HEALTH_INTERVAL_MS
 * later without having been restarted (a kubelet that crashes on its new
 * configuration is restarted by Restart= and shows a new
 * ActiveEnterTimestamp). Without systemd either nothing is checked. */
static int kubelet_healthy(const struct apply_ctx *c, char *why, size_t why_size)
{
	int hz = kubelet_healthz(c, time(NULL), why, why_size);
	if (hz <= 0)
		return hz;
	if (!c->bus) {
		log_notice("In-place update: no systemd and no /healthz verdict of node-agent's, the kubelet's health "
			   "is not checked");
		return 0;
	}
	uint64_t deadline = mono_ms() + IPU_KUBELET_HEALTH_TIMEOUT_MS, seen_enter = 0;
	bool seen = false;
	for (;;) {
		_cleanup_free_ char *active = NULL;
		uint64_t enter = 0;
		int r = systemd_unit_state(c->bus, "kubelet.service", &active, NULL, &enter);
		if (r >= 0 && active && strcmp(active, "active") == 0) {
			if (seen && enter == seen_enter)
				return 0;
			seen = true;
			seen_enter = enter;
		} else {
			seen = false;
			snprintf(why, why_size, "kubelet.service is %s", r < 0 ? strerror(-r) : active ? active : "unknown");
		}
		if (mono_ms() >= deadline) {
			if (!why[0])
				snprintf(why, why_size, "kubelet.service did not stay active");
			return -ETIMEDOUT;
		}
		sleep_ms(IPU_KUBELET_HEALTH_INTERVAL_MS);
	}
}

int ipu_kubelet_done(const struct apply_ctx *c, int statefd, struct state *st)
{
	if (!st->inplace_checksum[0] || !(st->inplace_remaining & INPLACE_KUBELET_ANY))
		return 0;
	char why[256] = "";
	int r = kubelet_healthy(c, why, sizeof(why));
	if (r < 0) {
		char reason[IPU_REASON_MAX];
		snprintf(reason, sizeof(reason), "kubelet is not healthy after in-place update: %s", why);
		set_state(st, INPLACE_STATE_FAILED, reason);
		(void)save(statefd, st);
		return r;
	}
	st->inplace_remaining &= ~(unsigned)INPLACE_KUBELET_ANY;
	return save(statefd, st);
}

/* Go's %q for the strings we quote (printable ASCII). */
static void quote(char *buf, size_t size, const char *s)
{
	size_t n = 0;
	if (size < 3)
		return;
	buf[n++] = '"';
	for (; s && *s && n + 3 < size; s++) {
		if (*s == '"' || *s == '\\')
			buf[n++] = '\\';
		buf[n++] = *s;
	}
	buf[n++] = '"';
	buf[n] = '\0';
}

static int find_command(const char *command, char *path, size_t size)
{
	if (strchr(command, '/')) {
		if (snprintf(path, size, "%s", command) >= (int)size)
			return -ENAMETOOLONG;
		return 0;
	}
	const char *p = IPU_PATH;
	while (*p) {
		size_t l = strcspn(p, ":");
		if (snprintf(path, size, "%.*s/%s", (int)l, p, command) < (int)size && access(path, X_OK) == 0)
			return 0;
		p += l + (p[l] == ':');
	}
	return -ENOENT;
}

static void one_line(char *s)
{
	for (; s && *s; s++)
		if (*s == '\n' || *s == '\r' || *s == '\t')
			*s = ' ';
}

int ipu_run_os_update(const char *command, char *const *args, char *why, size_t why_size)
{
	char path[4096];
	if (!command || !*command) {
		snprintf(why, why_size, "update command is not provided in OSC, cannot proceed with in-place update");
		return -EINVAL;
	}
	int r = find_command(command, path, sizeof(path));
	if (r < 0) {
		snprintf(why, why_size, "exec: \"%s\": executable file not found in $PATH", command);
		return r;
	}
	size_t n = 0;
	while (args && args[n])
		n++;
	_cleanup_free_ char **argv = calloc(n + 2, sizeof(char *));
	if (!argv)
		return -ENOMEM;
	argv[0] = (char *)(uintptr_t)command;
	for (size_t i = 0; i < n; i++)
		argv[i + 1] = args[i];
	static char e_path[] = "PATH=" IPU_PATH, e_lang[] = "LANG=C", e_lc[] = "LC_ALL=C";
	char *const envp[] = { e_path, e_lang, e_lc, NULL };
	uint64_t deadline = mono_ms() + IPU_OS_UPDATE_TIMEOUT_MS;
	for (;;) {
		uint64_t now = mono_ms();
		unsigned left = now < deadline ? (unsigned)(deadline - now) : 1;
		_cleanup_free_ char *out = NULL;
		size_t len = 0;
		int status = 0;
		r = child_run(path, argv, envp, left, OUTPUT_MAX, &out, &len, &status);
		if (r == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
			return 0;
		one_line(out);
		char err[64];
		if (r == -ETIMEDOUT)
			snprintf(err, sizeof(err), "context deadline exceeded");
		else if (r < 0)
			snprintf(err, sizeof(err), "%s", strerror(-r));
		else if (WIFEXITED(status))
			snprintf(err, sizeof(err), "exit status %d", WEXITSTATUS(status));
		else
			snprintf(err, sizeof(err), "signal: %s", strsignal(WTERMSIG(status)));
		/* reconciler.go retriableErrorPatternRegex / nonRetriableErrorPatternRegex */
		bool retriable = out && strcasestr(out, "network problems");
		bool nonretriable = out && (strcasestr(out, "invalid arguments") || strcasestr(out, "system failure"));
		snprintf(why, why_size, "%s: %s, output: %.600s",
			 retriable ? "retriable error detected" :
			 nonretriable ? "non-retriable error detected" : "no specific error detected",
			 err, out ? out : "");
		if (!retriable || r == -ETIMEDOUT || mono_ms() + IPU_OS_UPDATE_RETRY_MS >= deadline)
			return r < 0 ? r : -EIO;
		log_notice("OS update command: %s; retrying in %us", why, IPU_OS_UPDATE_RETRY_MS / 1000);
		sleep_ms(IPU_OS_UPDATE_RETRY_MS);
	}
}

/* The command through cloud-config-exec-os-update.service: the executor
 * has no network, the update may need it (ipupdate.h, docs/design.md). */
static int run_in_unit(const struct apply_ctx *c, int statefd, const struct osc *new, char *why, size_t why_size)
{
	_cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
	if (!o || !cJSON_AddStringToObject(o, "command", new->os_update.command) ||
	    !jsonx_add_strv(o, "args", new->os_update.args))
		return -ENOMEM;
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = jsonx_print(o, &text, &len);
	if (r < 0)
		return r;
	r = fsx_write_atomic_at(statefd, IPU_OS_UPDATE_FILE, text, len, 0600, 0, 0, 0);
	if (r < 0) {
		snprintf(why, why_size, "cannot write %s: %s", IPU_OS_UPDATE_FILE, strerror(-r));
		return r;
	}
	struct systemd_job job = { .unit = IPU_OS_UPDATE_UNIT, .verb = SYSTEMD_START };
	r = systemd_run_jobs(c->bus, &job, 1, IPU_OS_UPDATE_TIMEOUT_MS + 60000);
	if (r >= 0 && job.error == 0) {
		systemd_job_done(&job);
		return 0;
	}
	snprintf(why, why_size, "%s: %s (see its journal)", IPU_OS_UPDATE_UNIT,
		 job.result ? job.result : job.message ? job.message : strerror(-(job.error ? job.error : r)));
	r = job.error ? job.error : (r < 0 ? r : -EIO);
	systemd_job_done(&job);
	/* The update script reboots the node (Garden Linux's does, right
	 * after its update): the shutdown cancels the unit's job. That is the
	 * reboot the update waits for, not a failed command (gardener-node-
	 * agent is simply killed by it). */
	char sys[32] = "";
	if (systemd_manager_state(c->bus, sys, sizeof(sys)) == 0 && strcmp(sys, "stopping") == 0) {
		log_notice("In-place update: the system is going down while %s runs (%s): the reboot of the update",
			   IPU_OS_UPDATE_UNIT, why);
		return 1;
	}
	_cleanup_free_ char *rf = NULL;
	(void)systemd_reset_failed(c->bus, IPU_OS_UPDATE_UNIT, &rf);
	return r;
}

int ipu_os_update_verb(int rootfd, const char *exec_state_dir)
{
	_cleanup_close_ int dfd = fsx_open_dir_at(rootfd, exec_state_dir, 0, 0);
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = dfd < 0 ? dfd : fsx_read_at(dfd, IPU_OS_UPDATE_FILE, 1u << 20, &data, &len);
	if (r < 0) {
		log_error_errno(r, "Cannot read %s/%s", exec_state_dir, IPU_OS_UPDATE_FILE);
		return APPLY_EXIT_FAILED;
	}
	_cleanup_(cJSON_Deletep) cJSON *o = cJSON_ParseWithLength(data, len);
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(o, "command");
	_cleanup_strv_free_ char **args = NULL;
	if (!cJSON_IsString(cmd) ||
	    jsonx_get_strv(cJSON_GetObjectItemCaseSensitive(o, "args"), OSC_OS_UPDATE_ARGS_MAX, &args) < 0) {
		log_error("%s/%s is malformed", exec_state_dir, IPU_OS_UPDATE_FILE);
		return APPLY_EXIT_FAILED;
	}
	char why[1024] = "";
	log_notice("Executing the OS update command %s", cmd->valuestring);
	r = ipu_run_os_update(cmd->valuestring, args, why, sizeof(why));
	if (r < 0) {
		log_error("OS update command failed: %s", why);
		return APPLY_EXIT_FAILED;
	}
	return APPLY_EXIT_OK;
}

/* RemoveAll of the kubelet's pki directory: its files and links (it has no
 * subdirectories; one would be refused, -ENOTEMPTY), then the directory. */
static int remove_pki(int kdir)
{
	int fd = openat(kdir, "pki", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = -errno;
		close(fd);
		return e;
	}
	int r = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT) {
			r = -errno;
			break;
		}
	}
	closedir(d);
	if (r == 0 && unlinkat(kdir, "pki", AT_REMOVEDIR) < 0 && errno != ENOENT)
		r = -errno;
	return r;
}

/* rebootstrapKubelet: the bootstrap kubeconfig from the real one with the
 * (new) CA file and server of gardener-node-agent's configuration and the
 * client certificate inline, then kubeconfig-real and the pki directory
 * removed and the kubelet restarted; it requests a certificate of the new
 * CA with its old one. */
static int rebootstrap_kubelet(const struct apply_ctx *c, const struct osc *new, char *why, size_t why_size)
{
	_cleanup_(gnaconfig_done) struct gnaconfig g = { 0 };
	char gerr[GNACONFIG_ERROR_MAX] = "";
	if (gnaconfig_from_osc(new, &g, gerr, sizeof(gerr)) < 0 || !g.server || !g.ca_file) {
		snprintf(why, why_size, "failed reading the API server config: %s", gerr[0] ? gerr : "server or caFile missing");
		return -EINVAL;
	}
	_cleanup_free_ char *cert = NULL, *real = NULL;
	size_t cert_len = 0, real_len = 0;
	int r = fsx_read_at(c->rootfd, "var/lib/kubelet/pki/kubelet-client-current.pem", 1u << 20, &cert, &cert_len);
	if (r == -ELOOP) {
		/* kubelet-client-current.pem is a symlink to the dated file: read its target in the same dir. */
		char target[256];
		_cleanup_close_ int pki = fsx_open_dir_at(c->rootfd, "var/lib/kubelet/pki", 0, 0);
		ssize_t n = pki < 0 ? -1 : readlinkat(pki, "kubelet-client-current.pem", target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = '\0';
			const char *base = strrchr(target, '/');
			r = fsx_read_at(pki, base ? base + 1 : target, 1u << 20, &cert, &cert_len);
		}
	}
	if (r < 0 && r != -ENOENT && r != -ELOOP) {
		snprintf(why, why_size, "failed checking whether kubelet client certificate file exists: %s", strerror(-r));
		return r;
	}
	r = fsx_read_at(c->rootfd, "var/lib/kubelet/kubeconfig-real", 1u << 20, &real, &real_len);
	if (r < 0 && r != -ENOENT) {
		snprintf(why, why_size, "failed checking whether kubeconfig file exists: %s", strerror(-r));
		return r;
	}
	_cleanup_close_ int kdir = fsx_open_dir_at(c->rootfd, "var/lib/kubelet", 0, 0);
	if (kdir < 0) {
		snprintf(why, why_size, "cannot open /var/lib/kubelet: %s", strerror(-kdir));
		return kdir;
	}
	if (real) {
		_cleanup_free_ char *b64 = NULL, *kc = NULL;
		size_t blen = cert ? 4 * ((cert_len + 2) / 3) + 1 : 1;
		if (!(b64 = calloc(1, blen)))
			return -ENOMEM;
		if (cert)
			EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)cert, (int)cert_len);
		if (asprintf(&kc,
			     "apiVersion: v1\nkind: Config\ncurrent-context: kubelet-bootstrap@default\n"
			     "clusters:\n- cluster:\n    certificate-authority: \"%s\"\n    server: \"%s\"\n  name: default-cluster\n"
			     "contexts:\n- context:\n    cluster: default-cluster\n    namespace: default\n    user: default-auth\n"
			     "  name: kubelet-bootstrap@default\n"
			     "users:\n- name: default-auth\n  user:\n    client-certificate-data: %s\n    client-key-data: %s\n",
			     g.ca_file, g.server, b64, b64) < 0)
			return -ENOMEM;
		r = fsx_write_atomic_at(kdir, "kubeconfig-bootstrap", kc, strlen(kc), 0600, 0, 0, 0);
		explicit_bzero(b64, strlen(b64));
		explicit_bzero(kc, strlen(kc));
		if (r < 0) {
			snprintf(why, why_size, "unable to write kubeconfig file %s: %s", KUBELET_BOOTSTRAP_KUBECONFIG, strerror(-r));
			return r;
		}
	}
	if (faccessat(kdir, "kubeconfig-bootstrap", F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		snprintf(why, why_size, "kubeconfig file %s does not exist, cannot proceed with rebootstrap",
			 KUBELET_BOOTSTRAP_KUBECONFIG);
		return -ENOENT;
	}
	if (unlinkat(kdir, "kubeconfig-real", 0) < 0 && errno != ENOENT) {
		snprintf(why, why_size, "failed removing kubeconfig file: %s", strerror(errno));
		return -errno;
	}
	r = remove_pki(kdir);
	if (r < 0) {
		snprintf(why, why_size, "unable to delete kubelet client certificate directory: %s", strerror(-r));
		return r;
	}
	if (c->bus) {
		struct systemd_job job = { .unit = "kubelet.service", .verb = SYSTEMD_RESTART };
		r = systemd_run_jobs(c->bus, &job, 1, c->job_timeout_ms ? c->job_timeout_ms : 120000);
		int e = r < 0 ? r : job.error;
		if (e < 0)
			snprintf(why, why_size, "unable to restart unit \"kubelet.service\": %s",
				 job.result ? job.result : strerror(-e));
		systemd_job_done(&job);
		if (e < 0)
			return e;
	}
	log_notice("In-place update: re-bootstrapped the kubelet after the CA rotation");
	return 0;
}

int ipu_finish(const struct apply_ctx *c, int statefd, struct state *st, const struct osc *new, ipu_started_fn started,
	       void *data)
{
	if (!st->inplace_checksum[0])
		return 0;
	if (st->inplace_state == INPLACE_STATE_FAILED)
		return -EIO;
	char reason[IPU_REASON_MAX + 64], why[900] = "";
	char running[INPLACE_VERSION_MAX + 1] = "";
	const char *desired = new->inplace.os_version ? new->inplace.os_version : "";

	if (st->inplace_remaining & INPLACE_OS_VERSION) {
		(void)ipu_running_os_version(c->rootfd, running);
		char qd[2 * INPLACE_VERSION_MAX + 3], qr[2 * INPLACE_VERSION_MAX + 3];
		quote(qd, sizeof(qd), desired);
		quote(qr, sizeof(qr), running);
		bool attempted_same = false;
		char boot[40];
		boot_id(c, boot);
		if (st->inplace_os_attempted && st->inplace_boot_id[0] && strcmp(boot, st->inplace_boot_id) == 0 &&
		    inplace_version_equal(st->inplace_os_attempted, desired, &attempted_same) == 0 && attempted_same) {
			/* Ran in this boot: the reboot into the new OS is still
			 * to come (Gardener stops the same way until its restart). */
			log_notice("In-place update: the OS update to %s ran in this boot; waiting for the reboot", desired);
			return 1;
		}
		if (st->inplace_os_attempted &&
		    (inplace_version_equal(st->inplace_os_attempted, desired, &attempted_same) < 0 || attempted_same)) {
			/* performInPlaceUpdate: the update ran for this version
			 * and the node came back on another one. */
			snprintf(reason, sizeof(reason),
				 "OS update might have failed and rolled back to the previous version. Desired version: %s, Current version: %s",
				 qd, qr);
			set_state(st, INPLACE_STATE_FAILED, reason);
			(void)save(statefd, st);
			return -EIO;
		}
		if (!new->os_update.command || !new->os_update.command[0]) {
			set_state(st, INPLACE_STATE_FAILED,
				  "update command is not provided in OSC, cannot proceed with in-place update");
			(void)save(statefd, st);
			return -EINVAL;
		}
		if (!desired[0]) {
			set_state(st, INPLACE_STATE_FAILED,
				  "operating system version is not provided in OSC, cannot proceed with in-place update");
			(void)save(statefd, st);
			return -EINVAL;
		}
		/* The attempt is recorded before the command runs (Gardener's
		 * annotation), so a reboot the command triggers itself finds it. */
		free(st->inplace_os_attempted);
		if (!(st->inplace_os_attempted = strdup(desired)))
			return -ENOMEM;
		memcpy(st->inplace_boot_id, boot, sizeof(boot));
		set_state(st, INPLACE_STATE_RUNNING, NULL);
		int r = save(statefd, st);
		if (r < 0)
			return r;
		if (started)
			started(data, st);
		log_notice("In-place update: executing the OS update command %s for %s", new->os_update.command, desired);
		r = c->bus ? run_in_unit(c, statefd, new, why, sizeof(why))
			   : ipu_run_os_update(new->os_update.command, new->os_update.args, why, sizeof(why));
		if (r > 0)
			return 1; /* the node is rebooting: state running, checked after the boot */
		if (r < 0) {
			snprintf(reason, sizeof(reason), "failed to execute OS update command: %s", why);
			set_state(st, INPLACE_STATE_FAILED, reason);
			(void)save(statefd, st);
			return r;
		}
		if (ipu_running_os_version(c->rootfd, running) < 0 || !os_version_is_desired(running, desired)) {
			log_notice("In-place update: stopping until the node runs the new OS. Current version: %s, Desired version: %s",
				   running[0] ? running : "unknown", desired);
			return 1;
		}
		st->inplace_remaining &= ~(unsigned)INPLACE_OS_VERSION;
		if ((r = save(statefd, st)) < 0)
			return r;
	}

	if (st->inplace_remaining & INPLACE_KUBELET_CA_ROTATION) {
		if (!(st->inplace_steps & IPU_STEP_KUBELET_REBOOTSTRAPPED)) {
			int r = rebootstrap_kubelet(c, new, why, sizeof(why));
			if (r < 0) {
				snprintf(reason, sizeof(reason), "failed to rebootstrap kubelet: %s", why);
				set_state(st, INPLACE_STATE_FAILED, reason);
				(void)save(statefd, st);
				return r;
			}
			st->inplace_steps |= IPU_STEP_KUBELET_REBOOTSTRAPPED;
			if ((r = save(statefd, st)) < 0)
				return r;
		}
		why[0] = '\0';
		int r = kubelet_healthy(c, why, sizeof(why));
		if (r < 0) {
			snprintf(reason, sizeof(reason), "kubelet is not healthy after in-place update: %s", why);
			set_state(st, INPLACE_STATE_FAILED, reason);
			(void)save(statefd, st);
			return r;
		}
		st->inplace_remaining &= ~(unsigned)INPLACE_KUBELET_CA_ROTATION;
	}
	/* node-agent-ca-rotation and sa-key-rotation are node-agent's. */
	st->inplace_remaining &= ~(unsigned)(INPLACE_NODE_AGENT_CA_ROTATION | INPLACE_SA_KEY_ROTATION);
	set_state(st, INPLACE_STATE_SUCCESSFUL, NULL);
	return save(statefd, st);
}
