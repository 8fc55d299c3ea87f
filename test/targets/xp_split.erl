%% Ground truth for shares: the registered process xp_split alternates between work_a/2 and
%% work_b/2, two pure-Erlang loops of the same body, calibrated to 70 % and 30 % of each round and
%% timed in the VM (xp_truth writes the measured totals to READYFILE.split). A sample of xp_split
%% whose innermost Erlang frame is xp_split:work_a/2 is A time, xp_split:work_b/2 is B time.
%% Started on its own (-run xp_split start ...) or with xp_deep by xp_ground.
-module(xp_split).

-export([start/1, start_worker/1, work_a/1, work_b/1]).

start([Ready | _] = Args) ->
    xp_ready:boot(Args, fun() -> start_worker(Ready) end).

start_worker(Ready) ->
    xp_truth:start(xp_split, Ready ++ ".split", {fun work_a/1, 7}, {fun work_b/1, 3}),
    ok.

work_a(N) -> work_a(N, 1).
work_b(N) -> work_b(N, 1).

work_a(0, Acc) -> Acc;
work_a(N, Acc) -> work_a(N - 1, ((Acc * 7 + N) band 16#ffffff) bxor (Acc bsr 3)).

work_b(0, Acc) -> Acc;
work_b(N, Acc) -> work_b(N - 1, ((Acc * 5 + N) band 16#ffffff) bxor (Acc bsr 2)).
