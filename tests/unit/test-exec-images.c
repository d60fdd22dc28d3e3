/* Unit tests for the images step's pull unit name: the reference escaped
 * exactly as systemd's unit_name_escape() does (the expected strings are
 * systemd-escape's output), so the unit's %I gives the reference back;
 * refusals and the length limit; when a file's identity may be trusted
 * (the clock past its ctime's tick, 2 s for whole-second stamps). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../../cloud-config-exec/files.h"
#include "../../cloud-config-exec/images.h"

static void escapes_like_systemd(void **state)
{
	(void)state;
	char u[IMAGES_UNIT_NAME_MAX + 1];
	assert_int_equal(images_pull_unit_name("127.0.0.1:5000/kubelet:v1", u, sizeof(u)), 0);
	assert_string_equal(u, "cloud-config-exec-pull@127.0.0.1:5000-kubelet:v1.service");
	/* systemd-escape 'europe-docker.pkg.dev/gardener-project/releases/hyperkube@sha256:ab' */
	assert_int_equal(images_pull_unit_name("europe-docker.pkg.dev/gardener-project/releases/hyperkube@sha256:ab",
					       u, sizeof(u)), 0);
	assert_string_equal(u, "cloud-config-exec-pull@europe\\x2ddocker.pkg.dev-gardener\\x2dproject-releases-"
			       "hyperkube\\x40sha256:ab.service");
	/* a leading dot is escaped, later ones are not */
	assert_int_equal(images_pull_unit_name(".a.b", u, sizeof(u)), 0);
	assert_string_equal(u, "cloud-config-exec-pull@\\x2ea.b.service");
}

static void refusals(void **state)
{
	(void)state;
	char u[IMAGES_UNIT_NAME_MAX + 1];
	assert_int_equal(images_pull_unit_name("", u, sizeof(u)), -EINVAL);
	assert_int_equal(images_pull_unit_name("-x", u, sizeof(u)), -EINVAL);
	assert_int_equal(images_pull_unit_name("a b", u, sizeof(u)), -EINVAL);
	assert_int_equal(images_pull_unit_name("a\\b", u, sizeof(u)), -EINVAL);
	assert_int_equal(images_pull_unit_name("a\"b", u, sizeof(u)), -EINVAL);
	assert_int_equal(images_pull_unit_name("a\nb", u, sizeof(u)), -EINVAL);
	/* outside the reference grammar: "$X" would be expanded by systemd in ExecStart= */
	assert_int_equal(images_pull_unit_name("registry/x:${HOME}", u, sizeof(u)), -EINVAL);
	assert_int_equal(images_pull_unit_name("registry/x:$HOME", u, sizeof(u)), -EINVAL);
	assert_int_equal(images_pull_unit_name("registry/x:%i", u, sizeof(u)), -EINVAL);
	assert_int_equal(images_pull_unit_name("registry/x;y", u, sizeof(u)), -EINVAL);
	/* 255 bytes at most: prefix (23) + 224 + ".service" (8) fits, one more does not */
	char ref[300];
	memset(ref, 'a', 224);
	ref[224] = '\0';
	assert_int_equal(images_pull_unit_name(ref, u, sizeof(u)), 0);
	assert_int_equal(strlen(u), 255);
	ref[224] = 'a';
	ref[225] = '\0';
	assert_int_equal(images_pull_unit_name(ref, u, sizeof(u)), -ENAMETOOLONG);
	/* each "-" costs four bytes */
	memset(ref, '-', 60);
	ref[0] = 'a';
	ref[60] = '\0';
	assert_int_equal(images_pull_unit_name(ref, u, sizeof(u)), -ENAMETOOLONG);
	/* a small buffer is refused, not overrun */
	char small[30];
	assert_int_equal(images_pull_unit_name("registry/kubelet:v1", small, sizeof(small)), -ENAMETOOLONG);
}

static void superseded(void **state)
{
	(void)state;
	assert_true(files_image_superseded("/opt/bin/gardener-node-agent"));
	assert_false(files_image_superseded("/opt/bin/kubelet"));
}

static struct stat stamped(time_t c, long cns, long mns)
{
	struct stat st = { 0 };
	st.st_ctim = (struct timespec){ c, cns };
	st.st_mtim = (struct timespec){ c - 10, mns };
	return st;
}

static void identity_settled(void **state)
{
	(void)state;
	/* nanosecond stamps: trusted once the coarse clock is past ctime */
	struct stat st = stamped(1000, 500000000, 7);
	assert_false(images_identity_settled(&st, &(struct timespec){ 1000, 500000000 }));
	assert_false(images_identity_settled(&st, &(struct timespec){ 1000, 400000000 }));
	assert_false(images_identity_settled(&st, &(struct timespec){ 999, 900000000 }));
	assert_true(images_identity_settled(&st, &(struct timespec){ 1000, 500000001 }));
	assert_true(images_identity_settled(&st, &(struct timespec){ 1001, 0 }));
	/* whole-second stamps (ext4 with 128-byte inodes, FAT's 2 s): a write
	 * later in the same second, or the next on FAT, gets the same stamp */
	st = stamped(1000, 0, 0);
	assert_false(images_identity_settled(&st, &(struct timespec){ 1000, 900000000 }));
	assert_false(images_identity_settled(&st, &(struct timespec){ 1001, 999999999 }));
	assert_true(images_identity_settled(&st, &(struct timespec){ 1002, 0 }));
	/* one of the two with nanoseconds: a fine-grained file system */
	st = stamped(1000, 0, 3);
	assert_true(images_identity_settled(&st, &(struct timespec){ 1000, 1 }));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(escapes_like_systemd),
		cmocka_unit_test(refusals),
		cmocka_unit_test(superseded),
		cmocka_unit_test(identity_settled),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
