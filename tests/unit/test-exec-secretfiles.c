/* Unit tests for files from a Secret in the executor (issue 25, item 5):
 * bounds_check() takes secretFiles only for the OSC's own secretRef paths;
 * secretfiles_resolve() gives those files their bytes; the files step
 * writes a resolved one with the OSC's mode, leaves one without bytes as it
 * is on disk (and says so), and a change of the Secret's bytes is a write
 * while the reference alone decides the plan. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../cloud-config-exec/bounds.h"
#include "../../cloud-config-exec/files.h"
#include "../../cloud-config-exec/secretfiles.h"
#include "cleanup.h"
#include "desired.h"
#include "fsx.h"
#include "osc.h"
#include "scratch.h"

#define STATE "/var/lib/cloud-config-exec"

static const char osc_yaml[] = "spec:\n"
			       "  files:\n"
			       "  - path: /etc/inline\n"
			       "    content: {inline: {data: plain}}\n"
			       "  - path: /etc/pki/a.crt\n"
			       "    permissions: 0640\n"
			       "    content: {secretRef: {name: etcd-ca, dataKey: ca.crt}}\n"
			       "  - path: /etc/pki/b.key\n"
			       "    content: {secretRef: {name: etcd-ca, dataKey: ca.key}}\n"
			       "  - path: /etc/other-host\n"
			       "    hostName: elsewhere\n"
			       "    content: {secretRef: {name: other, dataKey: k}}\n";

static struct osc *parse(const char *yaml)
{
	struct osc *o = calloc(1, sizeof(*o));
	struct osc_error e = { 0 };
	assert_non_null(o);
	if (osc_parse_for_node(yaml, strlen(yaml), STATE, "node-1", o, &e) < 0)
		fail_msg("%s", e.message);
	return o;
}

static void osc_free(struct osc *o)
{
	osc_done(o);
	free(o);
}

static void bounds(void **state)
{
	(void)state;
	struct osc *o = parse(osc_yaml);
	assert_int_equal(o->n_files, 3); /* the other host's file is not ours */
	static char p_ok[] = "/etc/pki/a.crt", p_inline[] = "/etc/inline", p_other[] = "/etc/other-host",
		    p_none[] = "/etc/passwd";
	static unsigned char b[] = "x";
	struct desired_secret_file sf = { .path = p_ok, .data = b, .len = 1 };
	struct desired d = { .secret_files = &sf, .n_secret_files = 1 };
	struct bounds bd = { .exec_state_dir = STATE, .osc = o };
	char err[BOUNDS_ERROR_MAX];
	assert_int_equal(bounds_check(&d, &bd, err, sizeof(err)), 0);
	const char *refused[] = { p_inline, p_other, p_none };
	for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
		sf.path = (char *)(uintptr_t)refused[i];
		assert_int_equal(bounds_check(&d, &bd, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "secretFiles[0].path '"));
		assert_non_null(strstr(err, refused[i]));
		assert_non_null(strstr(err, "content.secretRef"));
	}
	/* Not the last applied OSC's: the one being applied decides. */
	bd.osc = NULL;
	bd.last = o;
	sf.path = p_ok;
	assert_int_equal(bounds_check(&d, &bd, err, sizeof(err)), -EPERM);
	osc_free(o);
}

static void resolve(void **state)
{
	(void)state;
	struct osc *o = parse(osc_yaml);
	assert_int_equal(secretfiles_resolve(o, NULL), 2);
	_cleanup_free_ char *msg = NULL;
	assert_int_equal(secretfiles_describe_missing(o, &msg), 0);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "file /etc/pki/a.crt (Secret kube-system/etcd-ca, key ca.crt), /etc/pki/b.key"));
	assert_non_null(strstr(msg, "not read by node-agent"));
	free(TAKE_PTR(msg));

	static char p[] = "/etc/pki/a.crt";
	static unsigned char b[] = { 'c', 0, 'a' };
	struct desired_secret_file sf = { .path = p, .data = b, .len = 3 };
	struct desired d = { .secret_files = &sf, .n_secret_files = 1 };
	assert_int_equal(secretfiles_resolve(o, &d), 1);
	const struct osc_file *f = osc_find_file(o, "/etc/pki/a.crt");
	assert_true(f->secret_resolved);
	assert_int_equal(f->content_len, 3);
	assert_memory_equal(f->content, b, 3);
	assert_int_equal(secretfiles_describe_missing(o, &msg), 0);
	assert_null(strstr(msg, "a.crt"));
	assert_non_null(strstr(msg, "/etc/pki/b.key"));
	osc_free(o);
}

/* A change of the Secret's bytes alone does not change the plan (the
 * reference is the same); the write says it. A new name or key does. */
static void plan(void **state)
{
	(void)state;
	struct osc *a = parse(osc_yaml);
	struct osc *b = parse(osc_yaml);
	static char p[] = "/etc/pki/a.crt";
	static unsigned char v2[] = "v2";
	struct desired_secret_file sf = { .path = p, .data = v2, .len = 2 };
	struct desired d = { .secret_files = &sf, .n_secret_files = 1 };
	assert_int_equal(secretfiles_resolve(b, &d), 1);
	struct files_plan fp = { 0 };
	assert_int_equal(files_plan_compute(a, b, NULL, &fp), 0);
	assert_null(fp.changed[0]);
	files_plan_done(&fp);
	struct osc *c = parse("spec:\n  files:\n  - path: /etc/pki/a.crt\n    permissions: 0640\n"
			      "    content: {secretRef: {name: etcd-ca, dataKey: other.crt}}\n");
	assert_int_equal(files_plan_compute(a, c, NULL, &fp), 0);
	bool found = false;
	for (char **q = fp.changed; *q; q++)
		found = found || strcmp(*q, "/etc/pki/a.crt") == 0;
	assert_true(found);
	files_plan_done(&fp);
	osc_free(a);
	osc_free(b);
	osc_free(c);
}

static void read_rel(int rootfd, const char *rel, char *buf, size_t size, mode_t *mode)
{
	int fd = openat(rootfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	assert_true(fd >= 0);
	ssize_t n = read(fd, buf, size - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	*mode = st.st_mode & 07777;
	close(fd);
}

static void apply(void **state)
{
	struct scratch *s = *state;
	if (geteuid() != 0)
		skip(); /* files are written root:root */
	assert_int_equal(mkdirat(s->fd, "state", 0755), 0);
	int statefd = openat(s->fd, "state", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(statefd >= 0);
	struct state st = { 0 };
	assert_int_equal(state_load(statefd, &st), 0);

	/* First: a.crt read, b.key not: a.crt written 0640, b.key left alone. */
	struct osc *o = parse(osc_yaml);
	static char p[] = "/etc/pki/a.crt";
	static unsigned char v1[] = "v1", v2[] = "v2";
	struct desired_secret_file sf = { .path = p, .data = v1, .len = 2 };
	struct desired d = { .secret_files = &sf, .n_secret_files = 1 };
	assert_int_equal(secretfiles_resolve(o, &d), 1);
	struct files_plan fp = { 0 };
	assert_int_equal(files_plan_compute(NULL, o, st.owned_files, &fp), 0);
	char **written = NULL;
	assert_int_equal(files_apply(s->fd, o, &fp, &st, statefd, &written), 0);
	files_plan_done(&fp);
	assert_string_equal(written[0], "/etc/inline");
	assert_string_equal(written[1], "/etc/pki/a.crt");
	assert_null(written[2]);
	strv_free(written);
	char buf[64];
	mode_t mode;
	read_rel(s->fd, "etc/pki/a.crt", buf, sizeof(buf), &mode);
	assert_string_equal(buf, "v1");
	assert_int_equal(mode, 0640);
	assert_int_equal(faccessat(s->fd, "etc/pki/b.key", F_OK, AT_SYMLINK_NOFOLLOW), -1);

	/* Then the Secret is gone: nothing is written, v1 stays. */
	struct osc *o2 = parse(osc_yaml);
	assert_int_equal(secretfiles_resolve(o2, NULL), 2);
	assert_int_equal(files_plan_compute(o, o2, st.owned_files, &fp), 0);
	assert_int_equal(files_apply(s->fd, o2, &fp, &st, statefd, &written), 0);
	files_plan_done(&fp);
	assert_null(written[0]);
	strv_free(written);
	read_rel(s->fd, "etc/pki/a.crt", buf, sizeof(buf), &mode);
	assert_string_equal(buf, "v1");

	/* Then it changes: written again. */
	struct osc *o3 = parse(osc_yaml);
	sf.data = v2;
	assert_int_equal(secretfiles_resolve(o3, &d), 1);
	assert_int_equal(files_plan_compute(o2, o3, st.owned_files, &fp), 0);
	assert_int_equal(files_apply(s->fd, o3, &fp, &st, statefd, &written), 0);
	files_plan_done(&fp);
	assert_string_equal(written[0], "/etc/pki/a.crt");
	strv_free(written);
	read_rel(s->fd, "etc/pki/a.crt", buf, sizeof(buf), &mode);
	assert_string_equal(buf, "v2");
	state_done(&st);
	close(statefd);
	osc_free(o);
	osc_free(o2);
	osc_free(o3);
}

static int setup(void **state)
{
	return scratch_setup(state, "exec-secretfiles");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bounds),
		cmocka_unit_test(resolve),
		cmocka_unit_test(plan),
		cmocka_unit_test_setup_teardown(apply, setup, scratch_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
