/* The lookup policy of authkeys-cmd; see answer.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "cleanup.h"

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

/* Concatenates the lines of the records not expired, each with '\n'. */
static int render(const struct snapshot_record *v, size_t n, int64_t now, struct akc_answer *a)
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
		a->served++;
	}
	a->out = out;
	a->out_len = len;
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
		_cleanup_free_ struct snapshot_record *v = NULL;
		r = snapshot_lookup_user(s, req->user, &v, &a.what);
		if (r == -EBADMSG)
			a.reason = AKC_SNAPSHOT_CORRUPT;
		else if (r < 0)
			return r;
		else {
			size_t k = 0;
			for (int i = 0; i < r; i++)
				if (is_ca_line(&v[i]))
					v[k++] = v[i];
			int e = render(v, k, req->now, &a);
			if (e < 0)
				return e;
			a.reason = a.served ? AKC_SERVED : AKC_NO_CA;
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
		}
		*ret = a;
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
	}
	*ret = a;
	return 0;
}

void akc_answer_done(struct akc_answer *a)
{
	free(a->out);
	a->out = NULL;
	a->out_len = 0;
}
