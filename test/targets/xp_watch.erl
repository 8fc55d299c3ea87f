%% Ground truth for `extrospect watch`: xp_watch_target alternates, again and again, ~10 ms
%% waiting in a receive (wait/0) and ~10 ms running (spin/2), and times both; a writer process
%% puts the running totals in DIR/watch.stats (key=value, written whole by rename) about every
%% 100 ms, so the harness takes the ratio over its watch window:
%%   wait_us  wall time around the receive (waiting, then runnable until scheduled)
%%   run_us   wall time around the spin (running; includes time the OS ran something else)
%%   spins    iterations of the spin loop (per run_us: the target's speed, for slowdown)
%% xp_watch_victim waits in a receive until asked to exit. xp_watch_gc builds and drops a large
%% list again and again (its heap grows and is collected: watch must follow it through both). A trigger process polls DIR for files
%% the harness creates (never a sleep on the harness side): kill_victim (the victim exits),
%% stop_spies (extrospect:stop_spies/0), unload (extrospect_nif deleted and purged),
%% suspend_victim (erlang:suspend_process/1 on the victim for one second, then resumed), and,
%% any number of times, poll (bench/watch_methods: process_info(xp_watch_target, status) every
%% millisecond for the seconds the file holds, the counts written to DIR/poll.out).
%% Started by test/e2e/lib.sh: erl ... -run xp_watch start READYFILE agent|noagent HARNESS_PID
-module(xp_watch).

-export([start/1, wait/0, spin/2, victim/0, garbage/1]).

-define(WAIT_MS, 10).
-define(RUN_US, 10000).
-define(WRITE_EVERY_MS, 100).
-define(POLL_MS, 50).

start([ReadyFile | _] = Args) ->
    Dir = filename:dirname(ReadyFile),
    xp_ready:boot(Args, fun() -> workload(Dir) end).

workload(Dir) ->
    Stats = filename:join(Dir, "watch.stats"),
    xp_ready:write(Stats, [{wait_us, 0}, {run_us, 0}, {spins, 0}]), % before the ready file
    Writer = spawn(fun() -> writer(Stats) end),
    register(xp_watch_target, spawn(fun() -> loop(Writer, {0, 0, 0}, now_ms()) end)),
    register(xp_watch_victim, spawn(?MODULE, victim, [])),
    register(xp_watch_gc, spawn(?MODULE, garbage, [0])),
    spawn(fun() -> triggers(Dir, []) end),
    xp_ready:write(filename:join(Dir, "watch.pids"),
                   [{target, pid_to_list(whereis(xp_watch_target))},
                    {victim, pid_to_list(whereis(xp_watch_victim))}]).

now_ms() ->
    erlang:monotonic_time(millisecond).

now_us() ->
    erlang:monotonic_time(microsecond).

loop(Writer, {Wait, Run, Spins}, LastWrite) ->
    T0 = now_us(),
    wait(),
    T1 = now_us(),
    N = spin(T1 + ?RUN_US, 0),
    T2 = now_us(),
    Totals = {Wait + T1 - T0, Run + T2 - T1, Spins + N},
    case now_ms() - LastWrite >= ?WRITE_EVERY_MS of
        true ->
            Writer ! {totals, Totals},
            loop(Writer, Totals, now_ms());
        false ->
            loop(Writer, Totals, LastWrite)
    end.

%% Waiting: the resume point watch reports is in this function.
wait() ->
    receive
        never -> ok
    after ?WAIT_MS -> ok
    end.

spin(Until, N) ->
    case now_us() >= Until of
        true -> N;
        false -> spin(Until, N + 1)
    end.

writer(File) ->
    receive
        {totals, {W, R, S}} ->
            xp_ready:write(File, [{wait_us, W}, {run_us, R}, {spins, S}]),
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
