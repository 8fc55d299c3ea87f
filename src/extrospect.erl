%% Public API of the extrospect agent.
%%
%% info/0 returns what the agent publishes for the outside sampler (the agent block, decoded),
%% with the source, verification state and reason of every offset and address.
%% recalibrate/0 reruns the calibration and republishes; status/0 reports the agent's state.
%% write_perf_map/0,1 writes /tmp/perf-PID.map (perf's symbol map for JIT code) from inside the
%% VM, as `extrospect perf-map PID` does from outside.
%% start_spies/1, stop_spies/0 and spies/0 manage the spy threads `extrospect watch` leases.
-module(extrospect).

-export([info/0, recalibrate/0, status/0, write_perf_map/0, write_perf_map/1]).
-export([start_spies/1, stop_spies/0, spies/0]).

-spec info() -> map().
info() ->
    extrospect_nif:info().

-spec recalibrate() -> ok | {error, term()}.
recalibrate() ->
    gen_server:call(extrospect_agent, recalibrate, 60000).

-spec status() -> map().
status() ->
    gen_server:call(extrospect_agent, status, 60000).

%% @doc Write /tmp/perf-PID.map: one "START SIZE $module:function/arity" line (hex) per JIT
%% symbol, Erlang functions and the JIT's shared fragments, so `perf report` names Erlang code
%% in a VM started without +JPperf. Runs on a dirty I/O scheduler (a few ms for 10k functions).
%% Safe in a shared /tmp: a new file (O_EXCL|O_NOFOLLOW, mode 0644, owned by the VM's user) is
%% renamed over the old one; refuses ({error, {refused, Text}}) when the path is a symbolic
%% link, belongs to another user or was not written by extrospect, and
%% ({error, {vm_writes_own_map, Text}}) when the VM was started with +JPperf map.
%% Call it again after loading code: the map is a snapshot. perf only uses a map owned by the
%% user running perf or by root. The JIT maps code from a memfd by default: see
%% `extrospect perf-map --help` for the step perf report then needs.
-spec write_perf_map() ->
          {ok, #{path := binary(), symbols := non_neg_integer(), modules := non_neg_integer()}} |
          {error, {atom(), binary()}}.
write_perf_map() ->
    write_perf_map(#{}).

%% @doc As write_perf_map/0; #{dir => Dir} writes Dir/perf-PID.map instead (tests, or a VM whose
%% perf looks elsewhere).
-spec write_perf_map(#{dir => file:name_all()}) ->
          {ok, #{path := binary(), symbols := non_neg_integer(), modules := non_neg_integer()}} |
          {error, {atom(), binary()}}.
write_perf_map(Opts) when is_map(Opts) ->
    Dir = unicode:characters_to_binary(maps:get(dir, Opts, "/tmp")),
    extrospect_nif:write_perf_map(Dir).

%% @doc Run N spy threads (1..16), replacing the running ones: parked threads that
%% `extrospect watch` leases to take snapshots of one process (docs/guide.md, "watch"). A parked spy
%% wakes every 100 ms and does nothing else. The application starts {spies, N} of them
%% (default 2; 0 for none). {spy_policy, normal | idle | other}: the VM's own priority (default:
%% snapshots on time on a busy machine, a few microseconds of CPU per snapshot while leased),
%% SCHED_IDLE, or nice 19; the last two starve when the cores are busy, and then under-count
%% the time the watched process runs (docs/guide.md, "watch").
-spec start_spies(1..16) -> ok | {error, term()}.
start_spies(N) when is_integer(N), N >= 1, N =< 16 ->
    gen_server:call(extrospect_agent, {spies, N}, 60000).

%% @doc Stop and join every spy thread; a sampler that leased one sees it gone.
-spec stop_spies() -> ok | {error, term()}.
stop_spies() ->
    gen_server:call(extrospect_agent, {spies, 0}, 60000).

%% @doc The spies' slots: tid, state (parked | retargeted | ...), target, interval, lease.
-spec spies() -> [map()].
spies() ->
    extrospect_nif:spy_info().
