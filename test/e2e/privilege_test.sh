#!/usr/bin/env bash
# ctest e2e.privilege (issue 15 item 4, SECURITY.md "Privileges"): one VM (xp_perfmap, with the
# agent) run by an unprivileged user (xptest, created when missing) in its own pid and mount
# namespace (unshare --pid --mount --fork: a container's shape, with its own /tmp).
#   As xptest, without any capability: top, record, pstack --all and perf-map work with the right
#   names; the summary says exactly what the kernel refused (the in-kernel capture, kernel time)
#   and the setcap line that grants it. A copy of the sampler given those capabilities captures
#   in the kernel, and reads a VM of another user (root's fake VM, test/targets/xp_fake_beam.c),
#   which the plain sampler refuses with exit 5 and the same line.
#   As root: the sampler uses host pids, the VM its own; names; the agent's map is
#   /tmp/perf-NSPID.map in the VM's /tmp, perf-map's /tmp/perf-HOSTPID.map in the host's (perf
#   looks in both), and perf on the host names the Erlang functions; watch leases a spy whose tid
#   the agent published as the namespace numbers it.
# OTP 25 only (the host's): what is tested is the sampler's privileges and pid translation, which
# do not depend on the release; the chroots of 27 / 29 have neither the user nor setpriv.
# Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

USER_NAME=xptest
xp_require_sampler
[[ $(id -u) == 0 ]] || xp_skip "needs root to create the test user and the namespaces"
if ! command -v unshare >/dev/null || ! command -v setpriv >/dev/null; then
	xp_skip "no unshare / setpriv (util-linux)"
fi
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
((paranoid <= 2)) || xp_skip "kernel.perf_event_paranoid is $paranoid: no unprivileged sampling here"
xp_otp_lookup 25 || xp_skip "$XP_OTP_WHY"
[[ -f "$XP_NIF" ]] || xp_skip "agent NIF not built: $XP_NIF missing"
id "$USER_NAME" >/dev/null 2>&1 || useradd -r -M -d /nonexistent -s /usr/sbin/nologin "$USER_NAME"
# The prefix that runs a command as the test user, without any capability.
AS_USER=(setpriv --reuid="$USER_NAME" --regid="$(id -g "$USER_NAME")" --clear-groups)
sampler_real=$(readlink -f "$XP_SAMPLER")
cap="setcap cap_perfmon,cap_bpf,cap_sys_ptrace+ep $sampler_real"

# run NAME CMD...: CMD's status in $rc, its output in $d/NAME.out and .err.
run() {
	local name=$1
	shift
	rc=0
	(cd / && exec timeout --kill-after=5 60 "$@") >"$d/$name.out" 2>"$d/$name.err" || rc=$?
}

want() { # want WHAT FILE TEXT: FILE holds the fixed string TEXT
	if grep -qF -- "$3" "$2"; then xp_pass "$1"; else
		xp_fail "$1: no '$3' in $(basename "$2"):"
		head -n 15 "$2"
	fi
}

# The host pid of the VM whose own pid is nspid, a child of the unshare'd shell (pid 1 inside).
ns_host_pid() {
	local upid=$1 nspid=$2 sh c kids=()
	sh=$(cat "/proc/$upid/task/$upid/children" 2>/dev/null) || return 1
	read -ra kids <"/proc/${sh// /}/task/${sh// /}/children" || true
	for c in "${kids[@]}"; do
		if [[ "$(awk '/^NSpid:/ { print $NF }' "/proc/$c/status")" == "$nspid" ]]; then
			echo "$c"
			return 0
		fi
	done
	return 1
}

# Starts the VM as the test user in new pid and mount namespaces; sets d, upid, nspid, pid.
start_ns_vm() {
	# Not under /tmp, which the VM's mount namespace covers with its own tmpfs.
	d=$(mktemp -d /var/tmp/xp-e2e-priv-XXXXXX)
	chmod 755 "$d"
	xp_track_vm 0 "$d" /
	xp_stage / "$d" agent
	chown -R "$USER_NAME:" "$d"
	(cd "$d" && exec unshare --pid --mount --fork --mount-proc --kill-child sh -c \
		"mount -t tmpfs -o mode=1777 xptmp /tmp && HOME=$d ${AS_USER[*]} erl -noshell -pa $d/targets -pa $d/lib/extrospect/ebin -run xp_perfmap start $d/ready agent 0 & wait") \
		</dev/null >"$d/vm.log" 2>&1 &
	upid=$!
	xp_track_vm "$upid" "$d" /
	xp_wait_ready "$upid" "$d"
	nspid=$(xp_ready_get os_pid "$d/ready")
	pid=$(ns_host_pid "$upid" "$nspid") || xp_die "no host pid for the VM's pid $nspid"
	xp_log "VM: pid $nspid in its namespace, $pid on the host, user $(stat -c %U "/proc/$pid")"
	xp_expect "the VM's user" "$USER_NAME" "$(stat -c %U "/proc/$pid")"
	if [[ "$pid" != "$nspid" ]]; then xp_pass "the VM's own pid ($nspid) is not its host pid ($pid)"; else
		xp_fail "same pid inside and out: no pid namespace?"
	fi
}

# The test user samples its own VM: no capability, names right, what was refused said exactly.
check_as_user() {
	local share
	run top "${AS_USER[@]}" "$XP_SAMPLER" top -d 2 "$pid"
	xp_expect "top as $USER_NAME: exit status" 0 "$rc"
	share=$(awk '$3 == "xp_split:work_a/2" { sub("%", "", $1); print $1 }' "$d/top.out")
	if awk -v s="${share:-0}" 'BEGIN { exit !(s >= 20) }'; then xp_pass "top: xp_split:work_a/2 self $share %"; else
		xp_fail "top: xp_split:work_a/2 self '${share}' % (want >= 20)"
		head -n 12 "$d/top.out"
	fi
	if grep -qE '^ *[0-9.]+%  xp_split$' "$d/top.out"; then xp_pass "top names the process"; else
		xp_fail "top: no 'xp_split' row"
	fi
	want "top samples the VM's scheduler threads by host pid" "$d/top.err" "scheduler threads of pid $pid"
	want "the capture's refusal says what grants it" "$d/top.err" \
		"  in-kernel capture: off (the kernel refused the capture program: Operation not permitted (needs root, or CAP_BPF and CAP_PERFMON: $cap)): stacks were read after the sample"
	if ((paranoid == 2)); then
		want "kernel time: why not sampled" "$d/top.err" \
			"  time in the kernel: not sampled (not permitted: needs root or CAP_PERFMON, or kernel.perf_event_paranoid <= 1)"
	fi
	run record "${AS_USER[@]}" "$XP_SAMPLER" record -d 2 --format collapsed -o "$d/u.folded" "$pid"
	xp_expect "record as $USER_NAME: exit status" 0 "$rc"
	xp_expect "record's file owner" "$USER_NAME" "$(stat -c %U "$d/u.folded" 2>/dev/null || echo none)"
	if grep -qE '^xp_split;(.*;)?xp_split:work_a/2 [0-9]+$' "$d/u.folded"; then
		xp_pass "record: stacks rooted in xp_split (grouped by name) end in xp_split:work_a/2"
	else
		xp_fail "record: no xp_split stack"
		head -n 5 "$d/u.folded"
	fi
	run pstack-all "${AS_USER[@]}" "$XP_SAMPLER" pstack --all "$pid"
	xp_expect "pstack --all as $USER_NAME: exit status" 0 "$rc"
	want "pstack --all lists the workload" "$d/pstack-all.out" "xp_split"
	xp_defer "rm -f /tmp/perf-$pid.map"
	# A map left by an earlier process with this pid (pids wrap at 32768 here; a root-owned one
	# in sticky /tmp is not this user's to replace, and perf-map refuses it: exit 10, ci19).
	rm -f "/tmp/perf-$pid.map"
	run perfmap "${AS_USER[@]}" "$XP_SAMPLER" perf-map "$pid"
	xp_expect "perf-map as $USER_NAME: exit status" 0 "$rc"
	xp_expect "perf-map's file on the host: owner, mode" "$USER_NAME 644" \
		"$(stat -c '%U %a' "/tmp/perf-$pid.map" 2>/dev/null || echo none)"
	want "perf-map's file names xp_split:work_a/2" "/tmp/perf-$pid.map" "\$xp_split:work_a/2"
}

# The capabilities the messages name, on a copy of the sampler (setcap marks the file).
check_with_caps() {
	local fake
	mkdir -p "$d/capbin"
	cp "$XP_SAMPLER" "$d/capbin/extrospect"
	chmod 755 "$d/capbin" "$d/capbin/extrospect"
	if ! setcap cap_perfmon,cap_bpf,cap_sys_ptrace+ep "$d/capbin/extrospect"; then
		xp_log "setcap failed on $d: capabilities not tested"
		return 0
	fi
	run top-cap "${AS_USER[@]}" "$d/capbin/extrospect" top -d 1 "$pid"
	xp_expect "top with the capabilities: exit status" 0 "$rc"
	if grep -qE '^  in-kernel capture: [0-9]+ of [0-9]+ Erlang samples walked as copied at the sample$' "$d/top-cap.err"; then
		xp_pass "with the capabilities: the in-kernel capture works"
	else
		xp_fail "with the capabilities, no capture:"
		tail -n 6 "$d/top-cap.err"
	fi
	grep -q 'time in the kernel: not sampled' "$d/top-cap.err" &&
		xp_fail "with CAP_PERFMON the kernel is still not sampled"
	# Another user's VM: root's fake VM, refused with the line, read with the capabilities.
	[[ -x "${XP_FAKE_BEAM:-}" ]] || { xp_log "no fake VM: another user's VM not tested"; return 0; }
	mkdir -p "$d/fake"
	("$XP_FAKE_BEAM" "$d/fake/ready" </dev/null >/dev/null 2>&1 & echo $! >"$d/fake/pid")
	fake=$(cat "$d/fake/pid")
	xp_track_vm "$fake" "$d/fake" /
	xp_wait_ready "$fake" "$d/fake"
	run other "${AS_USER[@]}" "$XP_SAMPLER" pstack "$fake"
	xp_expect "another user's VM: exit status" 5 "$rc"
	xp_expect "another user's VM: the message" \
		"extrospect: permission denied reading /proc/PID/maps of pid $fake: it runs as uid 0 and we as uid $(id -u "$USER_NAME"); another user's VM needs root or CAP_SYS_PTRACE: $cap (in a container: --cap-add SYS_PTRACE)" \
		"$(cat "$d/other.err")"
	run other-cap "${AS_USER[@]}" "$d/capbin/extrospect" pstack "$fake"
	xp_expect "another user's VM with CAP_SYS_PTRACE: exit status" 0 "$rc"
	want "another user's VM with CAP_SYS_PTRACE: read" "$d/other-cap.out" "normal scheduler 1 (tid"
	xp_stop_vm "$fake"
}

# Root samples the namespaced VM; the agent writes its map in the VM's own /tmp.
check_as_root() {
	local map
	run info "$XP_SAMPLER" info --json "$pid"
	xp_expect "info: exit status" 0 "$rc"
	xp_expect "info: .pid is the host pid" "$pid" "$(jq -r .pid "$d/info.out")"
	xp_expect "info: the agent" 1 "$(jq -r '.agent.abi_version // "none"' "$d/info.out")"
	xp_expect "info: failed checks" "" \
		"$(jq -r '[.checks[]? | select(.result == "fail") | .name] | join(" ")' "$d/info.out")"
	run pstack "$XP_SAMPLER" pstack "$pid"
	xp_expect "pstack as root: exit status" 0 "$rc"
	want "pstack as root: the scheduler threads by host tid" "$d/pstack.out" "normal scheduler 1 (tid"
	touch "$d/ready.agentmap"
	for _ in $(seq 150); do [[ -s "$d/ready.agentmap.result" ]] && break; sleep 0.1; done
	xp_expect "write_perf_map() in the namespace: ok" true "$(xp_ready_get ok "$d/ready.agentmap.result")"
	xp_expect "write_perf_map() path: the VM's own pid" "/tmp/perf-$nspid.map" \
		"$(xp_ready_get path "$d/ready.agentmap.result")"
	map=/proc/$pid/root/tmp/perf-$nspid.map
	want "the agent's map, seen through /proc/$pid/root" "$map" "\$xp_split:work_a/2"
	xp_expect "the agent's map: owner" "$USER_NAME" "$(stat -c %U "$map" 2>/dev/null || echo none)"
	if [[ ! -e "/tmp/perf-$nspid.map" ]]; then xp_pass "the agent wrote nothing in the host's /tmp"; else
		xp_fail "/tmp/perf-$nspid.map exists on the host"
	fi
	# watch: the agent publishes its spies' tids as the VM's namespace numbers them; the sampler
	# finds the same threads in its own (NSpid) before it opens perf on one or writes its slot.
	touch "$d/ready.spies"
	for _ in $(seq 150); do [[ -s "$d/ready.spies.result" ]] && break; sleep 0.1; done
	xp_expect "extrospect:start_spies(1) in the namespace" ok "$(xp_ready_get result "$d/ready.spies.result")"
	run watch "$XP_SAMPLER" watch --name xp_split -d 1 "$pid"
	xp_expect "watch in the namespace: exit status" 0 "$rc"
	if grep -qE '^snapshots: [0-9]+ taken of [0-9]+ asked .*; spy xp_spy_1 \(tid [0-9]+\)$' "$d/watch.out" &&
		grep -qE '^running +[0-9.]+%' "$d/watch.out"; then
		xp_pass "watch leased the spy by its host tid and saw xp_split running"
	else
		xp_fail "watch in the namespace: $(head -n 3 "$d/watch.out") $(cat "$d/watch.err")"
	fi
	if command -v perf >/dev/null; then
		perf record -q -F 499 -p "$pid" -o "$d/perf.data" -- sleep 2 >"$d/perf.log" 2>&1 || true
		run fix "$XP_SAMPLER" perf-map --perf-data "$d/perf.data" "$pid"
		want "perf-map --perf-data names both maps" "$d/fix.out" \
			"of pid $pid now read through /tmp/perf-$pid.map, or /tmp/perf-$nspid.map in the VM's mount namespace when it has one (perf looks there first)"
		perf report -i "$d/perf.data" --stdio --sort sym 2>/dev/null | grep -v '^#' >"$d/report.txt" || true
		want "perf on the host names \$xp_split:work_a/2" "$d/report.txt" "\$xp_split:work_a/2"
	fi
}

start_ns_vm
check_as_user
check_with_caps
check_as_root
# SIGKILL to the namespace's init ends every process in it; unshare then exits.
kill -KILL "$(cat "/proc/$upid/task/$upid/children")" 2>/dev/null || true
xp_stop_vm "$upid"
if xp_alive "$pid"; then xp_fail "the VM outlived its namespace's init"; else xp_pass "the VM ended with its namespace"; fi
xp_summary
