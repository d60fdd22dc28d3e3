/* A scratch directory for the unit tests that need a file system: a cmocka
 * setup that makes /tmp/na-test-<name>.XXXXXX and opens it, and the teardown
 * that removes it with everything the test left in it. Header-only (static
 * inline): every test program links on its own. */
#ifndef NA_TEST_SCRATCH_H
#define NA_TEST_SCRATCH_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

struct scratch {
	char path[64];
	int fd; /* the directory, O_RDONLY | O_DIRECTORY */
};

/* For a test file's setup: static int setup(void **state) { return
 * scratch_setup(state, "fsx"); }. *state becomes the struct scratch. */
static inline int scratch_setup(void **state, const char *name)
{
	struct scratch *s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	snprintf(s->path, sizeof(s->path), "/tmp/na-test-%s.XXXXXX", name);
	if (!mkdtemp(s->path)) {
		free(s);
		return -1;
	}
	s->fd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*state = s;
	return s->fd < 0 ? -1 : 0;
}

static inline int scratch_teardown(void **state)
{
	struct scratch *s = *state;
	close(s->fd);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/rm", "rm", "-rf", s->path, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	free(s);
	return 0;
}

#endif
