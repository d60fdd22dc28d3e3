/* The files step: which OSC files to write, which to remove, and doing it.
 *
 * files_plan_compute() is pure: it compares the last applied model with the
 * new one (not the disk), so a re-run after a crash computes the same plan.
 * files_apply() does the I/O below the root fd, records ownership in the
 * executor state before it creates anything and logs one line per file.
 *
 * Image files (content.imageRef, OSC_SOURCE_IMAGE) are not written here:
 * the images step (images.h) copies them out of their image after this
 * step. Ownership is the same as for inline files: one that does not exist
 * yet is recorded as owned before the images step creates it, so it is
 * removed once the OSC drops it; one the OS image provided is never
 * removed. Their bytes are unknown here, so they count as changed (restarting
 * the units whose filePaths name them) only when their reference changes:
 * image, filePathInImage or permissions, or a switch to or from inline;
 * the images step drops a path it could not write from that list. */
#ifndef CCE_FILES_H
#define CCE_FILES_H

#include <stdbool.h>
#include <stdio.h>

#include "osc.h"
#include "state.h"

struct files_plan {
	/* Paths whose content or mode (for image files: reference) differs
	 * between the old and the new model, plus paths that appeared or were
	 * dropped (everything when old is NULL). Units whose filePaths name one
	 * of them are restarted. */
	char **changed;
	/* Paths the executor created (owned) that the new model no longer
	 * lists: removed. Files the executor never created are never here. */
	char **remove;
	/* The disk's part (files_plan_disk()): inline files, and files from
	 * a Secret that node-agent handed over, whose file below the root
	 * does not hold their bytes, mode and owner (missing, edited,
	 * chmod'ed): what files_apply() will write. Sorted; NULL until
	 * computed. */
	char **write;
};

/* old may be NULL (no usable last-applied record); owned is NULL-terminated
 * and sorted (state.owned_files). Both lists in *ret are NULL-terminated,
 * sorted, and owned by the caller (files_plan_done). */
int files_plan_compute(const struct osc *old, const struct osc *new, char *const *owned,
		       struct files_plan *ret);
void files_plan_done(struct files_plan *p);

/* Fills p->write from the disk below rootfd (reads, writes nothing).
 * Returns 0, -ENOMEM. */
int files_plan_disk(int rootfd, const struct osc *new, struct files_plan *p);

/* Writes every inline file of new below rootfd (skipping identical ones: no
 * write, no mtime change) and removes plan->remove. A symlink among a path's
 * directories is followed, inside the root, only when root alone can have
 * made it (FSX_FOLLOW_ROOT_SYMLINKS: /lib -> usr/lib); any other is refused,
 * and the file itself is replaced, never followed. files_plan_disk walks the
 * same way. Files that do not exist yet are recorded as owned in *st and st
 * is saved to statefd before the first one is created; image files that
 * do not exist yet too (the images step writes them), but they are not
 * written here: each gets one notice line. On success *ret_written
 * (NULL-terminated, caller frees) lists the paths actually written. Logs each decision and each error; returns the
 * first error after trying every file. */
int files_apply(int rootfd, const struct osc *new, const struct files_plan *plan, struct state *st,
		int statefd, char ***ret_written);

/* The second half of files_apply(): removes plan->remove (files we
 * created that the OSC dropped) with their temporaries (a write killed
 * before its rename), each disowned in *st and st saved to statefd once it
 * is gone. The executor calls it after the units step, as
 * gardener-node-agent's removeDeletedFiles runs last (gardener/gardener
 * pkg/nodeagent/controller/operatingsystemconfig/reconciler.go), so a unit
 * still running (or held back) keeps its files. Logs each file; returns
 * the first error after trying every file. */
int files_remove_dropped(int rootfd, const struct files_plan *plan, struct state *st, int statefd);

/* The plan's lines for "check" and the apply's log: "write   PATH" per
 * file of p->write, "remove  PATH", "changed PATH" (the models differ),
 * "secret  PATH: ..." for a file whose Secret is not at hand. */
int files_plan_print(FILE *f, const struct osc *new, const struct files_plan *p);

/* Removes fsx temporaries (".#<name>.<16 hex>") in the directory dfd (whose
 * path is dir) whose target path ours() claims: leftovers of a write killed
 * between creating and renaming the temporary. Logs each removal. Returns
 * the number removed or -errno. */
int files_remove_stale_temps(int dfd, const char *dir, bool (*ours)(const char *path, void *userdata),
			     void *userdata);

/* True for an image file the images step never writes and the files step
 * never owns (superseded; defined here so that files.c needs nothing of
 * images.c, which uses files.h). */
bool files_image_superseded(const char *path);

/* Appends a copy of s to the NULL-terminated *v (sorted insert, unique). */
int files_strv_add(char ***v, const char *s);

#endif
