%% The target of e2e.events: a workload that counts its own events, for `extrospect events`.
%%   xp_ev_spawner   spawns 2 processes every 10 ms; 3 of 4 exit normal, 1 of 4 {shutdown, x}
%%   xp_ev_fast      sends 10 messages to xp_ev_sink every 10 ms
%%   xp_ev_slow      sends 2 messages to xp_ev_sink every 10 ms
%%   xp_ev_sink      receives them (waits in receive between)
%%   xp_ev_gc        keeps ~30 k words live and runs erlang:garbage_collect/0 every 50 ms, each
%%                   timed with erlang:monotonic_time/0
%% Every 100 ms a writer renames DIR/events_oracle.txt into place with a line per worker: its
%% name, pid, count (spawns, sends, collections) and the milliseconds since it began, and for
%% xp_ev_gc the median and the minimum in microseconds of its last 100 timed collections (0 0
%% for the others); then "traced true"
%% when any trace flag is set on the sink or on new processes (erlang:trace_info/2 before
%% OTP 27) or any trace session traces the sink (trace:session_info/1 from 27); whether the
%% "other tracer" is set (while DIR/other_tracer exists, a tracer process of the target's own
%% traces the sink's sends, as a user's dbg would) and the sink's flags in the legacy session.
%% Each worker also logs its count after each tick against CLOCK_MONOTONIC; while DIR/dump
%% exists the writer dumps that log to DIR/hist.txt, so that a rate can be taken over the
%% exact window `events` recorded.
-module(xp_events).

-export([start/1]).

-define(TICK, 10).

start([ReadyFile | _] = Args) ->
    Oracle = filename:join(filename:dirname(ReadyFile), "events_oracle.txt"),
    xp_ready:boot(Args, fun() -> workload(Oracle) end).

workload(Oracle) ->
    %% Each worker's count after each tick, keyed by CLOCK_MONOTONIC ns (the clock of the
    %% agent's records): {{Name, Ns}, Count}, in a table a process of its own keeps.
    Self = self(),
    spawn(fun() ->
                  xp_ev_hist = ets:new(xp_ev_hist, [public, named_table, ordered_set,
                                                    {write_concurrency, true}]),
                  Self ! hist_ready,
                  receive after infinity -> ok end
          end),
    receive hist_ready -> ok end,
    persistent_term:put(xp_ev_offset, os_mono_offset()),
    register(xp_ev_sink, spawn(fun sink/0)),
    Workers = [{xp_ev_spawner, fun() -> spawner(now_ms(), 0) end},
               {xp_ev_fast, fun() -> sender(xp_ev_fast, 10, now_ms(), 0) end},
               {xp_ev_slow, fun() -> sender(xp_ev_slow, 2, now_ms(), 0) end},
               {xp_ev_gc, fun() -> collector(live_data(), now_ms(), 0, []) end}],
    [register(Name, spawn(F)) || {Name, F} <- Workers],
    spawn(fun() -> writer(Oracle, false) end),
    ok.

now_ms() -> erlang:monotonic_time(millisecond).

%% CLOCK_MONOTONIC minus erlang:monotonic_time, in ns (the VM's OS monotonic source is
%% clock_gettime(CLOCK_MONOTONIC) on Linux: system_info says so, with its current value).
os_mono_offset() ->
    Src = erlang:system_info(os_monotonic_time_source),
    'CLOCK_MONOTONIC' = proplists:get_value(clock_id, Src),
    Os = erlang:convert_time_unit(proplists:get_value(time, Src), native, nanosecond),
    Os - erlang:monotonic_time(nanosecond).

tick(Name, N) ->
    Ns = erlang:monotonic_time(nanosecond) + persistent_term:get(xp_ev_offset),
    ets:insert(xp_ev_hist, {{Name, Ns}, N}).

sink() ->
    receive _ -> ok end,
    sink().

child(N) when N rem 4 =:= 3 -> exit({shutdown, x});
child(_) -> ok.

spawner(T0, N) ->
    spawn(fun() -> child(N) end),
    spawn(fun() -> child(N + 1) end),
    N2 = answer(T0, N + 2, 0),
    tick(xp_ev_spawner, N2),
    receive after ?TICK -> ok end,
    spawner(T0, N2).

sender(Name, K, T0, N) ->
    [xp_ev_sink ! {m, I} || I <- lists:seq(1, K)],
    N2 = answer(T0, N + K, 1),
    tick(Name, N2),
    receive after ?TICK -> ok end,
    sender(Name, K, T0, N2).

%% A reply is a send too: Sends is 1 for a sender, which counts it.
answer(T0, N, Sends) ->
    receive
        {count, From} -> From ! {count, self(), N + Sends, now_ms() - T0, 0, 0}, N + Sends
    after 0 -> N
    end.

live_data() ->
    lists:seq(1, 15000).

collector(Live, Start, N, Times) ->
    T0 = erlang:monotonic_time(),
    true = erlang:garbage_collect(),
    T1 = erlang:monotonic_time(),
    Us = erlang:convert_time_unit(T1 - T0, native, nanosecond) / 1000,
    Times2 = lists:sublist([Us | Times], 100),
    tick(xp_ev_gc, N + 1),
    receive
        {count, From} ->
            From ! {count, self(), N + 1, now_ms() - Start, median(Times2), lists:min(Times2)}
    after 50 -> ok
    end,
    collector(Live, Start, N + 1, Times2).

median([]) -> 0;
median(L) -> lists:nth(length(L) div 2 + 1, lists:sort(L)).

ask(Name) ->
    case whereis(Name) of
        undefined -> {undefined, 0, 0, 0, 0};
        P ->
            P ! {count, self()},
            receive {count, P, N, Ms, X, Y} -> {P, N, Ms, X, Y} after 1000 -> {P, 0, 0, 0, 0} end
    end.

traced(Sink) ->
    case erlang:function_exported(trace, session_info, 1) orelse
        code:ensure_loaded(trace) =:= {module, trace} andalso
        erlang:function_exported(trace, session_info, 1) of
        true -> trace:session_info(Sink) =/= [];
        false ->
            {flags, F} = erlang:trace_info(Sink, flags),
            {flags, New} = erlang:trace_info(new, flags),
            F =/= [] orelse New =/= []
    end.

writer(Oracle, Other) ->
    Lines = [begin
                 {P, N, Ms, X, Y} = ask(Name),
                 io_lib:format("~s ~s ~p ~p ~p ~p~n", [Name, pid_to_list(P), N, Ms, X, Y])
             end || Name <- [xp_ev_spawner, xp_ev_fast, xp_ev_slow, xp_ev_gc]],
    Sink = whereis(xp_ev_sink),
    Other2 = other_tracer(filelib:is_regular(filename:join(filename:dirname(Oracle),
                                                           "other_tracer")), Other, Sink),
    {flags, SinkFlags} = erlang:trace_info(Sink, flags),
    Traced = io_lib:format("traced ~p~nother_tracer ~p~nsink_flags ~w~n",
                           [traced(Sink), Other2 =/= false, lists:sort(SinkFlags)]),
    Tmp = Oracle ++ ".tmp",
    ok = file:write_file(Tmp, [Lines, Traced]),
    ok = file:rename(Tmp, Oracle),
    dump(filename:dirname(Oracle)),
    receive after 100 -> ok end,
    writer(Oracle, Other2).

%% When DIR/dump appears: DIR/hist.txt, "Name Ns Count" for every tick so far, then DIR/dump
%% is removed.
dump(Dir) ->
    case filelib:is_regular(filename:join(Dir, "dump")) of
        true ->
            Lines = [io_lib:format("~s ~b ~b~n", [Name, Ns, N])
                     || {{Name, Ns}, N} <- ets:tab2list(xp_ev_hist)],
            ok = file:write_file(filename:join(Dir, "hist.tmp"), Lines),
            ok = file:rename(filename:join(Dir, "hist.tmp"), filename:join(Dir, "hist.txt")),
            ok = file:delete(filename:join(Dir, "dump"));
        false ->
            ok
    end.

%% While DIR/other_tracer exists, a tracer of our own (as a user's dbg would be) traces the
%% sink's sends: the legacy erlang:trace/3, one tracer process.
other_tracer(true, false, Sink) ->
    T = spawn(fun Loop() -> receive _ -> Loop() end end),
    1 = erlang:trace(Sink, true, [send, {tracer, T}]),
    T;
other_tracer(false, T, Sink) when is_pid(T) ->
    erlang:trace(Sink, false, [send]),
    exit(T, kill),
    false;
other_tracer(_, Other, _Sink) ->
    Other.
