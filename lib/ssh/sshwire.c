/* The SSH wire encoding; see sshwire.h. */
#include <errno.h>

#include "sshwire.h"

int sshwire_bytes(struct sshwire *r, size_t n, const unsigned char **ret)
{
	if (r->len < n)
		return -EBADMSG;
	*ret = r->p;
	r->p += n;
	r->len -= n;
	return 0;
}

int sshwire_u8(struct sshwire *r, uint8_t *ret)
{
	const unsigned char *p;
	if (sshwire_bytes(r, 1, &p) < 0)
		return -EBADMSG;
	*ret = p[0];
	return 0;
}

int sshwire_u32(struct sshwire *r, uint32_t *ret)
{
	const unsigned char *p;
	if (sshwire_bytes(r, 4, &p) < 0)
		return -EBADMSG;
	*ret = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return 0;
}

int sshwire_u64(struct sshwire *r, uint64_t *ret)
{
	if (r->len < 8)
		return -EBADMSG;
	uint32_t hi, lo;
	(void)sshwire_u32(r, &hi);
	(void)sshwire_u32(r, &lo);
	*ret = (uint64_t)hi << 32 | lo;
	return 0;
}

int sshwire_string(struct sshwire *r, const unsigned char **ret, size_t *ret_len)
{
	struct sshwire save = *r;
	uint32_t n;
	if (sshwire_u32(r, &n) < 0 || sshwire_bytes(r, n, ret) < 0) {
		*r = save;
		return -EBADMSG;
	}
	*ret_len = n;
	return 0;
}

int sshwire_sub(struct sshwire *r, struct sshwire *ret)
{
	const unsigned char *p;
	size_t n;
	if (sshwire_string(r, &p, &n) < 0)
		return -EBADMSG;
	*ret = (struct sshwire){ p, n };
	return 0;
}
