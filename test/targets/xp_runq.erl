%% The runq trigger's target (test/e2e/runq_test.sh): quiet until the harness creates a file
%% named "burst" next to the ready file, then spawns ?PROCS busy processes bound to scheduler 1
%% (the undocumented spawn_opt {scheduler, 1}, as erts' own tests use it), each looping until
%% ?BURST_MS from the burst's start: scheduler 1's run queue holds about ?PROCS - 1 of them for
%% that long, and nothing else runs there. ?SETTLE_MS into the burst it appends what the VM itself
%% counts to bursts.log: "START_US PROCS RUNQ1 ALL" (os:system_time in microseconds, then
%% erlang:statistics(run_queue_lengths)'s first entry, then erlang:system_info(process_count):
%% no run queue can hold more). The file is removed when seen.
%% Started by test/e2e/lib.sh with
%%   erl -noshell +S 2 ... -run xp_runq start READYFILE agent|noagent HARNESS_OS_PID
-module(xp_runq).

-export([start/1]).

-define(PROCS, 200).
-define(BURST_MS, 1500).
-define(SETTLE_MS, 300).
-define(POLL_MS, 50).

start([ReadyFile | _] = Args) ->
    Dir = filename:dirname(ReadyFile),
    xp_ready:boot(Args, fun() -> register(xp_runq_poller, spawn(fun() -> poller(Dir) end)) end).

%% High priority: its count of the queue is taken on time, ahead of the busy processes.
poller(Dir) ->
    process_flag(priority, high),
    poll(Dir).

poll(Dir) ->
    receive after ?POLL_MS -> ok end,
    Go = filename:join(Dir, "burst"),
    case filelib:is_regular(Go) of
        true ->
            ok = file:delete(Go),
            burst(Dir);
        false ->
            ok
    end,
    poll(Dir).

burst(Dir) ->
    Start = os:system_time(microsecond),
    Deadline = erlang:monotonic_time(millisecond) + ?BURST_MS,
    [spawn_opt(fun() -> spin(Deadline) end, [{scheduler, 1}]) || _ <- lists:seq(1, ?PROCS)],
    receive after ?SETTLE_MS -> ok end,
    [Runq1 | _] = erlang:statistics(run_queue_lengths),
    All = erlang:system_info(process_count),
    Line = io_lib:format("~b ~b ~b ~b~n", [Start, ?PROCS, Runq1, All]),
    ok = file:write_file(filename:join(Dir, "bursts.log"), Line, [append]),
    receive after ?BURST_MS -> ok end.

spin(Deadline) ->
    case erlang:monotonic_time(millisecond) < Deadline of
        true -> spin(Deadline);
        false -> done
    end.
