%% EUnit tests of the agent in this VM: the published facts, exact calibrated offsets for the
%% running release (25, 27 or 29), the load-time checks, the scheduler table against
%% /proc/self/task, the time budget, and 100 NIF unload/reload cycles without a leak.
-module(extrospect_tests).

-include_lib("eunit/include/eunit.hrl").

-export([expected_offsets/1, thread_name/2]).

agent_test_() ->
    {setup, fun start/0, fun stop/1,
     fun(_) ->
             [{"facts", fun facts/0},
              {"offsets: exact values, all verified", fun offsets/0},
              {"load-time checks", fun checks/0},
              {"scheduler table", fun schedulers/0},
              {"addresses", fun addresses/0},
              {"block header", fun block/0},
              {"normal-scheduler time budget", fun budget/0},
              {"spies: two parked, named threads of this VM", fun spies_default/0},
              {"spies: parked ones cost ~10 wakeups a second", fun spies_idle_cost/0},
              {"spies: start_spies/1 and stop_spies/0", fun spies_restart/0},
              {"events: the tracer is off, its thread costs ~10 wakeups a second",
               fun events_idle/0},
              {timeout, 600, {"100 unload/reload cycles", fun reload_cycles/0}},
              {timeout, 120, {"application restart", fun app_restart/0}}]
     end}.

start() ->
    {ok, _} = application:ensure_all_started(extrospect),
    ok = extrospect:recalibrate().

stop(_) ->
    application:stop(extrospect).

release() ->
    erlang:system_info(otp_release).

fp() ->
    string:find(erlang:system_info(system_version), ":fp]") =/= nomatch.

%% The Debian builds' Process/ErtsSchedulerData/Atom/IndexTable offsets (otp-internals.md §4-§6).
expected_offsets(Release) ->
    Common = #{p_id => 0, p_htop => 80, p_stop => 88, p_frame_pointer => 96,
               esd_registers => 0, esd_current_process => 168, esd_type => 176,
               esd_no => 184, esd_dirty_no => 192, regproc_name => 32, atom_len => 24,
               atom_name => 32, itab_entries => 116, itab_seg_table => 120},
    maps:merge(maps:merge(Common, per_release(Release)), runq(Release)).

%% The run queues (record --trigger runq; tools/layout-probe): 29 reordered ErtsRunQueue.
runq("29") ->
    #{esd_run_queue => 232, rq_ix => 168, rq_scheduler => 224, rq_len => 164,
      rq_procs_len => 48, rq_info_size => 12, rq_stride => 384};
runq(_) ->
    #{esd_run_queue => 232, rq_ix => 0, rq_scheduler => 144, rq_len => 208,
      rq_procs_len => 240, rq_info_size => 12, rq_stride => 448}.

per_release("25") ->
    #{p_old_heap => 520, p_old_htop => 512, p_old_hend => 504, p_mbuf_sz => 584,
      p_off_heap_overhead => 544, p_bin_old_vheap => 616, p_bin_vheap_sz => 600, p_reds => 280,
      p_heap => 128, p_hend => 136, p_abandoned_heap => 144, p_heap_sz => 152, p_i => 256,
      p_current => 472,
      p_initial => 448, p_reg => 48, p_state => 640, p_scheduler_data => 760,
      p_fcalls => 104, p_msg_len => undefined, esd_stride => 41728,
      regs_x_reg_array => 128, p_sizeof => 776, p_dictionary => 416};
per_release(R) when R =:= "27"; R =:= "29" ->
    #{p_old_heap => 512, p_old_htop => 504, p_old_hend => 496, p_mbuf_sz => 568,
      p_off_heap_overhead => 528, p_bin_old_vheap => 600, p_bin_vheap_sz => 584, p_reds => 272,
      p_heap => 192, p_hend => 200, p_abandoned_heap => 208, p_heap_sz => 216, p_i => 248,
      p_current => 464,
      p_initial => 440, p_reg => 32, p_state => 624, p_scheduler_data => 744,
      p_fcalls => 120, p_msg_len => 336, esd_stride => 41792, regs_x_reg_array => 64,
      p_sizeof => case R of "27" -> 760; "29" -> 768 end, p_dictionary => 408}.

%% Scheduler thread names (otp-internals.md §5), cut to the kernel's 15 characters.
thread_name(Type, N) ->
    Fmt = case {release(), Type} of
              {"25", normal} -> "~b_scheduler";
              {"25", dirty_cpu} -> "~b_dirty_cpu_scheduler";
              {"25", dirty_io} -> "~b_dirty_io_scheduler";
              {_, normal} -> "erts_sched_~b";
              {_, dirty_cpu} -> "erts_dcpus_~b";
              {_, dirty_io} -> "erts_dios_~b"
          end,
    string:slice(lists:flatten(io_lib:format(Fmt, [N])), 0, 15).

facts() ->
    I = extrospect:info(),
    ?assertEqual(erlang:system_info(otp_release), maps:get(otp_release, I)),
    ?assertEqual(erlang:system_info(version), maps:get(erts_version, I)),
    ?assertEqual(erlang:system_info(system_version), maps:get(system_version, I)),
    ?assertEqual(jit, maps:get(flavor, I)),
    ?assertEqual(case fp() of true -> fp; false -> ra end, maps:get(frame_layout, I)),
    ?assertEqual(list_to_integer(os:getpid()), maps:get(os_pid, I)),
    ?assertEqual(8, maps:get(word_size, I)),
    ?assertEqual(true, maps:get(calibrated, I)),
    ?assertEqual("extrospect_probe", maps:get(atom_text, maps:get(probe, I))),
    ?assertMatch(#{atom_word := W} when W band 16#3f =:= 16#0b, maps:get(probe, I)).

offsets() ->
    Offs = maps:get(offsets, extrospect:info()),
    Expected = expected_offsets(release()),
    ?assertEqual(lists:sort(maps:keys(Expected)), lists:sort(maps:keys(Offs))),
    [check_offset(Name, Value, maps:get(Name, Offs)) || {Name, Value} <- maps:to_list(Expected)].

check_offset(p_msg_len, undefined, E) ->
    ?assertMatch(#{value := undefined, verified := false, reason := unsupported}, E);
%% A parked process has no heap fragments: the agent cannot check mbuf_sz (calib_memory.c).
check_offset(p_mbuf_sz, V, E) ->
    ?assertMatch(#{value := V, verified := false, reason := uncheckable, source := table}, E);
%% Lengths and a size: the agent has no structural test; the sampler bounds them on each read.
check_offset(N, V, E) when N =:= rq_len; N =:= rq_procs_len; N =:= rq_info_size ->
    ?assertMatch(#{value := V, verified := false, reason := uncheckable, source := table}, E);
check_offset(p_frame_pointer, V, E) ->
    case fp() of
        true -> ?assertMatch(#{value := V, verified := true, mismatch := false}, E);
        false -> ?assertMatch(#{value := V, verified := false, reason := uncheckable,
                                source := table}, E)
    end;
check_offset(Name, V, E) ->
    ?assertEqual({Name, V, true, false, V, none},
                 {Name, maps:get(value, E), maps:get(verified, E), maps:get(mismatch, E),
                  maps:get(table, E), maps:get(reason, E)}).

checks() ->
    Checks = maps:get(checks, extrospect:info()),
    Dynsym = case release() of "29" -> not_run; _ -> pass end,
    ?assertEqual(#{pid_word => pass, htop_stop => pass, heap_quad => pass,
                   normal_exit => pass, esd_backptr => pass, atom_roundtrip => pass,
                   jit_caller => pass, dynsym_agree => Dynsym}, Checks).

schedulers() ->
    I = extrospect:info(),
    Scheds = maps:get(schedulers, I),
    Stride = maps:get(value, maps:get(esd_stride, maps:get(offsets, I))),
    Expect = [{normal, erlang:system_info(schedulers)},
              {dirty_cpu, erlang:system_info(dirty_cpu_schedulers)},
              {dirty_io, erlang:system_info(dirty_io_schedulers)}],
    ?assertEqual(lists:sum([N || {_, N} <- Expect]), length(Scheds)),
    Addrs = maps:get(addresses, I),
    Bases = #{normal => scheduler_data, dirty_cpu => dirty_cpu_scheduler_data,
              dirty_io => dirty_io_scheduler_data},
    [begin
         Of = [S || #{type := T} = S <- Scheds, T =:= Type],
         ?assertEqual(lists:seq(1, Count), [N || #{number := N} <- Of]),
         Base = maps:get(value, maps:get(maps:get(Type, Bases), Addrs)),
         [begin
              ?assertEqual({Type, N, true}, {Type, N, V}),
              ?assertEqual(Base + (N - 1) * Stride, E),
              ?assertEqual(thread_name(Type, N), comm(Tid))
          end || #{number := N, tid := Tid, esdp := E, verified := V} <- Of]
     end || {Type, Count} <- Expect],
    ok.

comm(Tid) ->
    {ok, B} = file:read_file("/proc/self/task/" ++ integer_to_list(Tid) ++ "/comm"),
    string:trim(binary_to_list(B)).

addresses() ->
    Addrs = maps:get(addresses, extrospect:info()),
    Dynsym = release() =/= "29",
    Sources = #{scheduler_data => runtime, dirty_cpu_scheduler_data => runtime,
                dirty_io_scheduler_data => runtime, atom_table => scan,
                jit_descriptor => scan, normal_exit => runtime,
                process_table => case Dynsym of true -> dynsym; false -> scan end,
                allctrs_info => case Dynsym of true -> dynsym; false -> scan end,
                %% Found by the load diff (c_src/calib/calib_codeix.c); on 25/27 equal to .dynsym.
                active_code_ix => scan, code_ranges => scan,
                probe_process => runtime},
    ?assertEqual(lists:sort(maps:keys(Sources)), lists:sort(maps:keys(Addrs))),
    [begin
         #{value := V, source := S, verified := Ver, dynsym := D} = maps:get(Name, Addrs),
         ?assertEqual({Name, Src, true}, {Name, S, Ver}),
         ?assert(V > 16#10000),
         case Dynsym andalso Name =/= probe_process andalso Name =/= code_ranges of
             true -> ?assertEqual({Name, V}, {Name, D});
             false -> ?assertEqual({Name, undefined}, {Name, D})
         end
     end || {Name, Src} <- maps:to_list(Sources)],
    %% Each load steps the_active_code_index and the_staging_code_index: at least those two
    %% words. Another word of beam.smp's data may happen to step by one as often (seen once in
    %% CI: 3); the ranges table then picks the index, checked against .dynsym above.
    #{codeix_words := Words} = maps:get(timing, extrospect:info()),
    ?assert(Words >= 2),
    ok.

block() ->
    #{block := B} = extrospect:info(),
    ?assertMatch(#{magic_ok := true, abi_version := 1, size := 27616}, B),
    ?assert(maps:get(generation, B) > 0),
    ?assertEqual(0, maps:get(seq, B) band 1).

%% Invariant 4: no normal-scheduler NIF call over 1 ms. A call the OS preempted (an involuntary
%% switch, a loaded machine) is counted apart: its wall time is the machine's, not the call's.
budget() ->
    I = extrospect:info(),
    Us = maps:get(max_normal_nif_us, I),
    T = maps:get(timing, I),
    ?debugFmt("longest normal-scheduler NIF call: ~b us (~b preempted calls apart, longest ~b us); "
              "per NIF: ~p", [Us, maps:get(preempted_normal_nif_calls, T),
                              maps:get(max_preempted_normal_nif_us, T), maps:get(max_nif_us, T)]),
    ?assert(Us < 1000).

%% Alternately a fresh load (delete + purge: the library is dlclose'd and dlopen'ed again) and
%% an upgrade (purge + load: the new instance inherits the old one's calibration).
reload_cycles() ->
    lists:foldl(fun reload_once/2, 0, lists:seq(1, 10)), % warm-up: first loads allocate code areas
    idle(),
    #{block := #{generation := G0}} = extrospect:info(),
    {M0, R0} = footprint(),
    Last = lists:foldl(fun reload_once/2, G0, lists:seq(1, 100)),
    ?assert(Last > G0),
    idle(),
    {M1, R1} = footprint(),
    ?debugFmt("100 reloads: erlang:memory(total) ~w bytes, RSS ~w KiB", [M1 - M0, R1 - R0]),
    no_leak(M1 - M0, M1, Last),
    ?assert(R1 - R0 < 16 * 1024),
    %% Each unload joined its instance's spies; the agent started two in the new one.
    ?assertEqual(2, length(spy_threads())),
    offsets(),
    checks().

%% erlang:memory(total) moves by up to +-2.5 MB between two quiet readings (-1.7, +0.2, +0.5 MB
%% here; +2.46 MB once in CI beside another test): code and literal areas are freed after a
%% purge, asynchronously. A leak grows over a second hundred reloads too: under 2 MiB in either
%% hundred is no leak of 20 KiB a reload.
no_leak(Grew, _M1, _Last) when Grew < 2 * 1024 * 1024 ->
    ok;
no_leak(_Grew, M1, Last) ->
    _ = lists:foldl(fun reload_once/2, Last, lists:seq(1, 100)),
    idle(),
    {M2, _} = footprint(),
    ?debugFmt("100 more reloads: erlang:memory(total) ~w bytes", [M2 - M1]),
    ?assert(M2 - M1 < 2 * 1024 * 1024).

reload_once(I, Prev) ->
    _ = code:purge(extrospect_nif),
    I rem 2 =:= 0 andalso code:delete(extrospect_nif) andalso code:purge(extrospect_nif),
    {module, extrospect_nif} = code:load_file(extrospect_nif),
    #{block := #{generation := G, magic_ok := Magic}} = extrospect:info(),
    ?assertEqual({I, true}, {I, Magic}),
    ?assert(G > Prev),
    G.

%% Until no calibration runs or is pending (recalibrate replies after the pending run).
idle() ->
    ok = extrospect:recalibrate(),
    #{running := false} = extrospect:status(),
    ok.

footprint() ->
    [erlang:garbage_collect(P) || P <- processes()],
    {erlang:memory(total), rss_kb()}.

rss_kb() ->
    {ok, B} = file:read_file("/proc/self/status"),
    [Line] = [L || L <- string:split(binary_to_list(B), "\n", all),
                   lists:prefix("VmRSS:", L)],
    [_, Kb | _] = string:lexemes(Line, " \t"),
    list_to_integer(Kb).

app_restart() ->
    [begin
         ok = application:stop(extrospect),
         {ok, _} = application:ensure_all_started(extrospect),
         ok = extrospect:recalibrate(),
         ?assertMatch(#{calibrated := true, block := #{magic_ok := true}}, extrospect:info()),
         ?assertEqual(2, length(spy_threads()))
     end || _ <- lists:seq(1, 5)],
    checks().

%% {Tid, Comm} of this VM's threads named xp_spy_N.
spy_threads() ->
    Dir = "/proc/self/task",
    {ok, Tids} = file:list_dir(Dir),
    lists:sort([{list_to_integer(T), Comm}
                || T <- Tids,
                   {ok, C} <- [file:read_file(filename:join([Dir, T, "comm"]))],
                   Comm <- [string:trim(binary_to_list(C))],
                   lists:prefix("xp_spy_", Comm)]).

%% The application's {spies, 2}: parked, never retargeted, each a thread of this VM named after
%% its slot, and the block's spy region says the same (extrospect:info/0 is the NIF's copy).
spies_default() ->
    Spies = extrospect:spies(),
    ?assertEqual(2, length(Spies)),
    Threads = spy_threads(),
    [begin
         ?assertMatch(#{state := parked, target := 0, loops := 0, owner := 0}, S),
         ?assertEqual({I, {Tid, "xp_spy_" ++ integer_to_list(I + 1)}},
                      {I, lists:keyfind(Tid, 1, Threads)})
     end || #{index := I, tid := Tid} = S <- Spies],
    ?assertMatch(#{spies := #{version := 1, count := 2}}, extrospect:info()).

%% A parked spy wakes every 100 ms to look at its slot, and does nothing else.
spies_idle_cost() ->
    Before = [{T, switches(T)} || {T, _} <- spy_threads()],
    receive after 1000 -> ok end,
    [begin
         N = switches(T) - N0,
         ?debugFmt("parked spy ~b: ~b context switches in 1 s", [T, N]),
         ?assert(N =< 15)
     end || {T, N0} <- Before].

%% The event tracer with no sampler: off, no flag set, its xp_tracer thread looks at its slot
%% every 100 ms and does nothing else; enabled/3 with a session that is not live discards.
events_idle() ->
    ?assertMatch(#{state := off, flags_on := 0}, extrospect_nif:tracer_info()),
    ?assertMatch(#{tracer := #{state := off}}, extrospect_events:status()),
    ?assertEqual(discard, extrospect_nif:enabled(send, 12345, self())),
    ?assertEqual(remove, extrospect_nif:enabled(trace_status, 12345, self())),
    [T] = [Tid || {Tid, "xp_tracer"} <- threads()],
    N0 = switches(T),
    receive after 1000 -> ok end,
    N = switches(T) - N0,
    ?debugFmt("xp_tracer: ~b context switches in 1 s", [N]),
    ?assert(N =< 15).

threads() ->
    Dir = "/proc/self/task",
    {ok, Tids} = file:list_dir(Dir),
    [{list_to_integer(T), string:trim(binary_to_list(C))}
     || T <- Tids, {ok, C} <- [file:read_file(filename:join([Dir, T, "comm"]))]].

switches(Tid) ->
    {ok, B} = file:read_file("/proc/self/task/" ++ integer_to_list(Tid) ++ "/status"),
    [V] = [list_to_integer(string:trim(binary_to_list(Rest)))
           || Line <- binary:split(B, <<"\n">>, [global]),
              <<"voluntary_ctxt_switches:", Rest/binary>> <- [Line]],
    V.

spies_restart() ->
    ok = extrospect:start_spies(4),
    ?assertEqual(4, length(extrospect:spies())),
    ?assertEqual(4, length(spy_threads())),
    T0 = erlang:monotonic_time(microsecond),
    ok = extrospect:stop_spies(),
    ?debugFmt("stop_spies: ~b us", [erlang:monotonic_time(microsecond) - T0]),
    ?assertEqual([], extrospect:spies()),
    ?assertEqual([], spy_threads()),
    ?assertMatch(#{spies := #{version := 0, count := 0}}, extrospect:info()),
    ok = extrospect:start_spies(2),
    ?assertEqual(2, length(spy_threads())).

%% extrospect:write_perf_map/1 into a scratch directory (independent of the agent_test_ setup:
%% the NIF loads on first call). The file: perf's "START SIZE name" lines after our marker, mode
%% 0644, this module's functions and the JIT's global fragments in it; a planted symbolic link and
%% a map extrospect did not write are refused and left alone.
write_perf_map_test_() ->
    {setup, fun scratch_dir/0, fun(Dir) -> os:cmd("rm -rf '" ++ Dir ++ "'") end,
     fun(Dir) ->
             [{"writes the map", fun() -> perf_map_written(Dir) end},
              {"refuses a symbolic link", fun() -> perf_map_symlink(Dir) end},
              {"refuses a foreign map", fun() -> perf_map_foreign(Dir) end}]
     end}.

scratch_dir() ->
    Dir = filename:join("/tmp", "xp-eunit-perfmap-" ++ os:getpid() ++ "-" ++
                            integer_to_list(erlang:unique_integer([positive]))),
    ok = file:make_dir(Dir),
    Dir.

perf_map_path(Dir) ->
    filename:join(Dir, "perf-" ++ os:getpid() ++ ".map").

perf_map_written(Dir) ->
    Path = perf_map_path(Dir),
    {ok, #{path := P, symbols := N, modules := M}} = extrospect:write_perf_map(#{dir => Dir}),
    ?assertEqual(list_to_binary(Path), P),
    ?assert(N > 1000),
    ?assert(M > 20),
    {ok, Info} = file:read_file_info(Path),
    ?assertEqual(8#644, element(8, Info) band 8#777),
    {ok, Bin} = file:read_file(Path),
    [First | Lines] = binary:split(Bin, <<"\n">>, [global, trim]),
    ?assertEqual(<<"0 1 [extrospect-perf-map]">>, First),
    ?assertEqual(N, length(Lines)),
    Bad = [L || L <- Lines,
                nomatch =:= re:run(L, "^[0-9a-f]+ [0-9a-f]+ \\$[^ ]", [{capture, none}])],
    ?assertEqual([], Bad),
    Names = [lists:last(binary:split(L, <<" ">>, [global])) || L <- Lines],
    ?assert(lists:member(<<"$extrospect_tests:perf_map_written/1">>, Names)),
    ?assert(lists:member(<<"$lists:reverse/2">>, Names)),
    ?assert(lists:any(fun(<<"$global::", _/binary>>) -> true; (_) -> false end, Names)),
    %% Our own stale map is replaced (a new file renamed over it).
    {ok, #{path := P}} = extrospect:write_perf_map(#{dir => Dir}),
    ok = file:delete(Path).

perf_map_symlink(Dir) ->
    Path = perf_map_path(Dir),
    Victim = filename:join(Dir, "victim"),
    ok = file:write_file(Victim, <<"precious">>),
    ok = file:make_symlink(Victim, Path),
    ?assertMatch({error, {refused, _}}, extrospect:write_perf_map(#{dir => Dir})),
    ?assertEqual({ok, <<"precious">>}, file:read_file(Victim)),
    ok = file:delete(Path).

perf_map_foreign(Dir) ->
    Path = perf_map_path(Dir),
    Own = <<"0x7f0000001000 40 $lists:reverse/2\n">>,
    ok = file:write_file(Path, Own),
    {error, {refused, Text}} = extrospect:write_perf_map(#{dir => Dir}),
    ?assertNotEqual(nomatch, binary:match(Text, <<"+JPperf">>)),
    ?assertEqual({ok, Own}, file:read_file(Path)),
    ok = file:delete(Path).
