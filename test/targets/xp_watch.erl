%% Ground truth for `extrospect watch`: xp_watch_target cycles, again and again, through ~10 ms
%% waiting in a receive (wait/0), then runnable for a known, varied time (2-8 ms), then ~10 ms
%% running (spin/2), and times all three; a writer process puts the running totals in
%% DIR/watch.stats (key=value, written whole by rename) about every 100 ms, so the harness takes
%% the ratios over its watch window:
%%   wait_us    waiting: from entering wait/0 to the blocker's stamp in the wake-up message
%%   runq_us    runnable: from that stamp to the target running again (queued behind the
%%              blocker; includes any time the OS kept the scheduler thread off a CPU)
%%   runq_n     runnable episodes (one per cycle)
%%   runq_hist  the episodes' durations, "B:N,B:N,..." (N episodes of [100 B, 100 B + 100) us)
%%   run_us     wall time around the spin (running; includes time the OS ran something else)
%%   spins      iterations of the spin loop (per run_us: the target's speed, for slowdown)
%%   bspins     the blocker's iterations of the same loop (its spin, reported in the next
%%              wake-up: with spins, the work bench/watch_cost divides the VM's CPU by)
%% and appends each state change to DIR/watch.events, "KIND TIME_NS" (waiting: just before the
%% receive; runnable: the blocker's stamp just before its send; running: just after the receive),
%% in os:perf_counter(nanosecond), which the first line ("clock ok") says was checked to be
%% CLOCK_MONOTONIC, the clock of perf samples (bench/watch_methods' delays).
%% The runnable time: xp_watch_blocker, bound to the target's scheduler (spawn_opt {scheduler,
%% 1}, bound processes are never stolen by another scheduler) at priority high, waits ~10 ms on
%% a timer when the target asks, stamps the time, sends the target its wake-up and at once spins
%% on that scheduler for the hold (2, 3, ..., 8 ms, in turn): a normal process never runs while a
%% high one is runnable on its run queue, so the target sits runnable until the spin ends. Every
%% other process of the workload is bound to scheduler 2 (when there is one), so only the
%% blocker and the VM's own processes share the target's scheduler.
%% xp_watch_victim waits in a receive until asked to exit. xp_watch_gc builds and drops a large
%% list again and again (its heap grows and is collected: watch must follow it through both). A trigger process polls DIR for files
%% the harness creates (never a sleep on the harness side): kill_victim (the victim exits),
%% stop_spies (extrospect:stop_spies/0), unload (extrospect_nif deleted and purged),
%% suspend_victim (erlang:suspend_process/1 on the victim for one second, then resumed), and,
%% any number of times, poll (bench/watch_methods: process_info(xp_watch_target, status) every
%% millisecond for the seconds the file holds, the counts written to DIR/poll.out, each poll to
%% DIR/poll.timeline) and spies (stop, or start with a policy: set_spies/2).
%% Started by test/e2e/lib.sh: erl ... -run xp_watch start READYFILE agent|noagent HARNESS_PID
-module(xp_watch).

-export([start/1, wait/0, spin/2, victim/0, garbage/1, blocker/1]).

-define(WAIT_MS, 10).
-define(HOLD_MS, {2, 8}). % the runnable time, in turn, shortest to longest
-define(HIST_US, 100).    % runq_hist's bucket width
-define(RUN_US, 10000).
-define(WRITE_EVERY_MS, 100).
-define(POLL_MS, 50).

start([ReadyFile | _] = Args) ->
    Dir = filename:dirname(ReadyFile),
    xp_ready:boot(Args, fun() -> workload(Dir) end).

workload(Dir) ->
    Stats = filename:join(Dir, "watch.stats"),
    Zero = #{wait => 0, runq => 0, run => 0, spins => 0, bspins => 0, n => 0, hist => #{},
             events => []},
    xp_ready:write(Stats, stats(Zero)), % before the ready file
    Events = filename:join(Dir, "watch.events"),
    ok = file:write_file(Events, clock_check()),
    Other = [{scheduler, min(2, erlang:system_info(schedulers))}],
    Writer = spawn_opt(fun() -> writer(Stats, Events) end, Other),
    register(xp_watch_blocker, spawn_opt(?MODULE, blocker, [0], [{scheduler, 1}, {priority, high}])),
    register(xp_watch_target,
             spawn_opt(fun() -> loop(Writer, Zero, now_ms()) end, [{scheduler, 1}])),
    register(xp_watch_victim, spawn_opt(?MODULE, victim, [], Other)),
    register(xp_watch_gc, spawn_opt(?MODULE, garbage, [0], Other)),
    spawn_opt(fun() -> triggers(Dir, []) end, Other),
    xp_ready:write(filename:join(Dir, "watch.pids"),
                   [{target, pid_to_list(whereis(xp_watch_target))},
                    {victim, pid_to_list(whereis(xp_watch_victim))}]).

now_ms() ->
    erlang:monotonic_time(millisecond).

now_us() ->
    erlang:monotonic_time(microsecond).

loop(Writer, #{n := N} = Acc, LastWrite) ->
    {Lo, Hi} = ?HOLD_MS,
    xp_watch_blocker ! {wake_me, self(), Lo + N rem (Hi - Lo + 1)},
    T0 = now_us(),
    P0 = os:perf_counter(nanosecond),
    {Stamp, PStamp, BSpins} = wait(),
    P1 = os:perf_counter(nanosecond),
    T1 = now_us(),
    Spins = spin(T1 + ?RUN_US, 0),
    T2 = now_us(),
    #{wait := W, runq := Q, run := R, spins := S, bspins := BS, hist := H, events := E} = Acc,
    B = (T1 - Stamp) div ?HIST_US,
    Totals = Acc#{wait := W + Stamp - T0, runq := Q + T1 - Stamp, run := R + T2 - T1,
                  spins := S + Spins, bspins := BS + BSpins, n := N + 1, hist := H#{B => maps:get(B, H, 0) + 1},
                  events := [event(running, P1), event(runnable, PStamp), event(waiting, P0) | E]},
    case now_ms() - LastWrite >= ?WRITE_EVERY_MS of
        true ->
            Writer ! {totals, Totals},
            loop(Writer, Totals#{events := []}, now_ms());
        false ->
            loop(Writer, Totals, LastWrite)
    end.

%% Waiting, then runnable once the blocker's wake-up is in: the resume point watch reports is in
%% this function. Returns the blocker's stamp, taken just before it sent the wake-up.
wait() ->
    receive
        {wake, Stamp, PStamp, BSpins} -> {Stamp, PStamp, BSpins}
    end.

%% Waits WAIT_MS on a timer, wakes the target and holds their scheduler for HoldMs: the spin is
%% Erlang code that yields, but nothing of normal priority on this run queue runs meanwhile.
%% Spins: the previous hold's iterations, sent with the wake-up.
blocker(Spins) ->
    receive
        {wake_me, Target, HoldMs} ->
            receive after ?WAIT_MS -> ok end,
            Stamp = now_us(),
            Target ! {wake, Stamp, os:perf_counter(nanosecond), Spins},
            blocker(spin(Stamp + 1000 * HoldMs, 0))
    end.

spin(Until, N) ->
    case now_us() >= Until of
        true -> N;
        false -> spin(Until, N + 1)
    end.

stats(#{wait := W, runq := Q, run := R, spins := S, bspins := BS, n := N, hist := H}) ->
    Hist = lists:join($,, [[integer_to_list(B), $:, integer_to_list(C)]
                           || {B, C} <- lists:sort(maps:to_list(H))]),
    [{wait_us, W}, {runq_us, Q}, {run_us, R}, {spins, S}, {bspins, BS}, {runq_n, N},
     {runq_hist, lists:flatten(Hist)}].

writer(File, Events) ->
    receive
        {totals, #{events := E} = Totals} ->
            xp_ready:write(File, stats(Totals)),
            ok = file:write_file(Events, lists:reverse(E), [append]),
            writer(File, Events)
    end.

event(Kind, PerfNs) ->
    [atom_to_list(Kind), $\s, integer_to_list(PerfNs), $\n].

%% os:perf_counter(nanosecond) is the clock of the events; the harness compares them with perf
%% sample times, which are CLOCK_MONOTONIC. The VM's OS monotonic source (system_info) must be
%% clock_gettime(CLOCK_MONOTONIC), and its reading must fall between two perf_counter readings:
%% "clock ok" or "clock bad REASON" as the events file's first line.
clock_check() ->
    Src = erlang:system_info(os_monotonic_time_source),
    A = os:perf_counter(nanosecond),
    {time, T} = lists:keyfind(time, 1, erlang:system_info(os_monotonic_time_source)),
    B = os:perf_counter(nanosecond),
    case {lists:keyfind(clock_id, 1, Src), A =< T andalso T =< B} of
        {{clock_id, 'CLOCK_MONOTONIC'}, true} -> "clock ok\n";
        Other -> io_lib:format("clock bad ~0p ~b ~b ~b~n", [Other, A, T, B])
    end.

garbage(N) ->
    L = lists:seq(1, 100000 + N rem 50000),
    receive after 5 -> ok end,
    garbage(N + length(L) rem 7).

victim() ->
    receive
        exit -> ok
    end.

triggers(Dir, Done) ->
    receive after ?POLL_MS -> ok end,
    Poll = filename:join(Dir, "poll"),
    case file:read_file(Poll) of
        {ok, Secs} ->
            ok = file:delete(Poll),
            poll_inside(Dir, binary_to_integer(string:trim(Secs)));
        {error, _} ->
            ok
    end,
    Spies = filename:join(Dir, "spies"),
    case file:read_file(Spies) of
        {ok, Text} ->
            ok = file:delete(Spies),
            set_spies(Dir, binary_to_list(Text));
        {error, _} ->
            ok
    end,
    New = [T || T <- [kill_victim, stop_spies, unload, suspend_victim], not lists:member(T, Done),
                filelib:is_regular(filename:join(Dir, atom_to_list(T)))],
    [trigger(T) || T <- New],
    triggers(Dir, New ++ Done).

%% In-VM polling, the way an application could watch itself: one status per millisecond.
poll_inside(Dir, Secs) ->
    Until = now_ms() + 1000 * Secs,
    {Counts, Timeline} = poll_loop(Until, #{}, []),
    ok = file:write_file(filename:join(Dir, "poll.timeline"), lists:reverse(Timeline)),
    xp_ready:write(filename:join(Dir, "poll.out"),
                   [{K, V} || {K, V} <- lists:sort(maps:to_list(Counts))]).

%% Each poll also as "s TIME_NS STATUS" (perf_counter just after the answer) in poll.timeline.
poll_loop(Until, Acc, Timeline) ->
    case now_ms() >= Until of
        true ->
            {Acc, Timeline};
        false ->
            {status, S} = erlang:process_info(whereis(xp_watch_target), status),
            T = os:perf_counter(nanosecond),
            receive after 1 -> ok end,
            poll_loop(Until, maps:update_with(S, fun(N) -> N + 1 end, 1, Acc),
                      [["s ", integer_to_list(T), $\s, atom_to_list(S), $\n] | Timeline])
    end.

%% DIR/spies holds "0" (extrospect:stop_spies/0) or "N POLICY" (spy_policy set, then
%% extrospect:start_spies(N)); the result in DIR/spies.out (bench/watch_cost, bench/watch_methods).
set_spies(Dir, Text) ->
    R = case string:lexemes(string:trim(Text), " ") of
            ["0"] ->
                extrospect:stop_spies();
            [N, Policy] ->
                application:set_env(extrospect, spy_policy, list_to_atom(Policy)),
                extrospect:start_spies(list_to_integer(N))
        end,
    xp_ready:write(filename:join(Dir, "spies.out"), [{result, lists:flatten(io_lib:format("~0p", [R]))}]).

trigger(kill_victim) ->
    xp_watch_victim ! exit;
%% Only the suspender may resume: one process does both.
trigger(suspend_victim) ->
    V = whereis(xp_watch_victim),
    spawn(fun() ->
                  true = erlang:suspend_process(V),
                  receive after 1000 -> true = erlang:resume_process(V) end
          end);
trigger(stop_spies) ->
    extrospect:stop_spies();
%% The library unloaded under running spies: its unload callback must join them.
trigger(unload) ->
    code:purge(extrospect_nif),
    code:delete(extrospect_nif),
    code:purge(extrospect_nif).
