/* node-agent: watches the node's OperatingSystemConfig Secret and its own
 * Node on the kube-apiserver, hands a verified desired state to
 * cloud-config-exec and annotates the Node after a successful apply. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "checkconfig.h"
#include "config.h"
#include "fsx.h"
#include "gnaconfig.h"
#include "health.h"
#include "log.h"
#include "settings.h"
#include "stock.h"


static struct agent_options arg = {
	.config_path = CONFIG_PATH_DEFAULT,
};
static int arg_log_level = -1;
static bool arg_config_given = false;
static const char *arg_service_user = CHECKCONFIG_USER_DEFAULT;
static bool arg_present;

static void help(void)
{
	printf("Usage: node-agent [OPTIONS]\n\n"
	       "Watch the node's OperatingSystemConfig on the kube-apiserver and hand it to\n"
	       "cloud-config-exec; annotate the Node once it is applied.\n\n"
	       "  --config FILE        configuration (default %s)\n"
	       "  --root DIR           prefix for the state paths (paths.*), for tests\n"
	       "  --once               one full reconcile, then exit: 0 applied, 1 apply failed,\n"
	       "                       2 configuration error, 3 API server or network failure\n"
	       "  --check-config       check the configuration as the service would see it: every\n"
	       "                       setting with its source, the credential, what the service\n"
	       "                       user can read; then exit (0 OK, 1 not)\n"
	       "  --service-user USER  the user --check-config checks for (default %s)\n"
	       "  --config-present     exit 0 when there is a configuration (the file or Gardener's\n"
	       "                       stock user data), else say so and exit 1 (ExecCondition=)\n"
	       "  --log-level LEVEL    debug, info, notice, warning or err (default info)\n"
	       "  --no-sandbox         no seccomp filter of its own (debugging under valgrind/strace)\n"
	       "  -h, --help           show this help\n"
	       "  --version            show the version\n\n"
	       "See node-agent(8) and node-agent.conf(5).\n",
	       CONFIG_PATH_DEFAULT, CHECKCONFIG_USER_DEFAULT);
}

static int parse_level(const char *s)
{
	static const struct {
		const char *name;
		int level;
	} levels[] = {
		{ "debug", LOG_DEBUG }, { "info", LOG_INFO }, { "notice", LOG_NOTICE },
		{ "warning", LOG_WARNING }, { "err", LOG_ERR },
	};
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if (strcmp(s, levels[i].name) == 0)
			return levels[i].level;
	return -EINVAL;
}

/* Returns 1 to go on, 0 to exit successfully (--help, --version), < 0 on
 * a usage error. */
static int parse_argv(int argc, char *argv[])
{
	enum { ARG_CONFIG = 0x100, ARG_ROOT, ARG_ONCE, ARG_CHECK, ARG_LEVEL, ARG_VERSION, ARG_NO_SANDBOX, ARG_USER, ARG_PRESENT };
	static const struct option options[] = {
		{ "config", required_argument, NULL, ARG_CONFIG },
		{ "root", required_argument, NULL, ARG_ROOT },
		{ "once", no_argument, NULL, ARG_ONCE },
		{ "check-config", no_argument, NULL, ARG_CHECK },
		{ "service-user", required_argument, NULL, ARG_USER },
		{ "config-present", no_argument, NULL, ARG_PRESENT },
		{ "log-level", required_argument, NULL, ARG_LEVEL },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, ARG_VERSION },
		{ "no-sandbox", no_argument, NULL, ARG_NO_SANDBOX },
		{}
	};
	int c;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
		switch (c) {
		case 'h':
			help();
			return 0;
		case ARG_VERSION:
			printf("node-agent %s\n", NA_VERSION);
			return 0;
		case ARG_CONFIG:
			arg.config_path = optarg;
			arg_config_given = true;
			break;
		case ARG_USER:
			arg_service_user = optarg;
			break;
		case ARG_ROOT:
			arg.root = optarg;
			break;
		case ARG_ONCE:
			arg.once = true;
			break;
		case ARG_CHECK:
			arg.check_config = true;
			break;
		case ARG_PRESENT:
			arg_present = true;
			break;
		case ARG_LEVEL:
			arg_log_level = parse_level(optarg);
			if (arg_log_level < 0) {
				fprintf(stderr, "node-agent: --log-level: unknown level \"%s\"\n", optarg);
				return -EINVAL;
			}
			break;
		case ARG_NO_SANDBOX:
			arg.no_sandbox = true;
			break;
		default:
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "node-agent: unexpected argument \"%s\"\n", argv[optind]);
		return -EINVAL;
	}
	if (arg.root && arg.root[0] != '/') {
		fprintf(stderr, "node-agent: --root: not an absolute path: \"%s\"\n", arg.root);
		return -EINVAL;
	}
	return 1;
}

static int run(void)
{
	if (arg_present) {
		char why[1024];
		if (settings_present(arg.config_path, GNA_DIR_DEFAULT, secure_getenv("CREDENTIALS_DIRECTORY"), why,
				     sizeof(why)))
			return 0;
		fprintf(stderr, "%s\n", why);
		return 1;
	}
	if (arg.check_config)
		return checkconfig_run(arg.config_path, arg_config_given, arg_service_user);
	return agent_run(&arg);
}

int main(int argc, char *argv[])
{
	if (fsx_std_fds() < 0)
		return AGENT_EXIT_CONFIG;
	int r = parse_argv(argc, argv);
	if (r <= 0)
		return r < 0 ? AGENT_EXIT_CONFIG : 0;
	/* Under systemd the journal has it all; run by hand or by a test, the
	 * log goes to stderr as well. */
	log_open("node-agent", arg.check_config ? LOG_TARGET_STDERR
			       : getenv("INVOCATION_ID") ? LOG_TARGET_AUTO
							 : LOG_TARGET_BOTH);
	if (arg_log_level >= 0)
		log_set_max_level(arg_log_level);
	return run();
}
