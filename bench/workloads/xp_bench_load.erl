%% The CPU-bound workload bench/run measures: N worker processes doing fixed work units in turn
%% (naive fib, lists:sort of a fresh pseudo-random list, map updates), each finished unit counted in
%% one `counters` array; a ticker appends "SYSTEM_TIME_US UNITS" to a file every 50 ms, so the
%% harness computes units per second over any window from the VM's own clock and count.
%% Does not own: readiness, the agent or the watchdog (test/targets/xp_ready.erl), any timing policy.
-module(xp_bench_load).

-export([start/1, start_workers/3, unit/2]).

-define(TICK_MS, 50).

%% -run xp_bench_load start READYFILE agent|noagent HARNESS_OS_PID TICKFILE NWORKERS
start([ReadyFile, Mode, HarnessPid, TickFile, NWorkers]) ->
    xp_ready:boot([ReadyFile, Mode, HarnessPid],
                  fun() -> start_workers(TickFile, list_to_integer(NWorkers), fixed) end).

%% fixed: N long-lived workers; churn (bench/soak): each unit runs in a process of its own, spawned
%% for it and gone after, so the VM creates and frees thousands of processes a second.
start_workers(TickFile, N, How) ->
    Units = counters:new(1, [write_concurrency]),
    %% The ticker is high priority so its timestamps stay close to 50 ms apart under full load.
    Ticker = spawn(fun() -> ticker(TickFile, Units) end),
    Ref = monitor(process, Ticker),
    Ticker ! {self(), started},
    receive
        {Ticker, ticking} -> demonitor(Ref, [flush]);
        {'DOWN', Ref, process, Ticker, Reason} -> error({ticker_failed, Reason})
    end,
    [spawn(fun() -> work(Units, I, 0, How) end) || I <- lists:seq(1, N)],
    ok.

ticker(File, Units) ->
    process_flag(priority, high),
    {ok, Fd} = file:open(File, [write, raw, binary]),
    receive {From, started} -> From ! {self(), ticking} end,
    tick(Fd, Units).

tick(Fd, Units) ->
    Now = os:system_time(microsecond),
    ok = file:write(Fd, [integer_to_binary(Now), $\s, integer_to_binary(counters:get(Units, 1)), $\n]),
    receive after ?TICK_MS -> tick(Fd, Units) end.

%% Worker I runs unit 0, 1, 2, 0, ... forever; the seed depends on I and the turn, so every run
%% does the same work.
work(Units, I, Turn, fixed) ->
    _ = unit(Turn rem 3, I * 7919 + Turn),
    counters:add(Units, 1, 1),
    work(Units, I, Turn + 1, fixed);
work(Units, I, Turn, churn) ->
    {_, Ref} = spawn_monitor(fun() -> unit(Turn rem 3, I * 7919 + Turn) end),
    receive {'DOWN', Ref, process, _, normal} -> ok end,
    counters:add(Units, 1, 1),
    work(Units, I, Turn + 1, churn).

unit(0, _Seed) -> fib(22);
unit(1, Seed) -> lists:sort(lcg(1500, Seed, []));
unit(2, Seed) -> map_updates(2000, Seed, #{}).

fib(N) when N < 2 -> N;
fib(N) -> fib(N - 1) + fib(N - 2).

lcg(0, _, Acc) -> Acc;
lcg(N, X, Acc) ->
    Next = (X * 1103515245 + 12345) rem 2147483648,
    lcg(N - 1, Next, [Next | Acc]).

%% Inserts and updates keys of a map that grows past 32 keys, i.e. into the hashed (HAMT) form.
map_updates(0, _, M) -> map_size(M);
map_updates(N, X, M) ->
    K = X rem 257,
    map_updates(N - 1, (X * 69069 + 1) rem 4294967296, M#{K => maps:get(K, M, 0) + N}).
