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
};

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

/* Parses one authorized_keys line ("[options] type base64 [comment]") of
 * len bytes (not necessarily NUL-terminated; a single trailing "\n" is
 * accepted). Returns 0 and fills *ret (free with keys_key_done()), or
 * -EINVAL (malformed, injection attempt), -EMSGSIZE (too long),
 * -EPROTONOSUPPORT (type not supported, DSA), -EKEYREJECTED (too weak).
 * When reterr_what is non-NULL it is set to a static string naming the
 * reason ("newline in key", "inner type mismatch", ...) on failure. */
int keys_parse_line(const char *line, size_t len, const struct keys_parse_params *params,
		    struct keys_key *ret, const char **reterr_what);

/* Parses a bare public key "type base64 [comment]" (no options allowed). */
int keys_parse_public(const char *text, size_t len, const struct keys_parse_params *params,
		      struct keys_key *ret, const char **reterr_what);

/* Renders the key as one authorized_keys line without a trailing newline:
 * options (expiry-time="YYYYMMDDHHMMSSZ" when set), type, base64, comment.
 * Returns the malloc'ed line or NULL on OOM. */
char *keys_render_line(const struct keys_key *key);

/* Formats t (UTC) as "YYYYMMDDHHMMSSZ" into buf (16 bytes). */
void keys_format_expiry(time_t t, char buf[static 16]);

/* Parses "YYYYMMDD[HHMM[SS]][Z]" as sshd does (Z = UTC; without Z the local
 * time zone is ignored and UTC assumed, see keys(7)). */
int keys_parse_expiry(const char *s, time_t *ret);

/* Computes the SHA256 fingerprint of a decoded blob with OpenSSL. */
int keys_fingerprint(const unsigned char *blob, size_t len, char out[static KEYS_FINGERPRINT_MAX]);

const char *keys_type_to_string(enum keys_type t, bool certificate);

/* Releases what keys_parse_* allocated; safe on a zeroed struct. */
void keys_key_done(struct keys_key *key);

#endif
