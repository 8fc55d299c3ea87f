%% The target of e2e.events: a workload that counts its own events, for `extrospect events`.
%%   xp_ev_spawner   spawns 2 processes every 10 ms; 3 of 4 exit normal, 1 of 4 {shutdown, x}
%%   xp_ev_fast      sends 10 messages to xp_ev_sink every 10 ms
%%   xp_ev_slow      sends 2 messages to xp_ev_sink every 10 ms
%%   xp_ev_sink      receives them (waits in receive between)
%%   xp_ev_gc        keeps ~30 k words live and runs erlang:garbage_collect/0 every 50 ms, each
%%                   timed with erlang:monotonic_time/0
%% Every 100 ms a writer renames DIR/events_oracle.txt into place with a line per worker: its
%% name, pid, count (spawns, sends, collections) and the milliseconds since it began, and for
%% xp_ev_gc the median in microseconds of its last 100 timed collections; then "traced true"
%% when any trace flag is set on the sink or on new processes (erlang:trace_info/2 before
%% OTP 27) or any trace session traces the sink (trace:session_info/1 from 27).
-module(xp_events).

-export([start/1]).

-define(TICK, 10).

start([ReadyFile | _] = Args) ->
    Oracle = filename:join(filename:dirname(ReadyFile), "events_oracle.txt"),
    xp_ready:boot(Args, fun() -> workload(Oracle) end).

workload(Oracle) ->
    register(xp_ev_sink, spawn(fun sink/0)),
    Workers = [{xp_ev_spawner, fun() -> spawner(now_ms(), 0) end},
               {xp_ev_fast, fun() -> sender(10, now_ms(), 0) end},
               {xp_ev_slow, fun() -> sender(2, now_ms(), 0) end},
               {xp_ev_gc, fun() -> collector(live_data(), now_ms(), 0, []) end}],
    [register(Name, spawn(F)) || {Name, F} <- Workers],
    spawn(fun() -> writer(Oracle) end),
    ok.

now_ms() -> erlang:monotonic_time(millisecond).

sink() ->
    receive _ -> ok end,
    sink().

child(N) when N rem 4 =:= 3 -> exit({shutdown, x});
child(_) -> ok.

spawner(T0, N) ->
    spawn(fun() -> child(N) end),
    spawn(fun() -> child(N + 1) end),
    N2 = answer(T0, N + 2, 0),
    receive after ?TICK -> ok end,
    spawner(T0, N2).

sender(K, T0, N) ->
    [xp_ev_sink ! {m, I} || I <- lists:seq(1, K)],
    N2 = answer(T0, N + K, 1),
    receive after ?TICK -> ok end,
    sender(K, T0, N2).

%% A reply is a send too: Sends is 1 for a sender, which counts it.
answer(T0, N, Sends) ->
    receive
        {count, From} -> From ! {count, self(), N + Sends, now_ms() - T0, 0}, N + Sends
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
    receive
        {count, From} -> From ! {count, self(), N + 1, now_ms() - Start, median(Times2)}
    after 50 -> ok
    end,
    collector(Live, Start, N + 1, Times2).

median([]) -> 0;
median(L) -> lists:nth(length(L) div 2 + 1, lists:sort(L)).

ask(Name) ->
    case whereis(Name) of
        undefined -> {undefined, 0, 0, 0};
        P ->
            P ! {count, self()},
            receive {count, P, N, Ms, X} -> {P, N, Ms, X} after 1000 -> {P, 0, 0, 0} end
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

writer(Oracle) ->
    Lines = [begin
                 {P, N, Ms, X} = ask(Name),
                 io_lib:format("~s ~s ~p ~p ~p~n", [Name, pid_to_list(P), N, Ms, X])
             end || Name <- [xp_ev_spawner, xp_ev_fast, xp_ev_slow, xp_ev_gc]],
    Traced = io_lib:format("traced ~p~n", [traced(whereis(xp_ev_sink))]),
    Tmp = Oracle ++ ".tmp",
    ok = file:write_file(Tmp, [Lines, Traced]),
    ok = file:rename(Tmp, Oracle),
    receive after 100 -> ok end,
    writer(Oracle).
