/* Unit tests for lib/node/toml.c: what containerd configs hold parses, and
 * writes back to a document that parses to the same tree (and writes the
 * same text again); TOML's refusals name the line; edits keep the order. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fsx.h"
#include "toml.h"


static struct toml_node *parse_ok(const char *text)
{
	struct toml_node *t = NULL;
	char err[TOML_ERROR_MAX];
	int r = toml_parse(text, strlen(text), &t, err, sizeof(err));
	if (r < 0)
		fail_msg("toml_parse: %s: %s", strerror(-r), err);
	return t;
}

/* text -> tree -> text2 -> tree -> text3: text2 == text3. */
static char *round_trip(const char *text)
{
	_cleanup_(toml_freep) struct toml_node *t = parse_ok(text);
	char *a = NULL, *b = NULL;
	assert_int_equal(toml_format(t, &a), 0);
	_cleanup_(toml_freep) struct toml_node *t2 = parse_ok(a);
	assert_int_equal(toml_format(t2, &b), 0);
	if (strcmp(a, b) != 0)
		fail_msg("not stable:\n%s\n---\n%s", a, b);
	free(b);
	return a;
}

static const struct toml_node *at(const struct toml_node *t, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = buf, *e; t && s; s = e) {
		e = strchr(s, '|');
		if (e)
			*e++ = '\0';
		t = toml_get(t, s);
	}
	return t;
}

static void gpu_image(void **state)
{
	(void)state;
	_cleanup_free_ char *data = NULL;
	size_t len;
	const char *src = getenv("SRCDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/tests/fixtures/containerd/gpu-image-1.6.toml", src ? src : ".");
	assert_int_equal(fsx_read_at(AT_FDCWD, path, 1u << 20, &data, &len), 0);
	_cleanup_(toml_freep) struct toml_node *t = parse_ok(data);
	assert_int_equal(at(t, "version")->i, 2);
	assert_int_equal(at(t, "oom_score")->i, -999);
	const struct toml_node *n =
		at(t, "plugins|io.containerd.grpc.v1.cri|containerd|runtimes|nvidia|options|BinaryName");
	assert_non_null(n);
	assert_string_equal(n->str, "/usr/bin/nvidia-container-runtime");
	const struct toml_node *l = at(t, "proxy_plugins_list");
	assert_int_equal(l->n_items, 2);
	assert_string_equal(toml_get(l->items[1], "name")->str, "b");
	assert_true(toml_get(l->items[1], "weight")->f == 1.5);
	_cleanup_free_ char *out = round_trip(data);
	assert_non_null(strstr(out, "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
				    "  BinaryName = \"/usr/bin/nvidia-container-runtime\"\n"));
	assert_non_null(strstr(out, "[[proxy_plugins_list]]\n  name = \"b\"\n  weight = 1.5\n"));
	assert_null(strstr(out, "#"));
	/* the first keys first, in their order */
	assert_true(strncmp(out, "version = 2\nimports = [\"/etc/containerd/gpu.d/*.toml\"]\noom_score = -999\n", 72) == 0);
}

static void values(void **state)
{
	(void)state;
	static const char doc[] =
		"a = \"tab\\there \\u00e9 \\\"q\\\"\"\n"
		"b = 'C:\\path'\n"
		"c = \"\"\"\nline1\n  line2 \\\n   joined\"\"\"\n"
		"d = '''\nraw\\n'''\n"
		"e = 0x_ff\n"
		"e2 = 0xff\n"
		"f = 1_000\n"
		"g = -0.5e-3\n"
		"h = inf\n"
		"i = [1, \"two\", [3], {x = 4}]\n"
		"j = 1979-05-27 07:32:00Z\n"
		"k.l.m = true\n"
		"\"quoted key\" = { inner.deep = 1, s = \"v\" }\n"
		"n = [ # comment\n  1,\n  2, # more\n]\n";
	char err[TOML_ERROR_MAX];
	struct toml_node *t = NULL;
	/* 0x_ff is not TOML */
	assert_int_equal(toml_parse(doc, strlen(doc), &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "line 9: '0x_ff' is not an integer"));
	const char *ok = strstr(doc, "e2 = ");
	_cleanup_free_ char *full = NULL;
	assert_true(asprintf(&full, "%.*s%s", (int)(strstr(doc, "e = ") - doc), doc, ok) > 0);
	t = parse_ok(full);
	assert_string_equal(at(t, "a")->str, "tab\there \xc3\xa9 \"q\"");
	assert_string_equal(at(t, "b")->str, "C:\\path");
	assert_string_equal(at(t, "c")->str, "line1\n  line2 joined");
	assert_string_equal(at(t, "d")->str, "raw\\n");
	assert_int_equal(at(t, "e2")->i, 255);
	assert_int_equal(at(t, "f")->i, 1000);
	assert_true(fabs(at(t, "g")->f + 0.0005) < 1e-12);
	assert_true(isinf(at(t, "h")->f));
	assert_int_equal(at(t, "i")->n_items, 4);
	assert_string_equal(at(t, "j")->str, "1979-05-27 07:32:00Z");
	assert_true(at(t, "k|l|m")->b);
	assert_int_equal(at(t, "quoted key|inner|deep")->i, 1);
	assert_int_equal(at(t, "n")->n_items, 2);
	toml_free(t);
	_cleanup_free_ char *out = round_trip(full);
	assert_non_null(strstr(out, "\"quoted key\" = { inner = { deep = 1 }, s = \"v\" }\n"));
	assert_non_null(strstr(out, "a = \"tab\\there \xc3\xa9 \\\"q\\\"\"\n"));
}

static void refusals(void **state)
{
	(void)state;
	static const struct {
		const char *doc, *err;
	} cases[] = {
		{ "a = 1\na = 2\n", "line 2: key 'a' defined twice" },
		{ "[t]\n[t]\n", "line 2: table 't' defined twice" },
		{ "a = 1\n[a]\n", "line 2: 'a' is a value already" },
		{ "a = {b = 1}\n[a.c]\n", "line 2: 'a' is a value already" },
		{ "[[x]]\n[x]\n", "line 2: 'x' is a value already" },
		{ "a = \"open\n", "line 1: a newline in a one-line string" },
		{ "a = 01\n", "line 1: '01' is not a number" },
		{ "a = 1 b = 2\n", "line 1: the end of the line expected" },
		{ "a = \"\\x\"\n", "line 1: an unknown escape" },
		{ "= 1\n", "line 1: a key expected" },
		{ "a = [1,,]\n", "line 1: a value expected" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct toml_node *t = NULL;
		char err[TOML_ERROR_MAX] = "";
		if (toml_parse(cases[i].doc, strlen(cases[i].doc), &t, err, sizeof(err)) >= 0 ||
		    !strstr(err, cases[i].err))
			fail_msg("%s: want '%s', got '%s'", cases[i].doc, cases[i].err, err);
	}
	/* deep nesting is bounded */
	char deep[200];
	memset(deep, '[', sizeof(deep));
	memcpy(deep, "a = ", 4);
	struct toml_node *t = NULL;
	char err[TOML_ERROR_MAX];
	assert_int_equal(toml_parse(deep, sizeof(deep), &t, err, sizeof(err)), -EMSGSIZE);
}

static void edits(void **state)
{
	(void)state;
	_cleanup_(toml_freep) struct toml_node *t = parse_ok("version = 2\n[a]\n  x = 1\n  y = 2\n[b]\n  z = 3\n");
	struct toml_node *a = toml_get(t, "a");
	assert_int_equal(toml_set(a, "x", toml_new_string("one")), 0); /* in place */
	struct toml_node *f = toml_new(TOML_FLOAT);
	f->f = 1.0;
	assert_int_equal(toml_set(a, "w", f), 0); /* appended */
	toml_remove(t, "b");
	toml_remove(t, "nope");
	_cleanup_free_ char *out = NULL;
	assert_int_equal(toml_format(t, &out), 0);
	assert_string_equal(out, "version = 2\n\n[a]\n  x = \"one\"\n  y = 2\n  w = 1.0\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gpu_image),
		cmocka_unit_test(values),
		cmocka_unit_test(refusals),
		cmocka_unit_test(edits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
