%% Native samples whose Erlang stack moves on within microseconds: two registered workers
%% (xp_maps_1, xp_maps_2) each loop over map updates past 32 keys (on OTP 29 a runtime call per
%% key through global::update_map_single_assoc_shared, reached from a frameless, tail-called
%% function), bignum-free integer arithmetic through the JIT's shared fragments (rem, *) and
%% lists:sort/1 of fresh lists (garbage collections). A stack read even 50 us after the sample
%% has usually moved on; the in-kernel capture copies it at the sample.
-module(xp_maps).

-export([start/1]).

start(Args) ->
    xp_ready:boot(Args, fun start_workers/0).

start_workers() ->
    [begin
         Pid = spawn(fun() -> work(I, 0) end),
         register(list_to_atom("xp_maps_" ++ integer_to_list(I)), Pid)
     end
     || I <- [1, 2]],
    ok.

work(I, Turn) ->
    _ = unit(Turn rem 3, I * 7919 + Turn),
    work(I, Turn + 1).

unit(0, Seed) -> map_updates(2000, Seed, #{});
unit(1, Seed) -> lists:sort(lcg(1500, Seed, []));
unit(2, Seed) -> map_updates(500, Seed, #{}).

lcg(0, _, Acc) -> Acc;
lcg(N, X, Acc) ->
    Next = (X * 1103515245 + 12345) rem 2147483648,
    lcg(N - 1, Next, [Next | Acc]).

map_updates(0, _, M) -> map_size(M);
map_updates(N, X, M) ->
    K = X rem 257,
    map_updates(N - 1, (X * 69069 + 1) rem 4294967296, M#{K => maps:get(K, M, 0) + N}).
