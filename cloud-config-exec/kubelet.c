/* The kubelet's bootstrap kubeconfig; see kubelet.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cleanup.h"
#include "fsx.h"
#include "kubelet.h"
#include "log.h"

#define KUBELET_DIR "/var/lib/kubelet"
#define TOKEN_FILE_MAX 4096u

static bool token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

int kubelet_token_parse(const char *data, size_t len, char **ret)
{
	while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r' || data[len - 1] == ' ' ||
			   data[len - 1] == '\t'))
		len--;
	if (len != 23 || data[6] != '.')
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (i != 6 && !token_char(data[i]))
			return -EINVAL;
	char *t = strndup(data, len);
	if (!t)
		return -ENOMEM;
	*ret = t;
	return 0;
}

int kubelet_bootstrap_render(const char *server, const char *ca_file, const char *token, char **ret)
{
	/* clientcmd's NewKubeconfig("kubelet-bootstrap", ...) in gardener's
	 * kubernetesutils: cluster, context and user all of that name. */
	char *s = NULL;
	if (asprintf(&s,
		     "apiVersion: v1\n"
		     "kind: Config\n"
		     "clusters:\n"
		     "- cluster:\n"
		     "    certificate-authority: \"%s\"\n"
		     "    server: \"%s\"\n"
		     "  name: kubelet-bootstrap\n"
		     "contexts:\n"
		     "- context:\n"
		     "    cluster: kubelet-bootstrap\n"
		     "    user: kubelet-bootstrap\n"
		     "  name: kubelet-bootstrap\n"
		     "current-context: kubelet-bootstrap\n"
		     "preferences: {}\n"
		     "users:\n"
		     "- name: kubelet-bootstrap\n"
		     "  user:\n"
		     "    token: \"%s\"\n",
		     ca_file, server, token) < 0)
		return -ENOMEM;
	*ret = s;
	return 0;
}

static bool exists_at(int rootfd, const char *path)
{
	return faccessat(rootfd, path + 1, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Removes the file at the absolute path below rootfd; 1 removed, 0 absent. */
static int remove_at(int rootfd, const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	if (!dir)
		return -ENOMEM;
	char *slash = strrchr(dir, '/');
	const char *base = path + (slash - dir) + 1;
	*slash = '\0';
	_cleanup_close_ int dfd = fsx_open_dir_at(rootfd, *dir ? dir : "/", 0, 0);
	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return dfd;
	if (unlinkat(dfd, base, 0) < 0)
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

static void wipe_free(char **p)
{
	if (*p) {
		OPENSSL_cleanse(*p, strlen(*p));
		free(*p);
	}
}

int kubelet_bootstrap_apply(int rootfd, const struct desired *d)
{
	if (!d || !d->kb_server)
		return 0;
	int r, changed = 0;
	if (d->kb_node_registered) {
		/* The kubelet has its own certificate now; the bootstrap
		 * credentials only widen what a stolen disk gives away. */
		const char *paths[] = { KUBELET_BOOTSTRAP_KUBECONFIG, d->kb_token_file };
		for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
			r = remove_at(rootfd, paths[i]);
			if (r < 0)
				log_warning_errno(r, "Cannot remove %s", paths[i]);
			else if (r > 0) {
				log_notice("Node registered: removed %s", paths[i]);
				changed = 1;
			}
		}
		return changed;
	}
	if (exists_at(rootfd, KUBELET_DIR "/kubeconfig-real") ||
	    exists_at(rootfd, KUBELET_DIR "/pki/kubelet-client-current.pem"))
		return 0;
	_cleanup_(wipe_free) char *raw = NULL, *token = NULL, *text = NULL;
	size_t len = 0;
	r = fsx_read_at(rootfd, d->kb_token_file + 1, TOKEN_FILE_MAX, &raw, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return log_error_errno(r, "Cannot read the bootstrap token %s", d->kb_token_file);
	r = kubelet_token_parse(raw, len, &token);
	if (r < 0) {
		log_warning("%s is no bootstrap token (\"<6>.<16>\" of a-z0-9); %s not written", d->kb_token_file,
			    KUBELET_BOOTSTRAP_KUBECONFIG);
		return 0;
	}
	r = kubelet_bootstrap_render(d->kb_server, d->kb_ca_file, token, &text);
	if (r < 0)
		return log_error_errno(r, "Cannot render %s", KUBELET_BOOTSTRAP_KUBECONFIG);
	_cleanup_close_ int dfd = fsx_open_dir_at(rootfd, KUBELET_DIR, FSX_MKDIR, 0755);
	if (dfd < 0)
		return log_error_errno(dfd, "Cannot open %s", KUBELET_DIR);
	r = fsx_write_atomic_at(dfd, "kubeconfig-bootstrap", text, strlen(text), 0600, 0, 0, FSX_SKIP_IF_SAME);
	if (r < 0)
		return log_error_errno(r, "Cannot write %s", KUBELET_BOOTSTRAP_KUBECONFIG);
	if (r > 0)
		log_notice("Wrote %s (bootstrap token of %s) for the kubelet to register the Node",
			   KUBELET_BOOTSTRAP_KUBECONFIG, d->kb_token_file);
	return r > 0;
}
