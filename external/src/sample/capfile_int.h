/* The capture file's record tags and magic, shared by its writer (capfile_write.c) and parser
 * (capfile.c). Not for use outside them; the format is described in capfile.h. */
#ifndef XP_CAPFILE_INT_H
#define XP_CAPFILE_INT_H

#define CAPFILE_MAGIC "XPCAPT\r\n"

enum caprec_tag {
	CAPREC_TARGET = 1,
	CAPREC_SCHED,
	CAPREC_POOL,
	CAPREC_NAME,
	CAPREC_MODULE,
	CAPREC_SAMPLE,
	CAPREC_KCAP,
	CAPREC_UNWIND,
	CAPREC_READ,
	CAPREC_EXPECT,
};

#endif /* XP_CAPFILE_INT_H */
