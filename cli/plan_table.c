/*
 * plan_table.c: what `xstage plan megamoe` gives a kernel to follow. The
 * recommended option with those within the tolerance, knob tables over
 * token counts (--tokens-grid, --emit-header) and the sensitivity of a
 * plan to each number of the profile (--sensitivity).
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* "xstage CMD: FLAG: message (see xstage CMD --help)", the message's
 * quotes of the flag's text with control characters escaped */
static int flag_error(const char *cmd, const char *flag, const xs_error *err) {
  if (err->status != XS_INVALID && err->status != XS_PARSE)
    return cli_error(cmd, err);
  char safe[sizeof err->message * 4];
  return cli_usage_error(cmd, "%s: %s", flag, cli_text(err->message, safe, sizeof safe));
}

int cli_parse_tokens_grid(const char *cmd, const char *flag, const char *text,
                          double **out, size_t *n) {
  xs_error err;
  if (xs_parse_token_grid(text, XS_MOE_TABLE_MAX, out, n, &err))
    return flag_error(cmd, flag, &err);
  return 0;
}

int cli_parse_tokens_range(const char *cmd, const char *text, double range[2]) {
  /* MIN:MAX, each a count as a grid takes it (xs_parse_token_grid) */
  const char *colon = strchr(text, ':');
  if (!colon || strchr(colon + 1, ':'))
    return cli_usage_error(cmd, "--tokens-range: expected MIN:MAX (64:4096, 64:4Ki), "
                                "got \"%s\"", text);
  for (int k = 0; k < 2; k++) {
    char part[64];
    snprintf(part, sizeof part, "%.*s", k ? (int)strlen(colon + 1) : (int)(colon - text),
             k ? colon + 1 : text);
    xs_error err;
    double *g = NULL;
    size_t n = 0;
    if (strchr(part, ',') || xs_parse_token_grid(part, 1, &g, &n, &err)) {
      free(g);
      return cli_usage_error(cmd, "--tokens-range: the %s of \"%s\": expected a whole "
                                  "number from 1 to 1e9, with an optional k, M, G or Ki, "
                                  "Mi, Gi", k ? "MAX" : "MIN", text);
    }
    range[k] = g[0];
    free(g);
  }
  if (range[1] < range[0])
    return cli_usage_error(cmd, "--tokens-range: %g:%g runs backwards", range[0], range[1]);
  return 0;
}

int cli_parse_tolerance(const char *cmd, const char *text, double *out) {
  xs_error err;
  if (xs_parse_fraction(text, out, &err))
    return flag_error(cmd, "--tolerance", &err);
  return 0;
}

int cli_parse_schedules(const char *cmd, const char *text, unsigned *mask) {
  xs_error err;
  if (xs_moe_parse_schedules(text, mask, &err))
    return flag_error(cmd, "--schedules", &err);
  return 0;
}

int cli_header_prefix(const char *cmd, const char *header, const char *prefix,
                      const char *dflt, const char **out) {
  if (prefix && !header)
    return cli_usage_error(cmd, "--header-prefix needs --emit-header");
  if (prefix && !*prefix)
    return cli_usage_error(cmd, "--header-prefix: empty");
  xs_error err;
  if (prefix && xs_c_header_prefix(prefix, &err))
    return flag_error(cmd, "--header-prefix", &err);
  *out = prefix ? prefix : dflt;
  return 0;
}

/* "fused-lag default (lag 12, group 4)" */
const char *cli_moe_option_words(const xs_moe_option *o, char *buf, size_t n) {
  char kb[48];
  const char *rule = xs_moe_rule_name(o->schedule, o->rule);
  snprintf(buf, n, "%s %s (%s)", xs_moe_schedule_name(o->schedule),
           rule ? rule : "finer", cli_moe_knobs(o->schedule, &o->knobs, kb, sizeof kb));
  return buf;
}

void cli_moe_certainty_print(const xs_moe_pick *p, const xs_moe_certainty *c,
                             double tol) {
  char w[128], a[32], b[32];
  printf("    how sure: ");
  if (isnan(c->runner_up_margin))
    printf("no other schedule was planned");
  else
    printf("the runner-up, %s, takes %s, %+.1f%%",
           cli_moe_option_words(&p->runner_up, w, sizeof w),
           xs_format_time(p->runner_up.time_s, a, sizeof a), 100 * c->runner_up_margin);
  if (!c->settings) {
    printf("; %s has no knob to refine\n", xs_moe_schedule_name(p->chosen.schedule));
    return;
  }
  double gain = 1 - c->finer.time_s / p->chosen.time_s;
  char kb[48];
  printf(";\n    on a finer grid of %s's knobs (%zu settings) the fastest is %s, %s",
         xs_moe_schedule_name(p->chosen.schedule), c->settings,
         cli_moe_knobs(c->finer.schedule, &c->finer.knobs, kb, sizeof kb),
         xs_format_time(c->finer.time_s, b, sizeof b));
  if (c->holds)
    printf(" (%.1f%% faster): the choice holds within %.3g%%\n", 100 * gain, 100 * tol);
  else
    printf(": %.1f%% faster, more than the tolerance (%.3g%%): a finer rule would pay\n",
           100 * gain, 100 * tol);
}

void cli_moe_verdict_print(const xs_moe_pick *p, const char *profile) {
  xs_interval iv;
  xs_error e;
  char a[32], b[32];
  if (!xs_moe_interval(p->chosen.schedule, p->tokens, &iv, &e))
    printf("    80%% interval: %s to %s (the model's errors on published kernels\n"
           "    of its kind at this size: %zu rows from %zu sources%s)\n",
           xs_format_time(p->chosen.time_s * iv.low, a, sizeof a),
           xs_format_time(p->chosen.time_s * iv.high, b, sizeof b), iv.rows, iv.sources,
           iv.pooled ? ", too few of its kind: every MoE kernel's" : "");
  xs_moe_verdict v;
  if (xs_moe_verdict_of(p, &v, &e) || v.clear < 0)
    return;
  printf("    the runner-up over the recommended: x%.3f predicted, x%.3f to x%.3f at\n"
         "    80%% (from measured pairs of kernels): ",
         v.ratio, v.low, v.high);
  if (v.clear) {
    printf("a clear win\n");
    return;
  }
  printf("too close to call: time both on\n"
         "    the machine and fit the model to the timings (xstage fit megamoe --data\n"
         "    TIMINGS.csv --profile %s -o tuned.json), then plan on tuned.json\n",
         profile);
}

void cli_moe_pick_print(const xs_moe_config *cfg, const xs_profile *prof,
                        const xs_moe_pick *p, double tol) {
  char w[128], a[32], lb[64];
  xs_moe_call call;
  printf("  recommended: %s, %s\n", cli_moe_option_words(&p->chosen, w, sizeof w),
         xs_format_time(p->chosen.time_s, a, sizeof a));
  if (!cli_moe_call(cfg, prof, p->chosen.schedule, &p->chosen.knobs, &call))
    cli_moe_call_print(&call, 4);
  printf("    %zu option%s within %.3g%% of the fastest; the recommended one has "
         "the fewest\n    knobs away from the kernel's default, then the least "
         "time:\n", p->near, p->near == 1 ? "" : "s", tol * 100);
  /* the fastest 8 and the recommended one; --json lists all */
  size_t shown = 0;
  for (size_t i = 0; i < p->near; i++) {
    const xs_moe_option *o = &p->near_set[i];
    int it = xs_moe_same_choice(o, &p->chosen);
    if (i >= 8 && !it)
      continue;
    int have = !cli_moe_call(cfg, prof, o->schedule, &o->knobs, &call);
    printf("      %-52s %10s %s %s\n", cli_moe_option_words(o, w, sizeof w),
           xs_format_time(o->time_s, a, sizeof a), it ? "<" : " ",
           have ? cli_moe_call_label(&call, lb, sizeof lb) : "-");
    shown++;
  }
  if (shown < p->near)
    printf("      and %zu more (--json lists them)\n", p->near - shown);
}

/* ---- knob tables ---- */

int cli_moe_table(const char *cmd, const xs_moe_config *cfg,
                  const xs_profile *prof, const xs_moe_table_options *o,
                  int json, const char *header, const char *prefix) {
  xs_moe_table *t;
  xs_error err;
  double tol = o->tolerance;
  if (xs_moe_plan_table(cfg, prof, o, &t, &err)) {
    fprintf(stderr, "xstage %s: %s: %s\n", cmd,
            o->tokens ? "--tokens-grid" : "--tokens-range", err.message);
    return cli_exit_code(err.status);
  }
  size_t n = xs_moe_table_size(t);
  size_t changes = 0;
  for (size_t i = 1; i < n; i++)
    changes += !xs_moe_same_choice(&xs_moe_table_pick(t, i - 1)->chosen,
                                   &xs_moe_table_pick(t, i)->chosen);
  int rc = 0;
  if (header) {
    char comment[512];
    snprintf(comment, sizeof comment,
             "%s, EP %g, H %g, I %g, %g experts, top-%g, %s; profile %s; "
             "%zu grid points from %g to %g tokens; tolerance %g",
             cfg->name, cfg->ep, cfg->hidden, cfg->intermediate, cfg->experts,
             cfg->topk, cfg->dtype, xs_profile_name(prof), n,
             xs_moe_table_pick(t, 0)->tokens, xs_moe_table_pick(t, n - 1)->tokens, tol);
    char *h = xs_moe_table_header(t, cfg, prof, prefix, comment);
    if (!h)
      rc = cli_out_of_memory(cmd);
    else
      rc = cli_write_output(cmd, header, h);
    free(h);
  }
  int header_out = header && strcmp(header, "-") == 0; /* it took stdout */
  if (!rc && json && !header_out) {
    char *s;
    if (xs_moe_table_json(t, cfg, prof, tol, &s, &err)) {
      rc = cli_error(cmd, &err);
    } else {
      if (json == 2) /* --csv: a line a grid point */
        rc = cli_csv_document(cmd, s, "grid", NULL, NULL, NULL);
      else
        printf("%s\n", s);
      xs_free(s);
    }
  } else if (!rc && !header_out) {
    printf("MegaMoE knob table: %s, EP %g, on %s; tolerance %.3g%%\n",
           cli_name_text(cfg->name), cfg->ep, cli_profile_given(prof), tol * 100);
    printf("  %8s %8s  %-18s %-14s %-30s %10s %10s  %-18s %10s %4s  %s\n",
           "tokens", "from", "schedule", "rule", "knobs", "predicted",
           "fastest", "runner-up", "its time", "near", "kernel");
    for (size_t i = 0; i < n; i++) {
      const xs_moe_pick *p = xs_moe_table_pick(t, i);
      char kb[48], a[32], b[32], c[32], lb[64];
      int changed = i && !xs_moe_same_choice(&xs_moe_table_pick(t, i - 1)->chosen,
                                             &p->chosen);
      xs_moe_config at = *cfg;
      at.tokens = p->tokens;
      xs_moe_call call;
      int have = !cli_moe_call(&at, prof, p->chosen.schedule, &p->chosen.knobs, &call);
      printf("%c %8.0f %8.0f  %-18s %-14s %-30s %10s %10s  %-18s %10s %4zu  %s\n",
             changed ? '*' : ' ', p->tokens, p->lo,
             xs_moe_schedule_name(p->chosen.schedule),
             xs_moe_rule_name(p->chosen.schedule, p->chosen.rule),
             cli_moe_knobs(p->chosen.schedule, &p->chosen.knobs, kb, sizeof kb),
             xs_format_time(p->chosen.time_s, a, sizeof a),
             xs_format_time(p->best.time_s, b, sizeof b),
             isnan(p->runner_up.time_s)
                 ? "-" : xs_moe_schedule_name(p->runner_up.schedule),
             isnan(p->runner_up.time_s)
                 ? "-" : xs_format_time(p->runner_up.time_s, c, sizeof c),
             p->near, have ? cli_moe_call_label(&call, lb, sizeof lb) : "-");
    }
    printf("\n  %zu change%s of choice over %zu grid points (*: where staying would "
           "have cost more\n  than the tolerance); from: lookups from this token "
           "count on get the row;\n  near: options within the tolerance "
           "(--json lists them); kernel: what to call\n  (--json and "
           "--emit-header give the call and its arguments, and a proposal's change)\n",
           changes, changes == 1 ? "" : "s", n);
  }
  xs_moe_table_free(t);
  return rc;
}

/* ---- sensitivity ---- */

int cli_moe_sensitivity_print(const xs_profile *prof, const xs_moe_pick *base,
                              const xs_moe_sensitivity *s, size_t n) {
  char w[128];
  cli_sens_row *rows = calloc(n ? n : 1, sizeof *rows);
  if (!rows)
    return cli_out_of_memory("plan");
  for (size_t i = 0; i < n; i++) {
    cli_sens_row *r = &rows[i];
    CLI_SENS_ROW(r, &s[i]);
    for (int f = 0; f < XS_MOE_SENS_FACTORS; f++)
      if (s[i].changed[f])
        cli_moe_option_words(&s[i].choice[f], r->choice[f], sizeof r->choice[f]);
  }
  cli_sensitivity_print(prof, cli_moe_option_words(&base->chosen, w, sizeof w), base->chosen.time_s,
                        rows, n);
  free(rows);
  return EXIT_OK;
}
