#!/usr/bin/env bash
# ctest e2e.blame.OTP.MODE: `extrospect blame` on xp_blame (test/targets/xp_blame.erl), whose
# native hotspots have known Erlang causes: GC forced from xp_blame:gc_churn/3 (process
# xp_blame_gc), deep copies from xp_blame:send_big/3 sending a large term (xp_blame_copy).
#   gc           (--gc) first Erlang function xp_blame:gc_churn/3, first process xp_blame_gc; the
#                non-allocating xp_blame:spin/2 never blamed; --stacks ranks the same first;
#                GC per process: xp_blame_gc first, kind unknown (stripped beam.smp), said so
#   copy_struct  OTP 25/27: first xp_blame:send_big/3 and xp_blame_copy; OTP 28+: refused with
#                exit status 2 (the runtime's names are hidden), never an empty answer
#   examples     docs/guide.md's and --help's other examples: erts_garbage_collect (25/27: nothing ran in it,
#                exit 0, stderr suggests erts_garbage_collect_nobump and 'gc'; 28+: exit 2),
#                --stacks erts_cmp_compound (no compare runs: says so), a truncated JIT fragment name
#   errors       an unknown function name: exit 2 with a one-line reason; --help has examples
# Prints FIGURE lines with the measured ranking. Exit 0 pass, 1 fail, 77 skip (reason printed).
# shellcheck disable=SC2015 # xp_pass never fails: A && xp_pass || xp_fail is an if/else
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

usage="usage: blame_test.sh 25|27|29 agent|noagent"
otp=${1:?$usage}
mode=${2:?$usage}
XP_BLAME_SECONDS=${XP_BLAME_SECONDS:-1.5}

xp_require_sampler

# blame NAME ARGS...: runs blame into $XP_VM_DIR/NAME.out (stderr NAME.err); sets RC.
blame() {
	local name=$1
	shift
	RC=0
	xp_sampler blame -d "$XP_BLAME_SECONDS" "$@" >"$XP_VM_DIR/$name.out" 2>"$XP_VM_DIR/$name.err" || RC=$?
	sed 's/^/    | /' "$XP_VM_DIR/$name.out" "$XP_VM_DIR/$name.err"
}

# row FILE SECTION N: the name in row N (1-based) of the table under the line starting SECTION.
row() {
	awk -v sec="$2" -v n="$3" '
		index($0, sec) == 1 { on = 1; hdr = 1; next }
		on && hdr { hdr = 0; next }
		on && /^  +[0-9]+ +[0-9.]+% +/ { if (++k == n) { sub(/^ +[0-9]+ +[0-9.]+% +/, ""); print; exit } }
		on && /^$/ { exit }' "$1"
}

# figure FILE WHAT: the first three rows of the callers table, for the closing note.
figure() {
	local total
	total=$(sed -n 's/^\([0-9]* of [0-9]* samples ([0-9.]*%)\).*/\1/p' "$1")
	echo "FIGURE: OTP $otp $mode blame $2: $total; $(awk '
		/above it:$/ { on = 1; hdr = 1; next }
		on && hdr { hdr = 0; next }
		on && /^$/ { exit }
		on && k < 4 { sub(/^ +/, ""); printf "%s%s", (k++ ? "; " : ""), $0 }' "$1")"
}

xp_start_vm "$otp" "$mode" xp_blame

# ---- gc ------------------------------------------------------------------------------------------
# --gc: the gc alias, the same tables, and GC per process (issue 17 item 3).
blame gc --gc "$XP_VM_PID"
xp_expect "exit status of 'blame --gc'" 0 "$RC"
figure "$XP_VM_DIR/gc.out" gc
xp_expect "gc: first Erlang function" "xp_blame:gc_churn/3" "$(row "$XP_VM_DIR/gc.out" "Erlang functions" 1)"
proc=$(row "$XP_VM_DIR/gc.out" "Processes:" 1)
[[ "$proc" == "xp_blame_gc" ]] && xp_pass "gc: first process $proc" ||
	xp_fail "gc: first process: expected 'xp_blame_gc', got '$proc'"
if grep -q "xp_blame:spin/2\|xp_blame_spin" "$XP_VM_DIR/gc.out"; then
	xp_fail "gc: the non-allocating xp_blame:spin/2 was blamed"
else
	xp_pass "gc: xp_blame:spin/2 not blamed"
fi
grep -q "^extrospect blame: matching global::garbage_collect" "$XP_VM_DIR/gc.out" &&
	xp_pass "gc: matches global::garbage_collect" || xp_fail "gc: global::garbage_collect not matched"
# The GC table: xp_blame_gc first, with all of its GC samples (the ranking's count) and at least
# one run; kind unknown on every OTP tested (Debian's beam.smp names neither major_collection
# nor minor_collection), and the table says so.
read -r gc_ms gc_n gc_runs gc_major gc_minor gc_unknown gc_proc < <(awk '
	/^Garbage collection per process/ { on = 1; hdr = 1; next }
	on && hdr { hdr = 0; next }
	on { print; exit }' "$XP_VM_DIR/gc.out")
echo "FIGURE: OTP $otp $mode blame --gc: first row ${gc_ms:-?} ms, ${gc_n:-?} samples, ${gc_runs:-?} runs, ${gc_proc:-?}"
# Grouped by what the process is (--group name, the default): its registered name.
[[ "${gc_proc:-}" == "xp_blame_gc" ]] && xp_pass "--gc: first process $gc_proc" ||
	xp_fail "--gc: first process: expected 'xp_blame_gc', got '${gc_proc:-}'"
xp_expect "--gc: its GC samples (as in the process ranking)" \
	"$(awk '/^Processes:/ { on = 1; next } on && / xp_blame_gc$/ { print $1; exit }' "$XP_VM_DIR/gc.out")" "${gc_n:-}"
((${gc_runs:-0} >= 1 && ${gc_runs:-0} <= ${gc_n:-0})) && xp_pass "--gc: 1 <= runs ($gc_runs) <= samples" ||
	xp_fail "--gc: runs '${gc_runs:-}' not within 1..${gc_n:-}"
xp_expect "--gc: major, minor, unknown" "0 0 ${gc_n:-}" "${gc_major:-} ${gc_minor:-} ${gc_unknown:-}"
grep -q "^  Major or minor: unknown, this beam.smp names neither major_collection nor minor_collection" \
	"$XP_VM_DIR/gc.out" && xp_pass "--gc: says major/minor is unknown" || xp_fail "--gc: no unknown-kind note"

blame stacks --stacks "$XP_VM_PID" gc
xp_expect "exit status of 'blame --stacks gc'" 0 "$RC"
xp_expect "gc --stacks: first stack" "xp_blame:gc_churn/3" "$(row "$XP_VM_DIR/stacks.out" "Erlang stacks" 1)"

# ---- copy_struct ---------------------------------------------------------------------------------
blame copy "$XP_VM_PID" copy_struct
if ((otp >= 28)); then
	xp_expect "exit status of 'blame copy_struct' on OTP $otp" 2 "$RC"
	grep -q "alias 'copy_struct' needs the runtime's function names.*OTP 28+ hides them" \
		"$XP_VM_DIR/copy.err" && xp_pass "copy_struct on OTP $otp: refused with the reason" ||
		xp_fail "copy_struct on OTP $otp: no one-line reason on stderr"
	[[ -s "$XP_VM_DIR/copy.out" ]] && xp_fail "copy_struct on OTP $otp: printed a table" ||
		xp_pass "copy_struct on OTP $otp: no table"
else
	xp_expect "exit status of 'blame copy_struct'" 0 "$RC"
	figure "$XP_VM_DIR/copy.out" copy_struct
	xp_expect "copy_struct: first Erlang function" "xp_blame:send_big/3" \
		"$(row "$XP_VM_DIR/copy.out" "Erlang functions" 1)"
	proc=$(row "$XP_VM_DIR/copy.out" "Processes:" 1)
	[[ "$proc" == "xp_blame_copy" ]] && xp_pass "copy_struct: first process $proc" ||
		xp_fail "copy_struct: first process: expected 'xp_blame_copy', got '$proc'"
	xp_expect "copy_struct: matched frame" copy_struct_x "$(row "$XP_VM_DIR/copy.out" "Matched frames:" 1)"
fi

# ---- the guide's and --help's other examples ----------------------------------------------------
# A runtime name that exists but did not run (OTP 25/27: the JIT calls erts_garbage_collect_nobump):
# exit 0, an empty ranking, and on stderr the frames that ran and resemble it, with the alias to
# try. OTP 28+ has no such name: refused with exit 2.
blame zero -n 5 "$XP_VM_PID" erts_garbage_collect
if ((otp >= 28)); then
	xp_expect "exit status of 'blame erts_garbage_collect' on OTP $otp" 2 "$RC"
else
	xp_expect "exit status of 'blame erts_garbage_collect'" 0 "$RC"
	if grep -q "^0 of [0-9]* samples" "$XP_VM_DIR/zero.out"; then
		grep -q "^extrospect: blame: no sample ran in erts_garbage_collect; frames that did and resemble it: erts_garbage_collect_nobump ([0-9]* samples).* (try 'gc' or 'erts_garbage_collect\*')$" \
			"$XP_VM_DIR/zero.err" && xp_pass "erts_garbage_collect: no sample; suggests erts_garbage_collect_nobump, 'gc'" ||
			xp_fail "erts_garbage_collect: no sample, and no suggestion of erts_garbage_collect_nobump and 'gc'"
	else
		xp_pass "erts_garbage_collect ran on OTP $otp: $(head -n 2 "$XP_VM_DIR/zero.out" | tail -n 1)"
	fi
fi
blame nocmp --stacks "$XP_VM_PID" erts_cmp_compound
xp_expect "exit status of 'blame --stacks erts_cmp_compound' on OTP $otp" "$( ((otp >= 28)) && echo 2 || echo 0)" "$RC"
if ((otp < 28)); then
	grep -q "^extrospect: blame: no sample ran in erts_cmp_compound; no frame that ran resembles it" \
		"$XP_VM_DIR/nocmp.err" && xp_pass "erts_cmp_compound (xp_blame compares nothing): says no sample ran" ||
		xp_fail "erts_cmp_compound: no 'no sample ran' line on stderr"
fi
blame star -n 5 "$XP_VM_PID" 'erts_garbage_collect*'
xp_expect "exit status of 'blame erts_garbage_collect*'" 0 "$RC"
if ((otp < 28)); then
	xp_expect "erts_garbage_collect*: first matched frame" erts_garbage_collect_nobump \
		"$(row "$XP_VM_DIR/star.out" "Matched frames:" 1)"
fi
blame prefix -n 5 "$XP_VM_PID" 'global::garbage_collec'
xp_expect "exit status of 'blame global::garbage_collec'" 0 "$RC"
grep -q "resemble it: global::garbage_collect (.*(try 'gc' or 'global::garbage_collec\*')$" "$XP_VM_DIR/prefix.err" &&
	xp_pass "global::garbage_collec (a truncated name): suggests global::garbage_collect" ||
	xp_fail "global::garbage_collec: no suggestion of global::garbage_collect"

# ---- errors --------------------------------------------------------------------------------------
RC=0
xp_sampler blame -d 1 "$XP_VM_PID" no_such_function_xp >/dev/null 2>"$XP_VM_DIR/typo.err" || RC=$?
xp_expect "exit status of 'blame no_such_function_xp'" 2 "$RC"
xp_expect "its message" "extrospect: blame: 'no_such_function_xp' is not a function of beam.smp or of any library the VM has loaded" \
	"$(sed 's/ (OTP 28+ hides.*//' "$XP_VM_DIR/typo.err")"
RC=0
xp_sampler blame --help >"$XP_VM_DIR/help.out" 2>&1 || RC=$?
xp_expect "exit status of 'blame --help'" 0 "$RC"
grep -q "^Examples:" "$XP_VM_DIR/help.out" && grep -q "^Sampling options:" "$XP_VM_DIR/help.out" &&
	xp_pass "--help has examples and the sampling options" || xp_fail "--help lacks examples"

xp_summary
