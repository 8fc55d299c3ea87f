%% Shared by the end-to-end targets: starts the extrospect agent when asked, writes the ready file
%% the harness waits for (key=value lines, written under a temporary name and renamed so it only
%% ever appears complete), and halts the VM once the harness that started it is gone.
%% Does not own: the workloads (xp_idle, xp_demo) or anything the sampler checks.
-module(xp_ready).

-export([boot/2, release/1, info/1, write/2, park_named/1, park/1, listing/1]).

%% The -run entry every target shares: [ReadyFile, Mode, HarnessOsPid], Mode = agent | noagent.
boot([ReadyFile, Mode, HarnessPid], StartWorkload) ->
    Agent = start_agent(Mode),
    watchdog(HarnessPid),
    StartWorkload(),
    case init:get_argument(xp_listing) of
        {ok, _} -> spawn(fun() -> listing(filename:dirname(ReadyFile)) end);
        error -> ok
    end,
    write(ReadyFile, info(Agent)).

%% The -run entry of the release test: the release boot already started the agent.
release([ReadyFile, HarnessPid]) ->
    Running = lists:keymember(extrospect, 1, application:which_applications()),
    watchdog(HarnessPid),
    park_named([xp_rel_parked]),
    write(ReadyFile, info([{agent, Running}])).

start_agent("noagent") ->
    [{agent, false}];
start_agent("agent") ->
    case application:ensure_all_started(extrospect) of
        {ok, _} -> await_calibration(erlang:monotonic_time(millisecond) + 30000);
        {error, Reason} -> [{agent, false}, {agent_error, Reason}]
    end.

%% The agent calibrates and publishes asynchronously after it starts (~30 ms): the VM is only
%% ready once the first calibration has finished, so the sampler never races the publication.
await_calibration(Deadline) ->
    Status = try extrospect:status()
             catch Class:Error -> {Class, Error}
             end,
    case Status of
        #{runs := Runs, result := Result} when Runs >= 1 ->
            [{agent, true}, {agent_result, Result}];
        _ ->
            case erlang:monotonic_time(millisecond) < Deadline of
                true ->
                    receive after 10 -> await_calibration(Deadline) end;
                false ->
                    [{agent, false}, {agent_error, {no_calibration_within_30s, Status}}]
            end
    end.

info(Extra) ->
    SysVer = string:trim(erlang:system_info(system_version)),
    Layout = case string:find(SysVer, ":fp") of
                 nomatch -> ra;
                 _ -> fp
             end,
    [{os_pid, os:getpid()},
     {otp_release, erlang:system_info(otp_release)},
     {erts_version, erlang:system_info(version)},
     {system_version, SysVer},
     {schedulers, erlang:system_info(schedulers)},
     {dirty_cpu, erlang:system_info(dirty_cpu_schedulers)},
     {dirty_io, erlang:system_info(dirty_io_schedulers)},
     {frame_layout, Layout},
     {emu_flavor, erlang:system_info(emu_flavor)}
     | Extra].

write(File, KVs) ->
    Lines = [[atom_to_list(K), $=, text(V), $\n] || {K, V} <- KVs],
    Tmp = File ++ ".tmp",
    ok = file:write_file(Tmp, unicode:characters_to_binary(Lines)),
    ok = file:rename(Tmp, File).

text(V) when is_atom(V) -> atom_to_list(V);
text(V) when is_integer(V) -> integer_to_list(V);
text(V) ->
    Flat = case io_lib:printable_unicode_list(V) of
               true -> V;
               false -> lists:flatten(io_lib:format("~0tp", [V]))
           end,
    [case C of $\n -> $\s; _ -> C end || C <- Flat].

%% Registered processes parked in a receive under a few non-tail frames, so their stacks are known.
park_named(Names) ->
    [register(Name, spawn(fun() -> park(3) end)) || Name <- Names],
    ok.

park(0) ->
    receive
        stop -> 0
    end;
park(N) ->
    R = park(N - 1),
    R + 1.

%% With -xp_listing (bench/pstack_bench, bench/heap_bench): the VM's own listing of every process,
%% timed in the VM when the bench writes DIR/listing.req (its text: pstack or heap); the result,
%% ms=... and processes=..., goes to DIR/listing.out (written complete, as the ready file is).
%% pstack's is what a user runs instead of `pstack --all`, heap's recon's proc_count does.
listing(Dir) ->
    Req = filename:join(Dir, "listing.req"),
    case file:read_file(Req) of
        {ok, Kind} ->
            ok = file:delete(Req),
            Keys = listing_keys(string:trim(binary_to_list(Kind))),
            {Us, N} = timer:tc(fun() ->
                                       length([I || P <- erlang:processes(),
                                                    I <- [erlang:process_info(P, Keys)],
                                                    I =/= undefined])
                               end),
            write(filename:join(Dir, "listing.out"), [{ms, Us div 1000}, {processes, N}]);
        {error, _} ->
            receive after 20 -> ok end
    end,
    listing(Dir).

listing_keys("pstack") -> [current_stacktrace, registered_name, status, message_queue_len];
listing_keys("heap") -> [memory, total_heap_size, binary, message_queue_len].

%% Halts the VM when the harness shell is gone (e.g. killed by a ctest timeout), so no VM outlives
%% its test. Needs /proc inside the VM's root; without it there is no watchdog.
watchdog("0") ->
    ok;
watchdog(HarnessPid) ->
    case filelib:is_dir("/proc/self") of
        true ->
            register(xp_watchdog, spawn(fun() -> watch("/proc/" ++ HarnessPid) end)),
            ok;
        false ->
            ok
    end.

watch(Dir) ->
    receive
    after 2000 ->
        case filelib:is_dir(Dir) of
            true -> watch(Dir);
            false -> erlang:halt(0)
        end
    end.
