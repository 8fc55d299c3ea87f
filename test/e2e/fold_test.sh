#!/usr/bin/env bash
# ctest e2e.fold.OTP: `record --fold-recursion` on OTP 25|27|29 with the agent. xp_deep recurses
# exactly 20 levels through down/1 into spin/2, where it spends its time:
#   - with --fold-recursion its dominant stack is exactly
#     xp_deep:loop/0;xp_deep:down/1 [recursive x20];xp_deep:spin/2, in >= 90 % of its samples,
#     and no stack of any process has two equal frames in a row below its root (collapsed);
#   - the speedscope and SVG outputs of the same samples name the folded frame;
#   - without it, the same VM's dominant stack has down/1 twenty times (the fold is off by default);
#   - a command that does not take it (pstack) refuses it: exit 2 and one line naming the option.
# Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

otp=${1:?usage: fold_test.sh 25|27|29}
xp_require_sampler

# dominant FOLDED: "COUNT TOTAL STACK" of xp_deep's most frequent stack, its label cut off.
dominant() {
	awk '{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); i = index(line, ";")
		if (substr(line, 1, i - 1) ~ /(^| )xp_deep$/) { c[substr(line, i + 1)] += n; t += n } }
		END { for (s in c) if (c[s] > best) { best = c[s]; b = s } print best + 0, t + 0, b }' "$1"
}

xp_start_vm "$otp" agent xp_deep
rc=0
xp_sampler record -d 2 --fold-recursion -o "$XP_VM_DIR/fold.folded" -o "$XP_VM_DIR/fold.json" \
	-o "$XP_VM_DIR/fold.svg" "$XP_VM_PID" 2>"$XP_VM_DIR/fold.err" || rc=$?
sed 's/^/    | /' "$XP_VM_DIR/fold.err"
xp_expect "exit status of record --fold-recursion" 0 "$rc"
read -r best total stack < <(dominant "$XP_VM_DIR/fold.folded")
xp_expect "--fold-recursion: xp_deep's dominant stack" \
	"xp_deep:loop/0;xp_deep:down/1 [recursive x20];xp_deep:spin/2" "$stack"
if ((total >= 50 && best * 100 >= total * 90)); then
	xp_pass "--fold-recursion: the dominant stack holds $best of xp_deep's $total samples (>= 90%)"
else
	xp_fail "--fold-recursion: the dominant stack holds $best of xp_deep's $total samples (< 90%, or < 50 samples)"
fi
twice=$(awk '{ line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";")
	for (i = 3; i <= k; i++) if (fr[i] == fr[i - 1]) { print; exit } }' "$XP_VM_DIR/fold.folded")
xp_expect "--fold-recursion: stacks with two equal frames in a row" "" "$twice"
for f in fold.json fold.svg; do
	if grep -q 'xp_deep:down/1 \[recursive x20\]' "$XP_VM_DIR/$f"; then
		xp_pass "$f names 'xp_deep:down/1 [recursive x20]'"
	else
		xp_fail "$f does not name 'xp_deep:down/1 [recursive x20]'"
	fi
done

rc=0
xp_sampler record -d 1 -o "$XP_VM_DIR/plain.folded" "$XP_VM_PID" 2>/dev/null || rc=$?
xp_expect "exit status of record" 0 "$rc"
read -r best total stack < <(dominant "$XP_VM_DIR/plain.folded")
xp_expect "without --fold-recursion: xp_deep's dominant stack" \
	"xp_deep:loop/0$(printf ';xp_deep:down/1%.0s' $(seq 1 20));xp_deep:spin/2" "$stack"

rc=0
err=$(xp_sampler pstack --fold-recursion "$XP_VM_PID" 2>&1 >/dev/null) || rc=$?
xp_expect "exit status of pstack --fold-recursion" 2 "$rc"
if [[ "$err" == *"--fold-recursion"* && $(wc -l <<<"$err") == 1 ]]; then
	xp_pass "pstack --fold-recursion: one line naming the option: $err"
else
	xp_fail "pstack --fold-recursion: expected one line naming the option, got: $err"
fi
xp_summary
