%% Ground truth for time inside one long-running BIF: the registered process xp_bif alternates
%% between in_bif/1, which calls erts_internal:cmp_term/2 on two equal 200 000-element lists (a
%% BIF that runs to completion in C without yielding or allocating: CMP_TERM, B/bif.c), and
%% in_erlang/1, a reduction-heavy pure-Erlang loop that is scheduled out every few microseconds.
%% xp_truth times both in the VM and writes the totals to READYFILE.split. In-VM polling of
%% process_info(P, current_function) never sees the BIF; a sampler must.
%% With -xp_bif_yield the registered process xp_yield runs beside it (not during the share check:
%% a second busy process takes CPU from the measured one). It yields at one function's entry on
%% every call, its reductions spent (erlang:bump_reductions/1): yield_at/1 enters the yield test's
%% shared fragment at once, so that fragment's samples have this exact stack:
%%   xp_bif:yielder/0; xp_bif:yield_outer/0; xp_bif:yield_at/1; global::i_test_yield_shared
-module(xp_bif).

-export([start/1, in_bif/1, in_erlang/1]).

-define(LEN, 200000).

start([Ready | _] = Args) ->
    xp_ready:boot(Args, fun() -> start_worker(Ready) end).

start_worker(Ready) ->
    %% Two separately built (not shared) equal lists, out of the process heap.
    persistent_term:put({?MODULE, a}, lists:seq(1, ?LEN)),
    persistent_term:put({?MODULE, b}, lists:reverse(lists:seq(?LEN, 1, -1))),
    xp_truth:start(xp_bif, Ready ++ ".split", {fun in_bif/1, 20}, {fun in_erlang/1, 30}),
    case init:get_argument(xp_bif_yield) of
        {ok, _} -> register(xp_yield, spawn(fun yielder/0));
        error -> ok
    end,
    ok.

%% N compares; every one returns 0. The match after the call keeps in_bif/2 on the stack.
in_bif(N) ->
    in_bif(N, persistent_term:get({?MODULE, a}), persistent_term:get({?MODULE, b})).

in_bif(0, _, _) ->
    ok;
in_bif(N, A, B) ->
    0 = erts_internal:cmp_term(A, B),
    in_bif(N - 1, A, B).

in_erlang(N) -> in_erlang(N, 1).

in_erlang(0, Acc) -> Acc;
in_erlang(N, Acc) -> in_erlang(N - 1, ((Acc * 7 + N) band 16#ffffff) bxor (Acc bsr 3)).

yielder() ->
    yield_outer(),
    yielder().

%% The match after the call keeps yield_outer/0 on the stack.
yield_outer() ->
    erlang:bump_reductions(4000),
    1 = yield_at(0),
    ok.

yield_at(N) -> N + 1.
