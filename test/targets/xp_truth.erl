%% Ground truth for the sampling tests: one registered process alternating between two timed calls,
%% A then B, again and again, FunX(Iterations) each. At start the cost of one iteration of each is
%% measured in the VM (erlang:monotonic_time/0, the best of 7 runs) and the iteration counts set so
%% that A and B take about WeightA and WeightB milliseconds. Every call is also timed. The running
%% totals go to a stats file (key=value, written whole by rename) about every 200 ms, so the
%% harness takes the ratio over exactly its recording window:
%%   a_ns, b_ns          wall time measured around the calls (includes time the OS or the Erlang
%%                       scheduler ran something else)
%%   a_cpu_ns, b_cpu_ns  calls x iterations x measured cost of one: the CPU time the work takes,
%%                       which is what a CPU-clock sampler sees even on a busy machine
%% Does not own: the workloads themselves (xp_split, xp_bif), which pass the two funs.
-module(xp_truth).

-export([start/4]).

-define(WRITE_EVERY_MS, 200).

-record(s, {stats, fun_a, n_a, cost_a, fun_b, n_b, cost_b}).

%% start(Name, StatsFile, {FunA, WeightAms}, {FunB, WeightBms}): FunX(Iterations) burns CPU.
%% Returns once the process is registered and its first stats file is written.
start(Name, Stats, {FunA, WeightA}, {FunB, WeightB}) ->
    Parent = self(),
    Pid = spawn(fun() ->
                        register(Name, self()),
                        {NA, CA} = iterations(FunA, WeightA),
                        {NB, CB} = iterations(FunB, WeightB),
                        S = #s{stats = Stats, fun_a = FunA, n_a = NA, cost_a = CA,
                               fun_b = FunB, n_b = NB, cost_b = CB},
                        write(S, {0, 0, 0}),
                        Parent ! {self(), started},
                        loop(S, {0, 0, 0}, now_ms() + ?WRITE_EVERY_MS)
                end),
    receive
        {Pid, started} -> Pid
    end.

%% {Iterations, Cost}: the number of iterations of Fun that take Ms milliseconds, and the cost of
%% one in native time units. N is doubled until one run takes at least 2 ms; the best of 7 runs
%% of N, the least disturbed, gives the cost.
iterations(Fun, Ms) ->
    N = probe(Fun, 1),
    Cost = lists:min([timed(Fun, N) || _ <- lists:seq(1, 7)]) / N,
    {max(1, round(erlang:convert_time_unit(Ms, millisecond, native) / Cost)), Cost}.

probe(Fun, N) ->
    case timed(Fun, N) >= erlang:convert_time_unit(2, millisecond, native) of
        true -> N;
        false -> probe(Fun, 2 * N)
    end.

timed(Fun, N) ->
    T0 = erlang:monotonic_time(),
    _ = Fun(N),
    erlang:monotonic_time() - T0.

loop(#s{fun_a = FunA, n_a = NA, fun_b = FunB, n_b = NB} = S, {A, B, Rounds}, NextWrite) ->
    T0 = erlang:monotonic_time(),
    _ = FunA(NA),
    T1 = erlang:monotonic_time(),
    _ = FunB(NB),
    T2 = erlang:monotonic_time(),
    Totals = {A + (T1 - T0), B + (T2 - T1), Rounds + 1},
    case now_ms() >= NextWrite of
        true ->
            write(S, Totals),
            loop(S, Totals, now_ms() + ?WRITE_EVERY_MS);
        false ->
            loop(S, Totals, NextWrite)
    end.

write(#s{stats = Stats, n_a = NA, cost_a = CA, n_b = NB, cost_b = CB}, {A, B, Rounds}) ->
    xp_ready:write(Stats, [{pid, pid_to_list(self())},
                           {rounds, Rounds},
                           {a_ns, ns(A)},
                           {b_ns, ns(B)},
                           {a_cpu_ns, ns(round(Rounds * NA * CA))},
                           {b_cpu_ns, ns(round(Rounds * NB * CB))},
                           {a_iterations, NA},
                           {b_iterations, NB},
                           {a_iteration_ps, round(1000 * ns(CA))},
                           {b_iteration_ps, round(1000 * ns(CB))}]).

ns(T) when is_float(T) ->
    T * erlang:convert_time_unit(1000000000, native, nanosecond) / 1000000000;
ns(T) ->
    erlang:convert_time_unit(T, native, nanosecond).

now_ms() ->
    erlang:monotonic_time(millisecond).
