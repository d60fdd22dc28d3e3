/* Bad data, field by field, for the two documents that come from outside
 * and decide what lands on a node: the OSC (lib/node/osc.h) and the key document
 * (lib/ssh/keydoc.h). For each field: wrong JSON/YAML types, a missing required
 * field, giant values, and Unicode tricks in paths, unit names and user
 * names (right-to-left override U+202E, zero-width space U+200B, a Cyrillic
 * homoglyph, the C1 control NEL U+0085, overlong and invalid UTF-8, NUL).
 * Every case must be refused (< 0) with an error that names the field, and
 * the output must stay untouched ("nothing applied": the callers apply only
 * a parsed model). test-osc.c and test-keydoc.c hold the parsers' own
 * tables; this file is the reliability sweep of issue 6 and prints
 * "baddata: N cases, M refused with the field named". */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "keydoc.h"
#include "osc.h"

#define RLO "\xe2\x80\xae"  /* U+202E RIGHT-TO-LEFT OVERRIDE */
#define ZWSP "\xe2\x80\x8b" /* U+200B ZERO WIDTH SPACE */
#define CYR_A "\xd0\xb0"    /* U+0430 CYRILLIC SMALL LETTER A, looks like "a" */
#define NEL "\xc2\x85"      /* U+0085, a C1 control */
#define OVERLONG "\xc0\xaf" /* "/" encoded in two bytes: invalid UTF-8 */

#define ED_B64 "AAAAC3NzaC1lZDI1NTE5AAAAIH3T7dQm0Vmc4n0oTrWtL9Kx7jhJ8aQpJdZ3ipL1qm7d"

static unsigned total, refused;

/* A file entry with one field replaced: FILE(path, rest). */
#define FILE_(path, rest) "{\"spec\":{\"files\":[{\"path\":" path rest "}]}}"
#define DATA ",\"content\":{\"inline\":{\"data\":\"x\"}}"
#define UNIT_(body) "{\"spec\":{\"units\":[" body "]}}"

/* prefix + n times fill + suffix, malloc'ed; *len its length. */
static char *giant(const char *prefix, char fill, size_t n, const char *suffix, size_t *len)
{
	size_t a = strlen(prefix), b = strlen(suffix);
	char *s = malloc(a + n + b + 1);
	assert_non_null(s);
	memcpy(s, prefix, a);
	memset(s + a, fill, n);
	memcpy(s + a + n, suffix, b + 1);
	*len = a + n + b;
	return s;
}

struct osc_case {
	const char *doc;
	const char *field; /* must occur in the error message */
};

static void run_osc(const char *doc, size_t len, const char *field)
{
	struct osc o;
	memset(&o, 0xa5, sizeof(o));
	struct osc pristine = o;
	struct osc_error e = { "" };
	int r = osc_parse(doc, len, "/var/lib/node-agent", &o, &e);
	total++;
	if (r >= 0) {
		osc_done(&o);
		fail_msg("accepted: %.120s", doc);
	}
	if (memcmp(&o, &pristine, sizeof(o)) != 0)
		fail_msg("output touched on failure: %.120s", doc);
	if (!strstr(e.message, field))
		fail_msg("error does not name %s: \"%s\" for %.120s", field, e.message, doc);
	print_message("  %-28s -> %s\n", field, e.message);
	refused++;
}

static void osc_fields(void **state)
{
	static const struct osc_case t[] = {
		/* files[].path */
		{ "{\"spec\":{\"files\":[{\"content\":{\"inline\":{\"data\":\"x\"}}}]}}", "spec.files[0].path: missing" },
		{ FILE_("42", DATA), "spec.files[0].path: expected a string" },
		{ FILE_("[\"/etc/x\"]", DATA), "spec.files[0].path: expected a string" },
		{ FILE_("{\"a\":1}", DATA), "spec.files[0].path: expected a string" },
		{ FILE_("true", DATA), "spec.files[0].path: expected a string" },
		{ FILE_("\"/etc/" RLO "fdp.exe\"", DATA), "spec.files[0].path: non-ASCII" },
		{ FILE_("\"/etc/ssh/sshd_config" ZWSP "\"", DATA), "spec.files[0].path: non-ASCII" },
		{ FILE_("\"/etc/p" CYR_A "sswd\"", DATA), "spec.files[0].path: non-ASCII" },
		/* A raw NEL is a YAML 1.1 line break, folded away by libyaml (the
		 * path becomes "/etc/ab" on both sides); escaped, it is a character. */
		{ FILE_("\"/etc/a\\u0085b\"", DATA), "spec.files[0].path: non-ASCII" },
		{ FILE_("\"/etc/x\\u0000y\"", DATA), "spec.files[0].path: NUL byte" },
		{ FILE_("\"/etc/\\u202ex\"", DATA), "spec.files[0].path: non-ASCII" },
		/* files[].permissions */
		{ FILE_("\"/etc/x\"", ",\"permissions\":\"rwx\"" DATA), "spec.files[0].permissions" },
		{ FILE_("\"/etc/x\"", ",\"permissions\":-1" DATA), "spec.files[0].permissions" },
		{ FILE_("\"/etc/x\"", ",\"permissions\":99999" DATA), "spec.files[0].permissions" },
		{ FILE_("\"/etc/x\"", ",\"permissions\":1.5" DATA), "spec.files[0].permissions" },
		{ FILE_("\"/etc/x\"", ",\"permissions\":[420]" DATA), "spec.files[0].permissions" },
		{ FILE_("\"/etc/x\"", ",\"permissions\":1e30" DATA), "spec.files[0].permissions" },
		/* files[].content */
		{ FILE_("\"/etc/x\"", ""), "spec.files[0].content: missing" },
		{ FILE_("\"/etc/x\"", ",\"content\":\"x\""), "spec.files[0].content: expected a mapping" },
		{ FILE_("\"/etc/x\"", ",\"content\":{\"inline\":[]}"), "spec.files[0].content.inline: expected a mapping" },
		{ FILE_("\"/etc/x\"", ",\"content\":{\"inline\":{\"encoding\":\"gzip\",\"data\":\"x\"}}"),
		  "spec.files[0].content.inline.encoding" },
		{ FILE_("\"/etc/x\"", ",\"content\":{\"inline\":{\"encoding\":1,\"data\":\"x\"}}"),
		  "spec.files[0].content.inline.encoding" },
		{ FILE_("\"/etc/x\"", ",\"content\":{\"inline\":{\"data\":[1]}}"), "spec.files[0].content.inline.data" },
		{ FILE_("\"/etc/x\"", ",\"content\":{\"inline\":{\"encoding\":\"b64\",\"data\":\"!!!!\"}}"),
		  "spec.files[0].content.inline.data" },
		{ FILE_("\"/etc/x\"", ",\"content\":{\"inline\":{\"encoding\":\"b64\",\"data\":\"aGk\"}}"),
		  "spec.files[0].content.inline.data" },
		{ FILE_("\"/etc/x\"", ",\"content\":{\"transmitUnencoded\":\"maybe\",\"inline\":{\"data\":\"x\"}}"),
		  "spec.files[0].content.transmitUnencoded" },
		/* units[].name */
		{ UNIT_("{\"enable\":true}"), "spec.units[0].name: missing" },
		{ UNIT_("{\"name\":7}"), "spec.units[0].name: expected a string" },
		{ UNIT_("{\"name\":\"kubelet" RLO ".service\"}"), "spec.units[0].name: invalid systemd unit name" },
		{ UNIT_("{\"name\":\"kub" CYR_A "let.service\"}"), "spec.units[0].name: invalid systemd unit name" },
		{ UNIT_("{\"name\":\"kubelet" ZWSP ".service\"}"), "spec.units[0].name: invalid systemd unit name" },
		{ UNIT_("{\"name\":\"../../etc/passwd.service\"}"), "spec.units[0].name: invalid systemd unit name" },
		/* units[].enable, command, content */
		{ UNIT_("{\"name\":\"a.service\",\"enable\":\"yes\"}"), "spec.units[0].enable" },
		{ UNIT_("{\"name\":\"a.service\",\"enable\":1}"), "spec.units[0].enable" },
		{ UNIT_("{\"name\":\"a.service\",\"command\":\"explode\"}"), "spec.units[0].command" },
		{ UNIT_("{\"name\":\"a.service\",\"command\":[\"start\"]}"), "spec.units[0].command" },
		{ UNIT_("{\"name\":\"a.service\",\"content\":[\"[Unit]\"]}"), "spec.units[0].content" },
		/* units[].dropIns[] */
		{ UNIT_("{\"name\":\"a.service\",\"dropIns\":{}}"), "spec.units[0].dropIns" },
		{ UNIT_("{\"name\":\"a.service\",\"dropIns\":[{\"content\":\"x\"}]}"), "spec.units[0].dropIns[0].name" },
		{ UNIT_("{\"name\":\"a.service\",\"dropIns\":[{\"name\":\"10-" RLO "x.conf\",\"content\":\"x\"}]}"),
		  "spec.units[0].dropIns[0].name" },
		{ UNIT_("{\"name\":\"a.service\",\"dropIns\":[{\"name\":\"../x.conf\",\"content\":\"x\"}]}"),
		  "spec.units[0].dropIns[0].name" },
		{ UNIT_("{\"name\":\"a.service\",\"dropIns\":[{\"name\":\"a.conf\",\"content\":5}]}"),
		  "spec.units[0].dropIns[0].content" },
		/* units[].filePaths */
		{ UNIT_("{\"name\":\"a.service\",\"filePaths\":\"/etc/x\"}"), "spec.units[0].filePaths" },
		{ UNIT_("{\"name\":\"a.service\",\"filePaths\":[\"/etc/" RLO "x\"]}"), "spec.units[0].filePaths[0]" },
		{ UNIT_("{\"name\":\"a.service\",\"filePaths\":[\"etc/x\"]}"), "spec.units[0].filePaths[0]" },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++)
		run_osc(t[i].doc, strlen(t[i].doc), t[i].field);

	/* Invalid UTF-8 is refused by libyaml before any field is read: the
	 * message names the line and column instead. */
	static const char *const bytes[] = { FILE_("\"/etc/" OVERLONG "x\"", DATA), FILE_("\"/etc/\xff\"", DATA),
					     UNIT_("{\"name\":\"a\xc3.service\"}") };
	for (size_t i = 0; i < ELEMENTSOF(bytes); i++)
		run_osc(bytes[i], strlen(bytes[i]), "yaml: line 1 column");

	/* Giant values. */
	size_t len;
	_cleanup_free_ char *p = giant("{\"spec\":{\"files\":[{\"path\":\"/", 'a', OSC_PATH_MAX + 100, "\"" DATA "}]}}", &len);
	run_osc(p, len, "spec.files[0].path: path too long");
	_cleanup_free_ char *u = giant("{\"spec\":{\"units\":[{\"name\":\"", 'a', 300, ".service\"}]}}", &len);
	run_osc(u, len, "spec.units[0].name");
	_cleanup_free_ char *c = giant("{\"spec\":{\"units\":[{\"name\":\"a.service\",\"content\":\"", 'x',
				       OSC_UNIT_CONTENT_MAX + 10, "\"}]}}", &len);
	run_osc(c, len, "spec.units[0].content");
	_cleanup_free_ char *d = giant("{\"spec\":{\"files\":[{\"path\":\"/etc/x\",\"content\":{\"inline\":{\"data\":\"", 'x',
				       OSC_FILE_CONTENT_MAX + 10, "\"}}}]}}", &len);
	run_osc(d, len, "spec.files[0].content");
}

#define KEY_(user, rest) "[{\"user\":" user ",\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "\"" rest "}]"

static void run_keydoc(const char *doc, size_t len, const char *field)
{
	struct keydoc d = { .entries = (void *)&d, .n = 4242 };
	char err[KEYDOC_ERR_MAX] = "";
	int r = keydoc_parse_json(doc, len, NULL, &d, err, sizeof(err));
	total++;
	if (r >= 0) {
		keydoc_done(&d);
		fail_msg("accepted: %.120s", doc);
	}
	if (d.n != 4242 || d.entries != (void *)&d)
		fail_msg("output touched on failure: %.120s", doc);
	if (!strstr(err, field))
		fail_msg("error does not name %s: \"%s\" for %.120s", field, err, doc);
	print_message("  %-20s -> %s\n", field, err);
	refused++;
}

static void keydoc_fields(void **state)
{
	static const struct {
		const char *doc;
		const char *field;
	} t[] = {
		/* user */
		{ "[{\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "\"}]", "[0].user: missing" },
		{ KEY_("[\"alice\"]", ""), "[0].user: not a string" },
		{ KEY_("{}", ""), "[0].user: not a string" },
		{ KEY_("true", ""), "[0].user: not a string" },
		{ KEY_("\"ali" RLO "ce\"", ""), "[0].user: invalid user name" },
		{ KEY_("\"ali" ZWSP "ce\"", ""), "[0].user: invalid user name" },
		{ KEY_("\"" CYR_A "lice\"", ""), "[0].user: invalid user name" },
		{ KEY_("\"al" NEL "ice\"", ""), "[0].user: invalid user name" },
		{ KEY_("\"al\\u202eice\"", ""), "[0].user: invalid user name" },
		{ KEY_("\"root\\u0000\"", ""), "NUL" },
		{ KEY_("\"../root\"", ""), "[0].user: invalid user name" },
		{ KEY_("\"\"", ""), "[0].user: invalid user name" },
		/* type */
		{ "[{\"user\":\"alice\",\"publicKey\":\"" ED_B64 "\"}]", "[0].type: missing" },
		{ "[{\"user\":\"alice\",\"type\":5,\"publicKey\":\"" ED_B64 "\"}]", "[0].type: not a string" },
		{ "[{\"user\":\"alice\",\"type\":\"ssh-ed25519" RLO "\",\"publicKey\":\"" ED_B64 "\"}]", "[0].type" },
		/* publicKey */
		{ "[{\"user\":\"alice\",\"type\":\"ssh-ed25519\"}]", "[0].publicKey: missing" },
		{ "[{\"user\":\"alice\",\"type\":\"ssh-ed25519\",\"publicKey\":null}]", "[0].publicKey" },
		{ "[{\"user\":\"alice\",\"type\":\"ssh-ed25519\",\"publicKey\":[\"" ED_B64 "\"]}]", "[0].publicKey" },
		{ "[{\"user\":\"alice\",\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 RLO "\"}]", "[0].publicKey" },
		/* comment, until */
		{ KEY_("\"alice\"", ",\"comment\":[]"), "[0].comment: not a string" },
		{ KEY_("\"alice\"", ",\"comment\":\"x\\ny\""), "[0].comment" },
		{ KEY_("\"alice\"", ",\"until\":{}"), "[0].until" },
		{ KEY_("\"alice\"", ",\"until\":\"tomorrow\""), "[0].until" },
		{ KEY_("\"alice\"", ",\"until\":99999999999999999999"), "[0].until" },
		{ KEY_("\"alice\"", ",\"until\":\"9999-12-31T23:59:60Z\""), "[0].until" },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++)
		run_keydoc(t[i].doc, strlen(t[i].doc), t[i].field);

	/* Giant values: a user name of 1000 bytes, a comment of 64 KiB, a key
	 * of 200 KiB. */
	size_t len;
	_cleanup_free_ char *u = giant("[{\"user\":\"", 'a', 1000, "\",\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "\"}]", &len);
	run_keydoc(u, len, "[0].user");
	_cleanup_free_ char *c = giant("[{\"user\":\"alice\",\"type\":\"ssh-ed25519\",\"publicKey\":\"" ED_B64 "\",\"comment\":\"", 'c',
				       64 << 10, "\"}]", &len);
	run_keydoc(c, len, "[0].comment");
	_cleanup_free_ char *b = giant("[{\"user\":\"alice\",\"type\":\"ssh-ed25519\",\"publicKey\":\"", 'A', 200 << 10, "\"}]", &len);
	run_keydoc(b, len, "[0].publicKey");
}

static int summary(void **state)
{
	printf("baddata: %u cases, %u refused with the field named\n", total, refused);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(osc_fields),
		cmocka_unit_test(keydoc_fields),
	};
	return cmocka_run_group_tests_name("baddata", tests, NULL, summary);
}
