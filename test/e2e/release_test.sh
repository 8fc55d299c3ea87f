#!/usr/bin/env bash
# ctest e2e.release: the agent as users ship it. Builds a minimal relx release (extrospect + sasl +
# a probe app holding test/targets/xp_ready.erl) with rebar3 on host OTP 25, boots it, and checks
# that `extrospect info --json` finds the agent the release boot started, loaded from the release.
# Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

xp_require_sampler
command -v rebar3 >/dev/null || xp_skip "rebar3 not installed (tools/install-deps.sh)"
[[ -f "$XP_NIF" ]] || xp_skip "agent NIF not built: $XP_NIF missing"
[[ -f "$XP_REPO/src/extrospect.app.src" ]] || xp_skip "agent app missing: src/extrospect.app.src"
xp_otp_lookup 25 || xp_skip "$XP_OTP_WHY"

proj=$(mktemp -d "${TMPDIR:-/tmp}/xp-rel-XXXXXX")
xp_defer "rm -rf '$proj'"

# The app is copied, not symlinked: the release must not run the repo's rebar3 hooks (CMake) while
# other tests read priv/. Building the NIF through rebar3 is the job of erlang.eunit.
app=$proj/apps/extrospect
mkdir -p "$app/src" "$app/priv" "$proj/apps/xp_probe/src" "$proj/config"
cp -r "$XP_REPO"/src/. "$app/src/"
sed -i 's/{vsn, *git}/{vsn, "0.0.0-e2e"}/' "$app/src/extrospect.app.src"
if [[ -d "$XP_REPO/include" ]]; then cp -r "$XP_REPO/include" "$app/"; fi
cp "$XP_NIF" "$app/priv/"
cp "$XP_REPO/test/targets/xp_ready.erl" "$proj/apps/xp_probe/src/"
cat >"$proj/apps/xp_probe/src/xp_probe.app.src" <<'EOF'
{application, xp_probe,
 [{description, "extrospect e2e: writes the ready file once the release has booted"},
  {vsn, "0.1.0"}, {registered, []}, {applications, [kernel, stdlib]}, {env, []}]}.
EOF
# No node name: the plain start script needs none, and no epmd is left behind.
cat >"$proj/rebar.config" <<'EOF'
{relx, [{release, {xp_rel, "0.1.0"}, [sasl, extrospect, xp_probe]},
        {include_erts, false}, {dev_mode, false}, {include_src, false},
        {extended_start_script, false},
        {sys_config, "config/sys.config"}, {vm_args, "config/vm.args"}]}.
EOF
run=$proj/run
mkdir -p "$run"
echo '[].' >"$proj/config/sys.config"
# The -run goes in vm.args: the plain start script splits its own arguments on a field separator
# it builds with `printf '\x1f'`, which dash does not understand (it splits on '\', x, 1 and f).
printf -- '-noshell\n-run xp_ready release %s %s\n' "$run/ready" "$$" >"$proj/config/vm.args"

xp_log "rebar3 release in $proj"
if ! (cd "$proj" && rebar3 release) >"$proj/rebar3.log" 2>&1; then
	cat "$proj/rebar3.log" >&2
	xp_die "rebar3 release failed"
fi
rel=$proj/_build/default/rel/xp_rel
[[ -d "$rel/lib" ]] || xp_die "no release at $rel"

# The plain start script execs erlexec, which execs beam.smp: $! is the VM.
(cd "$run" && exec env ERL_CRASH_DUMP="$run/erl_crash.dump" "$rel/bin/xp_rel") \
	</dev/null >"$run/vm.log" 2>&1 &
xp_adopt_vm "$!" "$run" /
[[ "$(xp_ready_get agent)" == true ]] || xp_die "the release booted without the extrospect application"

json=$run/info.json
rc=0
xp_sampler info --json "$XP_VM_PID" >"$json" 2>"$run/info.err" || rc=$?
xp_expect "exit status of 'info --json $XP_VM_PID'" 0 "$rc"
if jq -e 'type == "object"' "$json" >/dev/null 2>&1; then
	xp_expect ".agent != null" true "$(jq -r '.agent != null' "$json")"
	xp_expect ".agent.abi_version" 1 "$(jq -r '.agent.abi_version' "$json")"
	xp_expect ".otp_release" "$(xp_ready_get otp_release)" "$(jq -r .otp_release "$json")"
	path=$(jq -r '.agent.path' "$json")
	if [[ "$path" == "$rel"/lib/extrospect-*/priv/* ]]; then
		xp_pass ".agent.path is inside the release: $path"
	else
		xp_fail ".agent.path: expected under $rel/lib/extrospect-*/priv/, got '$path'"
	fi
else
	xp_fail "'info --json' did not print a JSON object"
	head -c 2000 "$json" "$run/info.err"
fi
xp_stop_vm
xp_summary
