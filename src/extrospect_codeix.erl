%% Loaded again a few times by the agent's calibration (extrospect_agent:codeix_stage/0): each
%% load steps the VM's active code index by one and adds this module's code to the module ranges
%% table, which is how the NIF finds both (c_src/calib/calib_codeix.c). Nothing ever runs it.
-module(extrospect_codeix).

-export([probe/0]).

probe() ->
    ok.
