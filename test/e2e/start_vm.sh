#!/usr/bin/env bash
# Starts one target VM through lib.sh, by hand or around one command:
#   start_vm.sh OTP MODE TARGET [erl args...] [-- COMMAND...]
# OTP 25|27|29, MODE agent|noagent, TARGET a module of test/targets (xp_idle, xp_demo).
# With COMMAND: runs it with %PID% / %DIR% in its arguments replaced by the VM's OS pid / work dir
# (also exported as XP_VM_PID, XP_VM_DIR, XP_VM_READY), stops the VM and exits with COMMAND's
# status (`make demo`). Without: prints the ready file and waits for Ctrl-C.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

[[ $# -ge 3 ]] || {
	sed -n '2,7s/^# \{0,1\}//p' "$0" >&2
	exit 2
}
otp=$1 mode=$2 target=$3
shift 3
erl_args=()
while [[ $# -gt 0 && "$1" != -- ]]; do
	erl_args+=("$1")
	shift
done
[[ $# -gt 0 ]] && shift # the --

xp_start_vm "$otp" "$mode" "$target" "${erl_args[@]}"
if [[ $# -eq 0 ]]; then
	cat "$XP_VM_READY"
	echo "VM $XP_VM_PID running (work dir $XP_VM_DIR); Ctrl-C stops it"
	wait "$XP_VM_PID" || true
	exit 0
fi

export XP_VM_PID XP_VM_DIR XP_VM_READY
cmd=()
for a in "$@"; do
	a=${a//%PID%/$XP_VM_PID}
	cmd+=("${a//%DIR%/$XP_VM_DIR}")
done
rc=0
"${cmd[@]}" || rc=$?
exit "$rc"
