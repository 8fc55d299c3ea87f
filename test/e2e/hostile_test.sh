#!/usr/bin/env bash
# ctest e2e.asan.hostile (SECURITY.md "A hostile VM"): a fake VM
# (test/targets/xp_fake_beam.c: a C program named beam.smp that exports what an OTP 25 beam.smp
# exports) serves a JIT list that cycles with consistent links, one that would read 544 MiB,
# atoms with bad pointers and lengths, processes with huge or inverted sizes, a million-word
# stack, one process in many slots, and (from a fake agent block) a module ranges table of 2^40
# ranges. Also: record -o a planted symlink is refused, and a FIFO
# planted at the VM's executable path is never opened. Every command must finish within its timeout, under an
# RSS limit (ASan's hard_rss_limit_mb when built with it, else ulimit -v), with a documented exit
# status and no sanitizer report, and must refuse the data or mark it unknown. OTP-independent:
# no real VM is involved (the fake takes the OTP 25 row's offsets from external/vm/layout.c).
# Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

fake=${XP_FAKE_BEAM:?XP_FAKE_BEAM not set (test/e2e/security.cmake)}
[[ -x "$fake" ]] || xp_skip "fake VM not built: $fake"
xp_require_sampler
# Not grep -q: it would close the pipe early, and pipefail then takes nm's SIGPIPE for "no".
asan=0
(($(nm -D "$XP_SAMPLER" 2>/dev/null | grep -c __asan_init || true) > 0)) && asan=1
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1}:hard_rss_limit_mb=400:allocator_may_return_null=0"
LIMIT_S=40

# Starts the fake (FAKE_EXE, default $fake) with the environment given (e.g. XP_FAKE_JIT=big);
# sets FAKE_PID and FAKE_DIR.
start_fake() {
	FAKE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/xp-hostile-XXXXXX")
	(exec env "$@" "${FAKE_EXE:-$fake}" "$FAKE_DIR/ready") </dev/null >"$FAKE_DIR/vm.log" 2>&1 &
	FAKE_PID=$!
	xp_track_vm "$FAKE_PID" "$FAKE_DIR" /
	xp_wait_ready "$FAKE_PID" "$FAKE_DIR"
	xp_expect "fake VM pid" "$FAKE_PID" "$(xp_ready_get os_pid "$FAKE_DIR/ready")"
}

# run NAME EXPECTED_STATUSES CMD...: runs the sampler bounded in time and memory; fails on a
# timeout, a signal, a status not in EXPECTED_STATUSES (space-separated) or a sanitizer report.
# Leaves the output in $OUT and stderr in $ERR.
run() {
	local name=$1 ok=$2 rc=0 t0=$SECONDS
	shift 2
	OUT=$FAKE_DIR/$name.out ERR=$FAKE_DIR/$name.err
	if ((asan)); then
		timeout --kill-after=5 "$LIMIT_S" "$XP_SAMPLER" "$@" >"$OUT" 2>"$ERR" || rc=$?
	else
		(ulimit -v 1048576 && exec timeout --kill-after=5 "$LIMIT_S" "$XP_SAMPLER" "$@") \
			>"$OUT" 2>"$ERR" || rc=$?
	fi
	if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|rss limit' "$ERR"; then
		xp_fail "$name: sanitizer report"
		head -n 30 "$ERR"
	elif [[ " $ok " != *" $rc "* ]]; then
		xp_fail "$name: exit status $rc (want one of: $ok; 124 is the ${LIMIT_S}s timeout)"
		tail -n 5 "$ERR"
	else
		xp_pass "$name: exit $rc in $((SECONDS - t0)) s"
	fi
}

want() { # want NAME FILE TEXT: FILE holds the fixed string TEXT
	if grep -qF -- "$3" "$2"; then xp_pass "$1"; else xp_fail "$1: no '$3' in $(basename "$2"):" && head -n 20 "$2"; fi
}

start_fake
p=$FAKE_PID
run info 0 info "$p"
want "the cycling JIT list is refused, its entries counted" "$OUT" "fail  jit_map          0 modules, 0 functions, 3 unreadable entries"
want "init's pid word is checked, not believed" "$OUT" "fail  pid_word"
run info-json 0 info --json "$p"
run pstack-all 0 pstack --all "$p"
want "sound process listed" "$OUT" "<0.100.0> false:true/2  waiting  heap 256  stack 4"
want "inverted heap and stack: sizes unknown" "$OUT" "<0.102.0> false:true/2  waiting  heap 64  stack ?"
want "unreadable, misaligned and repeated slots skipped" "$OUT" "skipped: 1 unreadable, 1 invalid, 33 in the wrong slot"
grep -q '<0.101.0>' "$OUT" && xp_fail "the 64 GiB process that is not there was listed"
run pstack-all-json 0 pstack --all --json "$p"
run heap 0 heap "$p"
want "heap: inverted sizes shown as ?" "$OUT" "<0.102.0>           ?   512B      ?     0B      ?"
run heap-json 0 heap --json "$p"
if python3 - "$OUT" <<'PY'; then xp_pass "heap --json: unknown sizes are null"; else xp_fail "heap --json nulls"; fi
import json, sys
d = {p["pid"]: p for p in json.load(open(sys.argv[1]))["processes"]}
sys.exit(0 if d["<0.102.0>"]["heap_used"] is None and d["<0.102.0>"]["stack_size"] is None else 1)
PY
run top 0 top -d 2 "$p"
run record 0 record -d 2 -o "$FAKE_DIR/x.folded" --format collapsed "$p"
# No JIT code is named by the corrupt list: a frame naming an Erlang function would be invented.
if cut -d';' -f2- "$FAKE_DIR/x.folded" | grep -E '[a-z_]+:[a-z_]+/[0-9]+' >/dev/null; then
	xp_fail "record invented Erlang frames: $(head -n 3 "$FAKE_DIR/x.folded")"
else
	xp_pass "record names no Erlang function ($(wc -l <"$FAKE_DIR/x.folded") stacks)"
fi
# An output path that another user made a symbolic link in /tmp (sticky, world-writable) is not
# followed (SECURITY.md): the target is untouched. /dev/stdout, a link of root's, still works.
echo precious >"$FAKE_DIR/victim"
link=/tmp/xp-hostile-link-$$.svg
ln -s "$FAKE_DIR/victim" "$link"
xp_defer "rm -f '$link'"
if chown -h 65534:65534 "$link" 2>/dev/null; then
	run record-symlink 1 record -d 1 -o "$link" "$p"
	want "record -o another user's symlink in /tmp: says why" "$ERR" \
		"cannot write $link: it is a symbolic link (not followed: SECURITY.md)"
	xp_expect "record -o a symlink: target untouched" precious "$(cat "$FAKE_DIR/victim")"
	run pstack-symlink 1 pstack --all --json -o "$link" "$p"
	want "pstack -o another user's symlink in /tmp: says why" "$ERR" \
		"cannot write $link: it is a symbolic link (not followed: SECURITY.md)"
	xp_expect "pstack -o a symlink: target untouched" precious "$(cat "$FAKE_DIR/victim")"
else
	xp_log "not root: cannot give the link to another user; its refusal is not tested"
fi
run record-stdout 0 record -d 1 --format collapsed -o /dev/stdout "$p"
run sched 0 sched -d 1 "$p"
run perf-map 1 perf-map "$p"
want "perf-map says why" "$ERR" "cannot read the VM's JIT map: every walk of the list stopped early"
[[ -e "/tmp/perf-$p.map" ]] && xp_fail "perf-map wrote a map from the corrupt list"
run watch 6 watch --name x -d 1 "$p"
xp_stop_vm "$p"

# 17 entries of 32 MiB each: the walk stops at 512 MiB, reading no more. And an agent block
# whose module ranges table claims 2^40 ranges: refused, not read.
start_fake XP_FAKE_JIT=big XP_FAKE_AGENT="$(dirname "$fake")/../../extrospect_nif_fake.so"
run info-big 0 info "$FAKE_PID"
want "the 544 MiB JIT list stops at 512 MiB" "$OUT" "0 modules, 0 functions, 17 unreadable entries"
want "a ranges table of 2^40 ranges is refused" "$OUT" \
	"fail  code_ranges      FAIL: refused: no valid active code index and ranges table at the published addresses"
xp_stop_vm "$FAKE_PID"

# A FIFO planted at the VM's executable path once it runs: the sampler opens only the file
# mapped (same inode, a regular file), here through /proc/PID/exe, and never blocks on the FIFO.
copy=$(mktemp -d "${TMPDIR:-/tmp}/xp-hostile-exe-XXXXXX")
xp_defer "rm -rf '$copy'"
mkdir -p "$copy/erts-13.1.5/bin"
cp "$fake" "$copy/erts-13.1.5/bin/beam.smp"
FAKE_EXE=$copy/erts-13.1.5/bin/beam.smp start_fake
rm "$copy/erts-13.1.5/bin/beam.smp"
mkfifo "$copy/erts-13.1.5/bin/beam.smp"
run info-fifo 0 info "$FAKE_PID"
want "a FIFO at the executable's path: read from /proc/PID/exe" "$OUT" "layout row    erts 13.1.x"
xp_stop_vm "$FAKE_PID"
xp_summary
