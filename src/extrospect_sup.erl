%% Top supervisor: extrospect_agent, which owns calibration and the probe process, and
%% extrospect_events, which sets and clears the event tracer's flags.
-module(extrospect_sup).
-behaviour(supervisor).

-export([start_link/0, init/1]).

start_link() ->
    supervisor:start_link({local, ?MODULE}, ?MODULE, []).

init([]) ->
    Agent = #{id => extrospect_agent,
              start => {extrospect_agent, start_link, []},
              restart => permanent,
              shutdown => 5000,
              type => worker,
              modules => [extrospect_agent]},
    Events = #{id => extrospect_events,
               start => {extrospect_events, start_link, []},
               restart => permanent,
               shutdown => 5000,
               type => worker,
               modules => [extrospect_events]},
    {ok, {#{strategy => one_for_one, intensity => 3, period => 10}, [Agent, Events]}}.
