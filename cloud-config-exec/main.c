/* cloud-config-exec: applies the node's desired state as root, without
 * network: files, systemd units, the login user's SSH keys and the key
 * snapshot for authkeys-cmd. See cloud-config-exec(8). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "apply.h"
#include "cleanup.h"
#include "config.h"
#include "confine.h"
#include "containerd.h"
#include "criconfig.h"
#include "ctrdprobe.h"
#include "fsx.h"
#include "gnaconfig.h"
#include "images.h"
#include "ipupdate.h"
#include "kubeletvol.h"
#include "label.h"
#include "log.h"
#include "revoke.h"
#include "units.h"


static const char *arg_root = "/";
static const char *arg_config = NULL;
static bool arg_no_systemd = false;
static bool arg_systemd = false;
static bool arg_no_seccomp = false;
static const char *arg_containerd_address = NULL;
static unsigned arg_job_timeout_ms = 0;
static enum log_target arg_log = LOG_TARGET_AUTO;
static const char *arg_verb = "apply-desired";
static const char *arg_file = NULL;
static bool arg_allow_loop = false;
static bool arg_replace = false;

static void help(void)
{
	printf("Usage: cloud-config-exec [OPTIONS] [VERB [FILE]]\n"
	       "\n"
	       "Applies the node's desired configuration as root: files, systemd units,\n"
	       "the login user's SSH keys and the key snapshot for authkeys-cmd.\n"
	       "\n"
	       "Verbs:\n"
	       "  apply-desired      apply <stateDir>/desired.json written by node-agent (default)\n"
	       "  apply FILE         apply an OperatingSystemConfig file (osc.yaml, YAML or JSON)\n"
	       "  keys               reconcile only the SSH keys and the snapshot (expired-key purge)\n"
	       "  revoke [--replace] bring the KRL up to date now: the operator's keys in\n"
	       "                     /" REVOKE_OPERATOR_DIR "/, the last applied OSC's revocations;\n"
	       "                     --replace overwrites a KRL changed outside this program\n"
	       "  check FILE         validate an OSC and print what an apply would change; writes nothing\n"
	       "  status             print the last result\n"
	       "  os-update-run      run the in-place OS update command the executor handed over\n"
	       "                     (cloud-config-exec-os-update.service; has network, no filter)\n"
	       "  kubelet-data-volume  format the disk of gardener-node-agent's\n"
	       "                     bootstrap.kubeletDataVolumeSize as ext4 KUBEDEV and mount it\n"
	       "                     on /var/lib/kubelet (cloud-config-exec-kubelet-data-volume.service)\n"
	       "  probe-containerd   ask containerd for its version over its socket and write the\n"
	       "                     verdict for node-agent (cloud-config-exec-containerd-probe.service)\n"
	       "\n"
	       "Options:\n"
	       "  --root DIR         prefix every path on the node with DIR (implies --no-systemd)\n"
	       "  --systemd          talk to the system bus even with --root (whose manager must\n"
	       "                     run in DIR, e.g. an nspawn box; tests)\n"
	       "  --config FILE      configuration file (default %s)\n"
	       "  --no-systemd       do not talk to systemd: write unit files only\n"
	       "  --job-timeout-ms N deadline for each systemd job (default %u)\n"
	       "  --log TARGET       auto, journal, stderr or both (default auto)\n"
	       "  --no-seccomp       do not install the seccomp filter (debugging only)\n"
	       "  --containerd-address SOCKET  containerd's socket for image files and\n"
	       "                     probe-containerd (default " IMAGES_ADDRESS_DEFAULT ")\n"
	       "  --data-volume-allow-loop  kubelet-data-volume also takes loop devices (tests)\n"
	       "  --replace          with revoke: see there\n"
	       "  -h --help          show this help\n"
	       "     --version       show the version\n"
	       "\n"
	       "Exit status: 0 applied, 1 apply failed, 2 usage or configuration error.\n",
	       CONFIG_PATH_DEFAULT, UNITS_JOB_TIMEOUT_MS_DEFAULT);
}

static int parse_argv(int argc, char *argv[])
{
	enum { ARG_ROOT = 0x100, ARG_CONFIG, ARG_NO_SYSTEMD, ARG_SYSTEMD, ARG_JOB_TIMEOUT, ARG_LOG, ARG_NO_SECCOMP, ARG_VERSION,
	       ARG_CONTAINERD_ADDRESS, ARG_ALLOW_LOOP, ARG_REPLACE };
	static const struct option options[] = {
		{ "root", required_argument, NULL, ARG_ROOT },
		{ "config", required_argument, NULL, ARG_CONFIG },
		{ "no-systemd", no_argument, NULL, ARG_NO_SYSTEMD },
		{ "systemd", no_argument, NULL, ARG_SYSTEMD },
		{ "job-timeout-ms", required_argument, NULL, ARG_JOB_TIMEOUT },
		{ "log", required_argument, NULL, ARG_LOG },
		{ "no-seccomp", no_argument, NULL, ARG_NO_SECCOMP },
		{ "containerd-address", required_argument, NULL, ARG_CONTAINERD_ADDRESS },
		{ "data-volume-allow-loop", no_argument, NULL, ARG_ALLOW_LOOP },
		{ "replace", no_argument, NULL, ARG_REPLACE },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, ARG_VERSION },
		{ 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
		switch (c) {
		case ARG_ROOT:
			if (optarg[0] != '/') {
				fprintf(stderr, "cloud-config-exec: --root needs an absolute path\n");
				return -EINVAL;
			}
			arg_root = optarg;
			break;
		case ARG_CONFIG:
			arg_config = optarg;
			break;
		case ARG_NO_SYSTEMD:
			arg_no_systemd = true;
			break;
		case ARG_SYSTEMD:
			arg_systemd = true;
			break;
		case ARG_JOB_TIMEOUT: {
			char *end;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || v == 0 || v > 3600000) {
				fprintf(stderr, "cloud-config-exec: --job-timeout-ms: expected 1..3600000, got '%s'\n",
					optarg);
				return -EINVAL;
			}
			arg_job_timeout_ms = (unsigned)v;
			break;
		}
		case ARG_LOG:
			if (strcmp(optarg, "auto") == 0)
				arg_log = LOG_TARGET_AUTO;
			else if (strcmp(optarg, "journal") == 0)
				arg_log = LOG_TARGET_JOURNAL;
			else if (strcmp(optarg, "stderr") == 0)
				arg_log = LOG_TARGET_STDERR;
			else if (strcmp(optarg, "both") == 0)
				arg_log = LOG_TARGET_BOTH;
			else {
				fprintf(stderr, "cloud-config-exec: --log: unknown target '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case ARG_NO_SECCOMP:
			arg_no_seccomp = true;
			break;
		case ARG_CONTAINERD_ADDRESS:
			if (optarg[0] != '/') {
				fprintf(stderr, "cloud-config-exec: --containerd-address needs an absolute path\n");
				return -EINVAL;
			}
			arg_containerd_address = optarg;
			break;
		case ARG_ALLOW_LOOP:
			arg_allow_loop = true;
			break;
		case ARG_REPLACE:
			arg_replace = true;
			break;
		case 'h':
			help();
			return 0;
		case ARG_VERSION:
			printf("cloud-config-exec %s\n", NA_VERSION);
			return 0;
		default:
			return -EINVAL;
		}
	}
	if (optind < argc)
		arg_verb = argv[optind++];
	bool needs_file = strcmp(arg_verb, "apply") == 0 || strcmp(arg_verb, "check") == 0;
	if (strcmp(arg_verb, "apply-desired") != 0 && strcmp(arg_verb, "keys") != 0 && strcmp(arg_verb, "revoke") != 0 &&
	    strcmp(arg_verb, "status") != 0 && strcmp(arg_verb, "kubelet-data-volume") != 0 &&
	    strcmp(arg_verb, "probe-containerd") != 0 && strcmp(arg_verb, "os-update-run") != 0 && !needs_file) {
		fprintf(stderr, "cloud-config-exec: unknown verb '%s' (see --help)\n", arg_verb);
		return -EINVAL;
	}
	if (needs_file) {
		if (optind >= argc) {
			fprintf(stderr, "cloud-config-exec: %s needs a FILE\n", arg_verb);
			return -EINVAL;
		}
		arg_file = argv[optind++];
	}
	if (optind < argc) {
		fprintf(stderr, "cloud-config-exec: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (arg_replace && strcmp(arg_verb, "revoke") != 0) {
		fprintf(stderr, "cloud-config-exec: --replace goes only with revoke\n");
		return -EINVAL;
	}
	return 1;
}

static void configp(struct config **c)
{
	if (*c) {
		config_done(*c);
		free(*c);
	}
}

static int run(void)
{
	log_open("cloud-config-exec", arg_log);

	_cleanup_(configp) struct config *cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return APPLY_EXIT_FAILED;
	char err[512] = "";
	const char *path = arg_config ? arg_config : CONFIG_PATH_DEFAULT;
	int r = config_load(path, cfg, err, sizeof(err));
	if (r == -ENOENT && !arg_config)
		r = config_defaults(cfg);
	if (r < 0) {
		log_error_errno(r, "Configuration rejected: %s", err[0] ? err : path);
		return APPLY_EXIT_USAGE;
	}

	_cleanup_close_ int rootfd = fsx_open_root(arg_root);
	if (rootfd < 0) {
		log_error_errno(rootfd, "Cannot open the root directory %s", arg_root);
		return APPLY_EXIT_USAGE;
	}
	bool scratch = strcmp(arg_root, "/") != 0;
	bool readonly = strcmp(arg_verb, "check") == 0 || strcmp(arg_verb, "status") == 0;
	const char *gna_dir = cfg->gna_dir ? cfg->gna_dir : GNA_DIR_DEFAULT;
	/* Runs in its own unit (kubeletvol.h), not under the executor's
	 * filter: the children it execs (mkfs.ext4, mount, cp) need syscalls
	 * the filter denies and would inherit it. */
	if (strcmp(arg_verb, "kubelet-data-volume") == 0) {
		_cleanup_(label_finip) int labelling = label_init(arg_root);
		if (labelling < 0)
			return APPLY_EXIT_FAILED;
		return datavol_format(arg_root, rootfd, gna_dir, arg_allow_loop) < 0 ? APPLY_EXIT_FAILED : APPLY_EXIT_OK;
	}
	/* Its own unit too (ctrdprobe.h): no bus, only the socket; ctr runs
	 * under the executor's filter as in an apply. */
	const char *address = arg_containerd_address ? arg_containerd_address : IMAGES_ADDRESS_DEFAULT;
	if (strcmp(arg_verb, "probe-containerd") == 0) {
		if (!arg_no_seccomp && confine_install() < 0)
			return APPLY_EXIT_FAILED;
		return ctrdprobe_run(rootfd, cfg->exec_state_dir, address) < 0 ? APPLY_EXIT_FAILED : APPLY_EXIT_OK;
	}
	/* Its own unit too (ipupdate.h): the OS update may need the network
	 * and runs what the OSC names, which the filter would not allow. */
	if (strcmp(arg_verb, "os-update-run") == 0)
		return ipu_os_update_verb(rootfd, cfg->exec_state_dir);
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	if (!arg_no_systemd && (!scratch || arg_systemd) && !readonly && strcmp(arg_verb, "keys") != 0 &&
	    strcmp(arg_verb, "revoke") != 0) {
		r = sd_bus_open_system(&bus);
		if (r < 0) {
			log_error_errno(r, "Cannot connect to the system bus (use --no-systemd without systemd)");
			return APPLY_EXIT_FAILED;
		}
	} else if (scratch && !arg_no_systemd && !arg_systemd && !readonly)
		log_notice("--root %s: not talking to systemd, unit files only", arg_root);

	/* Input to check comes from a file: read it before the filter, it is
	 * only bytes afterwards. */
	_cleanup_free_ char *input = NULL;
	size_t input_len = 0;
	if (arg_file && apply_read_input(arg_file, &input, &input_len) < 0)
		return APPLY_EXIT_USAGE;

	/* Without systemd, the puller keeps the network the executor gives
	 * up; with it, cloud-config-exec-pull@.service pulls (images.h). */
	_cleanup_close_ int puller_fd = -1;
	if (!bus && (strcmp(arg_verb, "apply") == 0 || strcmp(arg_verb, "apply-desired") == 0)) {
		_cleanup_free_ char *hosts_dir = NULL;
		if (asprintf(&hosts_dir, "%s%s", scratch ? arg_root : "", CRI_CERTS_DIR) < 0)
			return APPLY_EXIT_FAILED;
		if (images_puller_start(address, hosts_dir, &puller_fd) < 0)
			return APPLY_EXIT_FAILED;
	}

	/* What gardener-node-agent's os.Getenv("PATH") is on a node, read
	 * before the filter (containerd.h). */
	_cleanup_free_ char *service_path = containerd_service_path(bus);
	if (!service_path)
		return APPLY_EXIT_FAILED;

	/* What the apply creates gets the SELinux type the file contexts give
	 * its path (label.h); the file contexts are read before the filter. */
	_cleanup_(label_finip) int labelling = readonly ? 0 : label_init(arg_root);
	if (labelling < 0)
		return APPLY_EXIT_FAILED;

	if (!arg_no_seccomp && (r = confine_install()) < 0)
		return APPLY_EXIT_FAILED;

	struct apply_ctx c = { .root = arg_root, .rootfd = rootfd, .cfg = cfg, .bus = bus,
			       .job_timeout_ms = arg_job_timeout_ms, .containerd_address = address,
			       .puller_fd = puller_fd, .service_path = service_path, .gna_dir = gna_dir };
	if (strcmp(arg_verb, "apply-desired") == 0)
		return apply_desired(&c);
	if (strcmp(arg_verb, "apply") == 0)
		return apply_osc(&c, input, input_len, NULL);
	if (strcmp(arg_verb, "keys") == 0)
		return apply_keys_only(&c);
	if (strcmp(arg_verb, "revoke") == 0)
		return apply_revoke(&c, arg_replace);
	if (strcmp(arg_verb, "check") == 0)
		return apply_check(&c, input, input_len);
	return apply_status(&c);
}

int main(int argc, char *argv[])
{
	if (fsx_std_fds() < 0)
		return APPLY_EXIT_USAGE;
	int r = parse_argv(argc, argv);
	if (r <= 0)
		return r < 0 ? APPLY_EXIT_USAGE : APPLY_EXIT_OK;
	return run();
}
