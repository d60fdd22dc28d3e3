/* The kubelet data volume's disk choice; see datavol.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datavol.h"

static bool copy_value(char *dst, const char *v, size_t n)
{
	if (n >= DATAVOL_VALUE_MAX)
		return false;
	memcpy(dst, v, n);
	dst[n] = 0;
	return true;
}

int datavol_parse_probe(const char *out, size_t len, struct datavol_probe *ret)
{
	struct datavol_probe p = { 0 };
	if (len > DATAVOL_PROBE_MAX)
		return -EMSGSIZE;
	const char *s = out, *end = out + len;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl : end;
		if (e > s) {
			const char *eq = memchr(s, '=', (size_t)(e - s));
			if (!eq || eq == s || memchr(s, '\0', (size_t)(e - s)))
				return -EINVAL;
			for (const char *k = s; k < eq; k++)
				if (!((*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') || *k == '_'))
					return -EINVAL;
			size_t klen = (size_t)(eq - s), vlen = (size_t)(e - eq - 1);
			char *dst = klen == 4 && memcmp(s, "TYPE", 4) == 0     ? p.type :
				    klen == 6 && memcmp(s, "PTTYPE", 6) == 0   ? p.pttype :
				    klen == 5 && memcmp(s, "LABEL", 5) == 0    ? p.label : NULL;
			if (vlen >= DATAVOL_PROBE_MAX)
				return -EINVAL;
			if (dst && !copy_value(dst, eq + 1, vlen))
				return -EINVAL;
			p.found = true;
		}
		s = nl ? nl + 1 : end;
	}
	*ret = p;
	return 0;
}

const char *datavol_disk_type(const char *name, int scsi_type, char *buf, size_t size)
{
	const char *t = strncmp(name, "loop", 4) == 0 ? "loop" :
			strncmp(name, "dm-", 3) == 0 ? "dm" :
			strncmp(name, "md", 2) == 0 ? "md" :
			strncmp(name, "sr", 2) == 0 || scsi_type == 5 ? "rom" : "disk";
	snprintf(buf, size, "%s", t);
	return buf;
}

/* Parses "maj:min" (decimal) at s..e. */
static bool parse_majmin(const char *s, const char *e, uint64_t *ret)
{
	unsigned long v[2] = { 0, 0 };
	int k = 0;
	bool digit = false;
	for (; s < e; s++) {
		if (*s == ':' && k == 0 && digit) {
			k = 1;
			digit = false;
			continue;
		}
		if (*s < '0' || *s > '9' || v[k] > (0xffffffffUL - 9) / 10)
			return false;
		v[k] = v[k] * 10 + (unsigned long)(*s - '0');
		digit = true;
	}
	if (k != 1 || !digit)
		return false;
	*ret = datavol_dev((unsigned)v[0], (unsigned)v[1]);
	return true;
}

int datavol_parse_dev(const char *s, unsigned *maj, unsigned *min)
{
	uint64_t d;
	if (!parse_majmin(s, s + strlen(s), &d))
		return -EINVAL;
	*maj = (unsigned)(d >> 32);
	*min = (unsigned)(d & 0xffffffffu);
	return 0;
}

int datavol_parse_mountinfo(const char *data, size_t len, uint64_t *devs, size_t max, size_t *ret_n)
{
	size_t n = 0;
	const char *s = data, *end = data + len;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl : end;
		if (e > s) {
			/* mount ID, parent ID, major:minor, ... */
			const char *f = s;
			for (int field = 0; field < 2; field++) {
				const char *sp = memchr(f, ' ', (size_t)(e - f));
				if (!sp)
					return -EINVAL;
				f = sp + 1;
			}
			const char *sp = memchr(f, ' ', (size_t)(e - f));
			uint64_t d;
			if (!sp || !parse_majmin(f, sp, &d))
				return -EINVAL;
			if (n >= max)
				return -E2BIG;
			devs[n++] = d;
		}
		s = nl ? nl + 1 : end;
	}
	*ret_n = n;
	return 0;
}

int datavol_parse_swaps(const char *data, size_t len, char (*names)[DATAVOL_NAME_MAX + 1], size_t max,
			size_t *ret_n)
{
	size_t n = 0;
	bool header = true;
	const char *s = data, *end = data + len;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl : end;
		if (header) {
			header = false;
		} else if (e > s) {
			const char *f = s;
			while (f < e && *f != ' ' && *f != '\t')
				f++;
			if (f == s)
				return -EINVAL;
			const char *name = s;
			if ((size_t)(f - s) > 5 && memcmp(s, "/dev/", 5) == 0)
				name = s + 5;
			if (n >= max)
				return -E2BIG;
			size_t k = (size_t)(f - name);
			if (k > DATAVOL_NAME_MAX)
				k = 0; /* a file or a long path: not a disk of ours */
			memcpy(names[n], name, k);
			names[n][k] = 0;
			n++;
		}
		s = nl ? nl + 1 : end;
	}
	*ret_n = n;
	return 0;
}

static bool type_ok(const char *type, const char *const *types)
{
	for (; types && *types; types++)
		if (strcmp(type, *types) == 0)
			return true;
	return false;
}

const char *datavol_refusal(const struct datavol_disk *d, uint64_t size, const char *const *types)
{
	if (!type_ok(d->type, types))
		return "not of type disk";
	if (d->size != size)
		return "another size";
	if (d->ro)
		return "read-only";
	if (d->n_partitions)
		return "has partitions";
	if (d->n_holders)
		return "held by another device (device mapper, md)";
	if (d->in_use)
		return "mounted or used as swap";
	if (d->probe_status < 0)
		return "could not be probed";
	if (d->probe.pttype[0])
		return "has a partition table";
	if (d->probe.type[0])
		return "has a file system or another signature";
	if (d->probe.found)
		return "has a signature";
	return NULL;
}

enum datavol_verdict datavol_pick(const struct datavol_disk *disks, size_t n, uint64_t size,
				  const char *const *types, size_t *ret_index)
{
	for (size_t i = 0; i < n; i++)
		if (disks[i].probe_status >= 0 && strcmp(disks[i].probe.type, "ext4") == 0 &&
		    strcmp(disks[i].probe.label, DATAVOL_LABEL) == 0) {
			*ret_index = i;
			return DATAVOL_LABELLED;
		}
	for (size_t i = 0; i < n; i++)
		if (!datavol_refusal(&disks[i], size, types)) {
			*ret_index = i;
			return DATAVOL_PICKED;
		}
	return DATAVOL_NONE;
}
