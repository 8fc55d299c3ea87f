/* `extrospect watch`'s report (watch_report.c): a finished watch_report (watch_view.h) as a
 * table, JSON or a flame graph, and the names of states and ends. */
#ifndef XP_WATCH_REPORT_H
#define XP_WATCH_REPORT_H

#include <stdio.h>

#include "watch_view.h"

struct watch;

const char *watch__state_name(enum watch_state s);
extern const char *const watch__end_names[];

void watch__print_text(const struct watch_report *r, FILE *f);
/* The same time as a flame graph whose roots are the states: "<pid> name" -> state -> function,
 * weighted in microseconds. format: enum cli_format. 0 or -errno. */
int watch__write_graph(const struct watch_report *r, const char *path, int format);
void watch__print_json(const struct watch_report *r, FILE *f);

/* Build the report from w, print the table or JSON, and write -o. */
void watch__report(struct watch *w);

#endif /* XP_WATCH_REPORT_H */
