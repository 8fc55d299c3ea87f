%% A deep stack for bench/record_cost (issue 27, "deep stacks"): the registered process xp_deeplc
%% runs a body-recursive list comprehension over [1..Depth] whose element function spins at the
%% last element only. A comprehension's element is computed before its tail, so while it spins
%% the stack holds Depth comprehension frames below spin/2 (elem/2 tail-calls it):
%%   xp_deeplc:loop/1; xp_deeplc:'-run/1-lc$^0/1-0-'/2 (Depth times); xp_deeplc:spin/2
%% Depth from `-xp_deeplc_depth N` (default 2000).
%%   erl -noshell ... -xp_deeplc_depth 2000 -run xp_deeplc start READYFILE agent|noagent HARNESS_OS_PID
-module(xp_deeplc).

-export([start/1, start_worker/0]).

-define(SPIN, 2000000).

start(Args) ->
    xp_ready:boot(Args, fun start_worker/0).

start_worker() ->
    Depth = case init:get_argument(xp_deeplc_depth) of
                {ok, [[D]]} -> list_to_integer(D);
                _ -> 2000
            end,
    register(xp_deeplc, spawn(fun() -> loop(Depth) end)),
    ok.

loop(Depth) ->
    Depth = length(run(Depth)),
    loop(Depth).

run(Depth) ->
    [elem(X, Depth) || X <- lists:seq(1, Depth)].

elem(Depth, Depth) -> spin(?SPIN, Depth);
elem(X, _) -> X.

spin(0, Acc) -> Acc;
spin(N, Acc) -> spin(N - 1, ((Acc * 3 + N) band 16#ffffff) bxor (Acc bsr 1)).
