%% The workload of bench/events_cost: message traffic the bench sets from outside.
%%   erl ... -run xp_events_load start READYFILE agent|noagent HARNESS_OS_PID
%% Every 20 ms it reads DIR/ctl, one of:
%%   paced N K    N sender processes, each sending K messages every 10 ms to its own
%%                receiver (N * K * 100 messages a second)
%%   flood N      N pairs of processes ping-ponging as fast as they can (a send every hop)
%%   dbg on|off   a tracer process, as dbg:tracer/0 sets one up (erlang:trace(all, true,
%%                [{tracer, Pid} | Flags]) with the flags `extrospect events` sets: procs, send,
%%                running, garbage_collection), counting and dropping every trace message;
%%                off clears the flags and the tracer exits once its queue is empty
%%                (runtime_tools, dbg's application, is not in every OTP install)
%% and writes DIR/stats: "messages M ms T" (messages sent by the workload since it began and
%% milliseconds since then) and the dbg tracer's queue length and events handled.
-module(xp_events_load).

-export([start/1]).

-define(FLAGS, [procs, send, running, garbage_collection]).

start([ReadyFile | _] = Args) ->
    Dir = filename:dirname(ReadyFile),
    xp_ready:boot(Args, fun() -> spawn(fun() -> init(Dir) end), ok end).

init(Dir) ->
    register(xp_events_load, self()),
    Counter = counters:new(1, [write_concurrency]),
    loop(Dir, Counter, erlang:monotonic_time(millisecond), none, [], off).

loop(Dir, C, T0, Mode, Workers, Dbg) ->
    Want = case file:read_file(filename:join(Dir, "ctl")) of
               {ok, B} -> string:trim(binary_to_list(B));
               _ -> "none"
           end,
    {Mode2, Workers2, Dbg2} = apply_ctl(Want, C, Mode, Workers, Dbg),
    write_stats(Dir, C, T0),
    receive after 20 -> ok end,
    loop(Dir, C, T0, Mode2, Workers2, Dbg2).

apply_ctl("dbg on", _C, Mode, Workers, off) ->
    T = spawn(fun() -> tracer_loop(0) end),
    register(xp_events_tracer, T),
    _ = erlang:trace(all, true, [{tracer, T} | ?FLAGS]),
    {Mode, Workers, {on, T}};
apply_ctl("dbg off", _C, Mode, Workers, {on, T}) ->
    _ = erlang:trace(all, false, ?FLAGS),
    T ! {stop_when_drained, self()},
    {Mode, Workers, off};
apply_ctl("dbg" ++ _, _C, Mode, Workers, Dbg) ->
    {Mode, Workers, Dbg};
apply_ctl(Want, _C, Want, Workers, Dbg) ->
    {Want, Workers, Dbg};
apply_ctl(Want, C, _Old, Workers, Dbg) ->
    [exit(W, kill) || W <- Workers],
    {Want, start_workers(string:lexemes(Want, " "), C), Dbg}.

start_workers(["paced", N, K], C) ->
    lists:append([begin
                      R = spawn(fun sink/0),
                      [R, spawn(fun() -> paced(R, list_to_integer(K), C) end)]
                  end || _ <- lists:seq(1, list_to_integer(N))]);
start_workers(["flood", N], C) ->
    lists:append([begin
                      A = spawn(fun() -> pong(C) end),
                      B = spawn(fun() -> pong(C) end),
                      A ! {ping, B},
                      [A, B]
                  end || _ <- lists:seq(1, list_to_integer(N))]);
start_workers(_, _C) ->
    [].

sink() ->
    receive _ -> sink() end.

paced(R, K, C) ->
    [R ! {m, I} || I <- lists:seq(1, K)],
    counters:add(C, 1, K),
    receive after 10 -> ok end,
    paced(R, K, C).

pong(C) ->
    receive
        {ping, From} ->
            From ! {ping, self()},
            counters:add(C, 1, 1),
            pong(C)
    end.

write_stats(Dir, C, T0) ->
    Dbg = dbg_queue(whereis(xp_events_tracer)),
    Line = io_lib:format("messages ~p ms ~p dbg_queue ~p~n",
                         [counters:get(C, 1), erlang:monotonic_time(millisecond) - T0, Dbg]),
    Tmp = filename:join(Dir, "stats.tmp"),
    ok = file:write_file(Tmp, Line),
    ok = file:rename(Tmp, filename:join(Dir, "stats")).

%% The tracer's message queue: the events it has not handled yet.
dbg_queue(undefined) ->
    0;
dbg_queue(T) ->
    case erlang:process_info(T, message_queue_len) of
        {message_queue_len, L} -> L;
        undefined -> 0
    end.

tracer_loop(N) ->
    receive
        {stop_when_drained, _} -> tracer_drain(N);
        _ -> tracer_loop(N + 1)
    end.

tracer_drain(N) ->
    receive _ -> tracer_drain(N + 1) after 0 -> N end.
