/* A self-contained interactive flame graph in SVG, in the spirit of flamegraph.pl: the merged
 * call tree "all" -> group -> frames, root at the bottom, widths proportional to samples, colours
 * by frame kind with a legend, <title> per frame, inline script for details, click-to-zoom and
 * search. Frames narrower than SVG_MIN_PX are left out and counted. Output is deterministic.
 * Does not own: the aggregate, or the collapsed text flamegraph.pl reads (collapsed.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "report.h"

#define SVG_WIDTH	1200
#define SVG_XPAD	10
#define SVG_FONT	12
#define SVG_FONT_WIDTH	0.59 /* average glyph width / font size, as flamegraph.pl */
#define SVG_FRAME_H	16
#define SVG_YPAD_TOP	64 /* title, legend */
#define SVG_YPAD_BOTTOM 36 /* details line */
#define SVG_MIN_PX	0.1

struct node {
	uint64_t start, count; /* in samples */
	uint32_t key;	       /* group id at depth 1, frame id deeper, unused at the root */
	uint32_t depth;
};

struct tree {
	struct node *nodes;
	size_t n;
	uint32_t maxdepth; /* of drawn nodes */
	size_t omitted;	   /* nodes narrower than SVG_MIN_PX */
	double scale;	   /* pixels per sample */
};

/* ---- the merged call tree ------------------------------------------------------------------ */

/* The aggregate iterates by group, then frames by (name, kind): stacks sharing a prefix of
 * frame ids are adjacent, so each stack only opens nodes past its common prefix with the previous
 * one (flamegraph.pl's flow()), which the aggregate's sort found (agg__same_as_last): the root
 * only in another group, else the root, the group and the shared frames. Nodes come out in
 * pre-order. */
static size_t common_prefix(const struct agg *a, size_t i)
{
	long same = agg__same_as_last(a, i);

	return same < 0 ? 1 : 2 + (size_t)same;
}

static int tree_alloc(const struct agg *a, struct tree *t, size_t **path)
{
	size_t n = agg__nstacks(a), i, cap = 1, depth = 0;
	struct agg_stack s;

	for (i = 0; i < n; i++) {
		agg__stack(a, i, &s);
		cap += 1 + (size_t)s.nframes;
		if (s.nframes > depth)
			depth = s.nframes;
	}
	t->nodes = calloc(cap, sizeof(*t->nodes));
	*path = calloc(depth + 2, sizeof(**path));
	return t->nodes && *path ? 0 : -ENOMEM;
}

static int tree_build(const struct agg *a, struct tree *t)
{
	size_t n = agg__nstacks(a), i, k, keep, *path = NULL;
	struct agg_stack s;
	uint64_t offset = 0;
	int err;

	memset(t, 0, sizeof(*t));
	if ((err = tree_alloc(a, t, &path)))
		goto cleanup;
	t->n = 1; /* the root, "all" */
	for (i = 0; i < n; i++) {
		agg__stack(a, i, &s);
		keep = common_prefix(a, i);
		for (k = keep; k < 2 + (size_t)s.nframes; k++) {
			struct node *nd = &t->nodes[t->n];

			nd->start = offset;
			nd->depth = (uint32_t)k;
			nd->key = k == 1 ? s.group : s.frames[k - 2];
			path[k] = t->n++;
		}
		for (k = 0; k < 2 + (size_t)s.nframes; k++)
			t->nodes[path[k]].count += s.count;
		offset += s.count;
	}
cleanup:
	free(path);
	return err;
}

static void tree_measure(struct tree *t)
{
	size_t i;

	if (!t->nodes[0].count)
		return;
	t->scale = (SVG_WIDTH - 2.0 * SVG_XPAD) / (double)t->nodes[0].count;
	for (i = 0; i < t->n; i++) {
		if (t->nodes[i].count * t->scale < SVG_MIN_PX)
			t->omitted++;
		else if (t->nodes[i].depth > t->maxdepth)
			t->maxdepth = t->nodes[i].depth;
	}
}

/* ---- text ---------------------------------------------------------------------------------- */

/* Writes at most max_cp code points of s as XML character data (max_cp SIZE_MAX: all). Bytes
 * XML 1.0 cannot carry (controls, invalid UTF-8, U+FFFE/U+FFFF) become U+FFFD. */
static void put_xml(FILE *f, const char *s, size_t max_cp)
{
	size_t n;

	for (; *s && max_cp; s += n ? n : 1, max_cp--) {
		unsigned char c = (unsigned char)*s;

		n = report__utf8_len(s);
		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c == '\'')
			fputs("&#39;", f);
		else if (c < 0x20 || n == 0 || report__utf8_cp(s, n) >= 0xfffe)
			fputs("&#xfffd;", f);
		else
			fwrite(s, 1, n, f);
	}
}

/* Code points as put_xml counts them: an invalid byte is one. */
static size_t count_cp(const char *s)
{
	size_t n, cps = 0;

	for (; *s; s += n ? n : 1, cps++)
		n = report__utf8_len(s);
	return cps;
}

/* The label that fits in w pixels: whole, or cut with "..", or nothing below 3 characters. */
static void put_label(FILE *f, const char *name, double w)
{
	double room = (w - 6) / (SVG_FONT * SVG_FONT_WIDTH);
	size_t fit;

	if (room < 3)
		return;
	fit = (size_t)room; /* floor: room is positive */
	if (count_cp(name) <= fit) {
		put_xml(f, name, SIZE_MAX);
		return;
	}
	put_xml(f, name, fit - 2);
	fputs("..", f);
}

/* ---- colours ------------------------------------------------------------------------------- */

static const char *const kind_class[] = {"erl", "nat", "jit", "lbl"};
static const char *const kind_legend[] = {"Erlang", "native", "JIT global fragment",
					  "label / process"};

/* Three values in [0, 1) from the name, so a frame keeps its colour across runs. */
static void name_hash(const char *s, double v[3])
{
	uint64_t h = hash__str(s);
	int i;

	for (i = 0; i < 3; i++)
		v[i] = (double)((h >> (i * 16)) & 0xffff) / 65536.0;
}

static void put_color(FILE *f, enum frame_kind kind, const double v[3])
{
	int r, g, b;

	switch (kind) {
	case FRAME_ERLANG: /* flamegraph.pl "hot" */
		r = 205 + (int)(50 * v[2]), g = (int)(230 * v[0]), b = (int)(55 * v[1]);
		break;
	case FRAME_NATIVE: /* "blue" */
		r = 80 + (int)(60 * v[0]), g = r, b = 190 + (int)(55 * v[0]);
		break;
	case FRAME_JIT_GLOBAL: /* "green" */
		r = 50 + (int)(60 * v[0]), g = 200 + (int)(55 * v[1]), b = r;
		break;
	default: /* "purple" */
		r = 190 + (int)(65 * v[0]), g = 80 + (int)(60 * v[0]), b = r;
		break;
	}
	fprintf(f, "rgb(%d,%d,%d)", r, g, b);
}

/* ---- document ------------------------------------------------------------------------------ */

/* Hundredths of a pixel, rounded once, so a child never sticks out of its parent (no libm:
 * the value is positive, so adding 0.5 and truncating rounds). */
static long long px100(const struct tree *t, uint64_t samples)
{
	return (long long)((SVG_XPAD + (double)samples * t->scale) * 100 + 0.5);
}

static void put_px(FILE *f, long long v)
{
	fprintf(f, "%lld.%02lld", v / 100, v % 100);
}

static void node_name(const struct agg *a, const struct node *nd, const char **name,
		      enum frame_kind *kind)
{
	*kind = FRAME_LABEL;
	if (nd->depth == 0)
		*name = "all";
	else if (nd->depth == 1)
		*name = agg__group_name(a, nd->key);
	else {
		*name = agg__frame_name(a, nd->key);
		*kind = agg__frame_kind(a, nd->key);
	}
}

static void put_node(const struct agg *a, const struct tree *t, FILE *f, const struct node *nd,
		     int height)
{
	long long x1 = px100(t, nd->start), x2 = px100(t, nd->start + nd->count);
	int y = height - SVG_YPAD_BOTTOM - (int)(nd->depth + 1) * SVG_FRAME_H;
	enum frame_kind kind;
	const char *name;
	double v[3];

	node_name(a, nd, &name, &kind);
	name_hash(name, v);
	fprintf(f, "<g class=\"%s\"><title>", kind_class[kind]);
	put_xml(f, name, SIZE_MAX);
	fprintf(f, " (%" PRIu64 " samples, %.2f%%)</title><rect x=\"", nd->count,
		100.0 * (double)nd->count / (double)t->nodes[0].count);
	put_px(f, x1);
	fputs("\" width=\"", f);
	put_px(f, x2 - x1);
	fprintf(f, "\" y=\"%d\" height=\"%d\" fill=\"", y, SVG_FRAME_H - 1);
	put_color(f, kind, v);
	fputs("\" rx=\"2\" ry=\"2\"/><text x=\"", f);
	put_px(f, x1 + 300);
	fprintf(f, "\" y=\"%.1f\">", y + 10.5);
	put_label(f, name, (double)(x2 - x1) / 100);
	fputs("</text></g>\n", f);
}

static void put_legend(FILE *f)
{
	static const double mid[3] = {0.5, 0.5, 0.5};
	int k, x = SVG_XPAD;

	fputs("<g id=\"legend\">\n", f);
	for (k = FRAME_ERLANG; k <= FRAME_LABEL; k++) {
		fprintf(f, "<rect x=\"%d\" y=\"36\" width=\"12\" height=\"12\" fill=\"", x);
		put_color(f, (enum frame_kind)k, mid);
		fprintf(f, "\"/><text x=\"%d\" y=\"46\">%s</text>\n", x + 16, kind_legend[k]);
		x += 36 + (int)(strlen(kind_legend[k]) * SVG_FONT * SVG_FONT_WIDTH);
	}
	fputs("</g>\n", f);
}

/* The inline script: details on hover, click to zoom (Reset Zoom), Search (prompt, Ctrl-F) with the
 * matched share. Geometry is read back from each frame's rect and title, so the C side and the
 * script share no other data. Plain ECMAScript 2015; must never contain the CDATA end marker. */
static const char svg_script[] =
    "\"use strict\";\n"
    "var xpad = 10, fontsize = 12, fontwidth = 0.59, eps = 1e-6;\n"
    "var frames, details, searchbtn, unzoombtn, matchedtxt, fullw, total = 0, searching = null;\n"
    "function init(evt) {\n"
    "\tframes = document.getElementById(\"frames\");\n"
    "\tdetails = document.getElementById(\"details\");\n"
    "\tsearchbtn = document.getElementById(\"search\");\n"
    "\tunzoombtn = document.getElementById(\"unzoom\");\n"
    "\tmatchedtxt = document.getElementById(\"matched\");\n"
    "\tfullw = +document.documentElement.getAttribute(\"width\") - 2 * xpad;\n"
    "\teach(function (g) {\n"
    "\t\tvar r = g.getElementsByTagName(\"rect\")[0];\n"
    "\t\tvar t = g.getElementsByTagName(\"title\")[0].textContent;\n"
    "\t\tvar m = /^([\\s\\S]*) \\((\\d+) samples, [^()]*\\)$/.exec(t);\n"
    "\t\tg._title = t;\n"
    "\t\tg._name = m ? m[1] : t;\n"
    "\t\tg._samples = m ? +m[2] : 0;\n"
    "\t\tg._x = +r.getAttribute(\"x\");\n"
    "\t\tg._w = +r.getAttribute(\"width\");\n"
    "\t\tg._y = +r.getAttribute(\"y\");\n"
    "\t\tg._fill = r.getAttribute(\"fill\");\n"
    "\t\ttotal = Math.max(total, g._samples);\n"
    "\t});\n"
    "\twindow.addEventListener(\"click\", click, false);\n"
    "\twindow.addEventListener(\"mouseover\", function (e) {\n"
    "\t\tvar g = group(e.target);\n"
    "\t\tif (g) details.textContent = \"Function: \" + g._title;\n"
    "\t}, false);\n"
    "\twindow.addEventListener(\"mouseout\", function (e) {\n"
    "\t\tif (group(e.target)) details.textContent = \" \";\n"
    "\t}, false);\n"
    "\twindow.addEventListener(\"keydown\", function (e) {\n"
    "\t\tif (e.keyCode === 114 || (e.ctrlKey && e.keyCode === 70)) {\n"
    "\t\t\te.preventDefault();\n"
    "\t\t\tsearch_prompt();\n"
    "\t\t}\n"
    "\t}, false);\n"
    "}\n"
    "function each(fn) {\n"
    "\tvar gs = frames ? frames.getElementsByTagName(\"g\") : [];\n"
    "\tfor (var i = 0; i < gs.length; i++) fn(gs[i]);\n"
    "}\n"
    "function group(n) {\n"
    "\twhile (n && n.parentNode !== frames) n = n.parentNode;\n"
    "\treturn n && n.tagName === \"g\" ? n : null;\n"
    "}\n"
    "function click(e) {\n"
    "\tvar g = group(e.target);\n"
    "\tif (g) zoom(g);\n"
    "\telse if (e.target.id === \"unzoom\") unzoom();\n"
    "\telse if (e.target.id === \"search\") search_prompt();\n"
    "}\n"
    "/* Moves a frame to x, w pixels and refits its label as the C side does. */\n"
    "function place(g, x, w) {\n"
    "\tvar r = g.getElementsByTagName(\"rect\")[0], t = g.getElementsByTagName(\"text\")[0];\n"
    "\tvar fit = Math.floor((w - 6) / (fontsize * fontwidth)), cps = Array.from(g._name);\n"
    "\tr.setAttribute(\"x\", x.toFixed(2));\n"
    "\tr.setAttribute(\"width\", w.toFixed(2));\n"
    "\tt.setAttribute(\"x\", (x + 3).toFixed(2));\n"
    "\tif (fit < 3) t.textContent = \"\";\n"
    "\telse if (cps.length <= fit) t.textContent = g._name;\n"
    "\telse t.textContent = cps.slice(0, fit - 2).join(\"\") + \"..\";\n"
    "}\n"
    "function zoom(node) {\n"
    "\tvar x = node._x, w = node._w, ratio = fullw / w;\n"
    "\tunzoombtn.classList.remove(\"hide\");\n"
    "\teach(function (g) {\n"
    "\t\tg.classList.remove(\"parent\");\n"
    "\t\tg.classList.remove(\"hide\");\n"
    "\t\tif (g._y > node._y) {\n"
    "\t\t\t/* nearer the root: an ancestor spans the zoomed frame */\n"
    "\t\t\tif (g._x <= x + eps && g._x + g._w >= x + w - eps) {\n"
    "\t\t\t\tg.classList.add(\"parent\");\n"
    "\t\t\t\tplace(g, xpad, fullw);\n"
    "\t\t\t} else {\n"
    "\t\t\t\tg.classList.add(\"hide\");\n"
    "\t\t\t}\n"
    "\t\t} else if (g._x < x - eps || g._x + g._w > x + w + eps) {\n"
    "\t\t\tg.classList.add(\"hide\");\n"
    "\t\t} else {\n"
    "\t\t\tplace(g, xpad + (g._x - x) * ratio, g._w * ratio);\n"
    "\t\t}\n"
    "\t});\n"
    "}\n"
    "function unzoom() {\n"
    "\tunzoombtn.classList.add(\"hide\");\n"
    "\teach(function (g) {\n"
    "\t\tg.classList.remove(\"parent\");\n"
    "\t\tg.classList.remove(\"hide\");\n"
    "\t\tplace(g, g._x, g._w);\n"
    "\t});\n"
    "}\n"
    "function search_prompt() {\n"
    "\tif (searching !== null) {\n"
    "\t\treset_search();\n"
    "\t\treturn;\n"
    "\t}\n"
    "\tvar term = prompt(\"Search frames (a regular expression, e.g. ^ets:)\", \"\");\n"
    "\tif (term) search(term);\n"
    "}\n"
    "function reset_search() {\n"
    "\teach(function (g) {\n"
    "\t\tg.getElementsByTagName(\"rect\")[0].setAttribute(\"fill\", g._fill);\n"
    "\t});\n"
    "\tsearching = null;\n"
    "\tsearchbtn.textContent = \"Search\";\n"
    "\tmatchedtxt.textContent = \" \";\n"
    "}\n"
    "/* Highlights matching frames; the matched share counts nested matches once. */\n"
    "function search(term) {\n"
    "\tvar re, hits = [], end = -Infinity, sum = 0, pct;\n"
    "\ttry {\n"
    "\t\tre = new RegExp(term);\n"
    "\t} catch (err) {\n"
    "\t\treturn -1;\n"
    "\t}\n"
    "\treset_search();\n"
    "\teach(function (g) {\n"
    "\t\tif (!re.test(g._name)) return;\n"
    "\t\tg.getElementsByTagName(\"rect\")[0].setAttribute(\"fill\", \"rgb(230,0,230)\");\n"
    "\t\thits.push(g);\n"
    "\t});\n"
    "\thits.sort(function (a, b) { return a._x - b._x || b._w - a._w; });\n"
    "\thits.forEach(function (g) {\n"
    "\t\tif (g._x < end - eps) return;\n"
    "\t\tsum += g._samples;\n"
    "\t\tend = g._x + g._w;\n"
    "\t});\n"
    "\tpct = total ? 100 * sum / total : 0;\n"
    "\tsearching = term;\n"
    "\tsearchbtn.textContent = \"Reset Search\";\n"
    "\tmatchedtxt.textContent = \"Matched: \" + pct.toFixed(1) + \"%\";\n"
    "\treturn pct;\n"
    "}\n";

static void put_head(FILE *f, const char *title, int height)
{
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", f);
	fprintf(f,
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" onload=\"init(evt)\">\n",
		SVG_WIDTH, height, SVG_WIDTH, height);
	fputs("<style type=\"text/css\"><![CDATA[\n"
	      "text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
	      "#title { text-anchor: middle; font-size: 17px; }\n"
	      "#search, #unzoom { cursor: pointer; opacity: 0.7; }\n"
	      "#search:hover, #unzoom:hover { opacity: 1; }\n"
	      "#frames g { cursor: pointer; }\n"
	      "#frames g:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
	      "#frames text { pointer-events: none; }\n"
	      ".hide { display: none; }\n"
	      ".parent { opacity: 0.5; }\n"
	      "]]></style>\n",
	      f);
	fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n", svg_script);
	fputs("<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"rgb(245,245,238)\"/>\n",
	      f);
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"24\">", SVG_WIDTH / 2);
	put_xml(f, title ? title : "Flame Graph", SIZE_MAX);
	fputs("</text>\n", f);
	fprintf(f, "<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n",
		SVG_XPAD);
	fprintf(f, "<text id=\"search\" x=\"%d\" y=\"24\">Search</text>\n",
		SVG_WIDTH - SVG_XPAD - 100);
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", SVG_XPAD, height - 14);
	fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n", SVG_WIDTH - SVG_XPAD - 100,
		height - 14);
	put_legend(f);
}

static void put_body(const struct agg *a, const struct tree *t, FILE *f, int height)
{
	size_t i;

	fprintf(f,
		"<text id=\"info\" x=\"%d\" y=\"46\" style=\"text-anchor: end\">%" PRIu64
		" samples, %zu frames narrower than %.1f px omitted</text>\n",
		SVG_WIDTH - SVG_XPAD, agg__total(a), t->omitted, SVG_MIN_PX);
	fputs("<g id=\"frames\">\n", f);
	if (!t->nodes[0].count)
		fprintf(f, "<text x=\"%d\" y=\"%d\">No samples</text>\n", SVG_WIDTH / 2,
			height - SVG_YPAD_BOTTOM - 4);
	for (i = 0; t->nodes[0].count && i < t->n; i++) {
		if (t->nodes[i].count * t->scale >= SVG_MIN_PX)
			put_node(a, t, f, &t->nodes[i], height);
	}
	fputs("</g>\n</svg>\n", f);
}

int report__svg(const struct agg *a, FILE *f, const char *title)
{
	struct tree t;
	int err, height;

	if (!a || !f)
		return -EINVAL;
	if ((err = tree_build(a, &t)))
		goto cleanup;
	tree_measure(&t);
	height = SVG_YPAD_TOP + (int)(t.maxdepth + 1) * SVG_FRAME_H + SVG_YPAD_BOTTOM;
	put_head(f, title, height);
	put_body(a, &t, f, height);
	err = report__finish(f);
cleanup:
	free(t.nodes);
	return err;
}
