%% The `extrospect alloc` target: a planted fragmentation of binary_alloc, then the oracle next
%% to the ready file, taken once the VM is quiet: alloc_oracle.txt, lines
%%   sysinfo ALLOCATOR INSTANCE MBC_COUNT MBC_BYTES MBC_BLOCK_BYTES SBC_COUNT SBC_BYTES
%%           SBC_BLOCK_BYTES POOL_COUNT POOL_BYTES POOL_BLOCK_BYTES
%% from erlang:system_info({allocator, A}) for every A of
%% erlang:system_info(alloc_util_allocators) (current values: carriers, carriers_size and the
%% sum of the blocks' sizes of mbcs, sbcs and mbcs_pool), and
%%   carriers ALLOCATOR COUNT BYTES
%% from instrument:carriers() (the carriers it lists, summed per allocator type), where
%% runtime_tools is installed.
%% The planted fragmentation: xp_alloc_frag makes 60,000 refc binaries of 2,000 bytes (in
%% binary_alloc's multiblock carriers), keeps every tenth and collects the rest: ~108 MB free in
%% holes of ~18 KB between long-lived blocks. (With 20,000, an instance's largest free block,
%% the unused end of a carrier of up to 8 MB, made 10-22 % of its free space, and the type's
%% fragmentation fell to 0.78 in CI.) Started by test/e2e/lib.sh:
%%   erl -noshell ... -run xp_alloc start READYFILE agent|noagent HARNESS_OS_PID
-module(xp_alloc).

-export([start/1, frag/0]).

-define(BINS, 60000).
-define(BIN_BYTES, 2000).
-define(KEEP_EVERY, 10).

start([ReadyFile | _] = Args) ->
    Dir = filename:dirname(ReadyFile),
    xp_ready:boot(Args, fun() -> workload(Dir) end),
    ok.

workload(Dir) ->
    Self = self(),
    Pid = spawn(fun() -> frag(Self) end),
    register(xp_alloc_frag, Pid),
    receive {Pid, planted} -> ok end,
    %% Quiet: what xp_ready does after us done once first (it loads unicode_util, whose 500 KiB
    %% .beam is read into a singleblock binary and whose literals take a literal_alloc carrier),
    %% every process's garbage collected, then the oracle, system_info last.
    xp_ready:write(filename:join(Dir, "warmup"), xp_ready:info([{agent_result, {a, "b"}}])),
    [erlang:garbage_collect(P) || P <- erlang:processes()],
    timer:sleep(200),
    Carriers = carriers(),
    Info = [sysinfo(A) || A <- erlang:system_info(alloc_util_allocators)],
    ok = file:write_file(filename:join(Dir, "alloc_oracle.txt"), [Info, Carriers]),
    ok.

frag() -> frag(self()).

frag(Parent) ->
    All = [binary:copy(<<I:32>>, ?BIN_BYTES div 4) || I <- lists:seq(1, ?BINS)],
    Keep = [B || {I, B} <- lists:zip(lists:seq(1, ?BINS), All), I rem ?KEEP_EVERY =:= 0],
    hold(Parent, Keep).

hold(Parent, Keep) ->
    erlang:garbage_collect(),
    Parent ! {self(), planted},
    receive stop -> length(Keep) end.

sysinfo(A) ->
    case erlang:system_info({allocator, A}) of
        Instances when is_list(Instances) ->
            [line(A, N, Props) || {instance, N, Props} <- Instances];
        _ -> []
    end.

line(A, N, Props) ->
    {MbcN, MbcS, MbcB} = stats(proplists:get_value(mbcs, Props, [])),
    {SbcN, SbcS, SbcB} = stats(proplists:get_value(sbcs, Props, [])),
    {PoolN, PoolS, PoolB} = stats(proplists:get_value(mbcs_pool, Props, [])),
    io_lib:format("sysinfo ~s ~b ~b ~b ~b ~b ~b ~b ~b ~b ~b~n",
                  [A, N, MbcN, MbcS, MbcB, SbcN, SbcS, SbcB, PoolN, PoolS, PoolB]).

stats(L) ->
    {first(lists:keyfind(carriers, 1, L)), first(lists:keyfind(carriers_size, 1, L)),
     lists:sum([first(lists:keyfind(size, 1, V)) || {_, V} <- proplists:get_value(blocks, L, [])])}.

first(false) -> 0;
first(T) -> element(2, T).

%% instrument:carriers(): {ok, {HistStart, Carriers}} (25) or with more elements before the
%% list (later releases): the list is the last element; a carrier's type and size its 1st and 3rd.
carriers() ->
    case code:which(instrument) of
        non_existing -> []; % runtime_tools not installed (the chroots: erlang-base only)
        _ -> carriers(instrument:carriers())
    end.

carriers({ok, Res}) ->
    Cs = lists:last(tuple_to_list(Res)),
    Types = lists:usort([element(1, C) || C <- Cs]),
    [io_lib:format("carriers ~s ~b ~b~n",
                   [T, length([C || C <- Cs, element(1, C) =:= T]),
                    lists:sum([element(3, C) || C <- Cs, element(1, C) =:= T])])
     || T <- Types].
