/* Unit tests for lib/node/osc.c: the realistic Gardener fixture in YAML and JSON,
 * the spec/status merge, node filtering, scalar typing, and a table of bad
 * documents each rejected with the field named in the message.
 *
 * Fixtures are read from tests/fixtures/osc/ relative to the source tree
 * ($NA_SRCDIR, default: the current directory, which `make check-unit` is). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cleanup.h"
#include "fsx.h"
#include "osc.h"

#define FORBIDDEN "/var/lib/node-agent"

static char *read_fixture(const char *rel, size_t *len)
{
	const char *src = getenv("NA_SRCDIR");
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/fixtures/%s", src ? src : ".", rel);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("cannot open fixture %s: %s", path, strerror(errno));
	char *data = NULL;
	assert_int_equal(fsx_read_fd(fd, 16u << 20, &data, len), 0);
	close(fd);
	return data;
}

static int parse_str(const char *yaml, struct osc *ret, struct osc_error *err)
{
	return osc_parse(yaml, strlen(yaml), FORBIDDEN, ret, err);
}

static const struct osc_file *file(const struct osc *o, const char *path)
{
	const struct osc_file *f = osc_find_file(o, path);
	if (!f)
		fail_msg("file %s missing", path);
	return f;
}

static const struct osc_unit *unit(const struct osc *o, const char *name)
{
	const struct osc_unit *u = osc_find_unit(o, name);
	if (!u)
		fail_msg("unit %s missing", name);
	return u;
}

static bool starts_with(const void *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- the realistic fixture -------------------------------------------- */

static void check_gardener_worker(const struct osc *o)
{
	assert_int_equal(o->n_files, 13);
	assert_int_equal(o->n_units, 8);
	for (size_t i = 1; i < o->n_files; i++)
		assert_true(strcmp(o->files[i - 1].path, o->files[i].path) < 0);
	for (size_t i = 1; i < o->n_units; i++)
		assert_true(strcmp(o->units[i - 1].name, o->units[i].name) < 0);

	const struct osc_file *f = file(o, "/var/lib/kubelet/config/kubelet");
	assert_int_equal(f->mode, 0600);
	assert_true(starts_with(f->content, "apiVersion: kubelet.config.k8s.io/v1beta1\n"));
	assert_non_null(strstr((const char *)f->content, "maxPods: 110\n"));
	assert_false(f->transmit_unencoded);

	f = file(o, "/var/lib/kubelet/ca.crt");
	assert_int_equal(f->mode, 0644);
	assert_true(starts_with(f->content, "-----BEGIN CERTIFICATE-----\n"));

	f = file(o, "/var/lib/kubelet/bootstrap-token");
	assert_true(f->transmit_unencoded);
	assert_int_equal(f->content_len, strlen("<<BOOTSTRAP_TOKEN>>"));
	assert_memory_equal(f->content, "<<BOOTSTRAP_TOKEN>>", f->content_len);

	assert_int_equal(file(o, "/var/lib/valitail/auth-token")->mode, 0600); /* default */
	assert_int_equal(file(o, "/var/lib/gardener-user/run.sh")->mode, 0755);
	assert_int_equal(file(o, "/opt/bin/init-containerd")->mode, 0744);
	f = file(o, "/etc/modules-load.d/k8s.conf");
	assert_string_equal((const char *)f->content, "br_netfilter\nip_vs\n");
	f = file(o, "/etc/systemd/journald.conf"); /* encoding: "" */
	assert_true(starts_with(f->content, "[Journal]\n"));
	/* The kubelet binary: an imageRef file, kept but not resolved. */
	f = file(o, "/opt/bin/kubelet");
	assert_int_equal(f->source, OSC_SOURCE_IMAGE);
	assert_int_equal(f->mode, 0755);
	assert_string_equal(f->image, "europe-docker.pkg.dev/gardener-project/releases/hyperkube:v1.31.1");
	assert_string_equal(f->path_in_image, "/kubelet");
	assert_int_equal(f->content_len, 0);
	for (size_t i = 0; i < o->n_files; i++)
		if (o->files[i].source == OSC_SOURCE_INLINE)
			assert_null(o->files[i].image);
		else
			assert_string_equal(o->files[i].path, "/opt/bin/kubelet");
	/* From status.extensionFiles. */
	assert_true(starts_with(file(o, "/etc/containerd/conf.d/10-os.toml")->content, "[plugins."));

	/* The authorized keys: the two test keys, current first, no trailing newline. */
	size_t l1, l2;
	_cleanup_free_ char *cur = read_fixture("keys/gardener-current.pub", &l1);
	_cleanup_free_ char *prev = read_fixture("keys/gardener-previous.pub", &l2);
	f = file(o, "/var/lib/gardener-user-authorized-keys");
	assert_int_equal(f->mode, 0644);
	assert_int_equal(f->content_len, (l1 - 1) + 1 + (l2 - 1));
	assert_memory_equal(f->content, cur, l1 - 1);
	assert_int_equal(f->content[l1 - 1], '\n');
	assert_memory_equal(f->content + l1, prev, l2 - 1);

	const struct osc_unit *u = unit(o, "kubelet.service");
	assert_int_equal(u->enable, 1);
	assert_int_equal(u->command, OSC_COMMAND_START);
	assert_true(starts_with(u->content, "[Unit]\nDescription=kubelet daemon\n"));
	assert_non_null(strstr(u->content, "ExecStart=/opt/bin/kubelet \\\n    --bootstrap-kubeconfig="));
	/* The drop-in and the filePath come from status.extensionUnits. */
	assert_int_equal(u->n_dropins, 1);
	assert_string_equal(u->dropins[0].name, "12-os-tuning.conf");
	assert_string_equal(u->dropins[0].content, "[Service]\nLimitNOFILE=1048576\n");
	assert_int_equal(u->n_file_paths, 4);
	assert_string_equal(u->file_paths[0], "/etc/modules-load.d/k8s.conf");
	assert_string_equal(u->file_paths[1], "/opt/bin/kubelet");
	assert_string_equal(u->file_paths[2], "/var/lib/kubelet/ca.crt");
	assert_string_equal(u->file_paths[3], "/var/lib/kubelet/config/kubelet");

	u = unit(o, "containerd.service");
	assert_null(u->content); /* an OS unit: only a drop-in */
	assert_int_equal(u->n_dropins, 1);
	assert_string_equal(u->dropins[0].name, "11-exec_config.conf");
	assert_true(starts_with(u->dropins[0].content, "[Service]\nExecStart=\n"));

	u = unit(o, "systemd-journald.service");
	assert_int_equal(u->enable, -1);
	assert_int_equal(u->command, OSC_COMMAND_RESTART);
	assert_null(u->content);

	u = unit(o, "gardener-user.service");
	assert_int_equal(u->command, OSC_COMMAND_NONE);
	assert_int_equal(u->enable, 1);
	u = unit(o, "gardener-user.path");
	assert_non_null(strstr(u->content, "PathChanged=/var/lib/gardener-user-authorized-keys\n"));
	assert_int_equal(u->n_file_paths, 0);
	assert_int_equal(u->n_dropins, 0);
	assert_non_null(osc_find_unit(o, "valitail.service"));
	assert_null(osc_find_unit(o, "valitail"));
	assert_null(osc_find_file(o, "/var/lib/kubelet"));
}

static void gardener_worker_yaml(void **state)
{
	size_t len;
	_cleanup_free_ char *data = read_fixture("osc/gardener-worker.yaml", &len);
	struct osc o = {};
	struct osc_error err;
	int r = osc_parse(data, len, FORBIDDEN, &o, &err);
	if (r < 0)
		fail_msg("parse: %s", err.message);
	check_gardener_worker(&o);
	osc_done(&o);
	osc_done(&o); /* idempotent */
}

static void osc_equal(const struct osc *a, const struct osc *b)
{
	assert_int_equal(a->n_files, b->n_files);
	for (size_t i = 0; i < a->n_files; i++) {
		assert_string_equal(a->files[i].path, b->files[i].path);
		assert_int_equal(a->files[i].mode, b->files[i].mode);
		assert_int_equal(a->files[i].content_len, b->files[i].content_len);
		assert_memory_equal(a->files[i].content, b->files[i].content, a->files[i].content_len);
		assert_int_equal(a->files[i].transmit_unencoded, b->files[i].transmit_unencoded);
		assert_int_equal(a->files[i].source, b->files[i].source);
		if (a->files[i].image || b->files[i].image) {
			assert_string_equal(a->files[i].image, b->files[i].image);
			assert_string_equal(a->files[i].path_in_image, b->files[i].path_in_image);
		}
	}
	assert_int_equal(a->n_units, b->n_units);
	for (size_t i = 0; i < a->n_units; i++) {
		const struct osc_unit *x = &a->units[i], *y = &b->units[i];
		assert_string_equal(x->name, y->name);
		assert_int_equal(x->enable, y->enable);
		assert_int_equal(x->command, y->command);
		if (x->content || y->content)
			assert_string_equal(x->content, y->content);
		assert_int_equal(x->n_dropins, y->n_dropins);
		for (size_t j = 0; j < x->n_dropins; j++) {
			assert_string_equal(x->dropins[j].name, y->dropins[j].name);
			assert_string_equal(x->dropins[j].content, y->dropins[j].content);
		}
		assert_int_equal(x->n_file_paths, y->n_file_paths);
		for (size_t j = 0; j < x->n_file_paths; j++)
			assert_string_equal(x->file_paths[j], y->file_paths[j]);
	}
}

static void gardener_worker_json_equals_yaml(void **state)
{
	size_t ylen, jlen;
	_cleanup_free_ char *y = read_fixture("osc/gardener-worker.yaml", &ylen);
	_cleanup_free_ char *j = read_fixture("osc/gardener-worker.json", &jlen);
	assert_int_equal(j[0], '{');
	struct osc oy = {}, oj = {};
	struct osc_error err;
	assert_int_equal(osc_parse(y, ylen, FORBIDDEN, &oy, NULL), 0);
	int r = osc_parse(j, jlen, FORBIDDEN, &oj, &err);
	if (r < 0)
		fail_msg("parse json: %s", err.message);
	check_gardener_worker(&oj);
	osc_equal(&oy, &oj);
	osc_done(&oy);
	osc_done(&oj);
}

/* The same JSON re-printed by cJSON: tab-indented and compact. */
static void gardener_worker_json_reprinted(void **state)
{
	size_t ylen, jlen;
	_cleanup_free_ char *y = read_fixture("osc/gardener-worker.yaml", &ylen);
	_cleanup_free_ char *j = read_fixture("osc/gardener-worker.json", &jlen);
	cJSON *doc = cJSON_ParseWithLength(j, jlen);
	assert_non_null(doc);
	struct osc oy = {};
	assert_int_equal(osc_parse(y, ylen, FORBIDDEN, &oy, NULL), 0);
	for (int formatted = 0; formatted <= 1; formatted++) {
		_cleanup_free_ char *text = formatted ? cJSON_Print(doc) : cJSON_PrintUnformatted(doc);
		assert_non_null(text);
		assert_true(formatted ? strchr(text, '\t') != NULL : strchr(text, '\n') == NULL);
		struct osc o = {};
		struct osc_error err;
		int r = osc_parse(text, strlen(text), FORBIDDEN, &o, &err);
		if (r < 0)
			fail_msg("%s: %s", formatted ? "formatted" : "compact", err.message);
		osc_equal(&oy, &o);
		osc_done(&o);
	}
	osc_done(&oy);
	cJSON_Delete(doc);
}

static void gardener_worker_v2(void **state)
{
	size_t len;
	_cleanup_free_ char *data = read_fixture("osc/gardener-worker-v2.yaml", &len);
	struct osc o = {};
	assert_int_equal(osc_parse(data, len, FORBIDDEN, &o, NULL), 0);
	assert_int_equal(o.n_files, 12);
	assert_int_equal(o.n_units, 7);
	assert_int_equal(file(&o, "/opt/bin/kubelet")->source, OSC_SOURCE_IMAGE);
	assert_null(osc_find_unit(&o, "valitail.service"));
	assert_null(osc_find_file(&o, "/var/lib/valitail/auth-token"));
	assert_non_null(strstr((const char *)file(&o, "/var/lib/kubelet/config/kubelet")->content, "maxPods: 250\n"));
	assert_string_equal((const char *)file(&o, "/etc/motd")->content, "Managed by node-agent.\n");
	osc_done(&o);
}

static void minimal(void **state)
{
	size_t len;
	_cleanup_free_ char *data = read_fixture("osc/minimal.yaml", &len);
	struct osc o = {};
	assert_int_equal(osc_parse(data, len, NULL, &o, NULL), 0);
	assert_int_equal(o.n_files, 1);
	assert_int_equal(o.n_units, 1);
	assert_string_equal((const char *)o.files[0].content, "hello\n");
	assert_string_equal(o.units[0].file_paths[0], "/etc/hello");
	osc_done(&o);
}

/* Every document under fixtures/osc/bad/ is rejected. */
static void bad_fixtures(void **state)
{
	const char *src = getenv("NA_SRCDIR");
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/tests/fixtures/osc/bad", src ? src : ".");
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char rel[300];
		snprintf(rel, sizeof(rel), "osc/bad/%s", de->d_name);
		size_t len;
		_cleanup_free_ char *data = read_fixture(rel, &len);
		struct osc o = {};
		struct osc_error err;
		int r = osc_parse(data, len, FORBIDDEN, &o, &err);
		if (r >= 0)
			fail_msg("%s was accepted", rel);
		assert_true(strlen(err.message) > 0);
		n++;
	}
	closedir(d);
	assert_true(n >= 8);
}

/* ---- merge, node filtering, typing ------------------------------------- */

static void merge_status_into_spec(void **state)
{
	static const char doc[] =
		"spec:\n"
		"  units:\n"
		"  - name: a.service\n"
		"    enable: true\n"
		"    command: start\n"
		"    content: spec-content\n"
		"    dropIns:\n"
		"    - {name: 10-a.conf, content: spec-a}\n"
		"    - {name: 20-b.conf, content: spec-b}\n"
		"    filePaths: [/etc/z, /etc/a]\n"
		"  - name: b.service\n"
		"    command: restart\n"
		"    content: b\n"
		"  files:\n"
		"  - {path: /etc/z, content: {inline: {data: z}}}\n"
		"status:\n"
		"  extensionUnits:\n"
		"  - name: a.service\n"
		"    enable: false\n"
		"    command: stop\n"
		"    content: ext-content\n"
		"    dropIns:\n"
		"    - {name: 20-b.conf, content: ext-b}\n"
		"    - {name: 05-c.conf}\n"
		"    filePaths: [/etc/a, /etc/m]\n"
		"  - name: b.service\n"
		"    dropIns: [{name: x.conf, content: x}]\n"
		"  - name: c.service\n"
		"  extensionFiles:\n"
		"  - {path: /etc/a, permissions: 0640, content: {inline: {encoding: b64, data: YWFh}}}\n";
	struct osc o = {};
	struct osc_error err;
	int r = parse_str(doc, &o, &err);
	if (r < 0)
		fail_msg("%s", err.message);
	assert_int_equal(o.n_units, 3);
	const struct osc_unit *a = unit(&o, "a.service");
	assert_int_equal(a->enable, 0);
	assert_int_equal(a->command, OSC_COMMAND_STOP);
	assert_string_equal(a->content, "ext-content");
	assert_int_equal(a->n_dropins, 3);
	assert_string_equal(a->dropins[0].name, "05-c.conf");
	assert_string_equal(a->dropins[0].content, "");
	assert_string_equal(a->dropins[1].name, "10-a.conf");
	assert_string_equal(a->dropins[1].content, "spec-a");
	assert_string_equal(a->dropins[2].name, "20-b.conf");
	assert_string_equal(a->dropins[2].content, "ext-b"); /* the later one wins */
	assert_int_equal(a->n_file_paths, 3);                /* appended, sorted, de-duplicated */
	assert_string_equal(a->file_paths[0], "/etc/a");
	assert_string_equal(a->file_paths[1], "/etc/m");
	assert_string_equal(a->file_paths[2], "/etc/z");

	const struct osc_unit *b = unit(&o, "b.service"); /* unset fields are not overwritten */
	assert_int_equal(b->enable, -1);
	assert_int_equal(b->command, OSC_COMMAND_RESTART);
	assert_string_equal(b->content, "b");
	assert_int_equal(b->n_dropins, 1);
	const struct osc_unit *c = unit(&o, "c.service");
	assert_null(c->content);
	assert_int_equal(c->enable, -1);

	assert_int_equal(o.n_files, 2);
	assert_string_equal(o.files[0].path, "/etc/a");
	assert_int_equal(o.files[0].mode, 0640);
	assert_int_equal(o.files[0].content_len, 3);
	assert_string_equal(o.files[1].path, "/etc/z");
	osc_done(&o);
}

static void node_filter(void **state)
{
	static const char doc[] =
		"spec:\n"
		"  files:\n"
		"  - {path: /etc/x, hostName: node-a, content: {inline: {data: a}}}\n"
		"  - {path: /etc/x, hostName: node-b, content: {inline: {data: b}}}\n"
		"  - {path: /etc/y, nodeName: node-b, content: {inline: {data: yy}}}\n"
		"  - {path: /etc/all, hostName: '', content: {inline: {data: all}}}\n";
	struct osc o = {};
	assert_int_equal(osc_parse_for_node(doc, strlen(doc), NULL, "Node-A", &o, NULL), 0);
	assert_int_equal(o.n_files, 2);
	assert_string_equal((const char *)file(&o, "/etc/x")->content, "a");
	assert_non_null(osc_find_file(&o, "/etc/all"));
	osc_done(&o);

	assert_int_equal(osc_parse_for_node(doc, strlen(doc), NULL, "node-b", &o, NULL), 0);
	assert_int_equal(o.n_files, 3);
	assert_string_equal((const char *)file(&o, "/etc/x")->content, "b");
	osc_done(&o);

	/* Without a node name, node-specific files are dropped. */
	assert_int_equal(osc_parse(doc, strlen(doc), NULL, &o, NULL), 0);
	assert_int_equal(o.n_files, 1);
	osc_done(&o);
}

static void permissions(void **state)
{
	static const struct {
		const char *value;
		int mode; /* -1: rejected */
	} table[] = {
		{ "420", 0644 },   { "0644", 0644 }, { "0o644", 0644 }, { "493", 0755 },  { "384", 0600 },
		{ "4095", 07777 }, { "0", 0 },       { "0x1a4", 0644 }, { "null", 0600 }, { "~", 0600 },
		{ "4096", -1 },    { "-1", -1 },     { "\"420\"", -1 }, { "1.5", -1 },    { "true", -1 },
		{ "0899", -1 },    { "[1]", -1 },    { "99999999999999999999999", -1 },
	};
	for (size_t i = 0; i < ELEMENTSOF(table); i++) {
		char doc[256];
		snprintf(doc, sizeof(doc), "spec:\n  files:\n  - path: /etc/x\n    permissions: %s\n"
					   "    content: {inline: {data: x}}\n", table[i].value);
		struct osc o = {};
		struct osc_error err;
		int r = parse_str(doc, &o, &err);
		if (table[i].mode < 0) {
			if (r != -EINVAL)
				fail_msg("permissions %s: accepted", table[i].value);
			assert_non_null(strstr(err.message, "spec.files[0].permissions"));
		} else {
			if (r < 0)
				fail_msg("permissions %s: %s", table[i].value, err.message);
			assert_int_equal(o.files[0].mode, table[i].mode);
			osc_done(&o);
		}
	}
}

static void scalar_typing(void **state)
{
	/* Booleans as yaml.v2 reads them; quoted "true" is a string. */
	static const char *const enables[] = { "true", "True", "yes", "on", "false", "no", "Off" };
	static const int want[] = { 1, 1, 1, 1, 0, 0, 0 };
	for (size_t i = 0; i < ELEMENTSOF(enables); i++) {
		char doc[128];
		snprintf(doc, sizeof(doc), "spec: {units: [{name: a.service, enable: %s}]}", enables[i]);
		struct osc o = {};
		assert_int_equal(parse_str(doc, &o, NULL), 0);
		assert_int_equal(o.units[0].enable, want[i]);
		osc_done(&o);
	}
	struct osc o = {};
	struct osc_error err;
	assert_int_equal(parse_str("spec: {units: [{name: a.service, enable: \"true\"}]}", &o, &err), -EINVAL);
	assert_string_equal(err.message, "spec.units[0].enable: expected a boolean, got a string 'true' (line 1)");
	/* yaml.v2 (which Gardener decodes with) reads a plain y as a boolean. */
	assert_int_equal(parse_str("spec: {files: [{path: /x, content: {inline: {data: y}}}]}", &o, &err), -EINVAL);
	assert_non_null(strstr(err.message, "data: expected a string, got a boolean 'y'"));
	assert_int_equal(parse_str("spec: {files: [{path: /x, content: {inline: {data: 'y'}}}]}", &o, &err), 0);
	osc_done(&o);
	/* Explicit tags. */
	assert_int_equal(parse_str("spec: {units: [{name: a.service, enable: !!bool true, content: !!str 12}]}",
				   &o, &err), 0);
	assert_string_equal(o.units[0].content, "12");
	osc_done(&o);
	assert_int_equal(parse_str("spec: {units: [{name: a.service, content: 12}]}", &o, &err), -EINVAL);
	assert_non_null(strstr(err.message, "spec.units[0].content: expected a string, got an integer '12'"));
	assert_int_equal(parse_str("spec: {units: [{name: a.service, content: !!binary aGk=}]}", &o, &err), -EINVAL);
	assert_int_equal(parse_str("spec: {units: [{name: a.service, content: !foo x}]}", &o, &err), -EINVAL);
	/* Literal block with a plain-looking value is a string. */
	assert_int_equal(parse_str("spec:\n  units:\n  - name: a.service\n    content: |\n      true\n", &o, &err), 0);
	assert_string_equal(o.units[0].content, "true\n");
	osc_done(&o);
	/* Unknown fields, metadata and other spec parts are ignored; null is absent. */
	assert_int_equal(parse_str("apiVersion: extensions.gardener.cloud/v1alpha1\nkind: OperatingSystemConfig\n"
				   "metadata: {name: x, labels: {a: b}}\nfoo: [1, {bar: *}]\n", &o, &err) < 0, 1);
	assert_int_equal(parse_str("metadata: {name: x, labels: {a: b}}\nfoo: [1, {bar: baz}]\n"
				   "spec: {type: debian, criConfig: {name: containerd}, files: null, units: ~,\n"
				   "  providerConfig: {x: [1, 2, 3]}}\nstatus: null\n", &o, &err), 0);
	assert_int_equal(o.n_files, 0);
	assert_int_equal(o.n_units, 0);
	osc_done(&o);
	assert_int_equal(parse_str("spec: {units: [{name: a.service, dropIns: null, filePaths: null, "
				   "command: null, unknown: {deep: [1]}}]}", &o, &err), 0);
	osc_done(&o);
	/* JSON escapes, including "\/" and \u. */
	assert_int_equal(parse_str("{\"spec\": {\"files\": [{\"path\": \"\\/etc\\/x\", \"content\": "
				   "{\"inline\": {\"data\": \"a\\u00e9\\n\\t\"}}}]}}", &o, &err), 0);
	assert_string_equal(o.files[0].path, "/etc/x");
	assert_string_equal((const char *)o.files[0].content, "a\xc3\xa9\n\t");
	osc_done(&o);
	/* Plain content may carry a NUL (it is bytes); b64 newlines are accepted. */
	assert_int_equal(parse_str("spec: {files: [{path: /x, content: {inline: {data: \"a\\0b\"}}}]}", &o, &err), 0);
	assert_int_equal(o.files[0].content_len, 3);
	assert_int_equal(o.files[0].content[1], 0);
	osc_done(&o);
	assert_int_equal(parse_str("spec:\n  files:\n  - path: /x\n    content:\n      inline:\n        encoding: b64\n"
				   "        data: |\n          YWFh\n          YmJi\n", &o, &err), 0);
	assert_string_equal((const char *)o.files[0].content, "aaabbb");
	osc_done(&o);
}

/* content.imageRef: kept in the model, not resolved. */
static void image_ref(void **state)
{
	static const char doc[] =
		"spec:\n"
		"  files:\n"
		"  - path: /opt/bin/kubelet\n"
		"    permissions: 493\n"
		"    content:\n"
		"      imageRef:\n"
		"        image: europe-docker.pkg.dev/gardener-project/releases/hyperkube:v1.31.1@sha256:0123abcd\n"
		"        filePathInImage: /kubelet\n"
		"        unknownField: ignored\n"
		"  - {path: /etc/x, content: {inline: {data: x}}}\n"
		"status:\n"
		"  extensionFiles:\n"
		"  - {path: /opt/bin/tool, content: {transmitUnencoded: true, imageRef: {image: 'r/t:1', "
		"filePathInImage: /usr/bin/tool}}}\n";
	struct osc o = {};
	struct osc_error err;
	int r = parse_str(doc, &o, &err);
	if (r < 0)
		fail_msg("%s", err.message);
	assert_int_equal(o.n_files, 3);
	const struct osc_file *f = file(&o, "/opt/bin/kubelet");
	assert_int_equal(f->source, OSC_SOURCE_IMAGE);
	assert_int_equal(f->mode, 0755);
	assert_string_equal(f->image,
			    "europe-docker.pkg.dev/gardener-project/releases/hyperkube:v1.31.1@sha256:0123abcd");
	assert_string_equal(f->path_in_image, "/kubelet");
	assert_non_null(f->content);
	assert_int_equal(f->content_len, 0);
	assert_int_equal(f->content[0], '\0');
	assert_false(f->transmit_unencoded);

	f = file(&o, "/opt/bin/tool");
	assert_int_equal(f->source, OSC_SOURCE_IMAGE);
	assert_int_equal(f->mode, 0600); /* default */
	assert_string_equal(f->image, "r/t:1");
	assert_string_equal(f->path_in_image, "/usr/bin/tool");
	assert_true(f->transmit_unencoded);

	f = file(&o, "/etc/x");
	assert_int_equal(f->source, OSC_SOURCE_INLINE);
	assert_null(f->image);
	assert_null(f->path_in_image);
	osc_done(&o);

	/* The same through JSON; a file filtered out by hostName is freed. */
	static const char json[] =
		"{\"spec\": {\"files\": [{\"path\": \"/opt/bin/kubelet\", \"content\": {\"imageRef\": "
		"{\"image\": \"hyperkube:v1\", \"filePathInImage\": \"/kubelet\"}}}, "
		"{\"path\": \"/opt/bin/other\", \"hostName\": \"elsewhere\", \"content\": {\"imageRef\": "
		"{\"image\": \"x:1\", \"filePathInImage\": \"/x\"}}}]}}";
	assert_int_equal(parse_str(json, &o, &err), 0);
	assert_int_equal(o.n_files, 1);
	assert_string_equal(o.files[0].image, "hyperkube:v1");
	osc_done(&o);

	/* The image reference ceiling: exactly OSC_IMAGE_MAX bytes, then one more. */
	char big[OSC_IMAGE_MAX + 2];
	char d2[OSC_IMAGE_MAX + 200];
	memset(big, 'a', sizeof(big));
	big[OSC_IMAGE_MAX] = '\0';
	snprintf(d2, sizeof(d2), "spec: {files: [{path: /a, content: {imageRef: {image: %s, filePathInImage: /k}}}]}",
		 big);
	assert_int_equal(parse_str(d2, &o, &err), 0);
	assert_int_equal(strlen(o.files[0].image), OSC_IMAGE_MAX);
	osc_done(&o);
	big[OSC_IMAGE_MAX] = 'a';
	big[OSC_IMAGE_MAX + 1] = '\0';
	snprintf(d2, sizeof(d2), "spec: {files: [{path: /a, content: {imageRef: {image: %s, filePathInImage: /k}}}]}",
		 big);
	o.n_files = 4242;
	assert_int_equal(parse_str(d2, &o, &err), -EMSGSIZE);
	assert_non_null(strstr(err.message, "spec.files[0].content.imageRef.image: image reference 'aaaa"));
	assert_non_null(strstr(err.message, "longer than 512 bytes"));
	assert_int_equal(o.n_files, 4242);
}

/* content.secretRef is kept: name and dataKey, empty content, unresolved
 * (gardener/gardener pkg/apis/extensions/v1alpha1/types_operatingsystemconfig.go
 * FileContentSecretRef). */
static void secret_ref_fixture(void **state)
{
	size_t len;
	_cleanup_free_ char *data = read_fixture("osc/secret-ref.yaml", &len);
	struct osc o = {};
	struct osc_error err;
	assert_int_equal(osc_parse(data, len, FORBIDDEN, &o, &err), 0);
	assert_int_equal(o.n_files, 1);
	assert_string_equal(o.files[0].path, "/etc/x");
	assert_int_equal(o.files[0].source, OSC_SOURCE_SECRET);
	assert_string_equal(o.files[0].secret_name, "some-secret");
	assert_string_equal(o.files[0].secret_key, "key");
	assert_false(o.files[0].secret_resolved);
	assert_int_equal(o.files[0].content_len, 0);
	assert_non_null(o.files[0].content);
	assert_null(o.files[0].image);
	osc_done(&o);
}

static void secret_names(void **state)
{
	assert_true(osc_secret_name_is_valid("a"));
	assert_true(osc_secret_name_is_valid("etcd-ca.bundle-1"));
	assert_false(osc_secret_name_is_valid(""));
	assert_false(osc_secret_name_is_valid("A"));
	assert_false(osc_secret_name_is_valid("-a"));
	assert_false(osc_secret_name_is_valid("a."));
	assert_false(osc_secret_name_is_valid("a/b"));
	assert_false(osc_secret_name_is_valid("a%2fb"));
	assert_false(osc_secret_name_is_valid(".."));
	char big[OSC_SECRET_NAME_MAX + 2];
	memset(big, 'a', sizeof(big));
	big[OSC_SECRET_NAME_MAX] = '\0';
	assert_true(osc_secret_name_is_valid(big));
	big[OSC_SECRET_NAME_MAX] = 'a';
	big[OSC_SECRET_NAME_MAX + 1] = '\0';
	assert_false(osc_secret_name_is_valid(big));
	assert_true(osc_secret_key_is_valid("ca.crt"));
	assert_true(osc_secret_key_is_valid("Key_1-x"));
	assert_true(osc_secret_key_is_valid(".dot"));
	assert_false(osc_secret_key_is_valid("."));
	assert_false(osc_secret_key_is_valid(".."));
	assert_false(osc_secret_key_is_valid("a/b"));
	assert_false(osc_secret_key_is_valid("a b"));
	assert_false(osc_secret_key_is_valid(""));
}

/* ---- rejections ---------------------------------------------------------- */

static void bad_documents(void **state)
{
	static const struct {
		const char *doc;
		int r;
		const char *msg; /* substring of the error */
	} table[] = {
		{ "", -EINVAL, "empty document" },
		{ "[]", -EINVAL, "(document): expected a mapping, got a list" },
		{ "just a string", -EINVAL, "(document): expected a mapping" },
		{ "a: 1\n---\nb: 2\n", -EINVAL, "more than one document" },
		{ "spec: {files: [}", -EINVAL, "yaml: line 1" },
		{ "\tspec: {}", -EINVAL, "yaml: line 1" },
		{ "apiVersion: v1\n", -EINVAL, "apiVersion: 'v1' is not extensions.gardener.cloud/v1alpha1" },
		{ "kind: Secret\n", -EINVAL, "kind: 'Secret' is not OperatingSystemConfig" },
		{ "kind: 1\n", -EINVAL, "kind: expected a string, got an integer '1'" },
		{ "spec: []\n", -EINVAL, "spec: expected a mapping, got a list" },
		{ "spec: {files: {}}\n", -EINVAL, "spec.files: expected a list, got a mapping" },
		{ "status: {extensionUnits: 3}\n", -EINVAL, "status.extensionUnits: expected a list, got an integer '3'" },
		{ "spec: {files: [x]}\n", -EINVAL, "spec.files[0]: expected a mapping, got a string 'x'" },
		{ "spec: {a: 1, a: 2, files: [], files: []}\n", -EINVAL, "spec.files: duplicate key" },
		/* paths */
		{ "spec: {files: [{content: {inline: {data: x}}}]}", -EINVAL, "spec.files[0].path: missing" },
		{ "spec: {files: [{path: etc/x, content: {inline: {data: x}}}]}", -EINVAL,
		  "spec.files[0].path: relative path 'etc/x'" },
		{ "spec: {files: [{path: '', content: {inline: {data: x}}}]}", -EINVAL, "spec.files[0].path: empty path" },
		{ "spec: {files: [{path: /, content: {inline: {data: x}}}]}", -EINVAL, "no file name in path '/'" },
		{ "spec: {files: [{path: /etc/../x, content: {inline: {data: x}}}]}", -EINVAL,
		  "spec.files[0].path: '..' component in path '/etc/../x'" },
		{ "spec: {files: [{path: /etc/./x, content: {inline: {data: x}}}]}", -EINVAL, "'.' component in path" },
		{ "spec: {files: [{path: /etc//x, content: {inline: {data: x}}}]}", -EINVAL, "'//' in path '/etc//x'" },
		{ "spec: {files: [{path: /etc/x/, content: {inline: {data: x}}}]}", -EINVAL, "trailing '/' in path" },
		{ "spec: {files: [{path: \"/etc/x\\0y\", content: {inline: {data: x}}}]}", -EINVAL,
		  "NUL byte in path '/etc/x\\x00y'" },
		{ "spec: {files: [{path: \"/etc/x\\ny\", content: {inline: {data: x}}}]}", -EINVAL,
		  "control character in path '/etc/x\\x0ay'" },
		{ "spec: {files: [{path: 42, content: {inline: {data: x}}}]}", -EINVAL,
		  "spec.files[0].path: expected a string, got an integer '42'" },
		{ "spec: {files: [{path: /var/lib/node-agent/desired.json, content: {inline: {data: x}}}]}", -EINVAL,
		  "spec.files[0].path: path '/var/lib/node-agent/desired.json' is inside the agent's state directory" },
		{ "spec: {files: [{path: /var/lib/node-agent, content: {inline: {data: x}}}]}", -EINVAL,
		  "inside the agent's state directory" },
		{ "spec: {files: [{path: /a, content: {inline: {data: x}}}, {path: /b, content: {inline: {data: x}}},"
		  " {path: /a, content: {inline: {data: z}}}]}", -EINVAL,
		  "spec.files[2].path: duplicate path '/a' (also spec.files[0])" },
		{ "spec: {files: [{path: /a, content: {inline: {data: x}}}]}\n"
		  "status: {extensionFiles: [{path: /a, content: {inline: {data: x}}}]}", -EINVAL,
		  "status.extensionFiles[0].path: duplicate path '/a' (also spec.files[0])" },
		/* content */
		{ "spec: {files: [{path: /a}]}", -EINVAL, "spec.files[0].content: missing" },
		{ "spec: {files: [{path: /a, content: {}}]}", -EINVAL, "spec.files[0].content.inline: missing" },
		{ "spec: {files: [{path: /a, content: {secretRef: {name: s, dataKey: k}, inline: {data: x}}}]}",
		  -EINVAL, "spec.files[0].content: secretRef given with inline" },
		{ "spec: {files: [{path: /a, content: {secretRef: {dataKey: k}}}]}", -EINVAL,
		  "spec.files[0].content.secretRef.name" },
		{ "spec: {files: [{path: /a, content: {secretRef: {name: s}}}]}", -EINVAL,
		  "spec.files[0].content.secretRef.dataKey" },
		{ "spec: {files: [{path: /a, content: {secretRef: {name: ../x, dataKey: k}}}]}", -EINVAL,
		  "secretRef.name: '../x' is not a Secret name" },
		{ "spec: {files: [{path: /a, content: {secretRef: {name: s, dataKey: a/b}}}]}", -EINVAL,
		  "secretRef.dataKey: 'a/b' is not a Secret data key" },
		{ "spec: {files: [{path: /a, content: {secretRef: [s]}}]}", -EINVAL, "spec.files[0].content.secretRef" },
		{ "spec: {files: [{path: /a, content: {secretRef: {name: s, dataKey: k}, "
		  "imageRef: {image: i, filePathInImage: /k}}}]}", -EINVAL, "secretRef given with imageRef" },
		/* imageRef */
		{ "spec: {files: [{path: /a, content: {imageRef: x}}]}", -EINVAL,
		  "spec.files[0].content.imageRef: expected a mapping, got a string 'x'" },
		{ "spec: {files: [{path: /a, content: {imageRef: {filePathInImage: /k}}}]}", -EINVAL,
		  "spec.files[0].content.imageRef.image: missing" },
		{ "spec: {files: [{path: /a, content: {imageRef: {image: '', filePathInImage: /k}}}]}", -EINVAL,
		  "spec.files[0].content.imageRef.image: empty image reference" },
		{ "spec: {files: [{path: /a, content: {imageRef: {image: 5, filePathInImage: /k}}}]}", -EINVAL,
		  "spec.files[0].content.imageRef.image: expected a string, got an integer '5'" },
		{ "spec: {files: [{path: /a, content: {imageRef: {image: 'a b', filePathInImage: /k}}}]}", -EINVAL,
		  "spec.files[0].content.imageRef.image: image reference 'a b' contains a byte that is not printable" },
		{ "spec: {files: [{path: /a, content: {imageRef: {image: \"a\\nb\", filePathInImage: /k}}}]}",
		  -EINVAL, "spec.files[0].content.imageRef.image: image reference 'a\\x0ab' contains" },
		{ "spec: {files: [{path: /a, content: {imageRef: {image: \"a\\0b\", filePathInImage: /k}}}]}",
		  -EINVAL, "image reference 'a\\x00b' contains" },
		{ "spec: {files: [{path: /a, content: {imageRef: {image: \"r/\u00e9:1\", filePathInImage: /k}}}]}",
		  -EINVAL, "spec.files[0].content.imageRef.image: image reference" },
		{ "spec: {files: [{path: /a, content: {imageRef: {image: i}}}]}", -EINVAL,
		  "spec.files[0].content.imageRef.filePathInImage: missing" },
		{ "spec: {files: [{path: /a, content: {imageRef: {image: i, filePathInImage: kubelet}}}]}", -EINVAL,
		  "spec.files[0].content.imageRef.filePathInImage: relative path 'kubelet'" },
		{ "spec: {files: [{path: /a, content: {imageRef: {image: i, filePathInImage: /a/../k}}}]}", -EINVAL,
		  "spec.files[0].content.imageRef.filePathInImage: '..' component in path '/a/../k'" },
		{ "spec: {files: [{path: /a, content: {imageRef: {image: i, filePathInImage: /}}}]}", -EINVAL,
		  "spec.files[0].content.imageRef.filePathInImage: no file name in path '/'" },
		{ "spec: {files: [{path: /a, content: {imageRef: {image: i, filePathInImage: [/k]}}}]}", -EINVAL,
		  "spec.files[0].content.imageRef.filePathInImage: expected a string, got a list" },
		{ "spec: {files: [{path: /a, content: {imageRef: {image: i, filePathInImage: /k}, "
		  "inline: {data: x}}}]}", -EINVAL,
		  "spec.files[0].content: both inline and imageRef given" },
		{ "status: {extensionFiles: [{path: /a, content: {imageRef: {image: i, filePathInImage: \"/k\\tx\"}}}]}",
		  -EINVAL, "status.extensionFiles[0].content.imageRef.filePathInImage: control character in path" },
		{ "spec: {files: [{path: /var/lib/node-agent/x, content: {imageRef: {image: i, filePathInImage: /k}}}]}",
		  -EINVAL, "spec.files[0].path: path '/var/lib/node-agent/x' is inside the agent's state directory" },
		{ "spec: {files: [{path: /a, content: {imageRef: {image: i, filePathInImage: /k}}},"
		  " {path: /a, content: {inline: {data: x}}}]}", -EINVAL,
		  "spec.files[1].path: duplicate path '/a' (also spec.files[0])" },
		{ "spec: {files: [{path: /a, content: {inline: {encoding: base64, data: YQ==}}}]}", -EINVAL,
		  "spec.files[0].content.inline.encoding: unknown encoding 'base64'" },
		{ "spec: {files: [{path: /a, content: {inline: {encoding: b64, data: 'YQ='}}}]}", -EINVAL,
		  "spec.files[0].content.inline.data: invalid base64 'YQ='" },
		{ "spec: {files: [{path: /a, content: {inline: {encoding: b64, data: 'YR=='}}}]}", -EINVAL,
		  "invalid base64" },
		{ "spec: {files: [{path: /a, content: {inline: {encoding: b64, data: 'Y Q=='}}}]}", -EINVAL,
		  "invalid base64" },
		{ "spec: {files: [{path: /a, content: {inline: {data: [x]}}}]}", -EINVAL,
		  "spec.files[0].content.inline.data: expected a string, got a list" },
		{ "spec: {files: [{path: /a, content: {transmitUnencoded: 1, inline: {data: x}}}]}", -EINVAL,
		  "spec.files[0].content.transmitUnencoded: expected a boolean, got an integer '1'" },
		{ "spec: {files: [{path: /a, hostName: 1, content: {inline: {data: x}}}]}", -EINVAL,
		  "spec.files[0].hostName: expected a string" },
		/* units */
		{ "spec: {units: [{content: x}]}", -EINVAL, "spec.units[0].name: missing" },
		{ "spec: {units: [{name: kubelet}]}", -EINVAL, "spec.units[0].name: invalid systemd unit name 'kubelet'" },
		{ "spec: {units: [{name: ../x.service}]}", -EINVAL, "invalid systemd unit name '../x.service'" },
		{ "spec: {units: [{name: a/b.service}]}", -EINVAL, "invalid systemd unit name" },
		{ "spec: {units: [{name: \"a\\0.service\"}]}", -EINVAL, "invalid systemd unit name 'a\\x00.service'" },
		{ "status: {extensionUnits: [{name: a.service}, {name: b.service}, {name: a.service}]}", -EINVAL,
		  "status.extensionUnits[2].name: duplicate unit 'a.service' (also status.extensionUnits[0])" },
		{ "spec: {units: [{name: a.service, command: reload}]}", -EINVAL,
		  "spec.units[0].command: unknown command 'reload'" },
		{ "spec: {units: [{name: a.service, enable: 1}]}", -EINVAL,
		  "spec.units[0].enable: expected a boolean, got an integer '1'" },
		{ "spec: {units: [{name: a.service, content: \"x\\0y\"}]}", -EINVAL,
		  "spec.units[0].content: contains a NUL byte" },
		{ "spec: {units: [{name: a.service, dropIns: {}}]}", -EINVAL,
		  "spec.units[0].dropIns: expected a list, got a mapping" },
		{ "spec: {units: [{name: a.service, dropIns: [{content: x}]}]}", -EINVAL,
		  "spec.units[0].dropIns[0].name: missing" },
		{ "spec: {units: [{name: a.service, dropIns: [{name: ../x.conf}]}]}", -EINVAL,
		  "spec.units[0].dropIns[0].name: invalid drop-in name '../x.conf'" },
		{ "spec: {units: [{name: a.service, dropIns: [{name: x.txt}]}]}", -EINVAL, "invalid drop-in name 'x.txt'" },
		{ "spec: {units: [{name: a.service, dropIns: [{name: .conf}]}]}", -EINVAL, "invalid drop-in name" },
		{ "spec: {units: [{name: a.service, dropIns: [{name: a.conf}, {name: a.conf}]}]}", -EINVAL,
		  "spec.units[0].dropIns[1].name: duplicate drop-in 'a.conf' (also spec.units[0].dropIns[0])" },
		{ "spec: {units: [{name: a.service, dropIns: [{name: a.conf, content: 5}]}]}", -EINVAL,
		  "spec.units[0].dropIns[0].content: expected a string" },
		{ "spec: {units: [{name: a.service, filePaths: [etc/x]}]}", -EINVAL,
		  "spec.units[0].filePaths[0]: relative path 'etc/x'" },
		{ "spec: {units: [{name: a.service, filePaths: [/a, 1]}]}", -EINVAL,
		  "spec.units[0].filePaths[1]: expected a string, got an integer '1'" },
		{ "spec: {units: [{name: a.service, filePaths: /a}]}", -EINVAL,
		  "spec.units[0].filePaths: expected a list, got a string '/a'" },
		/* YAML features we refuse */
		{ "a: &x {b: 1}\nc: *x\n", -EINVAL, "aliases are not supported" },
		{ "a: &x [1]\n<<: *x\n", -EINVAL, "aliases are not supported" },
	};
	for (size_t i = 0; i < ELEMENTSOF(table); i++) {
		struct osc o = { .n_files = 4242 };
		struct osc_error err;
		int r = parse_str(table[i].doc, &o, &err);
		if (r != table[i].r || !strstr(err.message, table[i].msg))
			fail_msg("case %zu: %s\n  want %d '%s'\n  got  %d '%s'", i, table[i].doc, table[i].r,
				 table[i].msg, r, err.message);
		assert_int_equal(o.n_files, 4242); /* untouched */
	}
}

/* A long quoted value is truncated in the message. */
static void error_quotes_are_bounded(void **state)
{
	char doc[4096];
	char path[2000];
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	snprintf(doc, sizeof(doc), "spec: {files: [{path: %s, content: {inline: {data: x}}}]}", path);
	struct osc o = {};
	struct osc_error err;
	assert_int_equal(parse_str(doc, &o, &err), -EMSGSIZE);
	assert_non_null(strstr(err.message, "spec.files[0].path: path too long 'aaaa"));
	assert_non_null(strstr(err.message, "...'"));
	assert_true(strlen(err.message) < 200);
	assert_int_equal(parse_str(doc, &o, NULL), -EMSGSIZE); /* err is optional */
}

/* ---- ceilings ------------------------------------------------------------ */

static char *repeat_doc(const char *head, const char *item, size_t n, const char *tail)
{
	size_t cap = strlen(head) + (strlen(item) + 20) * n + strlen(tail) + 64;
	char *s = malloc(cap);
	assert_non_null(s);
	size_t o = 0;
	o += (size_t)snprintf(s + o, cap - o, "%s", head);
	const char *hash = strchr(item, '#'); /* replaced by the index */
	for (size_t i = 0; i < n; i++) {
		if (hash)
			o += (size_t)snprintf(s + o, cap - o, "%.*s%zu%s", (int)(hash - item), item, i, hash + 1);
		else
			o += (size_t)snprintf(s + o, cap - o, "%s", item);
	}
	snprintf(s + o, cap - o, "%s", tail);
	return s;
}

static void ceilings(void **state)
{
	struct osc o = {};
	struct osc_error err;

	/* Files: exactly the maximum is fine, one more is not. */
	_cleanup_free_ char *files_ok =
		repeat_doc("spec: {files: [", "{path: /f#, content: {inline: {data: x}}},", OSC_FILES_MAX, "]}");
	assert_int_equal(parse_str(files_ok, &o, &err), 0);
	assert_int_equal(o.n_files, OSC_FILES_MAX);
	osc_done(&o);
	_cleanup_free_ char *files_bad =
		repeat_doc("spec: {files: [", "{path: /f#, content: {inline: {data: x}}},", OSC_FILES_MAX + 1, "]}");
	assert_int_equal(parse_str(files_bad, &o, &err), -EMSGSIZE);
	assert_non_null(strstr(err.message, "more than 1024 files"));

	_cleanup_free_ char *units_bad =
		repeat_doc("spec: {units: [", "{name: u#.service},", OSC_UNITS_MAX + 1, "]}");
	assert_int_equal(parse_str(units_bad, &o, &err), -EMSGSIZE);
	assert_non_null(strstr(err.message, "more than 512 units"));

	_cleanup_free_ char *dropins_bad = repeat_doc("spec: {units: [{name: a.service, dropIns: [",
						       "{name: d#.conf},", OSC_DROPINS_MAX + 1, "]}]}");
	assert_int_equal(parse_str(dropins_bad, &o, &err), -EMSGSIZE);
	assert_non_null(strstr(err.message, "spec.units[0].dropIns: more than"));
	/* The per-unit ceiling also holds after the merge. */
	_cleanup_free_ char *dropins_spec =
		repeat_doc("spec: {units: [{name: a.service, dropIns: [", "{name: d#.conf},", OSC_DROPINS_MAX, "]}]}");
	size_t l = strlen(dropins_spec);
	char *merged = malloc(l + 128);
	snprintf(merged, l + 128, "%s\nstatus: {extensionUnits: [{name: a.service, dropIns: [{name: extra.conf}]}]}",
		 dropins_spec);
	assert_int_equal(parse_str(merged, &o, &err), -EMSGSIZE);
	assert_non_null(strstr(err.message, "status.extensionUnits[0].dropIns: more than"));
	free(merged);

	_cleanup_free_ char *paths_bad = repeat_doc("spec: {units: [{name: a.service, filePaths: [", "/p#,",
						     OSC_FILE_PATHS_MAX + 1, "]}]}");
	assert_int_equal(parse_str(paths_bad, &o, &err), -EMSGSIZE);

	/* Content: 4 MiB decoded is fine, one byte more is not (plain and b64). */
	size_t big = OSC_FILE_CONTENT_MAX + 1;
	char *doc = malloc(big + 256);
	int n = snprintf(doc, 256, "spec: {files: [{path: /big, content: {inline: {data: ");
	memset(doc + n, 'x', big);
	snprintf(doc + n + big, 64, "}}}]}");
	assert_int_equal(parse_str(doc, &o, &err), -EMSGSIZE);
	assert_non_null(strstr(err.message, "spec.files[0].content.inline.data: content larger than"));
	memset(doc + n + big - 1, '}', 1); /* exactly the maximum */
	snprintf(doc + n + big - 1, 64, "}}}]}");
	assert_int_equal(parse_str(doc, &o, &err), 0);
	assert_int_equal(o.files[0].content_len, OSC_FILE_CONTENT_MAX);
	osc_done(&o);
	free(doc);

	size_t b64len = (OSC_FILE_CONTENT_MAX + 3) / 3 * 4;
	doc = malloc(b64len + 256);
	n = snprintf(doc, 256, "spec: {files: [{path: /big, content: {inline: {encoding: b64, data: ");
	memset(doc + n, 'A', b64len);
	snprintf(doc + n + b64len, 64, "}}}]}");
	assert_int_equal(parse_str(doc, &o, &err), -EMSGSIZE);
	assert_non_null(strstr(err.message, "decoded content larger than"));
	free(doc);

	/* Unit content. */
	doc = malloc(OSC_UNIT_CONTENT_MAX + 256);
	n = snprintf(doc, 256, "spec: {units: [{name: a.service, content: ");
	memset(doc + n, 'x', OSC_UNIT_CONTENT_MAX + 1);
	snprintf(doc + n + OSC_UNIT_CONTENT_MAX + 1, 64, "}]}");
	assert_int_equal(parse_str(doc, &o, &err), -EMSGSIZE);
	assert_non_null(strstr(err.message, "spec.units[0].content: longer than"));
	free(doc);

	/* Whole input. */
	doc = malloc(OSC_INPUT_MAX + 1);
	memset(doc, ' ', OSC_INPUT_MAX + 1);
	assert_int_equal(osc_parse(doc, OSC_INPUT_MAX + 1, NULL, &o, &err), -EMSGSIZE);
	free(doc);

	/* Nodes and depth. */
	_cleanup_free_ char *many = repeat_doc("x: [", "1,", OSC_YAML_EVENTS_MAX, "]");
	assert_int_equal(parse_str(many, &o, &err), -EMSGSIZE);
	assert_non_null(strstr(err.message, "more than 262144 nodes"));
	char deep[512] = "x: ";
	for (int i = 0; i < OSC_YAML_DEPTH_MAX + 1; i++)
		strncat(deep, "[", sizeof(deep) - strlen(deep) - 1);
	assert_int_equal(parse_str(deep, &o, &err), -EMSGSIZE);
	assert_non_null(strstr(err.message, "nested deeper than 64"));
}

static void unit_names(void **state)
{
	static const char *const good[] = {
		"kubelet.service", "a.socket", "a.target", "a.timer", "a.path", "var-lib.mount", "a.automount",
		"a.slice", "a.scope", "a.swap", "dev-sda.device", "getty@tty1.service", "getty@.service",
		"a@b@c.service", "a\\x2db.service", "a:b_c.d-e.service", "x.y.service",
	};
	static const char *const bad[] = {
		"", "kubelet", ".service", "@a.service", "a.Service", "a.conf", "a b.service", "a/b.service",
		"../a.service", "a.service\n", "ä.service", "a.", "a..", "a;b.service", "a$b.service",
	};
	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		if (!osc_unit_name_is_valid(good[i]))
			fail_msg("'%s' rejected", good[i]);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (osc_unit_name_is_valid(bad[i]))
			fail_msg("'%s' accepted", bad[i]);
	assert_false(osc_unit_name_is_valid(NULL));
	char name[300];
	memset(name, 'a', sizeof(name));
	memcpy(name + 255 - 8, ".service", 9); /* 255 bytes */
	assert_true(osc_unit_name_is_valid(name));
	memset(name, 'a', sizeof(name));
	memcpy(name + 256 - 8, ".service", 9); /* 256 bytes */
	assert_false(osc_unit_name_is_valid(name));

	static const char *const good_dropins[] = { "10-a.conf", "a.conf", "x_y@z:1+2,3=4~5.conf", "a.b.conf" };
	static const char *const bad_dropins[] = { "", ".conf", ".a.conf", "a.con", "a/b.conf", "..conf",
						   "a b.conf", "a.conf/", "a\n.conf", "a.CONF" };
	for (size_t i = 0; i < ELEMENTSOF(good_dropins); i++)
		if (!osc_dropin_name_is_valid(good_dropins[i]))
			fail_msg("drop-in '%s' rejected", good_dropins[i]);
	for (size_t i = 0; i < ELEMENTSOF(bad_dropins); i++)
		if (osc_dropin_name_is_valid(bad_dropins[i]))
			fail_msg("drop-in '%s' accepted", bad_dropins[i]);
}

static void forbidden_prefix_forms(void **state)
{
	static const char doc[] = "spec: {files: [{path: /var/lib/node-agent2/x, content: {inline: {data: x}}}]}";
	struct osc o = {};
	/* A sibling with the same prefix string is not inside. */
	assert_int_equal(osc_parse(doc, strlen(doc), "/var/lib/node-agent", &o, NULL), 0);
	osc_done(&o);
	/* A trailing slash on the prefix is ignored. */
	assert_int_equal(osc_parse(doc, strlen(doc), "/var/lib/node-agent2/", &o, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gardener_worker_yaml),
		cmocka_unit_test(gardener_worker_json_equals_yaml),
		cmocka_unit_test(gardener_worker_json_reprinted),
		cmocka_unit_test(gardener_worker_v2),
		cmocka_unit_test(minimal),
		cmocka_unit_test(bad_fixtures),
		cmocka_unit_test(merge_status_into_spec),
		cmocka_unit_test(node_filter),
		cmocka_unit_test(permissions),
		cmocka_unit_test(scalar_typing),
		cmocka_unit_test(image_ref),
		cmocka_unit_test(secret_ref_fixture),
		cmocka_unit_test(secret_names),
		cmocka_unit_test(bad_documents),
		cmocka_unit_test(error_quotes_are_bounded),
		cmocka_unit_test(ceilings),
		cmocka_unit_test(unit_names),
		cmocka_unit_test(forbidden_prefix_forms),
	};
	return cmocka_run_group_tests_name("osc", tests, NULL, NULL);
}
