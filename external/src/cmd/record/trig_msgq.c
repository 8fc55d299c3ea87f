/* The msgq trigger. See trig_msgq.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "readers.h"
#include "trig_msgq.h"

int msgq__init(struct msgq_watch *w, struct target *t, const char *name, int64_t limit, char *err,
	       size_t errlen)
{
	char why[256];
	int rc;

	*w = (struct msgq_watch){.t = t, .name = name, .limit = limit, .armed = true};
	if (!t->off[XP_OFF_P_MSG_LEN].present) {
		snprintf(err, errlen,
			 "--trigger msgq: this VM keeps no message queue length (OTP 27+ does)");
		return -ENOTSUP;
	}
	rc = ptab__locate(t, &w->ptab, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "--trigger msgq: the process table: %s", why);
		return rc;
	}
	if (process__reader(&w->pr, t)) {
		snprintf(err, errlen, "--trigger msgq: the Process layout of this VM is unknown");
		return -ENOTSUP;
	}
	return 0;
}

/* The registered process NAME: every slot's Process read, the name of each registered one. */
static void find(struct msgq_watch *w)
{
	uint32_t *ixs = NULL;
	uint64_t *procs = NULL;
	struct ptab_stats st;
	size_t n = 0, i;

	w->scans++;
	if (ptab__collect(&w->ptab, w->t->mem, &ixs, &procs, &n, &st))
		n = 0;
	for (i = 0; i < n; i++) {
		struct process_snap s;

		if (process__read_snap(&w->pr, procs[i], &s) || !s.have_reg || !s.reg)
			continue;
		process__read_identity(&w->pr, &s.v);
		if (strcmp(s.v.name, w->name) == 0) {
			w->addr = procs[i];
			w->pid = s.v.pid;
			break;
		}
	}
	free(ixs);
	free(procs);
}

bool msgq__check(struct msgq_watch *w, uint64_t now_ns, struct trig_event *ev)
{
	struct process_snap s;

	if (now_ns < w->next_read_ns)
		return false;
	w->next_read_ns = now_ns + TRIG_MSGQ_EVERY_MS * 1000000ull;
	if (!w->addr && now_ns >= w->next_find_ns) {
		w->next_find_ns = now_ns + 1000000000ull;
		find(w);
	}
	if (!w->addr)
		return false;
	w->reads++;
	if (process__read_snap(&w->pr, w->addr, &s) || s.v.pid != w->pid || !s.have_msg_len) {
		w->addr = 0; /* exited, or its slot reused: look again */
		return false;
	}
	if (s.msg_len < w->limit / 2)
		w->armed = true;
	if (!w->armed || s.msg_len < w->limit)
		return false;
	w->armed = false;
	ev->kind = TRIG_MSGQ;
	ev->time_ns = now_ns;
	snprintf(ev->detail, sizeof(ev->detail),
		 "the message queue of %s held %lld messages (>= %lld)", w->name,
		 (long long)s.msg_len, (long long)w->limit);
	return true;
}
