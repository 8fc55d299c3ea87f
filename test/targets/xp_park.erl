%% The pstack target: processes parked in a receive under known chains of non-tail calls, each
%% with its erlang:process_info(P, backtrace) written next to the ready file (the oracle the
%% sampler's stacks are compared with), one process with a known message queue, and one busy
%% process spinning on a scheduler. With `-xp_park_count N` it also parks N anonymous processes
%% (bench/pstack_bench), with `-xp_park_queue N` one holding N messages, with `-xp_park_tick N`
%% N processes that wake every 20 ms, parked one and two calls deep in turn (so that some move
%% while pstack --all reads them, to a stack of another depth). Started by lib.sh:
%%   erl -noshell ... -run xp_park start READYFILE agent|noagent HARNESS_OS_PID
-module(xp_park).

-export([start/1, chain_a/1, deep/1, catcher/1, mailbox/0, spin/1, many/1, tick/1, tick_a/1, tick_b/1]).

-define(MAILBOX_LEN, 5).

start([ReadyFile | _] = Args) ->
    Dir = filename:dirname(ReadyFile),
    xp_ready:boot(Args, fun() -> workload(Dir) end),
    ok.

workload(Dir) ->
    Parked = [{xp_park_chain, fun() -> chain_a(1) end},
              {xp_park_deep, fun() -> deep(12) end},
              {xp_park_catch, fun() -> catcher(2) end},
              {xp_park_mailbox, fun() -> mailbox() end}],
    Pids = [{Name, start_parked(Name, Fun)} || {Name, Fun} <- Parked],
    [xp_park_mailbox ! {unmatched, I} || I <- lists:seq(1, ?MAILBOX_LEN)],
    register(xp_park_spin, spawn(fun() -> spin(0) end)),
    %% A registered name with quotes, a backslash, controls and a character outside the BMP:
    %% --json must print it as valid JSON (pstack_test.sh reads it back with jq).
    register(list_to_atom([$x, $p, $\s, $", $o, $", $\\, $\n, 16#1F600, $\t, 1]),
             spawn(fun() -> receive stop -> ok end end)),
    Count = case init:get_argument(xp_park_count) of
                {ok, [[N]]} -> list_to_integer(N);
                _ -> 0
            end,
    many(Count),
    case init:get_argument(xp_park_tick) of
        {ok, [[T]]} -> [spawn(fun() -> tick(I) end) || I <- lists:seq(1, list_to_integer(T))];
        _ -> ok
    end,
    %% -xp_park_queue N: the registered xp_park_queue holds N unmatched messages (the 10-million
    %% message queue of bench/faults_bench; sent before the ready file, so all are queued).
    case init:get_argument(xp_park_queue) of
        {ok, [[Q]]} -> fill(start_parked(xp_park_queue, fun mailbox/0), list_to_integer(Q));
        _ -> ok
    end,
    %% Each backtrace is taken once its process waits in its receive.
    [write_backtrace(Dir, Name, Pid) || {Name, Pid} <- Pids],
    Lines = [[atom_to_list(Name), $=, pid_to_list(Pid), $\n] || {Name, Pid} <- Pids],
    ok = file:write_file(filename:join(Dir, "parked.txt"), Lines),
    ok.

start_parked(Name, Fun) ->
    Pid = spawn(Fun),
    register(Name, Pid),
    Pid.

write_backtrace(Dir, Name, Pid) ->
    wait_parked(Pid, 500),
    {backtrace, Bt} = erlang:process_info(Pid, backtrace),
    ok = file:write_file(filename:join(Dir, "bt_" ++ atom_to_list(Name) ++ ".txt"), Bt).

wait_parked(_Pid, 0) ->
    erlang:error(not_parked);
wait_parked(Pid, N) ->
    case erlang:process_info(Pid, status) of
        {status, waiting} -> ok;
        _ -> receive after 10 -> wait_parked(Pid, N - 1) end
    end.

%% a -> b -> c -> receive, every call a non-tail call (the result is used after it returns).
chain_a(X) ->
    R = chain_b(X + 1),
    R * 2.

chain_b(X) ->
    R = chain_c(X + 1),
    R + 1.

chain_c(X) ->
    receive
        stop -> X
    end.

deep(0) ->
    receive
        stop -> 0
    end;
deep(N) ->
    R = deep(N - 1),
    R + N.

%% A catch frame between the calls: the walk must skip the catch word.
catcher(0) ->
    receive
        stop -> 0
    end;
catcher(N) ->
    R = try
            catcher(N - 1)
        catch
            throw:T -> T
        end,
    R + 1.

mailbox() ->
    receive
        stop -> ok
    end.

spin(N) ->
    spin((N * 7 + 3) band 16#ffff).

%% Parked in tick_a under tick, then in tick_b under tick_a under tick, 20 ms each, in turn:
%% every call a non-tail call.
tick(I) ->
    R = tick_a(I),
    tick(R).

tick_a(I) ->
    receive
        stop -> ok
    after 20 -> ok
    end,
    R = tick_b(I),
    R + 0.

tick_b(I) ->
    receive
        stop -> I
    after 20 -> I
    end.

fill(_Pid, 0) ->
    ok;
fill(Pid, N) ->
    Pid ! {unmatched, N},
    fill(Pid, N - 1).

many(0) ->
    ok;
many(N) ->
    spawn(fun() -> deep(N rem 4) end),
    many(N - 1).
