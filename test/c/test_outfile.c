/* The output file of record and pstack (external/src/report/outfile.c): what is read back is
 * exactly what was written, through stdio's whole aligned buffers (written around the page cache,
 * O_DIRECT), small writes, a write larger than the buffer from an unaligned address (stdio passes
 * it straight on: through the cache) and an unaligned last part; the file is renamed into place and
 * no temporary file is left; the path's old file is replaced only once the new one is whole. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "outfile.h"

#define BIG   (6u << 20)
#define LINES (3u << 20) /* the first bytes, written as lines */

static char dir[] = "/tmp/xp-test-outfile-XXXXXX";

/* A pattern no shift of itself repeats: a misplaced block shows. */
static void fill(uint8_t *p, size_t n)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

static uint8_t *slurp(const char *path, size_t *n)
{
	struct stat st;
	uint8_t *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) || !(p = malloc((size_t)st.st_size + 1))) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	*n = (size_t)read(fd, p, (size_t)st.st_size);
	close(fd);
	return p;
}

/* Entries in dir besides "." and "..". */
static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

/* Can this directory's file system write around the page cache at all? */
static bool direct_possible(void)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "%s/probe", dir);
	fd = open(path, O_CREAT | O_WRONLY | O_DIRECT, 0600);
	if (fd >= 0)
		close(fd);
	unlink(path);
	return fd >= 0;
}

static void test_content(void)
{
	uint8_t *data = malloc(BIG), *back;
	struct outfile of;
	char path[64];
	size_t at = 0, n = 0, len, lines;
	int rc;

	fill(data, BIG);
	snprintf(path, sizeof(path), "%s/out.folded", dir);
	rc = outfile__open(&of, path);
	CHECK_INT("open", 0, rc);
	/* A report's lines (1 byte to 60 KB): stdio writes whole buffers, each direct. */
	for (lines = 0; at < LINES; lines++, at += len) {
		len = 1 + (lines * 7919) % 60000;
		len = len < LINES - at ? len : LINES - at;
		fwrite(data + at, 1, len, of.f);
	}
	/* 2.5 MB from an odd address (stdio passes most of it on as it is), then an odd tail. */
	len = 5 * 512 * 1024 + 3;
	fwrite(data + at, 1, len, of.f);
	at += len;
	fwrite(data + at, 1, BIG - at, of.f);
	CHECK_INT("the temporary file is beside the path until the end", 1, entries());
	rc = outfile__close(&of, 0);
	CHECK_INT("close", 0, rc);
	back = slurp(path, &n);
	CHECK_U64("bytes read back", BIG, n);
	CHECK("read back byte for byte", back && n == BIG && memcmp(back, data, BIG) == 0);
	CHECK_INT("no temporary file left", 1, entries());
	if (direct_possible())
		CHECK("the lines' whole buffers written around the page cache",
		      of.direct_bytes >= LINES - LINES % (1u << 20) && of.direct_bytes % 4096 == 0);
	else
		printf("skip: %s refuses O_DIRECT, the direct path is not tested here\n", dir);
	free(back);

	/* A writer's error: the old file stays as it was, the new one is removed. */
	rc = outfile__open(&of, path);
	fwrite(data, 1, 3u << 20, of.f);
	rc = outfile__close(&of, -EIO);
	CHECK_INT("close after the writer's error", -EIO, rc);
	back = slurp(path, &n);
	CHECK("the old file is left whole", back && n == BIG && memcmp(back, data, BIG) == 0);
	CHECK_INT("and nothing beside it", 1, entries());
	free(back);
	unlink(path);
	free(data);
}

int main(void)
{
	if (!mkdtemp(dir))
		return check_skip("no temporary directory");
	test_content();
	rmdir(dir);
	return check_done();
}
