/* The OperatingSystemConfig model: what node-agent validates and
 * cloud-config-exec applies.
 *
 * osc_parse() is a pure parser (libyaml; JSON is YAML) from the bytes of
 * Gardener's osc.yaml into this validated, normalised model: files with
 * decoded content, units with spec and status.extensionUnits merged by name.
 * No I/O, no logging; errors name the field ("spec.files[3].path") and the
 * offending value. */
#ifndef NA_OSC_H
#define NA_OSC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Ceilings on what the network may hand us. */
#define OSC_INPUT_MAX (8u << 20)      /* bytes of osc.yaml */
#define OSC_FILE_CONTENT_MAX (4u << 20) /* decoded bytes of one file */
#define OSC_FILES_MAX 1024
#define OSC_UNITS_MAX 512
#define OSC_DROPINS_MAX 64            /* per unit */
#define OSC_FILE_PATHS_MAX 256        /* per unit */
#define OSC_PATH_MAX 1024
#define OSC_UNIT_CONTENT_MAX (256u << 10)
#define OSC_ERROR_MAX 512

enum osc_command {
	OSC_COMMAND_NONE,    /* not given */
	OSC_COMMAND_START,
	OSC_COMMAND_RESTART,
	OSC_COMMAND_STOP,
};

struct osc_file {
	char *path;                 /* absolute, normalised (fsx_path_is_safe) */
	mode_t mode;                /* permissions; 0600 when not given */
	unsigned char *content;     /* decoded bytes (may contain NUL) */
	size_t content_len;
	bool transmit_unencoded;
};

struct osc_dropin {
	char *name;                 /* "10-foo.conf": one path component, ends in .conf */
	char *content;
};

struct osc_unit {
	char *name;                 /* valid systemd unit name ("kubelet.service") */
	int enable;                 /* -1 unset (means enable), 0, 1 */
	enum osc_command command;
	char *content;              /* NULL: an OS unit the OSC only adds drop-ins to */
	struct osc_dropin *dropins;
	size_t n_dropins;
	char **file_paths;          /* files whose change restarts this unit */
	size_t n_file_paths;
};

struct osc {
	struct osc_file *files;     /* sorted by path, unique */
	size_t n_files;
	struct osc_unit *units;     /* sorted by name, unique */
	size_t n_units;
};

struct osc_error {
	char message[OSC_ERROR_MAX]; /* "spec.files[3].path: relative path 'etc/x'" */
};

/* Parses and validates len bytes of osc.yaml (YAML or JSON). On success fills
 * *ret (release with osc_done()) and returns 0; on failure returns -EINVAL
 * (malformed, wrong type, invalid value), -EMSGSIZE (a ceiling above) or
 * -ENOMEM, fills *err when non-NULL, and leaves *ret untouched. Paths below
 * forbidden_prefix (the agent's own state directory, may be NULL) are refused. */
int osc_parse(const char *data, size_t len, const char *forbidden_prefix, struct osc *ret,
	      struct osc_error *err);

/* Lookups in the sorted arrays; NULL when absent. */
const struct osc_file *osc_find_file(const struct osc *osc, const char *path);
const struct osc_unit *osc_find_unit(const struct osc *osc, const char *name);

/* True for a valid systemd unit name of a type the OSC may carry. */
bool osc_unit_name_is_valid(const char *name);

void osc_done(struct osc *osc);

#endif
