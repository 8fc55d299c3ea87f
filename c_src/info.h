/* extrospect_nif:info/0: the published block, as the sampler would see it, turned into an Erlang
 * map, plus what only the agent knows (reasons in long form, call timings) (info.c). */
#ifndef XP_INFO_H
#define XP_INFO_H

#include <erl_nif.h>

#include "agent.h"

ERL_NIF_TERM info__make(ErlNifEnv *env, struct agent *a);

#endif /* XP_INFO_H */
