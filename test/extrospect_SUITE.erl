%% Common Test suite of the agent's lifecycle and of what it publishes: application start/stop,
%% the info/0 map against this VM, 100 NIF reload cycles (fresh loads that dlclose/dlopen the
%% library and upgrades), info/0 racing reloads, and the FP frame layout in a peer VM started
%% with +JPperf map. Exact offsets come from extrospect_tests:expected_offsets/1.
-module(extrospect_SUITE).

-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([start_stop/1, info_map/1, calibration/1, schedulers/1, reload_100/1,
         info_during_reloads/1, fp_layout_peer/1]).

all() ->
    [start_stop, info_map, calibration, schedulers, reload_100, info_during_reloads,
     fp_layout_peer].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(extrospect),
    ok = extrospect:recalibrate(),
    Config.

end_per_suite(_Config) ->
    application:stop(extrospect).

%% The reload cases calibrate on every load: the agent's notices (two or three a load) would
%% bury a failure in hundreds of lines, so only its warnings are kept there.
init_per_testcase(Case, Config) when Case =:= reload_100; Case =:= info_during_reloads ->
    ok = logger:set_module_level(extrospect_agent, warning),
    Config;
init_per_testcase(_Case, Config) ->
    Config.

end_per_testcase(_Case, _Config) ->
    ok = logger:unset_module_level(extrospect_agent).

start_stop(_Config) ->
    [begin
         ok = application:stop(extrospect),
         undefined = whereis(extrospect_agent),
         undefined = whereis(extrospect_probe),
         {ok, [extrospect]} = application:ensure_all_started(extrospect),
         ok = extrospect:recalibrate(),
         #{result := ok, running := false} = extrospect:status()
     end || _ <- lists:seq(1, 3)],
    ok.

info_map(_Config) ->
    I = extrospect:info(),
    Keys = [addresses, block, calibrated, checks, erts_version, flavor, frame_layout,
            max_normal_nif_us, offsets, os_pid, otp_release, probe, schedulers, spies,
            system_version, table_row, timing, word_size],
    ?assertEqual(Keys, lists:sort(maps:keys(I))),
    ?assertEqual(erlang:system_info(otp_release), maps:get(otp_release, I)),
    ?assertEqual(erlang:system_info(version), maps:get(erts_version, I)),
    ?assertEqual(jit, maps:get(flavor, I)),
    ?assertEqual(ra_or_fp(), maps:get(frame_layout, I)),
    ?assert(maps:get(max_normal_nif_us, I) < 1000),
    #{block := #{magic_ok := true, abi_version := 1, size := 27616}} = I,
    #{spies := #{version := 1, count := 2}} = I,
    ok.

calibration(_Config) ->
    Offs = maps:get(offsets, extrospect:info()),
    Expected = extrospect_tests:expected_offsets(erlang:system_info(otp_release)),
    Fp = ra_or_fp() =:= fp,
    Wrong = [{N, V, maps:get(N, Offs)} || {N, V} <- maps:to_list(Expected),
                                         not offset_ok(N, V, Fp, maps:get(N, Offs))],
    ?assertEqual([], Wrong).

offset_ok(p_msg_len, undefined, _Fp, #{value := undefined, reason := unsupported}) -> true;
offset_ok(p_mbuf_sz, V, _Fp, #{value := V, verified := false, reason := uncheckable}) -> true;
%% The run queue's lengths and info size: the layout row's, bounded at each read by the runq
%% trigger; the agent cannot check them (calib_sched.c).
offset_ok(N, V, _Fp, #{value := V, table := V, verified := false, reason := uncheckable})
  when N =:= rq_len; N =:= rq_procs_len; N =:= rq_info_size -> true;
offset_ok(p_frame_pointer, 96, false, #{value := 96, verified := false,
                                        reason := uncheckable}) -> true;
offset_ok(_, V, _Fp, #{value := V, verified := true, mismatch := false, table := V}) -> true;
offset_ok(_, _, _, _) -> false.

schedulers(_Config) ->
    Scheds = maps:get(schedulers, extrospect:info()),
    Normal = [S || #{type := normal} = S <- Scheds],
    ?assertEqual(erlang:system_info(schedulers), length(Normal)),
    ?assertEqual(erlang:system_info(dirty_cpu_schedulers),
                 length([S || #{type := dirty_cpu} = S <- Scheds])),
    ?assertEqual(erlang:system_info(dirty_io_schedulers),
                 length([S || #{type := dirty_io} = S <- Scheds])),
    Tasks = tasks(),
    [?assertEqual({T, N, extrospect_tests:thread_name(T, N), true},
                  {T, N, maps:get(Tid, Tasks, none), V})
     || #{type := T, number := N, tid := Tid, verified := V} <- Scheds],
    ok.

%% tid -> comm of every thread of this VM.
tasks() ->
    {ok, Tids} = file:list_dir("/proc/self/task"),
    maps:from_list([{list_to_integer(T), comm(T)} || T <- Tids]).

comm(Tid) ->
    case file:read_file("/proc/self/task/" ++ Tid ++ "/comm") of
        {ok, B} -> string:trim(binary_to_list(B));
        {error, _} -> gone
    end.

%% Even cycles: delete + purge (the library's last instance goes: unload, dlclose) then load
%% (dlopen, load). Odd cycles: load over the current code (upgrade). The block must be
%% republished with a newer generation every time, and memory must not grow. What the NIF and
%% its code allocate is in erlang:memory(system); processes' heaps are not measured, since
%% Common Test's own processes move erlang:memory(total) by -4.4 to +0.7 MB from one run to the
%% next, against the 2 MB this case allowed it (the likeliest cause of one CI failure whose log
%% lost the failing case).
reload_100(_Config) ->
    [reload(I) || I <- lists:seq(1, 10)], % warm-up: first loads allocate code areas
    idle(),
    {M0, N0} = footprint(),
    G0 = generation(),
    Last = lists:foldl(fun(I, Prev) ->
                               reload(I),
                               #{magic_ok := true, generation := G} =
                                   maps:get(block, extrospect:info()),
                               ?assert(G > Prev),
                               G
                       end, G0, lists:seq(1, 100)),
    ?assert(Last > G0),
    idle(),
    {M1, N1} = footprint(),
    ct:pal("100 reloads: erlang:memory(system) grew by ~w bytes; processes ~w -> ~w",
           [M1 - M0, N0, N1]),
    ?assert(M1 - M0 < 1024 * 1024),
    ?assert(N1 - N0 < 10),
    calibration([]),
    #{checks := Checks} = extrospect:info(),
    ?assertEqual([], [C || {C, fail} <- maps:to_list(Checks)]).

reload(I) ->
    _ = code:purge(extrospect_nif),
    I rem 2 =:= 0 andalso code:delete(extrospect_nif) andalso code:purge(extrospect_nif),
    {module, extrospect_nif} = code:load_file(extrospect_nif).

%% Readers in other processes keep calling info/0 while the library is upgraded under them. A
%% reader caught inside the old code when it is purged is killed (code:purge/1 does that); any
%% other end, or a bad map, fails the case. 5 upgrades: with four readers busy on two
%% schedulers each purge and load waits its turn behind them
%% (about 2.7 s an upgrade on this 2-core machine, against 4 ms idle; 30 took 97 s of CI).
info_during_reloads(_Config) ->
    Readers = [spawn_monitor(fun() -> reader(0) end) || _ <- lists:seq(1, 4)],
    [begin
         _ = code:purge(extrospect_nif),
         {module, extrospect_nif} = code:load_file(extrospect_nif)
     end || _ <- lists:seq(1, 5)],
    [Pid ! stop || {Pid, _} <- Readers],
    Ends = [receive {'DOWN', Ref, process, Pid, Why} -> Why end || {Pid, Ref} <- Readers],
    ct:pal("readers ended: ~p", [Ends]),
    ?assertEqual([], [E || E <- Ends, E =/= killed, element(1, E) =/= done]),
    idle().

reader(N) ->
    receive
        stop -> exit({done, N})
    after 0 ->
            #{block := #{magic_ok := true}} = extrospect:info(),
            reader(N + 1)
    end.

%% A second VM with frame pointers: frame_layout fp, frame_pointer verified, all checks pass.
fp_layout_peer(_Config) ->
    Paths = lists:usort([filename:dirname(code:which(M))
                         || M <- [extrospect, extrospect_nif]]),
    {ok, Peer, _Node} = peer:start_link(#{connection => standard_io,
                                   args => ["+JPperf", "map" | lists:append([["-pa", P] || P <- Paths])]}),
    OsPid = peer:call(Peer, os, getpid, []),
    try
        {ok, _} = peer:call(Peer, application, ensure_all_started, [extrospect]),
        ok = peer:call(Peer, extrospect, recalibrate, [], 30000),
        I = peer:call(Peer, extrospect, info, []),
        ?assertEqual(fp, maps:get(frame_layout, I)),
        Offs = maps:get(offsets, I),
        ?assertMatch(#{value := 96, verified := true, source := calibrated},
                     maps:get(p_frame_pointer, Offs)),
        Release = peer:call(Peer, erlang, system_info, [otp_release]),
        Expected = extrospect_tests:expected_offsets(Release),
        ?assertEqual([], [N || {N, V} <- maps:to_list(Expected),
                               not offset_ok(N, V, true, maps:get(N, Offs))]),
        ?assertEqual([], [C || {C, fail} <- maps:to_list(maps:get(checks, I))])
    after
        peer:stop(Peer),
        file:delete("/tmp/perf-" ++ OsPid ++ ".map")
    end.

ra_or_fp() ->
    case string:find(erlang:system_info(system_version), ":fp]") of
        nomatch -> ra;
        _ -> fp
    end.

generation() ->
    maps:get(generation, maps:get(block, extrospect:info())).

idle() ->
    ok = extrospect:recalibrate(),
    #{running := false} = extrospect:status(),
    ok.

%% {erlang:memory(system), the number of processes}, after a collection of every process.
footprint() ->
    [erlang:garbage_collect(P) || P <- processes()],
    {erlang:memory(system), erlang:system_info(process_count)}.
