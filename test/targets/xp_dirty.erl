%% A process whose time is on a dirty CPU scheduler: xp_dirty_loop calls outer/0 -> middle/1 ->
%% erts_debug:dirty_cpu(copy, List), a test BIF present in OTP 25, 27 and 29 (beam_debug.c) that
%% copies its argument 1000 times on a dirty CPU scheduler. The sampler must name the process and
%% walk its Erlang stack from c_p->stop: outer/0;middle/1 above the BIF's native frames.
-module(xp_dirty).

-export([start/1]).

start(Args) ->
    xp_ready:boot(Args, fun() ->
        register(xp_dirty_loop, spawn(fun outer/0)),
        ok
    end).

outer() ->
    ok = middle(lists:seq(1, 2000)),
    outer().

middle(List) ->
    _ = erts_debug:dirty_cpu(copy, List),
    ok.
