# shellcheck shell=bash
# Sourced by the end-to-end tests: where each OTP lives (host 25, chroots for 27 / 29), starting a
# target VM in agent or noagent mode and waiting for the ready file it writes, stopping it, PASS /
# FAIL bookkeeping, and an EXIT trap so no VM outlives its test. Exit codes: 0 pass, 1 fail, 77 skip.
# Does not own: what is asserted (the *_test.sh scripts) or building the chroots (provision.sh).

XP_REPO=${XP_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
XP_SAMPLER=${XP_SAMPLER:-$XP_REPO/build/extrospect}
XP_NIF=${XP_NIF:-$XP_REPO/priv/extrospect_nif.so}
XP_OTP_CACHE=${XP_OTP_CACHE:-/var/cache/extrospect}
XP_READY_TIMEOUT=${XP_READY_TIMEOUT:-60}
XP_STOP_TIMEOUT=${XP_STOP_TIMEOUT:-10}

XP_PASSED=0
XP_FAILED=0
XP_VMS=()     # "pid|host work dir|root" of every VM still running
XP_DEFERRED=() # commands xp_cleanup runs (eval'd) after stopping the VMs

xp_log() { echo "[$(date +%T)] $*" >&2; }
xp_skip() {
	echo "SKIP: $*" >&2
	exit 77
}
xp_die() {
	echo "FAIL: $*" >&2
	XP_FAILED=$((XP_FAILED + 1)) # for the EXIT trap: the work dir is kept (xp_keep_failed)
	exit 1
}

# ---- OTP installations ---------------------------------------------------------------------------

# The host erl's OTP release: its root's releases/start_erl.data ("ERTS_VSN RELEASE", what erl
# itself boots by), else asked of a VM (263 ms, at each of a run's few hundred VM starts).
xp_host_otp_release() {
	local erl erts='' rel=''
	erl=$(readlink -f "$(command -v erl)")
	if [[ -r "${erl%/bin/erl}/releases/start_erl.data" ]]; then
		read -r erts rel <"${erl%/bin/erl}/releases/start_erl.data" || true
	fi
	[[ -n "$erts" && "$rel" =~ ^[0-9]+$ ]] ||
		rel=$(erl -noshell -eval 'io:put_chars(erlang:system_info(otp_release)), halt().' </dev/null)
	echo "$rel"
}

# Sets XP_OTP_ROOT ("/" for the host) or XP_OTP_WHY, without a subshell so both survive.
xp_otp_lookup() {
	local otp=$1 suite dir rel
	XP_OTP_ROOT=
	XP_OTP_WHY=
	case $otp in
	25)
		if ! command -v erl >/dev/null; then
			XP_OTP_WHY="host OTP 25: no erl in PATH (tools/install-deps.sh)"
			return 1
		fi
		rel=$(xp_host_otp_release)
		if [[ "$rel" != 25 ]]; then
			XP_OTP_WHY="host erl is OTP ${rel:-?}, not 25"
			return 1
		fi
		XP_OTP_ROOT=/
		return 0
		;;
	27) suite=trixie ;;
	29) suite=sid ;;
	*)
		XP_OTP_WHY="unknown OTP '$otp' (expected 25, 27 or 29)"
		return 1
		;;
	esac
	dir=$XP_OTP_CACHE/otp-$suite
	if [[ -f "$dir.failed" ]]; then
		XP_OTP_WHY="OTP $otp chroot $dir: provisioning failed: $(head -n 1 "$dir.failed")"
		return 1
	fi
	if [[ ! -f "$dir.stamp" || ! -x "$dir/usr/bin/erl" ]]; then
		XP_OTP_WHY="OTP $otp chroot $dir not provisioned (run test/e2e/provision.sh as root)"
		return 1
	fi
	rel=$(sed -n 's/^otp_release=//p' "$dir.stamp")
	if [[ "$rel" != "$otp" ]]; then
		XP_OTP_WHY="chroot $dir holds OTP ${rel:-?}, not $otp"
		return 1
	fi
	if [[ $(id -u) -ne 0 ]]; then
		XP_OTP_WHY="OTP $otp runs in a chroot, which needs root"
		return 1
	fi
	XP_OTP_ROOT=$dir
}

# Prints the root of OTP 25|27|29, or the reason it is unavailable on stderr (status 1).
xp_otp_root() {
	if xp_otp_lookup "$1"; then
		echo "$XP_OTP_ROOT"
	else
		echo "$XP_OTP_WHY" >&2
		return 1
	fi
}

# A chroot gets /proc, as every real system has one (the agent and the watchdog read it).
# Mounted once and left mounted; provision.sh unmounts it before removing a chroot.
xp_chroot_proc() {
	local root=$1
	[[ "$root" == / ]] && return 0
	mountpoint -q "$root/proc" && return 0
	(
		flock 8
		mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
	) 8>"$XP_OTP_CACHE/.mount.lock" || xp_log "warning: could not mount /proc in $root"
}

# ---- target VMs ----------------------------------------------------------------------------------

xp_alive() {
	local stat
	{ read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
	stat=${stat##*) }
	[[ "${stat%% *}" != Z ]]
}

# Has process PID a perf event open (a sampler that has attached)? One fork per call: callers
# poll it while a tool attaches.
xp_has_perf_fd() {
	[[ -n "$(find /proc/"$1"/fd -lname 'anon_inode:\[perf_event\]' -print -quit 2>/dev/null)" ]]
}

xp_ready_get() { sed -n "s/^$1=//p" "${2:-$XP_VM_READY}"; }

# xp_watch_truth BEFORE AFTER: what test/targets/xp_watch.erl's target timed between two copies
# of its watch.stats: "running waiting runnable median_us episodes", the shares of its wall time,
# and the median of its runnable episodes (interpolated in runq_hist's 100 us buckets; - when
# none). Used by e2e.watch and bench/watch_methods.
xp_watch_truth() {
	awk -F= 'FNR == 1 { f++ } { v[f, $1] = $2 }
	function hist(s, sign,   x, kv, i, n) {
		n = split(s, x, ",")
		for (i = 1; i <= n; i++) { split(x[i], kv, ":"); c[kv[1]] += sign * kv[2]; e += sign * kv[2] }
	}
	END {
		w = v[2, "wait_us"] - v[1, "wait_us"]; r = v[2, "run_us"] - v[1, "run_us"]
		q = v[2, "runq_us"] - v[1, "runq_us"]; t = w + r + q
		hist(v[2, "runq_hist"], 1); hist(v[1, "runq_hist"], -1)
		m = "-"
		if (e > 0) {
			for (k = 0; seen + c[k] < e / 2; k++) seen += c[k]
			m = sprintf("%.0f", 100 * k + 100 * (e / 2 - seen) / c[k])
		}
		printf "%.4f %.4f %.4f %s %d\n", t ? r / t : 0, t ? w / t : 0, t ? q / t : 0, m, e
	}' "$1" "$2"
}

# Runs a command with OTP's root as / (directly for the host).
xp_in_root() {
	local root=$1
	shift
	if [[ "$root" == / ]]; then "$@"; else chroot "$root" "$@"; fi
}

# xp_erlc ROOT SRC OUT INC [erlc options...]: compiles every SRC/*.erl into OUT with ROOT's erlc
# (SRC, OUT and INC, which may be empty, are dirs inside ROOT as the host sees them). The beams come
# from a cache in ROOT's /tmp keyed by the sources, INC's headers, the options and ROOT's OTP: every
# VM a run starts stages the same sources, and compiling them took 1.5-2.5 s of CPU each time.
xp_erlc() {
	local root=${1%/} src=$2 out=$3 inc=$4 base key cache tmp f
	shift 4
	local -a files=("$src"/*.erl) args=("$@")
	base=${TMPDIR:-/tmp}
	[[ -z "$root" ]] || base=$root/tmp
	# One sha256sum per dir, not a cat per file: a fork beside a busy VM takes 5-25 ms.
	key=$( {
		printf '%s\n' "$*" "$root"/usr/lib/erlang/erts-*
		(cd "$src" && sha256sum -- *.erl)
		if [[ -n "$inc" ]] && compgen -G "$inc/*.hrl" >/dev/null; then
			(cd "$inc" && sha256sum -- *.hrl)
		fi
	} | sha256sum | cut -c1-24)
	cache=$base/xp-beams-$key
	if [[ ! -d "$cache" ]]; then
		find "$base" -maxdepth 1 -name 'xp-beams-*' -mtime +1 -exec rm -rf {} + 2>/dev/null || true
		tmp=$(mktemp -d "$base/xp-beams-new-XXXXXX")
		[[ -z "$inc" ]] || args=(-I "${inc#"$root"}" "${args[@]}")
		for f in "${files[@]}"; do args+=("${f#"$root"}"); done
		if ! xp_in_root "${root:-/}" erlc -o "${tmp#"$root"}" "${args[@]}" >"$tmp.log" 2>&1; then
			cat "$tmp.log" >&2
			rm -rf "$tmp" "$tmp.log"
			xp_die "compiling ${src#"$root"}/*.erl with OTP's erlc failed"
		fi
		rm -f "$tmp.log"
		# Another test may have compiled the same meanwhile: its cache stays, this copy goes.
		mv -T "$tmp" "$cache" 2>/dev/null || rm -rf "$tmp"
	fi
	touch -c "$cache" # pruned a day after its last use
	cp "$cache"/*.beam "$out/"
}

# Copies and compiles the targets (and in agent mode the extrospect app + NIF) with that OTP's erlc.
xp_stage() {
	local root=$1 dir=$2 mode=$3 app=$2/lib/extrospect
	mkdir -p "$dir/targets"
	cp "$XP_REPO"/test/targets/*.erl "$dir/targets/"
	xp_erlc "$root" "$dir/targets" "$dir/targets" "" +warnings_as_errors
	[[ "$mode" == agent ]] || return 0
	mkdir -p "$app/src" "$app/ebin" "$app/priv" "$app/include"
	cp "$XP_REPO"/src/*.erl "$app/src/"
	if compgen -G "$XP_REPO/include/*.hrl" >/dev/null; then cp "$XP_REPO"/include/*.hrl "$app/include/"; fi
	sed 's/{vsn, *git}/{vsn, "0.0.0-e2e"}/' "$XP_REPO/src/extrospect.app.src" >"$app/ebin/extrospect.app"
	cp "$XP_NIF" "$app/priv/"
	xp_erlc "$root" "$app/src" "$app/ebin" "$app/include"
}

# Removes work dirs left by harnesses that were killed before their EXIT trap could run.
xp_sweep() {
	local d h
	for d in "$1"/xp-e2e-*; do
		# Another harness's sweep may remove the same dir meanwhile: a file gone is no error.
		h=$(cat "$d/.harness" 2>/dev/null) || continue
		[[ -d "/proc/$h" ]] || rm -rf "$d" # h empty (being written): /proc/ is, kept
	done
}

# Waits for the ready file (never a sleep as readiness); dies loudly if the VM exits or times out.
xp_wait_ready() {
	local pid=$1 dir=$2 deadline=$((SECONDS + XP_READY_TIMEOUT)) rc=0
	while [[ ! -f "$dir/ready" ]]; do
		if ! xp_alive "$pid"; then
			wait "$pid" 2>/dev/null || rc=$?
			echo "---- VM log ($dir/vm.log) ----" >&2
			cat "$dir/vm.log" >&2
			xp_die "VM $pid exited (status $rc) before writing its ready file"
		fi
		if ((SECONDS >= deadline)); then
			echo "---- VM log ($dir/vm.log) ----" >&2
			cat "$dir/vm.log" >&2
			xp_die "VM $pid wrote no ready file within ${XP_READY_TIMEOUT}s"
		fi
		sleep 0.05
	done
}

# Records a VM (pid 0: none yet) and its work dir for xp_stop_vm / the EXIT trap.
xp_track_vm() {
	local i
	for i in "${!XP_VMS[@]}"; do
		if [[ "${XP_VMS[$i]}" == *"|$2|"* ]]; then
			XP_VMS[i]="$1|$2|$3"
			return 0
		fi
	done
	XP_VMS+=("$1|$2|$3")
}

# xp_adopt_vm PID DIR ROOT: tracks a VM started in the background whose target writes DIR/ready,
# waits for that file and checks it names PID. Sets XP_VM_PID, XP_VM_DIR, XP_VM_ROOT, XP_VM_READY.
xp_adopt_vm() {
	local pid=$1 dir=$2 root=$3
	xp_track_vm "$pid" "$dir" "$root"
	xp_wait_ready "$pid" "$dir"
	# shellcheck disable=SC2034 # read by the tests
	XP_VM_PID=$pid XP_VM_DIR=$dir XP_VM_ROOT=$root XP_VM_READY=$dir/ready
	[[ "$(xp_ready_get os_pid)" == "$pid" ]] ||
		xp_die "ready file says os_pid=$(xp_ready_get os_pid) but the VM started is $pid"
}

# xp_new_work_dir OTP: looks OTP up (skipping, with the reason, when it is unavailable) and makes
# the work dir of one VM, removed at exit even if the VM never starts. Sets XP_WORK_ROOT (/ or the
# chroot), XP_WORK_DIR (the host's path) and XP_WORK_INNER (the same dir as the VM sees it).
xp_new_work_dir() {
	local base
	xp_otp_lookup "$1" || xp_skip "$XP_OTP_WHY"
	XP_WORK_ROOT=$XP_OTP_ROOT
	base=${TMPDIR:-/tmp}
	[[ "$XP_WORK_ROOT" == / ]] || base=$XP_WORK_ROOT/tmp
	xp_sweep "$base"
	XP_WORK_DIR=$(mktemp -d "$base/xp-e2e-XXXXXX")
	chmod 755 "$XP_WORK_DIR"
	echo "$$" >"$XP_WORK_DIR/.harness"
	XP_WORK_INNER=${XP_WORK_DIR#"${XP_WORK_ROOT%/}"}
	xp_track_vm 0 "$XP_WORK_DIR" "$XP_WORK_ROOT"
	xp_chroot_proc "$XP_WORK_ROOT"
}

# xp_start_vm OTP MODE TARGET [erl args...]: starts `TARGET:start/1` (xp_idle, xp_demo) on OTP
# 25|27|29, MODE agent|noagent. Sets XP_VM_PID (beam.smp), XP_VM_READY, XP_VM_DIR, XP_VM_ROOT.
# Skips (77) when that OTP or the agent is unavailable.
xp_start_vm() {
	local otp=$1 mode=$2 target=$3 root dir inner pid
	shift 3
	case $mode in
	agent)
		[[ -f "$XP_NIF" ]] || xp_skip "agent NIF not built: $XP_NIF missing"
		[[ -f "$XP_REPO/src/extrospect.app.src" ]] || xp_skip "agent app missing: src/extrospect.app.src"
		;;
	noagent) ;;
	*) xp_die "xp_start_vm: MODE must be agent or noagent, not '$mode'" ;;
	esac
	xp_new_work_dir "$otp"
	root=$XP_WORK_ROOT dir=$XP_WORK_DIR inner=$XP_WORK_INNER
	xp_stage "$root" "$dir" "$mode"

	local -a cmd=(erl -noshell -pa "$inner/targets")
	[[ "$mode" == agent ]] && cmd+=(-pa "$inner/lib/extrospect/ebin")
	cmd+=("$@" -run "$target" start "$inner/ready" "$mode" "$$")
	[[ "$root" == / ]] || cmd=(chroot "$root" "${cmd[@]}")
	# A subshell that execs: $! is the pid chroot, erl and erlexec all exec into, i.e. beam.smp.
	(cd "$dir" && export ERL_CRASH_DUMP="$inner/erl_crash.dump" && exec "${cmd[@]}") \
		</dev/null >"$dir/vm.log" 2>&1 &
	pid=$!
	xp_adopt_vm "$pid" "$dir" "$root"
	if [[ "$mode" == agent && "$(xp_ready_get agent)" != true ]]; then
		cat "$dir/vm.log" >&2
		xp_die "agent did not start on OTP $otp: $(xp_ready_get agent_error)"
	fi
	xp_log "OTP $otp $mode VM $pid ready ($(xp_ready_get system_version))"
	[[ "$mode" != agent ]] || xp_log "agent calibration: $(xp_ready_get agent_result)"
}

# xp_stop_vm [PID [TERM]]: stops one VM (default: the last started) and removes its work dir. At
# once with SIGKILL, as a test's end does; with TERM as an operator would: SIGTERM, the VM's own
# shutdown (1.3-1.4 s on this 2-core machine, for each of the run's few hundred VMs), then SIGKILL
# after XP_STOP_TIMEOUT. Only the harness signals the VMs it started; the sampler never does.
xp_stop_vm() {
	local pid=${1:-$XP_VM_PID} how=${2:-KILL} i entry dir root deadline
	for i in "${!XP_VMS[@]}"; do
		entry=${XP_VMS[$i]}
		[[ "${entry%%|*}" == "$pid" ]] || continue
		dir=${entry#*|}
		root=${dir#*|}
		dir=${dir%|*}
		if [[ "$pid" != 0 ]] && xp_alive "$pid"; then
			if [[ "$how" == TERM ]]; then
				kill -TERM "$pid" 2>/dev/null || true
				deadline=$((SECONDS + XP_STOP_TIMEOUT))
				while xp_alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
			fi
			if xp_alive "$pid"; then
				[[ "$how" != TERM ]] || xp_log "VM $pid ignored SIGTERM for ${XP_STOP_TIMEOUT}s; SIGKILL"
				kill -KILL "$pid" 2>/dev/null || true
			fi
		fi
		[[ "$pid" != 0 ]] && { wait "$pid" 2>/dev/null || true; }
		# The VM's own map (in its root), and the host's that `extrospect perf-map` writes for
		# a VM in a chroot: a later VM with this pid would find it (pids wrap).
		[[ "$pid" != 0 ]] && rm -f "${root%/}/tmp/perf-$pid.map" "/tmp/perf-$pid.map"
		if [[ -n "${XP_KEEP_WORK:-}" ]]; then
			xp_log "kept work dir $dir"
		else
			((XP_FAILED == 0)) || xp_keep_failed "$dir" "$root"
			rm -rf "$dir"
		fi
		unset "XP_VMS[$i]"
	done
	return 0
}

# xp_keep_failed DIR ROOT: a copy of a failed test's work dir (its VM's log and what the test
# read and checked: dumps, outputs) in XP_FAILED_DIR (default build/e2e-failed), named after the
# script, the OTP root and the dir, when it holds at most XP_FAILED_KEEP_MB (256) MB: a rare
# failure in CI cannot be run again to be seen. Never fails the caller.
xp_keep_failed() {
	local dir=$1 root=$2 mb dest
	mb=$(du -sm "$dir" 2>/dev/null | cut -f1) || return 0
	if ((mb > ${XP_FAILED_KEEP_MB:-256})); then
		xp_log "failed test's work dir not kept: $dir holds $mb MB"
		return 0
	fi
	root=${root%/}
	root=${root##*/}
	dest=${XP_FAILED_DIR:-$XP_REPO/build/e2e-failed}/$(basename "$0" .sh)-${root:-host}-${dir##*/}
	if mkdir -p "${dest%/*}" && cp -a "$dir" "$dest" 2>/dev/null; then
		rm -f "$dest/.harness"
		xp_log "kept the failed test's work dir: $dest"
	else
		xp_log "failed test's work dir not kept: copying $dir to $dest failed"
	fi
	return 0
}

xp_defer() { XP_DEFERRED+=("$1"); }

# xp_await SECS CMD...: runs CMD every 0.1 s until it succeeds (status 0) or SECS pass (status 1):
# for conditions a program under test makes true (a file it writes, a line it prints).
xp_await() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

# xp_vm_cpu PID: the CPU (user + system) process PID used in the last quarter second, in % of
# one core (bench only: a measurement over a window, not a wait for readiness).
xp_vm_cpu() {
	local pid=$1 a b
	a=$(awk '{ print $14 + $15 }' "/proc/$pid/stat") || return 1
	sleep 0.25
	b=$(awk '{ print $14 + $15 }' "/proc/$pid/stat") || return 1
	echo $(((b - a) * 100 * 4 / $(getconf CLK_TCK)))
}

# xp_vm_settle PID BASE: waits, up to 20 s, until the VM's CPU is back within 15 points of BASE
# (its own % of a core when idle), so that what it does after its own listing (collecting a
# million-element list) is not charged to the next measurement. Prints the seconds waited.
xp_vm_settle() {
	local pid=$1 base=$2 start=$SECONDS cpu
	while ((SECONDS - start < 20)); do
		cpu=$(xp_vm_cpu "$pid") || break
		((cpu > base + 15)) || break
	done
	echo $((SECONDS - start))
}

xp_cleanup() {
	local entry cmd
	for entry in "${XP_VMS[@]}"; do xp_stop_vm "${entry%%|*}"; done
	for cmd in "${XP_DEFERRED[@]}"; do eval "$cmd" || true; done
	XP_DEFERRED=()
}

trap xp_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the sampler and assertions ------------------------------------------------------------------

xp_require_sampler() {
	[[ -x "$XP_SAMPLER" ]] || xp_skip "sampler not built: $XP_SAMPLER missing"
	command -v jq >/dev/null || xp_skip "jq not installed (tools/install-deps.sh)"
}

# Runs the sampler with a time limit so a hang fails the test instead of the ctest timeout.
xp_sampler() { timeout --kill-after=5 "${XP_SAMPLER_TIMEOUT:-60}" "$XP_SAMPLER" "$@"; }

xp_pass() {
	XP_PASSED=$((XP_PASSED + 1))
	echo "PASS: $*"
}
xp_fail() {
	XP_FAILED=$((XP_FAILED + 1))
	echo "FAIL: $*"
}

# xp_expect WHAT EXPECTED ACTUAL
xp_expect() {
	if [[ "$2" == "$3" ]]; then
		xp_pass "$1 == $2"
	else
		xp_fail "$1: expected '$2', got '$3'"
	fi
}

# xp_expect_to_file CMD FILE ARGS... PID: `extrospect CMD -o FILE ARGS... PID` exits 0, prints
# nothing on stdout (kept in FILE.stdout) and "extrospect: wrote FILE" on stderr (FILE.err).
xp_expect_to_file() {
	local cmd=$1 out=$2 rc=0 args
	shift 2
	args="$*"
	xp_sampler "$cmd" -o "$out" "$@" >"$out.stdout" 2>"$out.err" || rc=$?
	xp_expect "exit status of '$cmd -o FILE ${args% *} PID'" 0 "$rc"
	xp_expect "$cmd -o: bytes on stdout" 0 "$(stat -c %s "$out.stdout")"
	xp_expect "$cmd -o: stderr" "extrospect: wrote $out" "$(cat "$out.err")"
}

# xp_expect_watch_to_file CMD LINES: `extrospect CMD --watch 1s -d 2500ms --json -o FILE PID`
# (the last VM's) exits 0, prints nothing on stdout and "wrote FILE" on stderr, and FILE holds
# LINES readings, each a JSON document on its line.
xp_expect_watch_to_file() {
	local cmd=$1 lines=$2 out=$XP_VM_DIR/$1-watch-o.jsonl rc=0
	xp_sampler "$cmd" --watch 1s -d 2500ms --json -o "$out" "$XP_VM_PID" >"$out.stdout" \
		2>"$out.err" || rc=$?
	xp_expect "$cmd --watch -o FILE: exit status" 0 "$rc"
	xp_expect "$cmd --watch -o FILE: bytes on stdout" 0 "$(stat -c %s "$out.stdout")"
	xp_expect "$cmd --watch -o FILE: stderr" "extrospect: wrote $out" "$(tail -n 1 "$out.err")"
	xp_expect "$cmd --watch -o FILE: readings in the file" "$lines" "$(wc -l <"$out")"
	xp_expect "$cmd --watch -o FILE: each a JSON document" "$lines" \
		"$(jq -c 'type' "$out" 2>/dev/null | grep -c '^"object"$')"
}

# xp_expect_no_dir CMD ARGS...: `extrospect CMD -o DIR/no-such-dir/x.txt ARGS...` (DIR:
# XP_VM_DIR) exits 1 and says the directory is missing, in one line.
xp_expect_no_dir() {
	local cmd=$1 path=$XP_VM_DIR/no-such-dir/x.txt rc=0
	shift
	xp_sampler "$cmd" -o "$path" "$@" >/dev/null 2>"$XP_VM_DIR/no-dir.err" || rc=$?
	xp_expect "$cmd -o into a missing directory: exit status" 1 "$rc"
	xp_expect "$cmd -o into a missing directory: message" \
		"extrospect: cannot write $path: No such file or directory" \
		"$(cat "$XP_VM_DIR/no-dir.err")"
}

# xp_said WHAT PATTERN FILE: FILE (a command's stderr) says PATTERN (grep), else FAIL with it.
xp_said() {
	if grep -q -- "$2" "$3"; then
		xp_pass "$1"
	else
		xp_fail "$1: not said; it said: $(head -c 1000 "$3")"
	fi
}

# Root frames (the groups) of a collapsed file with their samples: "COUNT<TAB>ROOT" lines.
xp_roots() {
	awk '{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); split(line, fr, ";"); c[fr[1]] += n }
		END { for (r in c) print c[r] "\t" r }' "$1"
}

# Prints "N passed, M failed"; status 1 when anything failed.
xp_summary() {
	echo "$XP_PASSED passed, $XP_FAILED failed"
	[[ $XP_FAILED -eq 0 ]]
}
