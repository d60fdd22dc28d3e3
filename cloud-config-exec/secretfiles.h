/* Files from a Secret, the executor's half (content.secretRef).
 *
 * osc_parse() keeps a secretRef file with empty content (OSC_SOURCE_SECRET);
 * node-agent reads the Secret (agent/secretfiles.h) and hands the bytes over
 * in desired.json's secretFiles, which bounds_check() has limited to the
 * OSC's own secretRef paths. secretfiles_resolve() puts them into the model,
 * so the files step writes such a file like an inline one: the OSC's path,
 * permissions and owner (root), atomically, only when its bytes differ.
 *
 * A secretRef file without bytes (node-agent could not read its Secret or
 * the Secret has no such key) is not written: what is on disk stays (the
 * last good content, or nothing), and the run reports a failure in the step
 * "files" naming it, while the other files, units and keys still apply.
 * gardener-node-agent fails the whole files step then (gardener/gardener
 * pkg/nodeagent/controller/operatingsystemconfig/reconciler.go,
 * getFileContentData: "unable to read referenced secret", "secret %q does
 * not contain key %q"); either way the Node is not annotated. */
#ifndef CCE_SECRETFILES_H
#define CCE_SECRETFILES_H

#include "desired.h"
#include "osc.h"

/* Copies the bytes of d->secret_files (d may be NULL) into the secretRef
 * files of o with the same path (secret_resolved set). Pure. Returns the
 * number of secretRef files of o left without bytes, or -ENOMEM. */
int secretfiles_resolve(struct osc *o, const struct desired *d);

/* One line naming the secretRef files of o left without bytes ("file /a
 * (Secret kube-system/s, key k) ..."), malloc'ed into *ret; *ret NULL when
 * there are none. Returns 0 or -ENOMEM. Pure. */
int secretfiles_describe_missing(const struct osc *o, char **ret);

#endif
