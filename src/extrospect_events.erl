%% The events process: sets and clears the trace flags of the agent's event tracer
%% (c_src/tracer.c, tracer_nif.c) when the tracer's control thread asks, that is when a sampler
%% (`extrospect events`) leases it from outside, and when the lease runs out.
%%
%% The tracer is the NIF module extrospect_nif ({extrospect_nif, Session}): the VM calls its
%% enabled/3 and trace/5 for each event, which write into rings in the agent's memory; there is
%% no tracer process and no trace message. On OTP 27 and later the flags live in a trace
%% session of their own (trace:session_create/3), so a user's dbg or recon_trace is unaffected,
%% and the session goes with this process's state if it dies. Before OTP 27 there is one
%% tracer per process: tracing is refused when another tracer is set on any process or on new
%% ones, and the flags are cleared on all processes when it stops.
-module(extrospect_events).
-behaviour(gen_server).

-export([start_link/0, status/0]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

-define(WHY_NONE, 0).
-define(WHY_OTHER_TRACER, 1).
-define(WHY_TRACE_FAILED, 2).

%% session: the tracer's session number in force; handle: the trace session (OTP 27+) or
%% legacy (erlang:trace/3 on all processes).
-record(state, {session = 0 :: non_neg_integer(),
                handle = none :: none | legacy | term(),
                flags = [] :: [atom()],
                last = none :: term()}).

start_link() ->
    gen_server:start_link({local, ?MODULE}, ?MODULE, [], []).

%% The tracer's control slot and what this process did last.
status() ->
    gen_server:call(?MODULE, status).

%% High priority: its work is a few calls, and under an event tsunami the flags must be set and
%% cleared on time (the normal run queue may be long).
init([]) ->
    process_flag(trap_exit, true),
    process_flag(priority, high),
    {ok, #state{}}.

handle_call(status, _From, S) ->
    Ctl = try extrospect_nif:tracer_info() catch _:_ -> none end,
    {reply, #{tracer => Ctl, session => S#state.session, last => S#state.last,
              sessions_api => has_sessions()}, S}.

handle_cast(_Msg, S) ->
    {noreply, S}.

handle_info({xp_events, start, Session, Want, _SampleN}, S0) ->
    S = stop_tracing(S0),
    {noreply, start_tracing(Session, flags(Want), S)};
handle_info({xp_events, stop, Session, _, _}, S) ->
    S1 = stop_tracing(S),
    report(Session, off, ?WHY_NONE),
    {noreply, S1};
%% A new library instance has its own tracer, with no session: the flags set for the old one's
%% would only discard events from now on. Clear them; a sampler starts again.
handle_info({extrospect_nif, loaded}, S) ->
    {noreply, stop_tracing(S)};
handle_info(_Msg, S) ->
    {noreply, S}.

terminate(_Reason, S) ->
    stop_tracing(S).

flags(Want) ->
    [F || {Bit, F} <- [{1, procs}, {2, send}, {4, running}, {8, garbage_collection}],
          Want band Bit =/= 0].

has_sessions() ->
    code:ensure_loaded(trace) =:= {module, trace} andalso
        erlang:function_exported(trace, session_create, 3).

start_tracing(Session, Flags, S) ->
    Tracer = {extrospect_nif, Session},
    report(Session, starting, ?WHY_NONE),
    Result = case has_sessions() of
                 true -> start_session(Tracer, Flags);
                 false -> start_legacy(Tracer, Flags)
             end,
    case Result of
        {ok, Handle} ->
            report(Session, on, ?WHY_NONE),
            S#state{session = Session, handle = Handle, flags = Flags, last = {on, Flags}};
        {refused, Why, Text} ->
            logger:notice("extrospect: events refused: ~ts", [Text]),
            report(Session, refused, Why),
            S#state{session = Session, handle = none, flags = [], last = {refused, Text}}
    end.

start_session(Tracer, Flags) ->
    try
        Handle = trace:session_create(extrospect_events, Tracer, []),
        _ = trace:process(Handle, all, true, Flags),
        {ok, Handle}
    catch C:E ->
        {refused, ?WHY_TRACE_FAILED, io_lib:format("trace:process/4: ~p:~p", [C, E])}
    end.

start_legacy({_, _} = Tracer, Flags) ->
    case other_tracer(Tracer) of
        none ->
            try
                _ = erlang:trace(all, true, [{tracer, extrospect_nif, element(2, Tracer)} | Flags]),
                {ok, legacy}
            catch C:E ->
                {refused, ?WHY_TRACE_FAILED, io_lib:format("erlang:trace/3: ~p:~p", [C, E])}
            end;
        {Who, T} ->
            {refused, ?WHY_OTHER_TRACER,
             io_lib:format("another tracer is set on ~p: ~p (OTP ~s has one tracer per "
                           "process; stop it first)", [Who, T, erlang:system_info(otp_release)])}
    end.

%% A tracer that is not ours on new processes or on any process (dbg, recon_trace, ...).
other_tracer(_Ours) ->
    Theirs = fun(W) ->
                     case catch erlang:trace_info(W, tracer) of
                         {tracer, []} -> false;
                         {tracer, {extrospect_nif, _}} -> false;
                         {tracer, T} -> {true, T};
                         _ -> false
                     end
             end,
    case Theirs(new) of
        {true, T} -> {new, T};
        false ->
            case lists:search(fun(P) -> Theirs(P) =/= false end, processes()) of
                {value, P} -> {true, T} = Theirs(P), {P, T};
                false -> none
            end
    end.

stop_tracing(#state{handle = none} = S) ->
    S;
stop_tracing(#state{handle = legacy, flags = Flags} = S) ->
    catch erlang:trace(all, false, Flags),
    S#state{handle = none, flags = [], last = off};
stop_tracing(#state{handle = Handle} = S) ->
    catch trace:session_destroy(Handle),
    S#state{handle = none, flags = [], last = off}.

report(Session, State, Why) ->
    catch extrospect_nif:tracer_report(Session, State, Why),
    ok.
