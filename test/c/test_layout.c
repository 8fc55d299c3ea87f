/* Unit tests for the per-version layout table (layout.c): rows match only their erts series,
 * never a newer or unknown version, and thread names parse per OTP naming. */
#include "check.h"
#include "layout.h"

static void test_find(void)
{
	const struct xp_layout *r;

	r = layout__find("13.1.5", XP_FLAVOR_JIT, "x86_64");
	CHECK_STR("erts 13.1.5 is OTP 25", "25", r ? r->otp_release : NULL);
	CHECK_INT("OTP 25 heap offset", 128, r ? r->off[XP_OFF_P_HEAP] : -2);
	r = layout__find("15.2.7", XP_FLAVOR_JIT, "x86_64");
	CHECK_STR("erts 15.2.7 is OTP 27", "27", r ? r->otp_release : NULL);
	CHECK_INT("OTP 27 fcalls is 32-bit", 4, r ? r->fcalls_bytes : -2);
	r = layout__find("17.1.1", XP_FLAVOR_JIT, "x86_64");
	CHECK_STR("erts 17.1.1 is OTP 29", "29", r ? r->otp_release : NULL);
	CHECK_INT("OTP 29 atoms are bitstrings", XP_ATOM_NAME_BITSTRING,
		  r ? (int)r->atom_name_mode : -2);
	CHECK("first release of a minor matches",
	      layout__find("17.1", XP_FLAVOR_JIT, "x86_64") != NULL);
	CHECK("13.1x is not 13.1", layout__find("13.15", XP_FLAVOR_JIT, "x86_64") == NULL);
	CHECK("unknown erts has no row", layout__find("99.0.1", XP_FLAVOR_JIT, "x86_64") == NULL);
	CHECK("erts 13.10 is not 13.1", layout__find("13.10.0", XP_FLAVOR_JIT, "x86_64") == NULL);
	CHECK("emu flavour has no row", layout__find("13.1.5", XP_FLAVOR_EMU, "x86_64") == NULL);
	CHECK("other arch has no row", layout__find("13.1.5", XP_FLAVOR_JIT, "aarch64") == NULL);
	CHECK("NULL version", layout__find(NULL, XP_FLAVOR_JIT, "x86_64") == NULL);
}

static void test_rows_complete(void)
{
	unsigned n, i;
	const struct xp_layout *rows = layout__rows(&n);
	int id;

	CHECK_INT("three rows", 3, n);
	for (i = 0; i < n; i++) {
		for (id = 0; id < XP_OFF_COUNT; id++) {
			char name[80];

			/* Every field is set on purpose: 0 only where the field really sits at 0.
			 */
			snprintf(name, sizeof(name), "OTP %s %s set", rows[i].otp_release,
				 layout__off_name((enum xp_off_id)id));
			CHECK(name, rows[i].off[id] != 0 || id == XP_OFF_P_ID ||
					id == XP_OFF_ESD_REGISTERS || id == XP_OFF_RQ_IX);
		}
	}
}

static void test_threads(void)
{
	const struct xp_layout *r25 = layout__find("13.1.5", XP_FLAVOR_JIT, "x86_64");
	const struct xp_layout *r27 = layout__find("15.2.7", XP_FLAVOR_JIT, "x86_64");
	uint32_t type = 99, no = 0;

	CHECK_INT("25 scheduler", 0, layout__parse_thread_name(r25, "2_scheduler", &type, &no));
	CHECK_INT("25 scheduler type", XP_SCHED_NORMAL, type);
	CHECK_INT("25 scheduler number", 2, no);
	CHECK_INT("25 dirty cpu (cut at 15)", 0,
		  layout__parse_thread_name(r25, "1_dirty_cpu_sch", &type, &no));
	CHECK_INT("25 dirty cpu type", XP_SCHED_DIRTY_CPU, type);
	CHECK_INT("25 dirty io 10", 0,
		  layout__parse_thread_name(r25, "10_dirty_io_sch", &type, &no));
	CHECK_INT("25 dirty io 10 number", 10, no);
	CHECK_INT("25 dirty io 3", 0,
		  layout__parse_thread_name(r25, "3_dirty_io_sche", &type, &no));
	CHECK_INT("25 dirty io type", XP_SCHED_DIRTY_IO, type);
	CHECK_INT("27 scheduler", 0, layout__parse_thread_name(r27, "erts_sched_12", &type, &no));
	CHECK_INT("27 scheduler number", 12, no);
	CHECK_INT("27 dirty io", 0, layout__parse_thread_name(r27, "erts_dios_7", &type, &no));
	CHECK_INT("27 dirty io type", XP_SCHED_DIRTY_IO, type);
	CHECK_INT("27 name is not 25's", -1,
		  layout__parse_thread_name(r25, "erts_sched_1", &type, &no));
	CHECK_INT("any row", 0, layout__parse_thread_name(NULL, "erts_dcpus_2", &type, &no));
	CHECK_INT("aux is no scheduler", -1, layout__parse_thread_name(NULL, "1_aux", &type, &no));
	CHECK_INT("poller is no scheduler", -1,
		  layout__parse_thread_name(NULL, "erts_poll_0", &type, &no));
	CHECK_INT("number 0 refused", -1,
		  layout__parse_thread_name(NULL, "0_scheduler", &type, &no));
	CHECK_INT("trailing junk refused", -1,
		  layout__parse_thread_name(NULL, "1_schedulerX", &type, &no));
	CHECK_INT("short cut refused", -1,
		  layout__parse_thread_name(NULL, "1_dirty_io", &type, &no));
}

int main(void)
{
	test_find();
	test_rows_complete();
	test_threads();
	return check_done();
}
