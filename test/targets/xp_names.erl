%% The names target (test/e2e/names_test.sh): processes whose names people already know.
%%   - two unregistered gen_servers burning CPU (proc_lib's '$initial_call' {xp_names, init, 1};
%%     the VM's initial call is proc_lib:init_p/5), and one registered as xp_names_reg;
%%   - one parked unregistered gen_server (xp_names:init/1, waiting: pstack --all walks it);
%%   - a stream of short-lived proc_lib workers (proc_lib:spawn(xp_names, worker, [N]):
%%     '$initial_call' {xp_names, worker, 1}), 4 at a time, each doing the same work for
%%     ~100 ms: a flame grouped by pid has dozens of narrow roots, grouped by name one;
%%   - plain spawned processes without proc_lib (xp_names:plain/0), for the fallback.
%% Oracle next to the ready file: names_oracle.txt, one line per gen_server,
%%   PID '$initial_call'-as-m:f/a
%% from process_info(P, dictionary). Started by test/e2e/lib.sh:
%%   erl -noshell ... -run xp_names start READYFILE agent|noagent HARNESS_OS_PID
-module(xp_names).
-behaviour(gen_server).

-export([start/1, worker/1, plain/0]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

start([ReadyFile | _] = Args) ->
    Dir = filename:dirname(ReadyFile),
    xp_ready:boot(Args, fun() -> workload(Dir) end),
    ok.

workload(Dir) ->
    {ok, B1} = gen_server:start(?MODULE, busy, []),
    {ok, B2} = gen_server:start(?MODULE, busy, []),
    {ok, R} = gen_server:start({local, xp_names_reg}, ?MODULE, busy, []),
    {ok, P} = gen_server:start(?MODULE, parked, []),
    _ = [spawn(?MODULE, plain, []) || _ <- [1, 2]],
    spawn(fun() -> churn(0) end),
    Lines = [oracle(Pid) || Pid <- [B1, B2, R, P]],
    ok = file:write_file(filename:join(Dir, "names_oracle.txt"), Lines).

oracle(Pid) ->
    {dictionary, D} = process_info(Pid, dictionary),
    {M, F, A} = proplists:get_value('$initial_call', D),
    io_lib:format("~s ~s:~s/~b~n", [pid_to_list(Pid), M, F, A]).

init(busy) ->
    self() ! spin,
    {ok, busy};
init(parked) ->
    {ok, parked}.

handle_call(_, _, S) -> {reply, ok, S}.
handle_cast(_, S) -> {noreply, S}.

handle_info(spin, S) ->
    work(2000),
    self() ! spin,
    {noreply, S}.

%% Workers are started 4 at a time from one process, the next 4 when those have exited.
churn(N) ->
    Refs = [monitor(process, proc_lib:spawn(?MODULE, worker, [N + I])) || I <- [1, 2, 3, 4]],
    [receive {'DOWN', Ref, _, _, _} -> ok end || Ref <- Refs],
    churn(N + 4).

%% ~100 ms of work on an idle machine: like a compiler worker, short-lived yet long enough to
%% be named while it lives (the sampler reads a sample's process tens of ms after it on a loaded
%% machine; one that exited before is named by its initial call, proc_lib:init_p/5).
worker(_N) ->
    [work(3000) || _ <- lists:seq(1, 20)],
    ok.

plain() ->
    work(1000),
    plain().

work(K) ->
    erlang:phash2(lists:foldl(fun(X, Acc) -> [X * X | Acc] end, [], lists:seq(1, K))).
