%% A process whose time is on a dirty CPU scheduler: xp_dirty_loop calls outer/0 -> middle/1 ->
%% erts_debug:dirty_cpu(copy, List), a test BIF present in OTP 25, 27 and 29 (beam_debug.c) that
%% copies its argument 1000 times on a dirty CPU scheduler. The sampler must name the process and
%% walk its Erlang stack from c_p->stop: outer/0;middle/1 above the BIF's native frames.
%% Beside it, xp_moved_loop alternates every ~0.2 ms between maps_phase/2 (map updates: short
%% calls from the JIT into the runtime) and arith_phase/2 (pure arithmetic, no native code). A
%% native sample's Erlang stack is read after the sample: by then the process is usually in the
%% other phase, so a map-update sample must never be shown under arith_phase/2.
-module(xp_dirty).

-export([start/1]).

start(Args) ->
    xp_ready:boot(Args, fun() ->
        register(xp_dirty_loop, spawn(fun outer/0)),
        register(xp_moved_loop, spawn(fun() -> moved(#{}, 1) end)),
        ok
    end).

moved(Map0, X0) ->
    Map = maps_phase(Map0, 200),
    X = arith_phase(X0, 3000),
    moved(Map, X).

maps_phase(Map, 0) -> Map;
maps_phase(Map, N) -> maps_phase(Map#{(N band 63) => N, {k, N band 7} => Map}, N - 1).

%% step/2 is a real call: its return address lands on the stack word where maps_phase/2's call
%% into the runtime left its own, so a stack read late shows arith_phase/2 there.
arith_phase(X, 0) -> X;
arith_phase(X, N) -> arith_phase(step(X, N), N - 1).

step(X, N) -> (X * 7 + N) band 16#ffff.

outer() ->
    ok = middle(lists:seq(1, 2000)),
    outer().

middle(List) ->
    _ = erts_debug:dirty_cpu(copy, List),
    ok.
