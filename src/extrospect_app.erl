%% The extrospect application: starts the supervisor that owns the calibration agent.
-module(extrospect_app).
-behaviour(application).

-export([start/2, stop/1]).

start(_Type, _Args) ->
    extrospect_sup:start_link().

stop(_State) ->
    ok.
