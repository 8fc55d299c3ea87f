%% The big-machine workload (issue 28): meant for a VM started as on a 64-core host
%% (+S 64:64 +SDcpu 64:64: 138 scheduler threads), kept busy on every scheduler with deep stacks.
%%   erl -noshell +S 64:64 +SDcpu 64:64 ... -run xp_big start READYFILE agent|noagent HARNESS_OS_PID
%% Starts, before the ready file:
%%   xp_deep                 xp_deep's exact 22-frame chain (the completeness check of a small VM)
%%   xp_compiler(_pp)        the Erlang compiler at work (xp_compiler), deep non-tail recursion
%%   one xp_big_N per normal scheduler, bound to it: recurses DEPTH levels through down/2 (not
%%                           tail calls) into a spin of ~0.1 ms, then waits SLEEP_MS, so that
%%                           every scheduler thread runs and sleeps in turn (~1 % of a core each)
%%   one xp_big_dirty_N per dirty CPU scheduler: a dirty CPU BIF (erts_debug:dirty_cpu/2) of 1 ms
%%                           every DIRTY_SLEEP_MS (~0.5 % of a core each)
%% The three first keep 2 cores busy; the rest spread that work over every scheduler thread.
-module(xp_big).

-export([start/1, down/2]).

-define(DEPTH, 40).
-define(SPIN, 20000).
-define(SLEEP_MS, 10).
-define(DIRTY_MS, 1).
-define(DIRTY_SLEEP_MS, 200).

start([Ready | _] = Args) ->
    xp_ready:boot(Args, fun() ->
                                ok = xp_deep:start_worker(),
                                ok = xp_compiler:start_workers(),
                                start_spinners(Ready)
                        end).

start_spinners(_Ready) ->
    Normal = erlang:system_info(schedulers),
    Dirty = erlang:system_info(dirty_cpu_schedulers),
    [register(list_to_atom("xp_big_" ++ integer_to_list(N)),
              spawn_opt(fun spinner/0, [{scheduler, N}]))
     || N <- lists:seq(1, Normal)],
    [register(list_to_atom("xp_big_dirty_" ++ integer_to_list(N)), spawn(fun dirty/0))
     || N <- lists:seq(1, Dirty)],
    ok.

spinner() ->
    ?DEPTH = down(?DEPTH, ?SPIN),
    receive after ?SLEEP_MS -> ok end,
    spinner().

down(1, Spin) ->
    _ = spin(Spin, 1),
    1;
down(N, Spin) ->
    down(N - 1, Spin) + 1.

spin(0, Acc) -> Acc;
spin(N, Acc) -> spin(N - 1, (Acc * 31 + N) band 16#ffffff).

dirty() ->
    erts_debug:dirty_cpu(wait, ?DIRTY_MS),
    receive after ?DIRTY_SLEEP_MS -> ok end,
    dirty().
