#!/usr/bin/env bash
# ctest e2e.inject.OTP.CASE: `extrospect inject` against a live distributed VM (-sname, a random
# cookie) started WITHOUT the agent on OTP 25|27|29.
#   push      the refusals first (node "too old" through EXTROSPECT_INJECT_MIN_OTP, wrong cookie,
#             no such node, epmd down), then a push from an install laid out like a real one
#             (bin/extrospect + lib/extrospect, beams built by the host's OTP 25) with the default
#             cookie file ($HOME/.erlang.cookie): exact report, private dir on the node, `info`
#             sees the agent from that dir; a second inject reports it already running.
#   codepath  --code-path to a directory the node cannot see (refused, exit 1), then to an install
#             inside the VM's root (nothing pushed); `info` sees the agent from there.
#   cookie    (SECURITY.md) the VM reads its cookie from $HOME/.erlang.cookie, so no command line
#             holds it; --cookie is refused (exit 2); a wrong cookie's message names its source,
#             not its value; then a push with EXTROSPECT_COOKIE while every /proc/*/cmdline is
#             read again and again: the cookie is in none, nor in inject's output. Run on OTP 25
#             only: what is tested is the sampler's own command line and output, not the node.
# Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

otp=${1:?usage: inject_test.sh 25|27|29 push|codepath|cookie}
case=${2:?usage: inject_test.sh 25|27|29 push|codepath|cookie}

# Runs the sampler; stdout, stderr and the status land in $d/out, $d/err, $rc.
inject() {
	rc=0
	xp_sampler inject "$@" >"$d/out" 2>"$d/err" || rc=$?
}

expect_refusal() {
	local what=$1 code=$2 line=$3
	xp_expect "$what: exit status" "$code" "$rc"
	xp_expect "$what: stderr" "$line" "$(cat "$d/err")"
	xp_expect "$what: stdout" "" "$(cat "$d/out")"
}

# A port on this host where nothing listens (epmd "down" without touching the real one).
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		# bash's /dev/tcp: a refused connection means nothing listens there.
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	xp_die "no free port found"
}

# The agent as an install ships it: bin/extrospect with lib/extrospect beside it, compiled by the
# host's OTP 25 (what a package built here would hold). Sets XP_SAMPLER to that copy.
stage_install() {
	local inst=$1 app=$1/lib/extrospect
	command -v erlc >/dev/null || xp_skip "no host erlc to build the agent to push"
	mkdir -p "$inst/bin" "$app/ebin" "$app/priv"
	cp "$XP_SAMPLER" "$inst/bin/extrospect"
	erlc -I "$XP_REPO/include" -o "$app/ebin" "$XP_REPO"/src/*.erl >"$d/erlc.log" 2>&1 ||
		{ cat "$d/erlc.log" >&2; xp_die "host erlc failed on src/"; }
	sed 's/{vsn, *git}/{vsn, "0.0.0-e2e"}/' "$XP_REPO/src/extrospect.app.src" >"$app/ebin/extrospect.app"
	cp "$XP_NIF" "$app/priv/"
	XP_SAMPLER=$inst/bin/extrospect
}

# `info --json` of the VM shows an agent whose NIF was loaded from $1 (as the VM sees it).
check_info_agent() {
	local nif=$1 json=$d/info.json failed
	rc=0
	xp_sampler info --json "$XP_VM_PID" >"$json" 2>"$d/info.err" || rc=$?
	xp_expect "info after inject: exit status" 0 "$rc"
	xp_expect "info: .agent.abi_version" 1 "$(jq -r '.agent.abi_version // "no agent"' "$json")"
	xp_expect "info: .sources.atom_table" agent "$(jq -r '.sources.atom_table' "$json")"
	# The injected agent loads its extrospect_codeix from the pushed files to find the table.
	xp_expect "info: .code_ranges.status" ok "$(jq -r '.code_ranges.status' "$json")"
	xp_expect "info: .agent.path ends with $nif" true \
		"$(jq -r --arg n "$nif" '.agent.path // "" | endswith($n)' "$json")"
	failed=$(jq -r '[.checks[]? | select(.result == "fail") | "\(.name): \(.detail)"] | join("; ")' "$json")
	xp_expect "info: failed checks" "" "$failed"
}

# The report of a successful inject: node line, what was loaded ($1: a regex), started, next.
check_started() {
	local loaded=$1 line
	xp_expect "inject: exit status" 0 "$rc"
	xp_expect "inject: stderr" "" "$(cat "$d/err")"
	xp_expect "report line 1" "node $node: OTP $otp (erts $erts), OS pid $XP_VM_PID" "$(sed -n 1p "$d/out")"
	line=$(sed -n 2p "$d/out")
	if [[ "$line" =~ $loaded ]]; then xp_pass "report line 2: $line"; else
		xp_fail "report line 2: expected /$loaded/, got '$line'"
	fi
	line=$(sed -n 3p "$d/out")
	# All but <= 6: frame_pointer and mbuf_sz cannot be checked on the agent's parked probe in
	# the RA layout (the agent logs why), one more for a field the release lacks, and the run
	# queue's three lengths (its ix, back-pointer and stride are checked; the lengths are
	# bounded at each read by the runq trigger).
	if [[ "$line" =~ ^agent\ started:\ calibration\ ok\ in\ [0-9]+\ ms\ \([0-9]+\ runs?\)\;\ ([0-9]+)\ of\ ([0-9]+)\ offsets\ verified,\ frame\ layout\ ra$ ]] &&
		((BASH_REMATCH[2] > 0 && BASH_REMATCH[1] + 6 >= BASH_REMATCH[2])); then
		xp_pass "report line 3: $line"
	else
		xp_fail "report line 3: expected a calibration ok with all but <= 6 offsets verified, got '$line'"
	fi
	xp_expect "report line 4" "next: extrospect info $XP_VM_PID" "$(sed -n 4p "$d/out")"
	xp_expect "report lines" 4 "$(wc -l <"$d/out")"
}

case_push() {
	local top port nif
	stage_install "$d/inst"
	unset EXTROSPECT_AGENT_DIR

	EXTROSPECT_COOKIE=$cookie EXTROSPECT_INJECT_MIN_OTP=$((otp + 1)) inject --node "$node"
	expect_refusal "node older than the floor" 6 \
		"extrospect: inject: the node runs OTP $otp; the agent needs OTP $((otp + 1)) or newer"
	EXTROSPECT_COOKIE=not-$cookie inject --node "$node"
	expect_refusal "wrong cookie" 9 \
		"extrospect: inject: node $node refused the cookie (cookie from EXTROSPECT_COOKIE)"
	EXTROSPECT_COOKIE=$cookie inject --node "xp_inj_nosuch_$$@$host"
	expect_refusal "no such node" 8 \
		"extrospect: inject: epmd on $host has no node named 'xp_inj_nosuch_$$' (is it running?)"
	port=$(free_port)
	EXTROSPECT_COOKIE=$cookie ERL_EPMD_PORT=$port inject --node "$node"
	expect_refusal "epmd down" 8 \
		"extrospect: inject: cannot reach epmd on $host port $port: Connection refused (is the node running?)"
	xp_expect "info before inject: .agent" null "$(xp_sampler info --json "$XP_VM_PID" | jq -r '.agent')"

	mkdir -p "$d/home"
	printf '%s\n' "$cookie" >"$d/home/.erlang.cookie"
	chmod 400 "$d/home/.erlang.cookie"
	HOME=$d/home inject --node "$node"
	check_started "^pushed the agent from $d/inst/lib/extrospect: $nbeams beams, extrospect.app, extrospect_nif.so \([0-9]+ KiB\) into (/.+/extrospect-inject-[0-9a-f]{12})/extrospect on the node$"
	top=$(sed -n 's/^pushed the agent from .* into \(.*\)\/extrospect on the node$/\1/p' "$d/out")
	[[ -n "$top" ]] || xp_die "no pushed directory in the report"
	xp_defer "rm -rf '${XP_VM_ROOT%/}$top'"
	xp_expect "pushed dir mode" 700 "$(stat -c %a "${XP_VM_ROOT%/}$top")"
	nif=${XP_VM_ROOT%/}$top/extrospect/priv/extrospect_nif.so
	if cmp -s "$d/inst/lib/extrospect/priv/extrospect_nif.so" "$nif"; then
		xp_pass "the pushed NIF is the install's"
	else
		xp_fail "pushed NIF $nif differs from the install's"
	fi
	xp_expect "pushed beams" "$nbeams" "$(find "${XP_VM_ROOT%/}$top/extrospect/ebin" -name '*.beam' | wc -l)"
	check_info_agent "$top/extrospect/priv/extrospect_nif.so"

	HOME=$d/home inject --node "$node"
	xp_expect "second inject: exit status" 0 "$rc"
	xp_expect "second inject: node line" "node $node: OTP $otp (erts $erts), OS pid $XP_VM_PID" "$(sed -n 1p "$d/out")"
	if [[ "$(sed -n 2p "$d/out")" =~ ^agent\ already\ running:\ calibration\ ok\ in\ [0-9]+\ ms\ \([0-9]+\ runs?\)\;\ nothing\ pushed$ ]]; then
		xp_pass "second inject: already running, nothing pushed"
	else
		xp_fail "second inject: got '$(sed -n 2p "$d/out")'"
	fi
}

case_codepath() {
	local app=$XP_VM_DIR/app/extrospect inner=$XP_WORK_INNER/app/extrospect f src=()
	mkdir -p "$app/ebin" "$app/priv" "$app/include"
	if compgen -G "$XP_REPO/include/*.hrl" >/dev/null; then cp "$XP_REPO"/include/*.hrl "$app/include/"; fi
	for f in "$XP_REPO"/src/*.erl; do
		cp "$f" "$app/"
		src+=("$inner/${f##*/}")
	done
	xp_in_root "$XP_VM_ROOT" erlc -I "$inner/include" -o "$inner/ebin" "${src[@]}" >"$d/erlc.log" 2>&1 ||
		{ cat "$d/erlc.log" >&2; xp_die "OTP $otp erlc failed on src/"; }
	sed 's/{vsn, *git}/{vsn, "0.0.0-e2e"}/' "$XP_REPO/src/extrospect.app.src" >"$app/ebin/extrospect.app"
	cp "$XP_NIF" "$app/priv/"
	printf '%s\n' "$cookie" >"$d/cookie"

	inject --node "$node" --cookie-file "$d/cookie" --code-path "/nonexistent-$$"
	xp_expect "bad --code-path: exit status" 1 "$rc"
	xp_expect "bad --code-path: stderr" \
		"extrospect: inject: the node refused the code path: {error, bad_directory}" \
		"$(cat "$d/err")"
	inject --node "$node" --cookie-file "$d/cookie" --code-path "$inner"
	check_started "^loaded the agent from $inner/ebin on the node \(--code-path\)$"
	check_info_agent "$inner/priv/extrospect_nif.so"
}

# The push with the cookie in EXTROSPECT_COOKIE, reading every /proc/*/cmdline while it runs.
case_cookie() {
	local ipid scans=0 hits=
	stage_install "$d/inst"
	unset EXTROSPECT_AGENT_DIR
	printf '%s\n' "$cookie" >"$d/pattern" # grep -f: the cookie is not on grep's command line either
	inject --node "$node" --cookie "$cookie"
	expect_refusal "--cookie on the command line" 2 \
		"extrospect: inject: --cookie would show the cookie to every user on this host (ps, /proc/PID/cmdline): give --cookie-file F, or set EXTROSPECT_COOKIE"
	EXTROSPECT_COOKIE=not-$cookie inject --node "$node"
	expect_refusal "wrong cookie from the environment" 9 \
		"extrospect: inject: node $node refused the cookie (cookie from EXTROSPECT_COOKIE)"
	rc=0
	EXTROSPECT_COOKIE=$cookie xp_sampler inject --node "$node" >"$d/out" 2>"$d/err" &
	ipid=$!
	while kill -0 "$ipid" 2>/dev/null; do
		hits+=$(grep -lsFf "$d/pattern" /proc/[0-9]*/cmdline || true)
		scans=$((scans + 1))
	done
	wait "$ipid" || rc=$?
	check_started "^pushed the agent from $d/inst/lib/extrospect: $nbeams beams, extrospect.app, extrospect_nif.so \([0-9]+ KiB\) into (/.+/extrospect-inject-[0-9a-f]{12})/extrospect on the node$"
	xp_defer "rm -rf '$(sed -n 's/^pushed the agent from .* into \(.*\)\/extrospect on the node$/\1/p' "$d/out")'"
	xp_expect "command lines holding the cookie during inject ($scans scans of /proc/*/cmdline)" "" "$hits"
	if ((scans >= 3)); then xp_pass "$scans scans while inject ran"; else xp_fail "only $scans scans while inject ran"; fi
	xp_expect "inject's output holding the cookie" "" "$(grep -hFf "$d/pattern" "$d/out" "$d/err" || true)"
}

xp_require_sampler
host=$(hostname -s)
# erl -sname names the node after this host; the sampler must resolve it to reach epmd.
getent hosts "$host" >/dev/null || xp_skip "this host's name '$host' does not resolve"
cookie=xp$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
name=xp_inj_${otp}_$$
node=$name@$host
if [[ "$case" == cookie ]]; then
	# The VM takes its cookie from $HOME/.erlang.cookie (owner-only, as erl demands), not from
	# its command line, so that a cookie found in /proc/*/cmdline could only be the sampler's.
	vmhome=$(mktemp -d "${TMPDIR:-/tmp}/xp-inj-home-XXXXXX")
	xp_defer "rm -rf '$vmhome'"
	printf '%s' "$cookie" >"$vmhome/.erlang.cookie"
	chmod 400 "$vmhome/.erlang.cookie"
	HOME=$vmhome xp_start_vm "$otp" noagent xp_idle -sname "$name"
else
	xp_start_vm "$otp" noagent xp_idle -sname "$name" -setcookie "$cookie"
fi
d=$XP_VM_DIR
srcs=("$XP_REPO"/src/*.erl)
nbeams=${#srcs[@]}
erts=$(xp_ready_get erts_version)
case $case in
push) case_push ;;
codepath) case_codepath ;;
cookie) case_cookie ;;
*) xp_die "unknown case '$case' (push or codepath)" ;;
esac
if xp_alive "$XP_VM_PID"; then xp_pass "the VM is still running"; else xp_fail "the VM died"; fi
xp_stop_vm
xp_summary
