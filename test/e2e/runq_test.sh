#!/usr/bin/env bash
# ctest e2e.runq.OTP.MODE: record --ring --trigger runq=N against test/targets/xp_runq.erl (+S 2),
# which, when this script creates its "burst" file, binds 200 busy processes to scheduler 1 for
# 1.5 s and logs its own count of that run queue (erlang:statistics(run_queue_lengths)).
# Asserts:
#   - bad values: --trigger runq=0 and runq=x are refused with exit 2 and the reason
#   - quiet VM: --trigger runq=50 writes no dump in 3 s; SIGTERM exits 0; its final summary says
#     it fired 0 times and that the run queues were read, none failing its checks
#   - a burst: --trigger runq=100 --max-dumps 1 exits 0 by itself with one dump named STAMP-runq
#     whose summary reads "the run queue of scheduler 1 held N processes (>= 100)", N no more
#     than the VM's process count (the 200 and its own; the poller may wait there too, so 201 is
#     right), while the VM itself counted at least 100 there; its section "Longest runs on
#     scheduler 1 while its run queue held 100 or more" lists runs there, each saying "while its
#     run queue held up to M processes" with M >= 100; the trace is valid
# About 20 s. Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

otp=${1:?usage: runq_test.sh 25|27|29 agent|noagent}
mode=${2:?usage: runq_test.sh 25|27|29 agent|noagent}
check=$(dirname "$0")/trace_check.py
xp_require_sampler
command -v python3 >/dev/null || xp_skip "python3 not installed"

xp_start_vm "$otp" "$mode" xp_runq +S 2
log=$XP_VM_DIR/bursts.log
dumps() { find "$1" -name '*.trace.json' 2>/dev/null | wc -l; }
sampling() { grep -q '^extrospect: sampling ' "$1"; }
gone() { ! kill -0 "$1" 2>/dev/null; }
logged() { [[ -s "$log" ]]; }

# 1. Bad values.
for bad in runq=0 runq=x; do
	rc=0
	xp_sampler record --ring 2s --trigger "$bad" -o "$XP_VM_DIR/bad/" "$XP_VM_PID" \
		2>"$XP_VM_DIR/bad.err" || rc=$?
	xp_expect "--trigger $bad: exit" 2 "$rc"
	xp_said "--trigger $bad: says what is expected" 'runq=N' "$XP_VM_DIR/bad.err"
done

# 2. Quiet: nothing fires.
dir=$XP_VM_DIR/quiet
"$XP_SAMPLER" record --ring 2s --trigger runq=50 -o "$dir/" "$XP_VM_PID" \
	2>"$XP_VM_DIR/quiet.err" &
spid=$!
xp_defer "kill -KILL $spid 2>/dev/null"
xp_await 20 sampling "$XP_VM_DIR/quiet.err" || { cat "$XP_VM_DIR/quiet.err"; xp_die "record --ring did not sample within 20 s"; }
sleep 3 # the length of the quiet window under test, not a wait for readiness
kill -TERM "$spid"
rc=0
wait "$spid" || rc=$?
sed 's/^/    | /' "$XP_VM_DIR/quiet.err"
xp_expect "quiet: exit status after SIGTERM" 0 "$rc"
xp_expect "quiet: dumps" 0 "$(dumps "$dir")"
if grep -q 'triggers fired: .*runq 0;' "$XP_VM_DIR/quiet.err"; then
	xp_pass "quiet: runq fired 0 times"
else
	xp_fail "quiet: the summary does not say runq fired 0 times"
fi
# Without the agent OTP 29 learns the schedulers' data from their samples: an idle VM may give
# none, and then no queue was read (nor could fire).
if grep -Eq 'run queues: read [1-9][0-9]* times .*, 0 reads of a queue failed' "$XP_VM_DIR/quiet.err"; then
	xp_pass "quiet: the run queues were read, every read passed its checks"
elif [[ "$otp" == 29 && "$mode" == noagent ]] && grep -q 'run queues: read 0 times' "$XP_VM_DIR/quiet.err"; then
	xp_log "quiet: no scheduler's data learned on an idle OTP 29 without the agent: not read"
else
	xp_fail "quiet: the run queues were not read, or a read failed its checks"
fi

# 3. A burst fires it.
dir=$XP_VM_DIR/busy
"$XP_SAMPLER" record --ring 3s --after 0.5s --trigger runq=100 --max-dumps 1 -o "$dir/" \
	"$XP_VM_PID" 2>"$XP_VM_DIR/burst.err" &
spid=$!
xp_defer "kill -KILL $spid 2>/dev/null"
xp_await 20 sampling "$XP_VM_DIR/burst.err" || { cat "$XP_VM_DIR/burst.err"; xp_die "record --ring did not sample within 20 s"; }
: >"$XP_VM_DIR/burst"
xp_await 20 gone "$spid" || xp_fail "--max-dumps 1: still running 20 s after the burst began"
rc=0
wait "$spid" || rc=$?
sed 's/^/    | /' "$XP_VM_DIR/burst.err"
xp_expect "burst: exit status after --max-dumps 1" 0 "$rc"
xp_expect "burst: dumps" 1 "$(dumps "$dir")"
xp_await 10 logged || xp_die "the VM logged no burst within 10 s"
read -r _ procs vm_runq all <"$log"
xp_log "the VM counted $vm_runq of its $procs busy processes waiting in scheduler 1's run queue, of $all processes in all"
((vm_runq >= 100)) || xp_die "the VM's own count ($vm_runq) is under 100: the workload did not build the queue"
txt=$(find "$dir" -name '*-runq.txt' | head -n 1)
[[ -z "$txt" ]] || sed -n "1,20p" "$txt" | sed 's/^/    | /'
n=$([[ -n "$txt" ]] && sed -nE 's/^Trigger: runq at .*: the run queue of scheduler 1 held ([0-9]+) processes \(>= 100\)$/\1/p' "$txt")
if [[ -n "$n" ]] && ((n >= 100 && n <= all)); then
	xp_pass "burst: a dump whose summary says scheduler 1's queue held $n processes (100..$all)"
else
	xp_fail "burst: no runq dump naming scheduler 1 with 100..$all processes: $(head -n 3 "${txt:-/dev/null}")"
fi
# The section for the trigger's scheduler: its longest runs behind the long queue, each saying
# how long the queue was (>= 100), whatever ran longer elsewhere in the window.
behind=$([[ -n "$txt" ]] && sed -n '/^Longest runs on scheduler 1 while its run queue held 100 or more:$/,/^$/p' "$txt")
m=$(sed -nE 's/^  scheduler 1 ran .*, while its run queue held up to ([0-9]+) processes.*/\1/p' <<<"$behind" | sort -n | head -n 1)
if [[ -n "$m" ]] && ((m >= 100)); then
	xp_pass "burst: the runs on scheduler 1 behind its queue say it held at least $m processes"
else
	xp_fail "burst: no section of runs on scheduler 1 behind a queue of >= 100: $(cat "${txt:-/dev/null}")"
fi
if python3 "$check" validate "$dir"/*.trace.json; then
	xp_pass "burst: a valid trace"
else
	xp_fail "burst: the trace is not valid"
fi
xp_summary
