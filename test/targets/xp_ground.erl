%% The ground-truth VM of the record tests: xp_split (shares) and xp_deep (frames) side by side.
%%   erl -noshell ... -run xp_ground start READYFILE agent|noagent HARNESS_OS_PID
%% Writes READYFILE.split (xp_truth) before the ready file.
-module(xp_ground).

-export([start/1]).

start([Ready | _] = Args) ->
    xp_ready:boot(Args, fun() ->
                                ok = xp_split:start_worker(Ready),
                                xp_deep:start_worker()
                        end).
