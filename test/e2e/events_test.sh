#!/usr/bin/env bash
# ctest e2e.events.OTP.MODE: `extrospect events -d S PID` against the xp_events target on OTP
# 25|27|29, with the agent (MODE agent) or without it (noagent: exit status 6 and the reason,
# then the same counts with --source uprobes, refused on 29).
# The oracle: the target's own counts, each worker's logged after each tick against
# CLOCK_MONOTONIC (the clock of the agent's records), so that each rate is the workers' own over
# the exact window events recorded (its JSON's window_ns): the spawner's spawn and exit rates,
# the two senders' send rates within 5 %; the collector's explicit collections (major) within
# 5 % of its rate, their median pause within 25 % of its own timing (monotonic time around
# erlang:garbage_collect/0); every percentile list ordered; no record lost at this rate.
# With --slowest 20, xp_ev_gc's slowest collections carry stacks sampled during them, at
# erlang:garbage_collect/0 under xp_events:collector/4.
# Then the sampler killed mid-run (SIGKILL) leaves no trace flag set once the lease runs out,
# and SIGINT ends the run with a report and clears them too (the target reports whether any
# flag or trace session is set on its processes, from inside); a run started just after a kill
# waits out the killed one's lease and reports (exit 0). Last, with a tracer of the
# target's own on a process (as a user's dbg): OTP 25 refuses (exit 10, and says why), OTP 27+
# runs beside it and leaves its flags as they were.
# Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

otp=${1:?usage: events_test.sh 25|27|29 agent|noagent}
mode=${2:?usage: events_test.sh 25|27|29 agent|noagent}

oracle() { cat "$XP_VM_DIR/events_oracle.txt"; }
# FIELD (2 pid, 3 count, 4 ms, 5 extra: xp_ev_gc's median pause) of worker NAME in an oracle copy.
ofield() { awk -v n="$2" -v f="$3" '$1 == n { print $f }' "$1"; }
recording() { grep -q '^events: recording for ' "$1" 2>/dev/null; }
traced_is() { [[ "$(oracle 2>/dev/null | awk '$1 == "traced" { print $2 }')" == "$1" ]]; }

# Is got within pct % of want (both decimal)?
within() { awk -v g="$1" -v w="$2" -v p="$3" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w > 0 && d <= w * p / 100) }'; }

# The rate of worker NAME over events' own window (CLOCK_MONOTONIC ns, from its JSON), from the
# counts the worker logged after each of its ticks (hist.txt): count at the end minus count at
# the start, each the last logged at or before that instant.
rate() {
	awk -v n="$1" -v s="$(jq .window_ns.start "$json")" -v e="$(jq .window_ns.end "$json")" '
		$1 == n && $2 <= s { c0 = $3 }
		$1 == n && $2 <= e { c1 = $3 }
		END { printf "%.3f", (c1 - c0) * 1e9 / (e - s) }' "$XP_VM_DIR/hist.txt"
}

# jq: the per_second of the process named $2 in kind $1.
jrate() { jq -r --arg k "$1" --arg n "$2" '.[$k].processes[] | select(.name == $n) | .per_second' "$json"; }

check_rate() {
	local what=$1 got=$2 want=$3
	if [[ "$got" =~ ^[0-9.]+$ ]] && within "$got" "$want" 5; then
		xp_pass "$what: $got/s, the target's own $want/s (within 5 %)"
	else
		xp_fail "$what: $got/s, the target's own $want/s"
	fi
}

# A median pause against the target's own timing of its collections around
# erlang:garbage_collect/0: at most 25 % over the median of that timing, at least 75 % of its
# least. The target's timing also holds what lies outside the collection's two trace events (the
# BIF's call, the trace messages made), and that part grows under load: on a quiet machine ours
# is 5-17 % under the median (80-88 against 86-104 us, OTP 25/27/29), and in CI's run at 41a4ca4
# the median grew to 131 us against our 84 (2 December 2026). The least is the call least
# disturbed: ours was 1.00-1.23 times it, quiet or with two busy loops beside (75-81 us).
check_pause() {
	local what=$1 got=$2 want=$3 least=$4
	if [[ "$got" =~ ^[0-9.]+$ ]] && awk -v g="$got" -v w="$want" -v l="$least" \
		'BEGIN { exit !(w > 0 && l > 0 && g <= w * 1.25 && g >= l * 0.75) }'; then
		xp_pass "$what $got us, its own timing $want us, least $least us (at most 25 % over the median, at least 3/4 of the least)"
	else
		xp_fail "$what: $got us, its own timing $want us, least $least us"
	fi
}

check_rates() {
	local o2=$1 sp fast slow gc got
	sp=$(rate xp_ev_spawner)
	fast=$(rate xp_ev_fast)
	slow=$(rate xp_ev_slow)
	gc=$(rate xp_ev_gc)
	check_rate "spawns of xp_ev_spawner" "$(jrate spawn xp_ev_spawner)" "$sp"
	check_rate "exits of the processes xp_ev_spawner spawned" "$(jrate exit xp_ev_spawner)" "$sp"
	check_rate "sends of xp_ev_fast" "$(jrate send xp_ev_fast)" "$fast"
	check_rate "sends of xp_ev_slow" "$(jrate send xp_ev_slow)" "$slow"
	got=$(jq -r '.gc.processes[] | select(.name == "xp_ev_gc") | .major.count / $s' \
		--argjson s "$(jq .seconds "$json")" "$json")
	check_rate "major collections of xp_ev_gc" "$got" "$gc"
	check_pause "median major pause of xp_ev_gc" "$(jq -r '.gc.processes[] |
		select(.name == "xp_ev_gc") | .major.p50_us' "$json")" "$(ofield "$o2" xp_ev_gc 5)" \
		"$(ofield "$o2" xp_ev_gc 6)"
	# 1 in 4 children exits {shutdown, x}: the shutdown class is a quarter of the spawner's.
	got=$(jq -r '.exit.classes.shutdown / .seconds' "$json")
	check_rate "exits of class shutdown" "$got" "$(awk -v r="$sp" 'BEGIN { printf "%.3f", r / 4 }')"
}

check_ordered() {
	xp_expect "every percentile list ordered (p50 <= p90 <= p99 <= p999 <= max)" true \
		"$(jq '[.. | objects | select(has("p50_us") and .p50_us != null) |
			.p50_us <= .p90_us and .p90_us <= .p99_us and .p99_us <= .p999_us and
			.p999_us <= .max_us] | all' "$json")"
	xp_expect "the agent's verified Process.state: run-queue waits measured" true \
		"$(jq -r .sched.waits_measured "$json")"
	xp_expect "distributions present (send, gc, sched)" "true true true" \
		"$(jq -r '[.send.p50_us, .gc.p50_us, .sched.p50_us] | map(. != null) | map(tostring) |
			join(" ")' "$json")"
	xp_expect "records lost" "0 0" "$(jq -r '"\(.records.lost_overwritten) \(.records.lost_torn)"' "$json")"
	xp_expect "top-level keys" '["exit","gc","sched","send","spawn"]' \
		"$(jq -c '[keys[] | select(. == "spawn" or . == "exit" or . == "send" or . == "gc" or
			. == "sched")]' "$json")"
}

# --slowest with stacks: xp_ev_gc's explicit collections (erlang:garbage_collect/0 called from
# xp_events:collector/4) are among the slowest, and some were sampled during them; a walked
# stack stands exactly where the process called it, one not walked says why (CI's OTP 27 run
# once had only "native unwind stopped: no_cfi" ones: the samples in the tracer's gc_*_start
# call). Every stack shown is within 10 ms of its event.
check_slowest_stacks() {
	local out=$XP_VM_DIR/slowest.json rc=0 during walked bad far
	xp_sampler events -d 4 --slowest 20 --json "$XP_VM_PID" >"$out" 2>"$XP_VM_DIR/slowest.err" ||
		rc=$?
	xp_expect "exit status of 'events --slowest 20 --json'" 0 "$rc"
	during=$(jq '[.slowest.gc[] | select(.name == "xp_ev_gc" and .stack.sampled == "during")] |
		length' "$out")
	walked=$(jq '[.slowest.gc[] | select(.name == "xp_ev_gc" and .stack.sampled == "during" and
		(.stack.frames[0] | startswith("[") | not))] | length' "$out")
	bad=$(jq -c '[.slowest.gc[] | select(.name == "xp_ev_gc" and .stack.sampled == "during") |
		select(.stack.frames[0] | startswith("[Erlang callers unknown: ") | not) |
		select([.stack.frames[] | select(startswith("global::") | not)][0:2] !=
		["erlang:garbage_collect/0", "xp_events:collector/4"])]' "$out")
	far=$(jq '[.slowest[][] | select(.stack != null and .stack.gap_us > 10000)] | length' "$out")
	echo "FIGURE: OTP $otp: $during of the slowest collections of xp_ev_gc sampled during them, $walked walked"
	if [[ "$during" =~ ^[0-9]+$ ]] && ((during > 0)); then
		xp_pass "slowest collections of xp_ev_gc with a stack sampled during them: $during"
	else
		xp_fail "no slowest collection of xp_ev_gc sampled during it: $(head -c 1500 "$out")"
	fi
	# in_gc is the state word's: the tracer's gc_major_start record is written before the VM
	# sets ERTS_PSFLG_GC, so a sample in between is during the event, in the BIF, not yet in it.
	echo "FIGURE: OTP $otp: of those, $(jq '[.slowest.gc[] | select(.name == "xp_ev_gc" and
		.stack.sampled == "during" and .stack.in_gc)] | length' "$out") with the state's GC flag set"
	# A sample whose callers could not be walked says so ("[Erlang callers unknown: ...]", one
	# frame; a walked one is shown first when there is one); every other is exactly this.
	xp_expect "those stacks: at erlang:garbage_collect/0 in xp_events:collector/4" \
		"[]" "$bad"
	xp_expect "stacks further than 10 ms from their event" 0 "$far"
}

# Start a long run in the background, wait for the flags, send SIG, wait for them to go.
check_stop() {
	local sig=$1 budget=$2 out=$XP_VM_DIR/events-$1.txt sp rc=0 t0
	"$XP_SAMPLER" events -d 60 "$XP_VM_PID" >"$out" 2>&1 &
	sp=$!
	# Its own flags, not those of a run killed just before whose lease has not run out yet: it
	# says when it records.
	if ! xp_await 15 recording "$out" || ! xp_await 15 traced_is true; then
		xp_fail "SIG$sig: the run never recorded, or the target never saw a flag set: $(head -c 600 "$out")"
		kill -KILL "$sp" 2>/dev/null || true
		return
	fi
	t0=$SECONDS
	if ! kill -"$sig" "$sp" 2>/dev/null; then
		wait "$sp" || rc=$?
		xp_fail "SIG$sig: events -d 60 had exited (status $rc) before the signal: $(head -c 800 "$out")"
		return
	fi
	wait "$sp" || rc=$?
	if xp_await "$budget" traced_is false; then
		xp_pass "SIG$sig mid-run: no trace flag left on the target's processes ($((SECONDS - t0)) s)"
	else
		xp_fail "SIG$sig mid-run: trace flags still set after ${budget} s"
	fi
	if [[ "$sig" == INT ]]; then
		xp_expect "exit status after SIGINT" 0 "$rc"
		if grep -q "^spawn " "$out"; then
			xp_pass "SIGINT: the report of the time read was printed"
		else
			xp_fail "SIGINT: no report; output: $(head -c 600 "$out")"
		fi
	fi
}

# A run started right after another was killed (its lease not yet run out) waits for that lease
# and runs, instead of refusing (CI: "another sampler is reading events", exit 10, once).
check_after_kill() {
	local out=$XP_VM_DIR/events-after.json err=$XP_VM_DIR/events-after.err sp rc=0
	"$XP_SAMPLER" events -d 60 "$XP_VM_PID" >"$out.first" 2>&1 &
	sp=$!
	if ! xp_await 15 recording "$out.first" || ! xp_await 15 traced_is true; then
		xp_fail "after a kill: the target never saw a trace flag set"
		kill -KILL "$sp" 2>/dev/null || true
		return
	fi
	kill -KILL "$sp"
	wait "$sp" 2>/dev/null || true
	xp_sampler events -d 1 --json "$XP_VM_PID" >"$out" 2>"$err" || rc=$?
	xp_expect "exit status of 'events -d 1' started just after another was killed" 0 "$rc"
	xp_expect "it waited for the killed one's lease (no 'another sampler')" 0 \
		"$(grep -c 'another sampler' "$err" || true)"
	xp_expect "its report's kinds" '["exit","gc","sched","send","spawn"]' \
		"$(jq -c '[keys[] | select(. == "spawn" or . == "exit" or . == "send" or . == "gc" or
			. == "sched")]' "$out" 2>/dev/null)"
	xp_await 3 traced_is false || xp_fail "after a kill: trace flags still set 3 s after the second run"
}

# A tracer of the target's own on the sink (as a user's dbg): OTP 25 refuses with exit 10 and
# says why; OTP 27+ traces in a session of its own and leaves the other tracer's flags as they were.
other_is() { [[ "$(oracle 2>/dev/null | awk '$1 == "other_tracer" { print $2 }')" == "$1" ]]; }
sink_flags() { oracle | awk '$1 == "sink_flags" { print $2 }'; }
check_other_tracer() {
	local rc=0 err=$XP_VM_DIR/other.err
	touch "$XP_VM_DIR/other_tracer"
	xp_await 10 other_is true || xp_die "the target did not set its own tracer"
	xp_sampler events -d 1 --json "$XP_VM_PID" >"$XP_VM_DIR/other.json" 2>"$err" || rc=$?
	if [[ "$otp" == 25 ]]; then
		xp_expect "exit status with another tracer set (OTP 25)" 10 "$rc"
		if grep -q "another tracer is set" "$err"; then
			xp_pass "OTP 25 refuses while another tracer is set, and says so"
		else
			xp_fail "OTP 25 with another tracer: $(cat "$err")"
		fi
	else
		xp_expect "exit status with another tracer set (a session of its own)" 0 "$rc"
		xp_expect "the other tracer's flags on the sink, after events" "[send]" "$(sink_flags)"
	fi
	rm -f "$XP_VM_DIR/other_tracer"
	xp_await 10 other_is false || xp_fail "the target did not clear its own tracer"
}

# --source uprobes, on the VM without the agent: the rates as for the tracer (5 %), xp_ev_gc's collections counted
# and their median pause within 25 % of its own timing (minor and major are not told, so the
# total); OTP 29's stripped beam.smp: exit 6 and the reason.
check_uprobes() {
	local rc=0
	"$XP_SAMPLER" events --source bogus "$XP_VM_PID" >/dev/null 2>"$XP_VM_DIR/bad.err" || rc=$?
	xp_expect "exit status of 'events --source bogus'" 2 "$rc"
	xp_said "'events --source bogus' says what is expected" "for option --source (tracer or uprobes)" \
		"$XP_VM_DIR/bad.err"
	rc=0
	xp_sampler events -d 5 --json --top 50 --source uprobes "$XP_VM_PID" >"$json" \
		2>"$XP_VM_DIR/events.err" || rc=$?
	oracle >"$XP_VM_DIR/o2"
	touch "$XP_VM_DIR/dump"
	xp_await 10 test ! -e "$XP_VM_DIR/dump" || xp_die "the target did not dump its counts"
	if [[ "$otp" == 29 ]]; then
		xp_expect "exit status of 'events --source uprobes' on a stripped beam.smp" 6 "$rc"
		xp_said "uprobes on a stripped beam.smp: refused, and says why" \
			"not in beam.smp's symbols" "$XP_VM_DIR/events.err"
		return
	fi
	xp_expect "exit status of 'events --source uprobes'" 0 "$rc"
	xp_expect "mechanism" uprobes "$(jq -r .mechanism "$json")"
	check_rate "spawns of xp_ev_spawner (uprobes)" "$(jrate spawn xp_ev_spawner)" "$(rate xp_ev_spawner)"
	check_rate "sends of xp_ev_fast (uprobes)" "$(jrate send xp_ev_fast)" "$(rate xp_ev_fast)"
	check_rate "sends of xp_ev_slow (uprobes)" "$(jrate send xp_ev_slow)" "$(rate xp_ev_slow)"
	# An exited child is often freed before its pid is read: exits are counted VM-wide (the
	# spawner's children are nearly all of them), not per parent.
	check_rate "exits VM-wide (uprobes; the spawner's children)" \
		"$(jq -r '.exit.per_second' "$json")" "$(rate xp_ev_spawner)"
	check_pause "median pause of xp_ev_gc (uprobes)" "$(jq -r '.gc.processes[] |
		select(.name == "xp_ev_gc") | .p50_us' "$json")" "$(ofield "$XP_VM_DIR/o2" xp_ev_gc 5)" \
		"$(ofield "$XP_VM_DIR/o2" xp_ev_gc 6)"
	check_rate "collections of xp_ev_gc (uprobes)" \
		"$(jq -r '.gc.processes[] | select(.name == "xp_ev_gc") | .per_second' "$json")" \
		"$(rate xp_ev_gc)"
}

xp_require_sampler
xp_start_vm "$otp" "$mode" xp_events
json=$XP_VM_DIR/events.json
xp_await 10 test -s "$XP_VM_DIR/events_oracle.txt" || xp_die "the target wrote no oracle"

if [[ "$mode" == noagent ]]; then
	rc=0
	xp_sampler events -d 1 "$XP_VM_PID" >/dev/null 2>"$XP_VM_DIR/events.err" || rc=$?
	xp_expect "exit status without the agent" 6 "$rc"
	xp_said "without the agent it says so" "events needs the extrospect agent" \
		"$XP_VM_DIR/events.err"
	check_uprobes
	xp_summary
	exit
fi

rc=0
xp_sampler events -d 5 --json --top 50 "$XP_VM_PID" >"$json" 2>"$XP_VM_DIR/events.err" || rc=$?
oracle >"$XP_VM_DIR/o2"
touch "$XP_VM_DIR/dump"
xp_await 10 test ! -e "$XP_VM_DIR/dump" || xp_die "the target did not dump its counts"
xp_expect "exit status of 'events -d 5 --json'" 0 "$rc"
if jq -e .spawn "$json" >/dev/null 2>&1; then
	check_rates "$XP_VM_DIR/o2"
	check_ordered
else
	xp_fail "'events --json' printed no report; stderr: $(head -c 2000 "$XP_VM_DIR/events.err")"
fi
check_slowest_stacks
# The lease is 1 s and the agent looks every 100 ms: 3 s is ample, and fails a leak.
check_stop KILL 3
check_stop INT 3
check_after_kill
check_other_tracer
xp_summary
