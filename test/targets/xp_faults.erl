%% The fault-injection target (test/e2e/faults_test.sh): busy processes under known names that
%% the sampler must keep finding while the harness hurts the VM. With `-xp_faults sched` the
%% registered process xp_faults_flip sets erlang:system_flag(schedulers_online, 1) and back to
%% all of them every 100 ms while two processes keep the dirty CPU schedulers busy
%% (erts_debug:dirty_cpu/2, as xp_dirty). It writes READYFILE.flips with the number of flips so far.
%% With `-xp_faults agent` (an agent-mode VM) xp_faults_agent stops the agent, deletes and purges
%% its NIF module and starts it again in a loop, writing READYFILE.agent with the cycles so far.
%% With `-xp_faults exec -xp_faults_so PATH` the VM replaces itself by /bin/sleep 300 (same pid,
%% xp_exec's NIF) once the harness creates READYFILE.exec.
%% Whatever the mode, the VM calls erlang:halt(3) once the harness creates READYFILE.halt
%% (polled every 20 ms): the "VM halts in the middle of a command" fault.
-module(xp_faults).

-export([start/1]).

start([Ready | _] = Args) ->
    xp_ready:boot(Args, fun() -> workload(Ready) end).

workload(Ready) ->
    register(xp_faults_busy, spawn(fun() -> busy(0) end)),
    spawn(fun() -> halt_on(Ready ++ ".halt") end),
    case init:get_argument(xp_faults) of
        {ok, [["sched"]]} ->
            [spawn(fun dirty/0) || _ <- [1, 2]],
            Flip = spawn(fun() -> flip(Ready ++ ".flips", 0) end),
            register(xp_faults_flip, Flip);
        {ok, [["agent"]]} ->
            register(xp_faults_agent, spawn(fun() -> agent_churn(Ready ++ ".agent", 0) end));
        {ok, [["exec"]]} ->
            {ok, [[So]]} = init:get_argument(xp_faults_so),
            ok = xp_exec:load(So),
            spawn(fun() -> exec_on(Ready ++ ".exec") end);
        _ -> ok
    end,
    ok.

exec_on(File) ->
    case filelib:is_file(File) of
        true -> xp_exec:exec("/bin/sleep");
        false -> receive after 20 -> exec_on(File) end
    end.

%% The agent stopped, its NIF module deleted and purged (the library unloaded), then started
%% again, in a loop: a sampler attaching or reading meanwhile finds it coming or going.
agent_churn(Stats, N) ->
    ok = application:stop(extrospect),
    code:delete(extrospect_nif),
    code:purge(extrospect_nif),
    receive after 30 -> ok end,
    {ok, _} = application:ensure_all_started(extrospect),
    ok = file:write_file(Stats ++ ".tmp", integer_to_list(N + 1)),
    ok = file:rename(Stats ++ ".tmp", Stats),
    receive after 30 -> ok end,
    agent_churn(Stats, N + 1).

busy(N) -> busy(work(N, 2000)).

work(N, 0) -> N;
work(N, K) -> work((N * 31 + K) band 16#ffffff, K - 1).

dirty() ->
    erts_debug:dirty_cpu(copy, lists:seq(1, 200)),
    dirty().

flip(Stats, N) ->
    Online = erlang:system_info(schedulers),
    erlang:system_flag(schedulers_online, 1),
    receive after 50 -> ok end,
    erlang:system_flag(schedulers_online, Online),
    ok = file:write_file(Stats ++ ".tmp", integer_to_list(N + 1)),
    ok = file:rename(Stats ++ ".tmp", Stats),
    receive after 50 -> ok end,
    flip(Stats, N + 1).

halt_on(File) ->
    case filelib:is_file(File) of
        true -> erlang:halt(3);
        false -> receive after 20 -> halt_on(File) end
    end.
