%% The calibration agent: owns the long-lived probe process and drives the NIF's calibration
%% steps, then publishes. Steps (each NIF call on a normal scheduler stays far below 1 ms; the
%% scans run on a dirty scheduler):
%%   1. calib_self on every normal scheduler, from a fresh process bound to it;
%%   2. calib_dirty_cpu / calib_dirty_io from as many concurrent processes as there are dirty
%%      schedulers, so every dirty scheduler runs one;
%%   3. calib_probe: snapshots of the probe, parked in probe_loop/0, with 0, 3, 5, 0 unmatched
%%      messages queued and the reductions it had;
%%   3b. calib_memory: a short-lived process with an old generation, a refc binary in it and one
%%      in its young heap, its struct matched with process_info(P, garbage_collection_info);
%%   4. calib_scan (dirty): atom table, GDB JIT descriptor, process table, cross-checks;
%%   4b. calib_codeix (dirty): the active code index and the module ranges table, by a diff of
%%      the VM's data across three loads of extrospect_codeix;
%%   5. calib_finish: compose and publish the agent block.
%% Unverified values are logged with their reasons. A fresh load of the NIF library (code
%% reload) makes the NIF notify us and we recalibrate.
%% The agent also keeps the wanted number of spy threads ({spies, N} in the application
%% environment, extrospect:start_spies/1): every calibration run ends by making the library's
%% spies that many (a freshly loaded library has none: the old one joined its own on unload),
%% extrospect:start_spies/1 applies at once, and the agent stops them when it terminates.
-module(extrospect_agent).
-behaviour(gen_server).

-export([start_link/0]).
-export([init/1, handle_continue/2, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).
-export([calibrate_worker/3, probe_loop/0, sched_probe/1, dirty_probe/2, spy_worker/2,
         memory_probe/1]).

-define(PROBE_NAME, extrospect_probe).
-define(PROBE_MFA, {?MODULE, probe_loop, 0}).
-define(CALLER_MFA, {?MODULE, sched_probe, 1}).
-define(CALL_TIMEOUT, 5000).
-define(DIRTY_SLEEP_US, 10000).
-define(ROUNDS, 3).
-define(CODEIX_MOD, extrospect_codeix).
-define(CODEIX_LOADS, 3).
-define(CODEIX_TRIES, 5).

%% The agent itself never calls into extrospect_nif: code:purge/1 of an old extrospect_nif kills
%% the processes running its code, so every NIF call is made by a short-lived worker.
-record(state, {probe :: pid() | undefined,
                worker :: {pid(), reference()} | undefined,
                pending = false :: boolean(),        % run again when the worker is done
                waiters = [] :: [gen_server:from()], % replied when the running worker is done
                next_waiters = [] :: [gen_server:from()],
                result = not_run :: term(),
                runs = 0 :: non_neg_integer(),
                last_us = 0 :: non_neg_integer(),
                spies = 0 :: 0..16,
                spy_result = ok :: term()}).

start_link() ->
    gen_server:start_link({local, ?MODULE}, ?MODULE, [], []).

init([]) ->
    process_flag(trap_exit, true),
    case code:ensure_loaded(extrospect_nif) of
        {module, extrospect_nif} ->
            Spies = application:get_env(extrospect, spies, 2),
            {ok, #state{probe = start_probe(), spies = Spies}, {continue, calibrate}};
        {error, Reason} ->
            {stop, {extrospect_nif, Reason}}
    end.

handle_continue(calibrate, State) ->
    {noreply, request_run(State)}.

handle_call(recalibrate, From, #state{worker = undefined} = State) ->
    {noreply, request_run(State#state{waiters = [From]})};
handle_call(recalibrate, From, #state{next_waiters = Next} = State) ->
    {noreply, State#state{pending = true, next_waiters = [From | Next]}};
handle_call(status, _From, #state{} = S) ->
    {reply, #{probe => S#state.probe, result => S#state.result, runs => S#state.runs,
              running => S#state.worker =/= undefined, last_calibration_us => S#state.last_us,
              spies => S#state.spies, spy_result => S#state.spy_result},
     S};
handle_call({spies, N}, _From, State) when is_integer(N), N >= 0, N =< 16 ->
    S = apply_spies(State#state{spies = N}),
    %% A calibration run under way ends by setting the count it was started with: run again.
    Pending = S#state.pending orelse S#state.worker =/= undefined,
    {reply, S#state.spy_result, S#state{pending = Pending}};
handle_call(_Other, _From, State) ->
    {reply, {error, unknown_call}, State}.

handle_cast(_Msg, State) ->
    {noreply, State}.

%% A freshly loaded (or upgraded) NIF library: calibrate it.
handle_info({extrospect_nif, loaded}, State) ->
    {noreply, request_run(State)};
handle_info({'DOWN', Ref, process, Pid, Reason}, #state{worker = {Pid, Ref}} = State) ->
    {Result, Us} = case Reason of
                       {xp_calibrated, R, T} -> {R, T};
                       Other -> {{error, Other}, 0}
                   end,
    [gen_server:reply(W, Result) || W <- State#state.waiters],
    S = State#state{worker = undefined, result = Result, runs = State#state.runs + 1,
                    last_us = Us, waiters = []},
    case S#state.pending of
        true -> {noreply, request_run(S#state{pending = false, waiters = S#state.next_waiters,
                                              next_waiters = []})};
        false -> {noreply, S}
    end;
handle_info({'EXIT', Probe, Reason}, #state{probe = Probe} = State) ->
    logger:warning("extrospect: probe process exited (~p); restarting it", [Reason]),
    {noreply, request_run(State#state{probe = start_probe()})};
handle_info(_Msg, State) ->
    {noreply, State}.

terminate(_Reason, #state{probe = Probe, worker = Worker} = State) ->
    case Worker of
        {W, _} -> exit(W, kill);
        undefined -> ok
    end,
    State#state.spies > 0 andalso apply_spies(State#state{spies = 0}),
    stop_probe(Probe).

%% ---- spies -------------------------------------------------------------------------------------

%% Start (or stop, for 0) the wanted spies from a short-lived worker, and wait for it: the NIF
%% joins threads on a dirty scheduler, which takes a few ms.
apply_spies(#state{spies = N} = State) ->
    {Pid, Ref} = spawn_monitor(?MODULE, spy_worker, [N, spy_policy()]),
    Result = receive
                 {'DOWN', Ref, process, Pid, {xp_spies, R}} -> R;
                 {'DOWN', Ref, process, Pid, Other} -> {error, Other}
             after ?CALL_TIMEOUT ->
                     exit(Pid, kill),
                     {error, timeout}
             end,
    Result =:= ok orelse logger:warning("extrospect: spies ~b: ~p", [N, Result]),
    State#state{spy_result = Result}.

spy_policy() ->
    case application:get_env(extrospect, spy_policy, normal) of
        P when P =:= idle; P =:= other -> P;
        _ -> normal
    end.

spy_worker(N, Policy) ->
    exit({xp_spies, set_spies(N, Policy)}).

set_spies(N, Policy) ->
    Gen = erlang:unique_integer([positive, monotonic]),
    try
        case N of
            0 -> nif(spy_stop, [Gen]);
            _ -> nif(spy_start, [N, Policy, Gen])
        end
    catch exit:Why -> {error, Why};
          error:Why -> {error, Why}
    end.

%% After a calibration run: the library's spies, as many as wanted (none in a fresh library).
ensure_spies(N, Policy) ->
    Have = try length(nif(spy_info, [])) catch _:_ -> unknown end,
    case Have of
        N -> ok;
        unknown -> ok;
        _ -> Result = set_spies(N, Policy),
             Result =:= ok orelse logger:warning("extrospect: spies ~b: ~p", [N, Result])
    end.

request_run(#state{worker = undefined, probe = Probe, spies = N} = State) ->
    Worker = spawn_monitor(?MODULE, calibrate_worker, [Probe, N, spy_policy()]),
    State#state{worker = Worker};
request_run(State) ->
    State#state{pending = true}.

%% Never make an unloaded extrospect_nif load itself from here: an interactive-mode auto-load
%% racing a user's code:load_file/1 of the same module can lose the user's reply in OTP 25's
%% code_server (a second on_load started from a pending one is dropped). Abort instead.
nif(F, Args) ->
    case erlang:function_exported(extrospect_nif, F, length(Args)) of
        true -> apply(extrospect_nif, F, Args);
        false -> exit(nif_not_loaded)
    end.

%% ---- the probe ---------------------------------------------------------------------------------

start_probe() ->
    {M, F, 0} = ?PROBE_MFA,
    Probe = spawn_link(M, F, []),
    true = register(?PROBE_NAME, Probe),
    Probe.

%% Wait for it to be gone, so that a restarted agent can register the name again.
stop_probe(Probe) when is_pid(Probe) ->
    unlink(Probe),
    Ref = monitor(process, Probe),
    exit(Probe, shutdown),
    receive
        {'DOWN', Ref, process, Probe, _} -> ok
    after ?CALL_TIMEOUT -> ok
    end;
stop_probe(_) ->
    ok.

%% Parked here (in receive) while the NIF reads its struct; junk messages stay queued. Its
%% dictionary holds one entry, {Name, Name} (Name: its registered name), by which the NIF finds
%% Process.dictionary (c_src/calib/calib_probe.c).
probe_loop() ->
    _ = put(?PROBE_NAME, ?PROBE_NAME),
    receive
        {xp_probe, From, Ref, whoami} ->
            From ! {Ref, try nif(self_proc, []) catch exit:Why -> {error, Why} end},
            probe_loop();
        {xp_probe, From, Ref, ping} ->
            From ! {Ref, pong},
            probe_loop();
        {xp_probe, From, Ref, flush} ->
            flush_junk(),
            From ! {Ref, flushed},
            probe_loop();
        {xp_probe, _From, _Ref, stop} ->
            ok
    end.

%% ---- the memory probe -------------------------------------------------------------------------

%% Known memory: Old's ProcBin and a list promoted to the old generation by two minor
%% collections, then Young's ProcBin in the young heap: bin_old_vheap and off_heap.overhead hold
%% their sizes in words (odd sizes: no other word of the struct should equal them).
memory_probe(Parent) ->
    Old = binary:copy(<<1>>, 100003),
    Keep = lists:seq(1, 2000),
    erlang:garbage_collect(self(), [{type, minor}]),
    erlang:garbage_collect(self(), [{type, minor}]),
    Young = binary:copy(<<2>>, 77779),
    Parent ! {xp_memory_probe, self(), try nif(self_proc, []) catch exit:Why -> {error, Why} end},
    receive
        stop -> {byte_size(Old), length(Keep), byte_size(Young)}
    end.

memory_stage() ->
    Pid = spawn(?MODULE, memory_probe, [self()]),
    Ref = monitor(process, Pid),
    Result = receive
                 {xp_memory_probe, Pid, Addr} when is_integer(Addr) ->
                     wait_parked(Pid, 1000),
                     {garbage_collection_info, Gc} =
                         erlang:process_info(Pid, garbage_collection_info),
                     Keys = [old_heap_block_size, old_heap_size, bin_vheap_size,
                             bin_old_vheap_size, bin_vheap_block_size,
                             bin_old_vheap_block_size],
                     Values = list_to_tuple([proplists:get_value(K, Gc) || K <- Keys]),
                     nif(calib_memory, [Addr, Pid, Values]);
                 {xp_memory_probe, Pid, Other} ->
                     {error, Other};
                 {'DOWN', Ref, process, Pid, Why} ->
                     {error, {memory_probe_down, Why}}
             after ?CALL_TIMEOUT -> {error, memory_probe_timeout}
             end,
    demonitor(Ref, [flush]),
    exit(Pid, kill),
    Result =:= ok orelse logger:warning("extrospect: memory calibration: ~p", [Result]),
    ok.

flush_junk() ->
    receive
        {xp_junk, _} -> flush_junk()
    after 0 -> ok
    end.

probe_call(Probe, What) ->
    Ref = monitor(process, Probe),
    Probe ! {xp_probe, self(), Ref, What},
    receive
        {Ref, {error, nif_not_loaded}} -> exit(nif_not_loaded);
        {Ref, {error, Why}} -> exit({probe, What, Why});
        {Ref, Reply} -> demonitor(Ref, [flush]), Reply;
        {'DOWN', Ref, process, Probe, Why} -> exit({probe_down, What, Why})
    after ?CALL_TIMEOUT -> exit({probe_timeout, What})
    end.

%% Wait until the probe has scheduled out (it answered, but may still be running).
wait_parked(_Probe, 0) ->
    exit(probe_not_parked);
wait_parked(Probe, N) ->
    case erlang:process_info(Probe, status) of
        {status, waiting} -> ok;
        _ -> receive after 1 -> wait_parked(Probe, N - 1) end
    end.

%% The reductions the snapshot must show: read before and after it, -1 (unknown) when they
%% differ (the probe ran in between: it handles a process_info request for its queue as a
%% signal, one reduction, after answering it).
probe_snapshot(Probe, Addr, Stage, Expect) ->
    wait_parked(Probe, 1000),
    {message_queue_len, Expect} = erlang:process_info(Probe, message_queue_len),
    wait_parked(Probe, 1000),
    {reductions, R1} = erlang:process_info(Probe, reductions),
    ok = nif(calib_probe, [Addr, Probe, Stage, Expect, R1]),
    case erlang:process_info(Probe, reductions) of
        {reductions, R1} -> ok;
        _ -> ok = nif(calib_probe, [Addr, Probe, Stage, Expect, -1])
    end.

probe_stages(Probe, Addr) ->
    flushed = probe_call(Probe, flush),
    probe_snapshot(Probe, Addr, 0, 0),
    [Probe ! {xp_junk, I} || I <- lists:seq(1, 3)],
    pong = probe_call(Probe, ping),
    probe_snapshot(Probe, Addr, 1, 3),
    [Probe ! {xp_junk, I} || I <- lists:seq(4, 5)],
    pong = probe_call(Probe, ping),
    probe_snapshot(Probe, Addr, 2, 5),
    flushed = probe_call(Probe, flush),
    probe_snapshot(Probe, Addr, 3, 0).

%% ---- calibration (in a worker process) --------------------------------------------------------

calibrate_worker(Probe, Spies, Policy) ->
    T0 = erlang:monotonic_time(microsecond),
    Result = try run_steps(Probe)
             catch
                 exit:nif_not_loaded ->
                     %% The library is being reloaded: the new one will ask for a run.
                     {error, nif_not_loaded};
                 Class:Reason:Stack ->
                     logger:error("extrospect: calibration failed: ~p:~p ~p",
                                  [Class, Reason, Stack]),
                     {error, {Class, Reason}}
             end,
    Us = erlang:monotonic_time(microsecond) - T0,
    ensure_spies(Spies, Policy),
    Result =:= ok andalso report(Us),
    exit({xp_calibrated, Result, Us}).

run_steps(Probe) ->
    ok = nif(calib_begin, []),
    %% Offline schedulers run nothing: they are checked through the array, not by running.
    Online = erlang:system_info(schedulers_online),
    [sched_run(N, ?ROUNDS) || N <- lists:seq(1, Online)],
    dirty_run(cpu, erlang:system_info(dirty_cpu_schedulers_online), ?ROUNDS),
    dirty_run(io, erlang:system_info(dirty_io_schedulers), ?ROUNDS),
    Addr = probe_call(Probe, whoami),
    probe_stages(Probe, Addr),
    memory_stage(),
    ScanResult = nif(calib_scan, [#{probe_process => Addr,
                                             probe_pid => Probe,
                                             probe_mfa => ?PROBE_MFA,
                                             caller_mfa => ?CALLER_MFA,
                                             registered_name => ?PROBE_NAME,
                                             process_limit => erlang:system_info(process_limit)}]),
    ScanResult =:= ok orelse logger:warning("extrospect: scan: ~p", [ScanResult]),
    codeix_stage(),
    nif(calib_finish, [#{generation => erlang:unique_integer([positive, monotonic]),
                         fix_proc_bytes => fix_proc_bytes()}]).

%% ---- the active code index ---------------------------------------------------------------------

%% Snapshot, then three loads of extrospect_codeix each followed by a step (each load commits
%% one new code index); the last step resolves. A load by anyone else in between makes the words
%% step twice and nothing is found: try again, after 10, 20, 40 and 80 ms (loads come in bursts,
%% as at boot). Nothing found publishes nothing.
codeix_stage() ->
    case code:get_object_code(?CODEIX_MOD) of
        {Mod, Bin, File} -> codeix_try(Mod, Bin, File, ?CODEIX_TRIES);
        error -> logger:notice("extrospect: no object code of ~p: code index not found",
                               [?CODEIX_MOD])
    end.

codeix_try(Mod, Bin, File, Tries) ->
    _ = code:purge(Mod),
    Result = case nif(calib_codeix, [0, none]) of
                 ok -> codeix_loads(Mod, Bin, File, 1);
                 Other -> Other
             end,
    case Result of
        ok -> ok;
        {error, Why} when Tries > 1, Why =/= unsupported ->
            timer:sleep(10 bsl (?CODEIX_TRIES - Tries)),
            codeix_try(Mod, Bin, File, Tries - 1);
        {error, Why} -> logger:notice("extrospect: code index not found: ~p", [Why])
    end.

codeix_loads(Mod, Bin, File, Step) ->
    _ = code:purge(Mod),
    case code:load_binary(Mod, File, Bin) of
        {module, Mod} ->
            Want = case Step of
                       ?CODEIX_LOADS -> {atom_to_binary(Mod, utf8),
                                         iolist_to_binary([atom_to_list(Mod), ":probe/0"])};
                       _ -> none
                   end,
            case nif(calib_codeix, [Step, Want]) of
                ok when Step < ?CODEIX_LOADS -> codeix_loads(Mod, Bin, File, Step + 1);
                Result -> Result
            end;
        {error, Why} ->
            {error, {load, Why}}
    end.

%% In a fresh process bound to scheduler N (the spawn option may be ignored: the NIF checks
%% esdp->no against the scheduler_id we pass). Not a tail call: the JIT-caller check resolves
%% the NIF's return address to this function.
sched_probe(N) ->
    Id = erlang:system_info(scheduler_id),
    Result = nif(calib_self, [Id]),
    exit({xp_sched, N, Id, Result}).

sched_run(N, 0) ->
    logger:warning("extrospect: could not run on normal scheduler ~b", [N]);
sched_run(N, Rounds) ->
    Opts = [{min_heap_size, 4096}, {scheduler, N}],
    {Pid, Ref} = try spawn_opt(?MODULE, sched_probe, [N], [monitor | Opts])
                 catch error:badarg ->
                         spawn_opt(?MODULE, sched_probe, [N], [monitor, hd(Opts)])
                 end,
    receive
        {'DOWN', Ref, process, Pid, {xp_sched, N, N, ok}} -> ok;
        {'DOWN', Ref, process, Pid, Other} ->
            logger:info("extrospect: scheduler ~b probe: ~p; retrying", [N, Other]),
            sched_run(N, Rounds - 1)
    after ?CALL_TIMEOUT ->
            exit(Pid, kill),
            sched_run(N, Rounds - 1)
    end.

dirty_probe(Type, SleepUs) ->
    Proc = nif(self_proc, []),
    Result = case Type of
                 cpu -> nif(calib_dirty_cpu, [Proc, SleepUs]);
                 io -> nif(calib_dirty_io, [Proc, SleepUs])
             end,
    exit({xp_dirty, Result}).

%% As many concurrent calls as there are dirty schedulers of the type; each holds its scheduler
%% for a few ms, so they spread. Rounds repeat until every number was seen.
dirty_run(_Type, 0, _Rounds) ->
    ok;
dirty_run(Type, Count, Rounds) ->
    dirty_run(Type, Count, Rounds, sets:new()).

dirty_run(Type, Count, 0, Seen) ->
    logger:notice("extrospect: dirty ~p schedulers observed: ~b of ~b",
                  [Type, sets:size(Seen), Count]);
dirty_run(Type, Count, Rounds, Seen0) ->
    Workers = [spawn_monitor(?MODULE, dirty_probe, [Type, ?DIRTY_SLEEP_US])
               || _ <- lists:seq(1, Count)],
    Seen = lists:foldl(fun({Pid, Ref}, Acc) ->
                               receive
                                   {'DOWN', Ref, process, Pid, {xp_dirty, {ok, {_T, No, _Tid}}}} ->
                                       sets:add_element(No, Acc);
                                   {'DOWN', Ref, process, Pid, _Other} -> Acc
                               after ?CALL_TIMEOUT -> exit(Pid, kill), Acc
                               end
                       end, Seen0, Workers),
    case sets:size(Seen) >= Count of
        true -> ok;
        false -> dirty_run(Type, Count, Rounds - 1, Seen)
    end.

%% Byte counts of the 'proc' fix-alloc type: whole numbers of Process structs (sizeof check).
fix_proc_bytes() ->
    try
        lists:usort([B || {instance, _, L} <- erlang:system_info({allocator, fix_alloc}),
                          {fix_types, Types} <- L,
                          {proc, A, U} <- Types,
                          B <- [A, U], B > 0])
    catch _:_ -> []
    end.

report(Us) ->
    Info = nif(info, []),
    #{offsets := Offs, addresses := Addrs, checks := Checks} = Info,
    Unverified = [{Name, R, N} || {Name, #{verified := false, reason := R, note := N}}
                                      <- lists:sort(maps:to_list(Offs)), R =/= unsupported],
    Mismatch = [{Name, V, T} || {Name, #{mismatch := true, value := V, table := T}}
                                    <- lists:sort(maps:to_list(Offs))],
    BadAddrs = [{Name, R, N} || {Name, #{verified := false, reason := R, note := N}}
                                    <- lists:sort(maps:to_list(Addrs))],
    Failed = [C || {C, fail} <- lists:sort(maps:to_list(Checks))],
    logger:notice("extrospect: calibrated in ~b us (~s, frame layout ~p); unverified offsets: ~p; "
                  "unverified addresses: ~p",
                  [Us, maps:get(table_row, Info, "no table row"), maps:get(frame_layout, Info),
                   Unverified, BadAddrs]),
    Mismatch =:= [] orelse
        logger:warning("extrospect: offsets differ from the built-in table: ~p", [Mismatch]),
    Failed =:= [] orelse logger:warning("extrospect: load-time checks failed: ~p", [Failed]),
    ok.
