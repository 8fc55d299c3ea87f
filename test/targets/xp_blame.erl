%% Ground truth for `extrospect blame`: native runtime work caused from known Erlang functions.
%%   xp_blame_gc    gc_churn/3 allocates garbage tuples in its own body while holding a live list,
%%                  with {fullsweep_after, 0}: every heap-full GC (entered from gc_churn/3 through
%%                  the JIT's heap test) copies the whole live list.
%%   xp_blame_copy  send_big/3 sends a large term (a 20 000-element list of tuples) to
%%                  xp_blame_sink and waits for its ack: each send deep-copies the term
%%                  (erlang:send/2 -> erts_send_message -> copy_struct).
%%   xp_blame_sink  sink/0 receives and drops the term, then acks.
%%   xp_blame_spin  spin/2, pure arithmetic that never allocates: it must never be blamed.
%% Does not own: what the sampler checks (test/e2e/blame_test.sh).
-module(xp_blame).

-export([start/1, gc_churn/3, send_big/3, sink/0, spin/2]).

-define(LIVE, 20000).
-define(BIG, 20000).

start(Args) ->
    xp_ready:boot(Args, fun start_workers/0).

start_workers() ->
    Sink = spawn(fun sink/0),
    register(xp_blame_sink, Sink),
    Gc = spawn_opt(fun() -> gc_churn(lists:seq(1, ?LIVE), 1, []) end, [{fullsweep_after, 0}]),
    register(xp_blame_gc, Gc),
    Copy = spawn(fun() -> send_big(Sink, [{I, I + 1} || I <- lists:seq(1, ?BIG)], 0) end),
    register(xp_blame_copy, Copy),
    register(xp_blame_spin, spawn(fun() -> spin(1, 0) end)),
    ok.

%% Each turn conses a fresh tuple onto a garbage list dropped every 1024 turns; the live list
%% stays reachable, so every GC (a fullsweep) copies it. Runs until the VM halts.
gc_churn(Live, N, _Garbage) when N band 1023 =:= 0 ->
    gc_churn(Live, N + 1, []);
gc_churn(Live, N, Garbage) ->
    gc_churn(Live, N + 1, [{N, N} | Garbage]).

send_big(Sink, Big, N) ->
    Sink ! {self(), Big},
    receive
        ack -> send_big(Sink, Big, N + 1)
    end.

sink() ->
    receive
        {From, _Big} ->
            From ! ack,
            sink()
    end.

spin(N, Acc) -> spin(N + 1, ((Acc * 7 + N) band 16#ffffff) bxor (Acc bsr 3)).
