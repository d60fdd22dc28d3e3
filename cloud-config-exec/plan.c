/* One plan for check and apply; see plan.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "containerd.h"
#include "images.h"
#include "plan.h"
#include "state.h"
#include "units.h"

void plan_done(struct plan *p)
{
	files_plan_done(&p->files);
	strv_free(p->images);
	strv_free(p->image_writes);
	strv_free(p->changed_files);
	containerd_plan_done(&p->cri);
	strv_free(p->requests);
	if (p->units)
		units_plan_free(p->units);
	*p = (struct plan){};
}

static bool strv_has(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (strcmp(*v, s) == 0)
			return true;
	return false;
}

static int add_all(char ***to, char *const *from)
{
	for (; from && *from; from++)
		if (files_strv_add(to, *from) < 0)
			return -ENOMEM;
	return 0;
}

int plan_units(const struct plan_input *in, struct plan *p, char *const *extra_changed, const char *hold)
{
	if (add_all(&p->changed_files, extra_changed) < 0)
		return -ENOMEM;
	/* containerd restarts for its config unless the units are held back
	 * (gardener-node-agent returns before restarting anything then). */
	_cleanup_strv_free_ char **requests = NULL;
	if (add_all(&requests, in->requests) < 0 ||
	    (p->cri.restart && !hold && files_strv_add(&requests, CONTAINERD_UNIT) < 0))
		return -ENOMEM;
	struct units_plan *u = NULL;
	int r = units_plan_compute_held(in->old, in->new, p->changed_files, requests, in->st->owned_units, hold, &u);
	if (r < 0)
		return r;
	if (!hold && (r = units_plan_add_drift(u, in->rootfd)) < 0) {
		units_plan_free(u);
		return r;
	}
	if (p->units)
		units_plan_free(p->units);
	p->units = u;
	strv_free(p->requests);
	p->requests = TAKE_PTR(requests);
	p->hold = hold;
	return 0;
}

int plan_compute(const struct plan_input *in, struct plan *ret)
{
	struct plan p = {};
	int r;
	if ((r = files_plan_compute(in->old, in->new, in->st->owned_files, &p.files)) < 0 ||
	    (r = files_plan_disk(in->rootfd, in->new, &p.files)) < 0 ||
	    (r = images_plan(in->rootfd, in->statefd, in->new, &p.images, &p.image_writes)) < 0)
		goto fail;
	(void)containerd_plan_compute(in->rootfd, in->statefd, in->containerd_bin, in->st, in->old, in->new, in->d,
				      &p.cri);
	if (add_all(&p.changed_files, p.files.changed) < 0 || add_all(&p.changed_files, p.files.write) < 0 ||
	    add_all(&p.changed_files, p.image_writes) < 0) {
		r = -ENOMEM;
		goto fail;
	}
	if ((r = plan_units(in, &p, NULL, NULL)) < 0)
		goto fail;
	*ret = p;
	return 0;
fail:
	plan_done(&p);
	return r;
}

void plan_print(FILE *f, const struct osc *new, const struct plan *p)
{
	files_plan_print(f, new, &p->files);
	for (size_t i = 0; i < new->n_files; i++) {
		const struct osc_file *o = &new->files[i];
		if (o->source != OSC_SOURCE_IMAGE)
			continue;
		bool asked = strv_has(p->images, o->path), w = strv_has(p->image_writes, o->path);
		fprintf(f, "image   %s: from image '%s' (path '%s'), %s\n", o->path, o->image, o->path_in_image,
			files_image_superseded(o->path) ? "superseded, never written" :
			w ? "asked of containerd, rewritten (not the bytes recorded)" :
			asked ? "asked of containerd, copied out when it differs" : "intact, containerd not asked");
	}
	containerd_plan_print(f, &p->cri);
	_cleanup_free_ char *summary = NULL;
	if (units_plan_format(p->units, &summary) >= 0)
		fprintf(f, "units: %s\n", summary);
	for (size_t i = 0; i < units_plan_size(p->units); i++) {
		const struct units_plan_entry *e = units_plan_get(p->units, i);
		unsigned a = e->actions & ~(UNITS_REQUESTED | UNITS_DRIFT);
		if (!a || a == UNITS_SUPERSEDED || ((e->actions & UNITS_HELD) && !e->held))
			continue;
		char acts[128];
		fprintf(f, "unit    %s: %s (%s)\n", e->unit, units_actions_to_string(e->actions, acts, sizeof(acts)),
			e->reason);
	}
}
