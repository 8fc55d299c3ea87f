%% The `extrospect heap` target: processes parked in a receive with known memory, and the oracle
%% next to the ready file: heap_oracle.txt, one line per parked process,
%%   NAME PID heap_size total_heap_size stack_size message_queue_len binary_bytes memory reductions
%%   old_heap_block_size old_heap_size heap_used mbuf_size bin_vheap_size bin_old_vheap_size
%%   bin_vheap_block_size
%% from erlang:process_info(P, [...]) once the process waits: binary_bytes is the sum of the sizes
%% process_info(P, binary) lists; the last seven come from process_info(P,
%% garbage_collection_info), where heap_used is its heap_size (htop - heap). reductions comes
%% from calls of its own, last, once settled: a request for the message queue or memory is a
%% signal the process handles, which costs it a reduction after the answer was made.
%% xp_heap_leak keeps 16 refc binaries of 1 MiB (the planted leak); xp_heap_big has a large heap
%% and an old generation; xp_heap_stack a deep stack; xp_heap_mailbox a queue of 7 atoms
%% (immediates: no message data, so total_heap_size stays exact); xp_heap_grow keeps a new binary
%% every 100 ms (heap --watch). With `-xp_heap_count N` it also parks N small processes, with
%% `-xp_heap_hoard_mib N` one holding N MiB of binaries and N * 64 KiB of heap (bench/heap_bench). Started by test/e2e/lib.sh:
%%   erl -noshell ... -run xp_heap start READYFILE agent|noagent HARNESS_OS_PID
-module(xp_heap).

-export([start/1, leak/0, big/0, deep/1, mailbox/0, idle/0, many/1, grow/1, hoard/1]).

-define(LEAK_BINS, 16).
-define(LEAK_BIN_BYTES, (1 bsl 20)).
-define(MAILBOX_LEN, 7).
-define(GROW_BIN_BYTES, (32 bsl 10)).
-define(GROW_MAX, 400). % 12.5 MiB after 40 s: never more than the leak's 16 MiB

start([ReadyFile | _] = Args) ->
    Dir = filename:dirname(ReadyFile),
    xp_ready:boot(Args, fun() -> workload(Dir) end),
    ok.

workload(Dir) ->
    Parked = [{xp_heap_leak, fun leak/0},
              {xp_heap_big, fun big/0},
              {xp_heap_stack, fun() -> deep(2000) end},
              {xp_heap_mailbox, fun mailbox/0},
              {xp_heap_idle, fun idle/0}],
    Pids = [{Name, start_parked(Name, Fun)} || {Name, Fun} <- Parked],
    [xp_heap_mailbox ! unmatched || _ <- lists:seq(1, ?MAILBOX_LEN)],
    Count = case init:get_argument(xp_heap_count) of
                {ok, [[N]]} -> list_to_integer(N);
                _ -> 0
            end,
    many(Count),
    case init:get_argument(xp_heap_hoard_mib) of
        {ok, [[Mib]]} ->
            wait_parked(start_parked(xp_heap_hoard, fun() -> hoard(list_to_integer(Mib)) end),
                        12000);
        _ -> ok
    end,
    register(xp_heap_grow, spawn(fun() -> grow(0) end)),
    [wait_parked(Pid, 1000) || {_, Pid} <- Pids],
    %% Twice: the first request may be what makes a process handle its pending signals; the
    %% second is the state the sampler reads (a parked process does not change after it).
    _ = [oracle(Name, Pid) || {Name, Pid} <- Pids],
    Lines = [oracle(Name, Pid) || {Name, Pid} <- Pids],
    ok = file:write_file(filename:join(Dir, "heap_oracle.txt"), Lines),
    ok.

start_parked(Name, Fun) ->
    Pid = spawn(Fun),
    register(Name, Pid),
    Pid.

oracle(Name, Pid) ->
    Keys = [heap_size, total_heap_size, stack_size, message_queue_len, binary, memory,
            garbage_collection_info],
    [{heap_size, H}, {total_heap_size, T}, {stack_size, S}, {message_queue_len, Q},
     {binary, Bins}, {memory, M}, {garbage_collection_info, Gc}] =
        erlang:process_info(Pid, Keys),
    GcKeys = [old_heap_block_size, old_heap_size, heap_size, mbuf_size, bin_vheap_size,
              bin_old_vheap_size, bin_vheap_block_size],
    GcValues = [integer_to_list(proplists:get_value(K, Gc)) || K <- GcKeys],
    R = settled_reductions(Pid, -1, 200),
    B = lists:sum([Size || {_, Size, _} <- Bins]),
    io_lib:format("~s ~s ~b ~b ~b ~b ~b ~b ~b ~s~n",
                  [Name, pid_to_list(Pid), H, T, S, Q, B, M, R, lists:join(" ", GcValues)]).

%% The process handles a request signal after answering it, at its next schedule: its count is
%% final once two reads 10 ms apart agree (a read of reductions alone is not a signal).
settled_reductions(_Pid, _Last, 0) ->
    erlang:error(reductions_not_settled);
settled_reductions(Pid, Last, N) ->
    case erlang:process_info(Pid, reductions) of
        {reductions, Last} -> Last;
        {reductions, R} -> receive after 10 -> settled_reductions(Pid, R, N - 1) end
    end.

wait_parked(_Pid, 0) ->
    erlang:error(not_parked);
wait_parked(Pid, N) ->
    case erlang:process_info(Pid, status) of
        {status, waiting} -> ok;
        _ -> receive after 10 -> wait_parked(Pid, N - 1) end
    end.

%% The planted leak: references to large refc binaries, kept. A full collection first, so the
%% vheap counts exactly the binaries still referenced (B/erl_gc.c sweep_off_heap).
leak() ->
    Bins = [binary:copy(<<I>>, ?LEAK_BIN_BYTES) || I <- lists:seq(1, ?LEAK_BINS)],
    erlang:garbage_collect(),
    hold(Bins).

%% A large heap whose data survived two minor collections: it lives in the old generation.
big() ->
    Data = lists:seq(1, 200000),
    erlang:garbage_collect(self(), [{type, minor}]),
    erlang:garbage_collect(self(), [{type, minor}]),
    hold(Data).

hold(Data) ->
    receive
        stop -> length(Data)
    end.

deep(0) ->
    receive
        stop -> 0
    end;
deep(N) ->
    R = deep(N - 1),
    R + N.

mailbox() ->
    receive
        stop -> ok
    end.

idle() ->
    receive
        stop -> ok
    end.

%% The --watch subject: keeps a new 32 KiB refc binary every 100 ms (up to ?GROW_MAX), so its
%% binaries only grow.
grow(N) ->
    grow(N, []).

grow(N, Kept) when N >= ?GROW_MAX ->
    hold(Kept);
grow(N, Kept) ->
    receive
        stop -> ok
    after 100 ->
        grow(N + 1, [binary:copy(<<N:8>>, ?GROW_BIN_BYTES) | Kept])
    end.

%% A large VM for bench/heap_bench: Mib refc binaries of 1 MiB and a heap of Mib * 8192 words
%% (a list of Mib * 4096 integers).
hoard(Mib) ->
    Bins = [binary:copy(<<I:8>>, 1 bsl 20) || I <- lists:seq(1, Mib)],
    Heap = lists:seq(1, Mib * 4096),
    hold({Bins, Heap}).

many(0) ->
    ok;
many(N) ->
    spawn(fun idle/0),
    many(N - 1).
