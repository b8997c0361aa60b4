/*
 * results_json.c: the JSON documents of `xstage plan ... --json` and
 * `xstage validate ... --json`, made in the library so that the command
 * and the bindings print the same bytes from one producer.
 */
#include "internal.h"
#include "api/api.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void xs_free(void *pointer) { free(pointer); }

size_t xs_struct_size(const char *name) {
#define XS__SIZE(type)                                                       \
  if (name && strcmp(name, #type) == 0)                                      \
    return sizeof(type);
  XS__SIZE(xs_error)
  XS__SIZE(xs_moe_config)
  XS__SIZE(xs_fa_config)
  XS__SIZE(xs_moe_table_options)
  XS__SIZE(xs_sim_options)
  XS__SIZE(xs_fa_ring)
  XS__SIZE(xs_fa_table_row)
#undef XS__SIZE
  return 0;
}

xs_status xs__api_dump(json_t *doc, size_t precision, char **out, xs_error *err) {
  *out = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(precision)) : NULL;
  json_decref(doc);
  if (!*out)
    return xs__fail(err, XS_NOMEM, "out of memory, or a name that is not UTF-8");
  return XS_OK;
}

/* ---- MegaMoE ---- */

json_t *xs__api_moe_knobs(const xs_moe_pattern *k) {
  return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "experts_per_wave",
                   (json_int_t)k->experts_per_wave, "warmup",
                   (json_int_t)k->warmup, "lag", (json_int_t)k->lag, "group",
                   (json_int_t)k->group, "block_m", (json_int_t)k->block_m,
                   "block_n", (json_int_t)k->block_n);
}

json_t *xs__api_moe_breakdown(const xs_moe_breakdown *b) {
  return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s}", "compute_s",
                   b->compute_s, "hbm_s", b->hbm_s, "fixed_s", b->fixed_s,
                   "dispatch_s", b->dispatch_s, "sync_s", b->sync_s, "link_s",
                   b->link_s, "stall_s", b->stall_s, "xstage_tail_s",
                   b->xstage_tail_s, "bound", b->bound ? b->bound : "");
}

json_t *xs__api_moe_schedules(const xs_moe_result *r) {
  json_t *s = json_object();
  for (int k = 0; k < XS_MOE_SCHEDULES; k++)
    json_object_set_new(s, xs_moe_schedule_name((xs_moe_schedule)k),
        json_pack("{s:f,s:f,s:f,s:f,s:o,s:o}", "burstgap_s", r->time_s[k][0],
                  "blocking_s", r->time_s[k][1], "serial_s", r->time_s[k][2],
                  "ideal_s", r->time_s[k][3], "knobs",
                  xs__api_moe_knobs(&r->knobs[k]), "breakdown",
                  xs__api_moe_breakdown(&r->breakdown[k])));
  return s;
}

static json_t *option_json(const xs_moe_option *o) {
  if (isnan(o->time_s))
    return json_null();
  const char *rule = xs_moe_rule_name(o->schedule, o->rule);
  return json_pack("{s:s,s:s,s:i,s:f,s:o}", "schedule",
                   xs_moe_schedule_name(o->schedule), "rule", rule ? rule : "finer",
                   "away", (int)o->away, "time_s", o->time_s, "knobs",
                   xs__api_moe_knobs(&o->knobs));
}

static json_t *pick_json(const xs_moe_pick *p, double tol) {
  json_t *near = json_array();
  for (size_t i = 0; i < p->near; i++)
    json_array_append_new(near, option_json(&p->near_set[i]));
  return json_pack("{s:f,s:f,s:f,s:o,s:o,s:o,s:o}", "tokens", p->tokens,
                   "lo", p->lo, "tolerance", tol, "chosen", option_json(&p->chosen),
                   "best", option_json(&p->best), "runner_up",
                   option_json(&p->runner_up), "near", near);
}

static json_t *sensitivity_json(const xs_profile *prof, const xs_moe_sensitivity *s,
                                size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) {
    json_t *f = json_array(), *tc = json_array(), *rc = json_array(),
           *ch = json_array();
    for (int k = 0; k < XS_MOE_SENS_FACTORS; k++) {
      json_array_append_new(f, json_real(s[i].factor[k]));
      json_array_append_new(tc, isnan(s[i].time_change[k])
                                    ? json_null() : json_real(s[i].time_change[k]));
      json_array_append_new(rc, isnan(s[i].replan_change[k])
                                    ? json_null() : json_real(s[i].replan_change[k]));
      json_array_append_new(ch, s[i].changed[k] ? option_json(&s[i].choice[k])
                                                : json_null());
    }
    const char *src = xs_profile_number_source(prof, s[i].param);
    json_array_append_new(a, json_pack("{s:s,s:f,s:s?,s:o,s:o,s:o,s:o}", "param",
        s[i].param, "value", s[i].value, "source", src, "factor", f,
        "time_change", tc, "replan_change", rc, "new_choice", ch));
  }
  return a;
}

static json_t *moe_plan_doc(const xs_moe_config *c, const xs_profile *prof,
                            const xs_moe_result *r) {
  const xs_moe_workload *w = &r->work;
  json_t *o = json_object();
  json_object_set_new(o, "preset", json_string(c->name));
  json_object_set_new(o, "profile", json_string(xs_profile_name(prof)));
  json_object_set_new(o, "config", json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s}",
      "tokens", c->tokens, "hidden", c->hidden, "intermediate", c->intermediate,
      "experts", c->experts, "topk", c->topk, "ep", c->ep, "act_bytes", c->act_bytes,
      "combine_bytes", c->combine_bytes, "imbalance", c->imbalance, "dtype", c->dtype));
  json_object_set_new(o, "workload", json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
      "pairs", w->pairs, "mean_pairs", w->mean_pairs, "tokens_per_expert",
      w->tokens_per_expert, "experts_touched", w->experts_touched, "sms", w->sms,
      "flops", w->flops, "weights_B", w->weights_B, "mma_flops_per_s",
      w->mma_flops_per_s, "l2_Bps", w->l2_Bps, "dispatch_B", w->dispatch_B,
      "combine_B", w->combine_B));
  json_object_set_new(o, "schedules", xs__api_moe_schedules(r));
  json_object_set_new(o, "best_fused",
                      json_string(xs_moe_schedule_name(r->best_fused)));
  json_object_set_new(o, "programs_evaluated", json_integer(r->searched));
  json_object_set_new(o, "speedup", json_real(r->time_s[1][0] / r->time_s[2][0]));
  json_object_set_new(o, "blocking_speedup", json_real(r->time_s[1][1] / r->time_s[2][1]));
  json_object_set_new(o, "speedup_vs_sequential", json_real(r->time_s[0][0] / r->time_s[2][0]));
  json_object_set_new(o, "breakdown", json_pack("{s:f,s:f,s:f,s:f}", "compute_s",
      r->compute_s, "dispatch_wait_s", r->dispatch_wait_s, "stall_s", r->stall_s,
      "xstage_tail_s", r->xstage_tail_s));
  return o;
}

xs_status xs_moe_plan_json(const xs_moe_config *config, const xs_profile *profile,
                           double tolerance, unsigned schedules, int sensitivity,
                           xs_moe_result *result, char **out, xs_error *err) {
  *out = NULL;
  xs_moe_result r;
  xs_moe_pick pick;
  xs_moe_sensitivity *sens = NULL;
  size_t nsens = 0;
  xs_status st = xs_moe_plan(config, profile, &r, err);
  if (!st && sensitivity) {
    if (!(sens = malloc(XS_MOE_SENS_MAX * sizeof *sens)))
      st = xs__fail(err, XS_NOMEM, "out of memory");
    else
      st = xs_moe_sensitivity_run(config, profile, tolerance, schedules, &pick, sens,
                                  &nsens, err);
  } else if (!st) {
    st = xs_moe_recommend(config, profile, tolerance, schedules, &pick, err);
  }
  xs_moe_certainty cert;
  if (!st)
    st = xs_moe_certainty_of(config, profile, &pick, tolerance, &cert, err);
  if (!st) {
    json_t *o = moe_plan_doc(config, profile, &r);
    json_t *rec = pick_json(&pick, tolerance);
    json_object_set_new(rec, "certainty", json_pack("{s:o,s:o,s:I,s:b}",
        "runner_up_margin", isnan(cert.runner_up_margin) ? json_null()
                                                         : json_real(cert.runner_up_margin),
        "finer", option_json(&cert.finer), "settings", (json_int_t)cert.settings,
        "holds", cert.holds));
    json_object_set_new(o, "recommended", rec);
    if (sens)
      json_object_set_new(o, "sensitivity", sensitivity_json(profile, sens, nsens));
    st = xs__api_dump(o, 12, out, err);
  }
  free(sens);
  if (!st && result)
    *result = r;
  return st;
}

xs_status xs_moe_table_json(const xs_moe_table *table, const xs_moe_config *config,
                            const xs_profile *profile, double tolerance, char **out,
                            xs_error *err) {
  size_t n = xs_moe_table_size(table), changes = 0;
  for (size_t i = 1; i < n; i++)
    changes += !xs_moe_same_choice(&xs_moe_table_pick(table, i - 1)->chosen,
                                   &xs_moe_table_pick(table, i)->chosen);
  json_t *rows = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(rows, pick_json(xs_moe_table_pick(table, i), tolerance));
  json_t *doc = json_pack("{s:s,s:s,s:f,s:f,s:i,s:o}", "preset", config->name,
                          "profile", xs_profile_name(profile), "ep", config->ep,
                          "tolerance", tolerance, "changes", (int)changes, "grid", rows);
  return xs__api_dump(doc, 12, out, err);
}

/* ---- ring attention ---- */

xs_status xs_fa_rings(const xs_fa_config *c, const xs_profile *prof, xs_fa_ring *out,
                      size_t *n, xs_error *err) {
  *n = 0;
  char key[24];
  snprintf(key, sizeof key, "%s%s", c->kernel, c->backward ? "_fwd_bwd" : "");
  if (!(xs_profile_attn(prof, XS_ATTN_FLOPS, key) > 0))
    return XS_OK;
  for (int p = 0; p < XS_FA_PATHS; p++)
    for (int l = 0; l < XS_FA_LAYOUTS; l++) {
      if ((p == XS_FA_LOCAL || !c->causal) && l != c->layout)
        continue;
      xs_fa_config at = *c;
      at.layout = l;
      xs_fa_ring *r = &out[*n];
      r->path = (xs_fa_path)p;
      r->layout = p == XS_FA_LOCAL || !c->causal ? -1 : l;
      xs_status st = xs_fa_predict(&at, prof, r->path, &r->time_s, &r->breakdown, err);
      if (st) {
        *n = 0;
        return st;
      }
      (*n)++;
    }
  return XS_OK;
}

static json_t *ring_one(const xs_fa_ring *r) {
  const xs_fa_breakdown *b = &r->breakdown;
  return json_pack("{s:s,s:s,s:f,s:{s:f,s:f,s:f,s:f,s:f,s:i,s:i,s:s}}", "path",
                   xs_fa_path_name(r->path), "layout",
                   r->layout < 0 ? "-" : xs_fa_layout_name((xs_fa_layout)r->layout),
                   "time_s", r->time_s, "breakdown", "compute_s", b->compute_s,
                   "merge_s", b->merge_s, "fixed_s", b->fixed_s, "exposed_s",
                   b->exposed_s, "imbalance_s", b->imbalance_s, "forward_sms",
                   (int)b->forward_sms, "spread", (int)b->spread, "bound",
                   b->bound ? b->bound : "");
}

json_t *xs__api_rings(const xs_fa_ring *r, size_t n) {
  if (!n)
    return json_null();
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, ring_one(&r[i]));
  return a;
}

xs_status xs_fa_plan_json(const xs_fa_config *config, const xs_profile *profile,
                          xs_fa_result *result, char **out, xs_error *err) {
  *out = NULL;
  xs_fa_ring ring[XS_FA_RINGS];
  size_t nring = 0;
  xs_fa_result r;
  xs_status st = xs_fa_rings(config, profile, ring, &nring, err);
  if (!st)
    st = xs_fa_plan(config, profile, &r, err);
  if (st)
    return st;
  static const char *const names[] = {"sequential", "dedicated", "piggyback"};
  json_t *o = json_pack("{s:s,s:s,s:f,s:f,s:b}", "preset", config->name, "profile",
                        xs_profile_name(profile), "seq", config->seq, "cp", config->cp,
                        "causal", config->causal);
  if (!o)
    return xs__api_dump(NULL, 12, out, err);
  json_object_set_new(o, "workload", json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
      "step_flops", r.work.step_flops, "step_s", r.work.step_s, "kv_B", r.work.kv_B,
      "q_tiles", r.work.q_tiles, "kv_tiles", r.work.kv_tiles, "iterations",
      r.work.iterations, "waves", r.work.waves));
  json_t *s = json_object();
  for (int k = 0; k < XS_FA_SCHEDULES; k++)
    json_object_set_new(s, names[k], json_pack("{s:f,s:f,s:f}", "burstgap_s",
        r.time_s[k][0], "blocking_s", r.time_s[k][1], "ideal_s", r.time_s[k][2]));
  json_object_set_new(o, "schedules", s);
  json_object_set_new(o, "choice", json_pack("{s:i,s:i,s:i,s:i}", "forward_sms",
      (int)r.dedicated.forward_sms, "spread_waves", (int)r.piggyback.spread_waves,
      "chunks", (int)r.piggyback.chunks, "searched", (int)r.searched));
  json_object_set_new(o, "speedup", json_real(r.time_s[0][0] / r.time_s[2][0]));
  json_object_set_new(o, "speedup_vs_dedicated", json_real(r.time_s[1][0] / r.time_s[2][0]));
  json_object_set_new(o, "blocking_speedup", json_real(r.time_s[0][1] / r.time_s[2][1]));
  json_object_set_new(o, "ring", xs__api_rings(ring, nring));
  st = xs__api_dump(o, 12, out, err);
  if (!st && result)
    *result = r;
  return st;
}

/* the fastest ring (not the local arm), or NULL */
const xs_fa_ring *xs_fa_ring_best(const xs_fa_ring *r, size_t n) {
  const xs_fa_ring *b = NULL;
  for (size_t i = 0; i < n; i++)
    if (r[i].path != XS_FA_LOCAL && (!b || r[i].time_s < b->time_s))
      b = &r[i];
  return b;
}

xs_status xs_fa_table(const xs_fa_config *config, const xs_profile *profile,
                      const double *seq, size_t n, double tolerance,
                      xs_fa_table_row *rows, size_t *changes, xs_error *err) {
  size_t nchanges = 0;
  for (size_t i = 0; i < n; i++) {
    xs_fa_config at = *config;
    at.seq = seq[i];
    xs_fa_ring r[XS_FA_RINGS];
    size_t nr;
    xs_status st = xs_fa_rings(&at, profile, r, &nr, err);
    if (st)
      return st;
    const xs_fa_ring *b = xs_fa_ring_best(r, nr), *keep = NULL;
    if (!b)
      return xs__fail(err, XS_INVALID, "%s has no attn_flops_per_s.%s%s for the ring "
                      "model", xs_profile_name(profile), config->kernel,
                      config->backward ? "_fwd_bwd" : "");
    rows[i].seq = seq[i];
    rows[i].fastest = *b;
    rows[i].near = 0;
    for (size_t k = 0; k < nr; k++) {
      if (r[k].path == XS_FA_LOCAL || r[k].time_s > b->time_s * (1 + tolerance))
        continue;
      rows[i].near++;
      if (i && r[k].path == rows[i - 1].chosen.path &&
          r[k].layout == rows[i - 1].chosen.layout)
        keep = &r[k];
    }
    rows[i].chosen = keep ? *keep : *b;
    nchanges += i && !keep;
  }
  if (changes)
    *changes = nchanges;
  return XS_OK;
}

char *xs_fa_table_header(const xs_fa_config *c, const xs_profile *prof,
                         const xs_fa_table_row *rows, size_t n, double tol,
                         const char *P) {
  if (!xs_c_identifier(P))
    return NULL;
  char up[65];
  xs__c_upper(P, up);
  char *name = xs_c_comment_text(c->name), *pname = xs_c_comment_text(xs_profile_name(prof));
  xs__sbuf b = {0};
  b.oom = !name || !pname;
  xs__sb_printf(&b, "/*\n * Generated by xstage %s: a ring attention table.\n"
             " * %s, CP %g, %s mask, %s %s; profile %s; tolerance %g.\n"
             " * %s_lookup(seq) returns the row with the largest lo <= seq (the first\n"
             " * below it). Needs nothing but a C99 or C11 compiler.\n */\n"
             "#ifndef %s_H\n#define %s_H\n\nenum { %s_ROWS = %zu };\n\n"
             "typedef struct %s_row {\n"
             "  unsigned long lo, seq;   /* tokens per rank */\n"
             "  const char *path;        /* sequential, dedicated-stream, dedicated-sms, piggyback */\n"
             "  const char *layout;      /* contiguous, zigzag, stripe; - for a full mask */\n"
             "  unsigned forward_sms;    /* dedicated-sms */\n"
             "  unsigned spread;         /* piggyback: pieces a step's block goes in */\n"
             "  double predicted_us;\n} %s_row;\n\n"
             "static const %s_row %s_table[%s_ROWS] = {\n",
          XSTAGE_VERSION, name ? name : "", c->cp, c->causal ? "causal" : "full", c->kernel,
          c->backward ? "forward and backward" : "forward", pname ? pname : "", tol, P,
          up, up, up, n, P, P, P, P, up);
  for (size_t i = 0; i < n; i++) {
    const xs_fa_ring *pick = &rows[i].chosen;
    double lo = i ? fmin(rows[i].seq, ceil(sqrt(rows[i - 1].seq * rows[i].seq)))
                  : rows[0].seq;
    xs__sb_printf(&b, "  {%.0f, %.0f, \"%s\", \"%s\", %u, %u, %.17g},\n", lo, rows[i].seq,
            xs_fa_path_name(pick->path),
            pick->layout < 0 ? "-" : xs_fa_layout_name((xs_fa_layout)pick->layout),
            pick->breakdown.forward_sms, pick->breakdown.spread, pick->time_s * 1e6);
  }
  xs__c_lookup(&b, "row", P, up, "seq");
  free(name);
  free(pname);
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

xs_status xs_fa_table_json(const xs_fa_config *c, const xs_profile *profile,
                           const xs_fa_table_row *rows, size_t n, double tolerance,
                           char **out, xs_error *err) {
  size_t changes = 0;
  for (size_t i = 1; i < n; i++)
    changes += rows[i].chosen.path != rows[i - 1].chosen.path ||
               rows[i].chosen.layout != rows[i - 1].chosen.layout;
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, json_pack("{s:f,s:o,s:o,s:i}", "seq", rows[i].seq,
                                       "chosen", ring_one(&rows[i].chosen), "fastest",
                                       ring_one(&rows[i].fastest), "near",
                                       (int)rows[i].near));
  json_t *doc = json_pack("{s:s,s:s,s:f,s:b,s:s,s:b,s:f,s:i,s:o}", "preset", c->name,
                          "profile", xs_profile_name(profile), "cp", c->cp, "causal",
                          c->causal, "kernel", c->kernel, "backward", c->backward,
                          "tolerance", tolerance, "changes", (int)changes, "grid", a);
  return xs__api_dump(doc, 12, out, err);
}

/* ---- validation against published timings ---- */

typedef struct {
  const char *arm;
  const char *source;
} moe_keep;

static int keep_arm_source(const xs_validate_row *r, void *ctx) {
  const moe_keep *k = ctx;
  return (!k->arm || !strcmp(r->arm, k->arm)) &&
         (!k->source || !strcmp(r->source, k->source));
}

/* MegaMoE's summary beyond the medians: every model per arm, the signed
 * bias per arm and token band, the pairs of arms, the pull-end rows, and
 * what leaving a source or a kernel out does (nothing is fitted to these
 * timings: the same predictions, listed so) */
static xs_status moe_summary(const xs_validate_set *set, const char **arms,
                             size_t narms, json_t *sum, xs_error *err) {
  static const char *const mn[XS_MODEL_COUNT] = {"burstgap", "blocking", "serial",
                                                 "ideal"};
  json_t *bym = json_object(), *bias = json_array(), *pl = json_array(),
         *pulls = json_array(), *bysrc = json_object(), *byk = json_object();
  for (size_t k = 0; k < narms; k++) {
    json_t *a = json_object();
    for (int m = 0; m < XS_MODEL_COUNT; m++) {
      size_t n;
      double mx, md = xs_validate_median_model(set, (xs_model)m, xs_validate_same_arm,
                                               (void *)arms[k], &n, &mx);
      json_object_set_new(a, mn[m], json_pack("{s:I,s:o,s:o}", "rows", (json_int_t)n,
          "median_abs_error", isnan(md) ? json_null() : json_real(md),
          "max_abs_error", isnan(mx) ? json_null() : json_real(mx)));
    }
    json_object_set_new(bym, arms[k], a);
    for (int b = 0; b < XS_VALIDATE_BANDS; b++) {
      const char *label;
      size_t n;
      double v = xs_validate_band_bias(set, arms[k], b, &label, &n);
      if (!isnan(v))
        json_array_append_new(bias, json_pack("{s:s,s:s,s:I,s:f}", "arm", arms[k],
            "band", label, "rows", (json_int_t)n, "signed_median_error", v));
    }
  }
  xs_validate_pair *p;
  size_t np;
  xs_status st = xs_validate_pair_list(set, 0.05, &p, &np, err);
  if (st) {
    json_decref(bym), json_decref(bias), json_decref(pl), json_decref(pulls);
    json_decref(bysrc), json_decref(byk);
    return st;
  }
  xs_validate_pair_stats ps;
  xs_validate_pair_stats_of(p, np, &ps);
  for (size_t i = 0; i < np; i++) {
    const xs_validate_row *a = &set->rows[p[i].a], *b = &set->rows[p[i].b];
    json_array_append_new(pl, json_pack("{s:I,s:I,s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:b}",
        "line_a", (json_int_t)a->line, "line_b", (json_int_t)b->line, "source", a->source,
        "arm_a", a->arm, "arm_b", b->arm, "tokens", a->tokens, "measured_ratio",
        p[i].measured_ratio, "predicted_ratio", p[i].predicted_ratio, "ratio_error",
        p[i].predicted_ratio / p[i].measured_ratio - 1, "agree", p[i].agree));
  }
  free(p);
  for (size_t i = 0; i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    if (r->metric[0] && strcmp(r->metric, "time"))
      json_array_append_new(pulls, json_pack("{s:I,s:s,s:s,s:f,s:o,s:f,s:f,s:f}",
          "line", (json_int_t)r->line, "metric", r->metric, "arm", r->arm, "tokens",
          r->tokens, "knobs", xs__api_moe_knobs(&r->knobs), "measured_us", r->measured_us,
          "predicted_us", r->predicted_us, "error", r->error));
  }
  /* leave one out: no constant is fitted to kernel timings */
  size_t nsrc = xs_validate_distinct(set, 1, NULL, 0);
  const char **src = malloc((nsrc + 1) * sizeof *src);
  if (src) {
    xs_validate_distinct(set, 1, src, nsrc);
    for (size_t k = 0; k < nsrc; k++) {
      moe_keep kp = {NULL, src[k]};
      size_t n;
      double md = xs_validate_median(set, keep_arm_source, &kp, &n, NULL);
      json_object_set_new(bysrc, src[k], json_pack("{s:I,s:f,s:f}", "rows",
          (json_int_t)n, "median_abs_error", md, "left_out_median_abs_error", md));
    }
  }
  free(src);
  for (size_t k = 0; k < narms; k++) {
    size_t n;
    double md = xs_validate_median(set, xs_validate_same_arm, (void *)arms[k], &n, NULL);
    json_object_set_new(byk, arms[k], json_pack("{s:I,s:f,s:f}", "rows", (json_int_t)n,
        "median_abs_error", md, "left_out_median_abs_error", md));
  }
  json_object_set_new(sum, "by_model", bym);
  json_object_set_new(sum, "bias", bias);
  json_object_set_new(sum, "pairs", json_pack("{s:f,s:I,s:I,s:o,s:o,s:I,s:I,s:o}",
      "apart", 0.05, "pairs", (json_int_t)ps.pairs, "agree", (json_int_t)ps.agree,
      "median_ratio_error", isnan(ps.median_ratio_error) ? json_null()
                                                         : json_real(ps.median_ratio_error),
      "max_ratio_error", isnan(ps.max_ratio_error) ? json_null()
                                                   : json_real(ps.max_ratio_error),
      "wide", (json_int_t)ps.wide, "wide_kept", (json_int_t)ps.wide_kept, "list", pl));
  json_object_set_new(sum, "pull_end", pulls);
  json_object_set_new(sum, "fitted_constants", json_array());
  json_object_set_new(sum, "leave_one_out", json_pack("{s:o,s:o}", "by_source", bysrc,
                                                      "by_kernel", byk));
  return XS_OK;
}

xs_status xs_validate_json(const xs_validate_set *set, char **out, xs_error *err) {
  *out = NULL;
  /* arms in order of first appearance */
  size_t narms = xs_validate_distinct(set, 0, NULL, 0);
  const char **arms = malloc((narms + 1) * sizeof *arms);
  if (!arms)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_validate_distinct(set, 0, arms, narms);
  double mx, med = xs_validate_median(set, NULL, NULL, NULL, &mx);
  json_t *root = json_object(), *rows = json_array(), *byarm = json_object();
  for (size_t i = 0; i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    json_t *o = json_pack("{s:s,s:s,s:f,s:s,s:f,s:f,s:f}",
        "source", r->source, "gpu", r->gpu, "tokens", r->tokens, "arm", r->arm,
        "measured_us", r->measured_us, "predicted_us", r->predicted_us,
        "error", r->error);
    if (o && r->kind == 0) {
      const xs_moe_config *c = &r->config;
      json_object_set_new(o, "ep", json_real(c->ep));
      json_object_set_new(o, "hidden", json_real(c->hidden));
      json_object_set_new(o, "intermediate", json_real(c->intermediate));
      json_object_set_new(o, "experts", json_real(c->experts));
      json_object_set_new(o, "topk", json_real(c->topk));
      json_object_set_new(o, "metric", json_string(r->metric[0] ? r->metric : "time"));
      json_object_set_new(o, "knobs", xs__api_moe_knobs(&r->knobs));
      json_t *m = json_object();
      static const char *const mn[XS_MODEL_COUNT] = {"burstgap_us", "blocking_us",
                                                     "serial_us", "ideal_us"};
      for (int k = 0; k < XS_MODEL_COUNT; k++)
        json_object_set_new(m, mn[k], isnan(r->model_us[k]) ? json_null()
                                                            : json_real(r->model_us[k]));
      json_object_set_new(o, "models", m);
      if (!isnan(r->alt_us)) {
        json_object_set_new(o, "other_bound_us", json_real(r->alt_us));
        json_object_set_new(o, "other_bound_knobs", xs__api_moe_knobs(&r->alt_knobs));
      }
      if (r->breakdown.bound)
        json_object_set_new(o, "breakdown", xs__api_moe_breakdown(&r->breakdown));
    }
    if (o && r->kind == 1) {
      const xs_fa_breakdown *b = &r->fa_breakdown;
      json_object_set_new(o, "layout", json_string(r->layout));
      json_object_set_new(o, "pass", json_string(r->pass));
      json_object_set_new(o, "breakdown", json_pack("{s:f,s:f,s:f,s:f,s:f,s:s}",
          "compute_s", b->compute_s, "merge_s", b->merge_s, "fixed_s", b->fixed_s,
          "exposed_s", b->exposed_s, "imbalance_s", b->imbalance_s, "bound",
          b->bound ? b->bound : ""));
    }
    json_array_append_new(rows, o);
  }
  for (size_t k = 0; k < narms; k++) {
    size_t n;
    double m = xs_validate_median(set, xs_validate_same_arm, (void *)arms[k], &n, NULL);
    json_object_set_new(byarm, arms[k], json_pack("{s:I,s:f}", "rows",
                                                  (json_int_t)n, "median_abs_error", m));
  }
  json_t *sum = json_pack("{s:I,s:f,s:f,s:o}", "rows", (json_int_t)set->nrows,
                          "median_abs_error", med, "max_abs_error", mx, "by_arm", byarm);
  json_object_set_new(root, "rows", rows);
  json_object_set_new(root, "summary", sum);
  xs_status st = XS_OK;
  if (set->nrows && set->rows[0].kind == 0)
    st = moe_summary(set, arms, narms, sum, err);
  free(arms);
  if (st) {
    json_decref(root);
    return st;
  }
  return xs__api_dump(root, 10, out, err);
}
