#!/bin/bash
# cloud-config-exec killed with SIGKILL at random instants while it applies
# one OSC version over the other (and back), with no test hook: real timing,
# random sleeps of 0..1x the measured apply time. After every kill every
# file must be exactly the old or the new version; every few kills a run to
# completion must produce exactly the target OSC; at the end the tree equals
# the new OSC, files only the old version had are gone, no temporary file is
# left, last-applied and result.json name the new checksum.
# KILLS sets the number of kills (CI 60, make soak 200: tests/lib/common.sh sized).
source "$TESTS_DIR/lib/common.sh"
source "$TESTS_DIR/lib/exec.sh"
require_root
CHECK=$TESTS_DIR/lib/exec-check.py
KILLS=${KILLS:-$(sized 60 200)}

W=$(scratch)
exec_init "$W"
R=$W/root
ST=$R/var/lib/cloud-config-exec
python3 "$GEN_OSC" --files 60 --units 8 --size 4096 >"$W/v1.json"
python3 "$GEN_OSC" --files 60 --units 8 --size 4096 --version 2 --drop 5,6,7 >"$W/v2.json"
sum2=$(sha256sum <"$W/v2.json" | cut -d' ' -f1)

check "initial apply of v1" cce "$R" apply "$W/v1.json"

# The apply time v1 -> v2 (median of three), in microseconds.
times=()
for i in 1 2 3; do
	t0=$(date +%s%N)
	cce "$R" apply "$W/v2.json" 2>/dev/null
	t1=$(date +%s%N)
	cce "$R" apply "$W/v1.json" 2>/dev/null
	times+=($(( (t1 - t0) / 1000 )))
done
# The shortest of three: a time measured during a burst of load elsewhere
# would put most kills after the end of a quieter machine's apply.
T=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 1p)
echo "# apply v1 -> v2 takes ${T} us (shortest of 3); kills at 0..${T} us"

# KILLS kills, and more (up to twice as many) while fewer than half of them
# landed mid-apply: the machine's load changes the apply time under the test.
kills=0 mid=0 landed_done=0 violations=0 tgt=v1
for ((i = 1; i <= KILLS || (mid < KILLS / 2 && i <= 2 * KILLS); i++)); do
	# Alternate the target: each kill interrupts a transition from
	# whatever mix the previous kill left towards the other version.
	if [ "$tgt" = v1 ]; then tgt=v2 other=v1; else tgt=v1 other=v2; fi
	delay=$(( (RANDOM * 32768 + RANDOM) % (T + 1) ))
	"$CCE" --root "$R" --config "$W/config.json" --no-systemd --log journal apply "$W/$tgt.json" &
	pid=$!
	sleep "$(printf '%d.%06d' $((delay / 1000000)) $((delay % 1000000)))"
	kill -9 "$pid" 2>/dev/null
	{ wait "$pid"; } 2>/dev/null
	rc=$?
	kills=$((kills + 1))
	out=$(python3 "$CHECK" either "$R" "$W/v1.json" "$W/v2.json")
	if [ $? -ne 0 ]; then
		violations=$((violations + 1))
		echo "# kill $i after ${delay}us: $out"
	fi
	if [ $rc -eq 137 ]; then
		# Killed while running: mid-apply when the tree or the records
		# were not yet at the target.
		if [ "$out" = mixed ] || ! grep -q "sha256=$(sha256sum <"$W/$tgt.json" | cut -d' ' -f1)" \
			"$ST/last-applied.yaml" 2>/dev/null; then
			mid=$((mid + 1))
		fi
	else
		landed_done=$((landed_done + 1))
	fi
	# Every fifth kill: the next run completes whatever was interrupted.
	if [ $((i % 5)) -eq 0 ]; then
		cce "$R" apply "$W/$tgt.json" 2>/dev/null
		if ! python3 "$CHECK" exact "$R" "$W/$tgt.json" "$W/$other.json" >"$W/exact.out"; then
			violations=$((violations + 1))
			echo "# after kill $i, a completing run left:"
			head -5 "$W/exact.out"
		fi
	fi
done
echo "# kills: $kills, landed mid-apply: $mid, process had already finished: $landed_done"
check "at least $KILLS kills" test "$kills" -ge "$KILLS"
check "at least $((KILLS / 2)) kills landed mid-apply ($mid of $kills)" test "$mid" -ge $((KILLS / 2))
check "after every kill each file was the old or the new version ($violations violations)" test "$violations" -eq 0

# Final: complete to v2 and compare exactly.
check "final apply of v2 completes" cce "$R" apply "$W/v2.json"
check "final tree equals v2 (files dropped by v2 gone, no temporaries)" python3 "$CHECK" exact "$R" "$W/v2.json" "$W/v1.json"
check "last-applied is v2" grep -q "sha256=$sum2" "$ST/last-applied.yaml"
check "result: success for v2" bash -c "grep -q '\"success\":[[:space:]]*true' '$ST/result.json' && grep -q '$sum2' '$ST/result.json'"
check "no progress record left" bash -c "! grep -q '\"progress\"' '$ST/state.json'"
check "no temporaries in the state dir" test -z "$(ls -A "$ST" | grep '^\.#')"
check "unit files complete" bash -c "for u in $R/etc/systemd/system/na-test-u*.service; do grep -q ExecStart=/bin/true \$u || exit 1; done"
finish
