#!/usr/bin/env bash
# ctest e2e.pprof.OTP: `record` in pprof's format, read back by Go's own reader (`go tool pprof`),
# on OTP 25|27|29 with the agent. One VM (xp_demo), two 1 s recordings, each written as pprof and
# as collapsed from the same samples (-o twice):
#   plain    `go tool pprof -top` and `-traces` read the file; every function's self count (flat)
#            equals the collapsed file's leaf count exactly, and the totals match; the cpu
#            sample type is samples x 1e9/997 ns; the labels pid, registered_name and scheduler
#            are on xp_demo_fib's samples; beam.smp's mapping carries its build-id (as `info`
#            reports it) and is the first, which pprof takes for the main binary
#   --lines  the same at function granularity (the collapsed " (file:line)" suffix stripped),
#            and Erlang locations carry xp_demo.erl with a line number
# Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

otp=${1:?usage: pprof_test.sh 25|27|29}
XP_RECORD_SECONDS=${XP_RECORD_SECONDS:-1}

xp_require_sampler
command -v go >/dev/null || xp_skip "go not installed (golang-go, tools/install-deps.sh)"
export HOME=${HOME:-/root} GOCACHE=${GOCACHE:-/tmp/xp-gocache} GOFLAGS=-mod=mod

# "count<TAB>function" of `go tool pprof -top`'s flat column, every function, sorted by name
# (names as written: the collapsed output does not demangle C++ either).
pprof_flat() {
	go tool pprof -top -symbolize=none -sample_index=samples -nodecount=1000000 \
		-nodefraction=0 -edgefraction=0 "$1" 2>/dev/null |
		awk 'f { n = $1; $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); if (n > 0) print n "\t" $0 }
		     /flat%/ { f = 1 }' | LC_ALL=C sort -t$'\t' -k2
}

# The same from a collapsed file: samples per leaf frame (percent-decoded), STRIP=1 cutting
# --lines' " (file:line)" suffix.
folded_self() {
	awk -v strip="${2:-0}" '{
		n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, fr, ";"); f = fr[k]
		gsub(/%3B/, ";", f); gsub(/%0A/, "\n", f); gsub(/%0D/, "\r", f); gsub(/%25/, "%", f)
		if (strip) sub(/ \([^()]*:[0-9]+\)$/, "", f)
		c[f] += n
	} END { for (f in c) print c[f] "\t" f }' "$1" | LC_ALL=C sort -t$'\t' -k2
}

# check NAME STRIP: the pprof and collapsed files of one recording agree.
check() {
	local name=$1 strip=$2 pb=$XP_VM_DIR/$1.pb.gz folded=$XP_VM_DIR/$1.folded total ns
	if ! go tool pprof -top "$pb" >"$XP_VM_DIR/$name.top" 2>&1; then
		xp_fail "$name: go tool pprof -top cannot read it: $(head -n 3 "$XP_VM_DIR/$name.top")"
		return 0
	fi
	xp_pass "$name: go tool pprof -top reads it"
	xp_expect "$name: the main binary (first mapping)" "File: beam.smp" "$(head -n 1 "$XP_VM_DIR/$name.top")"
	if go tool pprof -traces "$pb" >"$XP_VM_DIR/$name.traces" 2>&1; then
		xp_pass "$name: go tool pprof -traces reads it"
	else
		xp_fail "$name: go tool pprof -traces: $(head -n 3 "$XP_VM_DIR/$name.traces")"
	fi
	pprof_flat "$pb" >"$XP_VM_DIR/$name.flat"
	folded_self "$folded" "$strip" >"$XP_VM_DIR/$name.self"
	if diff "$XP_VM_DIR/$name.self" "$XP_VM_DIR/$name.flat" >"$XP_VM_DIR/$name.diff"; then
		xp_pass "$name: the self count of all $(wc -l <"$XP_VM_DIR/$name.flat") functions equals the collapsed output's"
	else
		xp_fail "$name: -top differs from the collapsed output (< collapsed, > pprof):"
		head -n 20 "$XP_VM_DIR/$name.diff"
	fi
	total=$(awk '{ s += $NF } END { print s + 0 }' "$folded")
	ns=$(go tool pprof -raw "$pb" 2>/dev/null | awk '/^Samples:/ { f = 1; next } f && /^ *[0-9]+ +[0-9]+:/ { s += $1; t += $2 } /^Locations/ { f = 0 } END { print s + 0, t + 0 }')
	xp_expect "$name: samples in pprof" "$total" "${ns% *}"
	xp_expect "$name: cpu ns = samples x 1003009 (997 Hz)" "$((total * 1003009))" "${ns#* }"
	((total >= 100)) || xp_fail "$name: only $total samples"
}

xp_start_vm "$otp" agent xp_demo
for name in plain lines; do
	args=()
	[[ $name == lines ]] && args=(--lines)
	rc=0
	xp_sampler record -d "$XP_RECORD_SECONDS" "${args[@]}" -o "$XP_VM_DIR/$name.pb.gz" \
		-o "$XP_VM_DIR/$name.folded" "$XP_VM_PID" 2>"$XP_VM_DIR/$name.err" || rc=$?
	sed 's/^/    | /' "$XP_VM_DIR/$name.err"
	xp_expect "exit status of record ${args[*]} -o X.pb.gz -o X.folded" 0 "$rc"
	[[ $rc == 0 ]] || continue
	check "$name" "$([[ $name == lines ]] && echo 1 || echo 0)"
done

# Labels: xp_demo_fib's samples carry its pid, registered name and a normal scheduler.
pid=$(awk '/^ *pid: / { p = $2 } /registered_name: +xp_demo_fib$/ { print p; exit }' \
	"$XP_VM_DIR/plain.traces")
if [[ "$pid" =~ ^\<0\.[0-9]+\.0\>$ ]]; then xp_pass "label pid $pid on xp_demo_fib's samples"; else xp_fail "no pid label beside registered_name xp_demo_fib in -traces"; fi
if grep -Eq '^ *scheduler: +normal [0-9]+$' "$XP_VM_DIR/plain.traces"; then xp_pass "label scheduler: normal N"; else xp_fail "no 'scheduler: normal N' label in -traces"; fi

# beam.smp's mapping and its build-id, as `info` reads it.
bid=$(xp_sampler info --json "$XP_VM_PID" 2>/dev/null | jq -r '.. | .build_id? // empty' | head -n 1)
map=$(go tool pprof -raw "$XP_VM_DIR/plain.pb.gz" 2>/dev/null | awk '/^Mappings/ { f = 1; next } f && /beam\.smp/ { print; exit }')
if [[ -n "$bid" && "$map" == *"$bid"* ]]; then
	xp_pass "beam.smp mapping carries build-id $bid"
else
	xp_fail "beam.smp mapping '$map' lacks the build-id '$bid'"
fi

# --lines: Erlang locations name their file and line.
n=$(go tool pprof -raw "$XP_VM_DIR/lines.pb.gz" 2>/dev/null | grep -cE 'xp_demo:fib/1 .*xp_demo\.erl:[0-9]+' || true)
if ((n > 0)); then xp_pass "--lines: $n locations of xp_demo:fib/1 with xp_demo.erl:LINE"; else xp_fail "--lines: no location of xp_demo:fib/1 with xp_demo.erl:LINE in -raw"; fi
xp_summary
