#!/usr/bin/env bash
# ctest e2e.lines.OTP.MODE: `--lines` on a live VM, OTP 25|27|29, with the agent (MODE agent) or
# without (noagent). The workload test/targets/xp_lines.erl runs a known chain of calls, each on a
# line marked by a comment; the expected lines come from the source (grep -n on the markers) and
# the file name from the VM's own stack trace (READYFILE.lines). Asserts, for `record --lines`,
# the exact dominant stack of xp_lines with every frame's line, in order (a caller's line is its
# call's, not the next line's); for `top --lines`, the leaf's line; and that without --lines no
# frame carries a " (file:line)" suffix. Skips (77) with the reason when the VM's stack traces
# of xp_lines carry no line. Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

usage="usage: lines_test.sh 25|27|29 agent|noagent"
otp=${1:?$usage}
mode=${2:?$usage}
erl_src=$XP_REPO/test/targets/xp_lines.erl
XP_RECORD_SECONDS=${XP_RECORD_SECONDS:-2}
MIN_SHARE=85 # % of xp_lines' samples on the dominant stack (it spins in spin/2)

# The line of the marker comment "%% @NAME" in xp_lines.erl.
line_of() {
	local n
	n=$(grep -n -- "%% @$1\$" "$erl_src" | cut -d: -f1)
	[[ "$n" =~ ^[0-9]+$ ]] || xp_die "marker '%% @$1' not found exactly once in $erl_src"
	echo "$n"
}

# rec NAME [options...]: records the VM into $XP_VM_DIR/NAME.folded; fails on a non-zero exit.
rec() {
	local name=$1 rc=0
	shift
	xp_sampler record "$XP_VM_PID" -d "$XP_RECORD_SECONDS" "$@" --format collapsed \
		-o "$XP_VM_DIR/$name.folded" 2>"$XP_VM_DIR/$name.err" || rc=$?
	sed 's/^/    | /' "$XP_VM_DIR/$name.err"
	xp_expect "exit status of 'record $*'" 0 "$rc"
}

# The dominant stack of the process registered as xp_lines (its root, the name, left out): "N TOTAL STACK".
dominant() {
	awk '{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); i = index(line, ";")
		if (substr(line, 1, i - 1) == "xp_lines") { c[substr(line, i + 1)] += n; t += n } }
		END { for (s in c) if (c[s] > best) { best = c[s]; b = s }; print best + 0, t + 0, b }' "$1"
}

# check_stack WHAT FOLDED EXPECTED: the dominant stack of xp_lines is EXPECTED, in >= MIN_SHARE %.
check_stack() {
	local what=$1 folded=$2 want=$3 n total stack
	read -r n total stack <<<"$(dominant "$folded")"
	if ((total < 200)); then
		xp_fail "$what: only $total samples of xp_lines"
		return 0
	fi
	echo "FIGURE: OTP $otp $mode $what: dominant stack $n of $total samples"
	xp_expect "$what: dominant stack of xp_lines" "$want" "$stack"
	if ((100 * n >= MIN_SHARE * total)); then
		xp_pass "$what: the dominant stack has $n of $total samples (>= $MIN_SHARE%)"
	else
		xp_fail "$what: the dominant stack has only $n of $total samples (< $MIN_SHARE%)"
		grep '^xp_lines;' "$folded" | sort -t' ' -k2 -rn | head -n 5 | cut -c1-400
	fi
}

xp_require_sampler
xp_start_vm "$otp" "$mode" xp_lines
lines_file=$XP_VM_DIR/ready.lines
file=$(xp_ready_get file "$lines_file")
where=$(xp_ready_get line "$lines_file")
echo "the VM's stack trace at @where: {file,\"$file\"}, {line,$where}"
if [[ "$where" == 0 || "$file" == none ]]; then
	xp_skip "OTP $otp: the VM's stack traces of xp_lines carry no file:line (no line table)"
fi
xp_expect "the VM's line of @where is the marker's" "$(line_of where)" "$where"

m=xp_lines
rec_chain="$m:b/2 ($file:$(line_of b_rec))"
want="$m:loop/0 ($file:$(line_of loop));$m:a/1 ($file:$(line_of a));$rec_chain;$rec_chain"
want+=";$m:b/2 ($file:$(line_of b_c));$m:c/1 ($file:$(line_of c));$m:spin/2 ($file:$(line_of spin))"
rec lines --lines
check_stack "record --lines" "$XP_VM_DIR/lines.folded" "$want"

# Without --lines: the same chain, and no frame anywhere with a " (file:line)" suffix.
rec plain
check_stack "record" "$XP_VM_DIR/plain.folded" \
	"$m:loop/0;$m:a/1;$m:b/2;$m:b/2;$m:b/2;$m:c/1;$m:spin/2"
suffixed=$(awk '{ line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";")
	for (i = 2; i <= k; i++) if (fr[i] ~ / \(.*:[0-9]+\)$/) print fr[i] }' \
	"$XP_VM_DIR/plain.folded" | sort -u | head -n 5)
if [[ -z "$suffixed" ]]; then
	xp_pass "record without --lines: no frame has a ' (file:line)' suffix"
else
	xp_fail "record without --lines: frames with a suffix: $(echo "$suffixed" | tr '\n' ' ')"
fi

# top --lines: the hottest line is spin/2's.
rc=0
xp_sampler top "$XP_VM_PID" -d 1 -n 5 --lines --name xp_lines >"$XP_VM_DIR/top.txt" \
	2>"$XP_VM_DIR/top.err" || rc=$?
xp_expect "exit status of 'top --lines'" 0 "$rc"
spin_re="$m:spin/2 \\($file:$(line_of spin)\\)"
if grep -qE "^ *[0-9.]+% +[0-9.]+% +${spin_re//./\\.}\$" "$XP_VM_DIR/top.txt"; then
	xp_pass "top --lines lists '$m:spin/2 ($file:$(line_of spin))'"
else
	xp_fail "top --lines does not list '$m:spin/2 ($file:$(line_of spin))'"
	cat "$XP_VM_DIR/top.txt"
fi
xp_summary
