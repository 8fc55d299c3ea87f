%% Bursty work that leaves schedulers spinning: one process per normal scheduler (bound to it)
%% wakes every 2 ms and works ~0.2 ms (fib), and two processes wake every 2 ms and make one short
%% call on a dirty CPU and one on a dirty I/O scheduler (erts_debug:dirty_cpu/2, dirty_io/2 with
%% `copy`, test BIFs in OTP 25, 27 and 29). Between bursts there is no work: with the default
%% busy wait (+sbwt medium, dirty short) the schedulers spin before they sleep; with +sbwt none
%% +sbwtdcpu none +sbwtdio none they sleep at once. Started like xp_idle.
-module(xp_spin).

-export([start/1]).

-define(GAP_MS, 1).
-define(PINGS, 200).

start(Args) ->
    xp_ready:boot(Args, fun start_workers/0).

start_workers() ->
    N = erlang:system_info(schedulers_online),
    [begin
         Pong = spawn_opt(fun pong/0, [{scheduler, I rem N + 1}]),
         spawn_opt(fun() -> burst(Pong) end, [{scheduler, I}])
     end || I <- lists:seq(1, N)],
    register(xp_spin_dirty, spawn(fun() -> dirty(lists:seq(1, 20)) end)),
    ok.

burst(Pong) ->
    receive after ?GAP_MS -> ok end,
    ping(Pong, ?PINGS),
    burst(Pong).

ping(_, 0) -> ok;
ping(Pong, N) ->
    Pong ! {self(), N},
    receive N -> ping(Pong, N - 1) end.

pong() ->
    receive {From, N} -> From ! N end,
    pong().

dirty(L) ->
    receive after ?GAP_MS -> ok end,
    _ = erts_debug:dirty_cpu(copy, L),
    _ = erts_debug:dirty_io(copy, L),
    dirty(L).
