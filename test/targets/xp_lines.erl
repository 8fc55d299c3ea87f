%% Ground truth for `--lines`: the registered process xp_lines runs a known chain of calls, each on
%% a line marked by a comment, into spin/2 (its clauses on one marked line), where it spends nearly
%% all its time. Its dominant stack is, outermost first, with the line of each call:
%%   loop/0 @loop; a/1 @a; b/2 @b_rec; b/2 @b_rec; b/2 @b_c; c/1 @c; spin/2 @spin
%% Every call is followed by `R + 1` on the next line, whose own line instruction starts at the
%% return address: a caller named by its return address rather than the call would show the
%% next line. READYFILE.lines holds the VM's own {file, line} of an exception raised at @where,
%% so the test knows the file name the VM shows and that the module has line information.
-module(xp_lines).

-export([start/1, start_worker/1]).

-define(SPIN, 2000000).

start([Ready | _] = Args) ->
    xp_ready:boot(Args, fun() -> start_worker(Ready) end).

start_worker(Ready) ->
    xp_ready:write(Ready ++ ".lines", where()),
    register(xp_lines, spawn(fun loop/0)),
    ok.

where() ->
    try erlang:error(where) %% @where
    catch
        error:where:St ->
            [{?MODULE, where, 0, Loc} | _] = St,
            [{file, proplists:get_value(file, Loc, "none")},
             {line, proplists:get_value(line, Loc, 0)}]
    end.

loop() ->
    _ = a(?SPIN), %% @loop
    loop().

a(N) ->
    R = b(N, 2), %% @a
    R + 1.

b(N, 0) ->
    R = c(N), %% @b_c
    R + 1;
b(N, D) ->
    R = b(N, D - 1), %% @b_rec
    R + 1.

c(N) ->
    R = spin(N, 1), %% @c
    R + 1.

spin(0, Acc) -> Acc; spin(N, Acc) -> spin(N - 1, ((Acc * 3 + N) band 16#ffffff) bxor (Acc bsr 1)). %% @spin
