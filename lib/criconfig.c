/* containerd configuration renderers; see criconfig.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "criconfig.h"

static const char header[] = "# managed by node-agent's cloud-config-exec from the OSC's criConfig; "
			     "edits are overwritten\n";

int cri_target_from_version(const char *out, size_t len, struct cri_target *ret)
{
	/* Third whitespace-separated word of the first line. */
	size_t i = 0, word = 0;
	while (i < len && out[i] != '\n' && word < 2) {
		while (i < len && (out[i] == ' ' || out[i] == '\t'))
			i++;
		while (i < len && out[i] != ' ' && out[i] != '\t' && out[i] != '\n')
			i++;
		word++;
	}
	while (i < len && (out[i] == ' ' || out[i] == '\t'))
		i++;
	if (word != 2 || i >= len)
		return -EINVAL;
	if (out[i] == 'v')
		i++;
	unsigned v[2] = { 0, 0 };
	for (int k = 0; k < 2; k++) {
		size_t digits = 0;
		while (i < len && out[i] >= '0' && out[i] <= '9' && digits < 4) {
			v[k] = v[k] * 10 + (unsigned)(out[i] - '0');
			i++;
			digits++;
		}
		if (digits == 0 || digits >= 4)
			return -EINVAL;
		if (k == 0) {
			if (i >= len || out[i] != '.')
				return -EINVAL;
			i++;
		}
	}
	struct cri_target t = { .major = v[0], .minor = v[1] };
	if (v[0] == 1)
		t.config_version = 2; /* 1.6 and 1.7 read version 2 */
	else if (v[0] == 2) {
		/* containerd_config.go: bin_dirs from 2.2 (Gardener #13826),
		 * config version 4 for 2.3 (#14856), same key paths as 3. */
		t.config_version = v[1] >= 3 ? 4 : 3;
		t.cni_bin_dirs = v[1] >= 2;
	} else
		return -EINVAL;
	*ret = t;
	return 0;
}

/* The strings were validated by osc_parse() (no quote, no backslash, printable
 * ASCII); TOML basic strings need no escape then. */
int cri_render_config(const struct osc_cri *cri, const struct cri_target *t, char **ret)
{
	if (!cri || !cri->present || !t || t->config_version < 2 || t->config_version > 4)
		return -EINVAL;
	bool v2 = t->config_version == 2;
	/* Key paths: containerdConfigPaths in containerd_config.go. */
	const char *images = v2 ? "io.containerd.grpc.v1.cri" : "io.containerd.cri.v1.images";
	const char *runtime = v2 ? "io.containerd.grpc.v1.cri" : "io.containerd.cri.v1.runtime";

	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fprintf(f, "%sversion = %d\nimports = [\"%s/*.toml\"]\n", header, t->config_version, CRI_IMPORTS_DIR);
	if (cri->sandbox_image) {
		if (v2)
			fprintf(f, "\n[plugins.\"%s\"]\n  sandbox_image = \"%s\"\n", images, cri->sandbox_image);
		else
			fprintf(f, "\n[plugins.\"%s\".pinned_images]\n  sandbox = \"%s\"\n", images,
				cri->sandbox_image);
	}
	fprintf(f, "\n[plugins.\"%s\".registry]\n  config_path = \"%s\"\n", images, CRI_CERTS_DIR);
	if (t->cni_bin_dirs)
		fprintf(f, "\n[plugins.\"%s\".cni]\n  bin_dirs = [\"%s\"]\n", runtime, CRI_CNI_BIN_DIR);
	else
		fprintf(f, "\n[plugins.\"%s\".cni]\n  bin_dir = \"%s\"\n", runtime, CRI_CNI_BIN_DIR);
	if (cri->cgroup_driver != OSC_CGROUP_UNSET) {
		/* A runtimes.runc table replaces containerd's default entry,
		 * so the runtime type has to be named again. */
		fprintf(f, "\n[plugins.\"%s\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n",
			runtime);
		fprintf(f, "\n[plugins.\"%s\".containerd.runtimes.runc.options]\n  SystemdCgroup = %s\n", runtime,
			cri->cgroup_driver == OSC_CGROUP_SYSTEMD ? "true" : "false");
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

int cri_render_hosts(const struct osc_registry *g, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	_cleanup_(fclosep) FILE *f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fputs(header, f);
	if (g->server)
		fprintf(f, "server = \"%s\"\n", g->server);
	for (size_t i = 0; i < g->n_hosts; i++) {
		const struct osc_registry_host *h = &g->hosts[i];
		unsigned caps = h->capabilities ? h->capabilities : OSC_CAP_PULL | OSC_CAP_RESOLVE;
		fprintf(f, "\n[host.\"%s\"]\n  capabilities = [", h->url);
		const char *comma = "";
		static const struct {
			unsigned bit;
			const char *name;
		} names[] = { { OSC_CAP_PULL, "pull" }, { OSC_CAP_RESOLVE, "resolve" }, { OSC_CAP_PUSH, "push" } };
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			if (caps & names[k].bit) {
				fprintf(f, "%s\"%s\"", comma, names[k].name);
				comma = ",";
			}
		fputs("]\n", f);
		if (h->n_ca) {
			fputs("  ca = [", f);
			for (size_t k = 0; k < h->n_ca; k++)
				fprintf(f, "%s\"%s\"", k ? "," : "", h->ca[k]);
			fputs("]\n", f);
		}
		if (h->override_path == 1)
			fputs("  override_path = true\n", f);
	}
	FILE *done = TAKE_PTR(f);
	if (fclose(done) != 0)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

static bool render_same(int ra, const char *a, int rb, const char *b)
{
	if (ra < 0 || rb < 0)
		return ra == rb;
	return strcmp(a, b) == 0;
}

bool cri_equal(const struct osc_cri *a, const struct osc_cri *b, const struct cri_target *t)
{
	bool pa = a && a->present, pb = b && b->present;
	if (pa != pb)
		return false;
	if (!pa)
		return true;
	_cleanup_free_ char *ca = NULL, *cb = NULL;
	int ra = cri_render_config(a, t, &ca), rb = cri_render_config(b, t, &cb);
	if (!render_same(ra, ca, rb, cb) || a->n_registries != b->n_registries || a->n_plugins != b->n_plugins)
		return false;
	for (size_t i = 0; i < a->n_registries; i++) {
		if (strcmp(a->registries[i].upstream, b->registries[i].upstream) != 0)
			return false;
		_cleanup_free_ char *ha = NULL, *hb = NULL;
		ra = cri_render_hosts(&a->registries[i], &ha);
		rb = cri_render_hosts(&b->registries[i], &hb);
		if (!render_same(ra, ha, rb, hb))
			return false;
	}
	return true;
}
