# Helpers for the cloud-config-exec integration tests (source after common.sh).
#   CCE           the binary
#   exec_init DIR     a scratch root with a config file at DIR/config.json
#   cce ROOT ARGS...  runs the executor on ROOT (--no-systemd, logs to stderr)
#   tree_state ROOT   one line per path below ROOT (except the executor's own
#                     state dir): type, mode, owner, size, inode, mtime,
#                     ctime, content hash: any write, replace or chmod shows
#   tree_hash ROOT    sha256 of tree_state
#   strace_cce LOG ROOT ARGS...  cce under strace; count_fs_writes LOG
CCE=$B/cloud-config-exec
GEN_OSC=$TESTS_DIR/lib/gen-osc.py

exec_init() {
	local d=$1
	mkdir -p "$d/root"
	echo '{}' >"$d/config.json"
}

# desired_json OSC-FILE GENERATION [JSON]: prints desired.json as node-agent
# writes it for OSC-FILE (version, checksum, osc, generation), with the
# members of the JSON object merged in (sshAccess, restart, tokens, ...).
desired_json() {
	python3 - "$@" <<-'PY'
	import hashlib, json, sys
	osc = open(sys.argv[1], "rb").read()
	d = {"version": 1, "checksum": hashlib.sha256(osc).hexdigest(), "osc": osc.decode(), "generation": int(sys.argv[2])}
	d.update(json.loads(sys.argv[3]) if len(sys.argv) > 3 else {})
	print(json.dumps(d))
	PY
}

cce() {
	local root=$1
	shift
	"$CCE" --root "$root" --config "$(dirname "$root")/config.json" --no-systemd --log stderr "$@"
}

tree_state() {
	local root=$1
	(cd "$root" && find . -path ./var/lib/cloud-config-exec -prune -o -print0 | sort -z |
		while IFS= read -r -d '' p; do
			if [ -f "$p" ] && [ ! -L "$p" ]; then
				h=$(sha256sum <"$p" | cut -c1-16)
			else
				h=-
			fi
			stat -c "%n|%F|%a|%u:%g|%s|%i|%y|%z|$h" -- "$p"
		done)
}

tree_hash() { tree_state "$1" | sha256sum | cut -d' ' -f1; }

# strace_cce LOG ROOT ARGS...: cce under strace -f (file-changing calls).
strace_cce() {
	local log=$1 root=$2
	shift 2
	# LeakSanitizer cannot run under ptrace (make check-sanitize).
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		strace -f -qq -e trace=openat,open,creat,rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat,write \
		-o "$log" "$CCE" --root "$root" --config "$(dirname "$root")/config.json" --no-systemd --log stderr "$@"
}

# Write-opens, renames, unlinks, mkdirs and write(2)s to anything but
# stdout/stderr in LOG (failed calls not counted).
count_fs_writes() {
	grep -vE '^[0-9]+ +write\([12],' "$1" | grep -E 'O_WRONLY|O_RDWR|O_CREAT|rename|unlink|mkdir|write\(' |
		grep -vc ' = -1 '
}

# check_is_apply ROOT OSC LABEL: `check` then `apply` of OSC on ROOT (issue
# 36: one plan for both); what check predicted is exactly what apply did:
# the files written and removed, containerd's files, the unit files
# written and the modes fixed, and the units' plan (the "units:" line is
# the "Units:" line apply carries out). Each difference fails, named.
# Leaves ROOT applied; the plan in $CIA_CHECK, the apply's log in $CIA_LOG;
# $CIA_ARGS (words) go to both runs.
check_is_apply() {
	local root=$1 osc=$2 label=$3
	CIA_CHECK=$(dirname "$root")/cia-check.out CIA_LOG=$(dirname "$root")/cia-apply.log
	cce "$root" ${CIA_ARGS:-} check "$osc" >"$CIA_CHECK" 2>/dev/null
	cce "$root" ${CIA_ARGS:-} apply "$osc" 2>"$CIA_LOG"
	check "$label: check, then apply: what was predicted is what was done" \
		python3 - "$CIA_CHECK" "$CIA_LOG" <<-'PY'
	import re, sys
	plan = open(sys.argv[1]).read().splitlines()
	log = open(sys.argv[2]).read().splitlines()
	def grab(lines, rx):
	    return sorted(m.group(1) for m in (re.search(rx, l) for l in lines) if m)
	pairs = [
	    ("files written", grab(plan, r"^write   (\S+)$"), grab(log, r"File (\S+) written \(")),
	    ("files removed", grab(plan, r"^remove  (\S+)$"), grab(log, r"File (\S+) (?:removed|already gone) \(dropped")),
	    ("containerd's files", grab(plan, r"^containerd write (\S+)"), grab(log, r"Wrote (/etc/containerd/\S+)")),
	    ("unit files written", grab(plan, r"^unit    (\S+): [a-z,-]*write[a-z,-]* \("),
	     grab(log, r"Wrote unit (\S+)$")),
	    ("unit modes fixed", grab(plan, r"^unit    (\S+): mode \("), grab(log, r"Fixed the mode or owner of the files of (\S+)$")),
	    ("units", grab(plan, r"^units: (.*)$"), grab(log, r"Units: (.*)$")),
	    ("image files rewritten", grab(plan, r"^image   (\S+): .*rewritten"), grab(log, r"Wrote (/opt/\S+) from ")),
	]
	bad = [f"{what}: predicted {p}, done {d}" for what, p, d in pairs if p != d]
	for b in bad:
	    print("#   " + b)
	sys.exit(1 if bad else 0)
	PY
}
