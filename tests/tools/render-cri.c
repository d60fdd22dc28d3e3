/* render-cri: test-only front end of lib/criconfig.c, so that a test can
 * hold the real containerd's parser against what the renderer accepts.
 *
 *   render-cri VERSION OSC-FILE     parses OSC-FILE as fuzz-osc does
 *                                   (osc_parse_for_node, node "node-a") and
 *                                   prints config.toml for `containerd
 *                                   --version` output VERSION ("1.6.20",
 *                                   "2.0.2", ...)
 *
 * Exit status: 0 rendered, 3 the OSC has no criConfig, 4 osc_parse or the
 * renderer refused it (the reason on stderr), 1 anything else. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "criconfig.h"
#include "osc.h"

int main(int argc, char *argv[])
{
	if (argc != 3) {
		fprintf(stderr, "usage: render-cri VERSION OSC-FILE\n");
		return 1;
	}
	_cleanup_free_ char *version = NULL;
	if (asprintf(&version, "containerd x %s\n", argv[1]) < 0)
		return 1;
	struct cri_target t;
	if (cri_target_from_version(version, strlen(version), &t) < 0) {
		fprintf(stderr, "render-cri: unknown version '%s'\n", argv[1]);
		return 1;
	}
	FILE *f = fopen(argv[2], "rb");
	if (!f)
		return 1;
	_cleanup_free_ char *buf = malloc(OSC_INPUT_MAX + 1);
	size_t len = buf ? fread(buf, 1, OSC_INPUT_MAX + 1, f) : 0;
	fclose(f);
	if (!buf || len > OSC_INPUT_MAX)
		return 1;
	struct osc o = { 0 };
	struct osc_error err = { { 0 } };
	int r = osc_parse_for_node(buf, len, "/var/lib/node-agent", "node-a", &o, &err);
	if (r < 0) {
		fprintf(stderr, "render-cri: osc: %s\n", err.message);
		return 4;
	}
	if (!o.cri.present) {
		osc_done(&o);
		return 3;
	}
	char why[512] = "";
	_cleanup_free_ char *config = NULL;
	if (o.cri.n_plugins && cri_plugins_check(&o.cri, &t, NULL, why, sizeof(why)) < 0) {
		fprintf(stderr, "render-cri: criConfig.containerd.%s\n", why);
		osc_done(&o);
		return 4;
	}
	r = cri_render_config(&o.cri, &t, &config);
	osc_done(&o);
	if (r < 0) {
		fprintf(stderr, "render-cri: %s\n", strerror(-r));
		return 4;
	}
	fputs(config, stdout);
	return fflush(stdout) == 0 ? 0 : 1;
}
