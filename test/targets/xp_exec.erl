%% The NIF of the exec fault (xp_exec_nif.c): load/1 loads it from the path given, exec/1
%% replaces the VM by another program (same OS pid). Used by xp_faults's `-xp_faults exec` mode.
-module(xp_exec).

-export([load/1, exec/1]).

load(So) -> erlang:load_nif(filename:rootname(So), 0).

exec(_Path) -> erlang:nif_error(not_loaded).
