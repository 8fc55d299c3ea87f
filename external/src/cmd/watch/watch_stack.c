/* watch: the Erlang stack under a resume point. When a snapshot shows P off CPU at a resume
 * address not yet explained, P's struct is read again and, if P is still there (same resume
 * address, not running, not in GC), its stack is walked from outside as pstack walks a parked
 * process, then the struct read once more: the walk is kept only when P did not move meanwhile.
 * Does not own: the walk (erlang_stack.c via pstack.c), the snapshots (watch.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pstack.h"
#include "watch_stack.h"

struct watch_stacks {
	struct pstack_ctx c;
};

int watch_stack__new(struct watch_stacks **out, struct target *t, const struct process_reader *pr)
{
	struct watch_stacks *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->c.t = t;
	s->c.pr = *pr;
	s->c.words = malloc(PSTACK_STACK_BYTES);
	s->c.er = malloc(sizeof(*s->c.er));
	if (!s->c.words || !s->c.er || agg__new(&s->c.agg)) {
		watch_stack__free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void watch_stack__free(struct watch_stacks *s)
{
	if (!s)
		return;
	agg__free(s->c.agg);
	free(s->c.er);
	free(s->c.words);
	free(s);
}

static bool parked_at(const struct process_snap *s, uint64_t i)
{
	return s->have_state && s->have_i && s->i == i && !process__is_running(s->state) &&
	       !(s->state & (XP_PSFLG_GC | XP_PSFLG_FREE | XP_PSFLG_EXITING));
}

/* The callers, innermost first, joined with " <- ". */
static void join(const struct watch_stacks *s, const struct pstack_frames *fr, char *buf,
		 size_t len)
{
	size_t used = 0;
	uint32_t k;

	buf[0] = '\0';
	for (k = 1; k < fr->n && used + 1 < len; k++) {
		int n = snprintf(buf + used, len - used, "%s%s", k > 1 ? " <- " : "",
				 agg__frame_name(s->c.agg, fr->id[k]));

		if (n < 0)
			break;
		used += (size_t)n < len - used ? (size_t)n : len - used - 1;
	}
}

int watch_stack__read(struct watch_stacks *s, uint64_t proc, uint64_t i, char *buf, size_t len)
{
	const struct target *t = s->c.t;
	struct pstack_frames *fr = malloc(sizeof(*fr));
	struct process_snap before, after;
	int rc = -EAGAIN;

	if (!fr)
		return -ENOMEM;
	/* The JIT map may have been reloaded since the last walk. */
	erlang_stack__cfg(&s->c.ecfg, t->jit, t->frame_layout,
			  (uint64_t)t->addr[XP_ADDR_NORMAL_EXIT].value, t->layout);
	if (!t->jit || process__read_snap(&s->c.pr, proc, &before) || !parked_at(&before, i))
		goto cleanup;
	pstack__process_stack(&s->c, &before, fr);
	if (process__read_snap(&s->c.pr, proc, &after) || !parked_at(&after, i) ||
	    after.v.stop != before.v.stop || after.v.hend != before.v.hend)
		goto cleanup;
	join(s, fr, buf, len);
	rc = 0;
cleanup:
	free(fr);
	return rc;
}
