/* How a module, function or process name is shown: the one place that turns an Erlang-form name
 * of an Elixir module ('Elixir.MyApp.Repo':query/4) into the form Elixir users know
 * (MyApp.Repo.query/4). Every output (frames, registered names, initial calls) goes through it.
 * Does not own: reading names from the VM (atom.c, process.c, jitmap.c). */
#ifndef XP_NAMES_H
#define XP_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* Write name to buf as shown: with erlang_names, or when its module atom does not begin with
 * "Elixir.", unchanged. Accepts "mod:fun/N" with an optional suffix (" (file:line)") and a lone
 * atom ('Elixir.MyApp.Repo'), quoted or not. A function that is not an Elixir identifier is
 * written in double quotes, as Elixir does: MyApp.Worker."-loop/1-fun-0-"/0. */
void names__display(const char *name, bool erlang_names, char *buf, size_t len);
/* The same in place (buf holds the name, len its size). */
void names__display_inplace(char *buf, size_t len, bool erlang_names);

#endif /* XP_NAMES_H */
