/* The lookup policy of authkeys-cmd; see answer.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "b64.h"
#include "cleanup.h"
#include "sshcert.h"

static const char *const reasons[_AKC_REASON_MAX] = {
	[AKC_SERVED] = "served",
	[AKC_NO_KEYS] = "no-keys",
	[AKC_ALL_EXPIRED] = "all-expired",
	[AKC_UNKNOWN_FINGERPRINT] = "unknown-fingerprint",
	[AKC_EXPIRED] = "expired",
	[AKC_TYPE_MISMATCH] = "type-mismatch",
	[AKC_KEY_MISMATCH] = "key-mismatch",
	[AKC_ROOT_REFUSED] = "root-refused",
	[AKC_SNAPSHOT_CORRUPT] = "snapshot-corrupt",
	[AKC_NO_CA] = "no-cert-authority",
};

static bool is_cert_type(const char *t)
{
	static const char sfx[] = "-cert-v01@openssh.com";
	size_t n = t ? strlen(t) : 0;
	return n > sizeof(sfx) - 1 && memcmp(t + n - (sizeof(sfx) - 1), sfx, sizeof(sfx) - 1) == 0;
}

/* keys_render_line() puts cert-authority first on a CA line. */
static bool is_ca_line(const struct snapshot_record *r)
{
	static const char ca[] = "cert-authority";
	size_t n = sizeof(ca) - 1;
	return r->line_len > n && memcmp(r->line, ca, n) == 0 && (r->line[n] == ',' || r->line[n] == ' ');
}

const char *akc_reason_to_string(enum akc_reason r)
{
	return r >= 0 && r < _AKC_REASON_MAX ? reasons[r] : "unknown";
}

static bool expired(const struct snapshot_record *r, int64_t now)
{
	return r->expiry > 0 && r->expiry <= now;
}

static bool field_equals(const char *want, const char *have, size_t have_len)
{
	return strlen(want) == have_len && memcmp(want, have, have_len) == 0;
}

/* Concatenates the lines of the records not expired, each with '\n', and
 * moves those records to the front of v (v[0..a->served): what the log
 * names). */
static int render(struct snapshot_record *v, size_t n, int64_t now, struct akc_answer *a)
{
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		if (expired(&v[i], now))
			a->expired++;
		else
			len += v[i].line_len + 1;
	}
	if (len == 0)
		return 0;
	char *out = malloc(len);
	if (!out)
		return -ENOMEM;
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		if (expired(&v[i], now))
			continue;
		memcpy(out + off, v[i].line, v[i].line_len);
		off += v[i].line_len;
		out[off++] = '\n';
		v[a->served++] = v[i];
	}
	a->out = out;
	a->out_len = len;
	return 0;
}

/* The key id for the log: printable ASCII kept, other bytes as \xNN, cut
 * at AKC_KEY_ID_MAX input bytes. */
static void copy_key_id(const uint8_t *id, size_t len, char *out, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (size_t i = 0; i < len && i < AKC_KEY_ID_MAX && o + 5 < size; i++) {
		if (id[i] >= 0x20 && id[i] < 0x7f && id[i] != '\\')
			out[o++] = (char)id[i];
		else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[id[i] >> 4];
			out[o++] = hex[id[i] & 15];
		}
	}
	if (len > AKC_KEY_ID_MAX && o + 4 <= size) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

/* %k as a certificate of type %t: its serial and key id into a, and the
 * signature key's base64 into ca_b64 (ca_size bytes). -errno when it is
 * none (then a->cert_error says why). */
static int read_cert(const struct akc_request *req, struct akc_answer *a, char *ca_b64, size_t ca_size)
{
	uint8_t blob[SSHCERT_BLOB_MAX];
	size_t klen = req->key ? strnlen(req->key, SSHCERT_B64_MAX + 1) : 0;
	int n = klen > SSHCERT_B64_MAX ? -EMSGSIZE : b64_decode_into(req->key ? req->key : "", klen, blob, sizeof(blob));
	struct sshcert_info c;
	int r = n < 0 ? -EINVAL : sshcert_parse(blob, (size_t)n, &c);
	if (r == 0 && !field_equals(req->type, c.type, c.type_len))
		r = -EBADMSG; /* %k is not the certificate %t names */
	if (r == 0 && b64_encode_into(c.ca_key, c.ca_key_len, ca_b64, ca_size) < 0)
		r = -EBADMSG;
	if (r < 0)
		return a->cert_error = r;
	a->cert_serial = c.serial;
	copy_key_id(c.key_id, c.key_id_len, a->cert_key_id, sizeof(a->cert_key_id));
	return 0;
}

int akc_answer(const struct snapshot *s, const struct akc_request *req, struct akc_answer *ret)
{
	struct akc_answer a = { .reason = AKC_NO_KEYS };
	int r;

	if (!req->allow_root && strcmp(req->user, "root") == 0) {
		a.reason = AKC_ROOT_REFUSED;
		*ret = a;
		return 0;
	}

	if (is_cert_type(req->type)) {
		a.cert = true;
		char ca_b64[SNAPSHOT_LINE_MAX];
		bool by_ca = read_cert(req, &a, ca_b64, sizeof(ca_b64)) == 0;
		_cleanup_free_ struct snapshot_record *v = NULL;
		r = snapshot_lookup_user(s, req->user, &v, &a.what);
		if (r == -EBADMSG)
			a.reason = AKC_SNAPSHOT_CORRUPT;
		else if (r < 0)
			return r;
		else {
			size_t k = 0;
			for (int i = 0; i < r; i++)
				if (is_ca_line(&v[i]) && (!by_ca || field_equals(ca_b64, v[i].blob, v[i].blob_len)))
					v[k++] = v[i];
			int e = render(v, k, req->now, &a);
			if (e < 0)
				return e;
			a.reason = a.served ? AKC_SERVED : AKC_NO_CA;
			a.recs = TAKE_PTR(v);
		}
		*ret = a;
		return 0;
	}

	if (req->fingerprint) {
		struct snapshot_record rec;
		r = snapshot_lookup_fingerprint(s, req->user, req->fingerprint, &rec, &a.what);
		if (r == -EBADMSG)
			a.reason = AKC_SNAPSHOT_CORRUPT;
		else if (r < 0)
			return r;
		else if (r == 0)
			a.reason = AKC_UNKNOWN_FINGERPRINT;
		else if (req->type && !field_equals(req->type, rec.type, rec.type_len))
			a.reason = AKC_TYPE_MISMATCH;
		else if (req->key && !field_equals(req->key, rec.blob, rec.blob_len))
			a.reason = AKC_KEY_MISMATCH;
		else {
			r = render(&rec, 1, req->now, &a);
			if (r < 0)
				return r;
			a.reason = a.served ? AKC_SERVED : AKC_EXPIRED;
			a.one = rec;
		}
		*ret = a;
		if (ret->served)
			ret->recs = &ret->one;
		return 0;
	}

	_cleanup_free_ struct snapshot_record *v = NULL;
	r = snapshot_lookup_user(s, req->user, &v, &a.what);
	if (r == -EBADMSG)
		a.reason = AKC_SNAPSHOT_CORRUPT;
	else if (r < 0)
		return r;
	else if (r > 0) {
		int k = render(v, (size_t)r, req->now, &a);
		if (k < 0)
			return k;
		a.reason = a.served ? AKC_SERVED : AKC_ALL_EXPIRED;
		a.recs = TAKE_PTR(v);
	}
	*ret = a;
	return 0;
}

void akc_answer_done(struct akc_answer *a)
{
	free(a->out);
	a->out = NULL;
	a->out_len = 0;
	if (a->recs != &a->one)
		free(a->recs);
	a->recs = NULL;
}
