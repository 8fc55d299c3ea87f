%% Code loading under sampling: the registered process xp_purge loads a freshly built version of
%% the module xp_purge_dyn again and again (code:load_binary/3 of one of 8 variants compiled at
%% start with compile:forms/2), runs its burn/1 loop for about 2 ms (so samples land in code that
%% did not exist when the sampler attached), then deletes and purges it. OTP 25 keeps purged
%% entries in the GDB JIT list; OTP 27+ unlinks and frees them. Writes READYFILE.purge with the
%% number of loads so far (every 200 ms), like xp_truth's stats.
-module(xp_purge).

-export([start/1, start_worker/1]).

-define(MOD, xp_purge_dyn).
-define(VARIANTS, 8).

start([Ready | _] = Args) ->
    xp_ready:boot(Args, fun() -> start_worker(Ready ++ ".purge") end).

%% Also bench/soak's module churn (bench/workloads/xp_soak_load.erl).
start_worker(Stats) ->
    Bins = [compile_variant(K) || K <- lists:seq(1, ?VARIANTS)],
    Parent = self(),
    Pid = spawn(fun() ->
                        register(xp_purge, self()),
                        Iters = calibrate(hd(Bins)),
                        write(Stats, 0, Iters),
                        Parent ! {self(), started},
                        loop(Stats, Bins, Iters, 0, now_ms() + 200)
                end),
    receive
        {Pid, started} -> ok
    end.

%% -module(xp_purge_dyn). -export([burn/1]).
%% burn(N) -> burn(N, K).  burn(0, A) -> A;  burn(N, A) -> burn(N - 1, (A * 3 + N + K) band 16#ffff).
compile_variant(K) ->
    L = 1,
    V = fun(Name) -> {var, L, Name} end,
    I = fun(X) -> {integer, L, X} end,
    Op = fun(O, A, B) -> {op, L, O, A, B} end,
    Forms = [{attribute, L, module, ?MOD},
             {attribute, L, export, [{burn, 1}]},
             {function, L, burn, 1,
              [{clause, L, [V('N')], [], [{call, L, {atom, L, burn}, [V('N'), I(K)]}]}]},
             {function, L, burn, 2,
              [{clause, L, [I(0), V('A')], [], [V('A')]},
               {clause, L, [V('N'), V('A')], [],
                [{call, L, {atom, L, burn},
                  [Op('-', V('N'), I(1)),
                   Op('band', Op('+', Op('+', Op('*', V('A'), I(3)), V('N')), I(K)),
                      I(16#ffff))]}]}]}],
    {ok, ?MOD, Bin} = compile:forms(Forms, [binary, report_errors]),
    Bin.

load(Bin) ->
    _ = code:purge(?MOD),
    {module, ?MOD} = code:load_binary(?MOD, "xp_purge_dyn.erl", Bin),
    ok.

%% Iterations of burn/1 that take about 2 ms.
calibrate(Bin) ->
    ok = load(Bin),
    T0 = erlang:monotonic_time(),
    _ = ?MOD:burn(100000),
    Ns = erlang:convert_time_unit(erlang:monotonic_time() - T0, native, nanosecond),
    max(1000, 100000 * 2000000 div max(Ns, 1)).

loop(Stats, Bins, Iters, Loads, NextWrite) ->
    ok = load(lists:nth(Loads rem ?VARIANTS + 1, Bins)),
    _ = ?MOD:burn(Iters),
    _ = code:purge(?MOD),
    true = code:delete(?MOD),
    case now_ms() >= NextWrite of
        true ->
            write(Stats, Loads + 1, Iters),
            loop(Stats, Bins, Iters, Loads + 1, now_ms() + 200);
        false ->
            loop(Stats, Bins, Iters, Loads + 1, NextWrite)
    end.

write(Stats, Loads, Iters) ->
    xp_ready:write(Stats, [{pid, pid_to_list(self())}, {loads, Loads}, {burn_iterations, Iters}]).

now_ms() ->
    erlang:monotonic_time(millisecond).
