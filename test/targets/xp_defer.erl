%% Ground truth for deferred work (issue 23): the registered process xp_defer cycles through
%% phases, each an exported function that loops on itself and makes the VM collect the process's
%% heap later than the allocation that made it necessary: after a BIF or a NIF returned a large
%% term, between the slices of a trapping BIF, or in the middle of a list comprehension. The
%% process is spawned with a heap above ERTS_POTENTIALLY_LONG_GC_HSIZE (128 Ki words, erl_gc.c),
%% so each of these collections is a dirty system task, run on a dirty CPU scheduler while the
%% process waits (erl_gc.c garbage_collect, erts_schedule_dirty_sys_execution), and with
%% fullsweep_after 0, so each collection copies the live data (the phases' arguments and a
%% ballast). The truth charges a
%% collection to the function where the process stood when it was triggered: the phase, which
%% loops on itself, so that the process resumes there (c_p->i) after the collection.
%%   erl -noshell ... [-xp_defer_seed N] [-xp_defer_nif PATH] -run xp_defer start READYFILE MODE PID
%%   erl ... -xp_defer_mode gc -run xp_defer start ...: (or, in a running phases VM, once the file
%%       READYFILE.class.gc exists) one registered process, xp_defer_gc, looping in
%%       bif_dirty/2 alone (its collections are all dirty), for `record` to attribute.
%% Stats go to READYFILE.class as xp_class writes them (NAME_frames, NAME_cpu_us, NAME_ns,
%% total_cpu_us, total_ns; see xp_class.erl): the CPU time of the normal and dirty CPU scheduler
%% threads while each phase ran, from each thread's CPU clock (thread_cpu_ns/1, this module's NIF:
%% exact), or without the NIF from /proc/self/task/TID/schedstat (as of the thread's last tick
%% or switch: 4 ms steps); the key cpu_clock says which (thread_cputime or schedstat). The seed
%% (default: from the clock) draws each phase's weight (5..25: weight ms per round) and size
%% factor (0.5..2). Without -xp_defer_nif (the NIF library xp_defer_nif.c), the NIF phase is left
%% out. xp_class loads the same NIF for its clock (nif_loaded/0, thread_cpu_ns/1).
-module(xp_defer).

-export([start/1, make_list/1, nif_loaded/0, thread_cpu_ns/1]).
-export([bif_dirty/2, bif_framed/2, nif_dirty/2, trap_gc/2, rev_gc/2, lc_grow/2, lc_nested/2,
         erl_loop/2, erl_rec/2]).

-define(CHUNK_US_PER_WEIGHT, 1000).
-define(HEAP_WORDS, 300000).    % min_heap_size: above 128 Ki words, every collection is dirty
-define(BALLAST, 20000).        % live list cells copied by every (major) collection

start([Ready | _] = Args) ->
    case init:get_argument(xp_defer_mode) of
        {ok, [["gc"]]} -> xp_ready:boot(Args, fun start_gc/0);
        _ -> xp_ready:boot(Args, fun() -> start_worker(Ready ++ ".class", seed()) end)
    end.

seed() ->
    case init:get_argument(xp_defer_seed) of
        {ok, [[S]]} -> list_to_integer(S);
        _ -> erlang:system_time(microsecond) rem 1000000
    end.

%% Loads the NIF named by -xp_defer_nif, once a VM; true when it is loaded.
nif_loaded() ->
    case {persistent_term:get({?MODULE, nif}, false), init:get_argument(xp_defer_nif)} of
        {true, _} -> true;
        {false, {ok, [[So]]}} ->
            ok = erlang:load_nif(filename:rootname(So), 0),
            persistent_term:put({?MODULE, nif}, true),
            true;
        _ -> false
    end.

make_list(_N) -> erlang:nif_error(not_loaded).

%% The summed CPU time of the threads Tids, in nanoseconds (xp_defer_nif.c).
thread_cpu_ns(_Tids) -> erlang:nif_error(not_loaded).

spawn_opts() ->
    [{min_heap_size, ?HEAP_WORDS}, {fullsweep_after, 0}].

%% {Name, BaseSize, MakeArg}.
phases(Nif) ->
    [{bif_dirty, 10000, fun(S) -> list_to_tuple(lists:seq(1, S)) end},
     {bif_framed, 10000, fun(S) -> list_to_tuple(lists:seq(1, S)) end}] ++
    [{nif_dirty, 10000, fun(S) -> S end} || Nif] ++
    [{trap_gc, 5000, fun(S) -> term_to_binary(lists:seq(1, S)) end},
     {rev_gc, 10000, fun(S) -> lists:seq(1, S) end},
     {lc_grow, 250, fun(S) -> lists:seq(1, S) end},
     {lc_nested, 250, fun(S) -> lists:seq(1, S) end},
     {erl_loop, 20000, fun(S) -> S end},
     {erl_rec, 2000, fun(S) -> S end}].

%% ---- the phases: each loops on itself N times -------------------------------------------------

%% A collection deferred to a dirty scheduler runs when the process is next scheduled out: at the
%% end of its time slice, or, left to itself, after the phase, in whatever the process does next
%% (the stats' file reads), where the sampler rightly puts it (the process stands there) and the
%% measure does not. So each phase ends with erlang:yield/0 and a call of itself (N = 0, then
%% -1): the process is scheduled out in the phase, and any collection it left pending runs then,
%% inside the phase's measured interval, while the process stands in the phase's function.

%% call_ext erlang:tuple_to_list/1, a BIF that does not trap: its result (2 words a cell) does not
%% fit in the heap left, goes to a heap fragment, and the collection after the BIF call
%% (erts_gc_after_bif_call) goes to a dirty scheduler. The process yields at its next reduction
%% check: this function's entry, where it resumes.
bif_dirty(_, -1) -> ok;
bif_dirty(T, 0) -> true = erlang:yield(), bif_dirty(T, -1);
bif_dirty(T, N) ->
    _ = tuple_to_list(T),
    bif_dirty(T, N - 1).

%% The same with a frame of its own (a body recursion: each call waits for the next one's count),
%% so that the stack holds this function's own return addresses above its caller's.
bif_framed(_, -1) -> 0;
bif_framed(T, 0) -> true = erlang:yield(), bif_framed(T, -1);
bif_framed(T, N) ->
    _ = tuple_to_list(T),
    1 + bif_framed(T, N - 1).

%% The same after a NIF (xp_defer_nif.c make_list/1), whose result is built in a heap fragment.
nif_dirty(_, -1) -> ok;
nif_dirty(S, 0) -> true = erlang:yield(), nif_dirty(S, -1);
nif_dirty(S, N) ->
    _ = make_list(S),
    nif_dirty(S, N - 1).

%% call_ext erlang:binary_to_term/1 of a long list: a BIF that traps (decodes in slices,
%% rescheduling itself between them), with the collection its result makes necessary.
trap_gc(_, -1) -> ok;
trap_gc(B, 0) -> true = erlang:yield(), trap_gc(B, -1);
trap_gc(B, N) ->
    _ = binary_to_term(B),
    trap_gc(B, N - 1).

%% call_ext lists:reverse/2 of a long list: a BIF that traps (reverses in slices of a few thousand
%% cells, rescheduling itself between them), allocating its result as it goes.
rev_gc(_, -1) -> ok;
rev_gc(L, 0) -> true = erlang:yield(), rev_gc(L, -1);
rev_gc(L, N) ->
    _ = lists:reverse(L, []),
    rev_gc(L, N - 1).

%% (A comprehension whose value is ignored is compiled to a loop that builds nothing: length/1
%% keeps the list, and its own time is this function's. The comprehension's function is body
%% recursive, a frame per element: lists of 125 to 500 elements keep the stack within what perf
%% copies at each sample without the in-kernel capture, 16 KiB (with it, 136 KiB); the rest of a
%% deeper one is read after the sample, and cut there when it has changed.)
%% A list comprehension whose result grows the heap: the collection is triggered from its JIT
%% code (test_heap, global::garbage_collect) in the middle of the comprehension, whose own
%% function ('-lc_grow/2-lc$^0/1-0-'/1) is where the process stands.
lc_grow(_, -1) -> ok;
lc_grow(L, 0) -> true = erlang:yield(), lc_grow(L, -1);
lc_grow(L, N) ->
    _ = length([X + 1 || X <- L]),
    lc_grow(L, N - 1).

%% A list comprehension that allocates two cells per element (a list of one-element lists) in a
%% body-recursive function: its comprehension's own function is where the process stands.
lc_nested(_, -1) -> 0;
lc_nested(L, 0) -> true = erlang:yield(), lc_nested(L, -1);
lc_nested(L, N) ->
    _ = length([[X] || X <- L]),
    1 + lc_nested(L, N - 1).

%% Plain Erlang, no allocation: no collection.
erl_loop(_, -1) -> ok;
erl_loop(K, 0) -> true = erlang:yield(), erl_loop(K, -1);
erl_loop(K, N) ->
    erl_spin(K, 1),
    erl_loop(K, N - 1).

%% Plain Erlang, a body recursion (allocate, call), each level spinning a little.
erl_rec(_, -1) -> 0;
erl_rec(K, 0) -> true = erlang:yield(), erl_rec(K, -1);
erl_rec(K, N) -> erl_rec_spin(K, 1) band 1 + erl_rec(K, N - 1).

erl_rec_spin(0, Acc) -> Acc;
erl_rec_spin(K, Acc) -> erl_rec_spin(K - 1, ((Acc * 7 + K) band 16#ffffff) bxor (Acc bsr 3)).

erl_spin(0, Acc) -> Acc;
erl_spin(K, Acc) -> erl_spin(K - 1, ((Acc * 7 + K) band 16#ffffff) bxor (Acc bsr 3)).

%% ---- the `gc` workload ------------------------------------------------------------------------

start_gc() ->
    Parent = self(),
    Pid = spawn_opt(fun() ->
                            register(xp_defer_gc, self()),
                            Ballast = lists:seq(1, ?BALLAST),
                            T = list_to_tuple(lists:seq(1, 40000)),
                            Parent ! {self(), started},
                            gc_loop(T, Ballast)
                    end, spawn_opts()),
    receive
        {Pid, started} -> ok
    end.

gc_loop(T, Ballast) ->
    ok = bif_dirty(T, 1000),
    gc_loop(T, Ballast).

%% ---- the workload (as in xp_class.erl) --------------------------------------------------------

-record(ph, {name, frames, fn, arg, calls, cost}).

start_worker(Stats, Seed) ->
    Parent = self(),
    Nif = nif_loaded(),
    Pid = spawn_opt(fun() ->
                            register(xp_defer, self()),
                            rand:seed(exsss, Seed),
                            open_cpu_clocks(),
                            Ballast = lists:seq(1, ?BALLAST),
                            Phs = [setup(P) || P <- phases(Nif)],
                            Zero = {0, [{0, 0} || _ <- Phs]},
                            Start = {erlang:monotonic_time(), cpu_us(all)},
                            write(Stats, Seed, Phs, Zero, Start),
                            Parent ! {self(), started},
                            loop(Stats, Seed, Phs, Zero, Start, Ballast)
                    end, spawn_opts()),
    receive
        {Pid, started} -> ok
    end.

setup({Name, Base, MakeArg}) ->
    Weight = 5 + rand:uniform(21) - 1,
    Size = max(2, round(Base * (0.5 + 1.5 * rand:uniform()))),
    Arg = MakeArg(Size), % on the heap: every collection copies it
    Fn = fun ?MODULE:Name/2,
    Cost = cost(Fn, Arg),
    Calls = max(1, round(us(Weight * ?CHUNK_US_PER_WEIGHT) / Cost)),
    #ph{name = Name, frames = [{?MODULE, Name, 2} | lc_funs(Name) ++ helpers(Name)], fn = Fn, arg = Arg,
        calls = Calls, cost = Cost}.

%% A phase's own helper function, called from its loop.
helpers(erl_loop) -> [{?MODULE, erl_spin, 2}];
helpers(erl_rec) -> [{?MODULE, erl_rec_spin, 2}];
helpers(_) -> [].

%% A phase's list comprehensions: their own local functions, where the process stands while one
%% runs.
lc_funs(Name) ->
    Prefix = "-" ++ atom_to_list(Name) ++ "/2-lc$",
    [{?MODULE, F, A} || {F, A} <- ?MODULE:module_info(functions),
                        lists:prefix(Prefix, atom_to_list(F))].

cost(Fn, Arg) ->
    N = probe(Fn, Arg, 1),
    lists:sum([timed(Fn, Arg, N) || _ <- lists:seq(1, 5)]) / (5 * N).

probe(Fn, Arg, N) ->
    case timed(Fn, Arg, N) >= us(2000) of
        true -> N;
        false -> probe(Fn, Arg, 2 * N)
    end.

timed(Fn, Arg, N) ->
    T0 = erlang:monotonic_time(),
    _ = Fn(Arg, N),
    erlang:monotonic_time() - T0.

%% Until the harness creates STATS.gc (READYFILE.class.gc): then the phases stop, the `gc`
%% workload starts in their place (no second VM to boot), and STATS.gc-started says so.
loop(Stats, Seed, Phs, {Rounds, Totals}, Start, Ballast) ->
    Next = {Rounds + 1, run_round(Phs, Totals, [])},
    write(Stats, Seed, Phs, Next, Start),
    case filelib:is_file(Stats ++ ".gc") of
        true ->
            start_gc(),
            xp_ready:write(Stats ++ ".gc-started", [{pid, pid_to_list(self())}]);
        false ->
            loop(Stats, Seed, Phs, Next, Start, Ballast)
    end.

run_round([], [], Acc) -> lists:reverse(Acc);
run_round([#ph{fn = Fn, arg = Arg, calls = Calls} | Ps], [{W, C} | Ts], Acc) ->
    T0 = erlang:monotonic_time(),
    C0 = cpu_us(phases),
    _ = Fn(Arg, Calls),
    T1 = erlang:monotonic_time(),
    C1 = cpu_us(phases_end),
    run_round(Ps, Ts, [{W + (T1 - T0), C + (C1 - C0)} | Acc]).

open_cpu_clocks() ->
    Task = "/proc/self/task/",
    {ok, Tids} = file:list_dir(Task),
    Named = [{Tid, Comm} || Tid <- Tids,
                            {ok, Comm} <- [file:read_file(Task ++ Tid ++ "/comm")]],
    Has = fun(Comm, Part) -> binary:match(Comm, Part) =/= nomatch end,
    Normal = cpu_clocks([T || {T, C} <- Named, Has(C, [<<"_scheduler">>, <<"erts_sched_">>])]),
    DirtyCpu = cpu_clocks([T || {T, C} <- Named,
                                Has(C, [<<"_dirty_cpu_sch">>, <<"erts_dcpus_">>])]),
    Io = cpu_clocks([T || {T, C} <- Named, Has(C, [<<"_dirty_io_sch">>, <<"erts_dios_">>])]),
    Stat = fun(Tid) ->
                   {ok, Fd} = file:open(Task ++ Tid ++ "/stat", [read, raw, binary]),
                   Fd
           end,
    Dirty = [Stat(T) || {T, C} <- Named, Has(C, [<<"_dirty_cpu_sch">>, <<"erts_dcpus_">>])],
    true = length(element(1, Normal)) >= 1 andalso length(element(1, DirtyCpu)) >= 1,
    put(xp_cpu_clocks, #{normal => Normal, dirty_cpu => DirtyCpu, io => Io, dirty => Dirty}),
    ok.

%% The summed run time of the normal and dirty CPU scheduler threads (phases: at a phase's start;
%% phases_end: at its end), or of every scheduler thread (all), in microseconds. Without the NIF,
%% each file is read by a dirty I/O scheduler (file:pread/3 is a dirty NIF): the process goes there
%% and back, and the normal scheduler's part of that trip is counted wherever that scheduler's
%% file is read. So the normal schedulers' clocks are read last at a phase's start and first at
%% its end: the trips of the other reads are left out of the phase, whose samples do not have them
%% either. A dirty CPU scheduler that has just handed the process back after a collection may
%% still be on its CPU, finishing it (and without the NIF its schedstat run time is as of its last
%% tick or switch): at a phase's end, wait (at most 1000 reads) until none runs, so that the
%% collection is counted in this phase, not the next.
cpu_us(phases) ->
    #{normal := Normal, dirty_cpu := DirtyCpu} = get(xp_cpu_clocks),
    D = sum_ns(DirtyCpu),
    (D + sum_ns(Normal)) div 1000;
cpu_us(phases_end) ->
    #{normal := Normal, dirty_cpu := DirtyCpu, dirty := Dirty} = get(xp_cpu_clocks),
    N = sum_ns(Normal),
    settle(Dirty, 1000),
    (N + sum_ns(DirtyCpu)) div 1000;
cpu_us(all) ->
    #{normal := Normal, dirty_cpu := DirtyCpu, io := Io} = get(xp_cpu_clocks),
    (sum_ns(Normal) + sum_ns(DirtyCpu) + sum_ns(Io)) div 1000.

%% {Tids, SchedstatFds} of the threads named by their /proc/self/task/ entries: the tids for the
%% NIF's exact clocks, the files for when the NIF is not loaded.
cpu_clocks(Tids) ->
    {[list_to_integer(T) || T <- Tids],
     [begin
          {ok, Fd} = file:open("/proc/self/task/" ++ T ++ "/schedstat", [read, raw, binary]),
          Fd
      end || T <- Tids]}.

%% The summed run time of the threads of cpu_clocks/1, in nanoseconds: exact with the NIF,
%% otherwise as of each running thread's last tick.
sum_ns({Tids, Fds}) ->
    case cpu_clock() of
        thread_cputime -> thread_cpu_ns(Tids);
        schedstat -> lists:sum([run_ns(Fd) || Fd <- Fds])
    end.

%% thread_cputime when this module's NIF is loaded, schedstat otherwise.
cpu_clock() ->
    case persistent_term:get({?MODULE, nif}, false) of
        true -> thread_cputime;
        false -> schedstat
    end.

settle(_, 0) -> ok;
settle(Dirty, N) ->
    case lists:any(fun running/1, Dirty) of
        true -> settle(Dirty, N - 1);
        false -> ok
    end.

%% /proc/self/task/TID/stat: "tid (comm) S ...", S the state (R: running).
running(Fd) ->
    {ok, B} = file:pread(Fd, 0, 512),
    [_, After] = string:split(B, <<")">>, trailing),
    binary:first(string:trim(After, leading)) =:= $R.

run_ns(Fd) ->
    {ok, B} = file:pread(Fd, 0, 128),
    [Ns | _] = binary:split(B, <<" ">>),
    binary_to_integer(Ns).

write(Stats, Seed, Phs, {Rounds, Totals}, {Wall0, Cpu0}) ->
    PerPhase = lists:append([phase_kvs(P, T) || {P, T} <- lists:zip(Phs, Totals)]),
    xp_ready:write(Stats, [{pid, pid_to_list(self())},
                           {seed, Seed},
                           {cpu_clock, cpu_clock()},
                           {rounds, Rounds},
                           {phases, lists:flatten(lists:join(",", [atom_to_list(P#ph.name)
                                                                   || P <- Phs]))},
                           {total_ns, ns(erlang:monotonic_time() - Wall0)},
                           {total_cpu_us, cpu_us(all) - Cpu0}
                           | PerPhase]).

phase_kvs(#ph{name = Name, frames = Frames, calls = Calls, cost = Cost}, {Wall, Cpu}) ->
    Key = fun(Suffix) -> list_to_atom(atom_to_list(Name) ++ Suffix) end,
    [{Key("_frames"), lists:flatten(lists:join(",", [frame(F) || F <- Frames]))},
     {Key("_ns"), ns(Wall)},
     {Key("_cpu_us"), Cpu},
     {Key("_calls"), Calls},
     {Key("_call_ns"), round(ns(Cost))}].

frame({M, F, A}) -> lists:flatten(io_lib:format("~w:~w/~b", [M, F, A])).

us(Us) -> erlang:convert_time_unit(Us, microsecond, native).

ns(T) when is_float(T) ->
    T * erlang:convert_time_unit(1000000000, native, nanosecond) / 1000000000;
ns(T) ->
    erlang:convert_time_unit(T, native, nanosecond).
