#!/usr/bin/env bash
# ctest e2e.release.{25,27,29}: the agent as users ship it. Builds a minimal release (sasl +
# extrospect + a probe app holding test/targets/xp_ready.erl), boots it so the boot script starts
# the agent, and checks that `extrospect info --json` finds it, loaded from the release. OTP 25
# (host) builds with rebar3/relx; 27 and 29 (chroots, no rebar3) with systools and the chroot's erlc.
# Usage: release_test.sh [25|27|29] (default 25). Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

otp=${1:-25}
relvsn=0.1.0

# The probe's -run entry: waits until the agent the boot script started has finished its first
# calibration (so the sampler never races the publication), then writes the ready file.
write_probe() {
	cat >"$1/xp_rel_ready.erl" <<'EOF'
%% Written by test/e2e/release_test.sh: readiness of the release under test.
-module(xp_rel_ready).
-export([start/1]).

start([ReadyFile, HarnessPid]) ->
    case lists:keymember(extrospect, 1, application:which_applications()) of
        true -> await(erlang:monotonic_time(millisecond) + 20000);
        false -> ok
    end,
    xp_ready:release([ReadyFile, HarnessPid]).

await(Deadline) ->
    Status = try extrospect:status()
             catch Class:Error -> {Class, Error}
             end,
    case Status of
        #{runs := Runs} when Runs >= 1 ->
            ok;
        _ ->
            case erlang:monotonic_time(millisecond) < Deadline of
                true ->
                    receive after 10 -> await(Deadline) end;
                false ->
                    io:format("xp_rel_ready: no calibration within 20 s: ~p~n", [Status]),
                    erlang:halt(3)
            end
    end.
EOF
}

# OTP 25 on the host: a relx release. Sets rel (its root as the VM sees it) and cmd.
build_relx() {
	local proj=$dir/proj app=$dir/proj/apps/extrospect probe=$dir/proj/apps/xp_probe/src
	command -v rebar3 >/dev/null || xp_skip "rebar3 not installed (tools/install-deps.sh)"
	# The app is copied, not symlinked: the release must not run the repo's rebar3 hooks (CMake)
	# while other tests read priv/. Building the NIF through rebar3 is the job of erlang.eunit.
	mkdir -p "$app/src" "$app/priv" "$probe" "$proj/config"
	cp -r "$XP_REPO"/src/. "$app/src/"
	sed -i 's/{vsn, *git}/{vsn, "0.0.0-e2e"}/' "$app/src/extrospect.app.src"
	if [[ -d "$XP_REPO/include" ]]; then cp -r "$XP_REPO/include" "$app/"; fi
	cp "$XP_NIF" "$app/priv/"
	cp "$XP_REPO/test/targets/xp_ready.erl" "$probe/"
	write_probe "$probe"
	cat >"$probe/xp_probe.app.src" <<-'EOF'
		{application, xp_probe,
		 [{description, "extrospect e2e: writes the ready file once the release has booted"},
		  {vsn, "0.1.0"}, {registered, []}, {applications, [kernel, stdlib]}, {env, []}]}.
	EOF
	# No node name: the plain start script needs none, and no epmd is left behind.
	cat >"$proj/rebar.config" <<-EOF
		{relx, [{release, {xp_rel, "$relvsn"}, [sasl, extrospect, xp_probe]},
		        {include_erts, false}, {dev_mode, false}, {include_src, false},
		        {extended_start_script, false},
		        {sys_config, "config/sys.config"}, {vm_args, "config/vm.args"}]}.
	EOF
	echo '[].' >"$proj/config/sys.config"
	# The -run goes in vm.args: the plain start script splits its own arguments on a field
	# separator it builds with `printf '\x1f'`, which dash does not understand.
	printf -- '-noshell\n-run xp_rel_ready start %s %s\n' "$dir/ready" "$$" >"$proj/config/vm.args"
	xp_log "rebar3 release in $proj"
	if ! (cd "$proj" && rebar3 release) >"$dir/build.log" 2>&1; then
		cat "$dir/build.log" >&2
		xp_die "rebar3 release failed"
	fi
	rel=$proj/_build/default/rel/xp_rel
	[[ -d "$rel/lib" ]] || xp_die "no release at $rel"
	# The plain start script execs erlexec, which execs beam.smp.
	cmd=("$rel/bin/xp_rel")
}

# The systools half of build_chroot, run by the chroot's escript: Work holds lib/extrospect and
# lib/xp_probe (compiled); writes xp_rel.rel naming this OTP's versions, then the boot script and
# the release tar, unpacked into Work/rel. Prints the erts version.
write_mkrel() {
	cat >"$1" <<'EOF'
#!/usr/bin/env escript
main([Work, RelVsn]) ->
    Lib = Work ++ "/lib",
    AppVsn = fill_modules(Lib ++ "/extrospect/ebin/extrospect.app"),
    Vsn = fun(A) ->
              _ = application:load(A),
              {ok, V} = application:get_key(A, vsn),
              V
          end,
    Erts = erlang:system_info(version),
    Rel = {release, {"xp_rel", RelVsn}, {erts, Erts},
           [{kernel, Vsn(kernel)}, {stdlib, Vsn(stdlib)}, {sasl, Vsn(sasl)},
            {extrospect, AppVsn}, {xp_probe, "0.1.0"}]},
    Base = Work ++ "/xp_rel",
    ok = file:write_file(Base ++ ".rel", io_lib:format("~tp.~n", [Rel])),
    Opts = [{path, [Lib ++ "/*/ebin"]}, {outdir, Work}, silent],
    {ok, _, _} = systools:make_script(Base, Opts),
    {ok, _, _} = systools:make_tar(Base, Opts),
    ok = erl_tar:extract(Base ++ ".tar.gz", [{cwd, Work ++ "/rel"}, compressed]),
    io:put_chars(Erts).

%% rebar3 lists an application's modules in its .app; do the same. Returns the app's vsn.
fill_modules(File) ->
    {ok, [{application, Name, Props}]} = file:consult(File),
    Mods = [list_to_atom(filename:basename(F, ".beam"))
            || F <- filelib:wildcard(filename:dirname(File) ++ "/*.beam")],
    App = {application, Name, lists:keystore(modules, 1, Props, {modules, lists:sort(Mods)})},
    ok = file:write_file(File, io_lib:format("~tp.~n", [App])),
    proplists:get_value(vsn, Props).
EOF
}

# OTP 27 / 29 in a chroot: compiled with its erlc, packed with systools, started through erlexec
# with ROOTDIR at the unpacked release (as relx does), so $ROOT/lib is the release's lib.
build_chroot() {
	local probe=$dir/lib/xp_probe erts bindir
	xp_stage "$root" "$dir" agent # lib/extrospect/{ebin,priv} and targets/
	mkdir -p "$probe/src" "$probe/ebin"
	write_probe "$probe/src"
	cp "$dir/targets/xp_ready.beam" "$probe/ebin/"
	cat >"$probe/ebin/xp_probe.app" <<-'EOF'
		{application, xp_probe,
		 [{description, "extrospect e2e: writes the ready file once the release has booted"},
		  {vsn, "0.1.0"}, {modules, [xp_ready, xp_rel_ready]}, {registered, []},
		  {applications, [kernel, stdlib]}, {env, []}]}.
	EOF
	xp_in_root "$root" erlc +warnings_as_errors -o "$inner/lib/xp_probe/ebin" \
		"$inner/lib/xp_probe/src/xp_rel_ready.erl" >"$dir/build.log" 2>&1 ||
		{ cat "$dir/build.log" >&2; xp_die "compiling the probe failed"; }
	write_mkrel "$dir/mkrel.escript"
	xp_log "systools release in $dir (OTP $otp)"
	erts=$(xp_in_root "$root" escript "$inner/mkrel.escript" "$inner" "$relvsn" 2>"$dir/build.log") ||
		{ cat "$dir/build.log" >&2; xp_die "systools release failed"; }
	rel=$inner/rel
	[[ -f "$dir/rel/releases/$relvsn/start.boot" ]] || xp_die "no boot script in $dir/rel"
	bindir=/usr/lib/erlang/erts-$erts/bin
	cmd=(chroot "$root" env ROOTDIR="$rel" BINDIR="$bindir" EMU=beam PROGNAME=erl
		"$bindir/erlexec" -boot "$rel/releases/$relvsn/start" -noshell
		-run xp_rel_ready start "$inner/ready" "$$")
}

xp_require_sampler
[[ -f "$XP_NIF" ]] || xp_skip "agent NIF not built: $XP_NIF missing"
[[ -f "$XP_REPO/src/extrospect.app.src" ]] || xp_skip "agent app missing: src/extrospect.app.src"
xp_new_work_dir "$otp"
root=$XP_WORK_ROOT dir=$XP_WORK_DIR inner=$XP_WORK_INNER

rel=
cmd=()
if [[ "$root" == / ]]; then build_relx; else build_chroot; fi

# A subshell that execs: env, chroot, env, the start script and erlexec all exec, so $! is beam.smp.
(cd "$dir" && exec env ERL_CRASH_DUMP="$inner/erl_crash.dump" "${cmd[@]}") \
	</dev/null >"$dir/vm.log" 2>&1 &
xp_adopt_vm "$!" "$dir" "$root"
[[ "$(xp_ready_get agent)" == true ]] || xp_die "the release booted without the extrospect application"
xp_log "OTP $otp release VM $XP_VM_PID ready ($(xp_ready_get system_version))"

json=$dir/info.json
rc=0
xp_sampler info --json "$XP_VM_PID" >"$json" 2>"$dir/info.err" || rc=$?
xp_expect "exit status of 'info --json $XP_VM_PID'" 0 "$rc"
if jq -e 'type == "object"' "$json" >/dev/null 2>&1; then
	xp_expect ".agent != null" true "$(jq -r '.agent != null' "$json")"
	xp_expect ".agent.abi_version" 1 "$(jq -r '.agent.abi_version' "$json")"
	# The agent loaded its extrospect_codeix from the release to find the module table.
	xp_expect ".code_ranges.status" ok "$(jq -r '.code_ranges.status' "$json")"
	xp_expect ".otp_release" "$otp" "$(jq -r .otp_release "$json")"
	xp_expect ".otp_release (the VM's own)" "$(xp_ready_get otp_release)" "$(jq -r .otp_release "$json")"
	# /proc/PID/maps names files relative to the reader's root: the host path, chroot included.
	path=$(jq -r '.agent.path' "$json")
	if [[ "$path" == "${root%/}$rel"/lib/extrospect-*/priv/* ]]; then
		xp_pass ".agent.path is inside the release: $path"
	else
		xp_fail ".agent.path: expected under ${root%/}$rel/lib/extrospect-*/priv/, got '$path'"
	fi
else
	xp_fail "'info --json' did not print a JSON object"
	head -c 2000 "$json" "$dir/info.err"
fi
xp_stop_vm
xp_summary
