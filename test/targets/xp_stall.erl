%% The flight recorder's target (test/e2e/ring_test.sh): a registered server, xp_stall_server,
%% that every ?EVERY_MS stalls for a known time in a tight loop in rare_slow_path/1 (it never
%% waits, so it is the only process its scheduler runs), 150, 300 and 450 ms in turn. Each stall's
%% wall-clock start and length, as the server itself timed them, are appended to stalls.log next
%% to the ready file: "START_US DURATION_US" (os:system_time, microseconds since the Unix epoch).
%% Started by test/e2e/lib.sh with
%%   erl -noshell ... -run xp_stall start READYFILE agent|noagent HARNESS_OS_PID
-module(xp_stall).

-export([start/1, rare_slow_path/1]).

-define(EVERY_MS, 2500).

start([ReadyFile | _] = Args) ->
    Log = filename:join(filename:dirname(ReadyFile), "stalls.log"),
    xp_ready:boot(Args, fun() -> spawn_server(Log) end).

spawn_server(Log) ->
    Pid = spawn(fun() -> server(Log, [150, 300, 450]) end),
    register(xp_stall_server, Pid),
    ok.

server(Log, [Ms | Rest]) ->
    receive after ?EVERY_MS -> ok end,
    Start = os:system_time(microsecond),
    T0 = erlang:monotonic_time(microsecond),
    _ = rare_slow_path(T0 + Ms * 1000),
    Len = erlang:monotonic_time(microsecond) - T0,
    ok = file:write_file(Log, io_lib:format("~b ~b~n", [Start, Len]), [append]),
    server(Log, Rest ++ [Ms]).

%% A tight loop until the deadline: no receive, no wait, so the run is one unbroken stretch.
rare_slow_path(Deadline) ->
    case erlang:monotonic_time(microsecond) < Deadline of
        true -> rare_slow_path(Deadline);
        false -> done
    end.
