/* The OperatingSystemConfig parser; see osc.h.
 *
 * Two passes. ytree_load() (ytree.c) first builds a small document tree,
 * refusing aliases, more than YTREE_EVENTS_MAX nodes and nesting deeper
 * than YTREE_DEPTH_MAX, and types every plain scalar the way Go's yaml.v2
 * would (Gardener reads the same bytes with it). The second pass walks the
 * tree with typed getters that name the field path in every error, builds the
 * model, merges status into spec, sorts and checks for duplicates. Nothing is
 * written to *ret before the whole document has been accepted. */
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "b64.h"
#include "cleanup.h"
#include "fsx.h"
#include "inplace.h"
#include "osc.h"
#include "ytree.h"

#define OSC_API_VERSION "extensions.gardener.cloud/v1alpha1"
#define OSC_KIND "OperatingSystemConfig"

struct ctx {
	struct osc_error *err;
	const char *forbidden;
	size_t forbidden_len;
	const char *node_name;
};

_Static_assert(OSC_YAML_EVENTS_MAX == YTREE_EVENTS_MAX && OSC_YAML_DEPTH_MAX == YTREE_DEPTH_MAX,
	       "osc.h documents the limits ytree.c enforces");

static bool in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

/* Formats the error (when the caller wants it) and returns r. */
_printf_(3, 4) static int fail(struct ctx *c, int r, const char *fmt, ...)
{
	if (c->err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err->message, sizeof(c->err->message), fmt, ap);
		va_end(ap);
	}
	return r;
}


/* ---- typed access with field paths ------------------------------------ */

/* Field paths are joined with ".", except below the document root. */
static const char *sep(const char *where)
{
	return *where ? "." : "";
}

/* Looks key up in map (where names the map): ytree_map_get(). */
static int map_get(struct ctx *c, const struct ynode *map, const char *where, const char *key,
		   const struct ynode **ret)
{
	size_t line = 0;
	if (ytree_map_get(map, key, ret, &line) < 0)
		return fail(c, -EINVAL, "%s%s%s: duplicate key (line %zu)", where, sep(where), key, line);
	return 0;
}

static int wrong_type(struct ctx *c, const char *where, const char *key, const struct ynode *n,
		      const char *want)
{
	char d[YTREE_DESCRIBE_MAX];
	return fail(c, -EINVAL, "%s%s%s: expected %s, got %s", *where ? where : "(document)",
		    key && *where ? "." : "", key ? key : "", want, ytree_describe(d, sizeof(d), n));
}

/* A string field; *ret points into the tree (NULL when absent). */
static int get_str(struct ctx *c, const struct ynode *map, const char *where, const char *key, bool required,
		   const struct ynode **ret)
{
	const struct ynode *n;
	int r = map_get(c, map, where, key, &n);
	if (r < 0)
		return r;
	if (!n) {
		if (required)
			return fail(c, -EINVAL, "%s%s%s: missing", where, sep(where), key);
		*ret = NULL;
		return 0;
	}
	if (n->type != Y_SCALAR || n->kind != YS_STR)
		return wrong_type(c, where, key, n, "a string");
	*ret = n;
	return 0;
}

/* A text field that must not contain NUL (unit names, unit content). */
static int get_text(struct ctx *c, const struct ynode *map, const char *where, const char *key, bool required,
		    size_t max, char **ret)
{
	const struct ynode *n;
	int r = get_str(c, map, where, key, required, &n);
	if (r < 0)
		return r;
	if (!n) {
		*ret = NULL;
		return 0;
	}
	if (n->len > max)
		return fail(c, -EMSGSIZE, "%s.%s: longer than %zu bytes (line %zu)", where, key, max, n->line);
	if (memchr(n->value, '\0', n->len))
		return fail(c, -EINVAL, "%s.%s: contains a NUL byte (line %zu)", where, key, n->line);
	char *s = strdup(n->value);
	if (!s)
		return fail(c, -ENOMEM, "out of memory");
	*ret = s;
	return 0;
}

static int get_bool(struct ctx *c, const struct ynode *map, const char *where, const char *key, int *ret)
{
	const struct ynode *n;
	int r = map_get(c, map, where, key, &n);
	if (r < 0)
		return r;
	if (!n) {
		*ret = -1;
		return 0;
	}
	if (n->type != Y_SCALAR || n->kind != YS_BOOL)
		return wrong_type(c, where, key, n, "a boolean");
	*ret = n->bool_value;
	return 0;
}

/* A list or a mapping (type); *ret NULL when absent. */
static int get_node(struct ctx *c, const struct ynode *map, const char *where, const char *key,
		    enum ynode_type type, const struct ynode **ret)
{
	const struct ynode *n;
	int r = map_get(c, map, where, key, &n);
	if (r < 0)
		return r;
	if (n && n->type != type)
		return wrong_type(c, where, key, n, type == Y_SEQ ? "a list" : "a mapping");
	*ret = n;
	return 0;
}

/* ---- validators --------------------------------------------------------- */

static const char *const unit_suffixes[] = { "service", "socket", "target", "timer", "path", "mount",
					     "automount", "slice", "scope", "swap", "device", NULL };

bool osc_unit_name_is_valid(const char *name)
{
	if (!name)
		return false;
	size_t len = strnlen(name, 256);
	if (len == 0 || len > 255)
		return false;
	const char *dot = strrchr(name, '.');
	if (!dot || dot == name || !in_list(dot + 1, unit_suffixes))
		return false;
	const char *at = NULL;
	for (const char *p = name; p < dot; p++) {
		char ch = *p;
		if (ch == '@' && !at)
			at = p;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == ':' || ch == '-' || ch == '_' || ch == '.' || ch == '\\' || ch == '@'))
			return false;
	}
	if (at == name)
		return false;
	/* Plain ("a.service"), instance ("a@b.service"), template ("a@.service"). */
	return true;
}

bool osc_dropin_name_is_valid(const char *name)
{
	if (!name)
		return false;
	size_t len = strnlen(name, 256);
	if (len <= 5 || len > 255 || name[0] == '.' || strcmp(name + len - 5, ".conf") != 0)
		return false;
	for (const char *p = name; *p; p++) {
		char ch = *p;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      strchr("._@:+,=~-", ch)))
			return false;
	}
	return true;
}

/* Explains why path is not acceptable, or returns NULL. */
static const char *path_problem(const char *path, size_t len, int *r)
{
	*r = -EINVAL;
	if (len == 0)
		return "empty path";
	if (len > OSC_PATH_MAX) {
		*r = -EMSGSIZE;
		return "path too long";
	}
	if (memchr(path, '\0', len))
		return "NUL byte in path";
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f)
			return "control character in path";
	/* Node paths are ASCII. Anything else is refused outright: bidi
	 * overrides, zero-width characters, homoglyphs and C1 controls would
	 * make the path in a log line or a review differ from the file written. */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)path[i] >= 0x80)
			return "non-ASCII byte in path";
	if (path[0] != '/')
		return "relative path";
	if (len == 1)
		return "no file name in path";
	if (path[len - 1] == '/')
		return "trailing '/' in path";
	for (const char *p = path; *p;) {
		p++;
		size_t n = strcspn(p, "/");
		if (n == 0)
			return "'//' in path";
		if (n == 1 && p[0] == '.')
			return "'.' component in path";
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return "'..' component in path";
		if (n > NAME_MAX)
			return "path component too long";
		p += n;
	}
	if (!fsx_path_is_safe(path, OSC_PATH_MAX))
		return "unsafe path";
	return NULL;
}

static int check_path(struct ctx *c, const char *where, const char *key, const struct ynode *n, bool forbid)
{
	char q[YTREE_QUOTE_MAX * 4 + 8];
	int r;
	const char *why = path_problem(n->value, n->len, &r);
	if (why)
		return fail(c, r, "%s%s: %s '%s' (line %zu)", where, key, why, ytree_quote(q, sizeof(q), n->value, n->len),
			    n->line);
	if (forbid && c->forbidden_len > 0 && strncmp(n->value, c->forbidden, c->forbidden_len) == 0 &&
	    (n->value[c->forbidden_len] == '/' || n->value[c->forbidden_len] == '\0'))
		return fail(c, -EINVAL, "%s%s: path '%s' is inside the agent's state directory '%s' (line %zu)", where,
			    key, ytree_quote(q, sizeof(q), n->value, n->len), c->forbidden, n->line);
	return 0;
}

/* ---- files -------------------------------------------------------------- */

struct tmp_file {
	struct osc_file f;
	const char *list;
	size_t index;
};

static void file_free(struct osc_file *f)
{
	free(f->path);
	free(f->content);
	free(f->image);
	free(f->path_in_image);
	free(f->secret_name);
	free(f->secret_key);
	memset(f, 0, sizeof(*f));
}

static void tmp_files_free(struct tmp_file *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		file_free(&t[i].f);
	free(t);
}

/* content.imageRef: the reference is validated and kept; nothing resolves
 * it here (see enum osc_file_source). */
static int parse_image_ref(struct ctx *c, const struct ynode *ref, const char *where, struct osc_file *f)
{
	const struct ynode *image, *pin;
	char q[YTREE_QUOTE_MAX * 4 + 8];
	int r;

	if ((r = get_str(c, ref, where, "image", true, &image)) < 0)
		return r;
	if (image->len == 0)
		return fail(c, -EINVAL, "%s.image: empty image reference (line %zu)", where, image->line);
	if (image->len > OSC_IMAGE_MAX)
		return fail(c, -EMSGSIZE, "%s.image: image reference '%s' longer than %u bytes (line %zu)", where,
			    ytree_quote(q, sizeof(q), image->value, image->len), OSC_IMAGE_MAX, image->line);
	for (size_t i = 0; i < image->len; i++) {
		unsigned char ch = (unsigned char)image->value[i];
		if (ch <= 0x20 || ch >= 0x7f)
			return fail(c, -EINVAL,
				    "%s.image: image reference '%s' contains a byte that is not printable ASCII "
				    "(line %zu)",
				    where, ytree_quote(q, sizeof(q), image->value, image->len), image->line);
	}
	if ((r = get_str(c, ref, where, "filePathInImage", true, &pin)) < 0)
		return r;
	if ((r = check_path(c, where, ".filePathInImage", pin, false)) < 0)
		return r;

	f->image = strdup(image->value);
	f->path_in_image = strdup(pin->value);
	f->content = calloc(1, 1);
	if (!f->image || !f->path_in_image || !f->content)
		return fail(c, -ENOMEM, "out of memory");
	f->content_len = 0;
	f->source = OSC_SOURCE_IMAGE;
	return 0;
}

/* content.secretRef: name and dataKey are validated and kept; the bytes
 * come from elsewhere (see enum osc_file_source). */
static int parse_secret_ref(struct ctx *c, const struct ynode *ref, const char *where, struct osc_file *f)
{
	const struct ynode *name, *key;
	char q[YTREE_QUOTE_MAX * 4 + 8];
	int r;

	if ((r = get_str(c, ref, where, "name", true, &name)) < 0)
		return r;
	if (strlen(name->value) != name->len || !osc_secret_name_is_valid(name->value))
		return fail(c, -EINVAL, "%s.name: '%s' is not a Secret name (a DNS subdomain name) (line %zu)", where,
			    ytree_quote(q, sizeof(q), name->value, name->len), name->line);
	if ((r = get_str(c, ref, where, "dataKey", true, &key)) < 0)
		return r;
	if (strlen(key->value) != key->len || !osc_secret_key_is_valid(key->value))
		return fail(c, -EINVAL, "%s.dataKey: '%s' is not a Secret data key (line %zu)", where,
			    ytree_quote(q, sizeof(q), key->value, key->len), key->line);
	f->secret_name = strdup(name->value);
	f->secret_key = strdup(key->value);
	f->content = calloc(1, 1);
	if (!f->secret_name || !f->secret_key || !f->content)
		return fail(c, -ENOMEM, "out of memory");
	f->content_len = 0;
	f->source = OSC_SOURCE_SECRET;
	return 0;
}

bool osc_secret_name_is_valid(const char *name)
{
	size_t n = strnlen(name, OSC_SECRET_NAME_MAX + 1);
	if (n == 0 || n > OSC_SECRET_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
		if (!alnum && ((ch != '-' && ch != '.') || i == 0 || i == n - 1))
			return false;
	}
	return true;
}

bool osc_secret_key_is_valid(const char *key)
{
	size_t n = strnlen(key, OSC_SECRET_NAME_MAX + 1);
	if (n == 0 || n > OSC_SECRET_NAME_MAX || strcmp(key, ".") == 0 || strcmp(key, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = key[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
		      ch == '.' || ch == '_'))
			return false;
	}
	return true;
}

static int parse_content(struct ctx *c, const struct ynode *content, const char *where, struct osc_file *f)
{
	const struct ynode *inl, *image_ref;
	int r;
	char w[128];
	char q[YTREE_QUOTE_MAX * 4 + 8];

	/* A secretRef names another Secret in kube-system. gardenlet resolves
	 * it into inline content for every shoot but self-hosted ones, whose
	 * gardener-node-agent GETs it itself (gardener/gardener
	 * pkg/nodeagent/controller/operatingsystemconfig/reconciler.go,
	 * getFileContentData). Only described here; see OSC_SOURCE_SECRET. */
	const struct ynode *sref;
	if ((r = get_node(c, content, where, "secretRef", Y_MAP, &sref)) < 0)
		return r;
	int tu;
	if ((r = get_bool(c, content, where, "transmitUnencoded", &tu)) < 0)
		return r;
	f->transmit_unencoded = tu == 1;

	if ((r = get_node(c, content, where, "inline", Y_MAP, &inl)) < 0)
		return r;
	if ((r = get_node(c, content, where, "imageRef", Y_MAP, &image_ref)) < 0)
		return r;
	if (inl && image_ref)
		return fail(c, -EINVAL, "%s: both inline and imageRef given (line %zu); exactly one is allowed", where,
			    image_ref->line);
	if (sref && (inl || image_ref))
		return fail(c, -EINVAL, "%s: secretRef given with %s (line %zu); exactly one is allowed", where,
			    inl ? "inline" : "imageRef", sref->line);
	if (sref) {
		snprintf(w, sizeof(w), "%s.secretRef", where);
		return parse_secret_ref(c, sref, w, f);
	}
	if (image_ref) {
		snprintf(w, sizeof(w), "%s.imageRef", where);
		return parse_image_ref(c, image_ref, w, f);
	}
	if (!inl)
		return fail(c, -EINVAL, "%s.inline: missing", where);
	snprintf(w, sizeof(w), "%s.inline", where);

	const struct ynode *enc, *data;
	if ((r = get_str(c, inl, w, "encoding", false, &enc)) < 0)
		return r;
	if ((r = get_str(c, inl, w, "data", false, &data)) < 0)
		return r;
	const char *d = data ? data->value : "";
	size_t dlen = data ? data->len : 0;

	if (enc && strcmp(enc->value, "b64") == 0 && enc->len == 3) {
		r = b64_decode(d, dlen, OSC_FILE_CONTENT_MAX, B64_IGNORE_NEWLINES, &f->content, &f->content_len);
		if (r == -EMSGSIZE)
			return fail(c, r, "%s.data: decoded content larger than %u bytes", w, OSC_FILE_CONTENT_MAX);
		if (r == -ENOMEM)
			return fail(c, r, "out of memory");
		if (r < 0)
			return fail(c, -EINVAL, "%s.data: invalid base64 '%s' (line %zu)", w,
				    ytree_quote(q, sizeof(q), d, dlen), data ? data->line : enc->line);
		return 0;
	}
	if (enc && enc->len > 0)
		return fail(c, -EINVAL, "%s.encoding: unknown encoding '%s', expected \"\" or \"b64\" (line %zu)", w,
			    ytree_quote(q, sizeof(q), enc->value, enc->len), enc->line);
	if (dlen > OSC_FILE_CONTENT_MAX)
		return fail(c, -EMSGSIZE, "%s.data: content larger than %u bytes", w, OSC_FILE_CONTENT_MAX);
	f->content = malloc(dlen + 1);
	if (!f->content)
		return fail(c, -ENOMEM, "out of memory");
	memcpy(f->content, d, dlen);
	f->content[dlen] = '\0';
	f->content_len = dlen;
	return 0;
}

/* Parses one file entry into *t; *keep false when it is meant for another node. */
static int parse_file(struct ctx *c, const struct ynode *n, const char *where, struct tmp_file *t, bool *keep)
{
	int r;
	char w[96];
	char q[YTREE_QUOTE_MAX * 4 + 8];

	if (n->type != Y_MAP)
		return wrong_type(c, where, NULL, n, "a mapping");

	const struct ynode *path;
	if ((r = get_str(c, n, where, "path", true, &path)) < 0)
		return r;
	if ((r = check_path(c, where, ".path", path, true)) < 0)
		return r;

	*keep = true;
	static const char *const node_keys[] = { "hostName", "nodeName" };
	for (size_t i = 0; i < ELEMENTSOF(node_keys); i++) {
		const struct ynode *h;
		if ((r = get_str(c, n, where, node_keys[i], false, &h)) < 0)
			return r;
		if (h && h->len > 0 &&
		    (!c->node_name || strlen(c->node_name) != h->len || strcasecmp(h->value, c->node_name) != 0))
			*keep = false;
	}

	const struct ynode *perm;
	t->f.mode = 0600;
	if ((r = map_get(c, n, where, "permissions", &perm)) < 0)
		return r;
	if (perm) {
		if (perm->type != Y_SCALAR || perm->kind != YS_INT)
			return wrong_type(c, where, "permissions", perm, "an integer");
		if (perm->int_value < 0 || perm->int_value > 07777)
			return fail(c, -EINVAL, "%s.permissions: '%s' is not a file mode (0..07777) (line %zu)", where,
				    ytree_quote(q, sizeof(q), perm->value, perm->len), perm->line);
		t->f.mode = (mode_t)perm->int_value;
	}

	const struct ynode *content;
	if ((r = get_node(c, n, where, "content", Y_MAP, &content)) < 0)
		return r;
	if (!content)
		return fail(c, -EINVAL, "%s.content: missing", where);
	snprintf(w, sizeof(w), "%s.content", where);
	if ((r = parse_content(c, content, w, &t->f)) < 0)
		return r;

	t->f.path = strdup(path->value);
	if (!t->f.path)
		return fail(c, -ENOMEM, "out of memory");
	return 0;
}

static int cmp_tmp_file(const void *a, const void *b)
{
	const struct tmp_file *x = a, *y = b;
	int d = strcmp(x->f.path, y->f.path);
	if (d != 0)
		return d;
	/* Stable for the error message: spec before status, then by index. */
	d = strcmp(x->list, y->list);
	if (d != 0)
		return d;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int parse_files(struct ctx *c, const struct ynode *lists[2], const char *names[2], struct osc_file **ret,
		       size_t *ret_n)
{
	size_t total = 0;
	for (int l = 0; l < 2; l++)
		if (lists[l])
			total += lists[l]->n_items;
	if (total > OSC_FILES_MAX)
		return fail(c, -EMSGSIZE, "%s: more than %d files", names[0], OSC_FILES_MAX);

	struct tmp_file *t = calloc(total ? total : 1, sizeof(*t));
	if (!t)
		return fail(c, -ENOMEM, "out of memory");
	size_t n = 0;
	int r = 0;
	for (int l = 0; l < 2 && r == 0; l++) {
		for (size_t i = 0; lists[l] && i < lists[l]->n_items; i++) {
			char where[64];
			snprintf(where, sizeof(where), "%s[%zu]", names[l], i);
			bool keep = true;
			t[n].list = names[l];
			t[n].index = i;
			r = parse_file(c, lists[l]->items[i], where, &t[n], &keep);
			if (r < 0) {
				n++; /* free what was allocated */
				break;
			}
			if (keep) {
				n++;
			} else {
				file_free(&t[n].f);
				memset(&t[n], 0, sizeof(t[n]));
			}
		}
	}
	if (r < 0) {
		tmp_files_free(t, n);
		return r;
	}

	qsort(t, n, sizeof(*t), cmp_tmp_file);
	for (size_t i = 1; i < n; i++)
		if (strcmp(t[i - 1].f.path, t[i].f.path) == 0) {
			char q[YTREE_QUOTE_MAX * 4 + 8];
			r = fail(c, -EINVAL, "%s[%zu].path: duplicate path '%s' (also %s[%zu])", t[i].list, t[i].index,
				 ytree_quote(q, sizeof(q), t[i].f.path, strlen(t[i].f.path)), t[i - 1].list,
				 t[i - 1].index);
			tmp_files_free(t, n);
			return r;
		}

	struct osc_file *files = calloc(n ? n : 1, sizeof(*files));
	if (!files) {
		tmp_files_free(t, n);
		return fail(c, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		files[i] = t[i].f;
	free(t);
	*ret = files;
	*ret_n = n;
	return 0;
}

/* ---- units -------------------------------------------------------------- */

static void unit_free(struct osc_unit *u)
{
	free(u->name);
	free(u->content);
	for (size_t i = 0; i < u->n_dropins; i++) {
		free(u->dropins[i].name);
		free(u->dropins[i].content);
	}
	free(u->dropins);
	for (size_t i = 0; i < u->n_file_paths; i++)
		free(u->file_paths[i]);
	free(u->file_paths);
	memset(u, 0, sizeof(*u));
}

static void units_free(struct osc_unit *u, size_t n)
{
	for (size_t i = 0; i < n; i++)
		unit_free(&u[i]);
	free(u);
}

/* Adds a drop-in to u, replacing one of the same name (from an earlier list). */
static int unit_add_dropin(struct ctx *c, struct osc_unit *u, const char *where, char *name, char *content)
{
	for (size_t i = 0; i < u->n_dropins; i++)
		if (strcmp(u->dropins[i].name, name) == 0) {
			free(u->dropins[i].content);
			u->dropins[i].content = content;
			free(name);
			return 0;
		}
	if (u->n_dropins >= OSC_DROPINS_MAX) {
		free(name);
		free(content);
		return fail(c, -EMSGSIZE, "%s.dropIns: more than %d drop-ins for unit '%s'", where, OSC_DROPINS_MAX,
			    u->name);
	}
	struct osc_dropin *d = reallocarray(u->dropins, u->n_dropins + 1, sizeof(*d));
	if (!d) {
		free(name);
		free(content);
		return fail(c, -ENOMEM, "out of memory");
	}
	u->dropins = d;
	d[u->n_dropins++] = (struct osc_dropin){ .name = name, .content = content };
	return 0;
}

static int unit_add_file_path(struct ctx *c, struct osc_unit *u, const char *where, char *path)
{
	if (u->n_file_paths >= OSC_FILE_PATHS_MAX) {
		free(path);
		return fail(c, -EMSGSIZE, "%s.filePaths: more than %d paths for unit '%s'", where, OSC_FILE_PATHS_MAX,
			    u->name);
	}
	char **p = reallocarray(u->file_paths, u->n_file_paths + 1, sizeof(*p));
	if (!p) {
		free(path);
		return fail(c, -ENOMEM, "out of memory");
	}
	u->file_paths = p;
	p[u->n_file_paths++] = path;
	return 0;
}

/* Parses a unit entry and merges it into *u (zeroed for a new unit). */
static int parse_unit_into(struct ctx *c, const struct ynode *n, const char *where, struct osc_unit *u)
{
	int r, enable;
	char w[128];
	char q[YTREE_QUOTE_MAX * 4 + 8];

	if ((r = get_bool(c, n, where, "enable", &enable)) < 0)
		return r;
	if (enable >= 0)
		u->enable = enable;

	const struct ynode *cmd;
	if ((r = get_str(c, n, where, "command", false, &cmd)) < 0)
		return r;
	if (cmd) {
		if (strcmp(cmd->value, "start") == 0)
			u->command = OSC_COMMAND_START;
		else if (strcmp(cmd->value, "restart") == 0)
			u->command = OSC_COMMAND_RESTART;
		else if (strcmp(cmd->value, "stop") == 0)
			u->command = OSC_COMMAND_STOP;
		else
			return fail(c, -EINVAL, "%s.command: unknown command '%s', expected start, restart or stop (line %zu)",
				    where, ytree_quote(q, sizeof(q), cmd->value, cmd->len), cmd->line);
	}

	char *content;
	if ((r = get_text(c, n, where, "content", false, OSC_UNIT_CONTENT_MAX, &content)) < 0)
		return r;
	if (content) {
		free(u->content);
		u->content = content;
	}

	const struct ynode *dropins;
	if ((r = get_node(c, n, where, "dropIns", Y_SEQ, &dropins)) < 0)
		return r;
	if (dropins && dropins->n_items > OSC_DROPINS_MAX)
		return fail(c, -EMSGSIZE, "%s.dropIns: more than %d drop-ins", where, OSC_DROPINS_MAX);
	const struct ynode *seen[OSC_DROPINS_MAX]; /* names of this list, for duplicates */
	for (size_t i = 0; dropins && i < dropins->n_items; i++) {
		const struct ynode *d = dropins->items[i];
		snprintf(w, sizeof(w), "%s.dropIns[%zu]", where, i);
		if (d->type != Y_MAP)
			return wrong_type(c, w, NULL, d, "a mapping");
		const struct ynode *name;
		if ((r = get_str(c, d, w, "name", true, &name)) < 0)
			return r;
		if (strlen(name->value) != name->len || !osc_dropin_name_is_valid(name->value))
			return fail(c, -EINVAL, "%s.name: invalid drop-in name '%s' (one file name ending in .conf; line %zu)",
				    w, ytree_quote(q, sizeof(q), name->value, name->len), name->line);
		seen[i] = name;
		for (size_t j = 0; j < i; j++)
			if (strcmp(seen[j]->value, name->value) == 0)
				return fail(c, -EINVAL, "%s.name: duplicate drop-in '%s' (also %s.dropIns[%zu])", w,
					    ytree_quote(q, sizeof(q), name->value, name->len), where, j);
		char *dcontent;
		if ((r = get_text(c, d, w, "content", false, OSC_UNIT_CONTENT_MAX, &dcontent)) < 0)
			return r;
		if (!dcontent && !(dcontent = strdup("")))
			return fail(c, -ENOMEM, "out of memory");
		char *dname = strdup(name->value);
		if (!dname) {
			free(dcontent);
			return fail(c, -ENOMEM, "out of memory");
		}
		if ((r = unit_add_dropin(c, u, where, dname, dcontent)) < 0)
			return r;
	}

	const struct ynode *paths;
	if ((r = get_node(c, n, where, "filePaths", Y_SEQ, &paths)) < 0)
		return r;
	if (paths && paths->n_items > OSC_FILE_PATHS_MAX)
		return fail(c, -EMSGSIZE, "%s.filePaths: more than %d paths", where, OSC_FILE_PATHS_MAX);
	for (size_t i = 0; paths && i < paths->n_items; i++) {
		const struct ynode *p = paths->items[i];
		snprintf(w, sizeof(w), "%s.filePaths[%zu]", where, i);
		if (p->type != Y_SCALAR || p->kind != YS_STR)
			return wrong_type(c, w, NULL, p, "a string");
		if ((r = check_path(c, w, "", p, false)) < 0)
			return r;
		char *s = strdup(p->value);
		if (!s)
			return fail(c, -ENOMEM, "out of memory");
		if ((r = unit_add_file_path(c, u, where, s)) < 0)
			return r;
	}
	return 0;
}

static int cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_unit(const void *a, const void *b)
{
	return strcmp(((const struct osc_unit *)a)->name, ((const struct osc_unit *)b)->name);
}

static int cmp_dropin(const void *a, const void *b)
{
	return strcmp(((const struct osc_dropin *)a)->name, ((const struct osc_dropin *)b)->name);
}

static int parse_units(struct ctx *c, const struct ynode *lists[2], const char *names[2], struct osc_unit **ret,
		       size_t *ret_n)
{
	size_t total = 0;
	for (int l = 0; l < 2; l++)
		if (lists[l])
			total += lists[l]->n_items;
	if (total > OSC_UNITS_MAX)
		return fail(c, -EMSGSIZE, "%s: more than %d units", names[0], OSC_UNITS_MAX);

	struct osc_unit *u = calloc(total ? total : 1, sizeof(*u));
	if (!u)
		return fail(c, -ENOMEM, "out of memory");
	size_t n = 0;
	int r = 0;
	char q[YTREE_QUOTE_MAX * 4 + 8];

	/* Names of the current list, to find duplicates within it. */
	const struct ynode **seen = calloc(total ? total : 1, sizeof(*seen));
	if (!seen) {
		free(u);
		return fail(c, -ENOMEM, "out of memory");
	}
	for (int l = 0; l < 2 && r == 0; l++) {
		size_t list_start = n; /* units first named in this list start here */
		for (size_t i = 0; lists[l] && i < lists[l]->n_items && r == 0; i++) {
			const struct ynode *e = lists[l]->items[i];
			char where[64];
			snprintf(where, sizeof(where), "%s[%zu]", names[l], i);
			if (e->type != Y_MAP) {
				r = wrong_type(c, where, NULL, e, "a mapping");
				break;
			}
			const struct ynode *name;
			if ((r = get_str(c, e, where, "name", true, &name)) < 0)
				break;
			if (strlen(name->value) != name->len || !osc_unit_name_is_valid(name->value)) {
				r = fail(c, -EINVAL, "%s.name: invalid systemd unit name '%s' (line %zu)", where,
					 ytree_quote(q, sizeof(q), name->value, name->len), name->line);
				break;
			}
			/* Unique within this list: compare with earlier entries of it. */
			seen[i] = name;
			for (size_t j = 0; j < i; j++)
				if (strcmp(seen[j]->value, name->value) == 0) {
					r = fail(c, -EINVAL, "%s.name: duplicate unit '%s' (also %s[%zu])", where,
						 ytree_quote(q, sizeof(q), name->value, name->len), names[l], j);
					break;
				}
			if (r < 0)
				break;
			struct osc_unit *target = NULL;
			for (size_t k = 0; k < list_start && !target; k++)
				if (strcmp(u[k].name, name->value) == 0)
					target = &u[k];
			if (!target) {
				target = &u[n++];
				target->enable = -1;
				target->name = strdup(name->value);
				if (!target->name) {
					r = fail(c, -ENOMEM, "out of memory");
					break;
				}
			}
			r = parse_unit_into(c, e, where, target);
		}
	}
	free(seen);
	if (r < 0) {
		units_free(u, n);
		return r;
	}

	for (size_t i = 0; i < n; i++) {
		struct osc_unit *x = &u[i];
		if (x->n_dropins > 1)
			qsort(x->dropins, x->n_dropins, sizeof(*x->dropins), cmp_dropin);
		if (x->n_file_paths > 1) {
			qsort(x->file_paths, x->n_file_paths, sizeof(char *), cmp_str_ptr);
			size_t k = 1;
			for (size_t j = 1; j < x->n_file_paths; j++) {
				if (strcmp(x->file_paths[k - 1], x->file_paths[j]) == 0)
					free(x->file_paths[j]);
				else
					x->file_paths[k++] = x->file_paths[j];
			}
			x->n_file_paths = k;
		}
	}
	qsort(u, n, sizeof(*u), cmp_unit);
	*ret = u;
	*ret_n = n;
	return 0;
}

/* ---- top level ---------------------------------------------------------- */

static int check_header(struct ctx *c, const struct ynode *root)
{
	const struct ynode *n;
	char q[YTREE_QUOTE_MAX * 4 + 8];
	int r;
	if ((r = get_str(c, root, "", "apiVersion", false, &n)) < 0)
		return r;
	if (n && strcmp(n->value, OSC_API_VERSION) != 0)
		return fail(c, -EINVAL, "apiVersion: '%s' is not " OSC_API_VERSION, ytree_quote(q, sizeof(q), n->value, n->len));
	if ((r = get_str(c, root, "", "kind", false, &n)) < 0)
		return r;
	if (n && strcmp(n->value, OSC_KIND) != 0)
		return fail(c, -EINVAL, "kind: '%s' is not " OSC_KIND, ytree_quote(q, sizeof(q), n->value, n->len));
	return 0;
}

/* ---- spec.criConfig ------------------------------------------------------ */

/* Gardener: pkg/apis/extensions/v1alpha1/types_operatingsystemconfig.go
 * (CRIConfig, ContainerdConfig, RegistryConfig, RegistryHost, PluginConfig);
 * rendered by pkg/nodeagent/controller/operatingsystemconfig/containerd.go
 * and containerd_config.go, which lib/node/criconfig.c follows. */

static void tval_free(struct osc_tval *v)
{
	for (size_t i = 0; i < v->n_items; i++)
		tval_free(&v->items[i]);
	free(v->items);
	free(v->key);
	free(v->str);
	memset(v, 0, sizeof(*v));
}

static void cri_free(struct osc_cri *cri)
{
	for (size_t i = 0; i < cri->n_plugins; i++) {
		for (size_t j = 0; j < cri->plugins[i].n_path; j++)
			free(cri->plugins[i].path[j]);
		free(cri->plugins[i].path);
		tval_free(&cri->plugins[i].values);
	}
	free(cri->plugins);
	for (size_t i = 0; i < cri->n_registries; i++) {
		struct osc_registry *g = &cri->registries[i];
		for (size_t j = 0; j < g->n_hosts; j++) {
			for (size_t k = 0; k < g->hosts[j].n_ca; k++)
				free(g->hosts[j].ca[k]);
			free(g->hosts[j].ca);
			free(g->hosts[j].url);
		}
		free(g->hosts);
		free(g->upstream);
		free(g->server);
	}
	free(cri->registries);
	free(cri->sandbox_image);
	memset(cri, 0, sizeof(*cri));
}

/* A string that goes into containerd's TOML: printable ASCII, no space,
 * quote or backslash, 1..max bytes (empty allowed when allow_empty). */
static int toml_str(struct ctx *c, const struct ynode *n, const char *where, const char *key, size_t max,
		    bool allow_empty, char **ret)
{
	char q[YTREE_QUOTE_MAX * 4 + 8];
	if (n->type != Y_SCALAR || n->kind != YS_STR)
		return wrong_type(c, where, key, n, "a string");
	if (n->len == 0 && !allow_empty)
		return fail(c, -EINVAL, "%s%s%s: empty (line %zu)", where, sep(where), key, n->line);
	if (n->len > max)
		return fail(c, -EMSGSIZE, "%s%s%s: '%s' longer than %zu bytes (line %zu)", where, sep(where), key,
			    ytree_quote(q, sizeof(q), n->value, n->len), max, n->line);
	for (size_t i = 0; i < n->len; i++) {
		unsigned char ch = (unsigned char)n->value[i];
		if (ch <= 0x20 || ch >= 0x7f || ch == '"' || ch == '\\')
			return fail(c, -EINVAL,
				    "%s%s%s: '%s' contains a space, quote, backslash or non-printable byte (line %zu)",
				    where, sep(where), key, ytree_quote(q, sizeof(q), n->value, n->len), n->line);
	}
	if (!(*ret = strdup(n->value)))
		return fail(c, -ENOMEM, "out of memory");
	return 0;
}

static int get_toml_str(struct ctx *c, const struct ynode *map, const char *where, const char *key, bool required,
			size_t max, bool allow_empty, char **ret)
{
	const struct ynode *n;
	int r = map_get(c, map, where, key, &n);
	if (r < 0)
		return r;
	*ret = NULL;
	if (!n) {
		if (required)
			return fail(c, -EINVAL, "%s%s%s: missing", where, sep(where), key);
		return 0;
	}
	return toml_str(c, n, where, key, max, allow_empty, ret);
}

static bool upstream_is_valid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 253 || s[0] == '.')
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
}

static int parse_registry_host(struct ctx *c, const struct ynode *n, const char *where, struct osc_registry_host *h)
{
	const struct ynode *caps, *cas;
	char w[176], q[YTREE_QUOTE_MAX * 4 + 8];
	int r;

	h->override_path = -1;
	if (n->type != Y_MAP)
		return wrong_type(c, where, NULL, n, "a mapping");
	if ((r = get_toml_str(c, n, where, "url", true, OSC_URL_MAX, false, &h->url)) < 0 ||
	    (r = get_bool(c, n, where, "overridePath", &h->override_path)) < 0 ||
	    (r = get_node(c, n, where, "capabilities", Y_SEQ, &caps)) < 0 ||
	    (r = get_node(c, n, where, "caCerts", Y_SEQ, &cas)) < 0)
		return r;
	for (size_t i = 0; caps && i < caps->n_items; i++) {
		const struct ynode *s = caps->items[i];
		snprintf(w, sizeof(w), "%s.capabilities[%zu]", where, i);
		if (s->type != Y_SCALAR || s->kind != YS_STR)
			return wrong_type(c, w, NULL, s, "a string");
		if (strcmp(s->value, "pull") == 0)
			h->capabilities |= OSC_CAP_PULL;
		else if (strcmp(s->value, "resolve") == 0)
			h->capabilities |= OSC_CAP_RESOLVE;
		else if (strcmp(s->value, "push") == 0)
			h->capabilities |= OSC_CAP_PUSH;
		else
			return fail(c, -EINVAL, "%s: unknown capability '%s' (pull, resolve or push) (line %zu)", w,
				    ytree_quote(q, sizeof(q), s->value, s->len), s->line);
	}
	size_t n_ca = cas ? cas->n_items : 0;
	if (n_ca > OSC_REGISTRY_CAS_MAX)
		return fail(c, -EMSGSIZE, "%s.caCerts: more than %u entries", where, OSC_REGISTRY_CAS_MAX);
	if (!(h->ca = calloc(n_ca + 1, sizeof(char *))))
		return fail(c, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n_ca; i++) {
		char k[40];
		snprintf(k, sizeof(k), "caCerts[%zu]", i);
		if ((r = toml_str(c, cas->items[i], where, k, OSC_URL_MAX, false, &h->ca[i])) < 0)
			return r;
		h->n_ca++;
	}
	return 0;
}

static int parse_registry(struct ctx *c, const struct ynode *n, const char *where, struct osc_registry *g)
{
	const struct ynode *hosts;
	char w[128], q[YTREE_QUOTE_MAX * 4 + 8];
	int r, probe;

	if (n->type != Y_MAP)
		return wrong_type(c, where, NULL, n, "a mapping");
	if ((r = get_toml_str(c, n, where, "upstream", true, 253, false, &g->upstream)) < 0 ||
	    (r = get_toml_str(c, n, where, "server", false, OSC_URL_MAX, false, &g->server)) < 0 ||
	    (r = get_bool(c, n, where, "readinessProbe", &probe)) < 0 ||
	    (r = get_node(c, n, where, "hosts", Y_SEQ, &hosts)) < 0)
		return r;
	if (!upstream_is_valid(g->upstream))
		return fail(c, -EINVAL, "%s.upstream: '%s' is not a host[:port] usable as a directory name", where,
			    ytree_quote(q, sizeof(q), g->upstream, strlen(g->upstream)));
	size_t nh = hosts ? hosts->n_items : 0;
	if (nh > OSC_REGISTRY_HOSTS_MAX)
		return fail(c, -EMSGSIZE, "%s.hosts: more than %u entries", where, OSC_REGISTRY_HOSTS_MAX);
	g->readiness_probe = probe == 1;
	if (nh && !(g->hosts = calloc(nh, sizeof(*g->hosts))))
		return fail(c, -ENOMEM, "out of memory");
	for (size_t i = 0; i < nh; i++) {
		snprintf(w, sizeof(w), "%s.hosts[%zu]", where, i);
		g->n_hosts++;
		if ((r = parse_registry_host(c, hosts->items[i], w, &g->hosts[i])) < 0)
			return r;
	}
	return 0;
}

static int cmp_registry(const void *a, const void *b)
{
	return strcmp(((const struct osc_registry *)a)->upstream, ((const struct osc_registry *)b)->upstream);
}

/* One value of plugins[].values (see struct osc_tval); where names it. */
static int parse_tval(struct ctx *c, const struct ynode *n, const char *where, unsigned depth, bool in_array,
		      struct osc_tval *ret)
{
	char w[192], q[YTREE_QUOTE_MAX * 4 + 8];
	int r;
	if (n->type == Y_SCALAR && n->kind == YS_STR) {
		ret->type = OSC_TV_STR;
		return toml_str(c, n, "", where, OSC_URL_MAX, true, &ret->str);
	}
	if (n->type == Y_SCALAR && n->kind == YS_INT) {
		ret->type = OSC_TV_INT;
		ret->i = n->int_value;
		return 0;
	}
	if (n->type == Y_SCALAR && n->kind == YS_BOOL) {
		ret->type = OSC_TV_BOOL;
		ret->b = n->bool_value;
		return 0;
	}
	if (n->type == Y_SCALAR && n->kind == YS_FLOAT) {
		char *e;
		ret->type = OSC_TV_FLOAT;
		ret->f = strtod(n->value, &e);
		if (*e || !isfinite(ret->f))
			return fail(c, -EINVAL, "%s: '%s': only finite numbers (JSON has no other) (line %zu)", where,
				    ytree_quote(q, sizeof(q), n->value, n->len), n->line);
		return 0;
	}
	if (n->type == Y_SCALAR && n->kind == YS_NULL && !in_array) {
		ret->type = OSC_TV_NULL; /* the key is deleted, as gardener-node-agent's go-toml drops it */
		return 0;
	}
	if (n->type == Y_SCALAR)
		return fail(c, -EINVAL, "%s: '%s': only strings, numbers, booleans, null, mappings and lists%s (line %zu)",
			    where, ytree_quote(q, sizeof(q), n->value, n->len), in_array ? " (no null in a list)" : "",
			    n->line);
	size_t count = n->type == Y_MAP ? n->n_items / 2 : n->n_items;
	if (count > OSC_TVAL_ITEMS_MAX)
		return fail(c, -EMSGSIZE, "%s: more than %u entries (line %zu)", where, OSC_TVAL_ITEMS_MAX, n->line);
	if (depth >= OSC_TVAL_DEPTH_MAX)
		return fail(c, -EMSGSIZE, "%s: nested deeper than %u (line %zu)", where, OSC_TVAL_DEPTH_MAX, n->line);
	ret->type = n->type == Y_MAP ? OSC_TV_TABLE : OSC_TV_ARRAY;
	if (count && !(ret->items = calloc(count, sizeof(*ret->items))))
		return fail(c, -ENOMEM, "out of memory");
	for (size_t i = 0; i < count; i++) {
		const struct ynode *v = n->type == Y_MAP ? n->items[2 * i + 1] : n->items[i];
		struct osc_tval *t = &ret->items[i];
		ret->n_items++;
		if (n->type == Y_MAP) {
			/* A key is text: YAML 1.1 reads a plain `n` or `on` as a
			 * boolean, `1` as an integer; the key is their bytes. */
			struct ynode kk = *n->items[2 * i];
			const struct ynode *k = &kk;
			if (kk.type == Y_SCALAR && (kk.kind == YS_BOOL || kk.kind == YS_INT || kk.kind == YS_FLOAT))
				kk.kind = YS_STR;
			if ((r = toml_str(c, k, where, "(key)", 253, false, &t->key)) < 0)
				return r;
			for (size_t j = 0; j < i; j++)
				if (strcmp(ret->items[j].key, t->key) == 0)
					return fail(c, -EINVAL, "%s: key '%s' given twice (line %zu)", where, t->key,
						    k->line);
			snprintf(w, sizeof(w), "%s.%s", where, t->key);
		} else
			snprintf(w, sizeof(w), "%s[%zu]", where, i);
		if ((r = parse_tval(c, v, w, depth + 1, n->type == Y_SEQ, t)) < 0)
			return r;
		if (n->type == Y_SEQ && i > 0 && t->type != ret->items[0].type)
			return fail(c, -EINVAL, "%s: list items of different types (line %zu)", w, v->line);
	}
	return 0;
}

static int parse_plugins(struct ctx *c, const struct ynode *plugins, const char *where, struct osc_cri *cri)
{
	char w[96], q[YTREE_QUOTE_MAX * 4 + 8];
	int r;
	if (plugins->n_items > OSC_PLUGINS_MAX)
		return fail(c, -EMSGSIZE, "%s: more than %u entries", where, OSC_PLUGINS_MAX);
	if (plugins->n_items && !(cri->plugins = calloc(plugins->n_items, sizeof(*cri->plugins))))
		return fail(c, -ENOMEM, "out of memory");
	for (size_t i = 0; i < plugins->n_items; i++) {
		const struct ynode *p = plugins->items[i], *path, *op, *values;
		struct osc_plugin *pl = &cri->plugins[i];
		cri->n_plugins++;
		pl->values.type = OSC_TV_TABLE;
		snprintf(w, sizeof(w), "%s[%zu]", where, i);
		if (p->type != Y_MAP)
			return wrong_type(c, w, NULL, p, "a mapping");
		if ((r = get_node(c, p, w, "path", Y_SEQ, &path)) < 0 || (r = get_str(c, p, w, "op", false, &op)) < 0 ||
		    (r = get_node(c, p, w, "values", Y_MAP, &values)) < 0)
			return r;
		if (!path || path->n_items == 0)
			return fail(c, -EINVAL, "%s.path: missing or empty", w);
		if (path->n_items > OSC_PLUGIN_PATH_MAX)
			return fail(c, -EMSGSIZE, "%s.path: more than %u components", w, OSC_PLUGIN_PATH_MAX);
		if (!(pl->path = calloc(path->n_items, sizeof(*pl->path))))
			return fail(c, -ENOMEM, "out of memory");
		for (size_t j = 0; j < path->n_items; j++) {
			char pw[128];
			snprintf(pw, sizeof(pw), "%s.path[%zu]", w, j);
			pl->n_path++;
			if ((r = toml_str(c, path->items[j], "", pw, 253, false, &pl->path[j])) < 0)
				return r;
		}
		if (op && strcmp(op->value, "add") != 0 && strcmp(op->value, "remove") != 0)
			return fail(c, -EINVAL, "%s.op: '%s' is not add or remove (line %zu)", w,
				    ytree_quote(q, sizeof(q), op->value, op->len), op->line);
		pl->remove = op && strcmp(op->value, "remove") == 0;
		if (values && !pl->remove) {
			char vw[128];
			snprintf(vw, sizeof(vw), "%s.values", w);
			if ((r = parse_tval(c, values, vw, 0, false, &pl->values)) < 0)
				return r;
		}
	}
	return 0;
}

static int parse_cri(struct ctx *c, const struct ynode *n, struct osc_cri *ret)
{
	static const char where[] = "spec.criConfig";
	const struct ynode *name, *driver, *ctd, *regs, *plugins;
	char w[96], q[YTREE_QUOTE_MAX * 4 + 8];
	struct osc_cri cri = {};
	int r;

	if ((r = get_str(c, n, where, "name", true, &name)) < 0)
		return r;
	if (strcmp(name->value, "containerd") != 0 || name->len != strlen("containerd"))
		return fail(c, -EINVAL, "%s.name: '%s' is not supported (containerd) (line %zu)", where,
			    ytree_quote(q, sizeof(q), name->value, name->len), name->line);
	cri.present = true;
	if ((r = get_str(c, n, where, "cgroupDriver", false, &driver)) < 0)
		return r;
	if (driver && strcmp(driver->value, "systemd") == 0)
		cri.cgroup_driver = OSC_CGROUP_SYSTEMD;
	else if (driver && strcmp(driver->value, "cgroupfs") == 0)
		cri.cgroup_driver = OSC_CGROUP_CGROUPFS;
	else if (driver)
		return fail(c, -EINVAL, "%s.cgroupDriver: '%s' is not cgroupfs or systemd (line %zu)", where,
			    ytree_quote(q, sizeof(q), driver->value, driver->len), driver->line);
	if ((r = get_node(c, n, where, "containerd", Y_MAP, &ctd)) < 0)
		return r;
	if (!ctd) {
		*ret = cri;
		return 0;
	}
	cri.containerd = true;
	static const char cwhere[] = "spec.criConfig.containerd";
	if ((r = get_toml_str(c, ctd, cwhere, "sandboxImage", false, OSC_IMAGE_MAX, true, &cri.sandbox_image)) < 0 ||
	    (r = get_node(c, ctd, cwhere, "registries", Y_SEQ, &regs)) < 0 ||
	    (r = get_node(c, ctd, cwhere, "plugins", Y_SEQ, &plugins)) < 0)
		goto fail;
	if (cri.sandbox_image && !*cri.sandbox_image) {
		free(cri.sandbox_image);
		cri.sandbox_image = NULL;
	}
	if (plugins && (r = parse_plugins(c, plugins, "spec.criConfig.containerd.plugins", &cri)) < 0)
		goto fail;
	size_t nr = regs ? regs->n_items : 0;
	if (nr > OSC_REGISTRIES_MAX) {
		r = fail(c, -EMSGSIZE, "%s.registries: more than %u entries", cwhere, OSC_REGISTRIES_MAX);
		goto fail;
	}
	if (nr && !(cri.registries = calloc(nr, sizeof(*cri.registries)))) {
		r = fail(c, -ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < nr; i++) {
		snprintf(w, sizeof(w), "%s.registries[%zu]", cwhere, i);
		cri.n_registries++;
		if ((r = parse_registry(c, regs->items[i], w, &cri.registries[i])) < 0)
			goto fail;
	}
	if (nr > 1)
		qsort(cri.registries, nr, sizeof(*cri.registries), cmp_registry);
	for (size_t i = 1; i < nr; i++)
		if (strcmp(cri.registries[i - 1].upstream, cri.registries[i].upstream) == 0) {
			r = fail(c, -EINVAL, "%s.registries: upstream '%s' given twice", cwhere,
				 ytree_quote(q, sizeof(q), cri.registries[i].upstream, strlen(cri.registries[i].upstream)));
			goto fail;
		}
	*ret = cri;
	return 0;
fail:
	cri_free(&cri);
	return r;
}

/* ---- spec.inPlaceUpdates, status.inPlaceUpdates (GEP-31) -------------- */

static void inplace_free(struct osc_inplace *ip, struct osc_os_update *ou)
{
	free(ip->os_version);
	free(ip->kubelet_version);
	free(ip->ca.time);
	free(ip->sa.time);
	memset(ip, 0, sizeof(*ip));
	free(ou->command);
	for (size_t i = 0; i < ou->n_args; i++)
		free(ou->args[i]);
	free(ou->args);
	memset(ou, 0, sizeof(*ou));
}

/* A version string: "" when absent, printable ASCII without space. */
static int get_version(struct ctx *c, const struct ynode *map, const char *where, const char *key, char **ret)
{
	char *s = NULL;
	int r = get_text(c, map, where, key, false, OSC_VERSION_MAX, &s);
	if (r < 0)
		return r;
	if (!s && !(s = strdup("")))
		return fail(c, -ENOMEM, "out of memory");
	for (const char *p = s; *p; p++)
		if (*p <= ' ' || *p > '~') {
			char q[YTREE_QUOTE_MAX * 4 + 8];
			int k = fail(c, -EINVAL, "%s.%s: not a version: '%s'", where, key, ytree_quote(q, sizeof(q), s, strlen(s)));
			free(s);
			return k;
		}
	*ret = s;
	return 0;
}

static int get_rotation(struct ctx *c, const struct ynode *map, const char *where, const char *key,
			struct osc_rotation *ret)
{
	const struct ynode *n, *t;
	int r = get_node(c, map, where, key, Y_MAP, &n);
	if (r < 0 || !n)
		return r;
	char w[96];
	snprintf(w, sizeof(w), "%s.%s", where, key);
	ret->present = true;
	if ((r = get_str(c, n, w, "lastInitiationTime", false, &t)) < 0 || !t)
		return r;
	char q[YTREE_QUOTE_MAX * 4 + 8];
	if (t->len > OSC_TIME_MAX || memchr(t->value, '\0', t->len) ||
	    inplace_parse_time(t->value, &ret->sec, &ret->nsec) < 0)
		return fail(c, -EINVAL, "%s.lastInitiationTime: not an RFC 3339 time: '%s' (line %zu)", w,
			    ytree_quote(q, sizeof(q), t->value, t->len), t->line);
	if (!(ret->time = strdup(t->value)))
		return fail(c, -ENOMEM, "out of memory");
	return 0;
}

/* A command or argument: at most OSC_OS_UPDATE_ARG_MAX bytes, no NUL, no newline. */
static int check_arg(struct ctx *c, const char *where, const struct ynode *n)
{
	if (n->len > OSC_OS_UPDATE_ARG_MAX)
		return fail(c, -EMSGSIZE, "%s: longer than %u bytes (line %zu)", where, OSC_OS_UPDATE_ARG_MAX, n->line);
	if (memchr(n->value, '\0', n->len) || memchr(n->value, '\n', n->len))
		return fail(c, -EINVAL, "%s: with a NUL or newline (line %zu)", where, n->line);
	return 0;
}

static int parse_inplace(struct ctx *c, const struct ynode *spec, const struct ynode *status, struct osc_inplace *ip,
			 struct osc_os_update *ou)
{
	const struct ynode *n = NULL, *cr = NULL;
	int r;
	if (spec && (r = get_node(c, spec, "spec", "inPlaceUpdates", Y_MAP, &n)) < 0)
		return r;
	if (n) {
		static const char w[] = "spec.inPlaceUpdates";
		ip->present = true;
		if ((r = get_version(c, n, w, "operatingSystemVersion", &ip->os_version)) < 0 ||
		    (r = get_version(c, n, w, "kubelet", &ip->kubelet_version)) < 0 ||
		    (r = get_node(c, n, w, "credentialsRotation", Y_MAP, &cr)) < 0)
			return r;
		if (cr) {
			static const char cw[] = "spec.inPlaceUpdates.credentialsRotation";
			ip->credentials_rotation = true;
			if ((r = get_rotation(c, cr, cw, "certificateAuthorities", &ip->ca)) < 0 ||
			    (r = get_rotation(c, cr, cw, "serviceAccountKey", &ip->sa)) < 0)
				return r;
		}
	}

	const struct ynode *st = NULL, *upd = NULL, *cmd = NULL, *args = NULL;
	if (status && (r = get_node(c, status, "status", "inPlaceUpdates", Y_MAP, &st)) < 0)
		return r;
	if (st && (r = get_node(c, st, "status.inPlaceUpdates", "osUpdate", Y_MAP, &upd)) < 0)
		return r;
	if (!upd)
		return 0;
	static const char uw[] = "status.inPlaceUpdates.osUpdate";
	/* command "" or absent is accepted here as Gardener's decoder does; the
	 * update refuses it when it runs (reconciler.go updateOSInPlace). */
	if ((r = get_str(c, upd, uw, "command", false, &cmd)) < 0 ||
	    (cmd && (r = check_arg(c, "status.inPlaceUpdates.osUpdate.command", cmd)) < 0) ||
	    (r = get_node(c, upd, uw, "args", Y_SEQ, &args)) < 0)
		return r;
	size_t na = args ? args->n_items : 0;
	if (na > OSC_OS_UPDATE_ARGS_MAX)
		return fail(c, -EMSGSIZE, "%s.args: more than %u (line %zu)", uw, OSC_OS_UPDATE_ARGS_MAX, args->line);
	if (!(ou->command = strdup(cmd ? cmd->value : "")) || !(ou->args = calloc(na + 1, sizeof(char *))))
		return fail(c, -ENOMEM, "out of memory");
	for (size_t i = 0; i < na; i++) {
		const struct ynode *a = args->items[i];
		char w[64];
		snprintf(w, sizeof(w), "%s.args[%zu]", uw, i);
		if (a->type != Y_SCALAR || a->kind != YS_STR)
			return wrong_type(c, w, NULL, a, "a string");
		if ((r = check_arg(c, w, a)) < 0)
			return r;
		if (!(ou->args[i] = strdup(a->value)))
			return fail(c, -ENOMEM, "out of memory");
		ou->n_args++;
	}
	return 0;
}

int osc_parse_for_node(const char *data, size_t len, const char *forbidden_prefix, const char *node_name,
		       struct osc *ret, struct osc_error *err)
{
	struct ctx c = { .err = err, .node_name = node_name };
	if (err)
		err->message[0] = '\0';
	if (forbidden_prefix) {
		c.forbidden = forbidden_prefix;
		c.forbidden_len = strlen(forbidden_prefix);
		while (c.forbidden_len > 1 && forbidden_prefix[c.forbidden_len - 1] == '/')
			c.forbidden_len--;
		if (c.forbidden_len == 1) /* "/" would forbid everything; treat as unset */
			c.forbidden_len = 0;
	}
	if (!data && len > 0)
		return fail(&c, -EINVAL, "no input");
	if (len > OSC_INPUT_MAX)
		return fail(&c, -EMSGSIZE, "input of %zu bytes is larger than %u", len, OSC_INPUT_MAX);

	_cleanup_(ynode_freep) struct ynode *root = NULL;
	int r = ytree_load(data ? data : "", len, &root, err ? err->message : NULL, err ? sizeof(err->message) : 0);
	if (r < 0)
		return r;
	if (root->type != Y_MAP)
		return wrong_type(&c, "", NULL, root, "a mapping");
	if ((r = check_header(&c, root)) < 0)
		return r;

	const struct ynode *spec, *status;
	if ((r = get_node(&c, root, "", "spec", Y_MAP, &spec)) < 0)
		return r;
	if ((r = get_node(&c, root, "", "status", Y_MAP, &status)) < 0)
		return r;

	const struct ynode *files[2] = { NULL, NULL }, *units[2] = { NULL, NULL };
	if (spec && ((r = get_node(&c, spec, "spec", "files", Y_SEQ, &files[0])) < 0 ||
		     (r = get_node(&c, spec, "spec", "units", Y_SEQ, &units[0])) < 0))
		return r;
	if (status && ((r = get_node(&c, status, "status", "extensionFiles", Y_SEQ, &files[1])) < 0 ||
		       (r = get_node(&c, status, "status", "extensionUnits", Y_SEQ, &units[1])) < 0))
		return r;

	const struct ynode *cri = NULL;
	if (spec && (r = get_node(&c, spec, "spec", "criConfig", Y_MAP, &cri)) < 0)
		return r;

	static const char *file_names[2] = { "spec.files", "status.extensionFiles" };
	static const char *unit_names[2] = { "spec.units", "status.extensionUnits" };
	struct osc out = {};
	if ((r = parse_files(&c, files, file_names, &out.files, &out.n_files)) < 0)
		return r;
	if ((r = parse_units(&c, units, unit_names, &out.units, &out.n_units)) < 0 ||
	    (cri && (r = parse_cri(&c, cri, &out.cri)) < 0) ||
	    (r = parse_inplace(&c, spec, status, &out.inplace, &out.os_update)) < 0) {
		osc_done(&out);
		return r;
	}
	*ret = out;
	return 0;
}

int osc_parse(const char *data, size_t len, const char *forbidden_prefix, struct osc *ret, struct osc_error *err)
{
	return osc_parse_for_node(data, len, forbidden_prefix, NULL, ret, err);
}

const struct osc_file *osc_find_file(const struct osc *osc, const char *path)
{
	size_t lo = 0, hi = osc->n_files;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = strcmp(path, osc->files[mid].path);
		if (d == 0)
			return &osc->files[mid];
		if (d < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const struct osc_unit *osc_find_unit(const struct osc *osc, const char *name)
{
	size_t lo = 0, hi = osc->n_units;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = strcmp(name, osc->units[mid].name);
		if (d == 0)
			return &osc->units[mid];
		if (d < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

int osc_set_dropin(struct osc *osc, const char *unit, const char *name, const char *content)
{
	if (!osc_unit_name_is_valid(unit) || !osc_dropin_name_is_valid(name))
		return -EINVAL;
	size_t ui = 0;
	while (ui < osc->n_units && strcmp(osc->units[ui].name, unit) < 0)
		ui++;
	bool have_unit = ui < osc->n_units && strcmp(osc->units[ui].name, unit) == 0;
	if (!have_unit && osc->n_units >= OSC_UNITS_MAX)
		return -EMSGSIZE;
	struct osc_unit *u = have_unit ? &osc->units[ui] : NULL;
	size_t di = 0;
	while (u && di < u->n_dropins && strcmp(u->dropins[di].name, name) < 0)
		di++;
	bool have_dropin = u && di < u->n_dropins && strcmp(u->dropins[di].name, name) == 0;
	if (u && !have_dropin && u->n_dropins >= OSC_DROPINS_MAX)
		return -EMSGSIZE;

	char *c = strdup(content);
	if (!c)
		return -ENOMEM;
	if (have_dropin) {
		free(u->dropins[di].content);
		u->dropins[di].content = c;
		return 0;
	}
	char *n = strdup(name);
	struct osc_dropin *d = n ? malloc(sizeof(*d) * ((u ? u->n_dropins : 0) + 1)) : NULL;
	char *un = d && !u ? strdup(unit) : NULL;
	struct osc_unit *units = d && !u && un ? reallocarray(osc->units, osc->n_units + 1, sizeof(*units)) : NULL;
	if (!d || (!u && (!un || !units))) {
		free(c);
		free(n);
		free(d);
		free(un);
		return -ENOMEM;
	}
	if (!u) {
		osc->units = units;
		memmove(&units[ui + 1], &units[ui], (osc->n_units - ui) * sizeof(*units));
		units[ui] = (struct osc_unit){ .name = un, .enable = -1 };
		osc->n_units++;
		u = &units[ui];
	}
	if (u->n_dropins) {
		memcpy(d, u->dropins, di * sizeof(*d));
		memcpy(&d[di + 1], &u->dropins[di], (u->n_dropins - di) * sizeof(*d));
	}
	d[di] = (struct osc_dropin){ .name = n, .content = c };
	free(u->dropins);
	u->dropins = d;
	u->n_dropins++;
	return 0;
}

void osc_done(struct osc *osc)
{
	if (!osc)
		return;
	for (size_t i = 0; i < osc->n_files; i++)
		file_free(&osc->files[i]);
	free(osc->files);
	units_free(osc->units, osc->n_units);
	cri_free(&osc->cri);
	inplace_free(&osc->inplace, &osc->os_update);
	memset(osc, 0, sizeof(*osc));
}
