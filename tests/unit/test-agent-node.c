/* Unit tests for agent/node.c: the restart annotation's unit list and the
 * SSH host keys published on the Node (validated, comments dropped, weak or
 * malformed keys and symlinks skipped). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../agent/node.h"
#include "cleanup.h"
#include "fsx.h"

static void restart_lists(void **state)
{
	static const struct {
		const char *in;
		const char *out; /* units joined by " " */
	} good[] = {
		{ "kubelet", "kubelet.service" },
		{ "kubelet,containerd.service", "kubelet.service containerd.service" },
		{ " kubelet , docker.socket ,", "kubelet.service docker.socket" },
		{ "a,a.service,a", "a.service" },
		{ "getty@tty1", "getty@tty1.service" },
		{ "var-lib.mount", "var-lib.mount" },
	};
	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		char **units = NULL;
		char bad[64];
		assert_int_equal(node_parse_restart(good[i].in, &units, bad, sizeof(bad)), 0);
		char joined[256] = "";
		for (char **u = units; *u; u++)
			snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s", u == units ? "" : " ", *u);
		assert_string_equal(joined, good[i].out);
		strv_free(units);
	}

	static const struct {
		const char *in;
		int r;
		const char *bad;
	} bad[] = {
		{ "", -ENODATA, "" },
		{ " , ,", -ENODATA, "" },
		{ "kubelet,../../etc/passwd", -EINVAL, "../../etc/passwd" },
		{ "a b", -EINVAL, "a b" },
		{ "kubelet;reboot", -EINVAL, "kubelet;reboot" },
		{ "@x", -EINVAL, "@x" },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		char **units = NULL;
		char why[64] = "";
		int r = node_parse_restart(bad[i].in, &units, why, sizeof(why));
		if (r != bad[i].r || strcmp(why, bad[i].bad) != 0)
			fail_msg("case %zu '%s': r=%d bad='%s'", i, bad[i].in, r, why);
		assert_null(units);
	}

	/* More units than the desired state may carry. */
	char many[2048] = "";
	for (int i = 0; i < 70; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "u%d,", i);
	char **units = NULL;
	char why[64];
	assert_int_equal(node_parse_restart(many, &units, why, sizeof(why)), -E2BIG);
}

static void restart_ids(void **state)
{
	char a[NODE_RESTART_ID_MAX], b[NODE_RESTART_ID_MAX], c[NODE_RESTART_ID_MAX];
	node_restart_id("203", "kubelet", a);
	node_restart_id("203", "kubelet", b);
	node_restart_id("204", "kubelet", c);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	assert_true(strncmp(a, "203-", 4) == 0);
	assert_int_equal(strlen(a), 4 + 16);
}

static void write_file(int dirfd, const char *name, const char *text)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void host_keys(void **state)
{
	char root[] = "/tmp/na-test-node.XXXXXX";
	assert_non_null(mkdtemp(root));
	int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);
	char *keys = (char *)1;
	unsigned skipped = 99;

	/* No /etc/ssh at all: nothing to publish. */
	assert_int_equal(node_read_host_keys(rfd, 2048, &keys, &skipped), 0);
	assert_null(keys);
	assert_int_equal(skipped, 0);

	int ssh = fsx_open_dir_at(rfd, "/etc/ssh", FSX_MKDIR, 0755);
	assert_true(ssh >= 0);
	write_file(ssh, "ssh_host_ed25519_key.pub", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEfaNsf+fMNl5HKYD+Z2Ql1OnDkHeParb7myRKG/qzfv root@worker-1\n");
	write_file(ssh, "ssh_host_ecdsa_key.pub", "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBAUmgMvginO5WzghtDJnxcEqk8tq/bLcr5gTl6SqhoHAv9I1baOQzr1CBJhpkcVyWjWi/DRh5q+h6O2+g3N5leE= root@x\n");
	/* RSA-1024: below rsaMinBits, not published. */
	write_file(ssh, "ssh_host_rsa_key.pub", "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDc0E1Hr0PySDRs8eV2MTF19r9VjzWdLQTc/WKio5Nf7MjdSbjUPpphtSscmKslf7udfbSsl0yHTpK8p5VoxZJh29BDhCxJGxvxqfUdVLBo6tREb2Wz0LkPAFJOdeBJaUCsX3B8iZMfwaloW5dXiy1dg9eK5wXVYu4cT4qegBPF2Q== root@x\n");
	assert_int_equal(node_read_host_keys(rfd, 2048, &keys, &skipped), 0);
	assert_string_equal(keys, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEfaNsf+fMNl5HKYD+Z2Ql1OnDkHeParb7myRKG/qzfv\n" "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBAUmgMvginO5WzghtDJnxcEqk8tq/bLcr5gTl6SqhoHAv9I1baOQzr1CBJhpkcVyWjWi/DRh5q+h6O2+g3N5leE=");
	assert_int_equal(skipped, 1);
	free(keys);

	/* An injection attempt and a symlink are skipped too. */
	write_file(ssh, "ssh_host_ecdsa_key.pub", "ssh-ed25519 AAAA\nssh-rsa AAAA\n");
	unlinkat(ssh, "ssh_host_rsa_key.pub", 0);
	assert_int_equal(symlinkat("/etc/passwd", ssh, "ssh_host_rsa_key.pub"), 0);
	assert_int_equal(node_read_host_keys(rfd, 2048, &keys, &skipped), 0);
	assert_string_equal(keys, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEfaNsf+fMNl5HKYD+Z2Ql1OnDkHeParb7myRKG/qzfv");
	assert_int_equal(skipped, 2);
	free(keys);

	close(ssh);
	close(rfd);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/rm", "rm", "-rf", root, (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(restart_lists),
		cmocka_unit_test(restart_ids),
		cmocka_unit_test(host_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
