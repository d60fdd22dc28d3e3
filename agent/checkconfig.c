/* node-agent --check-config; see checkconfig.h. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checkconfig.h"
#include "cleanup.h"
#include "config.h"
#include "credentials.h"
#include "fsx.h"
#include "health.h"
#include "settings.h"
#include "stock.h"

#define CHECK_FILES_MAX 8

struct check {
	const struct config *c;
	const struct stock *st;
	unsigned problems;
};

static void problem(struct check *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct check *k, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fflush(stdout); /* in order with the report when both go to one place */
	fprintf(stderr, "problem: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	k->problems++;
}

/* The stock origin of a setting, or NULL. */
static const char *stock_origin(const struct stock *st, const char *name)
{
	static const struct {
		const char *name;
		size_t off;
	} map[] = {
		{ "apiServer.server", offsetof(struct stock, from_server) },
		{ "apiServer.caFile", offsetof(struct stock, from_ca) },
		{ "apiServer.bootstrapTokenFile", offsetof(struct stock, from_bootstrap) },
		{ "osc.secretName", offsetof(struct stock, from_secret) },
		{ "node.kubernetesVersion", offsetof(struct stock, from_version) },
		{ "node.machineName", offsetof(struct stock, from_machine) },
		{ "node.zone", offsetof(struct stock, from_zone) },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].name, name) == 0)
			return *(const char *const *)((const char *)st + map[i].off);
	return NULL;
}

static void print_setting(const char *name, const char *value, bool in_file, void *userdata)
{
	const struct check *k = userdata;
	const char *from = stock_origin(k->st, name);
	char src[PATH_MAX + 32];
	if (in_file)
		snprintf(src, sizeof(src), "config file");
	else if (from)
		snprintf(src, sizeof(src), "stock data: %s", from);
	else if (strcmp(name, "gardener.nodeAgentDir") == 0 && k->st->defaulted)
		snprintf(src, sizeof(src), "default (no config file; stock data present)");
	else
		snprintf(src, sizeof(src), "default");
	printf("  %-32s %-40s %s\n", name, value ? value : "(unset)", src);
}

/* notAfter of the first certificate in path (as root sees it); -1 when
 * there is none, -2 when it does not parse. */
static long long cert_not_after(const char *dir, const char *name)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_free_ char *pem = NULL;
	size_t len = 0;
	if (dfd < 0 || fsx_read_at(dfd, name, 1u << 20, &pem, &len) < 0)
		return -1;
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
	BIO_free(bio);
	explicit_bzero(pem, len); /* the key is in the same file */
	if (!x)
		return -2;
	struct tm tm;
	long long t = -2;
	if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1)
		t = (long long)timegm(&tm);
	X509_free(x);
	return t;
}

/* A path the unit hides from the service: ProtectHome=yes makes these
 * inaccessible, PrivateTmp=yes gives the service empty ones. */
static const char *hidden_by_unit(const char *path)
{
	static const struct {
		const char *prefix, *why;
	} hidden[] = {
		{ "/home/", "ProtectHome=yes" },   { "/root/", "ProtectHome=yes" },
		{ "/run/user/", "ProtectHome=yes" }, { "/tmp/", "PrivateTmp=yes" },
		{ "/var/tmp/", "PrivateTmp=yes" },
	};
	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		if (strncmp(path, hidden[i].prefix, strlen(hidden[i].prefix)) == 0)
			return hidden[i].why;
	return NULL;
}

struct file_check {
	const char *what;
	const char *path;
	int err;                    /* errno of the open as the service user; -1: not checked */
};

/* Opens each file as uid/gid (with user's groups) in a child; fills err.
 * Returns 0, or -errno when the child could not do it. */
static int open_as(const char *user, uid_t uid, gid_t gid, struct file_check *f, size_t n)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int r = -errno;
		close(p[0]);
		close(p[1]);
		return r;
	}
	if (pid == 0) {
		close(p[0]);
		if (initgroups(user, gid) < 0 || setgid(gid) < 0 || setuid(uid) < 0 || getuid() != uid ||
		    geteuid() != uid)
			_exit(2);
		for (size_t i = 0; i < n; i++) {
			int fd = open(f[i].path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
			int e = fd < 0 ? errno : 0;
			if (fd >= 0)
				close(fd);
			if (write(p[1], &e, sizeof(e)) != (ssize_t)sizeof(e))
				_exit(3);
		}
		_exit(0);
	}
	close(p[1]);
	size_t got = 0;
	for (; got < n; got++) {
		int e;
		ssize_t k;
		do
			k = read(p[0], &e, sizeof(e));
		while (k < 0 && errno == EINTR);
		if (k != (ssize_t)sizeof(e))
			break;
		f[got].err = e;
	}
	close(p[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return got == n && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EPERM;
}

/* The files the service reads by path (not through LoadCredential=). */
static size_t service_files(const struct check *k, const char *config_path, struct file_check *f)
{
	const struct config *c = k->c;
	size_t n = 0;
#define ADD(w, p)                                                             \
	do {                                                                  \
		if ((p) && n < CHECK_FILES_MAX)                               \
			f[n++] = (struct file_check){ .what = (w), .path = (p), .err = -1 }; \
	} while (0)
	if (!k->st->defaulted)
		ADD("the configuration file", config_path);
	if (!k->st->from_ca)
		ADD("apiServer.caFile", c->ca_file);
	ADD("apiServer.tokenFile", c->token_file);
	ADD("apiServer.clientCertificateFile", c->client_cert_file);
	ADD("apiServer.clientKeyFile", c->client_key_file);
	if (!k->st->from_bootstrap)
		ADD("apiServer.bootstrapTokenFile", c->bootstrap_token_file);
#undef ADD
	return n;
}

/* Can the service user read what it needs? */
static void check_service_user(struct check *k, const char *config_path, const char *user,
			       struct file_check *f, size_t n, bool *ret_checked)
{
	*ret_checked = false;
	for (size_t i = 0; i < n; i++) {
		/* A warning: node-agent run by hand or by a test does not have
		 * the unit's view. */
		const char *why = hidden_by_unit(f[i].path);
		if (why)
			printf("warning: %s \"%s\": hidden from node-agent.service by its %s\n", f[i].what, f[i].path,
			       why);
	}
	struct passwd *pw = getpwnam(user);
	if (!pw) {
		printf("service user: %s does not exist (systemd-sysusers creates it from node-agent.sysusers): "
		       "cannot check what it can read\n",
		       user);
		return;
	}
	if (geteuid() != 0 && geteuid() != pw->pw_uid) {
		printf("service user: %s; cannot check what it can read (run --check-config as root or as %s)\n",
		       user, user);
		return;
	}
	int r = open_as(user, pw->pw_uid, pw->pw_gid, f, n);
	if (r < 0) {
		printf("service user: %s; cannot check what it can read: %s\n", user, strerror(-r));
		return;
	}
	*ret_checked = true;
	printf("service user: %s (uid %u): checked what it can read\n", user, (unsigned)pw->pw_uid);
	(void)config_path;
	for (size_t i = 0; i < n; i++) {
		if (f[i].err == 0)
			continue;
		/* The token file may appear later when a bootstrap token covers
		 * the first contact (settings.h). */
		if (f[i].err == ENOENT && strcmp(f[i].what, "apiServer.tokenFile") == 0 && k->c->bootstrap_token_file)
			continue;
		problem(k, "%s \"%s\": not readable by the service user %s: %s", f[i].what, f[i].path, user,
			strerror(f[i].err));
	}
}

/* errno of the service user's open of path in f (0 readable), or -1. */
static int user_err(const struct file_check *f, size_t n, const char *path, bool checked)
{
	if (!checked || !path)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (strcmp(f[i].path, path) == 0)
			return f[i].err;
	return -1;
}

static bool readable_here(const char *path)
{
	return path && access(path, R_OK) == 0;
}

/* Which credential the agent will use, and whether it can. */
static void check_credential(struct check *k, const struct file_check *f, size_t n, bool checked)
{
	const struct config *c = k->c;
	if (c->token_file) {
		printf("credential: bearer token from %s (re-read on change)%s\n", c->token_file,
		       c->bootstrap_token_file ? "; the bootstrap token until it exists" : "");
		return;
	}
	if (c->client_cert_file) {
		printf("credential: client certificate %s, key %s\n", c->client_cert_file,
		       c->client_key_file ? c->client_key_file : "(in the same file)");
		return;
	}
	bool boot = c->bootstrap_token_file && readable_here(c->bootstrap_token_file) &&
		    user_err(f, n, c->bootstrap_token_file, checked) <= 0;
	if (!c->machine_name) {
		printf("credential: bootstrap token %s\n", c->bootstrap_token_file ? c->bootstrap_token_file : "(none)");
		if (!boot)
			problem(k, "no usable credential: apiServer.bootstrapTokenFile %s%s%s",
				c->bootstrap_token_file ? "\"" : "unset", c->bootstrap_token_file ? c->bootstrap_token_file : "",
				c->bootstrap_token_file ? "\" is not readable" : "");
		return;
	}
	/* node.machineName: a client certificate through the CSR API
	 * (credentials.h), from client.pem of an earlier run, else
	 * gardener-node-agent's kubeconfig, else a new CSR with the bootstrap
	 * token. */
	printf("credential: client certificate for machine %s through the CSR API\n", c->machine_name);
	long long na = cert_not_after(c->state_dir, CREDS_FILE);
	bool cert_ok = na > (long long)time(NULL);
	if (na == -1)
		printf("  %s/%s: none yet\n", c->state_dir, CREDS_FILE);
	else if (na == -2)
		printf("  %s/%s: does not parse (replaced by a new CSR)\n", c->state_dir, CREDS_FILE);
	else
		printf("  %s/%s: valid until %lld%s\n", c->state_dir, CREDS_FILE, na, cert_ok ? "" : " (expired)");
	_cleanup_free_ char *kc = NULL;
	size_t kc_len = 0;
	bool gna = stock_read(c, "credentials/kubeconfig", 1u << 20, &kc, &kc_len) == 0;
	if (kc)
		explicit_bzero(kc, kc_len);
	if (gna)
		printf("  gardener-node-agent's credentials/kubeconfig: present (adopted when it holds a client certificate)\n");
	printf("  bootstrap token for a new CSR: %s%s\n",
	       c->bootstrap_token_file ? c->bootstrap_token_file : "(none: apiServer.bootstrapTokenFile unset)",
	       c->bootstrap_token_file && !boot ? " (not readable)" : "");
	if (!cert_ok && !gna && !boot)
		problem(k, "no usable credential: no valid client certificate in %s/%s, no gardener-node-agent "
			   "kubeconfig and no readable bootstrap token: node-agent cannot authenticate",
			c->state_dir, CREDS_FILE);
}

int checkconfig_run(const char *path, bool path_given, const char *user)
{
	struct config c;
	struct stock st;
	char err[1024];
	if (settings_load(path, true, &c, &st, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	struct check k = { .c = &c, .st = &st };
	if (st.defaulted)
		printf("configuration file: %s (%s): absent; the stock user data in %s is the configuration\n", path,
		       path_given ? "command line --config" : "default path", c.gna_dir);
	else
		printf("configuration file: %s (%s)\n", path, path_given ? "command line --config" : "default path");
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	if (!st.defaulted) {
		_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0 || fsx_read_fd(fd, CONFIG_MAX, &data, &len) < 0) {
			free(data);
			data = NULL;
		}
	}
	printf("settings (value, source):\n");
	if (config_each(&c, data, len, print_setting, &k) < 0)
		problem(&k, "cannot list the settings");
	if (c.gna_dir)
		stock_print(&st, &c, stdout);
	health_print_config(&c, stdout);

	struct file_check f[CHECK_FILES_MAX];
	size_t n = service_files(&k, path, f);
	bool checked;
	check_service_user(&k, path, user, f, n, &checked);
	check_credential(&k, f, n, checked);

	stock_done(&st);
	config_done(&c);
	if (k.problems) {
		printf("configuration NOT OK: %u problem(s), see above\n", k.problems);
		return 1;
	}
	printf("configuration OK\n");
	return 0;
}
