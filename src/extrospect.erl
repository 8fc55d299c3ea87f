%% Public API of the extrospect agent.
%%
%% info/0 returns what the agent publishes for the outside sampler (the agent block, decoded),
%% with the source, verification state and reason of every offset and address.
%% recalibrate/0 reruns the calibration and republishes; status/0 reports the agent's state.
-module(extrospect).

-export([info/0, recalibrate/0, status/0]).

-spec info() -> map().
info() ->
    extrospect_nif:info().

-spec recalibrate() -> ok | {error, term()}.
recalibrate() ->
    gen_server:call(extrospect_agent, recalibrate, 60000).

-spec status() -> map().
status() ->
    gen_server:call(extrospect_agent, status, 60000).
