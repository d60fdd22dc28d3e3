/* Unit tests for cloud-config-exec/ipupdate.c, step by step on a scratch
 * root without systemd: the running OS version (and the os-release symlink
 * fallback), the record in state.json, classification once per checksum
 * and the OS kind cleared once the node runs the version, the CPU manager
 * state removed once, the OS update command's failure reasons, a pending
 * reboot in the same boot vs a rolled-back update after another, and the
 * kubelet re-bootstrap after a CA rotation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "fsx.h"
#include "../../cloud-config-exec/ipupdate.h"
#include "scratch.h"
#include "../../cloud-config-exec/state.h"

static int setup(void **state)
{
	return scratch_setup(state, "ipupdate");
}

static void put(int dirfd, const char *path, const char *content)
{
	const char *name;
	_cleanup_close_ int d = fsx_open_parent_at(dirfd, path, FSX_MKDIR, 0755, &name);
	assert_true(d >= 0);
	assert_true(fsx_write_atomic_at(d, name, content, strlen(content), 0644, 0, 0, 0) >= 0);
}

static void make_osc(const char *os, const char *ca_time, bool with_gna, struct osc *ret)
{
	char doc[4096];
	snprintf(doc, sizeof(doc),
		 "spec:\n"
		 "  inPlaceUpdates:\n"
		 "    operatingSystemVersion: \"%s\"\n"
		 "    kubelet: \"1.31.2\"\n"
		 "    credentialsRotation:\n"
		 "      certificateAuthorities:\n"
		 "        lastInitiationTime: \"%s\"\n"
		 "  files:\n"
		 "  - path: /var/lib/kubelet/config/kubelet\n"
		 "    content:\n"
		 "      inline:\n"
		 "        data: \"cpuManagerPolicy: none\\n\"\n"
		 "%s"
		 "status:\n"
		 "  inPlaceUpdates:\n"
		 "    osUpdate:\n"
		 "      command: /bin/false\n",
		 os, ca_time,
		 with_gna ? "  - path: /var/lib/gardener-node-agent/config.yaml\n"
			    "    content:\n"
			    "      inline:\n"
			    "        data: \"apiVersion: nodeagent.config.gardener.cloud/v1alpha1\\nkind: NodeAgentConfiguration\\n"
			    "apiServer:\\n  caFile: /var/lib/gardener-node-agent/cluster-ca.crt\\n"
			    "  server: https://api.shoot.example.com\\n\"\n"
			  : "");
	struct osc_error err;
	if (osc_parse(doc, strlen(doc), NULL, ret, &err) < 0)
		fail_msg("%s", err.message);
}

static const char SUM1[] = "1111111111111111111111111111111111111111111111111111111111111111";

static void os_version(void **state)
{
	struct scratch *s = *state;
	char v[INPLACE_VERSION_MAX + 1];
	assert_int_equal(ipu_running_os_version(s->fd, v), -ENOENT);
	put(s->fd, "usr/lib/os-release", "PRETTY_NAME=\"Garden Linux 1592.4\"\n");
	assert_int_equal(mkdirat(s->fd, "etc", 0755), 0);
	assert_int_equal(symlinkat("../usr/lib/os-release", s->fd, "etc/os-release"), 0);
	assert_int_equal(ipu_running_os_version(s->fd, v), 0);
	assert_string_equal(v, "1592.4");
	assert_int_equal(unlinkat(s->fd, "etc/os-release", 0), 0);
	put(s->fd, "etc/os-release", "PRETTY_NAME=\"Garden Linux 1592.5\"\n");
	assert_int_equal(ipu_running_os_version(s->fd, v), 0);
	assert_string_equal(v, "1592.5");
}

static void record_round_trip(void **state)
{
	struct state st = { 0 };
	memcpy(st.inplace_checksum, SUM1, 65);
	st.inplace_kinds = INPLACE_OS_VERSION | INPLACE_SA_KEY_ROTATION;
	st.inplace_remaining = INPLACE_OS_VERSION;
	st.inplace_steps = IPU_STEP_CPU_STATE_REMOVED;
	st.inplace_state = INPLACE_STATE_RUNNING;
	st.inplace_os_attempted = strdup("1592.2");
	strcpy(st.inplace_boot_id, "b00t");
	_cleanup_free_ char *text = NULL;
	size_t len;
	assert_int_equal(state_format(&st, &text, &len), 0);
	struct state p = { 0 };
	assert_int_equal(state_parse(text, len, &p), 0);
	assert_string_equal(p.inplace_checksum, SUM1);
	assert_int_equal(p.inplace_kinds, st.inplace_kinds);
	assert_int_equal(p.inplace_remaining, INPLACE_OS_VERSION);
	assert_int_equal(p.inplace_steps, IPU_STEP_CPU_STATE_REMOVED);
	assert_int_equal(p.inplace_state, INPLACE_STATE_RUNNING);
	assert_string_equal(p.inplace_os_attempted, "1592.2");
	assert_string_equal(p.inplace_boot_id, "b00t");
	state_done(&p);
	state_done(&st);
}

static void begin(void **state)
{
	struct scratch *s = *state;
	put(s->fd, "etc/os-release", "PRETTY_NAME=\"Garden Linux 1592.1\"\n");
	struct osc old = {}, new = {};
	make_osc("1592.1", "2026-01-01T00:00:00Z", false, &old);
	make_osc("1592.2", "2026-01-01T00:00:00Z", false, &new);
	struct state st = { 0 };
	char err[INPLACE_ERROR_MAX];
	assert_int_equal(ipu_begin(s->fd, s->fd, &st, &old, &new, SUM1, err), 0);
	assert_int_equal(st.inplace_kinds, INPLACE_OS_VERSION);
	assert_int_equal(st.inplace_remaining, INPLACE_OS_VERSION);
	/* Saved: a fresh load has it. */
	struct state l = { 0 };
	assert_int_equal(state_load(s->fd, &l), 0);
	assert_string_equal(l.inplace_checksum, SUM1);
	state_done(&l);
	/* Same checksum: taken from the record, not classified again (the
	 * old OSC no longer matters); the node now runs 1592.2: done. */
	put(s->fd, "etc/os-release", "PRETTY_NAME=\"Garden Linux 1592.2\"\n");
	assert_int_equal(ipu_begin(s->fd, s->fd, &st, NULL, &new, SUM1, err), 0);
	assert_int_equal(st.inplace_kinds, INPLACE_OS_VERSION);
	assert_int_equal(st.inplace_remaining, 0);
	/* Another OSC without in-place kinds clears the record. */
	assert_int_equal(ipu_begin(s->fd, s->fd, &st, &new, &new, "2222222222222222222222222222222222222222222222222222222222222222", err), 0);
	assert_string_equal(st.inplace_checksum, "");
	osc_done(&old);
	osc_done(&new);
	state_done(&st);
}

static void cpu_state_once(void **state)
{
	struct scratch *s = *state;
	struct state st = { 0 };
	memcpy(st.inplace_checksum, SUM1, 65);
	st.inplace_kinds = st.inplace_remaining = INPLACE_KUBELET_CPU_MANAGER_POLICY;
	put(s->fd, IPU_CPU_MANAGER_STATE, "{}");
	assert_int_equal(ipu_before_units(s->fd, s->fd, &st), 0);
	assert_int_equal(faccessat(s->fd, IPU_CPU_MANAGER_STATE, F_OK, 0), -1);
	assert_true(st.inplace_steps & IPU_STEP_CPU_STATE_REMOVED);
	/* The kubelet wrote it again with the new policy: never removed twice. */
	put(s->fd, IPU_CPU_MANAGER_STATE, "{\"policyName\":\"static\"}");
	assert_int_equal(ipu_before_units(s->fd, s->fd, &st), 0);
	assert_int_equal(faccessat(s->fd, IPU_CPU_MANAGER_STATE, F_OK, 0), 0);
	state_done(&st);
}

static void command_reasons(void **state)
{
	(void)state;
	char why[1024];
	assert_int_equal(ipu_run_os_update("", NULL, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "update command is not provided in OSC, cannot proceed with in-place update");
	assert_int_equal(ipu_run_os_update("no-such-update-tool", NULL, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "executable file not found in $PATH"));
	char a0[] = "-c", a1[] = "echo 'invalid arguments: --foo'; exit 3";
	char *args[] = { a0, a1, NULL };
	assert_int_equal(ipu_run_os_update("/bin/sh", args, why, sizeof(why)), -EIO);
	assert_string_equal(why, "non-retriable error detected: exit status 3, output: invalid arguments: --foo ");
	char b1[] = "exit 0";
	char *ok[] = { a0, b1, NULL };
	assert_int_equal(ipu_run_os_update("sh", ok, why, sizeof(why)), 0);
}

static void pending_then_rolled_back(void **state)
{
	struct scratch *s = *state;
	struct config cfg = { 0 };
	struct apply_ctx c = { .root = s->path, .rootfd = s->fd, .cfg = &cfg };
	put(s->fd, "etc/os-release", "PRETTY_NAME=\"Garden Linux 1592.1\"\n");
	put(s->fd, "proc/sys/kernel/random/boot_id", "boot-a\n");
	struct osc new = {};
	make_osc("1592.2", "2026-01-01T00:00:00Z", false, &new);
	struct state st = { 0 };
	memcpy(st.inplace_checksum, SUM1, 65);
	st.inplace_kinds = st.inplace_remaining = INPLACE_OS_VERSION;
	/* The command (/bin/false) fails: failed with the reason, recorded. */
	assert_int_equal(ipu_finish(&c, s->fd, &st, &new, NULL, NULL), -EIO);
	assert_int_equal(st.inplace_state, INPLACE_STATE_FAILED);
	assert_string_equal(st.inplace_reason, "failed to execute OS update command: no specific error detected: exit status 1, output: ");
	assert_string_equal(st.inplace_os_attempted, "1592.2");
	assert_string_equal(st.inplace_boot_id, "boot-a");
	/* Same boot, attempt recorded: pending (a command that rebooted the
	 * node before it returned leaves exactly this). */
	st.inplace_state = INPLACE_STATE_RUNNING;
	assert_int_equal(ipu_finish(&c, s->fd, &st, &new, NULL, NULL), 1);
	/* Another boot, still the old version: rolled back. */
	put(s->fd, "proc/sys/kernel/random/boot_id", "boot-b\n");
	assert_int_equal(ipu_finish(&c, s->fd, &st, &new, NULL, NULL), -EIO);
	assert_string_equal(st.inplace_reason, "OS update might have failed and rolled back to the previous version. "
					       "Desired version: \"1592.2\", Current version: \"1592.1\"");
	osc_done(&new);
	state_done(&st);
}

static void rebootstrap(void **state)
{
	struct scratch *s = *state;
	struct config cfg = { 0 };
	struct apply_ctx c = { .root = s->path, .rootfd = s->fd, .cfg = &cfg };
	put(s->fd, "var/lib/kubelet/kubeconfig-real", "apiVersion: v1\nkind: Config\n");
	put(s->fd, "var/lib/kubelet/pki/kubelet-client-2026.pem", "CERT AND KEY\n");
	assert_int_equal(symlinkat("/var/lib/kubelet/pki/kubelet-client-2026.pem", s->fd,
				   "var/lib/kubelet/pki/kubelet-client-current.pem"),
			 0);
	struct osc new = {};
	make_osc("1592.1", "2026-02-01T00:00:00Z", true, &new);
	struct state st = { 0 };
	memcpy(st.inplace_checksum, SUM1, 65);
	st.inplace_kinds = st.inplace_remaining = INPLACE_KUBELET_CA_ROTATION | INPLACE_NODE_AGENT_CA_ROTATION;
	assert_int_equal(ipu_finish(&c, s->fd, &st, &new, NULL, NULL), 0);
	assert_int_equal(st.inplace_state, INPLACE_STATE_SUCCESSFUL);
	assert_int_equal(st.inplace_remaining, 0);
	assert_true(st.inplace_steps & IPU_STEP_KUBELET_REBOOTSTRAPPED);
	_cleanup_free_ char *kc = NULL;
	size_t len;
	assert_int_equal(fsx_read_at(s->fd, "var/lib/kubelet/kubeconfig-bootstrap", 1 << 20, &kc, &len), 0);
	assert_non_null(strstr(kc, "certificate-authority: \"/var/lib/gardener-node-agent/cluster-ca.crt\""));
	assert_non_null(strstr(kc, "server: \"https://api.shoot.example.com\""));
	assert_non_null(strstr(kc, "client-certificate-data: Q0VSVCBBTkQgS0VZCg=="));
	assert_int_equal(faccessat(s->fd, "var/lib/kubelet/kubeconfig-real", F_OK, 0), -1);
	assert_int_equal(faccessat(s->fd, "var/lib/kubelet/pki", F_OK, 0), -1);
	struct stat sb;
	assert_int_equal(fstatat(s->fd, "var/lib/kubelet/kubeconfig-bootstrap", &sb, 0), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	osc_done(&new);
	state_done(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(os_version, setup, scratch_teardown),
		cmocka_unit_test(record_round_trip),
		cmocka_unit_test_setup_teardown(begin, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(cpu_state_once, setup, scratch_teardown),
		cmocka_unit_test(command_reasons),
		cmocka_unit_test_setup_teardown(pending_then_rolled_back, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(rebootstrap, setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
