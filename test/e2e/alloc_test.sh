#!/usr/bin/env bash
# ctest e2e.alloc.OTP.MODE: `extrospect alloc [--sort COL] [-n N] [--json] [-o FILE] PID` against
# the xp_alloc target on OTP 25|27|29, with the agent (MODE agent) or without (noagent).
# The oracle (alloc_oracle.txt, written by the target once quiet, before the ready file):
# erlang:system_info({allocator, A}) per instance and instrument:carriers() per type.
# Per allocator type, summed over its instances, within max(2 %, 256 KiB) for bytes (eheap_alloc:
# 2 MiB, as the process taking the oracle holds it on its heap and frees it after) and 2 for
# counts (the VM is quiet, not stopped: the harness's own requests and the oracle's writing
# allocate a little in ll/std/eheap/temp_alloc): carrier bytes (mbcs + sbcs + mbcs_pool), block
# bytes, multiblock / singleblock / pooled carrier counts and the number of instances; against
# instrument:carriers(), the multiblock carriers (its scan lists mbcs and pooled ones: count and
# bytes within the same tolerance). The planted fragmentation (60,000 binaries of 2,000 bytes, one
# in ten kept) must show: binary_alloc over 20 MiB free at a fragmentation over 0.8, the first
# type of --sort free. Also: where erts_allctrs_info came from (agent; dynsym on 25/27 and a scan
# on 29 without it) and the text table; without the agent a bad --sort (exit 2), --watch's
# intervals, -o FILE and the fail-closed path (no layout: exit 6 and a message naming what is
# missing).
# Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

otp=${1:?usage: alloc_test.sh 25|27|29 agent|noagent}
mode=${2:?usage: alloc_test.sh 25|27|29 agent|noagent}
KIB256=262144

# Is |got - want| within max(want / 50, floor)?
near() {
	local got=$1 want=$2 floor=$3 d tol
	d=$((got > want ? got - want : want - got))
	tol=$((want / 50 > floor ? want / 50 : floor))
	((d <= tol))
}

# xp_near WHAT WANT GOT FLOOR
xp_near() {
	if [[ "$3" =~ ^[0-9]+$ ]] && near "$3" "$2" "$4"; then
		xp_pass "$1: $3, the VM says $2"
	else
		xp_fail "$1: $3, the VM says $2 (tolerance max(2 %, $4))"
	fi
}

type_field() { jq -r --arg n "$2" ".types[] | select(.name == \$n) | $3" "$1"; }

check_sysinfo() {
	local json=$1 a n want floor
	local -A crr blk mbc sbc pool inst
	while read -r _ a n mn ms mb sn ss sb pn ps pb; do
		crr[$a]=$((${crr[$a]:-0} + ms + ss + ps))
		blk[$a]=$((${blk[$a]:-0} + mb + sb + pb))
		mbc[$a]=$((${mbc[$a]:-0} + mn))
		sbc[$a]=$((${sbc[$a]:-0} + sn))
		pool[$a]=$((${pool[$a]:-0} + pn))
		inst[$a]=$((${inst[$a]:-0} + 1))
	done < <(grep '^sysinfo ' "$XP_VM_DIR/alloc_oracle.txt")
	((${#inst[@]} >= 8)) || xp_fail "the oracle lists ${#inst[@]} allocators"
	for a in "${!inst[@]}"; do
		# The process asking holds the answers on its heap, and frees them after: eheap_alloc
		# moves by up to a few carriers (seen: 1 MiB of carriers, 430 KiB of blocks).
		floor=$KIB256
		[[ "$a" != eheap_alloc ]] || floor=$((2 << 20))
		xp_expect "$a instances" "${inst[$a]}" "$(type_field "$json" "$a" .instances)"
		xp_near "$a carrier bytes" "${crr[$a]}" "$(type_field "$json" "$a" .carriers_bytes)" $floor
		xp_near "$a block bytes" "${blk[$a]}" "$(type_field "$json" "$a" .blocks.bytes)" $floor
		xp_near "$a mbc carriers" "${mbc[$a]}" "$(type_field "$json" "$a" .mbc_carriers.count)" 2
		xp_near "$a sbc carriers" "${sbc[$a]}" "$(type_field "$json" "$a" .sbc_carriers.count)" 2
		xp_near "$a pooled carriers" "${pool[$a]}" \
			"$(type_field "$json" "$a" .pool_carriers.count)" 2
	done
	want=${blk[binary_alloc]:-0}
	xp_near "binary_alloc block bytes (the planted 6,000 binaries, exact within 2 %)" "$want" \
		"$(type_field "$json" binary_alloc .blocks.bytes)" 0
}

check_instrument() {
	local json=$1 a n bytes floor
	if ! grep -q '^carriers ' "$XP_VM_DIR/alloc_oracle.txt"; then
		echo "NOTE: no instrument:carriers() oracle: runtime_tools is not installed for OTP $otp"
		return
	fi
	while read -r _ a n bytes; do
		floor=$KIB256
		[[ "$a" != eheap_alloc ]] || floor=$((2 << 20))
		xp_near "$a carriers (instrument:carriers)" "$n" \
			"$(type_field "$json" "$a" '.mbc_carriers.count + .pool_carriers.count')" 3
		xp_near "$a carrier bytes (instrument:carriers)" "$bytes" \
			"$(type_field "$json" "$a" '.mbc_carriers.bytes + .pool_carriers.bytes')" $floor
	done < <(grep '^carriers ' "$XP_VM_DIR/alloc_oracle.txt")
}

check_frag() {
	local json=$XP_VM_DIR/alloc-free.json rc=0 free frag
	xp_sampler alloc --json --sort free -n 1 "$XP_VM_PID" >"$json" || rc=$?
	xp_expect "exit status of 'alloc --sort free'" 0 "$rc"
	xp_expect "first type of --sort free (the planted holes)" binary_alloc \
		"$(jq -r '.types[0].name' "$json")"
	free=$(type_field "$json" binary_alloc .free_bytes)
	frag=$(type_field "$json" binary_alloc .fragmentation)
	if [[ "$free" =~ ^[0-9]+$ ]] && ((free > 20 << 20)) &&
		jq -e --argjson f "$frag" -n '$f > 0.8' >/dev/null 2>&1; then
		xp_pass "binary_alloc: $free bytes free, fragmentation $frag"
	else
		xp_fail "binary_alloc: $free bytes free, fragmentation $frag (want > 20 MiB, > 0.8)"
	fi
	xp_expect "--sort free sorts free_bytes" true \
		"$(jq '[.types[].free_bytes] | . == (sort | reverse)' "$json")"
	xp_expect "-n 1 shows one instance" 1 "$(jq '.instances | length' "$json")"
}

check_text() {
	local out=$XP_VM_DIR/alloc.txt rc=0
	xp_sampler alloc --sort frag -n 3 "$XP_VM_PID" >"$out" 2>&1 || rc=$?
	xp_expect "exit status of 'alloc --sort frag -n 3'" 0 "$rc"
	if grep -qE '^binary_alloc +[0-9]+ .* [0-9.]+M +[0-9.]+[KM] +(8|9)[0-9]\.[0-9]%$' "$out" &&
		grep -qE '^anonymous rw memory \(smaps\): .* carriers ' "$out" &&
		grep -qE '^unaccounted: ' "$out"; then
		xp_pass "text: binary_alloc's row with MiB free and 80-99 % fragmentation, smaps lines"
	else
		xp_fail "text output; it printed:"
		cat "$out"
	fi
	xp_expect "text shows 3 instances" 3 "$(grep -cE '^[a-z_]+ +#[0-9]+ ' "$out")"
}

# -o FILE: the document (held against the oracle again) and the table in the file, nothing on
# stdout, "wrote FILE" on stderr; a missing directory exits 1; with --watch, one line a reading.
check_output_file() {
	local out=$XP_VM_DIR/alloc-o.json txt=$XP_VM_DIR/alloc-o.txt
	xp_expect_to_file alloc "$out" --json -n 10000 "$XP_VM_PID"
	if jq -e '.types | length > 0' "$out" >/dev/null 2>&1; then
		check_sysinfo "$out"
	else
		xp_fail "'alloc --json -o FILE' wrote no types"
	fi
	xp_expect_to_file alloc "$txt" --sort free -n 1 "$XP_VM_PID"
	xp_expect "alloc -o: the table's first type (the planted holes)" binary_alloc \
		"$(sed -n 3p "$txt" | awk '{ print $1 }')"
	xp_expect_no_dir alloc "$XP_VM_PID"
	xp_expect_watch_to_file alloc 3
}

# Usage errors, found before reading anything: the same in every mode.
check_usage() {
	local rc=0
	xp_sampler alloc --sort nosuch "$XP_VM_PID" >/dev/null 2>&1 || rc=$?
	xp_expect "exit status of an unknown --sort column" 2 "$rc"
	rc=0
	xp_sampler alloc --sort heap "$XP_VM_PID" >/dev/null 2>&1 || rc=$?
	xp_expect "exit status of heap's --sort column given to alloc" 2 "$rc"
	rc=0
	xp_sampler alloc -d 1 "$XP_VM_PID" >/dev/null 2>&1 || rc=$?
	xp_expect "exit status of -d without --watch" 2 "$rc"
}

check_watch() {
	local out=$XP_VM_DIR/alloc-watch.jsonl rc=0
	# Durations with units, as --ring and --every take them: 1s and 2500ms are 1 and 2.5.
	xp_sampler alloc --watch 1s -d 2500ms --json -n 1 "$XP_VM_PID" >"$out" || rc=$?
	xp_expect "exit status of 'alloc --watch 1s -d 2500ms'" 0 "$rc"
	xp_expect "readings printed (the first and two intervals)" 3 "$(wc -l <"$out")"
	xp_expect "intervals carry interval_s" "null 1 1" \
		"$(jq -r '.interval_s | if . == null then "null" else (. + 0.5 | floor) end' "$out" |
			paste -sd' ')"
}

# Without a layout row nothing describes Allctr_t: exit 6 and say so.
check_fail_closed() {
	local rc=0 err
	err=$(EXTROSPECT_NO_BUILTIN_LAYOUT=1 xp_sampler alloc --no-agent "$XP_VM_PID" 2>&1 >/dev/null) ||
		rc=$?
	xp_expect "exit status without a layout row" 6 "$rc"
	if grep -q "allocator" <<<"$err"; then
		xp_pass "it says what is missing: $err"
	else
		xp_fail "message without a layout row: $err"
	fi
}

xp_require_sampler
xp_start_vm "$otp" "$mode" xp_alloc
json=$XP_VM_DIR/alloc.json
rc=0
xp_sampler alloc --json -n 10000 "$XP_VM_PID" >"$json" 2>"$XP_VM_DIR/alloc.err" || rc=$?
xp_expect "exit status of 'alloc --json'" 0 "$rc"
if jq -e '.types | length > 0' "$json" >/dev/null 2>&1; then
	want=agent
	[[ "$mode" == agent ]] || want=$([[ "$otp" == 29 ]] && echo scan || echo dynsym)
	xp_expect "erts_allctrs_info from" "$want" "$(jq -r .allctrs_info_source "$json")"
	xp_expect "nothing dropped" "0 0 0" "$(jq -r '.not_read | [.unreadable, .invalid, .walk] |
		map(tostring) | join(" ")' "$json")"
	check_sysinfo "$json"
	check_instrument "$json"
else
	xp_fail "'alloc --json' printed no types; stderr:"
	head -c 2000 "$XP_VM_DIR/alloc.err"
fi
check_frag
check_text
if [[ "$mode" == noagent ]]; then
	check_usage
	check_output_file
	check_watch
	check_fail_closed
fi
xp_summary
