/* The desired-state document; see desired.h. */
#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "cleanup.h"
#include "desired.h"
#include "fsx.h"
#include "jsonx.h"
#include "osc.h"

void desired_sha256_hex(const void *data, size_t len, char out[static 65])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	if (!EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL) || md_len != 32) {
		/* Only on allocation failure inside OpenSSL. An empty string
		 * never equals a checksum, so callers fail closed. */
		out[0] = '\0';
		return;
	}
	for (unsigned i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 0xf];
	}
	out[64] = '\0';
}

/* Checks the parts both directions share. */
static int check(const struct desired *d, const char **err)
{
	if (!d->osc)
		return jsonx_fail(err, "osc: missing", -EINVAL);
	if (d->osc_len > OSC_INPUT_MAX)
		return jsonx_fail(err, "osc: larger than OSC_INPUT_MAX", -EMSGSIZE);
	if (memchr(d->osc, '\0', d->osc_len))
		return jsonx_fail(err, "osc: contains a NUL byte", -EINVAL);
	if (!jsonx_is_sha256_hex(d->checksum))
		return jsonx_fail(err, "checksum: not 64 lowercase hex digits", -EINVAL);
	char sum[65];
	desired_sha256_hex(d->osc, d->osc_len, sum);
	if (strcmp(sum, d->checksum) != 0)
		return jsonx_fail(err, "checksum: does not match the SHA-256 of osc", -EBADMSG);
	if (d->key_document) {
		if (strnlen(d->key_document, DESIRED_KEY_DOCUMENT_MAX + 1) > DESIRED_KEY_DOCUMENT_MAX)
			return jsonx_fail(err, "keyDocument: larger than DESIRED_KEY_DOCUMENT_MAX", -EMSGSIZE);
	}
	if (d->generation > DESIRED_GENERATION_MAX)
		return jsonx_fail(err, "generation: larger than 2^53-1", -EINVAL);
	if (!!d->kb_server != !!d->kb_ca_file || !!d->kb_server != !!d->kb_token_file)
		return jsonx_fail(err, "kubeletBootstrap: server, caFile and tokenFile go together", -EINVAL);
	if (d->kb_server && (strncmp(d->kb_server, "https://", 8) != 0 || !jsonx_is_line(d->kb_server, 4096) ||
			     strpbrk(d->kb_server, " \"'\\")))
		return jsonx_fail(err, "kubeletBootstrap.server: not an https:// URL", -EINVAL);
	if (d->kb_server && (!fsx_path_is_safe(d->kb_ca_file, PATH_MAX) || !fsx_path_is_safe(d->kb_token_file, PATH_MAX) ||
			     strpbrk(d->kb_ca_file, "\"\\") || strpbrk(d->kb_token_file, "\"\\")))
		return jsonx_fail(err, "kubeletBootstrap: caFile/tokenFile not absolute normalised paths", -EINVAL);
	if (d->n_tokens > DESIRED_TOKENS_MAX)
		return jsonx_fail(err, "tokens: more than DESIRED_TOKENS_MAX", -EMSGSIZE);
	for (size_t i = 0; i < d->n_tokens; i++) {
		if (!d->tokens[i].path || !fsx_path_is_safe(d->tokens[i].path, PATH_MAX))
			return jsonx_fail(err, "tokens[].path: not an absolute normalised path", -EINVAL);
		if (!d->tokens[i].token || strnlen(d->tokens[i].token, DESIRED_TOKEN_MAX + 1) > DESIRED_TOKEN_MAX)
			return jsonx_fail(err, "tokens[].token: missing or larger than DESIRED_TOKEN_MAX", -EINVAL);
		for (size_t k = 0; k < i; k++)
			if (strcmp(d->tokens[k].path, d->tokens[i].path) == 0)
				return jsonx_fail(err, "tokens[].path: given twice", -EINVAL);
	}
	if (d->n_secret_files > DESIRED_SECRET_FILES_MAX)
		return jsonx_fail(err, "secretFiles: more than DESIRED_SECRET_FILES_MAX", -EMSGSIZE);
	for (size_t i = 0; i < d->n_secret_files; i++) {
		const struct desired_secret_file *f = &d->secret_files[i];
		if (!f->path || !fsx_path_is_safe(f->path, PATH_MAX))
			return jsonx_fail(err, "secretFiles[].path: not an absolute normalised path", -EINVAL);
		if ((!f->data && f->len) || f->len > DESIRED_SECRET_FILE_MAX)
			return jsonx_fail(err, "secretFiles[].data: larger than DESIRED_SECRET_FILE_MAX", -EMSGSIZE);
		for (size_t k = 0; k < i; k++)
			if (strcmp(d->secret_files[k].path, f->path) == 0)
				return jsonx_fail(err, "secretFiles[].path: given twice", -EINVAL);
	}
	if (d->n_ready_registries > DESIRED_READY_REGISTRIES_MAX)
		return jsonx_fail(err, "readyRegistries: more than DESIRED_READY_REGISTRIES_MAX", -EMSGSIZE);
	for (size_t i = 0; i < d->n_ready_registries; i++) {
		const struct desired_ready_registry *g = &d->ready_registries[i];
		if (!g->upstream || !g->upstream[0] || !jsonx_is_line(g->upstream, DESIRED_UPSTREAM_MAX) ||
		    strchr(g->upstream, ' '))
			return jsonx_fail(err, "readyRegistries[].upstream: empty, too long or not printable", -EINVAL);
		if (!jsonx_is_sha256_hex(g->sha256))
			return jsonx_fail(err, "readyRegistries[].sha256: not 64 lowercase hex digits", -EINVAL);
		for (size_t k = 0; k < i; k++)
			if (strcmp(d->ready_registries[k].upstream, g->upstream) == 0)
				return jsonx_fail(err, "readyRegistries[].upstream: given twice", -EINVAL);
	}
	if (!d->restart_id != !d->restart_units)
		return jsonx_fail(err, "restart: id and units go together", -EINVAL);
	if (d->restart_id) {
		if (d->restart_id[0] == '\0' || !jsonx_is_line(d->restart_id, DESIRED_RESTART_ID_MAX))
			return jsonx_fail(err, "restart.id: empty, too long or with control characters", -EINVAL);
		size_t n = 0;
		for (char **u = d->restart_units; *u; u++, n++) {
			if (n >= DESIRED_RESTART_UNITS_MAX)
				return jsonx_fail(err, "restart.units: more than DESIRED_RESTART_UNITS_MAX", -EMSGSIZE);
			if (!osc_unit_name_is_valid(*u))
				return jsonx_fail(err, "restart.units: invalid systemd unit name", -EINVAL);
			for (char **v = d->restart_units; v != u; v++)
				if (strcmp(*u, *v) == 0)
					return jsonx_fail(err, "restart.units: duplicate unit name", -EINVAL);
		}
	}
	return 0;
}

int desired_format(const struct desired *d, char **ret, size_t *ret_len)
{
	int r = check(d, NULL);
	if (r < 0)
		return r;

	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_CreateObject();
	if (!root)
		return -ENOMEM;
	if (!cJSON_AddNumberToObject(root, "version", DESIRED_VERSION) ||
	    !cJSON_AddStringToObject(root, "checksum", d->checksum) ||
	    !jsonx_add_uint(root, "generation", d->generation) ||
	    !cJSON_AddBoolToObject(root, "sshAccess", d->ssh_access) ||
	    !cJSON_AddStringToObject(root, "osc", d->osc))
		return -ENOMEM;
	if (d->key_document && !cJSON_AddStringToObject(root, "keyDocument", d->key_document))
		return -ENOMEM;
	if (d->restart_id) {
		cJSON *restart = cJSON_AddObjectToObject(root, "restart");
		if (!restart || !cJSON_AddStringToObject(restart, "id", d->restart_id))
			return -ENOMEM;
		if (!jsonx_add_strv(restart, "units", d->restart_units))
			return -ENOMEM;
	}
	if (d->n_tokens) {
		cJSON *arr = cJSON_AddArrayToObject(root, "tokens");
		if (!arr)
			return -ENOMEM;
		for (size_t i = 0; i < d->n_tokens; i++) {
			cJSON *o = cJSON_CreateObject();
			if (!o || !cJSON_AddItemToArray(arr, o)) {
				cJSON_Delete(o);
				return -ENOMEM;
			}
			if (!cJSON_AddStringToObject(o, "path", d->tokens[i].path) ||
			    !cJSON_AddStringToObject(o, "token", d->tokens[i].token))
				return -ENOMEM;
		}
	}
	if (d->n_secret_files) {
		cJSON *arr = cJSON_AddArrayToObject(root, "secretFiles");
		if (!arr)
			return -ENOMEM;
		for (size_t i = 0; i < d->n_secret_files; i++) {
			cJSON *o = cJSON_CreateObject();
			if (!o || !cJSON_AddItemToArray(arr, o)) {
				cJSON_Delete(o);
				return -ENOMEM;
			}
			_cleanup_free_ char *b = b64_encode(d->secret_files[i].data ? d->secret_files[i].data : (const void *)"",
							     d->secret_files[i].len, false);
			if (!b || !cJSON_AddStringToObject(o, "path", d->secret_files[i].path) ||
			    !cJSON_AddStringToObject(o, "data", b))
				return -ENOMEM;
		}
	}
	if (d->n_ready_registries) {
		cJSON *arr = cJSON_AddArrayToObject(root, "readyRegistries");
		if (!arr)
			return -ENOMEM;
		for (size_t i = 0; i < d->n_ready_registries; i++) {
			cJSON *o = cJSON_CreateObject();
			if (!o || !cJSON_AddItemToArray(arr, o)) {
				cJSON_Delete(o);
				return -ENOMEM;
			}
			if (!cJSON_AddStringToObject(o, "upstream", d->ready_registries[i].upstream) ||
			    !cJSON_AddStringToObject(o, "sha256", d->ready_registries[i].sha256))
				return -ENOMEM;
		}
	}
	if (d->inplace_present) {
		cJSON *ip = cJSON_AddObjectToObject(root, "inPlaceUpdate");
		if (!ip || !cJSON_AddBoolToObject(ip, "readyForUpdate", d->inplace_ready))
			return -ENOMEM;
	}
	if (d->kb_server) {
		cJSON *kb = cJSON_AddObjectToObject(root, "kubeletBootstrap");
		if (!kb || !cJSON_AddStringToObject(kb, "server", d->kb_server) ||
		    !cJSON_AddStringToObject(kb, "caFile", d->kb_ca_file) ||
		    !cJSON_AddStringToObject(kb, "tokenFile", d->kb_token_file) ||
		    !cJSON_AddBoolToObject(kb, "nodeRegistered", d->kb_node_registered))
			return -ENOMEM;
	}
	/* JSON escaping can grow a document past what desired_parse() takes. */
	char *out;
	size_t len;
	r = jsonx_print(root, &out, &len);
	if (r < 0)
		return r;
	if (len > DESIRED_MAX) {
		free(out);
		return -EMSGSIZE;
	}
	*ret = out;
	if (ret_len)
		*ret_len = len;
	return 0;
}

static const char *const top_keys[] = { "version", "checksum", "generation", "sshAccess", "osc",
					"keyDocument", "restart", "kubeletBootstrap", "tokens", "secretFiles", "inPlaceUpdate",
					"readyRegistries", NULL };
static const char *const inplace_keys[] = { "readyForUpdate", NULL };
static const char *const token_keys[] = { "path", "token", NULL };
static const char *const secret_file_keys[] = { "path", "data", NULL };
static const char *const ready_keys[] = { "upstream", "sha256", NULL };
static const char *const kb_keys[] = { "server", "caFile", "tokenFile", "nodeRegistered", NULL };
static const char *const restart_keys[] = { "id", "units", NULL };

static int take_string(const cJSON *item, char **ret)
{
	char *s = strdup(item->valuestring);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

int desired_parse(const char *data, size_t len, struct desired *ret, const char **err)
{
	if (len > DESIRED_MAX)
		return jsonx_fail(err, "document larger than DESIRED_MAX", -EMSGSIZE);
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	int r = jsonx_parse_document(data, len, top_keys, DESIRED_VERSION, &root, err);
	if (r < 0)
		return r;

	_cleanup_(desired_done) struct desired d = { .ssh_access = true };
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "checksum");
	if (!cJSON_IsString(j))
		return jsonx_fail(err, "checksum: missing or not a string", -EINVAL);
	if (!jsonx_is_sha256_hex(j->valuestring))
		return jsonx_fail(err, "checksum: not 64 lowercase hex digits", -EINVAL);
	memcpy(d.checksum, j->valuestring, 65);

	if (!jsonx_get_uint(cJSON_GetObjectItemCaseSensitive(root, "generation"), DESIRED_GENERATION_MAX,
			    &d.generation))
		return jsonx_fail(err, "generation: missing or not an unsigned integer below 2^53", -EINVAL);

	j = cJSON_GetObjectItemCaseSensitive(root, "sshAccess");
	if (j) {
		if (!cJSON_IsBool(j))
			return jsonx_fail(err, "sshAccess: not a boolean", -EINVAL);
		d.ssh_access = cJSON_IsTrue(j);
	}

	j = cJSON_GetObjectItemCaseSensitive(root, "osc");
	if (!cJSON_IsString(j))
		return jsonx_fail(err, "osc: missing or not a string", -EINVAL);
	d.osc_len = strlen(j->valuestring);
	if (d.osc_len > OSC_INPUT_MAX)
		return jsonx_fail(err, "osc: larger than OSC_INPUT_MAX", -EMSGSIZE);
	if (take_string(j, &d.osc) < 0)
		return jsonx_fail(err, "out of memory", -ENOMEM);

	j = cJSON_GetObjectItemCaseSensitive(root, "keyDocument");
	if (j) {
		if (!cJSON_IsString(j))
			return jsonx_fail(err, "keyDocument: not a string", -EINVAL);
		if (strlen(j->valuestring) > DESIRED_KEY_DOCUMENT_MAX)
			return jsonx_fail(err, "keyDocument: larger than DESIRED_KEY_DOCUMENT_MAX", -EMSGSIZE);
		if (take_string(j, &d.key_document) < 0)
			return jsonx_fail(err, "out of memory", -ENOMEM);
	}

	const cJSON *restart = cJSON_GetObjectItemCaseSensitive(root, "restart");
	if (restart) {
		if (!cJSON_IsObject(restart))
			return jsonx_fail(err, "restart: not an object", -EINVAL);
		if (jsonx_check_keys(restart, restart_keys, NULL) < 0)
			return jsonx_fail(err, "restart: unknown or duplicate key", -EINVAL);
		j = cJSON_GetObjectItemCaseSensitive(restart, "id");
		if (!cJSON_IsString(j))
			return jsonx_fail(err, "restart.id: missing or not a string", -EINVAL);
		if (take_string(j, &d.restart_id) < 0)
			return jsonx_fail(err, "out of memory", -ENOMEM);
		const cJSON *units = cJSON_GetObjectItemCaseSensitive(restart, "units");
		if (!cJSON_IsArray(units))
			return jsonx_fail(err, "restart.units: missing or not an array", -EINVAL);
		r = jsonx_get_strv(units, DESIRED_RESTART_UNITS_MAX, &d.restart_units);
		if (r == -EMSGSIZE)
			return jsonx_fail(err, "restart.units: more than DESIRED_RESTART_UNITS_MAX", r);
		if (r == -EINVAL)
			return jsonx_fail(err, "restart.units: not a string", r);
		if (r < 0)
			return jsonx_fail(err, "out of memory", r);
	}

	const cJSON *toks = cJSON_GetObjectItemCaseSensitive(root, "tokens");
	if (toks) {
		if (!cJSON_IsArray(toks))
			return jsonx_fail(err, "tokens: not an array", -EINVAL);
		int n = cJSON_GetArraySize(toks);
		if (n > (int)DESIRED_TOKENS_MAX)
			return jsonx_fail(err, "tokens: more than DESIRED_TOKENS_MAX", -EMSGSIZE);
		if (n > 0 && !(d.tokens = calloc((size_t)n, sizeof(*d.tokens))))
			return jsonx_fail(err, "out of memory", -ENOMEM);
		const cJSON *t;
		cJSON_ArrayForEach(t, toks)
		{
			if (!cJSON_IsObject(t) || jsonx_check_keys(t, token_keys, NULL) < 0)
				return jsonx_fail(err, "tokens[]: not an object of path and token", -EINVAL);
			const cJSON *p = cJSON_GetObjectItemCaseSensitive(t, "path");
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, "token");
			if (!cJSON_IsString(p) || !cJSON_IsString(v))
				return jsonx_fail(err, "tokens[]: path or token missing or not a string", -EINVAL);
			struct desired_token *dt = &d.tokens[d.n_tokens++];
			if (take_string(p, &dt->path) < 0 || take_string(v, &dt->token) < 0)
				return jsonx_fail(err, "out of memory", -ENOMEM);
		}
	}
	const cJSON *sfs = cJSON_GetObjectItemCaseSensitive(root, "secretFiles");
	if (sfs) {
		if (!cJSON_IsArray(sfs))
			return jsonx_fail(err, "secretFiles: not an array", -EINVAL);
		int n = cJSON_GetArraySize(sfs);
		if (n > (int)DESIRED_SECRET_FILES_MAX)
			return jsonx_fail(err, "secretFiles: more than DESIRED_SECRET_FILES_MAX", -EMSGSIZE);
		if (n > 0 && !(d.secret_files = calloc((size_t)n, sizeof(*d.secret_files))))
			return jsonx_fail(err, "out of memory", -ENOMEM);
		const cJSON *t;
		cJSON_ArrayForEach(t, sfs)
		{
			if (!cJSON_IsObject(t) || jsonx_check_keys(t, secret_file_keys, NULL) < 0)
				return jsonx_fail(err, "secretFiles[]: not an object of path and data", -EINVAL);
			const cJSON *p = cJSON_GetObjectItemCaseSensitive(t, "path");
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, "data");
			if (!cJSON_IsString(p) || !cJSON_IsString(v))
				return jsonx_fail(err, "secretFiles[]: path or data missing or not a string", -EINVAL);
			struct desired_secret_file *f = &d.secret_files[d.n_secret_files++];
			if (take_string(p, &f->path) < 0)
				return jsonx_fail(err, "out of memory", -ENOMEM);
			r = b64_decode(v->valuestring, strlen(v->valuestring), DESIRED_SECRET_FILE_MAX, 0, &f->data, &f->len);
			if (r == -ENOMEM)
				return jsonx_fail(err, "out of memory", r);
			if (r == -EMSGSIZE)
				return jsonx_fail(err, "secretFiles[].data: larger than DESIRED_SECRET_FILE_MAX", r);
			if (r < 0)
				return jsonx_fail(err, "secretFiles[].data: not canonical base64", -EINVAL);
		}
	}
	const cJSON *rrs = cJSON_GetObjectItemCaseSensitive(root, "readyRegistries");
	if (rrs) {
		if (!cJSON_IsArray(rrs))
			return jsonx_fail(err, "readyRegistries: not an array", -EINVAL);
		int n = cJSON_GetArraySize(rrs);
		if (n > (int)DESIRED_READY_REGISTRIES_MAX)
			return jsonx_fail(err, "readyRegistries: more than DESIRED_READY_REGISTRIES_MAX", -EMSGSIZE);
		if (n > 0 && !(d.ready_registries = calloc((size_t)n, sizeof(*d.ready_registries))))
			return jsonx_fail(err, "out of memory", -ENOMEM);
		const cJSON *t;
		cJSON_ArrayForEach(t, rrs)
		{
			if (!cJSON_IsObject(t) || jsonx_check_keys(t, ready_keys, NULL) < 0)
				return jsonx_fail(err, "readyRegistries[]: not an object of upstream and sha256", -EINVAL);
			const cJSON *u = cJSON_GetObjectItemCaseSensitive(t, "upstream");
			const cJSON *h = cJSON_GetObjectItemCaseSensitive(t, "sha256");
			if (!cJSON_IsString(u) || !cJSON_IsString(h))
				return jsonx_fail(err, "readyRegistries[]: upstream or sha256 missing or not a string", -EINVAL);
			if (!jsonx_is_sha256_hex(h->valuestring))
				return jsonx_fail(err, "readyRegistries[].sha256: not 64 lowercase hex digits", -EINVAL);
			struct desired_ready_registry *g = &d.ready_registries[d.n_ready_registries++];
			memcpy(g->sha256, h->valuestring, 65);
			if (take_string(u, &g->upstream) < 0)
				return jsonx_fail(err, "out of memory", -ENOMEM);
		}
	}
	const cJSON *kb = cJSON_GetObjectItemCaseSensitive(root, "kubeletBootstrap");
	if (kb) {
		if (!cJSON_IsObject(kb))
			return jsonx_fail(err, "kubeletBootstrap: not an object", -EINVAL);
		if (jsonx_check_keys(kb, kb_keys, NULL) < 0)
			return jsonx_fail(err, "kubeletBootstrap: unknown or duplicate key", -EINVAL);
		const cJSON *sv = cJSON_GetObjectItemCaseSensitive(kb, "server");
		const cJSON *ca = cJSON_GetObjectItemCaseSensitive(kb, "caFile");
		const cJSON *tk = cJSON_GetObjectItemCaseSensitive(kb, "tokenFile");
		const cJSON *nr = cJSON_GetObjectItemCaseSensitive(kb, "nodeRegistered");
		if (!cJSON_IsString(sv) || !cJSON_IsString(ca) || !cJSON_IsString(tk) || !cJSON_IsBool(nr))
			return jsonx_fail(err, "kubeletBootstrap: a field is missing or of the wrong type", -EINVAL);
		if (take_string(sv, &d.kb_server) < 0 || take_string(ca, &d.kb_ca_file) < 0 ||
		    take_string(tk, &d.kb_token_file) < 0)
			return jsonx_fail(err, "out of memory", -ENOMEM);
		d.kb_node_registered = cJSON_IsTrue(nr);
	}

	const cJSON *ip = cJSON_GetObjectItemCaseSensitive(root, "inPlaceUpdate");
	if (ip) {
		if (!cJSON_IsObject(ip) || jsonx_check_keys(ip, inplace_keys, NULL) < 0)
			return jsonx_fail(err, "inPlaceUpdate: not an object of readyForUpdate", -EINVAL);
		const cJSON *rf = cJSON_GetObjectItemCaseSensitive(ip, "readyForUpdate");
		if (!cJSON_IsBool(rf))
			return jsonx_fail(err, "inPlaceUpdate.readyForUpdate: missing or not a boolean", -EINVAL);
		d.inplace_present = true;
		d.inplace_ready = cJSON_IsTrue(rf);
	}

	r = check(&d, err);
	if (r < 0)
		return r;
	*ret = d;
	memset(&d, 0, sizeof(d));
	return 0;
}

void desired_done(struct desired *d)
{
	if (!d)
		return;
	free(d->osc);
	free(d->key_document);
	free(d->restart_id);
	strv_free(d->restart_units);
	free(d->kb_server);
	free(d->kb_ca_file);
	free(d->kb_token_file);
	for (size_t i = 0; i < d->n_tokens; i++) {
		free(d->tokens[i].path);
		if (d->tokens[i].token) {
			explicit_bzero(d->tokens[i].token, strlen(d->tokens[i].token));
			free(d->tokens[i].token);
		}
	}
	free(d->tokens);
	for (size_t i = 0; i < d->n_secret_files; i++) {
		free(d->secret_files[i].path);
		if (d->secret_files[i].data) {
			explicit_bzero(d->secret_files[i].data, d->secret_files[i].len);
			free(d->secret_files[i].data);
		}
	}
	free(d->secret_files);
	for (size_t i = 0; i < d->n_ready_registries; i++)
		free(d->ready_registries[i].upstream);
	free(d->ready_registries);
	memset(d, 0, sizeof(*d));
}
