%% Ground truth for time inside one long-running BIF: the registered process xp_bif alternates
%% between in_bif/1, which calls erts_internal:cmp_term/2 on two equal 200 000-element lists (a
%% BIF that runs to completion in C without yielding or allocating: CMP_TERM, B/bif.c), and
%% in_erlang/1, a reduction-heavy pure-Erlang loop that is scheduled out every few microseconds.
%% xp_truth times both in the VM and writes the totals to READYFILE.split. In-VM polling of
%% process_info(P, current_function) never sees the BIF; a sampler must.
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
