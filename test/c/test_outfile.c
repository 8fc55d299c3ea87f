/* The output file of record and pstack (external/src/report/outfile.c): what is read back is
 * exactly what was written, through stdio's whole aligned buffers (written around the page cache,
 * O_DIRECT), small writes, a write larger than the buffer from an unaligned address (stdio passes
 * it straight on: through the cache) and an unaligned last part; the file is renamed into place and
 * no temporary file is left; the path's old file is replaced only once the new one is whole. A JSON
 * writer flushing straight to the file (json__buffer_to, pstack -o) writes the same document as
 * through stdio, in order with what goes through the stream, its whole pages direct, its full
 * buffers written by the file's own thread (outfile__write_behind) while the next fills; so are
 * the stream's own whole buffers, copied, after outfile__stream_behind. A write the file refuses
 * (EFBIG) is close's error either way. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "json.h"
#include "outfile.h"

#define BIG   (12u << 20)
#define LINES (9u << 20) /* the first bytes, written as lines: more buffers than spares */

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

/* behind: the stream's whole buffers written by the file's thread (outfile__stream_behind). */
static void test_content(bool behind)
{
	uint8_t *data = malloc(BIG), *back;
	struct outfile of;
	char path[64];
	size_t at = 0, n = 0, len, lines;
	int rc;

	printf("-- the stream's buffers written %s\n", behind ? "behind" : "at once");
	fill(data, BIG);
	snprintf(path, sizeof(path), "%s/out.folded", dir);
	rc = outfile__open(&of, path);
	CHECK_INT("open", 0, rc);
	if (behind)
		CHECK_INT("the stream written behind", 0, outfile__stream_behind(&of));
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
	/* Every whole buffer of the lines went to the thread, copied; nothing else. */
	if (behind)
		CHECK("the lines' whole buffers written behind",
		      of.behind_bytes >= LINES - LINES % (1u << 20) &&
			  of.behind_bytes % 4096 == 0 && of.behind_bytes < BIG);
	else
		CHECK_U64("nothing written behind", 0, of.behind_bytes);
	free(back);

	/* A writer's error: the old file stays as it was, the new one is removed. */
	rc = outfile__open(&of, path);
	if (behind)
		outfile__stream_behind(&of);
	fwrite(data, 1, 3u << 20, of.f);
	rc = outfile__close(&of, -EIO);
	CHECK_INT("close after the writer's error", -EIO, rc);
	back = slurp(path, &n);
	CHECK("the old file is left whole", back && n == BIG && memcmp(back, data, BIG) == 0);
	CHECK_INT("and nothing beside it", 1, entries());
	free(back);
	unlink(path);
	/* A write the file refuses (past RLIMIT_FSIZE: EFBIG), made by the thread when behind:
	 * close says it, and removes the temporary file. */
	{
		struct rlimit old, lim = {.rlim_cur = 256 * 1024};

		getrlimit(RLIMIT_FSIZE, &old);
		lim.rlim_max = old.rlim_max;
		signal(SIGXFSZ, SIG_IGN);
		CHECK_INT("a file size limit", 0, setrlimit(RLIMIT_FSIZE, &lim));
		rc = outfile__open(&of, path);
		if (behind)
			outfile__stream_behind(&of);
		fwrite(data, 1, 3u << 20, of.f);
		rc = outfile__close(&of, 0);
		setrlimit(RLIMIT_FSIZE, &old);
		CHECK_INT("close after a refused write", -EFBIG, rc);
		CHECK_INT("nothing left of it", 0, entries());
	}
	free(data);
}

/* A document of rows like pstack's (strings needing escapes, numbers), n of them, to j. */
static void json_rows(struct json *j, const uint8_t *data, size_t n)
{
	char s[200];

	json__object(j);
	json__lit_key(j, "rows");
	json__array(j);
	for (size_t i = 0; i < n; i++) {
		size_t len = 1 + (i * 7919) % (sizeof(s) - 1);

		for (size_t k = 0; k < len; k++) /* printable, quotes and backslashes among them */
			s[k] = (char)(32 + data[(i * 131 + k) % BIG] % 95);
		s[len] = '\0';
		json__object(j);
		json__lit_key(j, "n");
		json__uint(j, i);
		json__lit_key(j, "s");
		json__string(j, s);
		json__end_object(j);
	}
	json__end_array(j);
	json__end_object(j);
}

/* The document through json__buffer_to, alone and between writes to the stream, against the same
 * calls through stdio into memory. */
static void test_json_sink(void)
{
	uint8_t *data = malloc(BIG), *back = NULL;
	char path[64], *want = NULL;
	size_t wlen = 0, n = 0;
	struct outfile of;
	struct json j;
	FILE *mem;
	int rc;

	fill(data, BIG);
	snprintf(path, sizeof(path), "%s/out.json", dir);
	for (int framed = 0; framed < 2; framed++) {
		mem = open_memstream(&want, &wlen);
		if (framed)
			fputs("before the document\n", mem);
		json__init(&j, mem);
		json__buffer(&j, 1u << 16);
		json_rows(&j, data, 60000);
		json__unbuffer(&j);
		if (framed)
			fputs("after it\n", mem);
		fclose(mem);

		rc = outfile__open(&of, path);
		CHECK_INT("open for the JSON sink", 0, rc);
		if (framed)
			fputs("before the document\n", of.f);
		json__init(&j, of.f);
		rc = json__buffer_to(&j, &of, 1u << 16);
		CHECK_INT("a sink's buffer", 0, rc);
		json_rows(&j, data, 60000);
		json__unbuffer(&j);
		if (framed)
			fputs("after it\n", of.f);
		rc = outfile__close(&of, 0);
		CHECK_INT("close after the JSON sink", 0, rc);
		back = slurp(path, &n);
		CHECK_U64(framed ? "sink between stream writes: bytes" : "sink: bytes", wlen, n);
		CHECK(framed ? "sink between stream writes: the same document, in order"
			     : "sink: the same document",
		      back && want && n == wlen && memcmp(back, want, n) == 0);
		/* From offset 0, the whole pages of every spill go direct; after an odd prefix the
		 * file's offset is odd, and everything goes through the cache. */
		if (direct_possible() && !framed)
			CHECK("sink: its whole pages written around the page cache",
			      wlen > (2u << 20) && of.direct_bytes >= wlen - (1u << 16) &&
				  of.direct_bytes % 4096 == 0);
		/* Every full buffer is written by the file's thread while the next one fills: all
		 * but the last buffer's worth, in whole pages. */
		CHECK(framed ? "sink between stream writes: its buffers written behind"
			     : "sink: its buffers written behind",
		      of.behind_bytes >= wlen - 2 * (1u << 16) && of.behind_bytes % 4096 == 0);
		free(back);
		free(want);
		want = NULL;
	}
	/* A write the sink's file refuses (past RLIMIT_FSIZE: EFBIG), which stdio never sees:
	 * close says it, and removes the temporary file. */
	{
		struct rlimit old, lim = {.rlim_cur = 256 * 1024};

		unlink(path);
		getrlimit(RLIMIT_FSIZE, &old);
		lim.rlim_max = old.rlim_max;
		signal(SIGXFSZ, SIG_IGN);
		rc = setrlimit(RLIMIT_FSIZE, &lim);
		CHECK_INT("a file size limit", 0, rc);
		rc = outfile__open(&of, path);
		json__init(&j, of.f);
		json__buffer_to(&j, &of, 1u << 16);
		json_rows(&j, data, 20000);
		json__unbuffer(&j);
		rc = outfile__close(&of, 0);
		setrlimit(RLIMIT_FSIZE, &old);
		CHECK_INT("close after the sink's refused write", -EFBIG, rc);
		CHECK_INT("nothing left of it", 0, entries());
	}
	free(data);
}

int main(void)
{
	if (!mkdtemp(dir))
		return check_skip("no temporary directory");
	test_content(false);
	test_content(true);
	test_json_sink();
	rmdir(dir);
	return check_done();
}
