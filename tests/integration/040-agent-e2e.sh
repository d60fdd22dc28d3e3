#!/bin/bash
# End to end: node-agent and cloud-config-exec against the TLS test API
# server, in a private network namespace and a scratch root. The agent
# applies the OSC and annotates the Node; a changed Secret is applied and
# annotated within about a second; a failing apply, an OSC the agent rejects
# and a checksum mismatch leave the last good state and the annotation alone,
# and so does a key file the executor rejects (the run fails in step keys);
# the restart annotation is consumed; idle means no requests but the two
# watches; SIGTERM exits within a second. (Image files need containerd:
# 028-exec-images; without it their apply fails, see 020-exec-files.)
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/kube.sh"
source "$TESTS_DIR/lib/agent.sh"
kube_netns "$@"
agent_require

ANN=checksum/cloud-config-data
annotated() { kube_wait_annotation "$@" >/dev/null; }
# osc N [PATH]: a small OSC whose file content carries N
osc() {
	cat <<-EOF
	apiVersion: extensions.gardener.cloud/v1alpha1
	kind: OperatingSystemConfig
	spec:
	  files:
	  - path: ${2:-/etc/hello}
	    permissions: 420
	    content:
	      inline:
	        data: |
	          hello $1
	  units:
	  - name: hello.service
	    command: start
	    enable: true
	    content: |
	      [Service]
	      Type=oneshot
	      ExecStart=/bin/cat /etc/hello
	    filePaths:
	    - ${2:-/etc/hello}
	EOF
}
W=$(scratch)
osc 1 >"$W/v1.yaml"

if ! agent_e2e_setup "$W/v1.yaml" '{}'; then
	fail "agent applies the first OSC and annotates the Node within 20 s"
	dump_logs
	finish
	exit 1
fi
ok "agent applies the first OSC and annotates the Node within 20 s"
sum1=$(sha256 "$W/v1.yaml")
check "Node annotation $ANN is the Secret's checksum" [ "$(kube_annotation $ANN)" = "$sum1" ]
check "Node label worker.gardener.cloud/kubernetes-version" [ "$(kube_label worker.gardener.cloud/kubernetes-version)" = 1.31.1 ]
check "file written below the scratch root" [ "$(cat "$ROOT/etc/hello" 2>/dev/null)" = "hello 1" ]
check "  ... with the OSC's permissions (420 = 0644)" [ "$(stat -c %a "$ROOT/etc/hello" 2>/dev/null)" = 644 ]
check "unit file written below the scratch root" grep -q 'ExecStart=/bin/cat /etc/hello' "$ROOT/etc/systemd/system/hello.service"
check "desired.json carries the checksum" [ "$(desired_checksum)" = "$sum1" ]
check "desired.json is 0600" [ "$(stat -c %a "$(desired_file)")" = 600 ]
check "result.json says success for that checksum" [ "$(result_field "str(d['success']) + ' ' + d['checksum']")" = "True $sum1" ]

# What the agent asked for, from the server's request log.
reqs=$(kube_requests 0)
sec_path=/api/v1/namespaces/kube-system/secrets
check "GET of the Secret by name" grep -q " GET 200 - $sec_path/$KUBE_SECRET\$" <<<"$reqs"
check "watch of the Secret by fieldSelector, with bookmarks" \
	grep -Eq " GET 200 watch $sec_path\?.*fieldSelector=metadata\.name%3D$KUBE_SECRET" <<<"$(grep allowWatchBookmarks=true <<<"$reqs")"
# Not from the GET's resourceVersion: a restarted API server answers that 410.
first_watch=$(grep -E " watch $sec_path\?" <<<"$reqs" | head -n 1)
check "  ... the first one without a resourceVersion" [ -n "$first_watch" -a "${first_watch/resourceVersion=/}" = "$first_watch" ]
# The Node is read with a list by name, not a GET (Gardener's authorizer
# refuses a GET of a Node that does not exist yet; agent/watch.c).
check "list of its own Node by name (fieldSelector), no GET" \
	sh -c 'printf "%s\n" "$1" | grep -q " GET 200 - /api/v1/nodes?fieldSelector=metadata\.name%3D$2\$" &&
		! printf "%s\n" "$1" | grep -q " GET [0-9]* - /api/v1/nodes/$2\$"' sh "$reqs" "$KUBE_NODE"
check "watch of its own Node by fieldSelector" grep -Eq " GET 200 watch /api/v1/nodes\?.*fieldSelector=metadata\.name%3D$KUBE_NODE" <<<"$reqs"
check "merge-patch of its own Node (200)" grep -q " PATCH 200 - /api/v1/nodes/$KUBE_NODE\$" <<<"$reqs"
check "every PATCH used application/merge-patch+json" \
	[ "$(kube_count 0 "e['method'] == 'PATCH' and (e['contentType'] or '').split(';')[0] != 'application/merge-patch+json'")" -eq 0 ]
check "never a LIST of all nodes" [ "$(kube_count 0 "e['path'].split('?')[0] == '/api/v1/nodes' and 'fieldSelector=metadata.name' not in e['path']")" -eq 0 ]
check "no request failed" [ "$(kube_count 0 "e['status'] not in (200, None)")" -eq 0 ]

# A changed Secret is applied and annotated within about a second.
osc 2 >"$W/v2.yaml"
sum2=$(sha256 "$W/v2.yaml")
t0=$(kube_secret "$W/v2.yaml" | jget "d['t']")
t1=$(kube_wait_annotation $ANN "$sum2" "$t0" 10)
if [ -n "$t1" ]; then
	ms=$(python3 -c "print(round(($t1 - $t0) * 1000))")
	ok "changed Secret annotated after ${ms} ms"
	check "  ... within about a second (< 1500 ms)" [ "$ms" -lt 1500 ]
else
	fail "changed Secret annotated within 10 s"
	dump_logs
fi
check "changed file applied" [ "$(cat "$ROOT/etc/hello" 2>/dev/null)" = "hello 2" ]

# A checksum mismatch is rejected: nothing changes.
osc 3 >"$W/v3.yaml"
t0=$(kube_secret "$W/v3.yaml" wrong | jget "d['t']")
sleep 2
check "checksum mismatch: desired.json keeps the last good checksum" [ "$(desired_checksum)" = "$sum2" ]
check "checksum mismatch: files unchanged" [ "$(cat "$ROOT/etc/hello")" = "hello 2" ]
check "checksum mismatch: annotation unchanged" [ "$(kube_annotation $ANN)" = "$sum2" ]

# An OSC the agent rejects (valid checksum, invalid document): nothing changes.
cp "$TESTS_DIR/fixtures/osc/bad/dotdot-path.yaml" "$W/bad.yaml"
kube_secret "$W/bad.yaml" >/dev/null
sleep 2
check "invalid OSC: desired.json keeps the last good checksum" [ "$(desired_checksum)" = "$sum2" ]
check "invalid OSC: annotation unchanged" [ "$(kube_annotation $ANN)" = "$sum2" ]

# A failing apply: the executor cannot create /etc/blocked/x because
# /etc/blocked is a regular file. The agent writes the desired state, the
# executor reports failure, the annotation stays.
echo "not a directory" >"$ROOT/etc/blocked"
osc 4 /etc/blocked/x >"$W/v4.yaml"
sum4=$(sha256 "$W/v4.yaml")
kube_secret "$W/v4.yaml" >/dev/null
for ((i = 0; i < 100; i++)); do
	[ "$(result_field "d['checksum']")" = "$sum4" ] && break
	sleep 0.1
done
check "failing apply: the agent wrote the new desired state" [ "$(desired_checksum)" = "$sum4" ]
check "failing apply: the executor reported failure for it" [ "$(result_field "str(d['success']) + ' ' + d['checksum']")" = "False $sum4" ]
sleep 2
check "failing apply: the annotation is left alone" [ "$(kube_annotation $ANN)" = "$sum2" ]
# The timer's repair run (here: by hand) succeeds once the obstacle is gone;
# the agent then annotates.
rm -f "$ROOT/etc/blocked"
t0=$(now)
exec_once
check "after a later successful run the agent annotates" annotated $ANN "$sum4" "$t0" 10

# A key file the executor rejects (a malformed line in Gardener's
# /var/lib/gardener-user-authorized-keys): the last good keys stay, the run
# fails with failedStep keys, the Node is not annotated (issue 12).
osc 5 | awk '{ print } /^  files:$/ { print "  - path: /var/lib/gardener-user-authorized-keys"
	print "    permissions: 420"; print "    content:"; print "      inline:"; print "        data: |"
	print "          ssh-ed25519 AAAA-broken previous" }' >"$W/v5.yaml"
sum5=$(sha256 "$W/v5.yaml")
kube_secret "$W/v5.yaml" >/dev/null
for ((i = 0; i < 100; i++)); do
	[ "$(result_field "d['checksum']")" = "$sum5" ] && break
	sleep 0.1
done
check "rejected key file: the executor reported failure in step keys" \
	[ "$(result_field "str(d['success']) + ' ' + d['failedStep'] + ' ' + d['checksum']")" = "False keys $sum5" ]
check "rejected key file: the result names the user and the source" \
	grep -q "keys of gardener: key source /var/lib/gardener-user-authorized-keys rejected" <<<"$(result_field "d['error']")"
check "rejected key file: the other files were applied" [ "$(cat "$ROOT/etc/hello" 2>/dev/null)" = "hello 5" ]
sleep 2
check "rejected key file: the annotation is left alone" [ "$(kube_annotation $ANN)" = "$sum4" ]
# Back to v4 (already applied) for what follows.
kube_secret "$W/v4.yaml" >/dev/null
for ((i = 0; i < 100; i++)); do
	[ "$(result_field "str(d['success']) + ' ' + d['checksum']")" = "True $sum4" ] && break
	sleep 0.1
done
check "back to v4: success again" [ "$(result_field "str(d['success']) + ' ' + d['checksum']")" = "True $sum4" ]

# The restart request: passed to the executor, then the annotation removed.
t0=$(now)
kctl POST /node '{"name":"'"$KUBE_NODE"'","annotations":{"worker.gardener.cloud/restart-systemd-services":"hello.service"}}' >/dev/null
check "restart-systemd-services annotation is removed" \
	annotated worker.gardener.cloud/restart-systemd-services "" "$t0" 10
check "  ... by a merge-patch with null" \
	[ "$(kube_count "$t0" "e['method'] == 'PATCH' and e['status'] == 200")" -ge 1 ]

# Idle: nothing but the long-running watches.
IDLE=${IDLE_SECONDS:-10}
sleep 1
t0=$(now)
sleep "$IDLE"
n_other=$(kube_count "$t0" "not e['watch']")
n_watch=$(kube_count "$t0" "e['watch']")
open=$(kctl GET /watches | jget "len(d['watches'])")
echo "# idle ${IDLE}s: $n_other requests besides watches, $n_watch watch (re)starts, $open watches open, VmRSS $(agent_rss_kb) kB"
check "idle: no request besides the watches" [ "$n_other" -eq 0 ]
check "idle: at most one watch (re)start per resource" [ "$n_watch" -le 2 ]
check "idle: exactly two watches open (Secret and Node)" [ "$open" -eq 2 ]

# SIGTERM: exits cleanly within a second.
agent_stop
check "SIGTERM: exit status 0" [ "$AGENT_RC" -eq 0 ]
check "SIGTERM: gone within 1 s (${AGENT_STOP_MS} ms)" [ "$AGENT_STOP_MS" -lt 1000 ]

[ "$_fail" -eq 0 ] || dump_logs
finish
