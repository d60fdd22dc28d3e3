/* authkeys-cmd: sshd's AuthorizedKeysCommand, answered from the key snapshot.
 *
 *   AuthorizedKeysCommand /usr/libexec/node-agent/authkeys-cmd %u %f %t %k
 *
 * sshd's contract shapes everything here: exit 0 always (a non-zero exit or
 * a signal makes sshd discard the output), print nothing on any problem,
 * whole lines only, never block: sshd has no timeout of its own but
 * LoginGraceTime, and it runs the helper twice per login. So the program
 * arms a deadline, confines itself with seccomp before it touches the
 * snapshot, builds the whole answer in memory, writes it in one loop, and
 * logs the decision to the journal (stderr would land in sshd's log). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "answer.h"
#include "cleanup.h"
#include "confine.h"
#include "fsx.h"
#include "io.h"
#include "log.h"
#include "snapshot.h"


#define DEADLINE_MS_DEFAULT 2000u
#define DEADLINE_MS_MAX 60000u

struct args {
	const char *snapshot;
	const char *root;
	bool allow_root;
	unsigned deadline_ms;
	struct akc_request req;
};

static void help(void)
{
	printf("Usage: authkeys-cmd [OPTIONS] USER [FINGERPRINT [TYPE [KEY]]]\n"
	       "\n"
	       "Prints USER's authorized keys from the key snapshot for sshd's\n"
	       "AuthorizedKeysCommand (%%u %%f %%t %%k). With FINGERPRINT only that key,\n"
	       "and only if TYPE and KEY (when given) match it. Expired keys are never\n"
	       "printed. Exits 0 and prints nothing on any problem; see the journal.\n"
	       "\n"
	       "  --snapshot PATH    snapshot file (default %s)\n"
	       "  --root DIR         resolve PATH below DIR\n"
	       "  --allow-root       also serve the user root (default: never)\n"
	       "  --deadline-ms MS   give up, printing nothing, after MS ms (default %u)\n"
	       "  -h, --help         show this help\n"
	       "  --version          show the version\n",
	       SNAPSHOT_DEFAULT_PATH, DEADLINE_MS_DEFAULT);
}

/* Returns 1 to run, 0 to exit successfully (help, version), < 0 on a usage
 * error (already logged). */
static int parse_argv(int argc, char **argv, struct args *a)
{
	enum { ARG_SNAPSHOT = 0x100, ARG_ROOT, ARG_ALLOW_ROOT, ARG_DEADLINE, ARG_VERSION };
	static const struct option options[] = {
		{ "snapshot", required_argument, NULL, ARG_SNAPSHOT },
		{ "root", required_argument, NULL, ARG_ROOT },
		{ "allow-root", no_argument, NULL, ARG_ALLOW_ROOT },
		{ "deadline-ms", required_argument, NULL, ARG_DEADLINE },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, ARG_VERSION },
		{},
	};
	int c;

	/* "+": stop at the first operand, so a key or a fingerprint is never
	 * taken for an option; "-" first: report errors ourselves. */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0) {
		switch (c) {
		case ARG_SNAPSHOT:
			if (!fsx_path_is_safe(optarg, PATH_MAX))
				return log_error("--snapshot needs a normalised absolute path, got \"%s\"", optarg), -EINVAL;
			a->snapshot = optarg;
			break;
		case ARG_ROOT:
			if (!fsx_path_is_safe(optarg, PATH_MAX))
				return log_error("--root needs a normalised absolute path, got \"%s\"", optarg), -EINVAL;
			a->root = optarg;
			break;
		case ARG_ALLOW_ROOT:
			a->allow_root = true;
			break;
		case ARG_DEADLINE: {
			char *end;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || v == 0 || v > DEADLINE_MS_MAX)
				return log_error("--deadline-ms needs 1..%u, got \"%s\"", DEADLINE_MS_MAX, optarg), -EINVAL;
			a->deadline_ms = (unsigned)v;
			break;
		}
		case 'h':
			help();
			return 0;
		case ARG_VERSION:
			printf("authkeys-cmd %s (snapshot format %d)\n", NA_VERSION, SNAPSHOT_VERSION);
			return 0;
		default:
			return log_error("unknown or incomplete option \"%s\"", argv[optind - 1]), -EINVAL;
		}
	}
	int n = argc - optind;
	if (n < 1 || n > 4)
		return log_error("expected USER [FINGERPRINT [TYPE [KEY]]], got %d arguments", n), -EINVAL;
	char **op = argv + optind;
	a->req.user = op[0];
	a->req.fingerprint = n > 1 ? op[1] : NULL;
	a->req.type = n > 2 ? op[2] : NULL;
	a->req.key = n > 3 ? op[3] : NULL;
	if (!*a->req.user)
		return log_error("empty user name"), -EINVAL;
	return 1;
}

/* The deadline and a snapshot truncated under our mapping (SIGBUS) both
 * end the process before anything was written: exit 0 with no output is
 * what sshd must see. */
static void die_quietly(int sig)
{
	_exit(0);
}

static int arm_deadline(unsigned ms)
{
	struct sigaction sa = { .sa_handler = die_quietly };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) < 0 || sigaction(SIGBUS, &sa, NULL) < 0)
		return negerrno();
	struct itimerval it = { .it_value = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 } };
	return RET_NERRNO(setitimer(ITIMER_REAL, &it, NULL));
}

static int disarm_deadline(void)
{
	struct itimerval it = {};
	return RET_NERRNO(setitimer(ITIMER_REAL, &it, NULL));
}

/* A copy fit for a journal field: control bytes replaced, bounded. */
static void printable(const char *s, char *buf, size_t size)
{
	size_t i = 0;
	for (; s[i] && i + 1 < size; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = '\0';
}

/* At most this many per-key lines for an answer of several keys (sshd
 * asks with %f: one key; the user-only form may serve many). */
#define LOG_KEYS_MAX 32

/* One line per key served: which key (KEY_FINGERPRINT=: for a certificate
 * the CA's), where it came from (KEY_SOURCE=: the OSC checksum, the
 * Secret, the key-document entry or Gardener's current/previous key, as
 * cloud-config-exec put it in the snapshot) and, for a certificate, its key
 * id and serial: sshd's "Accepted publickey for U ... SHA256:..." (which
 * names the certificate's key and, for a certificate, "ID ... (serial N)
 * CA ... SHA256:<CA>") leads here and on to the source. */
static void log_key(const struct args *a, const struct akc_answer *ans, const struct snapshot_record *rec,
		    const char *const *base)
{
	char f_kfp[SNAPSHOT_FINGERPRINT_MAX + 24], f_src[SNAPSHOT_SOURCE_MAX + 16], f_id[sizeof(ans->cert_key_id) + 16],
		f_serial[48], f_cerr[48], user[SNAPSHOT_USER_MAX + 1];
	const char *fields[16];
	size_t n = 0;
	for (; n < 8 && base[n]; n++)
		fields[n] = base[n];
	printable(a->req.user, user, sizeof(user));
	snprintf(f_kfp, sizeof(f_kfp), "KEY_FINGERPRINT=%s", rec->fingerprint);
	snprintf(f_src, sizeof(f_src), "KEY_SOURCE=%s", rec->source_len ? rec->source : "unknown");
	fields[n++] = f_kfp;
	fields[n++] = f_src;
	if (ans->cert && ans->cert_error == 0) {
		snprintf(f_id, sizeof(f_id), "CERT_KEY_ID=%s", ans->cert_key_id);
		snprintf(f_serial, sizeof(f_serial), "CERT_SERIAL=%llu", (unsigned long long)ans->cert_serial);
		fields[n++] = f_id;
		fields[n++] = f_serial;
	} else if (ans->cert) {
		snprintf(f_cerr, sizeof(f_cerr), "CERT_ERROR=%s", strerror(-ans->cert_error));
		fields[n++] = f_cerr;
	}
	fields[n] = NULL;
	if (ans->cert && ans->cert_error == 0)
		log_fields(LOG_INFO, fields,
			   "served certificate authority %s for user \"%s\" from %s: certificate id \"%s\" serial %llu",
			   rec->fingerprint, user, rec->source_len ? rec->source : "an unknown source", ans->cert_key_id,
			   (unsigned long long)ans->cert_serial);
	else
		log_fields(LOG_INFO, fields, "served %s %s for user \"%s\" from %s",
			   ans->cert ? "certificate authority" : "key", rec->fingerprint, user,
			   rec->source_len ? rec->source : "an unknown source");
}

static void log_decision(const struct args *a, const struct akc_answer *ans, uint64_t generation)
{
	char user[SNAPSHOT_USER_MAX + 1], fp[SNAPSHOT_FINGERPRINT_MAX + 1] = "";
	char f_user[sizeof(user) + 8], f_fp[sizeof(fp) + 16], f_served[32], f_expired[32], f_reason[48],
		f_gen[48], f_what[96];
	printable(a->req.user, user, sizeof(user));
	if (a->req.fingerprint)
		printable(a->req.fingerprint, fp, sizeof(fp));
	snprintf(f_user, sizeof(f_user), "USER=%s", user);
	snprintf(f_fp, sizeof(f_fp), "FINGERPRINT=%s", fp);
	snprintf(f_served, sizeof(f_served), "KEYS_SERVED=%u", ans->served);
	snprintf(f_expired, sizeof(f_expired), "KEYS_EXPIRED=%u", ans->expired);
	snprintf(f_reason, sizeof(f_reason), "REASON=%s", akc_reason_to_string(ans->reason));
	snprintf(f_gen, sizeof(f_gen), "SNAPSHOT_GENERATION=%llu", (unsigned long long)generation);
	snprintf(f_what, sizeof(f_what), "SNAPSHOT_ERROR=%s", ans->what ? ans->what : "");

	const char *const fields[] = { f_user, f_served, f_expired, f_reason, f_gen,
				       a->req.fingerprint ? f_fp : NULL, NULL };
	const char *fpsep = a->req.fingerprint ? " fingerprint " : "";

	switch (ans->reason) {
	case AKC_SERVED:
		/* One key (what sshd asks for): its own line is the decision. */
		if (ans->served == 1 && ans->recs) {
			log_key(a, ans, &ans->recs[0], fields);
			break;
		}
		log_fields(LOG_INFO, fields, "served %u key(s) for user \"%s\"%s%s", ans->served, user, fpsep, fp);
		const char *const kf[] = { f_user, f_reason, f_gen, NULL };
		for (unsigned i = 0; ans->recs && i < ans->served && i < LOG_KEYS_MAX; i++)
			log_key(a, ans, &ans->recs[i], kf);
		if (ans->served > LOG_KEYS_MAX)
			log_fields(LOG_INFO, fields, "... and %u more key(s) for user \"%s\" not listed",
				   ans->served - LOG_KEYS_MAX, user);
		break;
	case AKC_SNAPSHOT_CORRUPT: {
		const char *const cf[] = { f_user, f_served, f_reason, f_gen, f_what, NULL };
		log_fields(LOG_ERR, cf, "snapshot %s is damaged (%s), serving nothing for user \"%s\"",
			   a->snapshot, ans->what, user);
		break;
	}
	default:
		log_fields(LOG_NOTICE, fields, "no key for user \"%s\"%s%s: %s (%u expired)", user, fpsep, fp,
			   akc_reason_to_string(ans->reason), ans->expired);
	}
}

static int run(struct args *a)
{
	const char *what = NULL;
	int r = arm_deadline(a->deadline_ms);
	if (r < 0)
		return log_error_errno(r, "cannot arm the %u ms deadline", a->deadline_ms);

	/* Before the snapshot is opened: everything after this point runs
	 * under the allow-list, including the parser. */
	r = akc_confine(&what);
	if (r < 0)
		return log_error_errno(r, "cannot install the seccomp filter (at \"%s\")", what ? what : "load");

	struct snapshot *s = NULL;
	r = akc_open_snapshot(a->root, a->snapshot, &s, &what);
	if (r < 0) {
		char f_user[SNAPSHOT_USER_MAX + 8], f_what[96], user[SNAPSHOT_USER_MAX + 1];
		printable(a->req.user, user, sizeof(user));
		snprintf(f_user, sizeof(f_user), "USER=%s", user);
		snprintf(f_what, sizeof(f_what), "SNAPSHOT_ERROR=%s", what ? what : "");
		const char *reason = r == -ENOENT ? "REASON=snapshot-missing" : "REASON=snapshot-rejected";
		return log_fields_errno(r == -ENOENT ? LOG_WARNING : LOG_ERR, r,
					LOG_FIELDS(f_user, "KEYS_SERVED=0", reason, f_what),
					"snapshot %s%s rejected (%s), serving nothing for user \"%s\"",
					a->root ? a->root : "", a->snapshot, what ? what : "?", user);
	}

	struct snapshot_info info;
	snapshot_get_info(s, &info);
	a->req.allow_root = a->allow_root;
	a->req.now = (int64_t)time(NULL);
	struct akc_answer ans;
	r = akc_answer(s, &a->req, &ans);
	if (r < 0) {
		snapshot_free(s);
		return log_error_errno(r, "cannot build the answer for user \"%s\"", a->req.user);
	}

	/* The write can only block while sshd holds the pipe open, and sshd
	 * closes it at LoginGraceTime at the latest: no timer is needed any
	 * more, and none may cut a line in half. */
	r = disarm_deadline();
	if (r >= 0 && ans.out_len > 0)
		r = akc_write_all(STDOUT_FILENO, ans.out, ans.out_len);
	if (r < 0)
		log_error_errno(r, "cannot write the answer to sshd");
	log_decision(a, &ans, info.generation);
	akc_answer_done(&ans);
	snapshot_free(s);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a = {
		.snapshot = SNAPSHOT_DEFAULT_PATH,
		.deadline_ms = DEADLINE_MS_DEFAULT,
	};

	/* Without a stdout of its own, printing keys could only go astray. */
	if (fsx_std_fds() < 0)
		return EXIT_SUCCESS;
	/* stderr goes into sshd's own log: the journal only. */
	log_open("authkeys-cmd", LOG_TARGET_JOURNAL);
	/* sshd may stop reading early (older versions did): EPIPE, not death. */
	signal(SIGPIPE, SIG_IGN);

	int r = parse_argv(argc, argv, &a);
	if (r <= 0)
		return EXIT_SUCCESS;
	(void)run(&a);
	/* sshd's contract: exit 0 always; what went wrong is in the journal. */
	return EXIT_SUCCESS;
}
