/* The JIT map against the module ranges table. See codeix.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "codeix.h"
#include "target.h"

#define READ_TRIES 3 /* the index changed under a read: code was loading */

static const char *const status_names[] = {
    [CODEIX_NOT_RUN] = "not_run",	[CODEIX_OK] = "ok",
    [CODEIX_MISMATCH] = "mismatch",	[CODEIX_NO_INDEX] = "no_index",
    [CODEIX_NO_TABLE] = "no_table",	[CODEIX_NO_LAYOUT] = "no_layout",
    [CODEIX_NO_JIT] = "no_jit",		[CODEIX_INVALID] = "invalid",
    [CODEIX_UNREADABLE] = "unreadable", [CODEIX_CHANGING] = "changing",
};

const char *codeix__status_str(enum codeix_status s)
{
	return (unsigned)s < sizeof(status_names) / sizeof(status_names[0]) ? status_names[s] : "?";
}

#define NO_AGENT 0xffu /* not an enum xp_reason: there is no agent to say why */

static uint32_t agent_reason(const struct target *t, enum xp_addr_id id)
{
	const struct xp_agent_block *b = &t->agent->block;

	if (!target__has_agent(t))
		return NO_AGENT;
	if ((uint32_t)id >= b->n_addrs || b->addrs[id].value)
		return XP_WHY_NONE;
	return (b->addrs[id].flags >> XP_VAL_REASON_SHIFT) & 0xffu;
}

static enum codeix_status read_table(struct target *t, struct code_ranges *cr)
{
	int err = -EAGAIN, i;

	for (i = 0; i < READ_TRIES && err == -EAGAIN; i++)
		err = coderanges__read(t->mem, t->layout,
				       (uint64_t)t->addr[XP_ADDR_ACTIVE_CODE_IX].value,
				       (uint64_t)t->addr[XP_ADDR_CODE_RANGES].value, cr);
	t->codeix.err = err;
	return !err		? CODEIX_OK
	       : err == -EAGAIN ? CODEIX_CHANGING
	       : err == -EINVAL ? CODEIX_INVALID
				: CODEIX_UNREADABLE;
}

/* A range with no JIT module may be code loaded after the map was read: read a newer map. */
static int compare(struct target *t, const struct code_ranges *cr)
{
	struct target_codeix *c = &t->codeix;
	struct jitmap *fresh = NULL;
	int err = coderanges__check_jit(cr, t->jit, &c->jit);

	if (err || !c->jit.unmatched || !t->addr[XP_ADDR_JIT_DESCRIPTOR].present)
		return err;
	c->jit_reloads++;
	if (jitmap__load(t->mem, (uint64_t)t->addr[XP_ADDR_JIT_DESCRIPTOR].value, &fresh))
		return 0;
	jitmap__free(t->jit);
	t->jit = fresh;
	return coderanges__check_jit(cr, t->jit, &c->jit);
}

static enum codeix_status run(struct target *t)
{
	struct target_codeix *c = &t->codeix;
	struct code_ranges cr;
	enum codeix_status st;
	size_t i;

	c->index_reason = agent_reason(t, XP_ADDR_ACTIVE_CODE_IX);
	c->agent_reason = agent_reason(t, XP_ADDR_CODE_RANGES);
	if (!t->addr[XP_ADDR_ACTIVE_CODE_IX].present)
		return CODEIX_NO_INDEX;
	if (!t->addr[XP_ADDR_CODE_RANGES].present)
		return CODEIX_NO_TABLE;
	if (!t->layout)
		return CODEIX_NO_LAYOUT;
	/* First the table: what is published is refused or accepted whatever the JIT map says. */
	st = read_table(t, &cr);
	if (st != CODEIX_OK)
		return st;
	c->code_ix = cr.code_ix;
	if (!t->jit) {
		coderanges__free(&cr);
		return CODEIX_NO_JIT;
	}
	c->err = compare(t, &cr);
	coderanges__free(&cr);
	if (c->err)
		return CODEIX_UNREADABLE;
	/* The names point into the map, which a later command may replace: copy them. */
	for (i = 0; i < CODERANGES_NAMES && i < c->jit.jit_other; i++)
		snprintf(c->other_names[i], sizeof(c->other_names[i]), "%s",
			 c->jit.other_names[i] ? c->jit.other_names[i] : "?");
	memset(c->jit.other_names, 0, sizeof(c->jit.other_names));
	return c->jit.unmatched || !c->jit.matched ? CODEIX_MISMATCH : CODEIX_OK;
}

/* Why the agent published no address (XP_VAL_REASON_SHIFT). */
static const char *reason_str(uint32_t why)
{
	static const char *const names[] = {
	    [XP_WHY_NONE] = "an agent without it (older than the code index)",
	    [XP_WHY_NOT_FOUND] = "the agent's scan found no candidate",
	    [XP_WHY_AMBIGUOUS] = "the agent's scan found several candidates (ambiguous)",
	    [XP_WHY_UNCHECKABLE] = "the agent could not check it",
	    [XP_WHY_CHECK_FAILED] = "the agent's check of its candidate failed",
	    [XP_WHY_UNSUPPORTED] = "the agent does not support it on this VM",
	    [XP_WHY_TIME_BUDGET] = "the agent ran out of time",
	};

	if (why == NO_AGENT)
		return "no agent, and no exported symbol names it";
	return why < sizeof(names) / sizeof(names[0]) ? names[why] : "an unknown reason";
}

void codeix__verdict(const struct target_codeix *c, char *buf, size_t len)
{
	switch (c->status) {
	case CODEIX_NO_INDEX:
		snprintf(buf, len, "skipped: the active code index is unknown: %s",
			 reason_str(c->index_reason));
		break;
	case CODEIX_NO_TABLE:
		snprintf(buf, len, "skipped: the module ranges table is unknown: %s",
			 reason_str(c->agent_reason));
		break;
	case CODEIX_NO_LAYOUT:
		snprintf(buf, len, "skipped: no layout row describes this VM's ranges table");
		break;
	case CODEIX_NO_JIT:
		snprintf(buf, len, "skipped: no JIT map to compare with");
		break;
	case CODEIX_CHANGING:
		snprintf(buf, len,
			 "FAIL: the active code index changed under %d reads (code loading)",
			 READ_TRIES);
		break;
	case CODEIX_OK:
		snprintf(buf, len,
			 "pass: all %" PRIu64 " live module ranges of r[%u] are JIT modules' code",
			 c->jit.matched, c->code_ix);
		break;
	case CODEIX_MISMATCH:
		snprintf(buf, len,
			 "FAIL: %" PRIu64 " of %" PRIu64 " live module ranges of r[%u] have no JIT "
			 "module (first at 0x%" PRIx64 ")",
			 c->jit.unmatched, c->jit.unmatched + c->jit.matched, c->code_ix,
			 c->jit.first_unmatched);
		break;
	case CODEIX_INVALID:
		snprintf(buf, len,
			 "FAIL: refused: no valid active code index and ranges table at the "
			 "published addresses");
		break;
	case CODEIX_UNREADABLE:
		snprintf(buf, len, "FAIL: the ranges table could not be read: %s",
			 strerror(-c->err));
		break;
	default:
		snprintf(buf, len, "not run");
		break;
	}
}

void target__check_codeix(struct target *t)
{
	char verdict[160];
	enum check_result r;

	memset(&t->codeix, 0, sizeof(t->codeix));
	t->codeix.status = run(t);
	codeix__verdict(&t->codeix, verdict, sizeof(verdict));
	r = t->codeix.status == CODEIX_OK ? CHECK_PASS
	    : t->codeix.status == CODEIX_MISMATCH || t->codeix.status == CODEIX_INVALID ||
		    t->codeix.status == CODEIX_UNREADABLE || t->codeix.status == CODEIX_CHANGING
		? CHECK_FAIL
		: CHECK_SKIP;
	target__add_check(t, "code_ranges", r, "%s", verdict);
}
