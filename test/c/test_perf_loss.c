/* The lines that name records perf lost (perf_loss.c): by scheduler or CPU, with the window from
 * the start of sampling; the pprof notes text holds the same lines, and nothing when none. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "perf_loss.h"

int main(void)
{
	struct target_sched sched[2] = {{.type = XP_SCHED_NORMAL, .number = 5, .tid = 1234},
					{.type = XP_SCHED_DIRTY_CPU, .number = 3, .tid = 1240}};
	struct target t;
	struct perf_stats ps;
	char line[320], *text;

	memset(&t, 0, sizeof(t));
	t.sched = sched;
	t.nsched = 2;
	memset(&ps, 0, sizeof(ps));
	ps.opened_ns = 1000000000ull;
	CHECK("no loss, no notes", perf_loss__text(&ps, &t) == NULL);
	ps.lost = 19;
	ps.nlosses = 2;
	ps.losses[0] = (struct perf_loss){
	    .lost = 12, .from_ns = 4205000000ull, .to_ns = 4260000000ull, .tid = 1234, .cpu = -1};
	ps.losses[1] = (struct perf_loss){
	    .lost = 7, .from_ns = 5000000000ull, .to_ns = 5001000000ull, .tid = 1240, .cpu = 1};
	perf_loss__format(&ps.losses[0], &ps, &t, line, sizeof(line));
	CHECK_STR("a thread's ring",
		  "perf: 12 records lost from normal scheduler 5 (tid 1234)'s ring between 3.205 "
		  "and 3.260 s",
		  line);
	perf_loss__format(&ps.losses[1], &ps, &t, line, sizeof(line));
	CHECK_STR("a CPU's ring",
		  "perf: 7 records lost on CPU 1's ring between 4.000 and 4.001 s (of the threads "
		  "that ran there; dirty_cpu scheduler 3 (tid 1240)'s when it had room again)",
		  line);
	ps.losses[0].tid = 99;
	perf_loss__format(&ps.losses[0], &ps, &t, line, sizeof(line));
	CHECK("not a scheduler: its tid", strstr(line, "from thread 99's ring") != NULL);
	text = perf_loss__text(&ps, &t);
	CHECK("notes: a line a window",
	      text && strchr(text, '\n') && !strchr(strchr(text, '\n') + 1, '\n'));
	free(text);
	ps.lost_unlisted = 5;
	text = perf_loss__text(&ps, &t);
	CHECK("notes: the rest past the list",
	      text && strstr(text, "perf: 5 records lost in windows past the list"));
	free(text);
	return check_done();
}
