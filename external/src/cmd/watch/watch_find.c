/* watch: finding P's Process struct, by pid text or registered name, through the process table
 * (ptab.c), each candidate read and validated (process.c). Does not own: the table's layout. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "ptab.h"
#include "names.h"
#include "watch_find.h"
#include "watch_int.h"

/* The registered name of a snapshot, "" when none or unreadable. */
static void reg_name(struct watch *w, const struct process_snap *s, char *buf, size_t len)
{
	const struct target_value *o = &w->t->off[XP_OFF_REGPROC_NAME];
	uint64_t term;

	buf[0] = '\0';
	if (s->have_reg && s->reg && o->present && w->pr.have_atoms &&
	    mem__read_u64(w->t->mem, s->reg + (uint64_t)o->value, &term) == 0 &&
	    atom__text(&w->pr.atoms, term, buf, len) != 0)
		buf[0] = '\0';
}

static bool matches(struct watch *w, const struct process_snap *s)
{
	char text[64], name[XP_ATOM_MAX_BYTES + 1];

	if (w->o->erlang_pid) {
		process__pid_text(&w->pr.pids, s->v.pid, text, sizeof(text));
		return strcmp(text, w->o->erlang_pid) == 0;
	}
	reg_name(w, s, name, sizeof(name));
	/* As Erlang or as Elixir writes it: 'Elixir.MyApp.Repo' or MyApp.Repo. */
	return strcmp(name, w->o->name) == 0 ||
	       (strncmp(name, "Elixir.", 7) == 0 && strcmp(name + 7, w->o->name) == 0);
}

/* Processes looked at by their label (what top and pstack name them by) when no process is
 * registered under --name, and those named in the error when several have it. */
#define LABEL_SCAN_MAX 200000
#define LABEL_LIST_MAX 8

/* No process is registered as --name: is there one whose label (registered name, else proc_lib's
 * '$initial_call', else its initial call: process__label) is it? The user may have copied it from
 * top or pstack. One: it is watched. Several: the error lists them, to pick with --erlang-pid. */
static int find_by_label(struct watch *w, const uint64_t *procs, size_t n, char *err, size_t errlen)
{
	char list[LABEL_LIST_MAX * 40] = "", text[64];
	struct process_snap s;
	size_t i, found = 0, at = 0;

	if (n > LABEL_SCAN_MAX) {
		snprintf(err, errlen,
			 "no process registered as %s in VM %d (not looked for by initial call "
			 "among more than %d processes: give --erlang-pid)",
			 w->o->name, (int)w->t->pid, LABEL_SCAN_MAX);
		return CMD_EUSAGE;
	}
	for (i = 0; i < n; i++) {
		if (process__read_snap(&w->pr, procs[i], &s))
			continue;
		process__read_identity(&w->pr, &s.v);
		if (strcmp(process__label(&s.v), w->o->name) != 0)
			continue;
		process__pid_text(&w->pr.pids, s.v.pid, text, sizeof(text));
		if (found < LABEL_LIST_MAX && at < sizeof(list))
			at += (size_t)snprintf(list + at, sizeof(list) - at, " %s", text);
		if (!found++) {
			w->proc = procs[i];
			w->pid_term = s.v.pid;
			snprintf(w->pid_text, sizeof(w->pid_text), "%s", text);
			snprintf(w->name, sizeof(w->name), "%s", process__label(&s.v));
		}
	}
	if (found == 1)
		return 0;
	w->proc = 0;
	if (!found)
		snprintf(err, errlen, "no process %s in VM %d", w->o->name, (int)w->t->pid);
	else
		snprintf(
		    err, errlen,
		    "%zu processes are %s (none registered so), watch one with --erlang-pid:%s%s",
		    found, w->o->name, list, found > LABEL_LIST_MAX ? " ..." : "");
	return CMD_EUSAGE;
}

/* A process in a garbage collection moves its heap, and its heap fields disagree meanwhile:
 * read it again a little later (at most ~50 ms), as a busy collector can take that long. */
static int read_settled(struct watch *w, uint64_t addr, struct process_snap *s)
{
	int rc, tries;

	for (tries = 0; tries < 25; tries++) {
		rc = process__read_snap(&w->pr, addr, s);
		if (rc != -EINVAL)
			return rc;
		usleep(2000);
	}
	return rc;
}

/* P's Process struct, by pid text or registered name, through the process table. */
int watch__find_process(struct watch *w, char *err, size_t errlen)
{
	uint64_t *procs = NULL;
	uint32_t *ixs = NULL;
	struct ptab_stats st;
	struct process_snap s;
	struct ptab pt;
	char why[256];
	size_t i, n = 0;
	int rc;

	rc = ptab__locate(w->t, &pt, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "cannot find the process table: %s", why);
		return rc == -ENOMEM ? rc : TARGET_EUNSUPPORTED;
	}
	if (process__reader(&w->pr, w->t)) {
		snprintf(err, errlen, "the Process layout of this VM is unknown");
		return TARGET_EUNSUPPORTED;
	}
	w->pr.erlang_names = w->o->erlang_names;
	if ((rc = ptab__collect(&pt, w->t->mem, &ixs, &procs, &n, &st)))
		return rc;
	for (i = 0; i < n && !w->proc; i++) {
		if (read_settled(w, procs[i], &s) == 0 && matches(w, &s)) {
			w->proc = procs[i];
			w->pid_term = s.v.pid;
			process__pid_text(&w->pr.pids, s.v.pid, w->pid_text, sizeof(w->pid_text));
			reg_name(w, &s, w->name, sizeof(w->name));
			names__display_inplace(w->name, sizeof(w->name), w->o->erlang_names);
		}
	}
	rc = 0;
	if (!w->proc && w->o->erlang_pid) {
		snprintf(err, errlen, "no process %s in VM %d", w->o->erlang_pid, (int)w->t->pid);
		rc = CMD_EUSAGE;
	} else if (!w->proc) {
		rc = find_by_label(w, procs, n, err, errlen);
	}
	free(ixs);
	free(procs);
	return rc;
}
