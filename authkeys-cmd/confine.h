/* authkeys-cmd's seccomp allow-list. */
#ifndef AKC_CONFINE_H
#define AKC_CONFINE_H

/* Installs the filter through sandbox_install(): from here on the process
 * can open and map the snapshot, write to stdout, send to the journal
 * socket opened before, read the clock, disarm its timer and exit;
 * anything else kills it with SIGSYS. Returns 0 or sandbox_install()'s
 * -errno (then *reterr_name may name the syscall). */
int akc_confine(const char **reterr_name);

#endif
