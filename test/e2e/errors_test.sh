#!/usr/bin/env bash
# ctest e2e.errors: the sampler's exit-code contract, one PASS / FAIL line per case:
#   0 ok, 1 internal error, 2 usage, 3 no such process, 4 not a BEAM VM, 5 permission denied,
#   6 unsupported OTP (no built-in layout and no agent), 7 target exited mid-run.
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

xp_summary
