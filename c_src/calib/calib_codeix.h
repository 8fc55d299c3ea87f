/* Finding the active code index and the module ranges table by a diff across code loads
 * (calib_codeix.c). */
#ifndef XP_CALIB_CODEIX_H
#define XP_CALIB_CODEIX_H

#include <erl_nif.h>

struct codeix;

/* calib_codeix/2, a dirty CPU NIF. */
ERL_NIF_TERM codeix_nif__step(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
/* The diff state an agent holds between steps (agent->codeix); NULL is fine. */
void codeix__free(struct codeix *x);

#endif /* XP_CALIB_CODEIX_H */
