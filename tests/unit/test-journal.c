/* Unit tests for lib/base/journal.c: the datagrams it sends are the journal's
 * native protocol, byte for byte, including the binary form for values with
 * a newline; malformed field names are refused before anything is sent. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "journal.h"

struct sink {
	char dir[64];
	char path[96];
	int fd;
};

static int setup(void **state)
{
	struct sink *s = calloc(1, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "/tmp/na-test-journal.XXXXXX");
	if (!mkdtemp(s->dir))
		return -1;
	snprintf(s->path, sizeof(s->path), "%s/socket", s->dir);
	s->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, s->path, strlen(s->path) + 1);
	*state = s;
	return s->fd < 0 || bind(s->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	struct sink *s = *state;
	close(s->fd);
	unlink(s->path);
	rmdir(s->dir);
	free(s);
	return 0;
}

#define IOV(s) ((struct iovec){ (void *)(uintptr_t)(s), sizeof(s) - 1 })

/* The next datagram on the sink is exactly the len bytes of want. */
static void assert_received(const struct sink *s, const char *want, size_t len)
{
	char buf[512];
	ssize_t n = recv(s->fd, buf, sizeof(buf), 0);
	assert_int_equal(n, len);
	assert_memory_equal(buf, want, len);
}

static void plain_fields(void **state)
{
	struct sink *s = *state;
	_cleanup_close_ int fd = journal_open();
	assert_true(fd >= 0);
	struct iovec f[] = { IOV("MESSAGE=served 1 key"), IOV("PRIORITY=6"), IOV("USER=alice") };
	assert_int_equal(journal_sendv_to(fd, s->path, f, ELEMENTSOF(f)), 0);
	static const char want[] = "MESSAGE=served 1 key\nPRIORITY=6\nUSER=alice\n";
	assert_received(s, want, sizeof(want) - 1);
}

static void newline_uses_binary_form(void **state)
{
	struct sink *s = *state;
	_cleanup_close_ int fd = journal_open();
	struct iovec f[] = { IOV("MESSAGE=a\nb"), IOV("X=") };
	assert_int_equal(journal_sendv_to(fd, s->path, f, ELEMENTSOF(f)), 0);
	/* "MESSAGE\n" le64(3) "a\nb" "\n" "X=\n" */
	static const char want[] = "MESSAGE\n\x03\0\0\0\0\0\0\0a\nb\nX=\n";
	assert_received(s, want, sizeof(want) - 1);
}

static void bad_fields_are_refused(void **state)
{
	struct sink *s = *state;
	_cleanup_close_ int fd = journal_open();
	static const char *const bad[] = { "novalue", "=x", "_PID=1", "lower=x", "1X=y", "A B=x", "A\n=x" };
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct iovec f[] = { IOV("MESSAGE=m"), { (void *)(uintptr_t)bad[i], strlen(bad[i]) } };
		assert_int_equal(journal_sendv_to(fd, s->path, f, ELEMENTSOF(f)), -EINVAL);
	}
	/* Nothing was sent. */
	char buf[16];
	assert_int_equal(recv(s->fd, buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	/* No journal listening: an error, not a block or a crash. */
	struct iovec f[] = { IOV("MESSAGE=m") };
	assert_int_equal(journal_sendv_to(fd, "/tmp/na-test-journal-none/socket", f, 1), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(plain_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(newline_uses_binary_form, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_fields_are_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
