%% The flight recorder's target (test/e2e/ring_test.sh): a registered server, xp_stall_server,
%% that every ?EVERY_MS stalls for a known time in a tight loop in rare_slow_path/1, 150, 300 and
%% 450 ms in turn. It runs at high priority and never waits in the loop, so its scheduler runs
%% nothing else meanwhile (a normal process that becomes runnable, the file server, goes to the
%% other scheduler): each stall is one unbroken run. Each stall's
%% wall-clock start and length, as the server itself timed them, are appended to stalls.log next
%% to the ready file: "START_US DURATION_US" (os:system_time, microseconds since the Unix epoch).
%% A second registered process, xp_stall_inbox, is sent 500 messages in one burst every
%% ?EVERY_MS and told to take them 500 ms later: its queue holds 500 for half a second once a
%% period (the msgq trigger's test, OTP 27+).
%% Started by test/e2e/lib.sh with
%%   erl -noshell ... -run xp_stall start READYFILE agent|noagent HARNESS_OS_PID
-module(xp_stall).

-export([start/1, rare_slow_path/1]).

-define(EVERY_MS, 2500).

start([ReadyFile | _] = Args) ->
    Log = filename:join(filename:dirname(ReadyFile), "stalls.log"),
    xp_ready:boot(Args, fun() -> spawn_server(Log) end).

spawn_server(Log) ->
    Pid = spawn(fun() ->
                        process_flag(priority, high),
                        server(Log, [150, 300, 450])
                end),
    register(xp_stall_server, Pid),
    Inbox = spawn(fun inbox/0),
    register(xp_stall_inbox, Inbox),
    spawn(fun() -> feeder(Inbox) end),
    ok.

feeder(Inbox) ->
    receive after ?EVERY_MS -> ok end,
    [Inbox ! {msg, I} || I <- lists:seq(1, 500)],
    receive after 500 -> ok end,
    Inbox ! drain,
    feeder(Inbox).

%% Waits for drain (a selective receive past the burst), then takes every message.
inbox() ->
    receive drain -> ok end,
    flush(),
    inbox().

flush() ->
    receive {msg, _} -> flush() after 0 -> ok end.

%% After a stall the server waits before it logs it, so that its run ends where the stall does
%% and its scheduler goes to sleep (writing the file at once would lengthen the run by the write,
%% and a logger process run on the same scheduler would share an edge with it).
server(Log, [Ms | Rest]) ->
    receive after ?EVERY_MS -> ok end,
    Start = os:system_time(microsecond),
    T0 = erlang:monotonic_time(microsecond),
    _ = rare_slow_path(T0 + Ms * 1000),
    Len = erlang:monotonic_time(microsecond) - T0,
    receive after 20 -> ok end,
    ok = file:write_file(Log, io_lib:format("~b ~b~n", [Start, Len]), [append]),
    server(Log, Rest ++ [Ms]).

%% A tight loop until the deadline: no receive, no wait, so the run is one unbroken stretch.
rare_slow_path(Deadline) ->
    case erlang:monotonic_time(microsecond) < Deadline of
        true -> rare_slow_path(Deadline);
        false -> done
    end.
