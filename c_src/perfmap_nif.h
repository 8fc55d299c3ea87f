/* extrospect_nif:write_perf_map/1, the agent's side of `extrospect perf-map`: the same
 * /tmp/perf-PID.map, written from inside the VM on a dirty scheduler. Does not own: the map's
 * entries, format and safe writing (external/vm/perfmap.c), the descriptor scan (jitself.c). */
#ifndef XP_PERFMAP_NIF_H
#define XP_PERFMAP_NIF_H

#include <erl_nif.h>

/* write_perf_map(Dir :: binary()) -> {ok, #{path, symbols, modules}} | {error, {Reason, Text}}.
 * Must run on a dirty scheduler (badarg otherwise): walking the JIT list takes milliseconds. */
ERL_NIF_TERM perfmap_nif__write(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#endif /* XP_PERFMAP_NIF_H */
