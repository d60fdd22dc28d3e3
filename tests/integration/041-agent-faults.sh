#!/bin/bash
# node-agent under scripted API server faults: 500s, 429 with Retry-After,
# a connection reset mid-watch, a server that accepts and never answers (at
# the HTTP and at the TCP level), a body over the ceiling, invalid JSON, a
# checksum mismatch (and the same checksum with the data corrected), an OSC
# in UTF-16, a watch resume that gets 410 Gone (in the stream and as the HTTP
# status), a Node that does not keep a patch, the listener down, a bad token
# (401) and a revoked permission (403). For each: the last good
# state (desired.json, the applied file, the Node annotation) stays in force,
# the request log shows backoff rather than a tight loop, and once the server
# is healthy again a new Secret version is applied and annotated.
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require

ANN=checksum/cloud-config-data
WINDOW=${FAULT_WINDOW:-6}      # seconds each fault lasts
RECOVER=${RECOVER_SECONDS:-75} # the agent's backoff cap (60 s) plus the work
MAX_REQ=${MAX_REQ:-30}         # requests per fault window that still count as backoff

# Scripted hung and silent watches: a short watchIdleMs, bookmarks within it.
hello_e2e hello '{"limits": {"responseMaxBytes": 1048576}, "timeouts": {"watchIdleMs": 10000}}' --bookmark-interval 5

# kept NAME: the last good state is still in force.
kept() {
	local now_state
	now_state=$(hello_state)
	if [ "$now_state" = "$good" ]; then ok "$1: last good state in force"; else
		fail "$1: last good state in force"; echo "  want: $good"; echo "  got:  $now_state"; fi
}

# backoff NAME SINCE [FILTER]: the agent did not hammer the server.
backoff() {
	local n
	n=$(kube_count "$2" "${3:-True}")
	check "$1: backoff, $n requests in ${WINDOW}s (<= $MAX_REQ)" [ "$n" -le "$MAX_REQ" ]
}

# recover NAME: with the faults cleared, a new version gets applied and annotated.
recover() {
	local t0 sum
	kctl POST /clear-faults >/dev/null
	v=$((v + 1))
	hello_osc $v >"$W/v$v.yaml"
	sum=$(sha256 "$W/v$v.yaml")
	t0=$(kube_secret "$W/v$v.yaml" | jget "d['t']")
	if kube_wait_annotation $ANN "$sum" "$t0" "$RECOVER" >/dev/null; then
		ok "$1: recovers (new version annotated after $(python3 -c "print(round($(now) - $t0, 1))") s)"
	else
		fail "$1: recovers within ${RECOVER}s"
		dump_logs
	fi
	check "$1: the new version is on disk" [ "$(cat "$ROOT/etc/hello")" = "hello $v" ]
	good=$(hello_state)
}


# publish a new version with a checksum that does not match: never applied
mismatch() {
	local n=$((v + 100))
	hello_osc $n >"$W/mm.yaml"
	kube_secret "$W/mm.yaml" "${1:-wrong}" >/dev/null
}

# gap_after_429 SINCE: the shortest time between a 429 and the next request
# for the same resource ("none" when there was no such pair).
gap_after_429() {
	kctl GET "/log?since=$1" | python3 -c 'import json, sys
reqs = json.load(sys.stdin)["requests"]
gaps = []
for cls in ("/secrets", "/nodes"):
    rs = [e for e in reqs if cls in e["path"] and e["method"] != "TLS"]
    for a, b in zip(rs, rs[1:]):
        if a["status"] == 429:
            gaps.append(b["t"] - a["t"])
print("%.2f" % min(gaps) if gaps else "none")'
}

# oversize_sent SINCE: the most bytes the server wrote of an oversize body
# before the client closed (-1: the client never closed early).
oversize_sent() {
	kctl GET "/log?since=$1" | python3 -c 'import json, re, sys
n = [int(m.group(1)) for e in json.load(sys.stdin)["requests"] if e.get("fault") == "oversize"
     for m in [re.search(r"after (\d+) bytes", e.get("error") or "")] if m]
print(max(n) if n else -1)'
}

# force_get: a 410 (expired history) makes the agent GET the Secret again.
force_get() { kctl POST /expire >/dev/null; kctl POST /reset-watches >/dev/null; }
GETSEC="GET /api/v1/namespaces/kube-system/secrets/$KUBE_SECRET"

# --- 500 on every request
p500() {
	t0=$(now)
	kctl POST /fault '{"type":"500","count":-1}' >/dev/null
	kctl POST /reset-watches >/dev/null
	wait_hit "$t0" "e['status'] == 500" 10
	sleep "$WINDOW"
	kept "500s"
	backoff "500s" "$t0"
	check "500s: the agent did retry" [ "$(kube_count "$t0" "e['status'] == 500")" -ge 2 ]
	recover "500s"
}

# --- 429 with Retry-After: 3
p429() {
	t0=$(now)
	kctl POST /fault '{"type":"429","count":-1,"retryAfter":3}' >/dev/null
	kctl POST /reset-watches >/dev/null
	wait_hit "$t0" "e['status'] == 429"
	sleep "$WINDOW"
	kept "429"
	# the retry after a 429 may come much later than Retry-After (the
	# exponential backoff can be longer): wait for one, up to $RECOVER s
	for ((i = 0; i < RECOVER; i++)); do
		gap=$(gap_after_429 "$t0")
		[ "$gap" != none ] && break
		sleep 1
	done
	if python3 -c "import sys; sys.exit(not ('$gap' != 'none' and float('$gap') >= 2.9))"; then
		ok "429: Retry-After honoured (shortest gap after a 429: $gap s, >= 2.9)"
	else
		fail "429: Retry-After honoured (shortest gap after a 429: $gap s, >= 2.9)"
		kube_requests "$t0"
	fi
	recover "429"
}

# --- connection reset in the middle of a watch event
preset() {
	t0=$(now)
	kctl POST /fault '{"type":"reset","count":3,"match":"watch=1"}' >/dev/null
	kctl POST /reset-watches >/dev/null
	sleep "$WINDOW"
	kept "reset mid-watch"
	backoff "reset mid-watch" "$t0"
	recover "reset mid-watch"
}

# --- accepts the request, never answers (requestMs / watchIdleMs deadlines)
phang() {
	t0=$(now)
	kctl POST /fault '{"type":"hang","count":-1}' >/dev/null
	kctl POST /reset-watches >/dev/null
	mismatch
	sleep "$WINDOW"
	kept "hang"
	backoff "hang" "$t0"
	recover "hang"
}

# --- accepts TCP, never even does TLS (connectMs deadline)
pblackhole() {
	t0=$(now)
	kctl POST /fault '{"type":"blackhole","count":-1}' >/dev/null
	kctl POST /reset-watches >/dev/null
	sleep "$WINDOW"
	kept "blackhole"
	backoff "blackhole" "$t0"
	recover "blackhole"
}

# --- 410 Gone on the watch resume: the agent re-GETs
p410() {
	t0=$(now)
	kctl POST /expire >/dev/null
	kctl POST /reset-watches >/dev/null
	check "410: the agent re-GETs the Secret after the expired resume" \
		wait_hit "$t0" "not e['watch'] and e['path'] == '/api/v1/namespaces/kube-system/secrets/$KUBE_SECRET'"
	kept "410"
	recover "410"

}

# --- a body over the ceiling (64 MiB, chunked; the agent's limit is 1 MiB)
poversize() {
	t0=$(now)
	kctl POST /fault '{"type":"oversize","count":-1,"bytes":67108864,"match":"'"$GETSEC"'"}' >/dev/null
	force_get
	check "oversize: the agent ran into it" wait_hit "$t0" "e.get('fault') == 'oversize'"
	sleep "$WINDOW"
	kept "oversize"
	backoff "oversize" "$t0"
	sent=$(oversize_sent "$t0")
	check "oversize: the agent stopped reading early ($sent bytes sent before it closed; < 16 MiB)" \
		[ "$sent" -ge 0 -a "$sent" -lt 16777216 ]
	recover "oversize"
}

# --- the same with a Content-Length (the agent can refuse before reading)
poversize_cl() {
	kctl POST /fault '{"type":"oversize","count":-1,"bytes":67108864,"chunked":false,"match":"'"$GETSEC"'"}' >/dev/null
	t0=$(now)
	force_get
	sleep 3
	kept "oversize, Content-Length"
	recover "oversize, Content-Length"
}

# --- invalid JSON in a GET and in a watch
pbadjson() {
	t0=$(now)
	kctl POST /fault '{"type":"badjson","count":-1,"match":"'"$GETSEC"'"}' >/dev/null
	force_get
	check "invalid JSON (GET): the agent ran into it" wait_hit "$t0" "e.get('fault') == 'badjson'"
	sleep "$WINDOW"
	kept "invalid JSON (GET)"
	backoff "invalid JSON (GET)" "$t0"
	recover "invalid JSON (GET)"
	t0=$(now)
	kctl POST /fault '{"type":"badjson","count":2,"match":"watch=1"}' >/dev/null
	kctl POST /reset-watches >/dev/null
	check "invalid JSON (watch): the agent ran into it" wait_hit "$t0" "e.get('fault') == 'badjson'"
	sleep "$WINDOW"
	kept "invalid JSON (watch)"
	backoff "invalid JSON (watch)" "$t0"
	recover "invalid JSON (watch)"
}

# --- checksum mismatch, then the annotation missing altogether
pmismatch() {
	mismatch wrong
	sleep 2
	kept "checksum mismatch"
	mismatch none
	sleep 2
	kept "checksum annotation missing"
	recover "checksum mismatch"
}

# --- the same annotation again with the data corrected: looked at again
psamesum() {
	local n=$((v + 1)) sum t0 mark
	hello_osc $n >"$W/fixed.yaml"
	sum=$(sha256 "$W/fixed.yaml")
	hello_osc $((n + 100)) >"$W/mm.yaml"
	mark=$(log_mark)
	kube_secret "$W/mm.yaml" "$sum" >/dev/null
	check "same checksum: the wrong data is refused" wait_log "does not match the SHA-256 of osc.yaml" "$mark"
	kept "same checksum, wrong data"
	t0=$(kube_secret "$W/fixed.yaml" "$sum" | jget "d['t']")
	check "same checksum: the corrected data is applied and annotated" \
		kube_wait_annotation $ANN "$sum" "$t0" 30
	v=$n
	good=$(hello_state)
}

# --- osc.yaml in UTF-16 (libyaml reads it; the desired state takes no NUL):
# refused, instead of adopted and then never written
putf16() {
	local mark
	hello_osc $((v + 200)) | iconv -f UTF-8 -t UTF-16 >"$W/utf16.yaml"
	mark=$(log_mark)
	kube_secret "$W/utf16.yaml" >/dev/null
	check "UTF-16: refused, naming the NUL byte" wait_log "rejected: invalid osc.yaml: a NUL byte" "$mark"
	kept "UTF-16"
	recover "UTF-16"
}

# --- 410 as the HTTP status of a watch: the watch after the GET starts
# without a resourceVersion (the GET's may be too old as well)
p410http() {
	t0=$(now)
	kctl POST /fault '{"type":"410","count":1,"match":"watch=1"}' >/dev/null
	kctl POST /reset-watches >/dev/null
	check "HTTP 410: the agent ran into it" wait_hit "$t0" "e.get('fault') == '410'"
	check "HTTP 410: the next watch of it starts without a resourceVersion" \
		wait_hit "$t0" "e['watch'] and not e.get('fault') and 'resourceVersion=' not in e['path']"
	kept "HTTP 410"
	recover "HTTP 410"
}

# --- a Node that answers the patch without the change (a webhook setting
# the fields back): retried with backoff, not in a tight loop
pundo() {
	local n
	kctl POST /fault '{"type":"undo","count":-1,"match":"PATCH "}' >/dev/null
	v=$((v + 1))
	hello_osc $v >"$W/v$v.yaml"
	t0=$(kube_secret "$W/v$v.yaml" | jget "d['t']")
	check "undo: the agent patched" wait_hit "$t0" "e.get('fault') == 'undo'"
	sleep "$WINDOW"
	n=$(kube_count "$t0" "e['method'] == 'PATCH'")
	check "undo: re-patched with backoff ($n PATCHes in ${WINDOW}s, <= 12)" [ "$n" -le 12 ]
	recover "undo"
}

# --- listener down, then up
pdown() {
	kctl POST /down >/dev/null
	mismatch
	sleep "$WINDOW"
	kept "server down"
	kctl POST /up >/dev/null
	t0=$(now)
	recover "server down"
	backoff "after up" "$t0"
}

# --- 401: the token file holds a token the server does not know. The agent
p401() {
	# re-reads the file when it changes, so fixing the file is the recovery.
	cp "$KUBE_DIR/token" "$W/token.good"
	printf 'not-a-valid-token' >"$W/token.new"
	mv "$W/token.new" "$KUBE_DIR/token"
	t0=$(now)
	kctl POST /reset-watches >/dev/null
	check "401: the agent got 401s" wait_hit "$t0" "e['status'] == 401"
	sleep "$WINDOW"
	kept "401"
	backoff "401" "$t0"
	cp "$W/token.good" "$W/token.new"
	mv "$W/token.new" "$KUBE_DIR/token"
	recover "401 (token file fixed)"
}

# --- 403: the agent's identity may no longer read the Secret
p403() {
	kctl POST /policy '{"revokeSecret":"system:serviceaccount:kube-system:node-agent"}' >/dev/null
	t0=$(now)
	kctl POST /reset-watches >/dev/null
	check "403: the agent got 403s" wait_hit "$t0" "e['status'] == 403"
	sleep "$WINDOW"
	kept "403"
	backoff "403" "$t0"
	kctl POST /policy '{"allowSecret":"system:serviceaccount:kube-system:node-agent"}' >/dev/null
	recover "403"
}

# PHASES="p429 p403" runs only those (debugging); default: all, in this order.
for phase in ${PHASES:-p500 p429 preset phang pblackhole p410 p410http poversize poversize_cl pbadjson pmismatch psamesum putf16 pundo pdown p401 p403}; do
	echo "# phase $phase"
	"$phase"
done

check "the agent is still running" kill -0 "$AGENT_PID"
[ "$_fail" -eq 0 ] || dump_logs
finish
