/* libFuzzer target for osc_parse_for_node(): any bytes (YAML or JSON), never
 * a crash, a leak or a hang; an accepted document must satisfy every
 * promise of osc.h (sorted, unique, safe paths outside the forbidden prefix,
 * valid names, modes and sizes within the ceilings), and a rejected one must
 * say why. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "criconfig.h"
#include "fsx.h"
#include "inplace.h"
#include "osc.h"

#define FORBIDDEN "/var/lib/node-agent"

/* Every line a renderer writes is a comment, a table header, an indented
 * key or a top-level key: a value never breaks out of its quotes. */
static void check_toml(const char *s)
{
	for (const char *l = s; *l;) {
		const char *nl = strchr(l, '\n');
		if (!nl)
			abort();
		size_t quotes = 0;
		for (const char *p = l; p < nl; p++)
			quotes += *p == '"';
		if (quotes % 2 != 0 || memchr(l, '\\', (size_t)(nl - l)))
			abort();
		l = nl + 1;
	}
}

static void check_keys(const struct osc_tval *v)
{
	for (size_t i = 0; i < v->n_items; i++) {
		if (v->items[i].key && !cri_key_is_safe(v->items[i].key))
			abort();
		if (v->items[i].type == OSC_TV_TABLE)
			check_keys(&v->items[i]);
	}
}

static void check_cri(const struct osc_cri *cri)
{
	if (!cri->present) {
		if (cri->containerd || cri->n_registries || cri->sandbox_image)
			abort();
		return;
	}
	if (cri->n_registries > OSC_REGISTRIES_MAX)
		abort();
	for (size_t i = 0; i < cri->n_registries; i++) {
		const struct osc_registry *g = &cri->registries[i];
		if (!g->upstream[0] || g->upstream[0] == '.' || strchr(g->upstream, '/') ||
		    g->n_hosts > OSC_REGISTRY_HOSTS_MAX)
			abort();
		if (i > 0 && strcmp(cri->registries[i - 1].upstream, g->upstream) >= 0)
			abort();
		for (size_t j = 0; j < g->n_hosts; j++)
			if (!g->hosts[j].url || !g->hosts[j].ca || g->hosts[j].n_ca > OSC_REGISTRY_CAS_MAX ||
			    g->hosts[j].ca[g->hosts[j].n_ca])
				abort();
		char *h = NULL;
		if (cri_render_hosts(g, &h) < 0)
			abort();
		check_toml(h);
		free(h);
	}
	for (int v = 2; v <= 4; v++) {
		struct cri_target t = { .config_version = v, .cni_bin_dirs = v > 2 };
		char *c = NULL, why[256];
		int ok = cri_plugins_check(cri, &t, NULL, why, sizeof(why));
		/* accepted plugins have only keys every TOML parser containerd
		 * uses reads in a table header (issue 21: "]" broke 1.6) */
		for (size_t i = 0; ok >= 0 && i < cri->n_plugins; i++) {
			for (size_t j = 0; j < cri->plugins[i].n_path; j++)
				if (!cri_key_is_safe(cri->plugins[i].path[j]))
					abort();
			if (!cri->plugins[i].remove)
				check_keys(&cri->plugins[i].values);
		}
		/* plugins the check refuses are never rendered; all others are */
		if ((cri_render_config(cri, &t, &c) < 0) != (ok < 0))
			abort();
		if (c)
			check_toml(c);
		free(c);
		if (!cri_equal(cri, cri, &t))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct osc *o)
{
	for (size_t i = 0; i < o->n_files; i++) {
		const struct osc_file *f = &o->files[i];
		if (!fsx_path_is_safe(f->path, OSC_PATH_MAX) || f->mode > 07777 || !f->content ||
		    f->content_len > OSC_FILE_CONTENT_MAX || f->content[f->content_len] != '\0')
			abort();
		if (strncmp(f->path, FORBIDDEN, strlen(FORBIDDEN)) == 0 &&
		    (f->path[strlen(FORBIDDEN)] == '/' || f->path[strlen(FORBIDDEN)] == '\0'))
			abort();
		if (i > 0 && strcmp(o->files[i - 1].path, f->path) >= 0)
			abort();
		if (osc_find_file(o, f->path) != f)
			abort();
		if (f->source == OSC_SOURCE_IMAGE) {
			if (f->content_len != 0 || !f->image || !f->path_in_image || f->image[0] == '\0' ||
			    strlen(f->image) > OSC_IMAGE_MAX || !fsx_path_is_safe(f->path_in_image, OSC_PATH_MAX))
				abort();
			for (const char *p = f->image; *p; p++)
				if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
					abort();
		} else if (f->source != OSC_SOURCE_INLINE || f->image || f->path_in_image) {
			abort();
		}
	}
	if (o->n_files > OSC_FILES_MAX || o->n_units > OSC_UNITS_MAX)
		abort();
	for (size_t i = 0; i < o->n_units; i++) {
		const struct osc_unit *u = &o->units[i];
		if (!osc_unit_name_is_valid(u->name) || u->enable < -1 || u->enable > 1)
			abort();
		if (i > 0 && strcmp(o->units[i - 1].name, u->name) >= 0)
			abort();
		if (osc_find_unit(o, u->name) != u)
			abort();
		if (u->content && strlen(u->content) > OSC_UNIT_CONTENT_MAX)
			abort();
		if (u->n_dropins > OSC_DROPINS_MAX || u->n_file_paths > OSC_FILE_PATHS_MAX)
			abort();
		for (size_t j = 0; j < u->n_dropins; j++) {
			if (!osc_dropin_name_is_valid(u->dropins[j].name) || !u->dropins[j].content)
				abort();
			if (j > 0 && strcmp(u->dropins[j - 1].name, u->dropins[j].name) >= 0)
				abort();
		}
		for (size_t j = 0; j < u->n_file_paths; j++) {
			if (!fsx_path_is_safe(u->file_paths[j], OSC_PATH_MAX))
				abort();
			if (j > 0 && strcmp(u->file_paths[j - 1], u->file_paths[j]) >= 0)
				abort();
		}
	}
}

/* The in-place part: bounded, and an OSC compared with itself is never a
 * kubelet or credentials change (inplace_classify reads the kubelet
 * configuration file of the OSC, outside input too). */
static void check_inplace(const struct osc *o)
{
	const struct osc_inplace *ip = &o->inplace;
	if (ip->present && (!ip->os_version || !ip->kubelet_version || strlen(ip->os_version) > OSC_VERSION_MAX ||
			    strlen(ip->kubelet_version) > OSC_VERSION_MAX))
		abort();
	if (!ip->present && (ip->os_version || ip->kubelet_version || ip->credentials_rotation))
		abort();
	if (o->os_update.command && (!o->os_update.args || o->os_update.n_args > OSC_OS_UPDATE_ARGS_MAX ||
				     o->os_update.args[o->os_update.n_args]))
		abort();
	unsigned kinds = 0;
	char err[INPLACE_ERROR_MAX];
	if (inplace_classify(o, o, ip->os_version, &kinds, err) == 0 && (kinds & ~(unsigned)INPLACE_OS_VERSION))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct osc o = { .n_files = 7 };
	struct osc_error err;
	int r = osc_parse_for_node((const char *)data, size, FORBIDDEN, "node-a", &o, &err);
	if (r == 0) {
		check(&o);
		check_cri(&o.cri);
		check_inplace(&o);
		osc_done(&o);
	} else if (err.message[0] == '\0' || o.n_files != 7 || r >= 0) {
		abort();
	}
	return 0;
}
