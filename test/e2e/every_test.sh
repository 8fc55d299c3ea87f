#!/usr/bin/env bash
# ctest e2e.every: `record --every 1s --keep 2 -o DIR/ --push URL` against a local stand-in for
# Pyroscope's ingest endpoint (ingest_receiver.py, which answers its first request 503). OTP 25
# with the agent only: interval rotation, files and pushes are the sampler's own, the same on
# every OTP (the samples themselves are e2e.pprof's). Asserts:
#   - SIGHUP ends an interval at once (that interval is shorter than 0.6 s of the 1 s)
#   - SIGTERM writes the partial interval, waits for its push and exits 0
#   - DIR keeps exactly the newest 2 profiles, named by UTC start time, each read by go tool pprof
#   - every interval reached the receiver (the refused first push retried): as many accepted
#     pushes as intervals, each read by go tool pprof, name=xp{env=test}, format=pprof,
#     sampleRate=997, each interval starting when the last ended
#   - no sample lost: the pushed profiles' samples add up to the run's kept samples exactly
# Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

xp_require_sampler
command -v go >/dev/null || xp_skip "go not installed (golang-go, tools/install-deps.sh)"
py=$(command -v /usr/bin/python3 python3 | head -n 1)
[[ -n "$py" ]] || xp_skip "python3 not installed (tools/install-deps.sh)"
export HOME=${HOME:-/root} GOCACHE=${GOCACHE:-/tmp/xp-gocache}

samples_of() { go tool pprof -raw "$1" 2>/dev/null | awk '/^Samples:/ { f = 1; next } /^Locations/ { f = 0 } f && /^ *[0-9]+ +[0-9]+:/ { s += $1 } END { print s + 0 }'; }

intervals() { grep -c '^extrospect: interval ' "$XP_VM_DIR/every.err" || true; }
at_least() { (($(intervals) >= $1)); }

xp_start_vm 25 agent xp_demo
recv=$XP_VM_DIR/recv dir=$XP_VM_DIR/profiles
mkdir -p "$recv"
"$py" "$(dirname "$0")/ingest_receiver.py" "$recv" --fail-first 1 &
rpid=$!
xp_defer "kill $rpid"
xp_await 20 test -s "$recv/port" || xp_die "the receiver wrote no port file"
port=$(cat "$recv/port")

"$XP_SAMPLER" record --every 1s --keep 2 -o "$dir/" --push "http://127.0.0.1:$port" \
	--app-name xp --label env=test "$XP_VM_PID" 2>"$XP_VM_DIR/every.err" &
spid=$!
xp_defer "kill -KILL $spid 2>/dev/null"
xp_await 20 at_least 2 || xp_fail "fewer than 2 intervals in 20 s"
# Just after a rotation, SIGHUP: the next interval ends at once, not 2 s later.
n=$(intervals)
xp_await 5 at_least $((n + 1)) || true
kill -HUP "$spid"
xp_await 5 at_least $((n + 2)) || xp_fail "SIGHUP: no interval ended"
xp_await 5 at_least $((n + 3)) || true
kill -TERM "$spid"
rc=0
wait "$spid" || rc=$?
sed 's/^/    | /' "$XP_VM_DIR/every.err"
xp_expect "exit status after SIGTERM" 0 "$rc"

total=$(intervals)
kept=$(sed -n 's/^extrospect: [0-9]* samples in [0-9.]*s: \([0-9]*\) kept.*/\1/p' "$XP_VM_DIR/every.err")
if ((total >= 4)); then xp_pass "$total intervals"; else xp_fail "only $total intervals"; fi

# DIR: the newest 2, by name.
mapfile -t files < <(cd "$dir" && ls)
xp_expect "files kept in DIR (--keep 2)" 2 "${#files[@]}"
for f in "${files[@]}"; do
	[[ "$f" =~ ^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z\.pb\.gz$ ]] || xp_fail "file name '$f'"
	if go tool pprof -top "$dir/$f" >/dev/null 2>&1; then xp_pass "go tool pprof reads $f"; else xp_fail "go tool pprof cannot read $f"; fi
done

# The receiver: one refused request, then every interval once, contiguous.
awk '$2 != 200 { n++ } END { exit !n }' "$recv/log" || xp_fail "the receiver refused nothing (--fail-first 1)"
mapfile -t ok < <(awk '$2 == 200' "$recv/log")
xp_expect "profiles the receiver accepted" "$total" "${#ok[@]}"
if grep -q "pushed $total profiles (1 failed attempts retried, 0 dropped)" "$XP_VM_DIR/every.err"; then xp_pass "summary: pushed $total, 1 retried, 0 dropped"; else xp_fail "push summary"; fi
sum=0 prev='' short=0 last_t='' d=''
for line in "${ok[@]}"; do
	read -r i _ name from until fmt rate _ <<<"$line"
	[[ "$name $fmt $rate" == "xp{env=test} pprof 997" ]] ||
		xp_fail "request $i: name/format/sampleRate '$name $fmt $rate'"
	[[ -z "$prev" || "$from" == "$prev" ]] || xp_fail "request $i starts at $from, the last ended at $prev"
	prev=$until
	s=$(samples_of "$recv/$i.pb.gz")
	[[ -n "$s" ]] || xp_fail "go tool pprof cannot read push $i"
	sum=$((sum + s))
	# Each profile's start, to the ns: the one before lasted until this one began.
	t=$(go tool pprof -raw "$recv/$i.pb.gz" 2>/dev/null | sed -n 's/^Time: \(.*\) UTC$/\1/p')
	t=$(date -u -d "$t" +%s.%N)
	[[ -z "$last_t" ]] || d=$(awk -v a="$last_t" -v b="$t" 'BEGIN { printf "%.3f", b - a }')
	echo "interval $i: $s samples, starts $t${last_t:+, the last lasted $d s}"
	[[ -n "$last_t" ]] && awk -v d="$d" 'BEGIN { exit !(d < 0.6) }' && short=$((short + 1))
	last_t=$t
done
xp_expect "samples in all pushed profiles = kept samples of the run" "$kept" "$sum"
# The interval SIGHUP ended (the last one, ended by SIGTERM, has no successor to time it).
if ((short == 1)); then xp_pass "one interval (SIGHUP's) under 0.6 s of the 1 s"; else xp_fail "$short intervals under 0.6 s, expected 1 (SIGHUP's)"; fi
xp_summary
