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
%% millisecond for the seconds the file holds, the counts written to DIR/poll.out).
%% Started by test/e2e/lib.sh: erl ... -run xp_watch start READYFILE agent|noagent HARNESS_PID
-module(xp_watch).

-export([start/1, wait/0, spin/2, victim/0, garbage/1, blocker/0]).

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
    Zero = #{wait => 0, runq => 0, run => 0, spins => 0, n => 0, hist => #{}},
    xp_ready:write(Stats, stats(Zero)), % before the ready file
    Other = [{scheduler, min(2, erlang:system_info(schedulers))}],
    Writer = spawn_opt(fun() -> writer(Stats) end, Other),
    register(xp_watch_blocker, spawn_opt(?MODULE, blocker, [], [{scheduler, 1}, {priority, high}])),
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
    Stamp = wait(),
    T1 = now_us(),
    Spins = spin(T1 + ?RUN_US, 0),
    T2 = now_us(),
    #{wait := W, runq := Q, run := R, spins := S, hist := H} = Acc,
    B = (T1 - Stamp) div ?HIST_US,
    Totals = Acc#{wait := W + Stamp - T0, runq := Q + T1 - Stamp, run := R + T2 - T1,
                  spins := S + Spins, n := N + 1, hist := H#{B => maps:get(B, H, 0) + 1}},
    case now_ms() - LastWrite >= ?WRITE_EVERY_MS of
        true ->
            Writer ! {totals, Totals},
            loop(Writer, Totals, now_ms());
        false ->
            loop(Writer, Totals, LastWrite)
    end.

%% Waiting, then runnable once the blocker's wake-up is in: the resume point watch reports is in
%% this function. Returns the blocker's stamp, taken just before it sent the wake-up.
wait() ->
    receive
        {wake, Stamp} -> Stamp
    end.

%% Waits WAIT_MS on a timer, wakes the target and holds their scheduler for HoldMs: the spin is
%% Erlang code that yields, but nothing of normal priority on this run queue runs meanwhile.
blocker() ->
    receive
        {wake_me, Target, HoldMs} ->
            receive after ?WAIT_MS -> ok end,
            Stamp = now_us(),
            Target ! {wake, Stamp},
            spin(Stamp + 1000 * HoldMs, 0),
            blocker()
    end.

spin(Until, N) ->
    case now_us() >= Until of
        true -> N;
        false -> spin(Until, N + 1)
    end.

stats(#{wait := W, runq := Q, run := R, spins := S, n := N, hist := H}) ->
    Hist = lists:join($,, [[integer_to_list(B), $:, integer_to_list(C)]
                           || {B, C} <- lists:sort(maps:to_list(H))]),
    [{wait_us, W}, {runq_us, Q}, {run_us, R}, {spins, S}, {runq_n, N},
     {runq_hist, lists:flatten(Hist)}].

writer(File) ->
    receive
        {totals, Totals} ->
            xp_ready:write(File, stats(Totals)),
            writer(File)
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
    New = [T || T <- [kill_victim, stop_spies, unload, suspend_victim], not lists:member(T, Done),
                filelib:is_regular(filename:join(Dir, atom_to_list(T)))],
    [trigger(T) || T <- New],
    triggers(Dir, New ++ Done).

%% In-VM polling, the way an application could watch itself: one status per millisecond.
poll_inside(Dir, Secs) ->
    Until = now_ms() + 1000 * Secs,
    Counts = poll_loop(Until, #{}),
    xp_ready:write(filename:join(Dir, "poll.out"),
                   [{K, V} || {K, V} <- lists:sort(maps:to_list(Counts))]).

poll_loop(Until, Acc) ->
    case now_ms() >= Until of
        true ->
            Acc;
        false ->
            {status, S} = erlang:process_info(whereis(xp_watch_target), status),
            receive after 1 -> ok end,
            poll_loop(Until, maps:update_with(S, fun(N) -> N + 1 end, 1, Acc))
    end.

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
