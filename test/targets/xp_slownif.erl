%% Ground truth for `extrospect sched`: a deliberately slow NIF (xp_slownif_nif.c) next to
%% well-behaved work. The NIF library's path is the erl argument -xp_slownif_so PATH (no NIF: the
%% VM fails to boot, loudly).
%%   xp_slow_caller   call_burn/2 calls burn/1, a NIF spinning 5 ms of CPU time on a normal
%%                    scheduler, then runs 3 ms of CPU in Erlang code (between/2), in a loop.
%%                    Both are fixed amounts of work, not of wall time (iterations calibrated
%%                    at start, the NIF's when its library loads), so a CPU-clock sampler
%%                    samples each call alike however busy the machine, and samples the
%%                    Erlang code at least once between two calls
%%   xp_quick_caller  call_quick/1 calls quick/1, a NIF spinning 20 us of CPU, then sleeps
%%                    2 ms, in a loop: no run of it can ever last 1 ms
%%   xp_dirty_caller  call_dirty/1 calls dirty_burn/1, 5 ms of CPU on a dirty CPU scheduler,
%%                    in a loop
%%   xp_spinner       spin/2, pure Erlang arithmetic
%% Does not own: what the sampler checks (test/e2e/sched_test.sh).
-module(xp_slownif).

-export([start/1, burn/1, quick/1, dirty_burn/1, call_burn/2, call_quick/1, call_dirty/1,
         between/2, spin/2]).

-define(BETWEEN_US, 3000).

-define(NIF_MS, 5).

start(Args) ->
    xp_ready:boot(Args, fun start_workers/0).

start_workers() ->
    {ok, [[So]]} = init:get_argument(xp_slownif_so),
    ok = erlang:load_nif(filename:rootname(So), 0),
    Between = iterations(?BETWEEN_US),
    register(xp_slow_caller, spawn(fun() -> call_burn(Between, 0) end)),
    register(xp_quick_caller, spawn(fun() -> call_quick(0) end)),
    register(xp_dirty_caller, spawn(fun() -> call_dirty(0) end)),
    register(xp_spinner, spawn(fun() -> spin(1, 0) end)),
    ok.

burn(_Ms) -> erlang:nif_error(not_loaded).
quick(_Us) -> erlang:nif_error(not_loaded).
dirty_burn(_Ms) -> erlang:nif_error(not_loaded).

%% Each loop keeps a frame of its own on the stack (the match after the call), so the calling
%% Erlang function is known in every sample.
call_burn(Between, N) ->
    _ = burn(?NIF_MS),
    ok = between(Between, 1),
    call_burn(Between, N + 1).

call_quick(N) ->
    _ = quick(20),
    receive after 2 -> ok end,
    ok = yield_and_count(N),
    call_quick(N + 1).

call_dirty(N) ->
    _ = dirty_burn(?NIF_MS),
    ok = yield_and_count(N),
    call_dirty(N + 1).

yield_and_count(_N) -> ok.

between(0, _Acc) -> ok;
between(N, Acc) -> between(N - 1, ((Acc * 7 + N) band 16#ffffff) bxor (Acc bsr 3)).

%% Iterations of between/2 that take Us microseconds: the fastest of 15 timed runs (the least
%% disturbed by other load), scaled.
iterations(Us) ->
    Probe = 50000,
    Best = lists:min([begin
                          T0 = erlang:monotonic_time(microsecond),
                          ok = between(Probe, 1),
                          max(1, erlang:monotonic_time(microsecond) - T0)
                      end || _ <- lists:seq(1, 15)]),
    max(1, Probe * Us div Best).

spin(N, Acc) -> spin(N + 1, ((Acc * 7 + N) band 16#ffffff) bxor (Acc bsr 3)).
