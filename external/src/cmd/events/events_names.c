/* events: the pid text of every process the events name, and the name of those still alive
 * (registered name, else proc_lib's initial call, else the initial call, as pstack and heap
 * name them), read through the process table at the end of the run and at its start. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events_names.h"
#include "process.h"
#include "ptab.h"
#include "readers.h"

int events__names(struct target *t, struct evstats *s, bool erlang_names)
{
	struct process_reader pr;
	struct process_view v;
	struct ptab_stats st;
	struct ptab pt;
	uint64_t *procs = NULL;
	uint32_t *ixs = NULL;
	char why[256];
	size_t i, n = 0;
	int rc;

	if (process__reader(&pr, t))
		return -ENOTSUP;
	pr.erlang_names = erlang_names;
	for (i = 0; i < s->n; i++) {
		if (!s->p[i].pid_text[0])
			process__pid_text(&pr.pids, s->p[i].pid, s->p[i].pid_text,
					  sizeof(s->p[i].pid_text));
	}
	rc = ptab__locate(t, &pt, why, sizeof(why));
	if (rc)
		return rc;
	rc = ptab__collect(&pt, t->mem, &ixs, &procs, &n, &st);
	for (i = 0; !rc && i < n; i++) {
		struct evproc *p;

		if (process__read_bounds(&pr, procs[i], &v))
			continue;
		p = evstats__find(s, v.pid);
		if (!p || p->label[0])
			continue;
		process__read_identity(&pr, &v);
		snprintf(p->label, sizeof(p->label), "%s", process__label(&v));
	}
	free(ixs);
	free(procs);
	return rc;
}
