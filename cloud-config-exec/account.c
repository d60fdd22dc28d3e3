/* Local accounts; see account.h. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "account.h"
#include "cleanup.h"
#include "fsx.h"
#include "log.h"

#define USERADD "/usr/sbin/useradd"
#define USERADD_TIMEOUT_MS 30000
#define PASSWD_MAX (16u << 20)

bool account_name_is_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > 32)
		return false;
	if (!(name[0] == '_' || (name[0] >= 'a' && name[0] <= 'z')))
		return false;
	for (size_t i = 1; i < n; i++) {
		char c = name[i];
		bool okc = c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			   (c == '$' && i == n - 1);
		if (!okc)
			return false;
	}
	return true;
}

void account_done(struct account *a)
{
	free(a->name);
	free(a->home);
	*a = (struct account){ 0 };
}

int account_lookup(int rootfd, const char *name, struct account *ret)
{
	const char *base;
	_cleanup_close_ int dfd = fsx_open_parent_at(rootfd, "/etc/passwd", 0, 0, &base);
	if (dfd < 0)
		return dfd;
	_cleanup_close_ int fd = openat(dfd, base, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return negerrno();
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fsx_read_fd(fd, PASSWD_MAX, &data, &len);
	if (r < 0)
		return r;
	_cleanup_fclose_ FILE *f = fmemopen(data, len, "r");
	if (!f)
		return negerrno();
	struct passwd pw, *res;
	char buf[4096];
	while (fgetpwent_r(f, &pw, buf, sizeof(buf), &res) == 0) {
		if (strcmp(pw.pw_name, name) != 0)
			continue;
		struct account a = { .uid = pw.pw_uid, .gid = pw.pw_gid };
		a.name = strdup(pw.pw_name);
		a.home = strdup(pw.pw_dir);
		if (!a.name || !a.home) {
			account_done(&a);
			return -ENOMEM;
		}
		*ret = a;
		return 1;
	}
	return 0;
}

static int wait_deadline(pid_t pid, unsigned timeout_ms, int *ret_status)
{
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		int status;
		pid_t p = waitpid(pid, &status, WNOHANG);
		if (p == pid) {
			*ret_status = status;
			return 0;
		}
		if (p < 0 && errno != EINTR)
			return negerrno();
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
		if (ms > (long)timeout_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -ETIMEDOUT;
		}
		struct timespec d = { 0, 10 * 1000 * 1000 };
		nanosleep(&d, NULL);
	}
}

int account_create(const char *root, const char *name)
{
	_cleanup_free_ char *ufield = NULL;
	if (!account_name_is_valid(name))
		return log_error_errno(-EINVAL, "Refusing to create user '%s': not a valid user name", name);
	if (asprintf(&ufield, "USER=%s", name) < 0)
		return log_error_errno(-ENOMEM, "Out of memory");

	char a0[] = "useradd", a1[] = "-m", a2[] = "-U", a3[] = "--prefix", a4[] = "--";
	char e0[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin", e1[] = "LANG=C", e2[] = "LC_ALL=C";
	char *envp[] = { e0, e1, e2, NULL };
	_cleanup_free_ char *root_arg = strdup(root ? root : "/");
	_cleanup_free_ char *name_arg = strdup(name);
	if (!root_arg || !name_arg)
		return log_error_errno(-ENOMEM, "Out of memory");
	char *argv[8];
	size_t n = 0;
	argv[n++] = a0;
	argv[n++] = a1;
	argv[n++] = a2;
	if (strcmp(root_arg, "/") != 0) {
		argv[n++] = a3;
		argv[n++] = root_arg;
	}
	argv[n++] = a4;
	argv[n++] = name_arg;
	argv[n] = NULL;

	pid_t pid = fork();
	if (pid < 0) /* root_arg, name_arg: freed by _cleanup_free_ */
		/* cppcheck-suppress memleak */
		return log_error_errno(negerrno(), "Failed to fork for %s", USERADD);
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			if (devnull > STDERR_FILENO)
				close(devnull);
		}
		/* stdout/stderr stay: useradd's own message goes to our log. */
		syscall(SYS_close_range, 3U, ~0U, 0U);
		execve(USERADD, argv, envp);
		_exit(127);
	}
	int status = 0;
	int r = wait_deadline(pid, USERADD_TIMEOUT_MS, &status);
	if (r < 0)
		return log_fields_errno(LOG_ERR, r, LOG_FIELDS(ufield), "%s %s did not finish", USERADD, name);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return log_fields_errno(LOG_ERR, -EIO, LOG_FIELDS(ufield), "%s %s failed (%s %d)", USERADD, name,
					WIFEXITED(status) ? "exit status" : "signal",
					WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	log_fields(LOG_NOTICE, LOG_FIELDS(ufield), "Created user %s (home directory, private group)", name);
	return 0;
}

bool account_legacy_sudoers_is_ours(const struct stat *st, const char *content, size_t len, const char *name,
				    const char *spec)
{
	if (!S_ISREG(st->st_mode) || st->st_nlink != 1 || st->st_uid != 0 || (st->st_mode & 07777) != 0440)
		return false;
	size_t n = strlen(name), m = strlen(spec);
	return len == n + 1 + m + 1 && memcmp(content, name, n) == 0 && content[n] == ' ' &&
	       memcmp(content + n + 1, spec, m) == 0 && content[n + 1 + m] == '\n';
}

/* Removes <dir>/99-<name> when account_legacy_sudoers_is_ours(). Returns 1
 * removed, 0 nothing (absent, or not ours: a notice), -errno (logged). */
static int remove_legacy_sudoers(int dfd, const char *name, const char *spec)
{
	_cleanup_free_ char *base = NULL, *data = NULL;
	if (asprintf(&base, "99-%s", name) < 0)
		return log_error_errno(-ENOMEM, "Out of memory");
	_cleanup_close_ int fd = openat(dfd, base, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		return 0;
	struct stat st;
	size_t len = 0;
	bool ours = fd >= 0 && fstat(fd, &st) >= 0 && S_ISREG(st.st_mode) && fsx_read_fd(fd, 4096, &data, &len) >= 0 &&
		    account_legacy_sudoers_is_ours(&st, data, len, name, spec);
	if (!ours) {
		log_notice("%s/%s is not the entry cloud-config-exec wrote there: left alone", ACCOUNT_SUDOERS_DIR, base);
		return 0;
	}
	if (unlinkat(dfd, base, 0) < 0)
		return log_error_errno(negerrno(), "Cannot remove %s/%s", ACCOUNT_SUDOERS_DIR, base);
	(void)fsx_fsync_dir(dfd);
	log_notice("Removed %s/%s: the entry is %s/99-%s-user now, Gardener's name", ACCOUNT_SUDOERS_DIR, base,
		   ACCOUNT_SUDOERS_DIR, name);
	return 1;
}

int account_sudoers(int rootfd, const char *name, const char *spec)
{
	if (!spec || !*spec)
		return 0;
	if (!account_name_is_valid(name) || strpbrk(spec, "\n\r") || strlen(spec) > 1024)
		return log_error_errno(-EINVAL, "Refusing sudoers entry for '%s': invalid name or spec", name);
	_cleanup_free_ char *path = NULL, *content = NULL, *ffield = NULL;
	if (asprintf(&path, ACCOUNT_SUDOERS_DIR "/99-%s-user", name) < 0 || asprintf(&content, "%s %s\n", name, spec) < 0 ||
	    asprintf(&ffield, "FILE=%s", path) < 0)
		return log_error_errno(-ENOMEM, "Out of memory");
	const char *base;
	_cleanup_close_ int dfd = fsx_open_parent_at(rootfd, path, FSX_MKDIR, 0755, &base);
	if (dfd < 0)
		return log_fields_errno(LOG_ERR, dfd, LOG_FIELDS(ffield), "Cannot open the directory of %s", path);
	int r = fsx_write_atomic_at(dfd, base, content, strlen(content), 0440, 0, 0, FSX_SKIP_IF_SAME);
	if (r < 0)
		return log_fields_errno(LOG_ERR, r, LOG_FIELDS(ffield), "Failed to write %s", path);
	if (r > 0)
		log_fields(LOG_INFO, LOG_FIELDS(ffield), "Sudoers entry %s written", path);
	int k = remove_legacy_sudoers(dfd, name, spec);
	if (k < 0)
		return k;
	return r > 0 || k > 0;
}
