/* Unit tests for lib/ssh/keys.c: every supported type against ssh-keygen -lf
 * (keys and certificates generated at test time), injection attempts, blob
 * structure, options, expiry, render round trips. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "b64.h"
#include "cleanup.h"
#include "keys.h"

#define SSH_KEYGEN "/usr/bin/ssh-keygen"

/* ---- helpers: run a program, files, wire format ----------------------- */

/* Runs argv[0] (absolute path) with an empty environment in dir, stdin from
 * /dev/null, stdout captured into out (NUL-terminated). Returns the exit
 * status or -1. */
static int run(const char *dir, const char *const argv[], char *out, size_t outlen)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(p[1], 1) < 0 || dup2(nul, 2) < 0 || chdir(dir) < 0)
			_exit(126);
		/* execve() wants writable strings: copy (the child exits anyway). */
		char *v[64], *envp[2] = { strdup("PATH=/usr/bin:/bin"), NULL };
		size_t i = 0;
		for (; argv[i] && i < ELEMENTSOF(v) - 1; i++)
			v[i] = strdup(argv[i]);
		v[i] = NULL;
		execve(v[0], v, envp);
		_exit(127);
	}
	close(p[1]);
	size_t n = 0;
	for (;;) {
		ssize_t k = read(p[0], out + n, outlen - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		if (n == outlen - 1)
			break;
	}
	out[n] = '\0';
	close(p[0]);
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static char *read_file(const char *dir, const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *buf = calloc(1, 65536);
	size_t n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void write_file(const char *dir, const char *name, const char *s)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "we");
	assert_non_null(f);
	assert_int_equal(fputs(s, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

struct wbuf {
	unsigned char b[16384];
	size_t n;
};

static void w_u32(struct wbuf *w, uint32_t v)
{
	assert_true(w->n + 4 <= sizeof(w->b));
	w->b[w->n++] = (unsigned char)(v >> 24);
	w->b[w->n++] = (unsigned char)(v >> 16);
	w->b[w->n++] = (unsigned char)(v >> 8);
	w->b[w->n++] = (unsigned char)v;
}

static void w_str(struct wbuf *w, const void *p, size_t n)
{
	w_u32(w, (uint32_t)n);
	assert_true(w->n + n <= sizeof(w->b));
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void w_cstr(struct wbuf *w, const char *s)
{
	w_str(w, s, strlen(s));
}

/* Reads the i-th string of a blob (for taking keys apart). */
static void r_str(const unsigned char *b, size_t len, unsigned idx, const unsigned char **ret, size_t *ret_len)
{
	size_t off = 0;
	for (unsigned i = 0;; i++) {
		assert_true(off + 4 <= len);
		uint32_t n = (uint32_t)b[off] << 24 | (uint32_t)b[off + 1] << 16 | (uint32_t)b[off + 2] << 8 | b[off + 3];
		assert_true(off + 4 + n <= len);
		if (i == idx) {
			*ret = b + off + 4;
			*ret_len = n;
			return;
		}
		off += 4 + n;
	}
}

static char *line_of(const char *type, const struct wbuf *w, const char *comment)
{
	_cleanup_free_ char *b = b64_encode(w->b, w->n, false);
	assert_non_null(b);
	char *s;
	assert_true(asprintf(&s, "%s %s%s%s", type, b, comment ? " " : "", comment ? comment : "") > 0);
	return s;
}

/* ---- fixtures --------------------------------------------------------- */

struct fixture {
	char dir[64];
	/* name of the .pub file, the type ssh-keygen -lf prints */
	char names[32][32];
	unsigned n;
	char *ed25519, *ecdsa256, *rsa2048; /* lines, for building bad inputs */
};

static struct fixture *fx;

static void keygen(const char *file, const char *type, const char *bits)
{
	const char *const argv[] = { SSH_KEYGEN, "-q", "-t", type, "-b",
			       bits, "-N", "", "-C", "test@node-agent",
			       "-f", file, NULL };
	char out[256];
	assert_int_equal(run(fx->dir, argv, out, sizeof(out)), 0);
}

static void certify(const char *ca, const char *pub, bool options)
{
	const char *const argv[] = { SSH_KEYGEN, "-q", "-s", ca, "-I",
			       "id-1", "-n", "user,other", "-V", "+1d",
			       pub, NULL };
	const char *const argv_opt[] = { SSH_KEYGEN, "-q", "-s", ca, "-I",
				   "id-2", "-n", "user", "-V", "+1d",
				   "-O", "force-command=/bin/true", "-O",
				   "source-address=127.0.0.1/32", "-O", "no-pty", pub,
				   NULL };
	char out[256];
	assert_int_equal(run(fx->dir, options ? argv_opt : argv, out, sizeof(out)), 0);
}

static void add(const char *name)
{
	assert_true(fx->n < ELEMENTSOF(fx->names));
	snprintf(fx->names[fx->n++], sizeof(fx->names[0]), "%s", name);
}

static unsigned char *blob_of(const char *line, size_t *ret_len)
{
	const char *sp = strchr(line, ' ');
	assert_non_null(sp);
	const char *b = sp + 1;
	const char *e = strchr(b, ' ');
	size_t n = e ? (size_t)(e - b) : strcspn(b, "\n");
	unsigned char *out;
	assert_int_equal(b64_decode(b, n, 65536, 0, &out, ret_len), 0);
	return out;
}

/* Builds the sk public keys that ssh-keygen cannot generate without a FIDO
 * token from the points of generated keys. */
static void make_sk(void)
{
	size_t len, pn, cn, qn;
	const unsigned char *pk, *curve, *q;
	struct wbuf w = {};

	_cleanup_free_ unsigned char *ed = blob_of(fx->ed25519, &len);
	r_str((unsigned char *)ed, len, 1, &pk, &pn);
	w_cstr(&w, "sk-ssh-ed25519@openssh.com");
	w_str(&w, pk, pn);
	w_cstr(&w, "ssh:");
	_cleanup_free_ char *l1 = line_of("sk-ssh-ed25519@openssh.com", &w, "sk-ed@node-agent");
	write_file(fx->dir, "sk_ed25519.pub", l1);
	add("sk_ed25519.pub");

	_cleanup_free_ unsigned char *ec = blob_of(fx->ecdsa256, &len);
	r_str((unsigned char *)ec, len, 1, &curve, &cn);
	r_str((unsigned char *)ec, len, 2, &q, &qn);
	w.n = 0;
	w_cstr(&w, "sk-ecdsa-sha2-nistp256@openssh.com");
	w_str(&w, curve, cn);
	w_str(&w, q, qn);
	w_cstr(&w, "ssh:node-agent-test");
	_cleanup_free_ char *l2 = line_of("sk-ecdsa-sha2-nistp256@openssh.com", &w, "sk-ec@node-agent");
	write_file(fx->dir, "sk_ecdsa.pub", l2);
	add("sk_ecdsa.pub");
}

static int group_setup(void **state)
{
	fx = calloc(1, sizeof(*fx));
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/na-test-keys.XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	keygen("ed25519", "ed25519", "256");
	keygen("ecdsa256", "ecdsa", "256");
	keygen("ecdsa384", "ecdsa", "384");
	keygen("ecdsa521", "ecdsa", "521");
	keygen("rsa2048", "rsa", "2048");
	keygen("rsa3072", "rsa", "3072");
	keygen("rsa1024", "rsa", "1024");
	keygen("dsa", "dsa", "1024");
	keygen("ca", "ed25519", "256");
	keygen("ca_rsa", "rsa", "2048");
	keygen("ca_ecdsa", "ecdsa", "384");
	add("ed25519.pub");
	add("ecdsa256.pub");
	add("ecdsa384.pub");
	add("ecdsa521.pub");
	add("rsa2048.pub");
	add("rsa3072.pub");
	fx->ed25519 = read_file(fx->dir, "ed25519.pub");
	fx->ecdsa256 = read_file(fx->dir, "ecdsa256.pub");
	fx->rsa2048 = read_file(fx->dir, "rsa2048.pub");
	make_sk();

	/* Certificates of every type; CAs of three types; one with critical
	 * options and extensions changed. */
	certify("ca", "ed25519.pub", false);
	certify("ca_rsa", "ecdsa256.pub", false);
	certify("ca_ecdsa", "ecdsa384.pub", true);
	certify("ca", "ecdsa521.pub", true);
	certify("ca", "rsa2048.pub", false);
	certify("ca_rsa", "sk_ed25519.pub", false);
	certify("ca", "sk_ecdsa.pub", true);
	add("ed25519-cert.pub");
	add("ecdsa256-cert.pub");
	add("ecdsa384-cert.pub");
	add("ecdsa521-cert.pub");
	add("rsa2048-cert.pub");
	add("sk_ed25519-cert.pub");
	add("sk_ecdsa-cert.pub");
	*state = fx;
	return 0;
}

static int group_teardown(void **state)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/rm", "rm", "-rf", fx->dir, NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	free(fx->ed25519);
	free(fx->ecdsa256);
	free(fx->rsa2048);
	free(fx);
	return 0;
}

/* ---- every type against ssh-keygen -lf -------------------------------- */

static void fingerprints_match_ssh_keygen(void **state)
{
	static const struct {
		const char *suffix;
		enum keys_type type;
	} want_type[] = {
		{ "(ED25519)", KEYS_TYPE_ED25519 },         { "(ECDSA)", KEYS_TYPE_ECDSA_P256 },
		{ "(RSA)", KEYS_TYPE_RSA },                 { "(ED25519-SK)", KEYS_TYPE_SK_ED25519 },
		{ "(ECDSA-SK)", KEYS_TYPE_SK_ECDSA_P256 },  { "(ED25519-CERT)", KEYS_TYPE_ED25519 },
		{ "(ECDSA-CERT)", KEYS_TYPE_ECDSA_P256 },   { "(RSA-CERT)", KEYS_TYPE_RSA },
		{ "(ED25519-SK-CERT)", KEYS_TYPE_SK_ED25519 }, { "(ECDSA-SK-CERT)", KEYS_TYPE_SK_ECDSA_P256 },
	};
	unsigned certs = 0;
	for (unsigned i = 0; i < fx->n; i++) {
		const char *name = fx->names[i];
		_cleanup_free_ char *line = read_file(fx->dir, name);
		assert_non_null(line);

		const char *const argv[] = { SSH_KEYGEN, "-lf", name, NULL };
		char out[1024];
		assert_int_equal(run(fx->dir, argv, out, sizeof(out)), 0);
		/* "BITS SHA256:... COMMENT (TYPE)\n" */
		char *sp1 = strchr(out, ' ');
		assert_non_null(sp1);
		*sp1 = '\0';
		char *fp = sp1 + 1;
		char *sp2 = strchr(fp, ' ');
		assert_non_null(sp2);
		*sp2 = '\0';
		char *paren = strrchr(sp2 + 1, '(');
		assert_non_null(paren);
		paren[strcspn(paren, "\n")] = '\0';

		struct keys_key k = {};
		const char *what = NULL;
		int r = keys_parse_public(line, strlen(line), NULL, &k, &what);
		if (r < 0)
			fail_msg("%s: %s (%d)", name, what, r);
		print_message("%-22s %s %s %s\n", name, out, fp, paren);
		assert_string_equal(k.fingerprint, fp);
		assert_int_equal(k.bits, strtoul(out, NULL, 10));
		assert_true(strncmp(fp, "SHA256:", 7) == 0 && strlen(fp) == 50);
		bool is_cert = strstr(name, "-cert") != NULL;
		assert_int_equal(k.certificate, is_cert);
		certs += is_cert;
		/* The type ssh-keygen names must be ours (ECDSA: by curve bits). */
		for (size_t j = 0; j < ELEMENTSOF(want_type); j++)
			if (strcmp(paren, want_type[j].suffix) == 0 && k.type != KEYS_TYPE_ECDSA_P384 &&
			    k.type != KEYS_TYPE_ECDSA_P521)
				assert_int_equal(k.type, want_type[j].type);
		assert_string_equal(k.comment, strstr(name, "sk_") == name ? (strstr(name, "ecdsa") ? "sk-ec@node-agent" : "sk-ed@node-agent") : "test@node-agent");
		assert_string_equal(k.type_name, keys_type_to_string(k.type, k.certificate));

		/* Render, reparse: same key, same line. */
		_cleanup_free_ char *rendered = keys_render_line(&k);
		assert_non_null(rendered);
		assert_true(strncmp(rendered, line, strlen(rendered)) == 0);
		struct keys_key k2 = {};
		assert_int_equal(keys_parse_line(rendered, strlen(rendered), NULL, &k2, NULL), 0);
		assert_string_equal(k2.fingerprint, k.fingerprint);
		assert_memory_equal(k2.blob, k.blob, k.blob_len);

		/* And by blob, as sshd's %t %k hand it over. */
		struct keys_key k3 = {};
		assert_int_equal(keys_parse_blob(k.type_name, k.blob, k.blob_len, NULL, &k3, NULL), 0);
		assert_string_equal(k3.fingerprint, k.fingerprint);
		assert_null(k3.comment);
		keys_key_done(&k3);

		keys_key_done(&k2);
		keys_key_done(&k);
	}
	assert_int_equal(fx->n, 15);
	assert_int_equal(certs, 7);
}

static void rsa_min_bits(void **state)
{
	_cleanup_free_ char *r1024 = read_file(fx->dir, "rsa1024.pub");
	_cleanup_free_ char *r3072 = read_file(fx->dir, "rsa3072.pub");
	struct keys_key k = {};
	const char *what = NULL;
	assert_int_equal(keys_parse_public(r1024, strlen(r1024), NULL, &k, &what), -EKEYREJECTED);
	assert_string_equal(what, "RSA modulus too small");
	/* Configurable up ... */
	struct keys_parse_params p = { .rsa_min_bits = 3072 };
	assert_int_equal(keys_parse_public(fx->rsa2048, strlen(fx->rsa2048), &p, &k, NULL), -EKEYREJECTED);
	assert_int_equal(keys_parse_public(r3072, strlen(r3072), &p, &k, NULL), 0);
	assert_int_equal(k.bits, 3072);
	keys_key_done(&k);
	/* ... and down, but never below 1024. */
	p.rsa_min_bits = 1024;
	assert_int_equal(keys_parse_public(r1024, strlen(r1024), &p, &k, NULL), 0);
	assert_int_equal(k.bits, 1024);
	keys_key_done(&k);
	/* DSA, as ssh-keygen still writes it, is refused whatever the size. */
	_cleanup_free_ char *dsa = read_file(fx->dir, "dsa.pub");
	assert_int_equal(keys_parse_public(dsa, strlen(dsa), &p, &k, &what), -EPROTONOSUPPORT);
	assert_string_equal(what, "key type refused");
	/* A certificate signed by a too-weak CA is too weak as well. */
	p.rsa_min_bits = 4096;
	_cleanup_free_ char *cert = read_file(fx->dir, "ecdsa256-cert.pub");
	assert_int_equal(keys_parse_public(cert, strlen(cert), &p, &k, &what), -EKEYREJECTED);
}

/* ---- bad inputs --------------------------------------------------------- */

struct bad {
	const char *name;
	char *line;
	size_t len; /* 0: strlen */
	int err;
	const char *what; /* NULL: any */
	bool allow_options;
};

/* Replaces the blob of line with w. */
static char *with_blob(const char *type, const struct wbuf *w)
{
	return line_of(type, w, "c");
}

static void load_blob(const char *line, struct wbuf *w)
{
	size_t len;
	_cleanup_free_ unsigned char *b = blob_of(line, &len);
	memcpy(w->b, b, len);
	w->n = len;
}

static void bad_inputs(void **state)
{
	struct bad t[80];
	unsigned n = 0;
	struct wbuf w;
	char *s;
	size_t ed_len = strcspn(fx->ed25519, "\n");
	_cleanup_free_ char *ed = strndup(fx->ed25519, ed_len);
	const char *ed_blob = strchr(ed, ' ') + 1;
	size_t ed_blob_len = strcspn(ed_blob, " ");

#define ADD(nm, l, ln, e, wh, ao) t[n++] = (struct bad){ nm, l, ln, e, wh, ao }

	assert_true(asprintf(&s, "%s\nssh-ed25519 %.*s evil", ed, (int)ed_blob_len, ed_blob) > 0);
	ADD("newline", s, 0, -EINVAL, "newline in key line", false);
	assert_true(asprintf(&s, "%s\n\n", ed) > 0);
	ADD("two newlines", s, 0, -EINVAL, "newline in key line", false);
	s = strdup(ed);
	s[ed_len - 3] = '\0';
	ADD("NUL in comment", s, ed_len, -EINVAL, "NUL byte in key line", false);
	assert_true(asprintf(&s, "%s\r", ed) > 0);
	ADD("CR", s, 0, -EINVAL, "carriage return in key line", false);
	assert_true(asprintf(&s, "%s\r\n", ed) > 0);
	ADD("CRLF", s, 0, -EINVAL, "carriage return in key line", false);
	assert_true(asprintf(&s, "%s \x1b[2J", ed) > 0);
	ADD("escape in comment", s, 0, -EINVAL, "control character in key line", false);
	assert_true(asprintf(&s, "%s a\tb", ed) > 0);
	ADD("tab in comment", s, 0, -EINVAL, "control character in comment", false);
	assert_true(asprintf(&s, "%s \xc3\x28", ed) > 0);
	ADD("bad UTF-8 comment", s, 0, -EINVAL, "comment not valid UTF-8", false);
	assert_true(asprintf(&s, "%s \xc2\x85", ed) > 0);
	ADD("C1 control in comment", s, 0, -EINVAL, "comment not valid UTF-8", false);
	assert_true(asprintf(&s, "%s \x7f", ed) > 0);
	ADD("DEL in comment", s, 0, -EINVAL, "control character in key line", false);
	assert_true(asprintf(&s, "%s %0300d", ed, 0) > 0);
	ADD("comment too long", s, 0, -EMSGSIZE, "comment too long", false);

	/* Options where none are allowed, and options that are refused. */
	assert_true(asprintf(&s, "command=\"/bin/sh\" %s", ed) > 0);
	ADD("options not allowed", s, 0, -EINVAL, "options not allowed", false);
	assert_true(asprintf(&s, "no-pty %s", ed) > 0);
	ADD("no-pty not allowed", s, 0, -EINVAL, "options not allowed", false);
	assert_true(asprintf(&s, "command=\"/bin/sh\" %s", ed) > 0);
	ADD("command=", s, 0, -EINVAL, "option not allowed", true);
	assert_true(asprintf(&s, "restrict,COMMAND=\"id\" %s", ed) > 0);
	ADD("command= upper case", s, 0, -EINVAL, "option not allowed", true);
	assert_true(asprintf(&s, "environment=\"LD_PRELOAD=/tmp/x\" %s", ed) > 0);
	ADD("environment=", s, 0, -EINVAL, "option not allowed", true);
	assert_true(asprintf(&s, "principals=\"alice\" %s", ed) > 0);
	ADD("principals= without cert-authority", s, 0, -EINVAL, "principals= without cert-authority", true);
	assert_true(asprintf(&s, "cert-authority,principals=\"a,,b\" %s", ed) > 0);
	ADD("empty principal", s, 0, -EINVAL, "invalid principals= list", true);
	assert_true(asprintf(&s, "cert-authority,principals=\"a b\" %s", ed) > 0);
	ADD("space in principals", s, 0, -EINVAL, "invalid principals= list", true);
	assert_true(asprintf(&s, "cert-authority=\"x\" %s", ed) > 0);
	ADD("cert-authority with a value", s, 0, -EINVAL, "option takes no value", true);
	assert_true(asprintf(&s, "cert-authority,cert-authority %s", ed) > 0);
	ADD("cert-authority twice", s, 0, -EINVAL, "duplicate option", true);
	assert_true(asprintf(&s, "no-frobnicate %s", ed) > 0);
	ADD("unknown option", s, 0, -EINVAL, "unknown option", true);
	assert_true(asprintf(&s, "frob=\"1\" %s", ed) > 0);
	ADD("unknown option with value", s, 0, -EINVAL, "unknown option", true);
	assert_true(asprintf(&s, "from=\"10.0.0.1\" ,command=\"x\" %s", ed) > 0);
	ADD("space before comma", s, 0, -EINVAL, NULL, true);
	assert_true(asprintf(&s, "from=\"10.0.0.1 evil\" %s", ed) > 0);
	ADD("space in from", s, 0, -EINVAL, "invalid from= pattern list", true);
	assert_true(asprintf(&s, "from=\"a\\\"b\" %s", ed) > 0);
	ADD("backslash in value", s, 0, -EINVAL, "backslash in option value", true);
	assert_true(asprintf(&s, "from=\"a,,b\" %s", ed) > 0);
	ADD("empty from element", s, 0, -EINVAL, "invalid from= pattern list", true);
	assert_true(asprintf(&s, "from=\"10.0.0.0/33x\" %s", ed) > 0);
	ADD("bad cidr", s, 0, -EINVAL, "invalid from= pattern list", true);
	assert_true(asprintf(&s, "from=\"10.0.0.1 %s", ed) > 0);
	ADD("unterminated quote", s, 0, -EINVAL, "unterminated quote in key line", true);
	assert_true(asprintf(&s, "from=10.0.0.1 %s", ed) > 0);
	ADD("unquoted value", s, 0, -EINVAL, "option value not quoted", true);
	assert_true(asprintf(&s, "no-pty,no-pty %s", ed) > 0);
	ADD("duplicate option", s, 0, -EINVAL, "duplicate option", true);
	assert_true(asprintf(&s, "no-pty, %s", ed) > 0);
	ADD("trailing comma", s, 0, -EINVAL, "trailing comma in options", true);
	assert_true(asprintf(&s, "restrict=\"1\" %s", ed) > 0);
	ADD("value on flag", s, 0, -EINVAL, "option takes no value", true);
	assert_true(asprintf(&s, "expiry-time=\"20260231\" %s", ed) > 0);
	ADD("31 February", s, 0, -EINVAL, "invalid expiry-time", true);
	assert_true(asprintf(&s, "expiry-time=\"2026\" %s", ed) > 0);
	ADD("short expiry", s, 0, -EINVAL, "invalid expiry-time", true);
	assert_true(asprintf(&s, "no-pty") > 0);
	ADD("options only", s, 0, -EINVAL, "no key after options", true);
	/* Options smuggled into the key field. */
	assert_true(asprintf(&s, "ssh-ed25519 command=\"x\",%.*s", (int)ed_blob_len, ed_blob) > 0);
	ADD("options in key field", s, 0, -EINVAL, "key data not canonical base64", true);
	assert_true(asprintf(&s, "ssh-ed25519 no-pty %.*s", (int)ed_blob_len, ed_blob) > 0);
	ADD("option word as key data", s, 0, -EINVAL, "key data not canonical base64", true);

	/* Types. */
	assert_true(asprintf(&s, "ssh-dss %.*s", (int)ed_blob_len, ed_blob) > 0);
	ADD("DSA", s, 0, -EPROTONOSUPPORT, "key type refused", false);
	assert_true(asprintf(&s, "no-pty ssh-dss %.*s", (int)ed_blob_len, ed_blob) > 0);
	ADD("DSA with options", s, 0, -EPROTONOSUPPORT, "key type refused", true);
	assert_true(asprintf(&s, "ssh-foo %.*s", (int)ed_blob_len, ed_blob) > 0);
	ADD("unknown type", s, 0, -EPROTONOSUPPORT, "unsupported key type", false);
	assert_true(asprintf(&s, "ecdsa-sha2-nistp256 %.*s", (int)ed_blob_len, ed_blob) > 0);
	ADD("wrong inner type", s, 0, -EINVAL, "inner type mismatch", false);
	assert_true(asprintf(&s, "ssh-ed25519-cert-v01@openssh.com %.*s", (int)ed_blob_len, ed_blob) > 0);
	ADD("plain blob as cert", s, 0, -EINVAL, "inner type mismatch", false);
	assert_true(asprintf(&s, "ssh-ed25519") > 0);
	ADD("type only", s, 0, -EINVAL, "no key data after type", false);
	assert_true(asprintf(&s, "   ") > 0);
	ADD("blank", s, 0, -EINVAL, "empty key line", false);
	assert_true(asprintf(&s, "# %s", ed) > 0);
	ADD("comment line", s, 0, -EINVAL, "comment line, not a key", false);

	/* Base64. */
	assert_true(asprintf(&s, "ssh-ed25519 %.*s!", (int)ed_blob_len - 1, ed_blob) > 0);
	ADD("bad base64", s, 0, -EINVAL, "key data not canonical base64", false);
	assert_true(asprintf(&s, "ssh-ed25519 %.*s", (int)ed_blob_len - 1, ed_blob) > 0);
	ADD("base64 not a multiple of 4", s, 0, -EINVAL, "key data not canonical base64", false);
	{
		/* ecdsa-256 blobs are 104 bytes: one "=" of padding; set a
		 * discarded bit in the last significant character. */
		s = strndup(fx->ecdsa256, strcspn(fx->ecdsa256, "\n"));
		char *eq = strchr(s, '=');
		assert_non_null(eq);
		const char *alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		unsigned v = (unsigned)(strchr(alpha, eq[-1]) - alpha);
		eq[-1] = alpha[v ^ 1];
		ADD("non-canonical base64", s, 0, -EINVAL, "key data not canonical base64", false);
	}

	/* Blob structure. */
	load_blob(ed, &w);
	w.n -= 4;
	ADD("truncated blob", with_blob("ssh-ed25519", &w), 0, -EINVAL, "truncated key blob", false);
	load_blob(ed, &w);
	w.b[w.n++] = 0;
	ADD("trailing bytes in blob", with_blob("ssh-ed25519", &w), 0, -EINVAL, "trailing bytes in key blob", false);
	load_blob(ed, &w);
	w.b[3] = 0xff; /* type length beyond the blob */
	ADD("type length overflow", with_blob("ssh-ed25519", &w), 0, -EINVAL, "truncated key blob", false);
	w.n = 0;
	w_cstr(&w, "ssh-ed25519");
	w_str(&w, "0123456789abcdef0123456789abcde", 31);
	ADD("ed25519 31 bytes", with_blob("ssh-ed25519", &w), 0, -EINVAL, "ed25519 key not 32 bytes", false);
	w.n = 0;
	ADD("empty blob", with_blob("ssh-ed25519", &w), 0, -EINVAL, NULL, false);
	{
		size_t len, qn;
		const unsigned char *q;
		_cleanup_free_ unsigned char *ec = blob_of(fx->ecdsa256, &len);
		r_str((unsigned char *)ec, len, 2, &q, &qn);
		w.n = 0;
		w_cstr(&w, "ecdsa-sha2-nistp256");
		w_cstr(&w, "nistp256");
		unsigned char bad_q[65];
		memcpy(bad_q, q, 65);
		bad_q[64] ^= 1;
		w_str(&w, bad_q, 65);
		ADD("bad curve point", with_blob("ecdsa-sha2-nistp256", &w), 0, -EINVAL, "EC point not on the curve", false);
		w.n = 0;
		w_cstr(&w, "ecdsa-sha2-nistp256");
		w_cstr(&w, "nistp384");
		w_str(&w, q, 65);
		ADD("curve name mismatch", with_blob("ecdsa-sha2-nistp256", &w), 0, -EINVAL,
		    "curve name does not match key type", false);
		w.n = 0;
		w_cstr(&w, "ecdsa-sha2-nistp256");
		w_cstr(&w, "nistp256");
		unsigned char comp[33];
		memcpy(comp, q, 33);
		comp[0] = 0x02 | (q[64] & 1);
		w_str(&w, comp, 33);
		ADD("compressed point", with_blob("ecdsa-sha2-nistp256", &w), 0, -EINVAL,
		    "EC point not uncompressed or wrong size", false);
		w.n = 0;
		w_cstr(&w, "sk-ecdsa-sha2-nistp256@openssh.com");
		w_cstr(&w, "nistp256");
		w_str(&w, q, 65);
		ADD("sk without application", with_blob("sk-ecdsa-sha2-nistp256@openssh.com", &w), 0, -EINVAL,
		    "truncated key blob", false);
		w_str(&w, "ssh:\0x", 6);
		ADD("sk application with NUL", with_blob("sk-ecdsa-sha2-nistp256@openssh.com", &w), 0, -EINVAL,
		    "sk application invalid", false);
	}
	{
		/* RSA: a negative and a non-minimal mpint, and e = 1. */
		size_t len, en, nn;
		const unsigned char *e, *m;
		_cleanup_free_ unsigned char *rsa = blob_of(fx->rsa2048, &len);
		r_str((unsigned char *)rsa, len, 1, &e, &en);
		r_str((unsigned char *)rsa, len, 2, &m, &nn);
		assert_int_equal(m[0], 0); /* 2048-bit modulus: leading zero byte */
		w.n = 0;
		w_cstr(&w, "ssh-rsa");
		w_str(&w, e, en);
		w_str(&w, m + 1, nn - 1);
		ADD("RSA negative modulus", with_blob("ssh-rsa", &w), 0, -EINVAL,
		    "RSA modulus not a canonical positive mpint", false);
		w.n = 0;
		w_cstr(&w, "ssh-rsa");
		w_str(&w, "\0\x01\x00\x01", 4);
		w_str(&w, m, nn);
		ADD("RSA non-minimal exponent", with_blob("ssh-rsa", &w), 0, -EINVAL,
		    "RSA exponent not a canonical positive mpint", false);
		w.n = 0;
		w_cstr(&w, "ssh-rsa");
		w_str(&w, "\x01", 1);
		w_str(&w, m, nn);
		ADD("RSA e = 1", with_blob("ssh-rsa", &w), 0, -EINVAL, "RSA exponent invalid", false);
		w.n = 0;
		w_cstr(&w, "ssh-rsa");
		w_str(&w, e, en);
		unsigned char even[300];
		memcpy(even, m, nn);
		even[nn - 1] &= 0xfe;
		w_str(&w, even, nn);
		ADD("RSA even modulus", with_blob("ssh-rsa", &w), 0, -EINVAL, "RSA modulus invalid", false);
	}
	{
		/* Certificates: trailing byte, truncation, reserved not empty. */
		_cleanup_free_ char *c = read_file(fx->dir, "ed25519-cert.pub");
		assert_true(asprintf(&s, "cert-authority %.*s", (int)strcspn(c, "\n"), c) > 0);
		ADD("cert-authority on a certificate", s, 0, -EINVAL, "cert-authority on a certificate", true);
		load_blob(c, &w);
		w.b[w.n++] = 0;
		ADD("trailing bytes in cert", with_blob("ssh-ed25519-cert-v01@openssh.com", &w), 0, -EINVAL,
		    "trailing bytes in key blob", false);
		load_blob(c, &w);
		w.n -= 1;
		ADD("truncated cert", with_blob("ssh-ed25519-cert-v01@openssh.com", &w), 0, -EINVAL,
		    "truncated certificate", false);
		load_blob(c, &w);
		ADD("cert under plain type", with_blob("ssh-ed25519", &w), 0, -EINVAL, "inner type mismatch", false);
	}
	/* Size. */
	s = malloc(KEYS_LINE_MAX + 2);
	memset(s, 'A', KEYS_LINE_MAX + 1);
	memcpy(s, "ssh-ed25519 ", 12);
	s[KEYS_LINE_MAX + 1] = '\0';
	ADD("huge line", s, 0, -EMSGSIZE, "key line too long", false);
	s = malloc(KEYS_LINE_MAX + 1);
	memset(s, 'A', KEYS_LINE_MAX);
	memcpy(s, "ssh-ed25519 ", 12);
	s[KEYS_LINE_MAX] = '\0';
	ADD("largest line, garbage blob", s, 0, -EINVAL, NULL, false);

	assert_true(n <= ELEMENTSOF(t));
	for (unsigned i = 0; i < n; i++) {
		struct keys_key k = { .bits = 4242 };
		struct keys_error e = {};
		struct keys_parse_params p = { .allow_options = t[i].allow_options };
		size_t len = t[i].len ? t[i].len : strlen(t[i].line);
		int r = keys_parse_line_ex(t[i].line, len, &p, &k, &e);
		print_message("%-32s -> %d %s \"%s\"\n", t[i].name, r, e.what ? e.what : "", e.token);
		if (r != t[i].err)
			fail_msg("%s: got %d (%s), want %d", t[i].name, r, e.what, t[i].err);
		if (t[i].what && strcmp(e.what, t[i].what) != 0)
			fail_msg("%s: got \"%s\", want \"%s\"", t[i].name, e.what, t[i].what);
		/* Output untouched on failure. */
		assert_int_equal(k.bits, 4242);
		assert_null(k.blob);
		free(t[i].line);
	}
#undef ADD
}

static void error_names_option(void **state)
{
	_cleanup_free_ char *s = NULL;
	assert_true(asprintf(&s, "no-pty,permitopen=\"localhost:22\" %s", fx->ed25519) > 0);
	struct keys_key k = {};
	struct keys_error e = {};
	struct keys_parse_params p = { .allow_options = true };
	assert_int_equal(keys_parse_line_ex(s, strlen(s), &p, &k, &e), -EINVAL);
	assert_string_equal(e.what, "option not allowed");
	assert_string_equal(e.token, "permitopen");
	free(s);
	assert_true(asprintf(&s, "x-\x01\xff %s", fx->ed25519) > 0);
	assert_int_equal(keys_parse_line_ex(s, strlen(s), &p, &k, &e), -EINVAL);
	assert_string_equal(e.what, "control character in key line");
	free(s);
	assert_true(asprintf(&s, "x-\xff=\"1\" %s", fx->ed25519) > 0);
	assert_int_equal(keys_parse_line_ex(s, strlen(s), &p, &k, &e), -EINVAL);
	assert_string_equal(e.what, "unknown option");
	assert_string_equal(e.token, "x-?");
}

/* ---- options that are allowed, and the rendering ---------------------- */

static void good_options(void **state)
{
	static const struct {
		const char *opts;
		const char *rendered; /* options part of keys_render_line() */
		unsigned no_flags;
		bool restrict_;
		const char *from;
		time_t expiry;
	} t[] = {
		{ "", "", 0, false, NULL, 0 },
		{ "restrict", "restrict", 0, true, NULL, 0 },
		{ "no-pty,no-port-forwarding", "no-port-forwarding,no-pty", KEYS_NO_PTY | KEYS_NO_PORT_FORWARDING,
		  false, NULL, 0 },
		{ "NO-X11-FORWARDING,no-user-rc,no-agent-forwarding,no-touch-required",
		  "no-agent-forwarding,no-user-rc,no-X11-forwarding,no-touch-required",
		  KEYS_NO_X11_FORWARDING | KEYS_NO_USER_RC | KEYS_NO_AGENT_FORWARDING | KEYS_NO_TOUCH_REQUIRED,
		  false, NULL, 0 },
		{ "expiry-time=\"20261201\"", "expiry-time=\"20261201000000Z\"", 0, false, NULL, 1796083200 },
		{ "expiry-time=\"202612010930Z\"", "expiry-time=\"20261201093000Z\"", 0, false, NULL, 1796117400 },
		{ "expiry-time=\"20261201093059\",restrict", "restrict,expiry-time=\"20261201093059Z\"", 0, true,
		  NULL, 1796117459 },
		{ "from=\"10.0.0.0/8,!10.1.2.3,*.example.com,fe80::1,host-?.x\"",
		  "from=\"10.0.0.0/8,!10.1.2.3,*.example.com,fe80::1,host-?.x\"", 0, false,
		  "10.0.0.0/8,!10.1.2.3,*.example.com,fe80::1,host-?.x", 0 },
		{ "expiry-time=\"20300101000000Z\",principals=\"alice,ops@x.example\",cert-authority",
		  "cert-authority,principals=\"alice,ops@x.example\",expiry-time=\"20300101000000Z\"", 0, false, NULL,
		  1893456000 },
		{ "from=\"192.168.0.1\",expiry-time=\"20300101000000Z\",no-pty,restrict",
		  "restrict,no-pty,from=\"192.168.0.1\",expiry-time=\"20300101000000Z\"", KEYS_NO_PTY, true,
		  "192.168.0.1", 1893456000 },
	};
	size_t len = strcspn(fx->ed25519, "\n");
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		_cleanup_free_ char *line = NULL;
		assert_true(asprintf(&line, "%s%s%.*s", t[i].opts, t[i].opts[0] ? "  " : "", (int)len, fx->ed25519) > 0);
		struct keys_key k = {};
		struct keys_error e = {};
		struct keys_parse_params p = { .allow_options = true };
		int r = keys_parse_line_ex(line, strlen(line), &p, &k, &e);
		if (r < 0)
			fail_msg("%s: %s \"%s\"", t[i].opts, e.what, e.token);
		assert_int_equal(k.options.no_flags, t[i].no_flags);
		assert_int_equal(k.options.restrict_, t[i].restrict_);
		assert_int_equal(k.options.expiry, t[i].expiry);
		if (t[i].from)
			assert_string_equal(k.options.from, t[i].from);
		else
			assert_null(k.options.from);
		_cleanup_free_ char *out = keys_render_line(&k);
		_cleanup_free_ char *want = NULL;
		assert_true(asprintf(&want, "%s%s%.*s", t[i].rendered, t[i].rendered[0] ? " " : "", (int)len,
				     fx->ed25519) > 0);
		assert_string_equal(out, want);
		/* The rendering parses back to the same options. */
		struct keys_key k2 = {};
		assert_int_equal(keys_parse_line(out, strlen(out), &p, &k2, NULL), 0);
		assert_int_equal(k2.options.expiry, k.options.expiry);
		assert_int_equal(k2.options.no_flags, k.options.no_flags);
		_cleanup_free_ char *out2 = keys_render_line(&k2);
		assert_string_equal(out, out2);
		/* Dup is deep and equal. */
		struct keys_key k3 = {};
		assert_int_equal(keys_key_dup(&k2, &k3), 0);
		keys_key_done(&k2);
		_cleanup_free_ char *out3 = keys_render_line(&k3);
		assert_string_equal(out, out3);
		keys_key_done(&k3);
		keys_key_done(&k);
		keys_key_done(&k); /* twice is safe */
	}
}

static void whitespace_and_comments(void **state)
{
	const char *sp = strchr(fx->ed25519, ' ');
	size_t bl = strcspn(sp + 1, " \n");
	static const struct {
		const char *fmt_pre, *fmt_mid, *fmt_post;
		const char *comment;
	} t[] = {
		{ "", " ", "", NULL },
		{ "  \t", " \t ", " \t ", NULL },
		{ "", " ", " hello world ", "hello world" },
		{ "", "\t", "\tJ\xc3\xbcrgen \xe2\x9c\x93", "J\xc3\xbcrgen \xe2\x9c\x93" },
		{ "", " ", " ssh-ed25519 AAAA", "ssh-ed25519 AAAA" },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		_cleanup_free_ char *line = NULL;
		assert_true(asprintf(&line, "%sssh-ed25519%s%.*s%s\n", t[i].fmt_pre, t[i].fmt_mid, (int)bl, sp + 1,
				     t[i].fmt_post) > 0);
		struct keys_key k = {};
		const char *what = NULL;
		int r = keys_parse_public(line, strlen(line), NULL, &k, &what);
		if (r < 0)
			fail_msg("case %zu: %s", i, what);
		if (t[i].comment)
			assert_string_equal(k.comment, t[i].comment);
		else
			assert_null(k.comment);
		keys_key_done(&k);
	}
}

static void expiry_table(void **state)
{
	static const struct {
		const char *s;
		int r;
		time_t t;
	} t[] = {
		{ "20261201", 0, 1796083200 },
		{ "20261201Z", 0, 1796083200 },
		{ "202612010000", 0, 1796083200 },
		{ "20261201000000Z", 0, 1796083200 },
		{ "20240229235959Z", 0, 1709251199 },
		{ "99991231235959Z", 0, KEYS_EXPIRY_MAX },
		{ "19700101000001Z", 0, 1 },
		{ "19700101000000Z", -EINVAL, 0 },
		{ "19691231", -EINVAL, 0 },
		{ "20230229", -EINVAL, 0 },
		{ "21000229", -EINVAL, 0 },
		{ "20261301", -EINVAL, 0 },
		{ "20261200", -EINVAL, 0 },
		{ "202612012400", -EINVAL, 0 },
		{ "20261201235960", -EINVAL, 0 },
		{ "2026120", -EINVAL, 0 },
		{ "2026120100", -EINVAL, 0 },
		{ "202612010000000", -EINVAL, 0 },
		{ "20261201ZZ", -EINVAL, 0 },
		{ "Z", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
		{ "2026-12-01", -EINVAL, 0 },
		{ "+2026120", -EINVAL, 0 },
		{ "20261201 ", -EINVAL, 0 },
		{ "20261201000000Z0000000000", -EINVAL, 0 },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		time_t v = 42;
		int r = keys_parse_expiry(t[i].s, &v);
		if (r != t[i].r)
			fail_msg("\"%s\": %d", t[i].s, r);
		assert_int_equal(v, r == 0 ? t[i].t : 42);
	}
	char buf[16];
	keys_format_expiry(1796117459, buf);
	assert_string_equal(buf, "20261201093059Z");
	keys_format_expiry(KEYS_EXPIRY_MAX + 1000, buf);
	assert_string_equal(buf, "99991231235959Z");
	keys_format_expiry(-5, buf);
	assert_string_equal(buf, "19700101000001Z");
}

/* A synthetic certificate (structure only: sshd would check the signature)
 * whose principal has plen bytes. */
static void synthetic_cert(struct wbuf *w, size_t plen)
{
	static const unsigned char pk[32] = { 1, 2, 3 };
	static char principal[8192];
	struct wbuf inner = {}, ca = {}, sig = {};
	memset(principal, 'p', sizeof(principal));
	w->n = 0;
	w_cstr(w, "ssh-ed25519-cert-v01@openssh.com");
	w_str(w, "0123456789abcdef0123456789abcdef", 32); /* nonce */
	w_str(w, pk, 32);
	w_u32(w, 0);
	w_u32(w, 7); /* serial */
	w_u32(w, 1); /* user certificate */
	w_cstr(w, "key-id");
	w_str(&inner, principal, plen);
	w_str(w, inner.b, inner.n);
	w_u32(w, 0);
	w_u32(w, 0); /* valid after */
	w_u32(w, 0xffffffff);
	w_u32(w, 0xffffffff); /* valid before */
	w_str(w, "", 0);      /* critical options */
	w_str(w, "", 0);      /* extensions */
	w_str(w, "", 0);      /* reserved */
	w_cstr(&ca, "ssh-ed25519");
	w_str(&ca, pk, 32);
	w_str(w, ca.b, ca.n);
	w_cstr(&sig, "ssh-ed25519");
	w_str(&sig, principal, 64);
	w_str(w, sig.b, sig.n);
}

static void render_never_grows_past_max(void **state)
{
	struct wbuf w;
	synthetic_cert(&w, 0);
	size_t fixed = w.n;
	const char *pre = "expiry-time=\"20261201\" ssh-ed25519-cert-v01@openssh.com ";
	/* Blob of 6102 bytes = 8136 base64 characters: the line is exactly
	 * KEYS_LINE_MAX long. */
	size_t want_blob = (KEYS_LINE_MAX - strlen(pre)) / 4 * 3;
	synthetic_cert(&w, want_blob - fixed);
	assert_int_equal(w.n, want_blob);
	_cleanup_free_ char *b = b64_encode(w.b, w.n, false);
	_cleanup_free_ char *line = NULL;
	assert_true(asprintf(&line, "%s%s", pre, b) > 0);
	assert_int_equal(strlen(line), KEYS_LINE_MAX);

	struct keys_key k = {};
	struct keys_parse_params p = { .allow_options = true };
	const char *what = NULL;
	/* Without the expiry it fits; with it the canonical form would not. */
	assert_int_equal(keys_parse_line(line + 23, strlen(line + 23), &p, &k, &what), 0);
	assert_true(k.certificate);
	keys_key_done(&k);
	assert_int_equal(keys_parse_line(line, strlen(line), &p, &k, &what), -EMSGSIZE);
	assert_string_equal(what, "key line too long");
	/* With the expiry already canonical and 6 bytes less blob it fits and
	 * renders back byte for byte. */
	synthetic_cert(&w, want_blob - fixed - 6);
	free(b);
	b = b64_encode(w.b, w.n, false);
	free(line);
	assert_true(asprintf(&line, "expiry-time=\"20261201000000Z\" ssh-ed25519-cert-v01@openssh.com %s", b) > 0);
	assert_true(strlen(line) <= KEYS_LINE_MAX);
	assert_int_equal(keys_parse_line(line, strlen(line), &p, &k, &what), 0);
	_cleanup_free_ char *out = keys_render_line(&k);
	assert_string_equal(out, line);
	keys_key_done(&k);
}

static void type_names(void **state)
{
	assert_string_equal(keys_type_to_string(KEYS_TYPE_ED25519, false), "ssh-ed25519");
	assert_string_equal(keys_type_to_string(KEYS_TYPE_SK_ECDSA_P256, true),
			    "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com");
	assert_string_equal(keys_type_to_string(KEYS_TYPE_ECDSA_P521, false), "ecdsa-sha2-nistp521");
	assert_null(keys_type_to_string(_KEYS_TYPE_INVALID, false));
	assert_null(keys_type_to_string(_KEYS_TYPE_MAX, true));
	/* The fingerprint of a known blob (RFC 8709 style key, fixed). */
	char fp[KEYS_FINGERPRINT_MAX];
	assert_int_equal(keys_fingerprint((const unsigned char *)"", 0, fp), 0);
	/* SHA-256 of nothing: e3b0c442... in base64, unpadded. */
	assert_string_equal(fp, "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fingerprints_match_ssh_keygen),
		cmocka_unit_test(rsa_min_bits),
		cmocka_unit_test(bad_inputs),
		cmocka_unit_test(error_names_option),
		cmocka_unit_test(good_options),
		cmocka_unit_test(whitespace_and_comments),
		cmocka_unit_test(expiry_table),
		cmocka_unit_test(render_never_grows_past_max),
		cmocka_unit_test(type_names),
	};
	return cmocka_run_group_tests_name("keys", tests, group_setup, group_teardown);
}
