%% Loader of the agent NIF (priv/extrospect_nif.so) and its stubs. Model: jiffy's jiffy.erl.
%%
%% The load info hands the NIF the facts it publishes (releases, schedulers, flavour) and a
%% VM-wide monotonic generation, so a reloaded library never republishes an old generation.
%% After a fresh load the agent (if running) is told, so it recalibrates, and so is the events
%% process, which clears its trace flags (the old library's tracer is gone with its session).
-module(extrospect_nif).

-export([self_proc/0, calib_begin/0, calib_self/1, calib_dirty_cpu/2, calib_dirty_io/2,
         calib_probe/5, calib_memory/3, calib_scan/1, calib_codeix/2, calib_finish/1, info/0,
         write_perf_map/1,
         spy_start/3, spy_stop/1, spy_info/0]).
%% erl_tracer callbacks of the event tracer, and its control (extrospect_events.erl).
-export([enabled/3, trace/5, tracer_report/3, tracer_info/0]).
-export([load_info/0, nif_path/0]).

-on_load(init/0).

-define(LIB, "extrospect_nif").

init() ->
    Path = nif_path(),
    case erlang:load_nif(Path, load_info()) of
        ok ->
            [P ! {extrospect_nif, loaded}
             || Name <- [extrospect_agent, extrospect_events], P <- [whereis(Name)], is_pid(P)],
            ok;
        {error, {Reason, Text}} ->
            logger:error("extrospect: cannot load ~ts: ~p ~ts", [Path, Reason, Text]),
            {error, Reason}
    end.

%% code:priv_dir/1 in an OTP application or release; next to the ebin directory otherwise
%% (a plain `-pa dir/ebin`).
nif_path() ->
    Beside = filename:join([filename:dirname(filename:dirname(code:which(?MODULE))), "priv"]),
    Dirs = case code:priv_dir(extrospect) of
               {error, _} -> [Beside];
               Priv -> [Priv, Beside]
           end,
    Found = [D || D <- Dirs, filelib:is_regular(filename:join(D, ?LIB ".so"))],
    filename:join(hd(Found ++ Dirs), ?LIB).

load_info() ->
    #{otp_release => list_to_binary(erlang:system_info(otp_release)),
      erts_version => list_to_binary(erlang:system_info(version)),
      system_version => list_to_binary(erlang:system_info(system_version)),
      emu_flavor => atom_to_binary(emu_flavor(), latin1),
      schedulers => erlang:system_info(schedulers),
      dirty_cpu_schedulers => erlang:system_info(dirty_cpu_schedulers),
      dirty_io_schedulers => erlang:system_info(dirty_io_schedulers),
      generation => erlang:unique_integer([positive, monotonic])}.

emu_flavor() ->
    try erlang:system_info(emu_flavor) catch error:badarg -> emu end.

%% The Process* of the caller, as an integer (normal scheduler).
self_proc() -> erlang:nif_error(nif_not_loaded).
calib_begin() -> erlang:nif_error(nif_not_loaded).
%% Calibrate from the caller's own struct; Sched is erlang:system_info(scheduler_id).
calib_self(_Sched) -> erlang:nif_error(nif_not_loaded).
%% Find this dirty scheduler's ErtsSchedulerData; Proc is the caller's self_proc().
calib_dirty_cpu(_Proc, _SleepUs) -> erlang:nif_error(nif_not_loaded).
calib_dirty_io(_Proc, _SleepUs) -> erlang:nif_error(nif_not_loaded).
%% Snapshot the parked probe process.
calib_probe(_Proc, _Pid, _Stage, _ExpectedQueueLen, _ExpectedReductions) ->
    erlang:nif_error(nif_not_loaded).
calib_memory(_Proc, _Pid, _GcInfo) -> erlang:nif_error(nif_not_loaded).
%% The dirty scans (atom table, JIT descriptor, process table) and what they make checkable.
calib_scan(_Args) -> erlang:nif_error(nif_not_loaded).
%% The active code index and the ranges table: a snapshot (step 0), then one step after each
%% load of a module; the last step, given {Module, <<"Module:f/0">>}, resolves (dirty).
calib_codeix(_Step, _Want) -> erlang:nif_error(nif_not_loaded).
%% Compose and publish the block.
calib_finish(_Args) -> erlang:nif_error(nif_not_loaded).
info() -> erlang:nif_error(nif_not_loaded).
%% Write DIR/perf-PID.map from the JIT list (dirty I/O scheduler); see extrospect:write_perf_map/1.
write_perf_map(_Dir) -> erlang:nif_error(nif_not_loaded).
%% Start N spy threads (policy idle | other), replacing any; republishes the block (dirty I/O).
spy_start(_N, _Policy, _Generation) -> erlang:nif_error(nif_not_loaded).
%% Stop and join every spy; republishes the block (dirty I/O).
spy_stop(_Generation) -> erlang:nif_error(nif_not_loaded).
%% The spies' slots, as maps.
spy_info() -> erlang:nif_error(nif_not_loaded).
%% erl_tracer: called by the VM for each event of a process traced by {extrospect_nif, Session}.
enabled(_Tag, _Session, _Tracee) -> erlang:nif_error(nif_not_loaded).
trace(_Tag, _Session, _Tracee, _Term, _Opts) -> erlang:nif_error(nif_not_loaded).
%% The events process's outcome: Session, on | off | refused, a reason number (extrospect_abi.h).
tracer_report(_Session, _State, _Why) -> erlang:nif_error(nif_not_loaded).
%% The event tracer's control slot.
tracer_info() -> erlang:nif_error(nif_not_loaded).
