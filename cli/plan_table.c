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

int cli_parse_tokens_grid(const char *cmd, const char *flag, const char *text,
                          double **out, size_t *n) {
  size_t cap = 64;
  double *g = malloc(cap * sizeof *g);
  if (!g)
    return cli_out_of_memory(cmd);
  *n = 0;
  const char *p = text;
  int rc = 0;
  while (!rc) {
    double v[3] = {0, 0, 1};
    int nv = 0;
    char *end;
    for (;;) {
      v[nv] = strtod(p, &end);
      if (end == p || !(v[nv] >= 1 && v[nv] <= 1e9) || v[nv] != floor(v[nv])) {
        rc = cli_usage_error(cmd,
                             "%s: at character %zu of \"%s\": expected a whole "
                             "number from 1 to 1e9 (a list like 64,128 or a "
                             "range FIRST:LAST:STEP)",
                             flag, (size_t)(p - text) + 1, text);
        break;
      }
      nv++;
      p = end;
      if (*p != ':' || nv == 3)
        break;
      p++;
    }
    if (rc)
      break;
    if (nv == 2)
      v[2] = 1;
    double last = nv >= 2 ? v[1] : v[0];
    if (nv >= 2 && last < v[0]) {
      rc = cli_usage_error(cmd, "%s: range %g:%g runs backwards", flag, v[0], last);
      break;
    }
    for (double t = v[0]; t <= last; t += v[2]) {
      if (*n && t <= g[*n - 1]) {
        rc = cli_usage_error(cmd, "%s: %g after %g: expected ascending token "
                                  "counts", flag, t, g[*n - 1]);
        break;
      }
      if (*n == XS_MOE_TABLE_MAX) {
        rc = cli_usage_error(cmd, "%s: more than %d grid points", flag,
                             XS_MOE_TABLE_MAX);
        break;
      }
      if (*n == cap) {
        double *ng = realloc(g, 2 * cap * sizeof *g);
        if (!ng) {
          rc = cli_out_of_memory(cmd);
          break;
        }
        g = ng;
        cap *= 2;
      }
      g[(*n)++] = t;
    }
    if (rc || !*p)
      break;
    if (*p != ',') {
      rc = cli_usage_error(cmd, "%s: at character %zu of \"%s\": expected ',' "
                                "or ':'", flag, (size_t)(p - text) + 1, text);
      break;
    }
    p++;
  }
  if (rc) {
    free(g);
    *n = 0;
    return rc;
  }
  *out = g;
  return 0;
}

int cli_parse_tolerance(const char *cmd, const char *text, double *out) {
  char *end;
  double v = strtod(text, &end);
  if (end != text && *end == '%' && !end[1]) {
    v /= 100;
    end++;
  }
  if (end == text || *end || !(v >= 0 && v <= 1))
    return cli_usage_error(cmd, "--tolerance: expected a fraction from 0 to 1 "
                                "or a percentage (0.01, 1%%), got \"%s\"", text);
  *out = v;
  return 0;
}

int cli_parse_schedules(const char *cmd, const char *text, unsigned *mask) {
  *mask = 0;
  const char *p = text;
  for (;;) {
    size_t len = strcspn(p, ",");
    char name[32];
    int k = -1;
    if (len < sizeof name) {
      memcpy(name, p, len);
      name[len] = 0;
      k = xs_moe_schedule_from_name(name);
    }
    if (k < 0)
      return cli_usage_error(cmd, "--schedules: \"%.*s\" is not a schedule "
                                  "(sequential, baseline, searched, fused-split, "
                                  "fused-wave, fused-interleaved, fused-lag)",
                             (int)len, p);
    *mask |= 1u << k;
    if (!p[len])
      return 0;
    p += len + 1;
  }
}

int cli_header_prefix(const char *cmd, const char *header, const char *prefix,
                      const char *dflt, const char **out) {
  if (prefix && !header)
    return cli_usage_error(cmd, "--header-prefix needs --emit-header");
  if (prefix && !*prefix)
    return cli_usage_error(cmd, "--header-prefix: empty");
  if (prefix && !xs_c_identifier(prefix))
    return cli_usage_error(cmd, "--header-prefix: \"%s\" is not a C identifier of at "
                                "most 64 characters", prefix);
  *out = prefix ? prefix : dflt;
  return 0;
}

/* "fused-lag default (lag 12, group 4)" */
static const char *option_words(const xs_moe_option *o, char *buf, size_t n) {
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
           option_words(&p->runner_up, w, sizeof w),
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

void cli_moe_pick_print(const xs_moe_pick *p, double tol) {
  char w[128], a[32];
  printf("  recommended: %s, %s\n", option_words(&p->chosen, w, sizeof w),
         xs_format_time(p->chosen.time_s, a, sizeof a));
  printf("    %zu option%s within %.3g%% of the fastest; the recommended one has "
         "the fewest\n    knobs away from the kernel's default, then the least "
         "time:\n", p->near, p->near == 1 ? "" : "s", tol * 100);
  /* the fastest 8 and the recommended one; --json lists all */
  size_t shown = 0;
  for (size_t i = 0; i < p->near; i++) {
    int it = xs_moe_same_choice(&p->near_set[i], &p->chosen);
    if (i >= 8 && !it)
      continue;
    printf("      %-52s %10s%s\n", option_words(&p->near_set[i], w, sizeof w),
           xs_format_time(p->near_set[i].time_s, a, sizeof a), it ? "  <" : "");
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
  if (xs_moe_plan_table(cfg, prof, o, &t, &err))
    return cli_error(cmd, &err);
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
    char *h = xs_moe_table_header(t, prefix, comment);
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
      printf("%s\n", s);
      xs_free(s);
    }
  } else if (!rc && !header_out) {
    printf("MegaMoE knob table: %s, EP %g, on %s; tolerance %.3g%%\n",
           cli_name_text(cfg->name), cfg->ep, cli_profile_text(prof), tol * 100);
    printf("  %8s %8s  %-18s %-14s %-30s %10s %10s  %-18s %10s %4s\n",
           "tokens", "from", "schedule", "rule", "knobs", "predicted",
           "fastest", "runner-up", "its time", "near");
    for (size_t i = 0; i < n; i++) {
      const xs_moe_pick *p = xs_moe_table_pick(t, i);
      char kb[48], a[32], b[32], c[32];
      int changed = i && !xs_moe_same_choice(&xs_moe_table_pick(t, i - 1)->chosen,
                                             &p->chosen);
      printf("%c %8.0f %8.0f  %-18s %-14s %-30s %10s %10s  %-18s %10s %4zu\n",
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
             p->near);
    }
    printf("\n  %zu change%s of choice over %zu grid points (*: where staying would "
           "have cost more\n  than the tolerance); from: lookups from this token "
           "count on get the row;\n  near: options within the tolerance "
           "(--json lists them)\n", changes, changes == 1 ? "" : "s", n);
  }
  xs_moe_table_free(t);
  return rc;
}

/* ---- sensitivity ---- */

static const char *value_words(const char *key, double v, char *buf, size_t n) {
  size_t len = strlen(key);
  if (len > 4 && strcmp(key + len - 4, "_Bps") == 0)
    return xs_format_rate(v, buf, n);
  if (len > 2 && strcmp(key + len - 2, "_B") == 0)
    return xs_format_size(v, buf, n);
  if (len > 2 && strcmp(key + len - 2, "_s") == 0)
    return xs_format_time(v, buf, n);
  if (strstr(key, "flops_per_s"))
    snprintf(buf, n, "%.4g TFLOP/s", v / 1e12);
  else
    snprintf(buf, n, "%.4g", v);
  return buf;
}

/* the first word of a number's source: measurement, derived, datasheet,
 * lead; "-" when the profile does not say */
static const char *source_kind(const xs_profile *prof, const char *key,
                               char *buf, size_t n) {
  const char *s = xs_profile_number_source(prof, key);
  if (!s)
    return "-";
  size_t len = strcspn(s, ": ");
  snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), s);
  return buf;
}

void cli_moe_sensitivity_print(const xs_profile *prof, const xs_moe_pick *base,
                               const xs_moe_sensitivity *s, size_t n) {
  char w[128], a[32];
  printf("\n  sensitivity of %s (%s) to each number of %s:\n"
         "  its time when the number is moved (x0.5 x0.9 x1.1 x1.5), and the\n"
         "  choice a new plan makes where it differs; the first row is what to\n"
         "  measure first\n",
         option_words(&base->chosen, w, sizeof w),
         xs_format_time(base->chosen.time_s, a, sizeof a), cli_profile_text(prof));
  printf("  %-34s %13s %-11s %7s %7s %7s %7s  %s\n", "parameter", "value", "source",
         "x0.5", "x0.9", "x1.1", "x1.5", "new choice");
  for (size_t i = 0; i < n; i++) {
    char v[32], k[32], pc[4][16], nc[160] = "";
    for (int f = 0; f < XS_MOE_SENS_FACTORS; f++) {
      if (isnan(s[i].time_change[f]))
        snprintf(pc[f], sizeof pc[f], "n/a");
      else
        snprintf(pc[f], sizeof pc[f], "%+.1f%%", s[i].time_change[f] * 100);
      if (s[i].changed[f]) {
        char ow[128];
        size_t used = strlen(nc);
        snprintf(nc + used, sizeof nc - used, "%sx%g: %s, %+.1f%%", used ? "; " : "",
                 s[i].factor[f], option_words(&s[i].choice[f], ow, sizeof ow),
                 s[i].replan_change[f] * 100);
      }
    }
    char pn[96];
    printf("  %-34s %13s %-11s %7s %7s %7s %7s  %s\n", cli_text(s[i].param, pn, sizeof pn),
           value_words(s[i].param, s[i].value, v, sizeof v),
           source_kind(prof, s[i].param, k, sizeof k), pc[0], pc[1], pc[2], pc[3],
           *nc ? nc : "-");
  }
}
