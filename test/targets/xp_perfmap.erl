%% The perf-map target: xp_split's 70/30 workload (xp_split:work_a/2, work_b/2) plus a watcher
%% the harness drives through files next to the ready file, so every step is awaited on a file:
%%   READY.load      -> compiles and loads the new module xp_perfmap_late (for --follow), then
%%                      writes READY.loaded
%%   READY.agentmap  -> calls extrospect:write_perf_map() (agent mode) and writes its result to
%%                      READY.agentmap.result (ok=true path=... symbols=N, or ok=false error=...)
%%   READY.agentmap2 -> the same again, into READY.agentmap2.result (after the harness planted a
%%                      symlink at the map's path: SECURITY.md)
%%   READY.spies     -> extrospect:start_spies(1), its result into READY.spies.result
-module(xp_perfmap).

-export([start/1]).

start([Ready | _] = Args) ->
    xp_ready:boot(Args, fun() ->
                                xp_split:start_worker(Ready),
                                register(xp_perfmap, spawn(fun() -> watch(Ready, []) end)),
                                ok
                        end).

watch(Ready, Done) ->
    receive after 20 -> ok end,
    Steps = [{".load", fun load_late/1}, {".agentmap", fun(R) -> agent_map(R ++ ".agentmap") end},
             {".agentmap2", fun(R) -> agent_map(R ++ ".agentmap2") end},
             {".spies", fun start_spies/1}],
    New = [begin Fun(Ready), Ext end
           || {Ext, Fun} <- Steps, not lists:member(Ext, Done), filelib:is_file(Ready ++ Ext)],
    watch(Ready, New ++ Done).

%% -module(xp_perfmap_late). -export([hello/0]). hello() -> late.
load_late(Ready) ->
    L = 1,
    Forms = [{attribute, L, module, xp_perfmap_late},
             {attribute, L, export, [{hello, 0}]},
             {function, L, hello, 0, [{clause, L, [], [], [{atom, L, late}]}]}],
    {ok, Mod, Bin} = compile:forms(Forms, [binary, report_errors]),
    {module, Mod} = code:load_binary(Mod, "xp_perfmap_late.erl", Bin),
    late = Mod:hello(),
    xp_ready:write(Ready ++ ".loaded", [{module, Mod}]).

agent_map(Step) ->
    KVs = try extrospect:write_perf_map() of
              {ok, #{path := Path, symbols := N}} ->
                  [{ok, true}, {path, binary_to_list(Path)}, {symbols, N}];
              {error, Reason} ->
                  [{ok, false}, {error, Reason}]
          catch Class:Error ->
                  [{ok, false}, {error, {Class, Error}}]
          end,
    xp_ready:write(Step ++ ".result", KVs).

start_spies(Ready) ->
    xp_ready:write(Ready ++ ".spies.result", [{result, extrospect:start_spies(1)}]).
