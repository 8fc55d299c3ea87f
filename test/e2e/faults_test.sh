#!/usr/bin/env bash
# ctest e2e.faults.CASE[.OTP]: faults done to the target (or the sampler's output) in the middle
# of a command. For each: the tool keeps working or stops with a clear message and its
# documented exit code, the target is never harmed (alive, still running its workload after),
# and what was recorded is written out complete and valid. The harness sends every signal; the
# sampler never does. Cases (faults_test.sh OTP CASE):
#   stop   the VM SIGSTOPped for 2 s during record, top and pstack --all, then SIGCONT
#   halt   erlang:halt(3) in the middle of record and of top: exit 7, the report written
#   disk   record's and pstack --all --json's output on a full tmpfs: exit 1 "No space left on
#          device", no file left (nor a temporary one), an older file at that path untouched
#   two    two record runs on one VM at once: both complete
#   sched  schedulers_online flipped 1 <-> all every 100 ms, dirty CPU schedulers busy, during
#          record (run on OTP 25, 27 and 29: the scheduler arrays differ)
#   churn  modules loaded and purged in a loop during record --lines
#   exec   the VM replaces itself by another program (execve, same pid) in the middle of record
#          and top: exit 7, what was recorded written, the reason said (the SIGKILL in the middle
#          of pstack --all of a million processes is in bench/faults_bench)
#   agent  the agent stopped, its NIF purged and started again in a loop (agent-mode VM) during
#          record, pstack --all and info: each completes or fails with a one-line error and a
#          documented exit code, never crashes, and the VM runs on
# The other cases are the sampler's own handling, the same on every OTP: run on 25.
# Ends with "N passed, M failed". Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

otp=${1:?usage: faults_test.sh OTP CASE}
case_name=${2:?usage: faults_test.sh OTP CASE}
xp_require_sampler

# Waits until the sampler RPID has its perf events open (attached and sampling).
await_perf_fd() {
	local i
	for ((i = 0; i < 300; i++)); do
		xp_has_perf_fd "$1" && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# The VM is unharmed: alive, not stopped, and its busy process still gets CPU.
check_unharmed() {
	local state
	if ! xp_alive "$XP_VM_PID"; then
		xp_fail "$1: the VM is gone"
		return
	fi
	state=$(sed 's/^.*) //' "/proc/$XP_VM_PID/stat" | cut -d' ' -f1)
	if [[ "$state" == T ]]; then
		xp_fail "$1: the VM is left stopped"
		return
	fi
	xp_pass "$1: the VM is alive and running (state $state)"
}

# A collapsed profile that is whole: every line "stack count", xp_faults_busy among them.
check_folded() {
	local f=$1 what=$2 bad
	if [[ ! -s "$f" ]]; then
		xp_fail "$what: no profile written"
		return
	fi
	bad=$(grep -cvE '^.+ [0-9]+$' "$f" || true)
	xp_expect "$what: malformed lines in the profile" 0 "$bad"
	if grep -q 'xp_faults_busy;.*xp_faults:work/2' "$f"; then
		xp_pass "$what: xp_faults_busy's samples are in the profile"
	else
		xp_fail "$what: no xp_faults_busy sample in the profile"
	fi
}

case_stop() {
	local rc rpid
	xp_start_vm "$otp" noagent xp_faults
	# record: stopped for 2 s in a 5 s run, then continued.
	"$XP_SAMPLER" record -d 4 -o "$XP_VM_DIR/stop.folded" "$XP_VM_PID" 2>"$XP_VM_DIR/stop.err" &
	rpid=$!
	await_perf_fd "$rpid" || xp_fail "record never opened its perf events"
	kill -STOP "$XP_VM_PID"
	sleep 2 # the fault's length, not a readiness wait
	kill -CONT "$XP_VM_PID"
	rc=0
	wait "$rpid" || rc=$?
	xp_expect "record across a 2 s SIGSTOP: exit status" 0 "$rc"
	check_folded "$XP_VM_DIR/stop.folded" "record across a SIGSTOP"
	check_unharmed "after record"
	# top -d 3, the same.
	"$XP_SAMPLER" top -d 3 "$XP_VM_PID" >"$XP_VM_DIR/top.out" 2>"$XP_VM_DIR/top.err" &
	rpid=$!
	await_perf_fd "$rpid" || xp_fail "top never opened its perf events"
	kill -STOP "$XP_VM_PID"
	sleep 2
	kill -CONT "$XP_VM_PID"
	rc=0
	wait "$rpid" || rc=$?
	xp_expect "top across a 2 s SIGSTOP: exit status" 0 "$rc"
	if grep -q 'xp_faults:work/2' "$XP_VM_DIR/top.out"; then
		xp_pass "top across a SIGSTOP shows xp_faults:work/2"
	else
		xp_fail "top across a SIGSTOP: no xp_faults:work/2 row"
	fi
	check_unharmed "after top"
	# pstack --all of a stopped VM: every process is read, the schedulers shown as stopped.
	kill -STOP "$XP_VM_PID"
	rc=0
	xp_sampler pstack --all --json "$XP_VM_PID" >"$XP_VM_DIR/ps.json" 2>"$XP_VM_DIR/ps.err" || rc=$?
	kill -CONT "$XP_VM_PID"
	xp_expect "pstack --all of a stopped VM: exit status" 0 "$rc"
	xp_expect "pstack --all of a stopped VM: xp_faults_busy listed" 1 \
		"$(jq '[.processes[] | select(.name == "xp_faults_busy")] | length' "$XP_VM_DIR/ps.json")"
	xp_expect "pstack --all of a stopped VM: nothing skipped" 0 \
		"$(jq '.process_table.skipped | .unreadable + .invalid + .wrong_slot' "$XP_VM_DIR/ps.json")"
	check_unharmed "after pstack --all"
	xp_stop_vm
}

# fault_during FAULT NAME COMMAND...: runs the sampler command and, 1 s into its sampling,
# creates READYFILE.FAULT (the VM halts or execs on it); sets FAULT_RC.
fault_during() {
	local fault=$1 name=$2 rpid
	shift 2
	"$@" >"$XP_VM_DIR/$name.out" 2>"$XP_VM_DIR/$name.err" &
	rpid=$!
	await_perf_fd "$rpid" || xp_fail "$name never opened its perf events"
	sleep 1 # a second of samples before the fault, not a readiness wait
	touch "$XP_VM_READY.$fault"
	FAULT_RC=0
	wait "$rpid" || FAULT_RC=$?
	sed 's/^/    | /' "$XP_VM_DIR/$name.err"
}

case_halt() {
	xp_start_vm "$otp" noagent xp_faults
	fault_during halt record "$XP_SAMPLER" record -d 30 -o "$XP_VM_DIR/halt.folded" "$XP_VM_PID"
	xp_expect "record when the VM calls erlang:halt(3): exit status" 7 "$FAULT_RC"
	check_folded "$XP_VM_DIR/halt.folded" "record cut by erlang:halt/1"
	if grep -q 'exited during the run' "$XP_VM_DIR/record.err"; then
		xp_pass "record says the VM exited during the run"
	else
		xp_fail "record does not say why it stopped"
	fi
	xp_stop_vm
	xp_start_vm "$otp" noagent xp_faults
	fault_during halt top "$XP_SAMPLER" top -d 30 "$XP_VM_PID"
	xp_expect "top when the VM calls erlang:halt(3): exit status" 7 "$FAULT_RC"
	if grep -q 'xp_faults:work/2' "$XP_VM_DIR/top.out"; then
		xp_pass "top cut by erlang:halt/1 prints its table"
	else
		xp_fail "top cut by erlang:halt/1: no table with xp_faults:work/2"
	fi
	xp_stop_vm
}

case_disk() {
	local mnt rc
	mnt=$(mktemp -d)
	mount -t tmpfs -o size=64k,mode=755 xp-faults "$mnt" 2>/dev/null ||
		{ rmdir "$mnt"; xp_skip "cannot mount a tmpfs (needs root)"; }
	xp_defer "umount '$mnt'; rmdir '$mnt'"
	echo "older profile 1" >"$mnt/old.folded"
	dd if=/dev/zero of="$mnt/pad" bs=4k count=64 2>/dev/null || true # fill it
	xp_start_vm "$otp" noagent xp_faults
	rc=0
	xp_sampler record -d 1 -o "$mnt/new.folded" "$XP_VM_PID" 2>"$XP_VM_DIR/disk.err" || rc=$?
	xp_expect "record onto a full disk: exit status" 1 "$rc"
	if grep -q "cannot write $mnt/new.folded: No space left on device" "$XP_VM_DIR/disk.err"; then
		xp_pass "record onto a full disk says 'No space left on device'"
	else
		xp_fail "record onto a full disk: $(tail -n 1 "$XP_VM_DIR/disk.err")"
	fi
	xp_expect "record onto a full disk: files left besides old.folded and pad" "" \
		"$(find "$mnt" -mindepth 1 ! -name old.folded ! -name pad -printf '%f ')"
	rc=0
	xp_sampler record -d 1 -o "$mnt/old.folded" "$XP_VM_PID" 2>>"$XP_VM_DIR/disk.err" || rc=$?
	xp_expect "record over an older file on a full disk: exit status" 1 "$rc"
	xp_expect "the older file is untouched" "older profile 1" "$(cat "$mnt/old.folded")"
	# pstack's JSON goes to the file from the writer's own buffer (outfile__write), not stdio.
	rc=0
	xp_sampler pstack --all --json -o "$mnt/all.json" "$XP_VM_PID" 2>"$XP_VM_DIR/disk.err" ||
		rc=$?
	xp_expect "pstack --all --json onto a full disk: exit status" 1 "$rc"
	if grep -q "cannot write $mnt/all.json: No space left on device (nothing written)" \
		"$XP_VM_DIR/disk.err"; then
		xp_pass "pstack --all --json onto a full disk says 'No space left on device'"
	else
		xp_fail "pstack --all --json onto a full disk: $(tail -n 1 "$XP_VM_DIR/disk.err")"
	fi
	xp_expect "pstack onto a full disk: files left besides old.folded and pad" "" \
		"$(find "$mnt" -mindepth 1 ! -name old.folded ! -name pad -printf '%f ')"
	check_unharmed "after the full disk"
	xp_stop_vm
}

case_two() {
	local a b rca=0 rcb=0
	xp_start_vm "$otp" noagent xp_faults
	"$XP_SAMPLER" record -d 4 -o "$XP_VM_DIR/a.folded" "$XP_VM_PID" 2>"$XP_VM_DIR/a.err" &
	a=$!
	"$XP_SAMPLER" record -d 4 -o "$XP_VM_DIR/b.folded" "$XP_VM_PID" 2>"$XP_VM_DIR/b.err" &
	b=$!
	wait "$a" || rca=$?
	wait "$b" || rcb=$?
	xp_expect "first of two samplers at once: exit status" 0 "$rca"
	xp_expect "second of two samplers at once: exit status" 0 "$rcb"
	check_folded "$XP_VM_DIR/a.folded" "first of two samplers"
	check_folded "$XP_VM_DIR/b.folded" "second of two samplers"
	check_unharmed "after two samplers"
	xp_stop_vm
}

case_sched() {
	local rc flips0 flips1 dropped
	xp_start_vm "$otp" noagent xp_faults -xp_faults sched
	flips0=$(cat "$XP_VM_READY.flips" 2>/dev/null || echo 0)
	rc=0
	xp_sampler record -d 3 -o "$XP_VM_DIR/sched.folded" "$XP_VM_PID" 2>"$XP_VM_DIR/sched.err" || rc=$?
	sed 's/^/    | /' "$XP_VM_DIR/sched.err"
	flips1=$(cat "$XP_VM_READY.flips")
	xp_expect "record while schedulers_online flips: exit status" 0 "$rc"
	echo "FIGURE: OTP $otp: $((flips1 - flips0)) schedulers_online flips during the recording"
	if ((flips1 - flips0 >= 5)); then
		xp_pass "schedulers_online went down and up $((flips1 - flips0)) times"
	else
		xp_fail "schedulers_online flipped only $((flips1 - flips0)) times"
	fi
	check_folded "$XP_VM_DIR/sched.folded" "record while schedulers_online flips"
	if grep -q 'xp_faults:dirty/0' "$XP_VM_DIR/sched.folded"; then
		xp_pass "the dirty schedulers' work is in the profile (xp_faults:dirty/0)"
	else
		xp_fail "no sample of xp_faults:dirty/0 on a dirty scheduler"
	fi
	dropped=$(sed -n 's/^extrospect: \([0-9]*\) samples.* \([0-9]*\) dropped.*$/\2 \1/p' \
		"$XP_VM_DIR/sched.err" | awk '{ printf "%d", $2 ? 100 * $1 / $2 : 100 }')
	if [[ -n "$dropped" ]] && ((dropped < 10)); then
		xp_pass "dropped samples: ${dropped}% (< 10%)"
	else
		xp_fail "dropped samples: ${dropped:-?}% (must be < 10%)"
	fi
	check_unharmed "after the flips"
	xp_stop_vm
}

case_churn() {
	local rc
	xp_start_vm "$otp" noagent xp_purge
	rc=0
	xp_sampler record --lines -d 4 -o "$XP_VM_DIR/churn.folded" "$XP_VM_PID" \
		2>"$XP_VM_DIR/churn.err" || rc=$?
	sed 's/^/    | /' "$XP_VM_DIR/churn.err"
	xp_expect "record --lines while modules are loaded and purged: exit status" 0 "$rc"
	xp_expect "record --lines under churn: malformed lines" 0 \
		"$(grep -cvE '^.+ [0-9]+$' "$XP_VM_DIR/churn.folded" || true)"
	if grep -qE 'xp_purge_dyn:burn/2 \(xp_purge_dyn[^)]*:[0-9]+\)' "$XP_VM_DIR/churn.folded"; then
		xp_pass "code loaded after attach is named with its line"
	else
		xp_fail "no xp_purge_dyn:burn/2 frame with a line: $(grep -o 'xp_purge_dyn[^;]*' "$XP_VM_DIR/churn.folded" | sort | uniq -c | head -n 3)"
	fi
	check_unharmed "after the churn"
	xp_stop_vm
}

# run_checked NAME COMMAND...: the command completes (0) or fails cleanly: a documented exit code
# (1-7) and one "extrospect: " line; a crash (signal) or a hang fails. Sets RUN_RC.
run_checked() {
	local name=$1
	shift
	RUN_RC=0
	"$@" >"$XP_VM_DIR/$name.out" 2>"$XP_VM_DIR/$name.err" || RUN_RC=$?
	if ((RUN_RC == 0)); then
		xp_pass "$name during agent churn: exit 0"
	elif ((RUN_RC <= 7)) && grep -q '^extrospect: ' "$XP_VM_DIR/$name.err"; then
		xp_pass "$name during agent churn: exit $RUN_RC, $(grep -m1 '^extrospect: ' "$XP_VM_DIR/$name.err")"
	else
		xp_fail "$name during agent churn: exit $RUN_RC: $(tail -n 2 "$XP_VM_DIR/$name.err")"
	fi
}

case_agent() {
	local c0 c1 i
	xp_start_vm "$otp" agent xp_faults -xp_faults agent
	c0=$(cat "$XP_VM_READY.agent" 2>/dev/null || echo 0)
	for i in 1 2 3; do
		run_checked "info.$i" xp_sampler info --json "$XP_VM_PID"
	done
	run_checked record xp_sampler record -d 3 -o "$XP_VM_DIR/agent.folded" "$XP_VM_PID"
	((RUN_RC != 0)) || check_folded "$XP_VM_DIR/agent.folded" "record during agent churn"
	run_checked pstack xp_sampler pstack --all --json "$XP_VM_PID"
	((RUN_RC != 0)) || xp_expect "pstack --all during agent churn: valid JSON" true \
		"$(jq '.process_table.listed > 10' "$XP_VM_DIR/pstack.out")"
	c1=$(cat "$XP_VM_READY.agent")
	echo "FIGURE: OTP $otp: $((c1 - c0)) agent stop/purge/start cycles during the commands"
	if ((c1 - c0 >= 5)); then
		xp_pass "the agent was stopped, purged and started $((c1 - c0)) times"
	else
		xp_fail "the agent cycled only $((c1 - c0)) times"
	fi
	check_unharmed "after the agent churn"
	xp_stop_vm
}

# The exec NIF, built with the host's erl_nif.h (as sched_test.sh's), copied where the VM sees it.
exec_nif() {
	local inc so
	command -v cc >/dev/null || xp_skip "no C compiler to build the test NIF"
	inc=$(erl -noshell -eval 'io:put_chars(filename:join([code:root_dir(), "usr", "include"])), halt().' </dev/null) ||
		xp_skip "host erl not found: cannot find erl_nif.h"
	so=$(mktemp -d)/xp_exec_nif.so
	xp_defer "rm -rf '${so%/*}'"
	cc -O2 -fPIC -shared -I"$inc" -o "$so" "$XP_REPO/test/targets/xp_exec_nif.c" ||
		xp_die "building the exec NIF failed"
	EXEC_LIB=/tmp/xp_exec_$$.so
	cp "$so" "$EXEC_LIB"
	xp_defer "rm -f '$EXEC_LIB'"
}

# exec_during NAME COMMAND...: the VM execs /bin/sleep 1 s into the command; sets FAULT_RC.
exec_during() {
	local name=$1
	shift
	xp_start_vm "$otp" noagent xp_faults -xp_faults exec -xp_faults_so "$EXEC_LIB"
	fault_during exec "$name" "$@" "$XP_VM_PID"
	if grep -q "exited during the run: it exec'd another program" "$XP_VM_DIR/$name.err"; then
		xp_pass "$name says the VM exec'd another program"
	else
		xp_fail "$name does not say the VM exec'd another program"
	fi
	xp_stop_vm
}

case_exec() {
	exec_nif
	exec_during record "$XP_SAMPLER" record -d 20 -o /tmp/xp-faults-exec-$$.folded
	xp_defer "rm -f /tmp/xp-faults-exec-$$.folded"
	xp_expect "record when the VM execs: exit status" 7 "$FAULT_RC"
	check_folded /tmp/xp-faults-exec-$$.folded "record cut by an exec"
	exec_during top "$XP_SAMPLER" top -d 20
	xp_expect "top when the VM execs: exit status" 7 "$FAULT_RC"
}

case "$case_name" in
stop | halt | disk | two | sched | churn | agent | exec) "case_$case_name" ;;
*) xp_die "unknown case '$case_name'" ;;
esac
xp_summary
