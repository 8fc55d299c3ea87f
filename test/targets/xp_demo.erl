%% The bundled demo workload (`make demo`, and sampling tests): registered processes with known
%% names burning CPU in known functions. Deterministic, and bounded in memory: every loop iteration
%% drops what it built. Started like xp_idle:
%%   erl -noshell ... -run xp_demo start READYFILE agent|noagent HARNESS_OS_PID
%%   xp_demo_fib   naive recursive fib(24), again and again (deep, non-tail Erlang frames)
%%   xp_demo_sort  lists:sort/1 of the same 5000 pseudo-random integers (time in stdlib)
%%   xp_demo_ping, xp_demo_pong   a message ping-pong pair (time in send / receive)
-module(xp_demo).

-export([start/1, fib/1]).

start(Args) ->
    xp_ready:boot(Args, fun start_workers/0).

start_workers() ->
    register(xp_demo_fib, spawn(fun fib_loop/0)),
    register(xp_demo_sort, spawn(fun() -> sort_loop(shuffled(5000)) end)),
    register(xp_demo_pong, spawn(fun pong_loop/0)),
    register(xp_demo_ping, spawn(fun() -> ping_loop(0) end)),
    ok.

fib_loop() ->
    _ = fib(24),
    fib_loop().

fib(N) when N < 2 -> N;
fib(N) -> fib(N - 1) + fib(N - 2).

sort_loop(List) ->
    _ = lists:sort(List),
    sort_loop(List).

%% A fixed linear congruential sequence, so every run sorts the same list.
shuffled(N) ->
    shuffled(N, 12345, []).

shuffled(0, _, Acc) -> Acc;
shuffled(N, X, Acc) ->
    Next = (X * 1103515245 + 12345) rem 2147483648,
    shuffled(N - 1, Next, [Next | Acc]).

ping_loop(N) ->
    xp_demo_pong ! {ping, self(), N},
    receive
        {pong, N} -> ping_loop((N + 1) rem 1000000)
    end.

pong_loop() ->
    receive
        {ping, From, N} ->
            From ! {pong, N},
            pong_loop()
    end.
