#!/usr/bin/env bash
# ctest e2e.info.OTP.MODE: `extrospect info [--json] PID` against a live idle VM on OTP 25|27|29,
# with the agent (MODE agent) or without (noagent). Every value is compared EXACTLY with what the
# VM wrote about itself in its ready file or with /proc; in agent mode a second VM started with
# `+JPperf map` must report the frame-pointer layout, and its active code index must step by one
# when it loads a module, every live module range a JIT module's code (xp_codeix.erl).
# Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

otp=${1:?usage: info_test.sh 25|27|29 agent|noagent}
mode=${2:?usage: info_test.sh 25|27|29 agent|noagent}

# The 15-character thread name ERTS gives scheduler NUMBER of TYPE (B/erl_process.c; otp-internals.md §5).
sched_comm() {
	local type=$1 n=$2 name
	case $otp:$type in
	25:normal) name=${n}_scheduler ;;
	25:dirty_cpu) name=${n}_dirty_cpu_scheduler ;;
	25:dirty_io) name=${n}_dirty_io_scheduler ;;
	*:normal) name=erts_sched_$n ;;
	*:dirty_cpu) name=erts_dcpus_$n ;;
	*:dirty_io) name=erts_dios_$n ;;
	*) name="?unknown type $type" ;;
	esac
	echo "${name:0:15}"
}

check_schedulers() {
	local json=$1 pid=$2 type key n numbers type_ tid comm
	for type in normal dirty_cpu dirty_io; do
		case $type in
		normal) key=schedulers ;;
		*) key=$type ;;
		esac
		n=$(xp_ready_get "$key")
		xp_expect "number of $type schedulers" "$n" \
			"$(jq -r "[.schedulers[] | select(.type == \"$type\")] | length" "$json")"
		numbers=$(seq -s ' ' 1 "$n")
		xp_expect "$type scheduler numbers" "$numbers" \
			"$(jq -r "[.schedulers[] | select(.type == \"$type\") | .number] | sort | map(tostring) | join(\" \")" "$json")"
	done
	xp_expect "memory_read_failures counts every reason" "bounds fault gone other permission" \
		"$(jq -r '.memory_read_failures | keys | join(" ")' "$json")"
	xp_expect "scheduler tids are distinct" "$(jq -r '.schedulers | length' "$json")" \
		"$(jq -r '[.schedulers[].tid] | unique | length' "$json")"
	while read -r type_ n tid; do
		comm=$(cat "/proc/$pid/task/$tid/comm" 2>/dev/null || echo "<not a thread of $pid>")
		xp_expect "$type_ scheduler $n: name of thread $tid" "$(sched_comm "$type_" "$n")" "$comm"
	done < <(jq -r '.schedulers[] | "\(.type) \(.number) \(.tid)"' "$json")
}

check_sources() {
	local json=$1
	if [[ "$mode" == agent ]]; then
		xp_expect ".agent != null" true "$(jq -r '.agent != null' "$json")"
		xp_expect ".agent.abi_version" 1 "$(jq -r '.agent.abi_version' "$json")"
		xp_expect ".sources.atom_table" agent "$(jq -r '.sources.atom_table' "$json")"
		xp_expect ".sources.active_code_ix" agent "$(jq -r '.sources.active_code_ix' "$json")"
		xp_expect ".sources.code_ranges" agent "$(jq -r '.sources.code_ranges' "$json")"
		check_code_ranges "$json"
	else
		# r[] is static in every release: only the agent can publish it (otp-internals.md §3.1).
		xp_expect ".code_ranges.status without the agent" \
			"$([[ "$otp" == 29 ]] && echo no_index || echo no_table)" "$(jq -r '.code_ranges.status' "$json")"
		xp_expect ".agent" null "$(jq -r 'if has("agent") then .agent else "<missing>" end' "$json")"
		if [[ "$otp" == 29 ]]; then
			# OTP 28+ builds erts with -fvisibility=hidden: nothing to find by name (otp-internals.md §0).
			xp_expect ".sources.jit_descriptor" scan "$(jq -r '.sources.jit_descriptor' "$json")"
		else
			xp_expect ".sources.jit_descriptor" dynsym "$(jq -r '.sources.jit_descriptor' "$json")"
			xp_expect ".sources.atom_table" dynsym "$(jq -r '.sources.atom_table' "$json")"
		fi
	fi
}

# The agent's active code index and ranges table: the table validates and every live range is a
# JIT module's code (old JIT entries aside), exactly.
check_code_ranges() {
	local json=$1
	xp_expect ".code_ranges.status" ok "$(jq -r '.code_ranges.status' "$json")"
	xp_expect ".code_ranges.unmatched (ranges with no JIT module)" 0 "$(jq -r '.code_ranges.unmatched' "$json")"
	xp_expect ".code_ranges: matched + purged == ranges ($(jq -c '.code_ranges | [.matched, .purged, .ranges]' "$json"))" \
		true "$(jq -r '.code_ranges | .matched + .purged == .ranges and .ranges > 20' "$json")"
	xp_expect ".code_ranges.active_code_ix is 0, 1 or 2" true \
		"$(jq -r '.code_ranges.active_code_ix | . == 0 or . == 1 or . == 2' "$json")"
	xp_expect "check code_ranges" pass "$(jq -r '.checks[] | select(.name == "code_ranges") | .result' "$json")"
}

# The VM loads a module it never loaded (test/targets/xp_codeix.erl): one commit, so the active
# code index steps by exactly one (mod 3) and r[active] holds one more range, and still every
# live range is a JIT module's. On 25/27 the agent's index is also the exported symbol's.
check_code_index_steps() {
	local before=$XP_VM_DIR/codeix0.json after=$XP_VM_DIR/codeix1.json ix n noagent
	xp_sampler info --json "$XP_VM_PID" >"$before"
	check_code_ranges "$before"
	touch "$XP_VM_DIR/load"
	xp_wait_ready "$XP_VM_PID" "$XP_VM_DIR/load1"
	xp_expect "the VM loaded one module" "xp_idle 1" \
		"$(xp_ready_get module "$XP_VM_DIR/load1/ready") $(xp_ready_get loads "$XP_VM_DIR/load1/ready")"
	xp_sampler info --json "$XP_VM_PID" >"$after"
	check_code_ranges "$after"
	ix=$(jq -r '.code_ranges.active_code_ix' "$before")
	n=$(jq -r '.code_ranges.ranges' "$before")
	xp_expect "active code index after one load (was $ix)" $(((ix + 1) % 3)) \
		"$(jq -r '.code_ranges.active_code_ix' "$after")"
	xp_expect "ranges after loading a new module (were $n)" $((n + 1)) "$(jq -r '.code_ranges.ranges' "$after")"
	if [[ "$otp" != 29 ]]; then
		noagent=$(xp_sampler info --json --no-agent "$XP_VM_PID" | jq -r '.addresses.active_code_ix')
		xp_expect "the agent's the_active_code_index is the exported symbol" "$noagent" \
			"$(jq -r '.addresses.active_code_ix' "$after")"
	fi
}

# `info --json` of the current VM, checked against its ready file and /proc.
check_json() {
	local pid=$XP_VM_PID json=$XP_VM_DIR/info.json err=$XP_VM_DIR/info.err rc=0 failed
	xp_sampler info --json "$pid" >"$json" 2>"$err" || rc=$?
	xp_expect "exit status of 'info --json $pid'" 0 "$rc"
	if ! jq -e 'type == "object"' "$json" >/dev/null 2>&1; then
		xp_fail "'info --json' did not print a JSON object; stdout:"
		head -c 2000 "$json"
		echo "stderr:"
		head -c 2000 "$err"
		return 0
	fi
	xp_expect ".pid" "$pid" "$(jq -r .pid "$json")"
	xp_expect ".exe" "$(readlink "/proc/$pid/exe")" "$(jq -r .exe "$json")"
	xp_expect ".otp_release" "$(xp_ready_get otp_release)" "$(jq -r .otp_release "$json")"
	xp_expect ".erts_version" "$(xp_ready_get erts_version)" "$(jq -r .erts_version "$json")"
	xp_expect ".flavor (the VM's emu_flavor)" "$(xp_ready_get emu_flavor)" "$(jq -r .flavor "$json")"
	xp_expect ".flavor (the tests run JIT VMs only)" jit "$(jq -r .flavor "$json")"
	xp_expect ".frame_layout" "$(xp_ready_get frame_layout)" "$(jq -r .frame_layout "$json")"
	xp_expect ".word_size" 8 "$(jq -r .word_size "$json")"
	xp_expect ".jit_modules ($(jq -c .jit_modules "$json")) is an integer > 20" true \
		"$(jq -r '.jit_modules | type == "number" and . == floor and . > 20' "$json")"
	check_schedulers "$json" "$pid"
	check_sources "$json"
	failed=$(jq -r '[.checks[]? | select(.result == "fail") | "\(.name): \(.detail)"] | join("; ")' "$json")
	if [[ -z "$failed" ]]; then
		xp_pass "no check failed ($(jq -r '[.checks[]?] | length' "$json") checks)"
	else
		xp_fail "checks failed: $failed"
	fi
}

# Human output: exit 0, names the OTP release and the erts version.
check_human() {
	local pid=$XP_VM_PID out=$XP_VM_DIR/info.txt rc=0 rel erts
	rel=$(xp_ready_get otp_release)
	erts=$(xp_ready_get erts_version)
	xp_sampler info "$pid" >"$out" 2>&1 || rc=$?
	xp_expect "exit status of 'info $pid'" 0 "$rc"
	if grep -qiE "OTP[^0-9]{0,16}$rel([^0-9]|\$)" "$out" && grep -qF "$erts" "$out"; then
		xp_pass "'info' mentions OTP $rel and erts $erts"
	else
		xp_fail "'info' does not mention OTP $rel and erts $erts; it printed:"
		head -n 40 "$out"
	fi
}

xp_require_sampler
xp_start_vm "$otp" "$mode" xp_idle
check_json
check_human
xp_stop_vm

# A VM started with -eval: OTP 25 leaves the newest JIT entry's prev unset (whatever malloc left),
# and -eval loads ordsets last, into a reused chunk; 'info' said "JIT map unavailable: Protocol
# error". glibc's perturb (without the tcache, which clears that word) makes the garbage certain.
check_eval_vm() {
	local json=$XP_VM_DIR/info-eval.json rc=0
	xp_sampler info --json "$XP_VM_PID" >"$json" 2>"$XP_VM_DIR/info-eval.err" || rc=$?
	xp_expect "exit status of 'info --json' on the -eval VM" 0 "$rc"
	xp_expect "-eval VM: .jit_modules ($(jq -c .jit_modules "$json" 2>/dev/null)) is > 20" true \
		"$(jq -r '.jit_modules | type == "number" and . > 20' "$json" 2>/dev/null)"
	xp_expect "-eval VM: check jit_map" pass \
		"$(jq -r '.checks[]? | select(.name == "jit_map") | .result' "$json" 2>/dev/null)"
}

if [[ "$mode" == noagent ]]; then
	GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.perturb=165 \
		xp_start_vm "$otp" noagent xp_idle -eval 'ordsets:new()'
	check_eval_vm
	xp_stop_vm
fi

if [[ "$mode" == agent ]]; then
	# Frame pointers: +JPperf map turns them on in 25 (with the map) and 27/29 (otp-internals.md §1.3).
	xp_start_vm "$otp" agent xp_codeix +JPperf map
	xp_expect "ready file frame_layout under +JPperf map" fp "$(xp_ready_get frame_layout)"
	check_json
	check_code_index_steps
	xp_stop_vm
fi
xp_summary
