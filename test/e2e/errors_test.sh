#!/usr/bin/env bash
# ctest e2e.errors: the sampler's exit-code contract, one PASS / FAIL line per case:
#   0 ok, 1 internal error, 2 usage, 3 no such process, 4 not a BEAM VM, 5 permission denied,
#   6 unsupported OTP (no built-in layout and no agent), 7 target exited mid-run; SIGINT during
#   record writes the profile (0), a second signal exits at once (128 + signal).
# Ends with "N passed, M failed". Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

work=$(mktemp -d)
chmod 755 "$work"
xp_defer "rm -rf '$work'"

# expect_exit NAME WANT_STATUS STDERR_REGEX COMMAND...: status and an stderr line matching (-i).
expect_exit() {
	local name=$1 want=$2 re=$3 rc=0
	shift 3
	"$@" >"$work/out" 2>"$work/err" || rc=$?
	if [[ "$rc" == "$want" ]] && grep -qiE "$re" "$work/err"; then
		xp_pass "$name: exit $rc, stderr: $(head -n 1 "$work/err")"
		return 0
	fi
	xp_fail "$name: expected exit $want and stderr matching /$re/; got exit $rc, stderr:"
	head -n 5 "$work/err" | sed 's/^/    /'
	return 1
}

xp_require_sampler

# 3: no such process. pid_max bounds real pids; walk up from 999999 in case it is large.
nopid=999999
while [[ -e "/proc/$nopid" ]]; do nopid=$((nopid + 1)); done
if expect_exit "info $nopid (no such process)" 3 "no such process" xp_sampler info "$nopid"; then
	xp_expect "stderr lines for a missing pid" 1 "$(wc -l <"$work/err")"
fi

# 4: a live process that is not a BEAM VM.
sleep 300 &
sleeper=$!
xp_defer "kill $sleeper 2>/dev/null; wait $sleeper 2>/dev/null"
expect_exit "info of sleep ($sleeper)" 4 "not a BEAM" xp_sampler info "$sleeper" || true
kill "$sleeper" 2>/dev/null || true

# 2: usage errors.
expect_exit "info without a pid" 2 "." xp_sampler info || true
expect_exit "info abc" 2 "." xp_sampler info abc || true
expect_exit "info 12abc" 2 "." xp_sampler info 12abc || true
expect_exit "unknown command frobnicate" 2 "." xp_sampler frobnicate || true
expect_exit "inject 4242 (a pid, not a node)" 2 \
	"^extrospect: inject: takes the node's name, not a pid: --node NAME@HOST" \
	xp_sampler inject 4242 || true
expect_exit "inject extra (another argument)" 2 "inject: unexpected argument 'extra'" \
	xp_sampler inject --node a@b extra || true
expect_exit "blame gc 4242 (the function before the pid)" 2 \
	"^extrospect: blame: the PID comes first: extrospect blame 4242 gc \\.\\.\\." \
	xp_sampler blame gc 4242 || true
expect_exit "record --trigger gc=1ms (under 5ms)" 2 "'gc=1ms' for option --trigger .*from 5ms to 1h" \
	xp_sampler record --ring 10s --trigger gc=1ms -o "$work/ring/" 4242 || true
# -o is taken by the commands that write it (record, pstack, heap, alloc, ...), refused by the
# others.
expect_exit "sched -o FILE (sched writes no file)" 2 "sched: unknown option '-o'" \
	xp_sampler sched -o "$work/a.json" 1 || true

# Every option that takes a value, given one no option takes: refused with exit 2, and a
# message that names that option and no other (a value of --watch was once refused as one of
# --format). The options are read from each command's --help, so a new one is checked too.
bad_value_checks() {
	local cmd opt rc err n=0 bad=0
	for cmd in info top record pstack heap alloc blame sched events perf-map capture watch; do
		while read -r opt; do
			rc=0
			err=$(xp_sampler "$cmd" "$opt" '@bogus@' 1 2>&1 >/dev/null) || rc=$?
			[[ "$err" == *"invalid value '@bogus@'"* ]] || continue
			n=$((n + 1))
			if [[ "$rc" != 2 || ! "$err" =~ "for option "([^ ]*/)?"$opt"(/| |$) ]]; then
				xp_fail "$cmd $opt @bogus@: exit $rc, '$err'"
				bad=$((bad + 1))
			fi
		done < <(xp_sampler "$cmd" --help 2>&1 |
			sed -nE "s/^  (-[A-Za-z], )?(-[A-Za-z]|--[a-z-]+) [^ ].*/\\2/p" | sort -u)
	done
	# Those refused today: -F, -d, -n, --sort, --watch, --format, --ring, --every, ... (27).
	if ((n >= 20 && bad == 0)); then
		xp_pass "$n options refused '@bogus@' naming themselves"
	elif ((bad == 0)); then
		xp_fail "only $n options refused '@bogus@': is --help still read right?"
	fi
}
bad_value_checks

# 5 and 6 need a VM: a root-owned noagent VM on the host OTP.
xp_start_vm 25 noagent xp_idle
# The sampler runs as nobody from a copy nobody can execute (the build tree may not be reachable).
cp "$XP_SAMPLER" "$work/extrospect"
chmod 755 "$work/extrospect"
expect_exit "info as nobody of a root VM" 5 "permission" \
	timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups "$work/extrospect" info "$XP_VM_PID" || true
expect_exit "info without a built-in layout or agent" 6 "no built-in layout" \
	env EXTROSPECT_NO_BUILTIN_LAYOUT=1 timeout 60 "$XP_SAMPLER" info "$XP_VM_PID" || true
xp_stop_vm

# Signals during `record`, on a busy VM.
xp_start_vm 25 noagent xp_split

# record_signalled NAME SIGNAL...: a 120 s `record --include-idle` of the VM, sent SIGNALs once it
# says it is sampling (its own stderr line is the readiness signal); sets SIG_RC.
record_signalled() {
	local name=$1 rpid i
	shift
	rm -f "$work/$name.folded" "$work/$name.err"
	"$XP_SAMPLER" record --include-idle -d 120 -o "$work/$name.folded" "$XP_VM_PID" \
		2>"$work/$name.err" &
	rpid=$!
	for ((i = 0; i < 600; i++)); do
		grep -q '^extrospect: sampling ' "$work/$name.err" && break
		sleep 0.1
	done
	sleep 1 # a second of samples to write
	# Stopped while signalled, so that every signal is pending when it resumes: delivered one
	# after the other, none after the sampler has already handled the first and exited.
	kill -STOP "$rpid"
	for s in "$@"; do kill "-$s" "$rpid"; done
	kill -CONT "$rpid"
	SIG_RC=0
	wait "$rpid" || SIG_RC=$?
}
# 0: SIGINT (Ctrl-C) stops sampling and writes the profile so far, as py-spy does.
record_signalled int INT
xp_expect "record stopped by SIGINT: exit status" 0 "$SIG_RC"
if [[ -s "$work/int.folded" ]] && grep -q '^extrospect: wrote ' "$work/int.err"; then
	xp_pass "record stopped by SIGINT wrote its profile ($(wc -l <"$work/int.folded") stacks)"
else
	xp_fail "record stopped by SIGINT: no profile written: $(tail -n 2 "$work/int.err")"
fi
# 130 or 143: a second signal while the first is handled exits at once (128 + the second one;
# the kernel may deliver the two in either order).
record_signalled twice INT TERM
if [[ "$SIG_RC" == 130 || "$SIG_RC" == 143 ]]; then
	xp_pass "record interrupted twice (SIGINT, SIGTERM): exit $SIG_RC"
else
	xp_fail "record interrupted twice (SIGINT, SIGTERM): expected exit 130 or 143, got $SIG_RC"
fi
if grep -q '^extrospect: interrupted again: exiting without writing a report$' "$work/twice.err"; then
	xp_pass "record interrupted twice says so"
else
	xp_fail "record interrupted twice: no 'interrupted again' line: $(tail -n 2 "$work/twice.err")"
fi
# 0: the summary's reader goes away (`2>&1 | head -n 1`): the recording still runs its -d and
# writes its file (SIGPIPE had killed it, 141, with nothing written).
rm -f "$work/pipe.folded"
set +o pipefail
"$XP_SAMPLER" record --include-idle -d 2 -o "$work/pipe.folded" "$XP_VM_PID" 2>&1 | head -n 1 >/dev/null
pipe_rc=${PIPESTATUS[0]}
set -o pipefail
xp_expect "record -o FILE 2>&1 | head -n 1: exit status" 0 "$pipe_rc"
if [[ -s "$work/pipe.folded" ]]; then
	xp_pass "record -o FILE 2>&1 | head -n 1 wrote its profile ($(wc -l <"$work/pipe.folded") stacks)"
else
	xp_fail "record -o FILE 2>&1 | head -n 1: no profile written"
fi
xp_stop_vm

xp_summary
