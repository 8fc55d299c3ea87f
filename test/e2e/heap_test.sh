#!/usr/bin/env bash
# ctest e2e.heap.OTP.MODE: `extrospect heap [--sort COL] [-n N] [--json] PID` against the xp_heap
# target on OTP 25|27|29, with the agent (MODE agent) or without (noagent).
# The oracle: erlang:process_info of each parked process, written by the target
# (heap_oracle.txt). Exact: heap_size, total_heap_size, stack_size, message_queue_len (OTP 27+;
# null on 25, which keeps no count), reductions, and against process_info(P,
# garbage_collection_info): old heap size and use, heap use, fragments, vheap young + old and its
# limit. Within a stated tolerance: the off-heap binaries
# (the vheap counts each binary in whole words and a binary held twice twice: within 1 % or 64
# bytes of the sum process_info(P, binary) lists) and memory (ours is a lower bound: sizeof(Process)
# and every heap; process_info adds links, monitors, the dictionary and 88 bytes or more per
# queued message: at most 1024 bytes + 256 per message more). The planted binary leak must be
# the top row of --sort bin, and every --sort must sort its column. --watch: the process whose
# binaries grow tops the growth of --sort bin and is flagged long-lived; the VM stopping during
# --watch ends it with exit status 7 after the intervals it read. -o FILE: the same document and
# table in the file, nothing on stdout; a missing directory exits 1; --watch -o FILE, one line
# an interval, kept as the VM exits.
# Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

otp=${1:?usage: heap_test.sh 25|27|29 agent|noagent}
mode=${2:?usage: heap_test.sh 25|27|29 agent|noagent}

# Every registered process's fields in heap's JSON FILE, read by one jq (a jq for each of about
# 120 fields took 50 ms beside the busy VM, 6-9 s a run): FIELDS[FILE/NAME/KEY], the value as
# `jq -r` prints it; FIELDS[FILE/NAME/] marks the name, FIELDS[FILE] the file.
declare -A FIELDS=()
fields_load() {
	local k v
	while IFS=$'\t' read -r k v; do
		FIELDS[$1/$k]=$v
		FIELDS[$1/${k%%/*}/]=1
	done < <(jq -r '.processes[] | select(.name != null) | .name as $n | to_entries[] |
		"\($n)/\(.key)\t\(.value | if type == "string" then . else tojson end)"' "$1")
	FIELDS[$1]=loaded
}

# The value of KEY for the process registered as NAME in heap's JSON: from FIELDS once
# fields_load read the file (null for a key its row lacks), else asked of jq.
field() {
	if [[ -z "${FIELDS[$1]:-}" ]]; then
		jq -r --arg n "$2" --arg k "$3" '.processes[] | select(.name == $n) | .[$k]' "$1"
	elif [[ -n "${FIELDS[$1/$2/$3]+set}" ]]; then
		printf '%s\n' "${FIELDS[$1/$2/$3]}"
	elif [[ -n "${FIELDS[$1/$2/]:-}" ]]; then
		echo null
	fi
}

# Is |got - want| within max(64, want / 100)?
near() {
	local got=$1 want=$2 d tol
	d=$((got > want ? got - want : want - got))
	tol=$((want / 100 > 64 ? want / 100 : 64))
	((d <= tol))
}

check_oracle() {
	local json=$1 name pid heap total stack mq bin mem reds got mq_want
	local ohb ohu hu mbuf vh ovh vhb
	fields_load "$json"
	while read -r name pid heap total stack mq bin mem reds ohb ohu hu mbuf vh ovh vhb; do
		[[ "$(field "$json" "$name" pid)" == "$pid" ]] ||
			xp_fail "$name: pid $(field "$json" "$name" pid), the VM says $pid"
		xp_expect "$name heap_size" "$heap" "$(field "$json" "$name" heap_size)"
		xp_expect "$name total_heap_size" "$total" "$(field "$json" "$name" total_heap_size)"
		xp_expect "$name stack_size" "$stack" "$(field "$json" "$name" stack_size)"
		xp_expect "$name reductions" "$reds" "$(field "$json" "$name" reductions)"
		# process_info(P, garbage_collection_info) gives the raw fields: all exact.
		xp_expect "$name old_heap_size (old_heap_block_size)" "$ohb" \
			"$(field "$json" "$name" old_heap_size)"
		xp_expect "$name old_heap_used (gc old_heap_size)" "$ohu" \
			"$(field "$json" "$name" old_heap_used)"
		xp_expect "$name heap_used (gc heap_size)" "$hu" "$(field "$json" "$name" heap_used)"
		xp_expect "$name heap_fragments_size (mbuf_size)" "$mbuf" \
			"$(field "$json" "$name" heap_fragments_size)"
		xp_expect "$name binary_vheap_bytes ((bin_vheap_size + bin_old_vheap_size) * 8)" \
			"$(((vh + ovh) * 8))" "$(field "$json" "$name" binary_vheap_bytes)"
		xp_expect "$name binary_vheap_limit_bytes (bin_vheap_block_size * 8)" "$((vhb * 8))" \
			"$(field "$json" "$name" binary_vheap_limit_bytes)"
		mq_want=$mq
		[[ "$otp" != 25 ]] || mq_want=null
		xp_expect "$name message_queue_len" "$mq_want" \
			"$(field "$json" "$name" message_queue_len)"
		xp_expect "$name status" waiting "$(field "$json" "$name" status)"
		got=$(field "$json" "$name" binary_vheap_bytes)
		if [[ "$got" =~ ^[0-9]+$ ]] && near "$got" "$bin"; then
			xp_pass "$name binaries $got bytes, process_info(P, binary) sums $bin"
		else
			xp_fail "$name binaries: $got bytes, process_info(P, binary) sums $bin"
		fi
		got=$(field "$json" "$name" memory_lower_bound)
		if [[ "$got" =~ ^[0-9]+$ ]] && ((got <= mem && mem - got <= 1024 + 256 * mq)); then
			xp_pass "$name memory lower bound $got, process_info(P, memory) $mem"
		else
			xp_fail "$name memory lower bound $got, process_info(P, memory) $mem"
		fi
	done <"$XP_VM_DIR/heap_oracle.txt"
	got=$(field "$json" xp_heap_big old_heap_size)
	if [[ "$got" =~ ^[0-9]+$ ]] && ((got > 100000)); then
		xp_pass "xp_heap_big keeps its data in the old generation ($got words)"
	else
		xp_fail "xp_heap_big old_heap_size: $got"
	fi
	xp_expect "processes skipped, fields not shown" "0 0 0 0 0 0 0" \
		"$(jq -r '[.skipped.unreadable, .skipped.invalid, .skipped.wrong_slot,
			(.fields_not_shown | .[])] | map(tostring) | join(" ")' "$json")"
}

# Every column sorts, largest first (unknown values last); the leak tops --sort bin.
check_sorts() {
	local col key json=$XP_VM_DIR/heap-sort.json rc
	declare -A keys=([total]=total_heap_size [heap]=heap_size [old]=old_heap_size
		[frag]=heap_fragments_size [stack]=stack_size [bin]=binary_vheap_bytes
		[msgq]=message_queue_len [reds]=reductions [memory]=memory_lower_bound)
	for col in "${!keys[@]}"; do
		key=${keys[$col]}
		rc=0
		xp_sampler heap --json --sort "$col" -n 10000 "$XP_VM_PID" >"$json" || rc=$?
		if ((rc != 0)); then
			xp_fail "heap --sort $col exited $rc"
			continue
		fi
		xp_expect "--sort $col sorts $key, largest first" true \
			"$(jq --arg k "$key" '[.processes[] | .[$k] | select(. != null)] |
				. == (sort | reverse)' "$json")"
		[[ "$col" != bin ]] || xp_expect "top row of --sort bin (the planted leak)" \
			xp_heap_leak "$(jq -r '.processes[0].name' "$json")"
	done
}

# -n all, and the rows' names: the 50 unregistered processes parked by -xp_heap_count (named from
# the Process's copy alone: no registered name, no dictionary) and the registered ones (read
# from the VM) all say erlang:apply/2, their process_info(P, initial_call) for spawn(Fun).
check_names() {
	local json=$XP_VM_DIR/heap-all.json rc=0
	xp_sampler heap --json -n all "$XP_VM_PID" >"$json" || rc=$?
	xp_expect "exit status of 'heap -n all'" 0 "$rc"
	xp_expect "-n all: one row per process" "$(jq '.totals.processes' "$json")" \
		"$(jq '.processes | length' "$json")"
	xp_expect "unregistered erlang:apply/2 rows with no dictionary call (at least 50)" true \
		"$(jq '[.processes[] | select(.name == null and .initial_call == "erlang:apply/2" and
			.dictionary_initial_call == null)] | length >= 50' "$json")"
	xp_expect "registered xp_heap_* rows, each erlang:apply/2" "5 5" \
		"$(jq -r '[.processes[] | select(.name // "" | test("^xp_heap_(leak|big|stack|mailbox|idle)$"))] |
			"\(length) \([.[] | select(.initial_call == "erlang:apply/2")] | length)"' "$json")"
	xp_expect "a proc_lib process named by its dictionary's initial call" true \
		"$(jq '[.processes[] | select(.dictionary_initial_call != null)] | length > 0' "$json")"
}

check_text() {
	local out=$XP_VM_DIR/heap.txt rc=0
	xp_sampler heap --sort bin -n 3 "$XP_VM_PID" >"$out" 2>&1 || rc=$?
	xp_expect "exit status of 'heap --sort bin -n 3'" 0 "$rc"
	if sed -n 3p "$out" | grep -qE '^<[0-9.]+>( +[^ ]+){5} +16M .* waiting +xp_heap_leak +xp_heap:hold/1$'; then
		xp_pass "text: the leak's row first, 16M of binaries, waiting in xp_heap:hold/1"
	else
		xp_fail "text output; it printed:"
		cat "$out"
	fi
	xp_expect "text shows 3 rows" 3 "$(grep -c '^<' "$out")"
	rc=0
	xp_sampler heap --sort nosuch "$XP_VM_PID" >/dev/null 2>&1 || rc=$?
	xp_expect "exit status of an unknown --sort column" 2 "$rc"
}

# --watch: two intervals; the process whose binaries grow tops --sort bin's growth, flagged.
check_watch() {
	local out=$XP_VM_DIR/heap-watch.jsonl rc=0 last
	xp_sampler heap --watch 1 -d 2.5 --sort bin --json -n 10000 "$XP_VM_PID" >"$out" || rc=$?
	xp_expect "exit status of 'heap --watch 1 -d 2.5'" 0 "$rc"
	xp_expect "intervals reported" 2 "$(wc -l <"$out")"
	last=$(tail -n 1 "$out")
	xp_expect "top growth of binaries over the last interval" xp_heap_grow \
		"$(jq -r '.rows[0].name' <<<"$last")"
	xp_expect "xp_heap_grow grew and is flagged long-lived (bin)" "true true" \
		"$(jq -r '.rows[0] | "\(.growth > 0) \(.long_lived_bin)"' <<<"$last")"
	xp_expect "the static leak did not grow" 0 \
		"$(jq -r '.rows[] | select(.name == "xp_heap_leak") | .growth' <<<"$last")"
	rc=0
	xp_sampler heap -d 1 "$XP_VM_PID" >/dev/null 2>&1 || rc=$?
	xp_expect "exit status of -d without --watch" 2 "$rc"
}

# -o FILE: the JSON document (-n all) and the table written to the file, nothing to stdout, the
# oracle holding on the file; a missing directory exits 1; with --watch, each interval's line.
check_output_file() {
	local out=$XP_VM_DIR/heap-o.json txt=$XP_VM_DIR/heap-o.txt
	xp_expect_to_file heap "$out" --json -n all "$XP_VM_PID"
	if jq -e '.processes | length > 0' "$out" >/dev/null 2>&1; then
		xp_expect "heap -o -n all: one row per process" "$(jq '.totals.processes' "$out")" \
			"$(jq '.processes | length' "$out")"
		check_oracle "$out"
	else
		xp_fail "'heap --json -n all -o FILE' wrote no processes"
	fi
	xp_expect_to_file heap "$txt" --sort bin -n 3 "$XP_VM_PID"
	xp_expect "heap -o: the table's first row is the leak" xp_heap_leak \
		"$(sed -n 3p "$txt" | awk '{ print $(NF - 1) }')"
	xp_expect_no_dir heap "$XP_VM_PID"
	xp_expect_watch_to_file heap 2
}

# The VM stops during --watch -o FILE: the intervals read stand in the file, exit status 7. Stops
# the VM.
check_gone() {
	local out rc=0 hp deadline=$((SECONDS + 30))
	out=$(mktemp)
	xp_sampler heap --watch 0.5 -d 60 --json -n 3 -o "$out" "$XP_VM_PID" >"$out.stdout" \
		2>"$out.err" &
	hp=$!
	while [[ ! -s "$out" ]] && ((SECONDS < deadline)); do sleep 0.1; done # first interval
	xp_stop_vm "$XP_VM_PID" TERM
	wait "$hp" || rc=$?
	xp_expect "exit status of 'heap --watch -o FILE' when the VM exits" 7 "$rc"
	if grep -q "the VM exited after [1-9][0-9]* intervals" "$out.err" &&
		grep -qx "extrospect: wrote $out" "$out.err" && [[ -s "$out" ]] &&
		jq -e '.rows | length > 0' "$out" >/dev/null 2>&1; then
		xp_pass "the intervals read before it exited are in the file, and it says so"
	else
		xp_fail "--watch -o as the VM exited: file $(wc -l <"$out") lines, stderr: $(cat "$out.err")"
	fi
	rm -f "$out" "$out.err" "$out.stdout"
}

# With the agent, the memory offsets heap uses are its calibrated ones (mbuf_sz: the table's).
check_agent_offsets() {
	local json=$XP_VM_DIR/info.json
	xp_sampler info --json "$XP_VM_PID" >"$json" 2>/dev/null || true
	xp_expect "memory offsets calibrated by the agent and verified" \
		"agent agent agent agent agent agent agent true" \
		"$(jq -r '[.offsets | .p_old_heap, .p_old_htop, .p_old_hend, .p_off_heap_overhead,
			.p_bin_old_vheap, .p_bin_vheap_sz, .p_reds | .source] +
			[all(.offsets | to_entries[] | select(.key | test("^p_(old|bin|off_heap|reds|mbuf)")) |
				.value; .verified)] | map(tostring) | join(" ")' "$json")"
}

xp_require_sampler
xp_start_vm "$otp" "$mode" xp_heap -xp_heap_count 50
json=$XP_VM_DIR/heap.json
rc=0
xp_sampler heap --json -n 10000 "$XP_VM_PID" >"$json" 2>"$XP_VM_DIR/heap.err" || rc=$?
xp_expect "exit status of 'heap --json'" 0 "$rc"
if jq -e '.processes | length > 0' "$json" >/dev/null 2>&1; then
	xp_expect "agent seen" "$([[ $mode == agent ]] && echo true || echo false)" \
		"$(jq -r .agent "$json")"
	check_oracle "$json"
	check_sorts
	[[ "$mode" != agent ]] || check_agent_offsets
else
	xp_fail "'heap --json' printed no processes; stderr:"
	head -c 2000 "$XP_VM_DIR/heap.err"
fi
check_names
check_text
check_output_file
check_watch
check_gone
xp_summary
