/* One plan for "check" and "apply" (docs/design.md; STYLE.md "Decide once,
 * then act", as apt-get -s and apt-get install share one solver): what an
 * apply of an OSC does, from the last applied OSC, the new one, the
 * ownership record and what is on disk now. plan_compute() reads and never
 * writes; "check" prints the plan (plan_print()), apply_osc() logs the same
 * lines and carries the plan out step by step.
 *
 * One input is known only during the apply: the bytes containerd gives for
 * an image file it is asked about (a new reference, a missing record). When
 * the images step writes a file the plan did not name, or holds the units
 * back, the units' part is computed again by the same function
 * (plan_units()) and the apply logs that it differs from the plan. */
#ifndef CCE_PLAN_H
#define CCE_PLAN_H

#include <stdbool.h>
#include <stdio.h>

#include "containerd.h"
#include "files.h"
#include "osc.h"

struct state;
struct desired;
struct units_plan;

struct plan_input {
	int rootfd;
	int statefd;                /* -1: none yet (nothing recorded) */
	const char *containerd_bin;
	struct state *st;           /* ownership record; containerd's version cache (may be filled) */
	const struct osc *old;      /* last applied, or NULL */
	const struct osc *new;
	const struct desired *d;    /* NULL: "apply FILE" / "check FILE" */
	char *const *requests;      /* restart requests this apply runs (NULL-terminated or NULL) */
};

struct plan {
	struct files_plan files;    /* changed (models), remove (owned, dropped), write (disk) */
	char **images;              /* image files containerd is asked about */
	char **image_writes;        /* ... of those, the ones surely rewritten */
	char **changed_files;       /* files.changed, files.write, image_writes: their units restart */
	struct containerd_plan cri;
	char **requests;            /* the restart requests, and containerd.service when its config restarts it */
	struct units_plan *units;   /* with the disk's drift (units_plan_add_drift()) */
	const char *hold;           /* the units held back (plan_units()), or NULL */
};

/* Computes the plan. Returns 0, -ENOMEM (a step that cannot be planned,
 * such as a criConfig refused, is in the plan as that step's failure). */
int plan_compute(const struct plan_input *in, struct plan *ret);

/* The units' part again, for changed files known now (the images step) or
 * held back (hold: a phrase, or NULL). Returns 0, -ENOMEM. */
int plan_units(const struct plan_input *in, struct plan *p, char *const *extra_changed, const char *hold);

/* The plan as lines: files, image files, containerd, then "units: <summary>"
 * and one "unit    NAME: ACTIONS (REASON)" per unit with something to do. */
void plan_print(FILE *f, const struct osc *new, const struct plan *p);

void plan_done(struct plan *p);

#endif
