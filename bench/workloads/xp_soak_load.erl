%% bench/soak's target: xp_bench_load's work units with process churn (every unit in a process
%% spawned for it) and module churn (test/targets/xp_purge: a module loaded, run for ~2 ms,
%% deleted and purged, in a loop). Throughput ticks as xp_bench_load writes them.
%% Does not own: readiness (xp_ready), the units or the churn loops themselves.
-module(xp_soak_load).

-export([start/1]).

%% -run xp_soak_load start READYFILE agent|noagent HARNESS_OS_PID TICKFILE NWORKERS
start([ReadyFile, Mode, HarnessPid, TickFile, NWorkers]) ->
    xp_ready:boot([ReadyFile, Mode, HarnessPid],
                  fun() ->
                          ok = xp_bench_load:start_workers(TickFile, list_to_integer(NWorkers),
                                                           churn),
                          xp_purge:start_worker(ReadyFile ++ ".purge")
                  end).
