%% Ground truth for frames: the registered process xp_deep recurses 20 levels through down/1 (not
%% tail calls: each level adds 1 to the result) into spin/2, a pure-Erlang loop where it spends
%% nearly all its time. So its dominant stack is exactly, outermost first:
%%   xp_deep:loop/0; xp_deep:down/1 (20 times); xp_deep:spin/2
%% Started on its own (-run xp_deep start ...) or with xp_split by xp_ground.
-module(xp_deep).

-export([start/1, start_worker/0, down/1]).

-define(DEPTH, 20).
-define(SPIN, 2000000).

start(Args) ->
    xp_ready:boot(Args, fun start_worker/0).

start_worker() ->
    register(xp_deep, spawn(fun loop/0)),
    ok.

loop() ->
    ?DEPTH = down(?DEPTH),
    loop().

down(1) ->
    _ = spin(?SPIN, 1),
    1;
down(N) ->
    down(N - 1) + 1.

spin(0, Acc) -> Acc;
spin(N, Acc) -> spin(N - 1, ((Acc * 3 + N) band 16#ffffff) bxor (Acc bsr 1)).
