/* Paced rollouts, pure helpers; see pacing.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pacing.h"

int pacing_parse_delay(const char *s, uint64_t *ret_ms)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} units[] = {
		/* longest first, so "ms" is not read as "m" */
		{ "ns", 1 }, { "us", 1000 }, { "\xc2\xb5s", 1000 }, { "\xce\xbcs", 1000 },
		{ "ms", 1000000 }, { "s", 1000000000ull }, { "m", 60000000000ull }, { "h", 3600000000000ull },
	};
	/* The ceiling in ns: 24 h fits easily in 64 bits. */
	const uint64_t max_ns = PACING_DELAY_MAX_MS * 1000000ull;
	bool neg = false;
	uint64_t total = 0;

	if (!s || strlen(s) > PACING_DELAY_VALUE_MAX)
		return -EINVAL;
	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	if (strcmp(s, "0") == 0) {
		*ret_ms = 0;
		return 0;
	}
	if (!*s)
		return -EINVAL;
	bool over = false;
	while (*s) {
		uint64_t whole = 0, frac = 0, scale = 1;
		bool digits = false;
		for (; *s >= '0' && *s <= '9'; s++, digits = true) {
			if (whole > (UINT64_MAX - 9) / 10)
				over = true;
			else
				whole = whole * 10 + (uint64_t)(*s - '0');
		}
		if (*s == '.') {
			s++;
			for (; *s >= '0' && *s <= '9'; s++, digits = true)
				if (scale < 1000000000000000000ull) { /* further digits cannot matter */
					frac = frac * 10 + (uint64_t)(*s - '0');
					scale *= 10;
				}
		}
		if (!digits)
			return -EINVAL;
		uint64_t unit = 0;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && !unit; i++) {
			size_t n = strlen(units[i].name);
			/* "m" must not match the start of "ms". */
			if (strncmp(s, units[i].name, n) == 0 && !(n == 1 && s[0] == 'm' && s[1] == 's')) {
				unit = units[i].ns;
				s += n;
			}
		}
		if (!unit)
			return -EINVAL;
		if (over || whole > max_ns / unit) {
			over = true;
			continue;
		}
		/* frac/scale of a unit, rounded up to the nanosecond. */
		uint64_t part = whole * unit;
		if (frac) {
			/* unit <= 3.6e12 and frac < scale <= 1e18: split to stay in range. */
			uint64_t q = unit / scale, r = unit % scale;
			uint64_t add = frac * q;
			/* frac * r / scale, with frac, r < scale: in long double is exact
			 * enough for a nanosecond ceiling. */
			long double rest = (long double)frac * (long double)r / (long double)scale;
			add += (uint64_t)rest + ((long double)(uint64_t)rest < rest);
			part += add;
		}
		total += part;
		if (total > max_ns)
			over = true;
	}
	if (over)
		return neg ? (*ret_ms = 0, 0) : -ERANGE;
	*ret_ms = neg ? 0 : (total + 999999) / 1000000;
	return 0;
}

bool pacing_unit_is_exempt(const char *name)
{
	return strcmp(name, "gardener-user.service") == 0 || strcmp(name, "gardener-user.path") == 0;
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool unit_eq(const struct osc_unit *a, const struct osc_unit *b)
{
	if (a->enable != b->enable || a->command != b->command || !str_eq(a->content, b->content) ||
	    a->n_dropins != b->n_dropins || a->n_file_paths != b->n_file_paths)
		return false;
	for (size_t i = 0; i < a->n_dropins; i++)
		if (strcmp(a->dropins[i].name, b->dropins[i].name) != 0 ||
		    strcmp(a->dropins[i].content, b->dropins[i].content) != 0)
			return false;
	for (size_t i = 0; i < a->n_file_paths; i++)
		if (strcmp(a->file_paths[i], b->file_paths[i]) != 0)
			return false;
	return true;
}

static bool file_eq(const struct osc_file *a, const struct osc_file *b)
{
	if (!a || !b)
		return !a && !b;
	return a->mode == b->mode && a->source == b->source && a->content_len == b->content_len &&
	       memcmp(a->content, b->content, a->content_len) == 0 && str_eq(a->image, b->image) &&
	       str_eq(a->path_in_image, b->path_in_image) && str_eq(a->secret_name, b->secret_name) &&
	       str_eq(a->secret_key, b->secret_key);
}

/* A non-exempt unit of osc listing path in filePaths, or NULL. */
static const char *dependent_unit(const struct osc *osc, const char *path)
{
	if (!osc)
		return NULL;
	for (size_t i = 0; i < osc->n_units; i++) {
		const struct osc_unit *u = &osc->units[i];
		if (pacing_unit_is_exempt(u->name))
			continue;
		for (size_t k = 0; k < u->n_file_paths; k++)
			if (strcmp(u->file_paths[k], path) == 0)
				return u->name;
	}
	return NULL;
}

/* A file of from whose counterpart in to differs (or is missing) and that a
 * unit depends on. */
static bool dependent_file_changed(const struct osc *from, const struct osc *to, const struct osc *old,
				   const struct osc *new, char *why, size_t whylen)
{
	for (size_t i = 0; i < from->n_files; i++) {
		const struct osc_file *f = &from->files[i];
		const struct osc_file *g = to ? osc_find_file(to, f->path) : NULL;
		if (g && file_eq(f, g))
			continue;
		const char *u = dependent_unit(old, f->path);
		if (!u)
			u = dependent_unit(new, f->path);
		if (u) {
			snprintf(why, whylen, "file %s (filePaths of %s) %s", f->path, u,
				 !g ? (from == new ? "added" : "removed") : "changed");
			return true;
		}
	}
	return false;
}

bool pacing_restarts_units(const struct osc *old, const struct osc *new, char *why, size_t whylen)
{
	if (whylen)
		*why = '\0';
	for (size_t i = 0; i < new->n_units; i++) {
		const struct osc_unit *u = &new->units[i];
		if (pacing_unit_is_exempt(u->name))
			continue;
		const struct osc_unit *o = old ? osc_find_unit(old, u->name) : NULL;
		if (!o || !unit_eq(o, u)) {
			snprintf(why, whylen, "unit %s %s", u->name, o ? "changed" : "added");
			return true;
		}
	}
	for (size_t i = 0; old && i < old->n_units; i++)
		if (!pacing_unit_is_exempt(old->units[i].name) && !osc_find_unit(new, old->units[i].name)) {
			snprintf(why, whylen, "unit %s dropped", old->units[i].name);
			return true;
		}
	if (dependent_file_changed(new, old, old, new, why, whylen))
		return true;
	return old && dependent_file_changed(old, new, old, new, why, whylen);
}
