%% A real application as the workload: the Erlang compiler at work. At start it generates the
%% source text of a large module (hundreds of functions of nested case / receive / try, list and
%% binary comprehensions, records, maps, binaries, funs, and long chains of nested operators), so
%% the compiler's passes recurse deeply, non-tail, through code nobody wrote for a profiler.
%% Two registered processes then loop over it until the VM stops:
%%   xp_compiler     erl_scan:string, erl_parse:parse_form, compile:forms(Forms, [binary, return,
%%                   no_spawn_compiler_process]): it compiles in itself, so profiles name it
%%   xp_compiler_pp  erl_pp:form of every form, then erl_scan / erl_parse of the printed text
%% Uses only erlang-base (compiler, stdlib), so it runs on the host OTP 25 and in the 27 / 29 chroots.
%%   erl -noshell ... -run xp_compiler start READYFILE agent|noagent HARNESS_OS_PID
%% Both processes answer {count, From} with {xp_compiler, Name, Iterations}. The first compile and
%% printing run before the ready file is written, so all the code the loops run is loaded by then;
%% a source the compiler rejects halts the VM (status 2) loudly.
-module(xp_compiler).

-export([start/1, start_workers/0, source/0]).

-define(FUNS, 160).          % generated functions, f_0/3 .. f_159/3
-define(RECORDS, 6).         % records r0 .. r5, fields a, b, c, d
-define(EXPR_DEPTH, 6).      % nesting of the constructs in each function body
-define(CHAIN_EVERY, 8).     % every 8th function is one long operator chain ...
-define(CHAIN, 160).         % ... nested this deep (erl_parse, erl_lint, v3_core recurse on it)

start(Args) ->
    xp_ready:boot(Args, fun start_workers/0).

start_workers() ->
    Text = source(),
    case compile_text(Text) of
        {ok, _, _, _} ->
            ok;
        Error ->
            io:format(standard_error, "xp_compiler: generated source does not compile: ~0tp~n",
                      [Error]),
            erlang:halt(2)
    end,
    Forms = parse(Text),
    %% One printing too, so every module either loop runs is loaded before the ready file: a
    %% module loaded while a sampler attaches is a race of its own, not this workload's job.
    _ = [erl_pp:form(F) || F <- Forms],
    register(xp_compiler, spawn(fun() -> compile_loop(Text, 0) end)),
    register(xp_compiler_pp, spawn(fun() -> pp_loop(Forms, 0) end)),
    ok.

%% ---- the two loops -----------------------------------------------------------------------------

compile_loop(Text, N) ->
    {ok, xp_compiled, Bin, _Warnings} = compile_text(Text),
    true = is_binary(Bin),
    answer(xp_compiler, N + 1),
    compile_loop(Text, N + 1).

pp_loop(Forms, N) ->
    Printed = [erl_pp:form(F) || F <- Forms],
    Reparsed = parse(unicode:characters_to_list(Printed)),
    true = length(Reparsed) =:= length(Forms),
    answer(xp_compiler_pp, N + 1),
    pp_loop(Forms, N + 1).

answer(Name, N) ->
    receive
        {count, From} -> From ! {xp_compiler, Name, N}
    after 0 -> ok
    end.

%% no_spawn_compiler_process: compile:forms/2 otherwise runs in a process of its own
%% (erlang:apply/2), and profiles would not show the work under the registered name.
compile_text(Text) ->
    compile:forms(parse(Text), [binary, return, no_spawn_compiler_process]).

%% Scans the whole text, then parses it one form (up to each dot) at a time.
parse(Text) ->
    {ok, Tokens, _} = erl_scan:string(Text),
    forms(Tokens, []).

forms([], Acc) ->
    lists:reverse(Acc);
forms(Tokens, Acc) ->
    {Form, [Dot | Rest]} = lists:splitwith(fun(T) -> element(1, T) =/= dot end, Tokens),
    {ok, F} = erl_parse:parse_form(Form ++ [Dot]),
    forms(Rest, [F | Acc]).

%% ---- the generated module ----------------------------------------------------------------------

%% The source text of module xp_compiled; the same text every time (a fixed seed).
source() ->
    Seed = rand:seed_s(exsss, {1789, 1848, 1871}),
    {Funs, _} = lists:mapfoldl(fun gen_fun/2, Seed, lists:seq(0, ?FUNS - 1)),
    Exports = lists:join(", ", [["f_", integer_to_list(K), "/3"] || K <- lists:seq(0, ?FUNS - 1)]),
    Records = [io_lib:format("-record(r~b, {a = 0, b = [], c = #{}, d = <<>>}).~n", [R])
               || R <- lists:seq(0, ?RECORDS - 1)],
    lists:flatten(["-module(xp_compiled).\n", "-export([", Exports, "]).\n", Records, Funs]).

gen_fun(K, S0) when K rem ?CHAIN_EVERY =:= 0 ->
    {Chain, S1} = chain(?CHAIN, S0),
    {io_lib:format("f_~b(X, Y, Z) ->~n    {Z, ~s}.~n", [K, Chain]), S1};
gen_fun(K, S0) ->
    Env = #{vars => ["X", "Y", "Z"], fun_no => K, next => 0},
    {{Body, _}, S1} = expr(?EXPR_DEPTH, Env, S0),
    {io_lib:format("f_~b(X, Y, Z) ->~n    ~s.~n", [K, Body]), S1}.

%% X op (Y op (X op ...)): one expression ?CHAIN operators deep, on variables so nothing folds.
chain(0, S) ->
    {"Y", S};
chain(D, S0) ->
    {Op, S1} = pick(["+", "-", "*", "bxor", "band", "bor"], S0),
    {V, S2} = pick(["X", "Y", "length(Y)", "element(1, Z)", "(X div 3)"], S1),
    {Rest, S3} = chain(D - 1, S2),
    {["(", V, " ", Op, " ", Rest, ")"], S3}.

%% expr(Depth, Env, Seed) -> {{Text, Env}, Seed}. Env holds the variables in scope and a counter
%% for fresh names, so no variable is ever unbound, shadowed or unsafe.
expr(0, Env, S0) ->
    {Leaf, S1} = leaf(Env, S0),
    {{Leaf, Env}, S1};
expr(D, Env, S0) ->
    {Kind, S1} = pick([case_, receive_, try_, lc, bc, record, map, binary, match_bin, call,
                       fun_, arith, tuple], S0),
    construct(Kind, D - 1, Env, S1).

construct(case_, D, Env0, S0) ->
    {{E, Env1}, S1} = expr(D, Env0, S0),
    {V, Env2} = fresh(Env1),
    {{B1, Env3}, S2} = expr(D, with(V, Env2), S1),
    {{B2, Env4}, S3} = expr(D, Env3#{vars := maps:get(vars, Env2)}, S2),
    Text = ["case ", E, " of {ok, ", V, "} when is_integer(", V, ") -> ", B1,
            "; [", V, " | _] -> ", V, "; _ -> ", B2, " end"],
    {{Text, Env4#{vars := maps:get(vars, Env0)}}, S3};
construct(receive_, D, Env0, S0) ->
    {V, Env1} = fresh(Env0),
    {{B1, Env2}, S1} = expr(D, with(V, Env1), S0),
    {{B2, Env3}, S2} = expr(D, Env2#{vars := maps:get(vars, Env0)}, S1),
    Text = ["receive {xp_msg, ", V, "} -> ", B1, " after 0 -> ", B2, " end"],
    {{Text, Env3#{vars := maps:get(vars, Env0)}}, S2};
construct(try_, D, Env0, S0) ->
    {{E, Env1}, S1} = expr(D, Env0, S0),
    {V, Env2} = fresh(Env1),
    {{B, Env3}, S2} = expr(D, with(V, Env2), S1),
    Text = ["try ", E, " of ", V, " -> ", B, " catch error:badarith -> 0; throw:",
            V, "x -> ", V, "x end"],
    {{Text, Env3#{vars := maps:get(vars, Env0)}}, S2};
construct(lc, D, Env0, S0) ->
    {V, Env1} = fresh(Env0),
    {{B, Env2}, S1} = expr(D, with(V, Env1), S0),
    Text = ["[", B, " || ", V, " <- Y, is_integer(", V, "), ", V, " > ",
            integer_to_list(maps:get(fun_no, Env0)), "]"],
    {{Text, Env2#{vars := maps:get(vars, Env0)}}, S1};
construct(bc, D, Env0, S0) ->
    {V, Env1} = fresh(Env0),
    {{B, Env2}, S1} = expr(D, with(V, Env1), S0),
    Text = ["<< <<(erlang:phash2(", B, ")):32>> || <<", V, ":8>> <= term_to_binary(Z) >>"],
    {{Text, Env2#{vars := maps:get(vars, Env0)}}, S1};
construct(record, D, Env0, S0) ->
    {R, S1} = pick([integer_to_list(I) || I <- lists:seq(0, ?RECORDS - 1)], S0),
    {{A, Env1}, S2} = expr(D, Env0, S1),
    {{B, Env2}, S3} = expr(D, Env1, S2),
    Text = ["((#r", R, "{a = ", A, ", b = [X]})#r", R, "{c = #{k => ", B, "}})#r", R, ".c"],
    {{Text, Env2}, S3};
construct(map, D, Env0, S0) ->
    {{A, Env1}, S1} = expr(D, Env0, S0),
    {{B, Env2}, S2} = expr(D, Env1, S1),
    Text = ["maps:get(k2, (#{k1 => ", A, ", k3 => Y})#{k2 => ", B, "}, X)"],
    {{Text, Env2}, S2};
construct(binary, D, Env0, S0) ->
    {{A, Env1}, S1} = expr(D, Env0, S0),
    Text = ["<<(erlang:phash2(X)):16, (term_to_binary(", A, "))/binary, \"xp\">>"],
    {{Text, Env1}, S1};
construct(match_bin, D, Env0, S0) ->
    {V, Env1} = fresh(Env0),
    {{B1, Env2}, S1} = expr(D, with(V, Env1), S0),
    {{B2, Env3}, S2} = expr(D, Env2#{vars := maps:get(vars, Env0)}, S1),
    Text = ["case term_to_binary(Z) of <<131, ", V, ":8, _/binary>> -> ", B1,
            "; _ -> ", B2, " end"],
    {{Text, Env3#{vars := maps:get(vars, Env0)}}, S2};
construct(call, D, Env0, S0) ->
    {{A, Env1}, S1} = expr(D, Env0, S0),
    {{B, Env2}, S2} = expr(D, Env1, S1),
    Callee = (maps:get(fun_no, Env0) * 7 + 3) rem ?FUNS,
    Text = io_lib:format("f_~b(~s, ~s, {Z})", [Callee, A, B]),
    {{Text, Env2}, S2};
construct(fun_, D, Env0, S0) ->
    {V, Env1} = fresh(Env0),
    {{B, Env2}, S1} = expr(D, with(V, Env1), S0),
    Text = ["lists:map(fun(", V, ") -> ", B, " end, Y)"],
    {{Text, Env2#{vars := maps:get(vars, Env0)}}, S1};
construct(arith, D, Env0, S0) ->
    {{A, Env1}, S1} = expr(D, Env0, S0),
    {{B, Env2}, S2} = expr(D, Env1, S1),
    {Op, S3} = pick(["+", "*", "-", "rem", "bsl"], S2),
    Text = ["(erlang:phash2(", A, ") ", Op, " erlang:phash2(", B, "))"],
    {{Text, Env2}, S3};
construct(tuple, D, Env0, S0) ->
    {{A, Env1}, S1} = expr(D, Env0, S0),
    {L, S2} = leaf(Env1, S1),
    {{["{", A, ", ", L, ", [", L, " | Y]}"], Env1}, S2}.

leaf(#{vars := Vars}, S0) ->
    {Leaf, S1} = pick(Vars ++ ["42", "atom", "\"str\"", "<<\"bin\">>", "[]", "#{}"], S0),
    {Leaf, S1}.

fresh(#{next := N} = Env) ->
    {"V" ++ integer_to_list(N), Env#{next := N + 1}}.

with(V, #{vars := Vars} = Env) ->
    Env#{vars := [V | Vars]}.

pick(List, S0) ->
    {I, S1} = rand:uniform_s(length(List), S0),
    {lists:nth(I, List), S1}.
