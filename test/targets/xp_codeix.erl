%% The code index target of test/e2e/info_test.sh: xp_idle's parked processes, and a loader that
%% loads a module once each time the harness creates DIR/load (DIR: the ready file's directory),
%% then answers in DIR/loadN/ready (N = 1, 2, ...) with its own view: the module and how many
%% loads it made. Each load commits exactly one new code index (B/code_ix.c), so the sampler's
%% active code index must step by one. Started by lib.sh:
%%   erl -noshell ... -run xp_codeix start READYFILE agent|noagent HARNESS_OS_PID
-module(xp_codeix).

-export([start/1]).

-define(LOADED, xp_idle). % a module no process runs here, not loaded before the first request

start([ReadyFile | _] = Args) ->
    Dir = filename:dirname(ReadyFile),
    xp_ready:boot(Args, fun() ->
                                xp_ready:park_named([xp_idle_parked_a, xp_idle_parked_b]),
                                spawn(fun() -> loader(Dir, 1) end)
                        end).

loader(Dir, N) ->
    Request = filename:join(Dir, "load"),
    case filelib:is_regular(Request) of
        true ->
            ok = file:delete(Request),
            {Mod, Bin, File} = code:get_object_code(?LOADED),
            _ = code:purge(Mod),
            {module, Mod} = code:load_binary(Mod, File, Bin),
            Out = filename:join(Dir, "load" ++ integer_to_list(N)),
            ok = file:make_dir(Out),
            xp_ready:write(filename:join(Out, "ready"), [{module, Mod}, {loads, N}]),
            loader(Dir, N + 1);
        false ->
            receive after 20 -> loader(Dir, N) end
    end.
