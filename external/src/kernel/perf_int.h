/* What perf.c (the sessions and their rings) and perf_record.c (the record parser) share, and
 * nothing else. */
#ifndef XP_PERF_INT_H
#define XP_PERF_INT_H

#include <stdint.h>

#define PERF_DEFAULT_PAGES  16
#define PERF_MAX_PAGES	    (1u << 16)
#define PERF_MAX_STACK	    65528u /* the kernel wants sample_stack_user < USHRT_MAX, 8-aligned */
#define PERF_MAX_RECORD	    65536u /* perf_event_header.size is a u16 */
#define PERF_SAMPLE_FIXED   512u   /* a sample without its stack copy: ids, 17 registers, sizes */
#define PERF_EPOLL_BATCH    64
#define PERF_SAMPLE_TIME_AT 16 /* in a sample body: ip, then pid and tid, then time */

#define PERF_SAMPLE_LAYOUT                                                                         \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |                   \
	 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)

/* The sample_regs_user mask of the registers in enum perf_reg. */
uint64_t perf__regs_mask(void);

#endif /* XP_PERF_INT_H */
