/* The executor's state directory as the agent sees it: opened below the
 * root (it may not exist yet, or be removed and come back), watched with
 * inotify for result.json, and result.json as last read (lib/node/result.h).
 * What a result means for the other duties is the agent's (agent.c). */
#ifndef NA_AGENT_EXECDIR_H
#define NA_AGENT_EXECDIR_H

#include <stdbool.h>

#include "ctrdhealth.h"
#include "result.h"

#define EXECDIR_RESULT_FILE "result.json"

struct execdir {
	int fd;                     /* the directory, -1 while it is not open */
	int wd;                     /* its inotify watch, -1 while none */
	bool valid;                 /* result holds the last result.json read */
	struct result result;
	char reported[112];         /* "checksum/generation/success/in-place state"
	                             * last reported */
	bool probe_written;         /* containerd-health.json written since the
	                             * last execdir_read_probe() */
};

/* An execdir with nothing open. */
#define EXECDIR_INIT { .fd = -1, .wd = -1 }

/* Opens dir below root_fd (never following a symlink) and adds its inotify
 * watch to inotify_fd; 0 when it is open already. Returns 0 or -errno
 * (nothing logged: the directory may just not exist yet). */
int execdir_open(struct execdir *x, int root_fd, int inotify_fd, const char *dir);

/* Removes the watch and closes the directory. */
void execdir_close(struct execdir *x, int inotify_fd);

/* Drains inotify_fd. Returns true when result.json was written. When the
 * directory was removed, logs it and closes it (execdir_open() again once
 * it is back) and returns false. */
bool execdir_inotify(struct execdir *x, int inotify_fd, const char *dir);

/* Reads and parses result.json (dir names it in messages). Returns 0 when
 * there is none to take (no directory, no file, or one unreadable or
 * invalid: logged as a warning), 1 when x->result is a result read now
 * that was reported before (the same checksum, generation, success and
 * in-place update state), 2 when it was not (it counts as reported from
 * now on). */
int execdir_read(struct execdir *x, const char *dir);

/* Reads and parses containerd-health.json (ctrdhealth.h; the verdict of
 * cloud-config-exec's containerd probe) into *ret and clears
 * probe_written. Returns 0 when taken, -errno when there is none (no
 * directory or file: quiet) or it is unreadable or invalid (logged as a
 * warning). */
int execdir_read_probe(struct execdir *x, const char *dir, struct ctrdhealth *ret);

/* Whether the executor has an OSC it applied (its last-applied.yaml is
 * there): the node was configured once, whatever the last result says.
 * Looked up, not read (the file is root's 0600). */
bool execdir_applied_once(const struct execdir *x);

/* Closes and frees what x holds. */
void execdir_done(struct execdir *x, int inotify_fd);

#endif
