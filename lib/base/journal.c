/* Journal native protocol client; see journal.h. */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "cleanup.h"
#include "journal.h"

#define FIELDS_MAX 32

int journal_open(void)
{
	return RET_NERRNO(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
}

static bool key_ok(const char *s, size_t len)
{
	if (len == 0 || len > 64 || s[0] == '_' || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

int journal_sendv(int fd, const struct iovec *fields, size_t n)
{
	return journal_sendv_to(fd, JOURNAL_SOCKET_PATH, fields, n);
}

int journal_sendv_to(int fd, const char *path, const struct iovec *fields, size_t n)
{
	static const char nl = '\n';
	struct iovec iov[FIELDS_MAX * 5];
	uint64_t lens[FIELDS_MAX];
	size_t k = 0;

	if (n > FIELDS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		const char *f = fields[i].iov_base;
		size_t len = fields[i].iov_len;
		const char *eq = memchr(f, '=', len);
		if (!eq || !key_ok(f, (size_t)(eq - f)))
			return -EINVAL;
		const char *val = eq + 1;
		size_t vlen = len - (size_t)(val - f);
		if (!memchr(val, '\n', vlen)) {
			iov[k++] = fields[i];
			iov[k++] = (struct iovec){ (void *)(uintptr_t)&nl, 1 };
			continue;
		}
		/* KEY '\n' le64(len) value '\n' */
		lens[i] = htole64(vlen);
		iov[k++] = (struct iovec){ (void *)(uintptr_t)f, (size_t)(eq - f) };
		iov[k++] = (struct iovec){ (void *)(uintptr_t)&nl, 1 };
		iov[k++] = (struct iovec){ &lens[i], sizeof(lens[i]) };
		iov[k++] = (struct iovec){ (void *)(uintptr_t)val, vlen };
		iov[k++] = (struct iovec){ (void *)(uintptr_t)&nl, 1 };
	}

	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t plen = strlen(path);
	if (plen == 0 || plen >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, plen + 1);
	struct msghdr mh = {
		.msg_name = &sa,
		.msg_namelen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen + 1),
		.msg_iov = iov,
		.msg_iovlen = k,
	};
	ssize_t r = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	return r < 0 ? negerrno() : 0;
}
