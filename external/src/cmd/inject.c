/* extrospect inject: adds the agent to a running distributed node that was started without it.
 * Connects as a hidden C node, checks the node's OTP release, pushes this install's agent into a
 * fresh private directory on the node (or uses --code-path, an install the node already sees),
 * starts the extrospect application and waits for its first calibration, then reports.
 * Does not own: the connection (inject_conn.c), the agent files (inject_bundle.c), decoding
 * (inject_term.c), reading the VM afterwards (`extrospect info`). Returns exit codes directly.
 * Over 500 lines on purpose: one sequence (connect, check, push, start, wait, report) over one
 * private struct inject, read top to bottom; its parts are short functions, and splitting the
 * file would only export that struct. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "exitcode.h"
#include "inject_bundle.h"
#include "inject_conn.h"
#include "inject_term.h"

#define CONNECT_TMO_MS	   5000u
#define CALL_TMO_MS	   15000u
#define START_TMO_MS	   30000u
#define CALIBRATION_TMO_MS 30000u
#define POLL_MS		   20
#define MKDIR_TRIES	   8

const char inject__usage[] =
    "Usage: extrospect inject --node NAME@HOST [--cookie-file F] [--code-path DIR]\n"
    "\n"
    "Add the agent to a running distributed Erlang node that was started without it. extrospect\n"
    "connects as a hidden C node (erl_interface; the node's nodes() does not list it), checks\n"
    "the node runs OTP 25 or newer, copies this install's agent (ebin/*.beam, extrospect.app,\n"
    "priv/extrospect_nif.so) into a fresh private directory on the node, starts the extrospect\n"
    "application there and waits for its first calibration. On a node that already runs the\n"
    "agent it only reports. Afterwards `extrospect info PID` shows the agent.\n"
    "\n"
    "  --node NAME@HOST     the node, as named by erl -sname / -name (HOST must resolve to IPv4)\n"
    "  --cookie-file F      read the cookie from F (default: EXTROSPECT_COOKIE if set, else\n"
    "                       $HOME/.erlang.cookie, as erl does). Never on the command line:\n"
    "                       --cookie C is refused (exit 2), since every user sees it in ps\n"
    "  --code-path DIR      copy nothing: load the agent from DIR, an extrospect application\n"
    "                       directory (with ebin/ and priv/) or its ebin/, as the node sees its\n"
    "                       file system (a node in a chroot or container sees its own root)\n"
    "\n"
    "Environment: EXTROSPECT_COOKIE the node's cookie (only the same user and root can read a\n"
    "process's environment); EXTROSPECT_AGENT_DIR the agent to copy (default: ../lib/extrospect "
    "or\n"
    "../_build/default/lib/extrospect beside this executable); ERL_EPMD_PORT epmd's port.\n"
    "Exit status: 0 started or already running, 2 usage or cookie file, 6 node older than\n"
    "OTP 25, 8 epmd or node unreachable, 9 the node refused the cookie, 1 anything else.\n"
    "\n"
    "Examples:\n"
    "  extrospect inject --node myapp@$(hostname -s)       # erl -sname myapp, ~/.erlang.cookie\n"
    "  extrospect inject --node myapp@db1.example.com --cookie-file /etc/myapp/cookie\n"
    "  extrospect inject --node rabbit@$(hostname -s) \\\n"
    "      --cookie-file /var/lib/rabbitmq/.erlang.cookie  # RabbitMQ; epmd -names lists nodes\n"
    "  EXTROSPECT_COOKIE=\"$(cat /run/secrets/cookie)\" extrospect inject --node myapp@db1\n"
    "  extrospect inject --node myapp@db1 --code-path /opt/myapp/lib/extrospect-0.1.0\n"
    "  extrospect info 4242      # the OS pid inject printed: the agent is there\n";

struct inject {
	const struct cli_opts *o;
	volatile sig_atomic_t *stop;
	struct inject_conn *c;
	struct inject_bundle *bundle;
	ei_x_buff args, reply;
	char err[2048];
	char otp[32], erts[32], os_pid[24];
	char top[1024], ebin[1200]; /* on the node: the private dir, the ebin added to the path */
};

/* ---- calls ---------------------------------------------------------------------------------- */

/* The argument list: a atom, s string, b binary (pointer, length), i integer. */
static int args(struct inject *in, const char *fmt, ...)
{
	ei_x_buff *x = &in->args;
	int n = (int)strlen(fmt), e = 0;
	va_list ap;

	ei_x_free(x);
	if (ei_x_new(x) < 0)
		return -ENOMEM;
	if (n > 0)
		e |= ei_x_encode_list_header(x, n);
	va_start(ap, fmt);
	for (const char *f = fmt; *f; f++) {
		if (*f == 'a') {
			e |= ei_x_encode_atom(x, va_arg(ap, const char *));
		} else if (*f == 's') {
			e |= ei_x_encode_string(x, va_arg(ap, const char *));
		} else if (*f == 'i') {
			e |= ei_x_encode_long(x, va_arg(ap, long));
		} else {
			const void *p = va_arg(ap, const void *);

			e |= ei_x_encode_binary(x, p, (long)va_arg(ap, size_t));
		}
	}
	va_end(ap);
	e |= ei_x_encode_empty_list(x);
	return e ? -ENOMEM : 0;
}

/* mod:fun(args) on the node; on 0 the result is in in->reply at index 0. A {badrpc, R}
 * result (the call raised, or the module is missing) becomes -EREMOTEIO with R in the message. */
static int call(struct inject *in, const char *mod, const char *fun, unsigned tmo_ms)
{
	char what[400];
	int e, r;

	e = inject_conn__call(in->c, mod, fun, &in->args, &in->reply, tmo_ms, in->err,
			      sizeof(in->err));
	if (e)
		return e;
	if (inject_term__tagged(in->reply.buff, 0, "badrpc", &r)) {
		inject_term__print(in->reply.buff, r, what, sizeof(what));
		snprintf(in->err, sizeof(in->err), "%s:%s failed on the node: %s", mod, fun, what);
		return -EREMOTEIO;
	}
	return 0;
}

/* The call returned something other than what the step expects. */
static int unexpected(struct inject *in, const char *what)
{
	char got[400];

	inject_term__print(in->reply.buff, 0, got, sizeof(got));
	snprintf(in->err, sizeof(in->err), "%s: %s", what, got);
	return -EREMOTEIO;
}

static int call_text(struct inject *in, const char *mod, const char *fun, const char *arg,
		     char *out, size_t len)
{
	int idx = 0, e;

	e = arg ? args(in, "a", arg) : args(in, "");
	if (!e)
		e = call(in, mod, fun, CALL_TMO_MS);
	if (!e && inject_term__text(in->reply.buff, &idx, out, len))
		return unexpected(in, "an unexpected answer from the node");
	return e;
}

/* ---- what the node is -------------------------------------------------------------------- */

static int min_release(void)
{
	/* Tests raise the floor to see the refusal on a node they can start. */
	const char *env = getenv("EXTROSPECT_INJECT_MIN_OTP");
	int v = env ? atoi(env) : 0;

	return v > 0 ? v : INJECT_MIN_OTP;
}

static int node_facts(struct inject *in)
{
	int e = call_text(in, "erlang", "system_info", "otp_release", in->otp, sizeof(in->otp));

	if (!e)
		e = inject_term__check_release(in->otp, min_release(), in->err, sizeof(in->err));
	if (!e)
		e = call_text(in, "erlang", "system_info", "version", in->erts, sizeof(in->erts));
	if (!e)
		e = call_text(in, "os", "getpid", NULL, in->os_pid, sizeof(in->os_pid));
	return e;
}

/* 1 when the agent's process is registered, 0 when not. */
static int agent_running(struct inject *in)
{
	int e = args(in, "a", "extrospect_agent");

	if (!e)
		e = call(in, "erlang", "whereis", CALL_TMO_MS);
	if (e)
		return e;
	return inject_term__is_atom(in->reply.buff, 0, "undefined") ? 0 : 1;
}

/* ---- pushing the agent ------------------------------------------------------------------- */

static int node_ok(struct inject *in, const char *mod, const char *fun, const char *what)
{
	int e = call(in, mod, fun, CALL_TMO_MS);

	if (!e && !inject_term__is_atom(in->reply.buff, 0, "ok"))
		return unexpected(in, what);
	return e;
}

/* The node's temporary directory: $TMPDIR as the node sees it when it is a directory there (a
 * node in a chroot may inherit a TMPDIR that only exists outside), else /tmp. */
static int node_tmp(struct inject *in, char *out, size_t len)
{
	int idx = 0, e = args(in, "s", "TMPDIR");

	if (!e)
		e = call(in, "os", "getenv", CALL_TMO_MS);
	if (e)
		return e;
	if (inject_term__text(in->reply.buff, &idx, out, len) || out[0] != '/')
		goto fallback;
	e = args(in, "s", out);
	if (!e)
		e = call(in, "filelib", "is_dir", CALL_TMO_MS);
	if (e || inject_term__is_atom(in->reply.buff, 0, "true"))
		return e;
fallback:
	snprintf(out, len, "/tmp");
	return 0;
}

/* A new directory only the node's user can enter: file:make_dir fails on an existing name
 * (mkdir(2)), so a random name that already exists is never reused. */
static int make_private_dir(struct inject *in)
{
	char tmp[512], what[600];
	unsigned char rnd[6];
	int e = node_tmp(in, tmp, sizeof(tmp)), r;

	snprintf(what, sizeof(what), "cannot make a directory in %s on the node", tmp);
	for (int i = 0; !e && i < MKDIR_TRIES; i++) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return -EIO;
		snprintf(in->top, sizeof(in->top), "%s/extrospect-inject-%02x%02x%02x%02x%02x%02x",
			 tmp, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
		e = args(in, "s", in->top);
		if (!e)
			e = call(in, "file", "make_dir", CALL_TMO_MS);
		if (e)
			break;
		if (inject_term__is_atom(in->reply.buff, 0, "ok")) {
			snprintf(what, sizeof(what), "making %s private on the node", in->top);
			e = args(in, "si", in->top, 0700L);
			return e ? e : node_ok(in, "file", "change_mode", what);
		}
		if (!inject_term__tagged(in->reply.buff, 0, "error", &r) ||
		    !inject_term__is_atom(in->reply.buff, r, "eexist"))
			break; /* not a name clash: report it */
	}
	in->top[0] = '\0';
	return e ? e : unexpected(in, what);
}

static int push_files(struct inject *in)
{
	static const char *const subdirs[] = {"extrospect", "extrospect/ebin", "extrospect/priv"};
	const struct inject_bundle *b = in->bundle;
	char path[1400], what[1500];
	int e = 0;

	for (size_t i = 0; !e && i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", in->top, subdirs[i]);
		snprintf(what, sizeof(what), "cannot make %s on the node", path);
		e = args(in, "s", path);
		if (!e)
			e = node_ok(in, "file", "make_dir", what);
	}
	for (size_t i = 0; !e && i < b->n; i++) {
		snprintf(path, sizeof(path), "%s/extrospect/%s", in->top, b->v[i].rel);
		snprintf(what, sizeof(what), "cannot write %s on the node", path);
		e = args(in, "sb", path, (const void *)b->v[i].data, b->v[i].len);
		if (!e)
			e = node_ok(in, "file", "write_file", what);
	}
	snprintf(in->ebin, sizeof(in->ebin), "%s/extrospect/ebin", in->top);
	return e;
}

static int push(struct inject *in)
{
	int e = inject_bundle__load(&in->bundle, in->err, sizeof(in->err));

	if (!e)
		e = make_private_dir(in);
	return e ? e : push_files(in);
}

/* --code-path DIR: DIR/ebin when the node sees such a directory, else DIR itself. */
static int use_code_path(struct inject *in)
{
	char ebin[1100];
	int e;

	snprintf(ebin, sizeof(ebin), "%s/ebin", in->o->code_path);
	e = args(in, "s", ebin);
	if (!e)
		e = call(in, "filelib", "is_dir", CALL_TMO_MS);
	if (e)
		return e;
	snprintf(in->ebin, sizeof(in->ebin), "%s",
		 inject_term__is_atom(in->reply.buff, 0, "true") ? ebin : in->o->code_path);
	return 0;
}

/* ---- starting it ------------------------------------------------------------------------- */

static int start_agent(struct inject *in)
{
	int e = args(in, "s", in->ebin), r;

	if (!e)
		e = call(in, "code", "add_patha", CALL_TMO_MS);
	if (!e && !inject_term__is_atom(in->reply.buff, 0, "true"))
		return unexpected(in, "the node refused the code path");
	e = e ? e : args(in, "a", "extrospect");
	if (!e)
		e = call(in, "application", "load", CALL_TMO_MS);
	if (!e && !inject_term__is_atom(in->reply.buff, 0, "ok") &&
	    !(inject_term__tagged(in->reply.buff, 0, "error", &r) &&
	      inject_term__tagged(in->reply.buff, r, "already_loaded", NULL)))
		return unexpected(in, "application:load(extrospect) on the node");
	e = e ? e : args(in, "a", "extrospect");
	if (!e)
		e = call(in, "application", "start", START_TMO_MS);
	if (!e && !inject_term__is_atom(in->reply.buff, 0, "ok"))
		return unexpected(in, "application:start(extrospect) on the node");
	return e;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* extrospect:status() until the first calibration has run. On 0, in->reply holds the status. */
static int await_calibration(struct inject *in)
{
	struct timespec t0, t;
	long long runs = 0;
	int e, v;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		e = args(in, "");
		if (!e)
			e = call(in, "extrospect", "status", CALL_TMO_MS);
		if (e)
			return e;
		if (inject_term__map_get(in->reply.buff, 0, "runs", &v) == 0 &&
		    inject_term__long(in->reply.buff, v, &runs) == 0 && runs >= 1)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >
		    (long)CALIBRATION_TMO_MS)
			return unexpected(in,
					  "the agent started but has not calibrated within 30 s");
		if (*in->stop) {
			snprintf(in->err, sizeof(in->err),
				 "interrupted while the agent calibrates");
			return -EINTR;
		}
		sleep_ms(POLL_MS);
	}
}

/* "calibration ok in 38 ms": from the status map in in->reply. True when the result is ok. */
static bool describe_status(struct inject *in, char *out, size_t len)
{
	char result[300] = "?";
	long long us = -1, runs = 0;
	int v;

	if (inject_term__map_get(in->reply.buff, 0, "result", &v) == 0)
		inject_term__print(in->reply.buff, v, result, sizeof(result));
	if (inject_term__map_get(in->reply.buff, 0, "last_calibration_us", &v) == 0)
		inject_term__long(in->reply.buff, v, &us);
	if (inject_term__map_get(in->reply.buff, 0, "runs", &v) == 0)
		inject_term__long(in->reply.buff, v, &runs);
	if (us >= 0 && strcmp(result, "ok") == 0) {
		snprintf(out, len, "calibration ok in %lld ms (%lld run%s)", (us + 500) / 1000,
			 runs, runs == 1 ? "" : "s");
		return true;
	}
	snprintf(out, len, "calibration %s (%lld run%s)", result, runs, runs == 1 ? "" : "s");
	return false;
}

/* "41 of 44 offsets verified, frame layout ra": from extrospect:info(). */
static void describe_info(struct inject *in, char *out, size_t len)
{
	char layout[64] = "?";
	int v, idx, arity, ok = 0, verified;

	out[0] = '\0';
	if (args(in, "") || call(in, "extrospect", "info", CALL_TMO_MS))
		return;
	if (inject_term__map_get(in->reply.buff, 0, "frame_layout", &v) == 0)
		inject_term__print(in->reply.buff, v, layout, sizeof(layout));
	if (inject_term__map_get(in->reply.buff, 0, "offsets", &idx) != 0 ||
	    ei_decode_map_header(in->reply.buff, &idx, &arity) < 0)
		return;
	for (int i = 0; i < arity; i++) {
		if (ei_skip_term(in->reply.buff, &idx) < 0)
			return;
		ok += inject_term__map_get(in->reply.buff, idx, "verified", &verified) == 0 &&
		      inject_term__is_atom(in->reply.buff, verified, "true");
		if (ei_skip_term(in->reply.buff, &idx) < 0)
			return;
	}
	snprintf(out, len, "; %d of %d offsets verified, frame layout %s", ok, arity, layout);
}

/* ---- the command ------------------------------------------------------------------------- */

static void report_node(const struct inject *in)
{
	printf("node %s: OTP %s (erts %s), OS pid %s\n", in->o->node, in->otp, in->erts,
	       in->os_pid);
}

static int report_started(struct inject *in)
{
	char status[400], info[200];
	const struct inject_bundle *b = in->bundle;
	bool ok = describe_status(in, status, sizeof(status));

	describe_info(in, info, sizeof(info));
	if (b)
		printf("pushed the agent from %s: %zu beams, extrospect.app, extrospect_nif.so "
		       "(%zu KiB) into %s/extrospect on the node\n",
		       b->dir, b->beams, (b->bytes + 1023) / 1024, in->top);
	else
		printf("loaded the agent from %s on the node (--code-path)\n", in->ebin);
	printf("agent started: %s%s\n", status, info);
	if (!ok) {
		/* It runs but publishes nothing the sampler can trust: the node's log says why. */
		fflush(stdout);
		fprintf(stderr, "extrospect: inject: the agent started but did not calibrate: %s\n",
			status);
		return EXIT_INTERNAL;
	}
	printf("next: extrospect info %s\n", in->os_pid);
	return EXIT_OK;
}

static int report_running(struct inject *in)
{
	char status[400] = "status unknown";

	if (args(in, "") == 0 && call(in, "extrospect", "status", CALL_TMO_MS) == 0)
		describe_status(in, status, sizeof(status));
	printf("agent already running: %s; nothing pushed\n", status);
	printf("next: extrospect info %s\n", in->os_pid);
	return EXIT_OK;
}

static int exit_code(int e)
{
	switch (e) {
	case -EHOSTUNREACH:
	case -ECONNREFUSED:
	case -ENXIO:
	case -ECONNRESET:
	case -ETIMEDOUT:
		return EXIT_UNREACHABLE;
	case -EACCES:
		return EXIT_AUTH;
	case -EPROTONOSUPPORT:
		return EXIT_UNSUPPORTED;
	case -EINVAL:
		return EXIT_USAGE;
	default:
		return EXIT_INTERNAL;
	}
}

static int run(struct inject *in)
{
	char cookie[EI_MAX_COOKIE_SIZE + 2], source[4096];
	int e, running;

	e = inject_cookie__get(getenv("EXTROSPECT_COOKIE"), in->o->cookie_file, cookie,
			       sizeof(cookie), source, sizeof(source), in->err, sizeof(in->err));
	if (e)
		return e;
	e = inject_conn__open(in->o->node, cookie, CONNECT_TMO_MS, in->stop, &in->c, in->err,
			      sizeof(in->err));
	if (e == -EACCES && strstr(in->err, "refused the cookie"))
		snprintf(in->err + strlen(in->err), sizeof(in->err) - strlen(in->err),
			 " (cookie from %s)", source);
	memset(cookie, 0, sizeof(cookie));
	if (e)
		return e;
	e = node_facts(in);
	if (!e)
		report_node(in);
	running = e ? e : agent_running(in);
	if (running < 0 || running == 1)
		return running;
	e = in->o->code_path ? use_code_path(in) : push(in);
	if (!e)
		e = start_agent(in);
	return e ? e : await_calibration(in);
}

int cmd__inject(const struct cli_opts *o, volatile sig_atomic_t *stop)
{
	struct inject in = {.o = o, .stop = stop};
	struct sigaction ign = {.sa_handler = SIG_IGN};
	int e, code;

	/* libei writes without MSG_NOSIGNAL: a node that goes away mid-call must give an error,
	 * not kill us with SIGPIPE. */
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, NULL);
	if (ei_x_new(&in.args) < 0 || ei_x_new(&in.reply) < 0) {
		fprintf(stderr, "extrospect: inject: out of memory\n");
		return EXIT_INTERNAL;
	}
	e = run(&in);
	if (e == 1)
		code = report_running(&in);
	else if (e == 0)
		code = report_started(&in);
	else {
		fprintf(stderr, "extrospect: inject: %s\n", in.err[0] ? in.err : strerror(-e));
		if (in.top[0] && e != -EINTR)
			fprintf(stderr,
				"extrospect: inject: files pushed so far are in %s on the node\n",
				in.top);
		code = exit_code(e);
	}
	fflush(stdout);
	inject_conn__free(in.c);
	inject_bundle__free(in.bundle);
	ei_x_free(&in.args);
	ei_x_free(&in.reply);
	return code;
}
