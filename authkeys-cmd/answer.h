/* What authkeys-cmd answers sshd, decided from a verified snapshot.
 *
 * Pure: no I/O, no logging, no clock (the caller passes "now"). main.c
 * writes the output and logs the decision. */
#ifndef AKC_ANSWER_H
#define AKC_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

/* A certificate's %f is the fingerprint of the certificate's own key,
 * never the CA's, and sshd matches a certificate only against
 * cert-authority lines. So when %t is a certificate type, the answer is the
 * user's valid cert-authority line whose key signed the certificate in %k
 * (lib/ssh/sshcert.h; sshd would accept no other), and when %k does not parse
 * as a certificate of type %t, every valid cert-authority line of the user
 * (cert_error says why); sshd checks signature, principals and validity. */
struct akc_request {
	const char *user;        /* %u, required */
	const char *fingerprint; /* %f or NULL: then all of the user's keys */
	const char *type;        /* %t or NULL: must equal the matched record's key type */
	const char *key;         /* %k or NULL: must equal the matched record's base64 blob */
	bool allow_root;         /* serve the user "root" at all */
	int64_t now;             /* UTC seconds; keys with 0 < expiry <= now are not served */
};

/* Why the answer is what it is; logged as REASON=. */
enum akc_reason {
	AKC_SERVED,              /* printed >= 1 key */
	AKC_NO_KEYS,             /* user not in the snapshot */
	AKC_ALL_EXPIRED,         /* user known, every key expired */
	AKC_UNKNOWN_FINGERPRINT, /* no key of the user has that fingerprint */
	AKC_EXPIRED,             /* the fingerprint's key expired */
	AKC_TYPE_MISMATCH,       /* %t differs from the record */
	AKC_KEY_MISMATCH,        /* %k differs from the record */
	AKC_ROOT_REFUSED,        /* user root without --allow-root */
	AKC_SNAPSHOT_CORRUPT,    /* a block or record the lookup touched is damaged */
	AKC_NO_CA,               /* a certificate (%t *-cert-v01@openssh.com): the user has no valid CA line
				  * (that signed it) */
	_AKC_REASON_MAX,
};

#define AKC_KEY_ID_MAX 256 /* bytes of a certificate's key id kept for the log */

struct akc_answer {
	char *out;      /* malloc'ed; whole lines, each ending in '\n'; NULL when nothing */
	size_t out_len;
	unsigned served;
	unsigned expired;
	enum akc_reason reason;
	const char *what; /* for AKC_SNAPSHOT_CORRUPT: the check that failed */
	/* The records served (recs[0..served), pointing into the snapshot), for
	 * the log: each one's fingerprint and source. */
	struct snapshot_record *recs;
	struct snapshot_record one; /* recs for a single-key answer */
	/* A certificate request (%t a certificate type): */
	bool cert;
	int cert_error;               /* 0, or why %k is no certificate (-EBADMSG, -EOPNOTSUPP, -EINVAL) */
	uint64_t cert_serial;
	char cert_key_id[AKC_KEY_ID_MAX * 4 + 4]; /* printable: other bytes as \xNN, "..." when cut */
};

/* Decides the answer to req from s. Returns 0 and fills *ret (release with
 * akc_answer_done()) or -ENOMEM. A damaged snapshot is not an error here:
 * it is AKC_SNAPSHOT_CORRUPT with nothing to print, never a partial set. */
int akc_answer(const struct snapshot *s, const struct akc_request *req, struct akc_answer *ret);

void akc_answer_done(struct akc_answer *a);

/* "served", "no-keys", ... (stable strings for REASON=). */
const char *akc_reason_to_string(enum akc_reason r);

#endif
