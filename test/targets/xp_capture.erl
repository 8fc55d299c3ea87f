%% The workload of the checked-in captures (test/captures/, tools/refresh-captures.sh): one
%% registered process per kind of stack the replay test names.
%%   xp_cap_plain   plain Erlang code: fib/1, a non-tail recursion
%%   xp_cap_frag    frameless functions reaching shared fragments: f_len/1 (length/1 ->
%%                  global::i_length_body_shared), f_div/2 (div -> int_div_rem), f_mul/2 (* ->
%%                  times/mul_add); BIFs with a frame: term_to_binary/1 from bif_frame/1
%%   xp_cap_gc      garbage collection: builds and drops lists
%%   xp_cap_dirty   a dirty CPU scheduler: erts_debug:dirty_cpu(copy, List) (beam_debug.c) in dirty/1
%%   xp_cap_bignum  a deep native chain: squaring a 1,000,000-bit number (Karatsuba recursion)
%%   xp_cap_bin     binary construction and matching in frameless functions: f_lbc/1 tail-calls
%%                  its binary comprehension (appends in C), f_utf8/2 matches utf8 in a loop
%%                  (global::bs_get_utf8_shared on 26+, which pushes words of its own), f_ints/1
%%                  builds a 128-byte binary (allocated by global::bs_init_bits_shared, called on
%%                  the runtime stack, on 26+); their caller bin/3 is the stack's bottom
-module(xp_capture).

-export([start/1, fib/1, f_len/1, f_div/2, f_mul/2, bif_frame/1, f_lbc/1, f_utf8/2, f_ints/1]).

start(Args) ->
    xp_ready:boot(Args, fun() ->
        spawn_named(xp_cap_plain, fun plain/0),
        spawn_named(xp_cap_frag, fun frag/0),
        spawn_named(xp_cap_gc, fun gc/0),
        spawn_named(xp_cap_dirty, fun dirty/0),
        spawn_named(xp_cap_bignum, fun bignum/0),
        %% Built before the ready file: unicode is loaded now, not during a capture.
        U = unicode:characters_to_binary([$a + I rem 26 + (I rem 3) * 500
                                          || I <- lists:seq(1, 1000)]),
        B = binary:copy(<<"xp">>, 128),
        spawn_named(xp_cap_bin, fun() -> bin({lists:seq(1, 300), B}, U, 1) end),
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
    _ = bif_frame(L),
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

%% The list is built once: building it in the loop puts lists:seq_loop/3 samples under the process.
dirty() ->
    dirty(lists:seq(1, 2000)).

dirty(L) ->
    _ = erts_debug:dirty_cpu(copy, L),
    dirty(L).

bignum() ->
    %% Not a constant: the compiler would fold X * X into a literal.
    X = 1 bsl 1000000 - erlang:unique_integer([positive]),
    bignum(X).

%% put/2 keeps the product alive: an unused X * X of a known integer is optimised away.
bignum(X) ->
    put(square, X * X),
    bignum(X).

bin(L, U, N) ->
    _ = f_lbc(L),
    _ = f_utf8(U, 0),
    _ = ints(N, 200),
    bin(L, U, N + 1).

ints(N, 0) -> N;
ints(N, K) ->
    _ = f_ints(N + K),
    ints(N, K - 1).

%% Each element appends a 256-byte binary: the comprehension's time is mostly in C.
f_lbc({L, B}) -> << <<I:32, B/binary>> || I <- L >>.

f_utf8(<<_/utf8, R/binary>>, N) -> f_utf8(R, N + 1);
f_utf8(<<>>, N) -> N.

f_ints(N) -> <<N:1024>>.
