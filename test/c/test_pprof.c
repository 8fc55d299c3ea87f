/* The pprof writer (external/src/report/pprof.c) on a made aggregate, read back with protobuf-c's
 * own decoder: sample types and period, locations leaf first with the process at the root, the
 * --lines split into function, file and line, labels from the stack's label set, native
 * frames in their module's mapping, and untrusted bytes made valid UTF-8. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "profile.pb-c.h"
#include "report.h"

typedef Perftools__Profiles__Profile pb_profile;

static uint8_t *gunzip(const uint8_t *in, size_t n, size_t *out_len)
{
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream z = {0};

	if (!out || inflateInit2(&z, 15 + 16) != Z_OK)
		return NULL;
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (inflate(&z, Z_FINISH) != Z_STREAM_END) {
		free(out);
		out = NULL;
	}
	*out_len = z.total_out;
	inflateEnd(&z);
	return out;
}

static const char *str(const pb_profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "(bad index)";
}

static const Perftools__Profiles__Function *fn_of(const pb_profile *p, uint64_t loc, int64_t *line,
						  uint64_t *mapping)
{
	for (size_t i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];

		if (l->id != loc || l->n_line != 1)
			continue;
		*line = l->line[0]->line;
		*mapping = l->mapping_id;
		for (size_t j = 0; j < p->n_function; j++) {
			if (p->function[j]->id == l->line[0]->function_id)
				return p->function[j];
		}
	}
	return NULL;
}

/* The label KEY of sample s, or NULL. */
static const char *label(const pb_profile *p, const Perftools__Profiles__Sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_label; i++) {
		if (!strcmp(str(p, s->label[i]->key), key))
			return str(p, s->label[i]->str);
	}
	return NULL;
}

/* The sample whose root (last location) is the function named root. */
static const Perftools__Profiles__Sample *sample_of(const pb_profile *p, const char *root)
{
	int64_t line;
	uint64_t m;

	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		const Perftools__Profiles__Function *f =
		    fn_of(p, s->location_id[s->n_location_id - 1], &line, &m);

		if (f && !strcmp(str(p, f->name), root))
			return s;
	}
	return NULL;
}

static uint32_t tag(struct agg *a, const char *text)
{
	uint32_t id;

	return agg__labelset(a, text, &id) ? 0 : id + 1;
}

static struct agg *made_aggregate(void)
{
	uint32_t reg, init, idle, f[3];
	struct agg *a;

	agg__new(&a);
	agg__group(a, "srv", &reg);
	agg__group(a, "m:init/1", &init);
	agg__group(a, "[normal scheduler: no process]", &idle);
	agg__frame(a, "m:loop/0 (m.erl:7)", FRAME_ERLANG, &f[0]);
	agg__frame(a, "m:f/1 (m.erl:12)", FRAME_ERLANG, &f[1]);
	agg__frame(a, "memcpy", FRAME_NATIVE, &f[2]);
	agg__frame_set_module(a, f[2], "libc.so.6");
	agg__add_tagged(a, reg, tag(a, "pid=<0.5.0>\x1fregistered_name=srv\x1fscheduler=normal 2"),
			f, 3, 5);
	agg__add_tagged(a, init,
			tag(a, "pid=<0.6.0>\x1finitial_call=m:init/1\x1fscheduler=dirty_cpu 1"), f,
			2, 2);
	agg__frame(a, "bad\xff", FRAME_NATIVE, &f[0]);
	agg__add_tagged(a, idle, 0, f, 1, 1);
	return a;
}

static void check_registered(const pb_profile *p)
{
	const Perftools__Profiles__Sample *s = sample_of(p, "srv");
	const Perftools__Profiles__Function *fn;
	int64_t line;
	uint64_t m;

	if (!CHECK("a sample rooted at srv", s != NULL))
		return;
	CHECK_INT("locations: 3 frames + the process", 4, s->n_location_id);
	CHECK_INT("samples value", 5, s->value[0]);
	CHECK_INT("cpu ns value", 5 * 1003009, s->value[1]);
	fn = fn_of(p, s->location_id[0], &line, &m);
	CHECK_STR("leaf first: memcpy", "memcpy", fn ? str(p, fn->name) : NULL);
	CHECK("memcpy in a mapping", m != 0 && m <= p->n_mapping);
	if (m && m <= p->n_mapping)
		CHECK_STR("its file", "libc.so.6", str(p, p->mapping[m - 1]->filename));
	fn = fn_of(p, s->location_id[1], &line, &m);
	CHECK_STR("--lines: function", "m:f/1", fn ? str(p, fn->name) : NULL);
	CHECK_STR("--lines: file", "m.erl", fn ? str(p, fn->filename) : NULL);
	CHECK_INT("--lines: line", 12, line);
	CHECK_INT("Erlang frames have no mapping", 0, m);
	CHECK_STR("label pid", "<0.5.0>", label(p, s, "pid"));
	CHECK_STR("label registered_name", "srv", label(p, s, "registered_name"));
	CHECK("no initial_call label", label(p, s, "initial_call") == NULL);
	CHECK_STR("label scheduler", "normal 2", label(p, s, "scheduler"));
}

static void check_others(const pb_profile *p)
{
	const Perftools__Profiles__Sample *s = sample_of(p, "m:init/1");
	const Perftools__Profiles__Function *fn;
	int64_t line;
	uint64_t m;

	if (CHECK("a sample rooted at m:init/1", s != NULL)) {
		CHECK_STR("label pid", "<0.6.0>", label(p, s, "pid"));
		CHECK_STR("label initial_call", "m:init/1", label(p, s, "initial_call"));
		CHECK_STR("label scheduler dirty_cpu", "dirty_cpu 1", label(p, s, "scheduler"));
	}
	s = sample_of(p, "[normal scheduler: no process]");
	if (CHECK("a sample rooted at the idle label", s != NULL)) {
		CHECK("no pid label", label(p, s, "pid") == NULL);
		CHECK("no label for tag 0", s->n_label == 0);
		fn = fn_of(p, s->location_id[0], &line, &m);
		CHECK_STR("invalid UTF-8 replaced", "bad\xef\xbf\xbd",
			  fn ? str(p, fn->name) : NULL);
	}
}

int main(void)
{
	struct pprof_meta m = {.period_ns = 1003009,
			       .time_ns = 1,
			       .duration_ns = 2,
			       .lines = true,
			       .comment = "head",
			       .notes = "perf: 3 records lost A\nperf: 4 records lost B"};
	struct agg *a = made_aggregate();
	uint8_t *gz = NULL, *raw;
	size_t n = 0, rn = 0;
	pb_profile *p;

	CHECK_INT("encode", 0, report__pprof_encode(a, &m, &gz, &n));
	raw = gz ? gunzip(gz, n, &rn) : NULL;
	p = raw ? perftools__profiles__profile__unpack(NULL, rn, raw) : NULL;
	if (CHECK("gzipped profile.proto decodes", p != NULL)) {
		CHECK_STR("string 0 is empty", "", str(p, 0));
		CHECK_INT("sample types", 2, p->n_sample_type);
		CHECK_STR("type 0", "samples", str(p, p->sample_type[0]->type));
		CHECK_STR("unit 0", "count", str(p, p->sample_type[0]->unit));
		CHECK_STR("type 1", "cpu", str(p, p->sample_type[1]->type));
		CHECK_STR("unit 1", "nanoseconds", str(p, p->sample_type[1]->unit));
		CHECK_INT("period", 1003009, p->period);
		CHECK_INT("samples", 3, p->n_sample);
		/* The losses' lines (perf_loss__text), a comment each after the head line. */
		if (CHECK_INT("comments", 3, p->n_comment)) {
			CHECK_STR("comment 0", "head", str(p, p->comment[0]));
			CHECK_STR("comment 1", "perf: 3 records lost A", str(p, p->comment[1]));
			CHECK_STR("comment 2", "perf: 4 records lost B", str(p, p->comment[2]));
		}
		check_registered(p);
		check_others(p);
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	free(raw);
	free(gz);
	agg__free(a);
	return check_done();
}
