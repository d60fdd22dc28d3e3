/* sd_notify without libsystemd; see notify.h. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "notify.h"

int notify_open(struct notify *n)
{
	*n = (struct notify){ .fd = -1 };
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || !*path)
		return 0;
	size_t len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(n->addr.sun_path))
		return -EINVAL;
	n->addr.sun_family = AF_UNIX;
	memcpy(n->addr.sun_path, path, len);
	if (path[0] == '@')
		n->addr.sun_path[0] = '\0'; /* abstract: no terminating NUL counted */
	n->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
	n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	return n->fd < 0 ? negerrno() : 0;
}

int notify_send(const struct notify *n, const char *msg)
{
	if (n->fd < 0)
		return 0;
	ssize_t k = sendto(n->fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT, (const struct sockaddr *)&n->addr,
			   n->addr_len);
	return k < 0 ? negerrno() : 0;
}

int notify_reloading(const struct notify *n)
{
	struct timespec ts;
	char msg[64];
	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return negerrno();
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000u);
	return notify_send(n, msg);
}

void notify_close(struct notify *n)
{
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
}

static uint64_t parse_u64(const char *s)
{
	if (!s || *s < '0' || *s > '9')
		return 0;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	return errno || *end ? 0 : (uint64_t)v;
}

uint64_t notify_watchdog_usec(void)
{
	const char *pid = getenv("WATCHDOG_PID");
	if (pid && parse_u64(pid) != (uint64_t)getpid())
		return 0;
	return parse_u64(getenv("WATCHDOG_USEC"));
}
