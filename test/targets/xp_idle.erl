%% The idle target of the end-to-end tests: (optionally) the agent, two registered processes parked
%% in a receive under known frames, and nothing else running. Started by test/e2e/lib.sh with
%%   erl -noshell ... -run xp_idle start READYFILE agent|noagent HARNESS_OS_PID
-module(xp_idle).

-export([start/1]).

start(Args) ->
    xp_ready:boot(Args, fun() -> xp_ready:park_named([xp_idle_parked_a, xp_idle_parked_b]) end).
