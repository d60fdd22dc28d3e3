/* The SSH public key model: parsing, validation, fingerprints, rendering.
 *
 * Pure functions: no I/O, no logging. Every input is treated as hostile: a
 * key line that could smuggle sshd options or extra lines is rejected. */
#ifndef NA_KEYS_H
#define NA_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Longest accepted authorized_keys line (OpenSSH's own limit is 8 KiB per
 * line for its files; an RSA-16384 certificate stays well below this). */
#define KEYS_LINE_MAX 8192
/* "SHA256:" + 43 base64 characters + NUL. */
#define KEYS_FINGERPRINT_MAX 51
#define KEYS_COMMENT_MAX 256
#define KEYS_RSA_MIN_BITS_DEFAULT 2048

enum keys_type {
	KEYS_TYPE_ED25519,
	KEYS_TYPE_ECDSA_P256,
	KEYS_TYPE_ECDSA_P384,
	KEYS_TYPE_ECDSA_P521,
	KEYS_TYPE_RSA,
	KEYS_TYPE_SK_ED25519,
	KEYS_TYPE_SK_ECDSA_P256,
	_KEYS_TYPE_MAX,
	_KEYS_TYPE_INVALID = -1,
};

/* Options the control plane may attach to a key. Anything else is refused. */
struct keys_options {
	bool restrict_;        /* "restrict" */
	unsigned no_flags;     /* KEYS_NO_* bits: "no-pty", "no-port-forwarding", ... */
	char *from;            /* "from=\"pattern-list\"", validated charset; NULL if unset */
	time_t expiry;         /* "expiry-time=", 0 if unset; UTC seconds */
	bool cert_authority;   /* "cert-authority": the key is a CA, trusted for certificates */
	char *principals;      /* "principals=\"a,b\"" (only with cert-authority); NULL if unset */
};

/* Longest principals="..." list accepted. */
#define KEYS_PRINCIPALS_MAX 1024

enum {
	KEYS_NO_AGENT_FORWARDING = 1 << 0,
	KEYS_NO_PORT_FORWARDING = 1 << 1,
	KEYS_NO_PTY = 1 << 2,
	KEYS_NO_USER_RC = 1 << 3,
	KEYS_NO_X11_FORWARDING = 1 << 4,
	KEYS_NO_TOUCH_REQUIRED = 1 << 5, /* not a "no-" restriction but allowed: sk keys */
};

struct keys_key {
	enum keys_type type;
	bool certificate;                     /* the -cert-v01@openssh.com form */
	char *type_name;                      /* "ssh-ed25519", ... as written */
	char *blob_b64;                       /* canonical base64 of the blob */
	unsigned char *blob;                  /* decoded blob */
	size_t blob_len;
	unsigned bits;                        /* RSA modulus bits, EC curve bits, 256 for ed25519 */
	char fingerprint[KEYS_FINGERPRINT_MAX]; /* "SHA256:..." as ssh-keygen -lf prints it */
	char *comment;                        /* NULL if none; printable ASCII/UTF-8 only */
	struct keys_options options;
};

struct keys_parse_params {
	unsigned rsa_min_bits;    /* 0 means KEYS_RSA_MIN_BITS_DEFAULT */
	bool allow_options;       /* accept an options prefix from the allow-list */
};

/* A parse failure, for callers that log it: what is a static string naming
 * the reason ("newline in key line", "inner type mismatch", ...); token is
 * the offending option or type name when there is one (printable ASCII, other
 * bytes replaced by '?', truncated; "" otherwise). Never holds key material
 * beyond a type or option name. */
#define KEYS_ERROR_TOKEN_MAX 48
struct keys_error {
	const char *what;
	char token[KEYS_ERROR_TOKEN_MAX];
};

/* Parses one authorized_keys line ("[options] type base64 [comment]") of
 * len bytes (not necessarily NUL-terminated; a single trailing "\n" is
 * accepted). params may be NULL (defaults: RSA >= 2048 bits, no options).
 * Options are accepted only when params->allow_options, and only from the
 * allow-list in struct keys_options; "command=" and every other option is
 * refused. Fields are separated by spaces or tabs; the comment may contain
 * spaces and UTF-8 but no control characters, and is at most
 * KEYS_COMMENT_MAX bytes.
 * Returns 0 and fills *ret (free with keys_key_done()), or -EINVAL
 * (malformed, injection attempt, refused option), -EMSGSIZE (too long),
 * -EPROTONOSUPPORT (type not supported, DSA), -EKEYREJECTED (too weak),
 * -ENOMEM. *ret is written only on success. When reterr_what is non-NULL it
 * is set to a static string naming the reason on failure. */
int keys_parse_line(const char *line, size_t len, const struct keys_parse_params *params,
		    struct keys_key *ret, const char **reterr_what);

/* The same, reporting the reason and the offending token in *reterr (may be
 * NULL; written only on failure). */
int keys_parse_line_ex(const char *line, size_t len, const struct keys_parse_params *params,
		       struct keys_key *ret, struct keys_error *reterr);

/* Parses a bare public key "type base64 [comment]": like keys_parse_line()
 * but an options prefix is always refused, whatever params->allow_options
 * says ("options not allowed"). */
int keys_parse_public(const char *text, size_t len, const struct keys_parse_params *params,
		      struct keys_key *ret, const char **reterr_what);
int keys_parse_public_ex(const char *text, size_t len, const struct keys_parse_params *params,
			 struct keys_key *ret, struct keys_error *reterr);

/* Parses a decoded key blob of the given type name (as in sshd's %t / %k,
 * or a key document that carries type and base64 apart). Same checks as the
 * line parser; the result has no options and no comment. */
int keys_parse_blob(const char *type_name, const unsigned char *blob, size_t len,
		    const struct keys_parse_params *params, struct keys_key *ret, struct keys_error *reterr);

/* Renders the key as one authorized_keys line without a trailing newline:
 * options (cert-authority and principals="..." first, then restrict, no-*,
 * from="...", then expiry-time="YYYYMMDDHHMMSSZ" when set), type,
 * canonical base64, comment. A CA line therefore always starts with
 * "cert-authority" (authkeys-cmd relies on it). The "Z" form of expiry-time
 * needs OpenSSH >= 9.1 (Debian 12 ships 9.2). The result parses back with
 * keys_parse_line(allow_options) to the same key. Returns the malloc'ed line
 * or NULL on OOM. */
char *keys_render_line(const struct keys_key *key);

/* Latest expiry the "YYYYMMDDHHMMSSZ" form can express: 9999-12-31T23:59:59Z. */
#define KEYS_EXPIRY_MAX ((time_t)253402300799)

/* Formats t (UTC) as "YYYYMMDDHHMMSSZ" into buf (16 bytes). t is clamped to
 * [1, KEYS_EXPIRY_MAX] so the output always has this exact shape. */
void keys_format_expiry(time_t t, char buf[static 16]);

/* Parses "YYYYMMDD[HHMM[SS]][Z]" (NUL-terminated) into UTC seconds.
 * sshd reads the form without "Z" in its local time zone; this parser reads
 * both forms as UTC (nodes run in UTC, and keys_render_line() always writes
 * the "Z" form so sshd and this code agree). Fields are range-checked (no
 * 31 February, no second 60). Returns 0, or -EINVAL; *ret only on success. */
int keys_parse_expiry(const char *s, time_t *ret);

/* Is s[0, n) a principals= list keys.c accepts: comma-separated, non-empty
 * names of [A-Za-z0-9._@+-], at most KEYS_PRINCIPALS_MAX bytes? (sshd
 * compares each certificate principal with these names exactly.) */
bool keys_principals_valid(const char *s, size_t n);

/* Computes the SHA256 fingerprint ("SHA256:" + unpadded base64) of a plain
 * (non-certificate) key blob with OpenSSL. A certificate's fingerprint, as
 * ssh-keygen -lf and sshd's %f give it, is that of its embedded plain key:
 * struct keys_key.fingerprint holds that. Returns 0 or -ENOMEM/-EIO. */
int keys_fingerprint(const unsigned char *blob, size_t len, char out[static KEYS_FINGERPRINT_MAX]);

/* "ssh-ed25519", "ecdsa-sha2-nistp256-cert-v01@openssh.com", ...; NULL for
 * an invalid type. */
const char *keys_type_to_string(enum keys_type t, bool certificate);

/* Deep copy of src into *ret. Returns 0 or -ENOMEM (*ret untouched). */
int keys_key_dup(const struct keys_key *src, struct keys_key *ret);

/* Releases what keys_parse_* allocated and zeroes the struct; safe on a
 * zeroed struct and safe to call twice. */
void keys_key_done(struct keys_key *key);

#endif
