#!/usr/bin/env bash
# ctest e2e.names.OTP.MODE: names people already know (issue 15 item 6), against the xp_names
# target on OTP 25|27|29, with the agent (MODE agent) or without (noagent).
# The oracle: process_info(P, dictionary)'s '$initial_call' of four gen_servers (started through
# proc_lib, so their VM initial call is proc_lib:init_p/5), written by the target
# (names_oracle.txt). Checked exactly:
#   - pstack --all --json: each one's dictionary_initial_call equals the oracle, its label is
#     xp_names:init/1 (the registered one: xp_names_reg), and the text line of the parked one;
#   - record (collapsed, the default --group name): the two busy unregistered gen_servers make one
#     root xp_names:init/1 holding their gen_server stack; the stream of short-lived proc_lib
#     workers (hundreds of pids) one root xp_names:worker/1; no xp_names process has a pid root;
#   - record --group pid: one root per process, "<PID> xp_names:init/1" for each busy one (their
#     exact pids) and at least 3 distinct "<0.N.0> xp_names:worker/1";
#   - record --group none: one root, processes (besides [bracketed] labels);
#   - top: the process table names xp_names:init/1 and xp_names:worker/1;
#   - with the agent: the offset of Process.dictionary is the agent's, verified.
# Workers that exited before the sampler read them (tens of ms on a loaded machine) are named
# by their initial call, proc_lib:init_p/5, or, read without the in-kernel copy, by their pid
# alone: counted, printed as a FIGURE, not failed.
# Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

otp=${1:?usage: names_test.sh 25|27|29 agent|noagent}
mode=${2:?usage: names_test.sh 25|27|29 agent|noagent}

root_samples() { xp_roots "$1" | awk -F'\t' -v r="$2" '$2 == r { print $1 }'; }

# rec NAME SECONDS [options...]: records into $XP_VM_DIR/NAME.folded.
rec() {
	local name=$1 secs=$2 rc=0
	shift 2
	xp_sampler record -d "$secs" "$@" -o "$XP_VM_DIR/$name.folded" --format collapsed \
		"$XP_VM_PID" 2>"$XP_VM_DIR/$name.err" || rc=$?
	sed 's/^/    | /' "$XP_VM_DIR/$name.err"
	xp_expect "exit status of 'record $*'" 0 "$rc"
}

check_pstack() {
	local json=$XP_VM_DIR/pstack.json pid want got label rc=0
	xp_sampler pstack --all --json "$XP_VM_PID" >"$json" 2>"$XP_VM_DIR/pstack.err" || rc=$?
	xp_expect "exit status of 'pstack --all --json'" 0 "$rc"
	while read -r pid want; do
		got=$(jq -r --arg p "$pid" '.processes[] | select(.pid == $p) |
			"\(.initial_call) \(.dictionary_initial_call) \(.label)"' "$json")
		label=xp_names:init/1
		[[ "$(jq -r --arg p "$pid" '.processes[] | select(.pid == $p) | .name' "$json")" != \
			xp_names_reg ]] || label=xp_names_reg
		xp_expect "$pid: initial call, '\$initial_call' (process_info: $want), label" \
			"proc_lib:init_p/5 $want $label" "$got"
	done <"$XP_VM_DIR/names_oracle.txt"
	xp_expect "'\$initial_call' reads that failed" 0 \
		"$(jq '.process_table.dictionary_initial_call | [.no_offset, .read_failed, .bad_header, .too_large,
			.bad_term] | add' "$json")"
	pid=$(sed -n '4s/ .*//p' "$XP_VM_DIR/names_oracle.txt")
	rc=0
	xp_sampler pstack --all "$XP_VM_PID" >"$XP_VM_DIR/pstack.txt" 2>&1 || rc=$?
	if grep -qF "$pid xp_names:init/1  waiting" "$XP_VM_DIR/pstack.txt"; then
		xp_pass "pstack --all text: '$pid xp_names:init/1  waiting'"
	else
		xp_fail "pstack --all text: no '$pid xp_names:init/1  waiting' line (exit $rc)"
	fi
}

check_default() {
	local f=$XP_VM_DIR/name.folded n gone
	rec name 2
	for r in xp_names:init/1 xp_names_reg xp_names:worker/1 xp_names:plain/0; do
		n=$(root_samples "$f" "$r")
		if [[ -n "$n" ]] && ((n >= 10)); then
			xp_pass "one root '$r' ($n samples)"
		else
			xp_fail "root '$r': ${n:-no} samples; roots: $(xp_roots "$f" | sort -rn | head -n 8 | tr '\n\t' '; ')"
		fi
	done
	xp_expect "roots naming a pid among xp_names processes" 0 \
		"$(xp_roots "$f" | cut -f2 | grep -cE '^<[0-9.]+> xp_names' || true)"
	if grep -qE '^xp_names:init/1;proc_lib:init_p_do_apply/3;gen_server:[a-z_]+/[0-9];(.*;)?xp_names:handle_info/2;xp_names:work/1;' "$f"; then
		xp_pass "xp_names:init/1 holds the gen_servers' stack (proc_lib, gen_server, handle_info/2)"
	else
		xp_fail "no gen_server stack under xp_names:init/1: $(grep '^xp_names:init/1;' "$f" | head -n 2)"
	fi
	gone=$(root_samples "$f" proc_lib:init_p/5)
	echo "FIGURE: OTP $otp $mode: workers named xp_names:worker/1 in $(root_samples "$f" xp_names:worker/1) samples, proc_lib:init_p/5 (exited before read) in ${gone:-0}; processes with no name read (their pid only): $(xp_roots "$f" | awk -F'\t' '$2 ~ /^<[0-9.]+> $/ { s += $1 } END { print s + 0 }') samples"
}

check_pid() {
	local f=$XP_VM_DIR/pid.folded pid n
	rec pid 1 --group pid
	# The first three gen_servers are busy (the fourth is parked: no samples).
	for pid in $(head -n 3 "$XP_VM_DIR/names_oracle.txt" | cut -d' ' -f1); do
		n=$(xp_roots "$f" | cut -f2 | grep -cxF -e "$pid xp_names:init/1" -e "$pid xp_names_reg" || true)
		xp_expect "--group pid: a root for $pid" 1 "$n"
	done
	n=$(xp_roots "$f" | cut -f2 | grep -cE '^<0\.[0-9]+\.0> xp_names:worker/1$' || true)
	if ((n >= 3)); then
		xp_pass "--group pid: $n distinct worker roots '<0.N.0> xp_names:worker/1'"
	else
		xp_fail "--group pid: $n worker roots"
	fi
}

# --name with what the flame graph's root says of unregistered processes (their '$initial_call'):
# the busy unregistered gen_servers are kept, one root each with --group pid, and the registered
# one (also xp_names:init/1, but named xp_names_reg) and the workers are not.
check_name() {
	local f=$XP_VM_DIR/byname.folded pid
	rec byname 1 --group pid --name xp_names:init/1
	for pid in $(head -n 2 "$XP_VM_DIR/names_oracle.txt" | cut -d' ' -f1); do
		xp_expect "--name xp_names:init/1: a root for $pid" 1 \
			"$(xp_roots "$f" | cut -f2 | grep -cxF "$pid xp_names:init/1" || true)"
	done
	xp_expect "--name xp_names:init/1: no other root" "" \
		"$(xp_roots "$f" | cut -f2 | grep -vxE '<0\.[0-9]+\.0> xp_names:init/1' || true)"
	xp_expect "--name xp_names:init/1: two roots" 2 "$(xp_roots "$f" | wc -l)"
}

check_none() {
	local f=$XP_VM_DIR/none.folded
	rec none 1 --group none
	xp_expect "--group none: roots other than 'processes' and [labels]" "" \
		"$(xp_roots "$f" | cut -f2 | grep -vxE 'processes|\[.*\]' || true)"
	xp_expect "--group none: the root 'processes' holds the workers" 1 \
		"$(grep -c '^processes;proc_lib:init_p_do_apply/3;xp_names:worker/1;' "$f" | awk '{ print ($1 > 0) }')"
}

check_top() {
	local out=$XP_VM_DIR/top.txt rc=0
	xp_sampler top -d 1 -n 50 "$XP_VM_PID" >"$out" 2>&1 || rc=$?
	xp_expect "exit status of 'top -d 1'" 0 "$rc"
	for r in xp_names:init/1 xp_names:worker/1; do
		if grep -qE "^ *[0-9.]+%  $r\$" "$out"; then
			xp_pass "top: a process row '$r'"
		else
			xp_fail "top: no process row '$r'"
		fi
	done
}

# With the agent, Process.dictionary is its calibrated offset (found through the probe's own
# dictionary, c_src/calib/calib_probe.c), and verified.
check_agent_offset() {
	xp_expect "p_dictionary: source and verified" "agent true" \
		"$(xp_sampler info --json "$XP_VM_PID" 2>/dev/null |
			jq -r '.offsets.p_dictionary | "\(.source) \(.verified)"')"
}

xp_require_sampler
xp_start_vm "$otp" "$mode" xp_names
[[ "$mode" != agent ]] || check_agent_offset
check_pstack
check_default
check_pid
check_name
check_none
check_top
xp_summary
