/* The hostname duty; see hostname.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "hostname.h"
#include "log.h"

void hostname_normalize(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

static int get_uname(char *buf, size_t size)
{
	struct utsname u;
	if (uname(&u) < 0)
		return -errno;
	if (snprintf(buf, size, "%s", u.nodename) >= (int)size)
		return -ENAMETOOLONG;
	return 0;
}

/* Reads the name into h->name; a name different from a known one is a
 * change. */
static void hostname_read(struct hostname *h, uint64_t now)
{
	char buf[HOST_NAME_MAX + 1] = "";
	int r = h->get(buf, sizeof(buf));
	if (h->fd < 0)
		h->next_at = now + HOSTNAME_CHECK_MS;
	if (r < 0) {
		log_debug_errno(r, "cannot read the hostname");
		return;
	}
	hostname_normalize(buf);
	if (!*buf || strcmp(buf, h->name) == 0)
		return;
	if (h->name[0] && !h->changed) {
		/* previous keeps the name the owner followed, across two
		 * changes before it takes them. */
		memcpy(h->previous, h->name, sizeof(h->previous));
		h->changed = true;
	}
	memcpy(h->name, buf, sizeof(h->name));
}

int hostname_init(struct hostname *h, bool watch, uint64_t now)
{
	int (*get)(char *, size_t) = h->get ? h->get : get_uname;
	*h = (struct hostname){ .fd = -1, .get = get };
	if (watch) {
		h->fd = open(HOSTNAME_PROC_PATH, O_RDONLY | O_CLOEXEC);
		if (h->fd < 0)
			log_debug_errno(-errno, "cannot open %s: checking the hostname every %u s", HOSTNAME_PROC_PATH,
					HOSTNAME_CHECK_MS / 1000u);
		else
			log_debug("following the hostname through poll() on %s", HOSTNAME_PROC_PATH);
	}
	/* The name is read after the open: a change in between wakes poll(). */
	hostname_read(h, now);
	if (!h->name[0])
		return log_warning_errno(-ENOENT, "cannot read the hostname; trying again every %u s",
					 HOSTNAME_CHECK_MS / 1000u);
	return 0;
}

void hostname_done(struct hostname *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
}

int hostname_fd(const struct hostname *h)
{
	return h->fd;
}

void hostname_wake(struct hostname *h)
{
	h->woken = true;
}

uint64_t hostname_tick(struct hostname *h, uint64_t now)
{
	if (!h->get)
		return UINT64_MAX; /* never set up (--once) */
	/* Without a name yet, the timer runs even with the fd. */
	if (h->woken || ((h->fd < 0 || !h->name[0]) && now >= h->next_at)) {
		h->woken = false;
		if (h->fd >= 0)
			h->next_at = now + HOSTNAME_CHECK_MS;
		hostname_read(h, now);
	}
	if (h->fd >= 0 && h->name[0])
		return UINT64_MAX;
	return h->next_at;
}

bool hostname_take_change(struct hostname *h, char previous[static HOST_NAME_MAX + 1])
{
	if (!h->changed)
		return false;
	h->changed = false;
	if (strcmp(h->previous, h->name) == 0)
		return false; /* changed and back again before the owner looked */
	memcpy(previous, h->previous, HOST_NAME_MAX + 1);
	return true;
}
