/* `record --every`: one sampler for the whole run, its aggregate swapped at each interval's end
 * (perf keeps running: a sample taken before the swap and read after it counts in the next
 * interval, none is lost). Each interval becomes a pprof profile named by its start time in UTC,
 * DIR/20261126T060512.345Z.pb.gz (names sort by time), written atomically (a temporary name, then
 * rename); only the newest --keep stay. With --push each is also queued for the push thread
 * (push.c). Encoding and writing happen on a writer thread of their own (a 50,000-stack interval
 * took 1 s to encode and gzip on a loaded machine: the sampling thread must not wait for that);
 * the sampling thread only swaps the aggregate and hands the old one over. SIGHUP ends the
 * interval now; SIGTERM / Ctrl-C write the partial interval and stop.
 * Does not own: the encoding (report/pprof.c), HTTP (push.c). */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "continuous.h"
#include "report/outfile.h"
#include "push.h"
#include "run.h"

#define EVERY_NAME_LEN	  sizeof("20261126T060512.345Z.pb.gz")
#define EVERY_PUSH_WAIT_S 10 /* at the end, how long queued pushes may still take */
/* Intervals waiting for the writer. The sampling thread waits only when this many are waiting:
 * writing then lags sampling by that many intervals, and its memory must stay bounded. */
#define EVERY_QUEUE 4

struct interval {
	struct agg *a;
	int64_t start_ns, end_ns; /* wall clock */
};

struct every {
	const struct cli_opts *o;
	struct pprof_meta meta;
	char comment[160];
	const char *dir; /* NULL: push only */
	struct pusher *push;
	double next;		  /* CLOCK_MONOTONIC s: when the interval ends */
	int64_t start_ns;	  /* wall clock at its start */
	unsigned written, failed; /* the writer's, read after it stopped */
	pthread_t writer;
	bool writer_started, closing;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct interval q[EVERY_QUEUE];
	size_t head, n;
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "20261126T060512.345Z.pb.gz" for a wall clock time. */
static void interval_name(int64_t ns, char *buf, size_t len)
{
	time_t sec = (time_t)(ns / 1000000000);
	struct tm tm;
	char ymd[20];

	gmtime_r(&sec, &tm);
	if (!strftime(ymd, sizeof(ymd), "%Y%m%dT%H%M%S", &tm))
		ymd[0] = 0;
	snprintf(buf, len, "%.15s.%03uZ.pb.gz", ymd, (unsigned)(ns / 1000000 % 1000));
}

/* Only names this mode writes: DDDDDDDDTDDDDDD.DDDZ.pb.gz. */
static bool is_interval_name(const char *n)
{
	int i;

	if (strlen(n) != EVERY_NAME_LEN - 1)
		return false;
	for (i = 0; i < 19; i++) {
		if (i == 8 ? n[i] != 'T' : i == 15 ? n[i] != '.' : (n[i] < '0' || n[i] > '9'))
			return false;
	}
	return strcmp(n + 19, "Z.pb.gz") == 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Remove the oldest interval files of DIR beyond keep (only names this mode writes). */
static void prune(const char *dir, unsigned keep)
{
	char **names = NULL, path[4096];
	size_t n = 0, cap = 0, i;
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!is_interval_name(e->d_name))
			continue;
		if (n == cap) {
			char **p = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*p));

			if (!p)
				break;
			names = p;
		}
		if (!(names[n] = strdup(e->d_name)))
			break;
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		if (i + keep < n) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			unlink(path);
		}
		free(names[i]);
	}
	free(names);
}

static int write_file(struct every *ev, const char *name, const uint8_t *buf, size_t len)
{
	char path[4096];
	struct outfile of;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", ev->dir, name);
	/* Complete or nothing, never through another user's link (outfile.c, SECURITY.md). */
	if ((rc = outfile__open(&of, path)))
		return rc;
	rc = fwrite(buf, 1, len, of.f) == len ? 0 : -EIO;
	return outfile__close(&of, rc);
}

/* One interval's profile (the writer thread): to DIR, then to the push queue. */
static void emit(struct every *ev, const struct interval *it)
{
	struct pprof_meta meta = ev->meta;
	const struct agg *a = it->a;
	char name[EVERY_NAME_LEN + 8];
	uint8_t *buf;
	size_t len;
	int rc;

	meta.time_ns = it->start_ns;
	meta.duration_ns = it->end_ns - it->start_ns;
	interval_name(it->start_ns, name, sizeof(name));
	if ((rc = report__pprof_encode(a, &meta, &buf, &len))) {
		fprintf(stderr, "extrospect: interval %s: %s\n", name, strerror(-rc));
		ev->failed++;
		return;
	}
	fprintf(stderr, "extrospect: interval %s: %llu samples, %zu bytes\n", name,
		(unsigned long long)agg__total(a), len);
	if (ev->dir) {
		if ((rc = write_file(ev, name, buf, len))) {
			fprintf(stderr, "extrospect: cannot write %s/%s: %s\n", ev->dir, name,
				strerror(-rc));
			ev->failed++;
		} else {
			ev->written++;
			prune(ev->dir, ev->o->keep);
		}
	}
	if (ev->push)
		pusher__push(ev->push, buf, len, it->start_ns / 1000000000,
			     it->end_ns / 1000000000);
	else
		free(buf);
}

static void *writer_thread(void *arg)
{
	struct every *ev = arg;
	struct interval it;

	pthread_mutex_lock(&ev->mu);
	for (;;) {
		while (!ev->n && !ev->closing)
			pthread_cond_wait(&ev->cv, &ev->mu);
		if (!ev->n)
			break;
		it = ev->q[ev->head];
		ev->head = (ev->head + 1) % EVERY_QUEUE;
		ev->n--;
		pthread_cond_broadcast(&ev->cv);
		pthread_mutex_unlock(&ev->mu);
		emit(ev, &it);
		agg__free(it.a);
		pthread_mutex_lock(&ev->mu);
	}
	pthread_mutex_unlock(&ev->mu);
	return NULL;
}

/* Give the writer an interval's aggregate (it frees it). */
static void hand_off(struct every *ev, struct agg *a, int64_t start_ns, int64_t end_ns)
{
	pthread_mutex_lock(&ev->mu);
	while (ev->n == EVERY_QUEUE)
		pthread_cond_wait(&ev->cv, &ev->mu);
	ev->q[(ev->head + ev->n) % EVERY_QUEUE] = (struct interval){a, start_ns, end_ns};
	ev->n++;
	pthread_cond_broadcast(&ev->cv);
	pthread_mutex_unlock(&ev->mu);
}

/* Let the writer finish what is queued, and wait for it. */
static void writer_stop(struct every *ev)
{
	if (!ev->writer_started)
		return;
	pthread_mutex_lock(&ev->mu);
	ev->closing = true;
	pthread_cond_broadcast(&ev->cv);
	pthread_mutex_unlock(&ev->mu);
	pthread_join(ev->writer, NULL);
	ev->writer_started = false;
}

static int every_turn(struct run_ctx *ctx, struct sampler *s)
{
	struct every *ev = ctx->user;
	double now = mono_s();
	struct agg *next, *done;
	int64_t end_ns;

	if (now < ev->next && !run__take(ctx->stop, RUN_ROTATE))
		return 0;
	if (agg__new(&next)) {
		snprintf(ctx->err, sizeof(ctx->err), "out of memory for the next interval");
		return -ENOMEM;
	}
	sampler__swap_agg(s, next);
	done = ctx->agg;
	ctx->agg = next;
	end_ns = cmd__wall_ns();
	hand_off(ev, done, ev->start_ns, end_ns);
	ev->start_ns = end_ns;
	ev->next = now + ev->o->every_s;
	return 0;
}

/* The application name: --app-name, else the node's -sname / -name (without @host) from the
 * VM's command line, else "beam"; then {k=v,...} from --label. */
static void app_name(const struct cli_opts *o, pid_t pid, char *out, size_t len)
{
	char path[64], cmd[8192] = "", node[256] = "beam";
	size_t n = 0, i, at;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (!o->app_name && (f = fopen(path, "r"))) {
		n = fread(cmd, 1, sizeof(cmd) - 1, f);
		fclose(f);
	}
	for (i = 0; i < n; i += strlen(cmd + i) + 1) {
		if ((strcmp(cmd + i, "-sname") && strcmp(cmd + i, "-name")) ||
		    i + strlen(cmd + i) + 1 >= n)
			continue;
		snprintf(node, sizeof(node), "%s", cmd + i + strlen(cmd + i) + 1);
		node[strcspn(node, "@{}&?# =,")] = '\0';
		if (!node[0])
			snprintf(node, sizeof(node), "beam");
		break;
	}
	at = (size_t)snprintf(out, len, "%s", o->app_name ? o->app_name : node);
	for (i = 0; i < o->nlabels && at < len; i++)
		at += (size_t)snprintf(out + at, len - at, "%s%s", i ? "," : "{", o->labels[i]);
	if (o->nlabels && at < len)
		snprintf(out + at, len - at, "}");
}

/* -o DIR/: made when missing (one level), and it must be a directory. */
static int prepare_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "record --every: -o %s must be a directory", dir);
		return CMD_EUSAGE;
	}
	return 0;
}

static void push_summary(struct pusher *p)
{
	struct push_stats st;

	pusher__finish(p, EVERY_PUSH_WAIT_S, &st);
	fprintf(
	    stderr,
	    "extrospect: pushed %llu profiles (%llu failed attempts retried, %llu dropped)%s%s\n",
	    (unsigned long long)st.pushed, (unsigned long long)st.attempts,
	    (unsigned long long)st.dropped, st.last_error[0] ? "; last error: " : "",
	    st.last_error);
}

static int start(const struct cli_opts *o, struct target *t, struct every *ev, char *dir,
		 size_t dirlen, char *err, size_t errlen)
{
	char name[1024];
	size_t n;
	int rc;

	cmd__pprof_meta(o, t, &ev->meta, ev->comment, sizeof(ev->comment));
	if (o->output) {
		snprintf(dir, dirlen, "%s", o->output);
		for (n = strlen(dir); n > 1 && dir[n - 1] == '/';)
			dir[--n] = '\0';
		if ((rc = prepare_dir(dir, err, errlen)))
			return rc;
		ev->dir = dir;
	}
	if (o->push_url) {
		app_name(o, t->pid, name, sizeof(name));
		if ((rc = pusher__new(o->push_url, name, o->freq_hz, &ev->push, err, errlen)))
			return rc;
		fprintf(stderr, "extrospect: pushing each interval to %s as %s\n", o->push_url,
			name);
	}
	return 0;
}

int cmd__record_every(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop,
		      char *err, size_t errlen)
{
	struct every ev = {.o = o};
	struct run_ctx ctx = {.t = t, .stop = stop, .verbose = o->verbose, .user = &ev};
	char dir[4096];
	int rc;

	pthread_mutex_init(&ev.mu, NULL);
	pthread_cond_init(&ev.cv, NULL);
	if ((rc = start(o, t, &ev, dir, sizeof(dir), err, errlen)))
		goto cleanup;
	if ((rc = -pthread_create(&ev.writer, NULL, writer_thread, &ev))) {
		snprintf(err, errlen, "cannot start the writer thread: %s", strerror(-rc));
		goto cleanup;
	}
	ev.writer_started = true;
	cmd__sampler_opts(o, &ctx.opts);
	ctx.opts.labels = true;
	ctx.turn = every_turn;
	if ((rc = agg__new(&ctx.agg)))
		goto cleanup;
	fprintf(stderr, "extrospect: one profile every %gs%s%s (newest %u kept)\n", o->every_s,
		ev.dir ? " into " : "", ev.dir ? ev.dir : "", o->keep);
	ev.start_ns = cmd__wall_ns();
	ev.next = mono_s() + o->every_s;
	rc = run__sample(&ctx);
	if (rc) {
		snprintf(err, errlen, "%s", ctx.err);
		goto cleanup;
	}
	hand_off(&ev, ctx.agg, ev.start_ns, cmd__wall_ns()); /* the partial interval */
	ctx.agg = NULL;
	writer_stop(&ev);
	run__summary(&ctx, "the last interval", stderr);
	fprintf(stderr, "extrospect: %u profiles written%s\n", ev.written,
		ev.failed ? " (some intervals failed: see above)" : "");
	rc = ctx.target_exited ? TARGET_EGONE : ev.failed ? -EIO : 0;
	if (rc == -EIO)
		snprintf(err, errlen, "%u intervals could not be written", ev.failed);
cleanup:
	writer_stop(&ev); /* what was handed over is still written */
	if (ev.push)
		push_summary(ev.push);
	pusher__free(ev.push);
	agg__free(ctx.agg);
	pthread_mutex_destroy(&ev.mu);
	pthread_cond_destroy(&ev.cv);
	return rc;
}
