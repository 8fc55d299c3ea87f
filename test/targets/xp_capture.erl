%% The workload of the checked-in captures (test/captures/, tools/refresh-captures.sh): one
%% registered process per kind of stack the replay test names.
%%   xp_cap_plain   plain Erlang code: fib/1, a non-tail recursion
%%   xp_cap_frag    frameless functions reaching shared fragments: f_len/1 (length/1 ->
%%                  global::i_length_body_shared), f_div/2 (div -> int_div_rem), f_mul/2 (* ->
%%                  times/mul_add); BIFs with a frame: term_to_binary/1 from bif_frame/1
%%   xp_cap_gc      garbage collection: builds and drops lists
%%   xp_cap_dirty   a dirty CPU scheduler: erts_debug:dirty_cpu(copy, List) (beam_debug.c)
%%   xp_cap_bignum  a deep native chain: squaring a 1,000,000-bit number (Karatsuba recursion)
-module(xp_capture).

-export([start/1, fib/1, f_len/1, f_div/2, f_mul/2, bif_frame/1]).

start(Args) ->
    xp_ready:boot(Args, fun() ->
        spawn_named(xp_cap_plain, fun plain/0),
        spawn_named(xp_cap_frag, fun frag/0),
        spawn_named(xp_cap_gc, fun gc/0),
        spawn_named(xp_cap_dirty, fun dirty/0),
        spawn_named(xp_cap_bignum, fun bignum/0),
        ok
    end).

spawn_named(Name, F) ->
    register(Name, spawn(F)).

plain() ->
    _ = fib(22),
    plain().

fib(N) when N < 2 -> N;
fib(N) -> fib(N - 1) + fib(N - 2).

frag() ->
    L = lists:seq(1, 20000),
    A = 1 bsl 40000 + 12345,
    B = 1 bsl 20000 + 777,
    C = 1 bsl 4000 + 3,
    frag(L, A, B, C).

frag(L, A, B, C) ->
    _ = f_len(L),
    _ = f_div(A, B),
    _ = f_mul(C, C),
    _ = bif_frame(C),
    frag(L, A, B, C).

f_len(L) -> length(L).
f_div(A, B) -> A div B.
f_mul(A, B) -> g(A * B, 7).
g(X, Y) -> {X, Y}.

bif_frame(L) -> byte_size(term_to_binary(L)).

gc() ->
    _ = build(5000, []),
    gc().

build(0, Acc) -> Acc;
build(N, Acc) -> build(N - 1, [{N, N} | Acc]).

dirty() ->
    _ = erts_debug:dirty_cpu(copy, lists:seq(1, 2000)),
    dirty().

bignum() ->
    %% Not a constant: the compiler would fold X * X into a literal.
    X = 1 bsl 1000000 - erlang:unique_integer([positive]),
    bignum(X).

%% put/2 keeps the product alive: an unused X * X of a known integer is optimised away.
bignum(X) ->
    put(square, X * X),
    bignum(X).
