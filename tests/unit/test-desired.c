/* Unit tests for lib/node/desired.c: round trips, the checksum check, strictness
 * (unknown keys, wrong types, duplicates), restart unit names and ceilings. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "desired.h"
#include "osc.h"

/* Mutable copies: struct desired holds char *, the literals are const. */
static char x1[] = "x: 1\n";
static char rid[] = "r";
static char kubelet[] = "kubelet.service", containerd[] = "containerd.service", bare[] = "kubelet";
static char keydoc[] = "[{\"user\": \"gardener\", \"publicKey\": \"ssh-ed25519 AAAA\"}]";
static char node_restart[] = "node-uid/42";

static char osc_text[] = "spec:\n  files:\n  - path: /etc/x\n    content: {inline: {data: x}}\n";

static void sha256_known_answers(void **state)
{
	char hex[65];
	desired_sha256_hex("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	desired_sha256_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void round_trip_full(void **state)
{
	char *units[] = { kubelet, containerd, NULL };
	struct desired d = {
		.osc = osc_text,
		.osc_len = strlen(osc_text),
		.key_document = keydoc,
		.ssh_access = true,
		.restart_id = node_restart,
		.restart_units = units,
		.generation = 7,
	};
	desired_sha256_hex(d.osc, d.osc_len, d.checksum);
	_cleanup_free_ char *out = NULL;
	size_t len;
	assert_int_equal(desired_format(&d, &out, &len), 0);
	assert_int_equal(len, strlen(out));
	assert_int_equal(out[len - 1], '\n');

	struct desired p = {};
	const char *err = NULL;
	int r = desired_parse(out, len, &p, &err);
	if (r < 0)
		fail_msg("%s", err);
	assert_string_equal(p.checksum, d.checksum);
	assert_int_equal(p.osc_len, d.osc_len);
	assert_string_equal(p.osc, osc_text);
	assert_string_equal(p.key_document, d.key_document);
	assert_true(p.ssh_access);
	assert_string_equal(p.restart_id, "node-uid/42");
	assert_string_equal(p.restart_units[0], "kubelet.service");
	assert_string_equal(p.restart_units[1], "containerd.service");
	assert_null(p.restart_units[2]);
	assert_int_equal(p.generation, 7);

	/* The carried OSC parses. */
	struct osc o = {};
	assert_int_equal(osc_parse(p.osc, p.osc_len, NULL, &o, NULL), 0);
	assert_int_equal(o.n_files, 1);
	osc_done(&o);

	/* Format of the parsed struct gives the same bytes. */
	_cleanup_free_ char *again = NULL;
	assert_int_equal(desired_format(&p, &again, NULL), 0);
	assert_string_equal(again, out);
	desired_done(&p);
	desired_done(&p);
}

static void round_trip_minimal(void **state)
{
	/* Odd bytes in the OSC survive: quotes, backslashes, control chars, UTF-8. */
	static char odd[] = "a: \"\\\"\\u00e9\"\n\tb\x01\x1f\x7f \xc3\xa9 \xff\n";
	struct desired d = { .osc = odd, .osc_len = strlen(odd), .ssh_access = false,
			     .generation = DESIRED_GENERATION_MAX };
	desired_sha256_hex(d.osc, d.osc_len, d.checksum);
	_cleanup_free_ char *out = NULL;
	size_t len;
	assert_int_equal(desired_format(&d, &out, &len), 0);
	assert_null(strstr(out, "keyDocument"));
	assert_null(strstr(out, "restart"));
	struct desired p = {};
	assert_int_equal(desired_parse(out, len, &p, NULL), 0);
	assert_int_equal(p.osc_len, d.osc_len);
	assert_memory_equal(p.osc, odd, d.osc_len);
	assert_false(p.ssh_access);
	assert_null(p.key_document);
	assert_null(p.restart_id);
	assert_null(p.restart_units);
	assert_int_equal(p.generation, DESIRED_GENERATION_MAX);
	desired_done(&p);
}

static void gardener_fixture(void **state)
{
	const char *src = getenv("NA_SRCDIR");
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/fixtures/osc/gardener-worker.yaml", src ? src : ".");
	FILE *f = fopen(path, "re");
	assert_non_null(f);
	char *buf = malloc(1 << 20);
	size_t n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	buf[n] = '\0';
	struct desired d = { .osc = buf, .osc_len = n, .ssh_access = true, .generation = 1 };
	desired_sha256_hex(buf, n, d.checksum);
	_cleanup_free_ char *out = NULL;
	size_t len;
	assert_int_equal(desired_format(&d, &out, &len), 0);
	struct desired p = {};
	assert_int_equal(desired_parse(out, len, &p, NULL), 0);
	assert_int_equal(p.osc_len, n);
	assert_memory_equal(p.osc, buf, n);
	/* The desired state carries the raw osc.yaml, so its imageRef file
	 * (the kubelet binary) reaches cloud-config-exec as the agent saw it. */
	assert_non_null(strstr(p.osc, "imageRef:"));
	struct osc o = {};
	assert_int_equal(osc_parse(p.osc, p.osc_len, NULL, &o, NULL), 0);
	const struct osc_file *k = osc_find_file(&o, "/opt/bin/kubelet");
	assert_non_null(k);
	assert_int_equal(k->source, OSC_SOURCE_IMAGE);
	assert_string_equal(k->path_in_image, "/kubelet");
	osc_done(&o);
	desired_done(&p);
	free(buf);
}

static const char *sum_of_osc(void)
{
	static char hex[65];
	desired_sha256_hex("x: 1\n", 5, hex);
	return hex;
}

/* Builds a document from a template where @SUM@ stands for the checksum of
 * the OSC "x: 1\n". */
static char *doc(const char *tmpl)
{
	const char *sum = sum_of_osc();
	size_t cap = strlen(tmpl) + 128;
	char *s = malloc(cap);
	size_t o = 0;
	for (const char *p = tmpl; *p;) {
		if (strncmp(p, "@SUM@", 5) == 0) {
			memcpy(s + o, sum, 64);
			o += 64;
			p += 5;
		} else {
			s[o++] = *p++;
		}
	}
	s[o] = '\0';
	return s;
}

static void bad_documents(void **state)
{
	static const struct {
		const char *doc;
		int r;
		const char *err; /* prefix of the static error */
	} table[] = {
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1}", 0, NULL },
		{ "  {\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1}\n\n", 0, NULL },
		{ "", -EINVAL, "not valid JSON" },
		{ "{", -EINVAL, "not valid JSON" },
		{ "[]", -EINVAL, "document" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1} x", -EINVAL,
		  "not valid JSON" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1}{}", -EINVAL,
		  "not valid JSON" },
		/* checksum */
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 2\\n\",\"generation\":1}", -EBADMSG, "checksum" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\\u0000y\",\"generation\":1}", -EINVAL,
		  "not valid JSON" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\\\\u0000y\",\"generation\":1}", -EBADMSG,
		  "checksum" }, /* an escaped backslash, then "u0000": no NUL */
		{ "{\"version\":1,\"checksum\":\"ABC\",\"osc\":\"x: 1\\n\",\"generation\":1}", -EINVAL, "checksum" },
		{ "{\"version\":1,\"checksum\":1,\"osc\":\"x: 1\\n\",\"generation\":1}", -EINVAL, "checksum" },
		{ "{\"version\":1,\"osc\":\"x: 1\\n\",\"generation\":1}", -EINVAL, "checksum: missing" },
		/* version */
		{ "{\"version\":2,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1}", -EPROTONOSUPPORT,
		  "version" },
		{ "{\"version\":\"1\",\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1}", -EINVAL,
		  "version" },
		{ "{\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1}", -EINVAL, "version" },
		/* strictness */
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,\"extra\":1}", -EINVAL,
		  "document: unknown" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,\"generation\":2}", -EINVAL,
		  "document: unknown or duplicate" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":-1}", -EINVAL, "generation" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1.5}", -EINVAL, "generation" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":9007199254740992}", -EINVAL,
		  "generation" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\"}", -EINVAL, "generation" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":1,\"generation\":1}", -EINVAL, "osc" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"generation\":1}", -EINVAL, "osc: missing" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,\"sshAccess\":0}", -EINVAL,
		  "sshAccess" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,\"keyDocument\":[]}", -EINVAL,
		  "keyDocument" },
		/* restart */
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,"
		  "\"restart\":{\"id\":\"a\",\"units\":[\"kubelet.service\"]}}", 0, NULL },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,"
		  "\"restart\":{\"id\":\"a\",\"units\":[]}}", 0, NULL },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,"
		  "\"restart\":{\"id\":\"a\",\"units\":[\"kubelet\"]}}", -EINVAL, "restart.units: invalid" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,"
		  "\"restart\":{\"id\":\"a\",\"units\":[\"../x.service\"]}}", -EINVAL, "restart.units: invalid" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,"
		  "\"restart\":{\"id\":\"a\",\"units\":[\"a.service; reboot\"]}}", -EINVAL, "restart.units: invalid" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,"
		  "\"restart\":{\"id\":\"a\",\"units\":[\"a.service\",\"a.service\"]}}", -EINVAL,
		  "restart.units: duplicate" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,"
		  "\"restart\":{\"id\":\"a\",\"units\":[1]}}", -EINVAL, "restart.units: not a string" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,"
		  "\"restart\":{\"units\":[]}}", -EINVAL, "restart.id: missing" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,"
		  "\"restart\":{\"id\":\"\",\"units\":[]}}", -EINVAL, "restart.id" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,"
		  "\"restart\":{\"id\":\"a\\nb\",\"units\":[]}}", -EINVAL, "restart.id" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,"
		  "\"restart\":{\"id\":\"a\"}}", -EINVAL, "restart.units: missing" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,"
		  "\"restart\":{\"id\":\"a\",\"units\":[],\"x\":1}}", -EINVAL, "restart: unknown" },
		{ "{\"version\":1,\"checksum\":\"@SUM@\",\"osc\":\"x: 1\\n\",\"generation\":1,\"restart\":[]}", -EINVAL,
		  "restart: not an object" },
	};
	for (size_t i = 0; i < ELEMENTSOF(table); i++) {
		_cleanup_free_ char *d = doc(table[i].doc);
		struct desired p = { .generation = 4242 };
		const char *err = "(none)";
		int r = desired_parse(d, strlen(d), &p, &err);
		if (r != table[i].r || (table[i].err && strncmp(err, table[i].err, strlen(table[i].err)) != 0))
			fail_msg("case %zu: %s\n  want %d '%s'\n  got  %d '%s'", i, d, table[i].r,
				 table[i].err ? table[i].err : "", r, err);
		if (r == 0)
			desired_done(&p);
		else
			assert_int_equal(p.generation, 4242); /* untouched */
	}
}

static void format_refuses_bad_input(void **state)
{
	struct desired d = { .osc = x1, .osc_len = 5, .generation = 1 };
	char *out = NULL;
	memcpy(d.checksum, sum_of_osc(), 65);
	d.checksum[0] = d.checksum[0] == '0' ? '1' : '0';
	assert_int_equal(desired_format(&d, &out, NULL), -EBADMSG);
	memcpy(d.checksum, "E3B0", 4);
	assert_int_equal(desired_format(&d, &out, NULL), -EINVAL);
	memcpy(d.checksum, sum_of_osc(), 65);
	d.osc = NULL;
	assert_int_equal(desired_format(&d, &out, NULL), -EINVAL);
	d.osc = x1;
	char *bad_units[] = { bare, NULL };
	d.restart_id = rid;
	d.restart_units = bad_units;
	assert_int_equal(desired_format(&d, &out, NULL), -EINVAL);
	d.restart_units = NULL; /* id without units */
	assert_int_equal(desired_format(&d, &out, NULL), -EINVAL);
	d.restart_id = NULL;
	d.generation = DESIRED_GENERATION_MAX + 1;
	assert_int_equal(desired_format(&d, &out, NULL), -EINVAL);
	d.generation = 1;
	/* A NUL inside the OSC cannot travel in a JSON string. */
	static char nul[] = "a\0b";
	d.osc = nul;
	d.osc_len = 3;
	desired_sha256_hex(nul, 3, d.checksum);
	assert_int_equal(desired_format(&d, &out, NULL), -EINVAL);
	assert_null(out);
}

static void ceilings(void **state)
{
	/* Restart units: the maximum passes, one more does not. */
	char *units[DESIRED_RESTART_UNITS_MAX + 2];
	char names[DESIRED_RESTART_UNITS_MAX + 1][32];
	for (int i = 0; i <= DESIRED_RESTART_UNITS_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "u%d.service", i);
		units[i] = names[i];
	}
	units[DESIRED_RESTART_UNITS_MAX] = NULL;
	struct desired d = { .osc = x1, .osc_len = 5, .generation = 1, .restart_id = rid,
			     .restart_units = units };
	memcpy(d.checksum, sum_of_osc(), 65);
	_cleanup_free_ char *out = NULL;
	assert_int_equal(desired_format(&d, &out, NULL), 0);
	struct desired p = {};
	assert_int_equal(desired_parse(out, strlen(out), &p, NULL), 0);
	desired_done(&p);
	units[DESIRED_RESTART_UNITS_MAX] = names[DESIRED_RESTART_UNITS_MAX];
	units[DESIRED_RESTART_UNITS_MAX + 1] = NULL;
	char *out2 = NULL;
	assert_int_equal(desired_format(&d, &out2, NULL), -EMSGSIZE);
	/* Parse enforces it too: splice one more unit into the good document. */
	char *pos = strstr(out, "\"u0.service\"");
	assert_non_null(pos);
	size_t l = strlen(out);
	char *big = malloc(l + 64);
	size_t head = (size_t)(pos - out);
	memcpy(big, out, head);
	int k = snprintf(big + head, 64, "\"extra.service\", ");
	memcpy(big + head + (size_t)k, pos, l - head + 1);
	const char *err = NULL;
	assert_int_equal(desired_parse(big, strlen(big), &p, &err), -EMSGSIZE);
	assert_string_equal(err, "restart.units: more than DESIRED_RESTART_UNITS_MAX");
	free(big);

	/* Key document. */
	char *kd = malloc(DESIRED_KEY_DOCUMENT_MAX + 2);
	memset(kd, 'k', DESIRED_KEY_DOCUMENT_MAX + 1);
	kd[DESIRED_KEY_DOCUMENT_MAX + 1] = '\0';
	struct desired e = { .osc = x1, .osc_len = 5, .generation = 1, .key_document = kd };
	memcpy(e.checksum, sum_of_osc(), 65);
	assert_int_equal(desired_format(&e, &out2, NULL), -EMSGSIZE);
	kd[DESIRED_KEY_DOCUMENT_MAX] = '\0';
	assert_int_equal(desired_format(&e, &out2, NULL), 0);
	assert_int_equal(desired_parse(out2, strlen(out2), &p, NULL), 0);
	assert_int_equal(strlen(p.key_document), DESIRED_KEY_DOCUMENT_MAX);
	desired_done(&p);
	free(out2);
	free(kd);

	/* The OSC and the whole document. */
	size_t n = OSC_INPUT_MAX + 1;
	char *big_osc = malloc(n + 1);
	memset(big_osc, 'o', n);
	big_osc[n] = '\0';
	struct desired g = { .osc = big_osc, .osc_len = n, .generation = 1 };
	desired_sha256_hex(big_osc, n, g.checksum);
	out2 = NULL;
	assert_int_equal(desired_format(&g, &out2, NULL), -EMSGSIZE);
	/* An OSC within its ceiling whose JSON escaping (\u0001: 6 bytes per
	 * byte) would make a document desired_parse() refuses. */
	n = OSC_INPUT_MAX;
	memset(big_osc, '\x01', n);
	big_osc[n] = '\0';
	g.osc_len = n;
	desired_sha256_hex(big_osc, n, g.checksum);
	assert_int_equal(desired_format(&g, &out2, NULL), -EMSGSIZE);
	assert_null(out2);
	free(big_osc);
	char *huge = malloc(DESIRED_MAX + 1);
	memset(huge, ' ', DESIRED_MAX + 1);
	assert_int_equal(desired_parse(huge, DESIRED_MAX + 1, &p, &err), -EMSGSIZE);
	free(huge);
}

/* secretFiles: bytes (NUL included) round-trip as base64; strict parse. */
static void secret_files(void **state)
{
	static char p1[] = "/etc/b", p2[] = "/etc/a";
	static unsigned char b1[] = { 'x', 0, 'y', 0xff };
	struct desired_secret_file sf[] = { { .path = p1, .data = b1, .len = sizeof(b1) }, { .path = p2, .data = NULL, .len = 0 } };
	struct desired d = { .osc = osc_text, .osc_len = strlen(osc_text), .ssh_access = true, .secret_files = sf,
			     .n_secret_files = 2, .generation = 1 };
	desired_sha256_hex(d.osc, d.osc_len, d.checksum);
	_cleanup_free_ char *out = NULL;
	size_t len;
	assert_int_equal(desired_format(&d, &out, &len), 0);
	assert_non_null(strstr(out, "\"secretFiles\""));
	assert_non_null(strstr(out, "eAB5/w=="));
	struct desired p = {};
	const char *err = NULL;
	int r = desired_parse(out, len, &p, &err);
	if (r < 0)
		fail_msg("%s", err);
	assert_int_equal(p.n_secret_files, 2);
	assert_string_equal(p.secret_files[0].path, "/etc/b");
	assert_int_equal(p.secret_files[0].len, sizeof(b1));
	assert_memory_equal(p.secret_files[0].data, b1, sizeof(b1));
	assert_string_equal(p.secret_files[1].path, "/etc/a");
	assert_int_equal(p.secret_files[1].len, 0);
	desired_done(&p);

	/* Format refuses what parse would refuse. */
	static char rel[] = "etc/x";
	sf[1].path = rel;
	assert_int_equal(desired_format(&d, &out, &len), -EINVAL);
	sf[1].path = p1;
	assert_int_equal(desired_format(&d, &out, &len), -EINVAL); /* twice */
	sf[1].path = p2;
	sf[1].len = DESIRED_SECRET_FILE_MAX + 1;
	sf[1].data = b1;
	assert_int_equal(desired_format(&d, &out, &len), -EMSGSIZE);

	static const struct {
		const char *sf;
		int r;
		const char *err;
	} table[] = {
		{ "[]", 0, NULL },
		{ "[{\"path\":\"/a\",\"data\":\"\"}]", 0, NULL },
		{ "{}", -EINVAL, "secretFiles: not an array" },
		{ "[1]", -EINVAL, "secretFiles[]: not an object" },
		{ "[{\"path\":\"/a\"}]", -EINVAL, "secretFiles[]: path or data missing" },
		{ "[{\"path\":\"/a\",\"data\":\"eA==\",\"x\":1}]", -EINVAL, "secretFiles[]: not an object" },
		{ "[{\"path\":\"/a\",\"data\":\"eA==\",\"path\":\"/b\"}]", -EINVAL, "secretFiles[]: not an object" },
		{ "[{\"path\":\"/a\",\"data\":1}]", -EINVAL, "secretFiles[]: path or data missing" },
		{ "[{\"path\":\"/a\",\"data\":\"eA\"}]", -EINVAL, "secretFiles[].data: not canonical" },
		{ "[{\"path\":\"/a\",\"data\":\"e A==\"}]", -EINVAL, "secretFiles[].data: not canonical" },
		{ "[{\"path\":\"a\",\"data\":\"\"}]", -EINVAL, "secretFiles[].path" },
		{ "[{\"path\":\"/a/../b\",\"data\":\"\"}]", -EINVAL, "secretFiles[].path" },
		{ "[{\"path\":\"/a\",\"data\":\"\"},{\"path\":\"/a\",\"data\":\"\"}]", -EINVAL,
		  "secretFiles[].path: given twice" },
	};
	for (size_t i = 0; i < ELEMENTSOF(table); i++) {
		_cleanup_free_ char *doc_text = NULL;
		assert_true(asprintf(&doc_text,
				     "{\"version\":1,\"checksum\":\"%s\",\"osc\":\"spec:\\n  files:\\n  - path: /etc/x\\n    "
				     "content: {inline: {data: x}}\\n\",\"generation\":1,\"secretFiles\":%s}",
				     d.checksum, table[i].sf) > 0);
		struct desired q = {};
		const char *e = "(none)";
		r = desired_parse(doc_text, strlen(doc_text), &q, &e);
		if (r != table[i].r || (table[i].err && strncmp(e, table[i].err, strlen(table[i].err)) != 0))
			fail_msg("case %zu: %s\n  want %d '%s'\n  got  %d '%s'", i, doc_text, table[i].r,
				 table[i].err ? table[i].err : "", r, e);
		desired_done(&q);
	}
	/* The ceiling on the number of files. */
	_cleanup_free_ char *many = NULL;
	size_t cap = 64 * (DESIRED_SECRET_FILES_MAX + 2) + 512, off = 0;
	many = malloc(cap);
	assert_non_null(many);
	off += (size_t)snprintf(many + off, cap - off, "{\"version\":1,\"checksum\":\"%s\",\"osc\":\"spec:\\n  files:\\n  - path: /etc/x\\n    content: {inline: {data: x}}\\n\",\"generation\":1,\"secretFiles\":[", d.checksum);
	for (unsigned i = 0; i <= DESIRED_SECRET_FILES_MAX; i++)
		off += (size_t)snprintf(many + off, cap - off, "%s{\"path\":\"/f%u\",\"data\":\"\"}", i ? "," : "", i);
	off += (size_t)snprintf(many + off, cap - off, "]}");
	struct desired q = {};
	const char *e = NULL;
	assert_int_equal(desired_parse(many, off, &q, &e), -EMSGSIZE);
}

/* readyRegistries (issue 25, item 8): round trip; strict parse. */
static void ready_registries(void **state)
{
	(void)state;
	static char u1[] = "mirror.example:5000", u2[] = "b.example";
	struct desired_ready_registry rr[2] = { { .upstream = u1 }, { .upstream = u2 } };
	memset(rr[0].sha256, 'a', 64);
	memset(rr[1].sha256, '0', 64);
	struct desired d = { .osc = osc_text, .osc_len = strlen(osc_text), .ssh_access = true, .ready_registries = rr,
			     .n_ready_registries = 2, .generation = 1 };
	desired_sha256_hex(d.osc, d.osc_len, d.checksum);
	_cleanup_free_ char *out = NULL;
	size_t len;
	assert_int_equal(desired_format(&d, &out, &len), 0);
	assert_non_null(strstr(out, "\"readyRegistries\""));
	struct desired p = {};
	const char *err = NULL;
	int r = desired_parse(out, len, &p, &err);
	if (r < 0)
		fail_msg("%s", err);
	assert_int_equal(p.n_ready_registries, 2);
	assert_string_equal(p.ready_registries[0].upstream, u1);
	assert_memory_equal(p.ready_registries[0].sha256, rr[0].sha256, 65);
	assert_string_equal(p.ready_registries[1].upstream, u2);
	desired_done(&p);
	/* Format refuses what parse would refuse. */
	rr[1].upstream = u1;
	_cleanup_free_ char *out2 = NULL;
	assert_int_equal(desired_format(&d, &out2, &len), -EINVAL);
	rr[1].upstream = u2;
	rr[1].sha256[3] = 'G';
	assert_int_equal(desired_format(&d, &out2, &len), -EINVAL);

#define HX "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	static const struct {
		const char *rr;
		int r;
		const char *err;
	} table[] = {
		{ "[]", 0, NULL },
		{ "[{\"upstream\":\"a\",\"sha256\":\"" HX "\"}]", 0, NULL },
		{ "{}", -EINVAL, "readyRegistries: not an array" },
		{ "[\"a\"]", -EINVAL, "readyRegistries[]: not an object" },
		{ "[{\"upstream\":\"a\"}]", -EINVAL, "readyRegistries[]: upstream or sha256 missing" },
		{ "[{\"upstream\":\"a\",\"sha256\":\"" HX "\",\"x\":1}]", -EINVAL, "readyRegistries[]: not an object" },
		{ "[{\"upstream\":1,\"sha256\":\"" HX "\"}]", -EINVAL, "readyRegistries[]: upstream or sha256" },
		{ "[{\"upstream\":\"a\",\"sha256\":\"abc\"}]", -EINVAL, "readyRegistries[].sha256" },
		{ "[{\"upstream\":\"\",\"sha256\":\"" HX "\"}]", -EINVAL, "readyRegistries[].upstream" },
		{ "[{\"upstream\":\"a b\",\"sha256\":\"" HX "\"}]", -EINVAL, "readyRegistries[].upstream" },
		{ "[{\"upstream\":\"a\\n\",\"sha256\":\"" HX "\"}]", -EINVAL, "readyRegistries[].upstream" },
		{ "[{\"upstream\":\"a\",\"sha256\":\"" HX "\"},{\"upstream\":\"a\",\"sha256\":\"" HX "\"}]", -EINVAL,
		  "readyRegistries[].upstream: given twice" },
	};
	for (size_t i = 0; i < ELEMENTSOF(table); i++) {
		const char *field = table[i].rr;
		_cleanup_free_ char *doc_text = NULL;
		assert_true(asprintf(&doc_text,
				     "{\"version\":1,\"checksum\":\"%s\",\"osc\":\"spec:\\n  files:\\n  - path: /etc/x\\n    "
				     "content: {inline: {data: x}}\\n\",\"generation\":1,\"readyRegistries\":%s}",
				     d.checksum, field) > 0);
		struct desired q = {};
		const char *e = "(none)";
		r = desired_parse(doc_text, strlen(doc_text), &q, &e);
		if (r != table[i].r || (table[i].err && strncmp(e, table[i].err, strlen(table[i].err)) != 0))
			fail_msg("case %zu: %s\n  want %d '%s'\n  got  %d '%s'", i, doc_text, table[i].r,
				 table[i].err ? table[i].err : "", r, e);
		desired_done(&q);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sha256_known_answers),
		cmocka_unit_test(round_trip_full),
		cmocka_unit_test(round_trip_minimal),
		cmocka_unit_test(gardener_fixture),
		cmocka_unit_test(bad_documents),
		cmocka_unit_test(format_refuses_bad_input),
		cmocka_unit_test(ceilings),
		cmocka_unit_test(secret_files),
		cmocka_unit_test(ready_registries),
	};
	return cmocka_run_group_tests_name("desired", tests, NULL, NULL);
}
