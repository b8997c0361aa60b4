/*
 * results_json.c: the JSON documents of `xstage plan ... --json` and
 * `xstage validate ... --json`, made in the library so that the command
 * and the bindings print the same bytes from one producer.
 */
#include "internal.h"
#include "api/api.h"
#include "formats/jsonutil.h"

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
  XS__SIZE(xs_validate_group)
  XS__SIZE(xs_validate_set)
  XS__SIZE(xs_moe_fit_options)
  XS__SIZE(xs_moe_fit_result)
  XS__SIZE(xs_tuner_options)
  XS__SIZE(xs_tuner_choice)
  XS__SIZE(xs_interval)
#undef XS__SIZE
  return 0;
}

/* The keys that hold counts (tokens, ranks, SMs, tiles, shapes): whole
 * numbers, written as JSON integers (4096, not 4096.0) so that a reader
 * (Python's json, jq) gets an integer. Times, bytes, rates and ratios stay
 * reals, whatever their value, so that a key's type never changes from
 * one document to the next. */
static const char *const count_keys[] = {
    "tokens", "ep", "hidden", "intermediate", "experts", "topk", "shared_experts",
    "block_m", "block_n", "sms", "stagger", "pairs", "blocks", "l1_tiles", "l2_tiles",
    "waves", "lo", "seq", "cp", "heads_q", "heads_kv", "head_dim", "batch", "q_tiles",
    "kv_tiles", "iterations"};

static void counts_as_integers(json_t *j) {
  const char *key;
  json_t *v;
  size_t i;
  if (json_is_array(j)) {
    json_array_foreach(j, i, v)
      counts_as_integers(v);
    return;
  }
  json_object_foreach(j, key, v) {
    if (json_is_real(v)) {
      double x = json_real_value(v);
      for (i = 0; i < sizeof count_keys / sizeof *count_keys; i++)
        if (!strcmp(key, count_keys[i]) && x == floor(x) && fabs(x) <= 9007199254740992.0) {
          json_object_set_new(j, key, json_integer((json_int_t)x));
          break;
        }
    } else {
      counts_as_integers(v);
    }
  }
}

xs_status xs__api_dump(json_t *doc, size_t precision, char **out, xs_error *err) {
  if (doc)
    counts_as_integers(doc);
  *out = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(precision)) : NULL;
  json_decref(doc);
  if (!*out)
    return xs__fail(err, XS_NOMEM, "out of memory, or a name that is not UTF-8");
  return XS_OK;
}

/* ---- MegaMoE ---- */

/* A schedule's knobs: the tile, and the knob of its kernel (experts per
 * wave, warm-up waves, lag and group); a knob the schedule lacks is
 * absent, and an order of all L1 first (lag of every unit) is that
 * order, not a lag. */
json_t *xs__api_moe_knobs(xs_moe_schedule s, const xs_moe_pattern *k) {
  json_t *o = json_pack("{s:I,s:I}", "block_m", (json_int_t)k->block_m, "block_n",
                        (json_int_t)k->block_n);
  switch (s) {
  case XS_MOE_FUSED_WAVE:
    json_object_set_new(o, "experts_per_wave", json_integer(k->experts_per_wave));
    break;
  case XS_MOE_FUSED_DYNAMIC:
    json_object_set_new(o, "warmup", json_integer(k->warmup));
    break;
  case XS_MOE_L1_THEN_L2:
  case XS_MOE_INTERLEAVED:
  case XS_MOE_FUSED_LAG:
    if (k->lag >= XS_MOE_LAG_ALL) {
      json_object_set_new(o, "order", json_string("all-l1-first"));
    } else {
      json_object_set_new(o, "lag", json_integer(k->lag));
      json_object_set_new(o, "group", json_integer(k->group));
    }
    break;
  default:
    break;
  }
  return o;
}

static json_t *call_arg_json(const xs_moe_call_arg *a) {
  if (a->kind == XS_MOE_ARG_BOOL)
    return json_boolean(a->value[0]);
  if (a->kind == XS_MOE_ARG_TUPLE) {
    json_t *t = json_array();
    for (unsigned j = 0; j < a->count && j < 3; j++)
      json_array_append_new(t, json_integer(a->value[j]));
    return t;
  }
  return json_integer(a->value[0]);
}

json_t *xs__api_moe_call(const xs_moe_call *k) {
  json_t *calls = json_array();
  for (size_t i = 0; i < k->nsteps; i++) {
    const xs_moe_call_step *st = &k->steps[i];
    json_t *args = json_object();
    for (size_t j = 0; j < st->nargs; j++)
      json_object_set_new(args, st->args[j].name, call_arg_json(&st->args[j]));
    char py[512];
    json_array_append_new(calls, json_pack("{s:s,s:s,s:s,s:o,s:s,s:s}", "call",
        st->function, "returns", st->assign, "given", st->tensors, "arguments", args,
        "does", st->does, "python", xs_moe_call_step_text(st, py, sizeof py)));
  }
  json_t *picks = json_object();
  static const struct {
    unsigned bit;
    const char *name;
    size_t at;
  } knob[] = {{XS_MOE_KNOB_BLOCK_M, "block_m", offsetof(xs_moe_pattern, block_m)},
              {XS_MOE_KNOB_BLOCK_N, "block_n", offsetof(xs_moe_pattern, block_n)},
              {XS_MOE_KNOB_EXPERTS_PER_WAVE, "experts_per_wave",
               offsetof(xs_moe_pattern, experts_per_wave)},
              {XS_MOE_KNOB_WARMUP, "warmup", offsetof(xs_moe_pattern, warmup)},
              {XS_MOE_KNOB_LAG, "lag", offsetof(xs_moe_pattern, lag)},
              {XS_MOE_KNOB_GROUP, "group", offsetof(xs_moe_pattern, group)}};
  for (size_t i = 0; i < sizeof knob / sizeof knob[0]; i++)
    if (k->picks_mask & knob[i].bit)
      json_object_set_new(picks, knob[i].name,
          json_integer(*(const unsigned *)((const char *)&k->picks + knob[i].at)));
  return json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:s,s:o,s:o}", "label", k->label,
                   "name", k->kernel, "version", k->version, "source", k->source,
                   "calls", calls, "picks", picks, "order", k->order, "proposal",
                   k->proposal ? json_string(k->change) : json_null(), "validate",
                   k->arm[0] ? json_pack("{s:s,s:s}", "arm", k->arm, "knobs", k->knobs)
                             : json_null());
}

/* the call of schedule s with knobs k in x's config, or null */
json_t *xs__api_moe_call_in(xs__moe_calls *x, xs_moe_schedule s, const xs_moe_pattern *k) {
  xs_moe_call call;
  xs_error e;
  if (!x || xs__moe_calls_of(x, s, k, &call, &e))
    return json_null();
  return xs__api_moe_call(&call);
}

/* the calls of config c on prof, made once for a document's options (NULL
 * when there are none to make: every call is then null) */
static xs__moe_calls *calls_open(const xs_moe_config *c, const xs_profile *prof) {
  xs__moe_calls *x = NULL;
  xs_error e;
  if (c && prof && xs__moe_calls_open(c, prof, &x, &e))
    x = NULL;
  return x;
}

json_t *xs__api_moe_breakdown(const xs_moe_breakdown *b) {
  return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s}", "compute_s",
                   b->compute_s, "hbm_s", b->hbm_s, "fixed_s", b->fixed_s,
                   "dispatch_s", b->dispatch_s, "sync_s", b->sync_s, "link_s",
                   b->link_s, "stall_s", b->stall_s, "xstage_tail_s",
                   b->xstage_tail_s, "bound", b->bound ? b->bound : "");
}

/* A schedule's 80% interval at tokens per rank, in microseconds, for a
 * burstgap time in seconds (docs/validate.md "Intervals"); null where the
 * time is not a time */
json_t *xs__api_moe_interval_us(int schedule, double tokens, double time_s) {
  xs_interval iv;
  xs_error e;
  if (!(time_s > 0) || xs_moe_interval(schedule, tokens, &iv, &e))
    return json_null();
  return json_pack("[f,f]", time_s * iv.low * 1e6, time_s * iv.high * 1e6);
}

json_t *xs__api_moe_schedules(const xs_moe_config *c, const xs_profile *prof,
                              const xs_moe_result *r) {
  json_t *s = json_object();
  xs__moe_calls *x = calls_open(c, prof);
  for (int k = 0; k < XS_MOE_SCHEDULES; k++)
    json_object_set_new(s, xs_moe_schedule_name((xs_moe_schedule)k),
        json_pack("{s:f,s:o,s:f,s:f,s:f,s:o,s:o,s:o}", "burstgap_s", r->time_s[k][0],
                  "interval_us", xs__api_moe_interval_us(k, c->tokens, r->time_s[k][0]),
                  "blocking_s", r->time_s[k][1], "serial_s", r->time_s[k][2],
                  "ideal_s", r->time_s[k][3], "knobs",
                  xs__api_moe_knobs((xs_moe_schedule)k, &r->knobs[k]), "kernel",
                  xs__api_moe_call_in(x, (xs_moe_schedule)k, &r->knobs[k]),
                  "breakdown", xs__api_moe_breakdown(&r->breakdown[k])));
  xs__moe_calls_close(x);
  return s;
}

/* An option, with its call in x (the config at the option's token count
 * on the profile) and its 80% interval there */
static json_t *option_json(const xs_moe_option *o, xs__moe_calls *x, double tokens) {
  if (isnan(o->time_s))
    return json_null();
  const char *rule = xs_moe_rule_name(o->schedule, o->rule);
  return json_pack("{s:s,s:s,s:i,s:f,s:o,s:o,s:o}", "schedule",
                   xs_moe_schedule_name(o->schedule), "rule", rule ? rule : "finer",
                   "away", (int)o->away, "time_s", o->time_s, "interval_us",
                   xs__api_moe_interval_us(o->schedule, tokens, o->time_s), "knobs",
                   xs__api_moe_knobs(o->schedule, &o->knobs), "kernel",
                   xs__api_moe_call_in(x, o->schedule, &o->knobs));
}

/* whether the pick is a clear win over its runner-up (xs_moe_verdict_of) */
static json_t *verdict_json(const xs_moe_pick *p) {
  xs_moe_verdict v;
  xs_error e;
  if (xs_moe_verdict_of(p, &v, &e) || v.clear < 0)
    return json_null();
  return json_pack("{s:f,s:[f,f],s:s,s:b}", "ratio", v.ratio, "ratio_interval", v.low, v.high,
                   "call", v.clear ? "clear" : "too close to call", "pooled",
                   v.interval.pooled);
}

static json_t *pick_json(const xs_moe_pick *p, double tol, const xs_moe_config *config,
                         const xs_profile *prof) {
  xs_moe_config c = *config;
  c.tokens = p->tokens;
  xs__moe_calls *x = calls_open(&c, prof);
  json_t *near = json_array();
  double t = p->tokens;
  for (size_t i = 0; i < p->near; i++)
    json_array_append_new(near, option_json(&p->near_set[i], x, t));
  json_t *o = json_pack("{s:f,s:f,s:f,s:o,s:o,s:o,s:o,s:o}", "tokens", t, "lo", p->lo,
                        "tolerance", tol, "chosen", option_json(&p->chosen, x, t), "best",
                        option_json(&p->best, x, t), "runner_up",
                        option_json(&p->runner_up, x, t), "near", near, "verdict",
                        verdict_json(p));
  xs__moe_calls_close(x);
  return o;
}

/* A sensitivity row (xs_moe_sensitivity and xs_fa_sensitivity share its
 * fields; `choice` holds the new choice at each factor, or null) */
static json_t *sens_row(const xs_profile *prof, const char *param, double value,
                        const char *kind, double lo, double hi, const char *settle,
                        const double *factor, const double *time_change,
                        const double *replan_change, json_t *choice) {
  json_t *f = json_array(), *tc = json_array(), *rc = json_array();
  for (int k = 0; k < XS_MOE_SENS_FACTORS; k++) {
    json_array_append_new(f, json_real(factor[k]));
    json_array_append_new(tc, isnan(time_change[k]) ? json_null() : json_real(time_change[k]));
    json_array_append_new(rc, isnan(replan_change[k]) ? json_null()
                                                      : json_real(replan_change[k]));
  }
  const char *src = xs_profile_number_source(prof, param);
  json_t *row = json_pack("{s:s,s:f,s:s?,s:o,s:o,s:o,s:o}", "param", param, "value", value,
                          "source", src, "factor", f, "time_change", tc, "replan_change",
                          rc, "new_choice", choice);
  /* the range from the source's kind, and what would measure it */
  json_object_set_new(row, "kind", kind[0] ? json_string(kind) : json_null());
  json_object_set_new(row, "range", json_pack("[f,f]", lo, hi));
  json_object_set_new(row, "settle", json_string(settle));
  return row;
}

static json_t *sensitivity_json(const xs_profile *prof, const xs_moe_config *c,
                                const xs_moe_sensitivity *s, size_t n) {
  json_t *a = json_array();
  xs__moe_calls *x = calls_open(c, prof);
  for (size_t i = 0; i < n; i++) {
    json_t *ch = json_array();
    for (int k = 0; k < XS_MOE_SENS_FACTORS; k++)
      json_array_append_new(ch, s[i].changed[k] ? option_json(&s[i].choice[k], x, c->tokens)
                                                : json_null());
    json_array_append_new(a, sens_row(prof, s[i].param, s[i].value, s[i].kind, s[i].lo,
                                      s[i].hi, s[i].settle, s[i].factor, s[i].time_change,
                                      s[i].replan_change, ch));
  }
  xs__moe_calls_close(x);
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
  json_object_set_new(o, "schedules", xs__api_moe_schedules(c, prof, r));
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
  xs_status st = XS_OK;
  if (sensitivity) { /* first: work past its bound is refused before any plan */
    if (!(sens = malloc(XS_MOE_SENS_MAX * sizeof *sens)))
      st = xs__fail(err, XS_NOMEM, "out of memory");
    else
      st = xs_moe_sensitivity_run(config, profile, tolerance, schedules, &pick, sens,
                                  &nsens, err);
  }
  if (!st)
    st = xs_moe_plan(config, profile, &r, err);
  if (!st && !sensitivity)
    st = xs_moe_recommend(config, profile, tolerance, schedules, &pick, err);
  xs_moe_certainty cert;
  if (!st)
    st = xs_moe_certainty_of(config, profile, &pick, tolerance, &cert, err);
  if (!st) {
    json_t *o = moe_plan_doc(config, profile, &r);
    json_t *rec = pick_json(&pick, tolerance, config, profile);
    xs__moe_calls *x = calls_open(config, profile);
    json_object_set_new(rec, "certainty", json_pack("{s:o,s:o,s:I,s:b}",
        "runner_up_margin", isnan(cert.runner_up_margin) ? json_null()
                                                         : json_real(cert.runner_up_margin),
        "finer", option_json(&cert.finer, x, pick.tokens), "settings",
        (json_int_t)cert.settings,
        "holds", cert.holds));
    xs_moe_option ship;
    if (!(st = xs_moe_fastest_shipping(config, profile, schedules, &ship, err)))
      json_object_set_new(rec, "fastest_shipping", option_json(&ship, x, config->tokens));
    xs__moe_calls_close(x);
    json_object_set_new(o, "recommended", rec);
    if (sens)
      json_object_set_new(o, "sensitivity", sensitivity_json(profile, config, sens, nsens));
    if (st)
      json_decref(o);
    else
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
    json_array_append_new(rows, pick_json(xs_moe_table_pick(table, i), tolerance, config,
                                          profile));
  json_t *doc = json_pack("{s:s,s:s,s:f,s:f,s:i,s:o}", "preset", config->name,
                          "profile", xs_profile_name(profile), "ep", config->ep,
                          "tolerance", tolerance, "changes", (int)changes, "grid", rows);
  return xs__api_dump(doc, 12, out, err);
}

/* ---- ring attention ---- */

static json_t *breakdown_json(const xs_fa_breakdown *b) {
  return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:i,s:s}", "compute_s", b->compute_s,
                   "merge_s", b->merge_s, "fixed_s", b->fixed_s, "interference_s",
                   b->interference_s, "host_s", b->host_s, "exposed_s", b->exposed_s, "imbalance_s",
                   b->imbalance_s, "stall_s", b->stall_s, "free_s", b->free_s,
                   "forward_sms", (int)b->forward_sms, "bound", b->bound ? b->bound : "");
}

json_t *xs__api_fa_call(const xs_fa_call *k) {
  return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o}", "label", k->label,
                   "kernel", k->kernel, "function", k->function, "package", k->package,
                   "passes", k->passes, "ring", k->ring, "way", k->way, "source",
                   k->source, "ring_source", k->ring_source ? k->ring_source : "",
                   "proposal", k->proposal ? json_string(k->change) : json_null());
}

/* a ring with what to call for it (config c on prof; null when unknown) */
static json_t *ring_one(const xs_fa_ring *r, const xs_fa_config *c,
                        const xs_profile *prof) {
  xs_fa_call call;
  xs_error e;
  json_t *k = c && prof && !xs_fa_call_of(c, prof, r->path, r->layout, &call, &e)
                  ? xs__api_fa_call(&call)
                  : json_null();
  return json_pack("{s:s,s:s,s:f,s:o,s:o}", "path", xs_fa_path_name(r->path), "layout",
                   r->layout < 0 ? "-" : xs_fa_layout_name((xs_fa_layout)r->layout),
                   "time_s", r->time_s, "breakdown", breakdown_json(&r->breakdown),
                   "kernel", k);
}

json_t *xs__api_rings(const xs_fa_ring *r, size_t n, const xs_fa_config *c,
                      const xs_profile *prof) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, ring_one(&r[i], c, prof));
  return a;
}

/* piggyback over sequential, over the faster dedicated way, and the
 * same under blocking (the config's layout) */
void xs__api_fa_speedups(const xs_fa_result *r, double *speedup, double *vs_dedicated,
                         double *blocking) {
  const double *seq = r->time_s[XS_FA_PATH_SEQUENTIAL], *pig = r->time_s[XS_FA_PATH_PIGGYBACK];
  double ded = fmin(r->time_s[XS_FA_PATH_STREAM][XS_MODEL_BURSTGAP],
                    r->time_s[XS_FA_PATH_SMS][XS_MODEL_BURSTGAP]);
  *speedup = seq[XS_MODEL_BURSTGAP] / pig[XS_MODEL_BURSTGAP];
  *vs_dedicated = ded / pig[XS_MODEL_BURSTGAP];
  *blocking = seq[XS_MODEL_BLOCKING] / pig[XS_MODEL_BLOCKING];
}

/* the plan's document (NULL when out of memory) */
static json_t *fa_plan_doc(const xs_fa_config *config, const xs_profile *profile,
                           const xs_fa_result *r) {
  json_t *o = json_pack("{s:s,s:s,s:f,s:f,s:b,s:s,s:s,s:b,s:f,s:s}", "preset", config->name,
                        "profile", xs_profile_name(profile), "seq", config->seq, "cp",
                        config->cp, "causal", config->causal, "layout",
                        config->causal ? xs_fa_layout_name((xs_fa_layout)config->layout) : "-",
                        "kernel", config->kernel, "backward", config->backward, "batch",
                        config->batch, "timing", xs_fa_timing_name((xs_fa_timing)config->timing));
  if (!o)
    return NULL;
  const xs_fa_workload *w = &r->work;
  json_object_set_new(o, "workload", json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:b}",
      "step_flops", w->step_flops, "step_s", w->step_s, "kv_B", w->kv_B,
      "q_tiles", w->q_tiles, "kv_tiles", w->kv_tiles, "iterations", w->iterations,
      "waves", w->waves, "sms", w->sms, "stage_B", w->stage_B, "stages", w->stages,
      "measured", w->measured));
  json_t *paths = json_object();
  for (int p = 0; p < XS_FA_PATHS; p++) {
    json_t *po = json_object();
    for (int m = 0; m < XS_MODEL_COUNT; m++) {
      char k[32];
      snprintf(k, sizeof k, "%s_s", xs_model_name((xs_model)m));
      json_object_set_new(po, k, json_real(r->time_s[p][m]));
    }
    json_object_set_new(po, "breakdown", breakdown_json(&r->breakdown[p]));
    xs_fa_call call;
    xs_error e;
    json_object_set_new(po, "kernel",
                        xs_fa_call_of(config, profile, (xs_fa_path)p, -1, &call, &e)
                            ? json_null()
                            : xs__api_fa_call(&call));
    json_object_set_new(paths, xs_fa_path_name((xs_fa_path)p), po);
  }
  json_object_set_new(o, "paths", paths);
  json_object_set_new(o, "best", json_string(xs_fa_path_name(r->best)));
  double sp, sd, sb;
  xs__api_fa_speedups(r, &sp, &sd, &sb);
  json_object_set_new(o, "speedup", json_real(sp));
  json_object_set_new(o, "speedup_vs_dedicated", json_real(sd));
  json_object_set_new(o, "blocking_speedup", json_real(sb));
  json_object_set_new(o, "ring", xs__api_rings(r->rings, r->nrings, config, profile));
  json_object_set_new(o, "searched", json_integer((json_int_t)r->searched));
  return o;
}

/* the plan's document, with the sensitivity run's choice and rows when
 * sens is set */
static xs_status fa_plan_json(const xs_fa_config *config, const xs_profile *profile,
                              int sens, double tolerance, xs_fa_result *result, char **out,
                              xs_error *err) {
  *out = NULL;
  xs_fa_result *r = malloc(sizeof *r);
  xs_fa_sensitivity *rows = sens ? malloc(XS_FA_SENS_MAX * sizeof *rows) : NULL;
  xs_fa_ring base;
  size_t n = 0;
  xs_status st = XS_OK;
  /* the kernel the GPU runs, which the document names */
  xs_fa_config rc;
  if ((st = xs_fa_kernel_resolve(config, profile, &rc, err))) {
    free(r);
    free(rows);
    return st;
  }
  config = &rc;
  if (!r || (sens && !rows))
    st = xs__fail(err, XS_NOMEM, "out of memory");
  if (!st && sens)
    st = xs_fa_sensitivity_run(config, profile, tolerance, &base, rows, &n, err);
  if (!st)
    st = xs_fa_plan(config, profile, r, err);
  if (!st) {
    json_t *o = fa_plan_doc(config, profile, r);
    if (o && sens) {
      json_object_set_new(o, "recommended", json_pack("{s:f,s:o}", "tolerance", tolerance,
                                                      "chosen", ring_one(&base, config,
                                                                         profile)));
      json_t *a = json_array();
      for (size_t i = 0; i < n; i++) {
        const xs_fa_sensitivity *s = &rows[i];
        json_t *ch = json_array();
        for (int k = 0; k < XS_MOE_SENS_FACTORS; k++)
          json_array_append_new(ch, s->changed[k] ? ring_one(&s->choice[k], config, profile)
                                                  : json_null());
        json_array_append_new(a, sens_row(profile, s->param, s->value, s->kind, s->lo, s->hi,
                                          s->settle, s->factor, s->time_change,
                                          s->replan_change, ch));
      }
      json_object_set_new(o, "sensitivity", a);
    }
    st = xs__api_dump(o, 12, out, err);
  }
  if (!st && result)
    *result = *r;
  free(r);
  free(rows);
  return st;
}

xs_status xs_fa_plan_json(const xs_fa_config *config, const xs_profile *profile,
                          xs_fa_result *result, char **out, xs_error *err) {
  return fa_plan_json(config, profile, 0, 0, result, out, err);
}

xs_status xs_fa_plan_sensitivity_json(const xs_fa_config *config, const xs_profile *profile,
                                      double tolerance, xs_fa_result *result, char **out,
                                      xs_error *err) {
  return fa_plan_json(config, profile, 1, tolerance, result, out, err);
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
    const xs_fa_ring *b = xs_fa_ring_best(r, nr);
    if (!b)
      return xs__fail(err, XS_INVALID, "seq %g: no ring planned", seq[i]);
    rows[i].seq = seq[i];
    rows[i].fastest = *b;
    rows[i].near = 0;
    for (size_t k = 0; k < nr; k++)
      rows[i].near += r[k].path != XS_FA_LOCAL && r[k].time_s <= b->time_s * (1 + tolerance);
    rows[i].chosen = *xs__fa_ring_keep(r, nr, i ? &rows[i - 1].chosen : NULL, tolerance);
    nchanges += i && !xs_fa_same_ring(&rows[i].chosen, &rows[i - 1].chosen);
  }
  if (changes)
    *changes = nchanges;
  return XS_OK;
}

static char *fa_table_header(const xs_fa_config *config, const xs_profile *prof,
                         const xs_fa_table_row *rows, size_t n, double tol,
                         const char *P) {
  xs_fa_config c[1];
  xs_error e;
  if (xs_c_header_prefix(P, NULL) || xs_fa_kernel_resolve(config, prof, c, &e))
    return NULL;
  char up[65];
  xs__c_upper(P, up);
  char *name = xs_c_comment_text(c->name), *pname = xs_c_comment_text(xs_profile_name(prof)),
       *kernel = xs_c_comment_text(c->kernel);
  xs__sbuf b = {0};
  b.oom = !name || !pname || !kernel;
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
             "  double predicted_us;\n} %s_row;\n\n"
             "static const %s_row %s_table[%s_ROWS] = {\n",
          XSTAGE_VERSION, name ? name : "", c->cp, c->causal ? "causal" : "full",
          kernel ? kernel : "",
          c->backward ? "forward and backward" : "forward", pname ? pname : "", tol, P,
          up, up, up, n, P, P, P, P, up);
  for (size_t i = 0; i < n; i++) {
    const xs_fa_ring *pick = &rows[i].chosen;
    double lo = i ? fmin(rows[i].seq, ceil(sqrt(rows[i - 1].seq * rows[i].seq)))
                  : rows[0].seq;
    const char *path = xs_fa_path_name(pick->path),
               *layout = pick->layout < 0 ? "-" : xs_fa_layout_name((xs_fa_layout)pick->layout);
    /* rows come from the caller: every number a C constant, every name a
     * known one, or no header */
    if (!xs__c_value_ok(lo, 1) || !xs__c_value_ok(rows[i].seq, 1) ||
        !xs__c_value_ok(pick->time_s * 1e6, 0) || !path || !layout) {
      b.oom = 1;
      break;
    }
    xs__sb_printf(&b, "  {%.0f, %.0f, \"%s\", \"%s\", %u, %.17g},\n", lo, rows[i].seq,
                  path, layout, pick->breakdown.forward_sms, pick->time_s * 1e6);
  }
  xs__c_lookup(&b, "row", P, up, "seq");
  free(name);
  free(pname);
  free(kernel);
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

/* numbers with a point whatever the host's locale */
char *xs_fa_table_header(const xs_fa_config *config, const xs_profile *prof,
                         const xs_fa_table_row *rows, size_t n, double tol,
                         const char *P) {
  void *loc = xs__numeric_c();
  char *s = fa_table_header(config, prof, rows, n, tol, P);
  xs__numeric_restore(loc);
  return s;
}

xs_status xs_fa_table_json(const xs_fa_config *config, const xs_profile *profile,
                           const xs_fa_table_row *rows, size_t n, double tolerance,
                           char **out, xs_error *err) {
  xs_fa_config c[1];
  xs_status st = xs_fa_kernel_resolve(config, profile, c, err);
  if (st)
    return st;
  size_t changes = 0;
  for (size_t i = 1; i < n; i++)
    changes += !xs_fa_same_ring(&rows[i].chosen, &rows[i - 1].chosen);
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, json_pack("{s:f,s:o,s:o,s:i}", "seq", rows[i].seq,
                                       "chosen", ring_one(&rows[i].chosen, c, profile),
                                       "fastest", ring_one(&rows[i].fastest, c, profile),
                                       "near",
                                       (int)rows[i].near));
  json_t *doc = json_pack("{s:s,s:s,s:f,s:b,s:s,s:b,s:f,s:i,s:o}", "preset", c->name,
                          "profile", xs_profile_name(profile), "cp", c->cp, "causal",
                          c->causal, "kernel", c->kernel, "backward", c->backward,
                          "tolerance", tolerance, "changes", (int)changes, "grid", a);
  return xs__api_dump(doc, 12, out, err);
}

/* ---- validation against published timings ---- */

/* a number, or null where there is none (NAN: no row to take it from) */
static json_t *real_or_null(double v) {
  return isnan(v) ? json_null() : json_real(v);
}

/* ring attention: a row's layout, pass, every model's prediction and the
 * free ring, and where its time goes; 1 when a value could not be set */
static int fa_row_json(json_t *o, const xs_validate_row *r) {
  int bad = xs__jput(o, "layout", json_string(r->layout));
  bad |= xs__jput(o, "pass", json_string(r->pass));
  json_t *m = json_object();
  for (int k = 0; k < XS_MODEL_COUNT && m; k++) {
    char key[32];
    snprintf(key, sizeof key, "%s_us", xs_model_name((xs_model)k));
    bad |= xs__jput(m, key, real_or_null(r->model_us[k]));
  }
  bad |= xs__jput(m, "free_us", real_or_null(r->fa_breakdown.free_s * 1e6));
  bad |= xs__jput(o, "models", m);
  bad |= xs__jput(o, "breakdown", breakdown_json(&r->fa_breakdown));
  return bad;
}

/* ring attention's summary: every model's median over all rows (and the
 * free ring's), and where communication shows; 1 when a value could not
 * be written (*st set when the summary itself failed) */
static int fa_summary_json(const xs_validate_set *set, json_t *sum, xs_status *st,
                           xs_error *err) {
  xs_validate_fa_stats s;
  if ((*st = xs_validate_fa_summary(set, 0.10, &s, err)))
    return 1;
  json_t *bym = json_object();
  int bad = !bym;
  for (int k = 0; k < XS_MODEL_COUNT && !bad; k++) {
    size_t n;
    double m = xs_validate_median_model(set, (xs_model)k, NULL, NULL, &n, NULL);
    bad |= xs__jput(bym, xs_model_name((xs_model)k),
                    json_pack("{s:I,s:o}", "rows", (json_int_t)n, "median_abs_error",
                              real_or_null(m)));
  }
  bad |= xs__jput(bym, "free", json_pack("{s:I,s:o}", "rows", (json_int_t)s.rows,
                                         "median_abs_error", real_or_null(s.free_median_all)));
  bad |= xs__jput(sum, "by_model", bym);
  /* the signed median per arm and sequence band */
  json_t *bias = json_array();
  bad |= !bias;
  for (size_t i = 0; i < set->nrows && !bad; i++) {
    const char *arm = set->rows[i].arm;
    size_t j = 0;
    while (j < i && strcmp(set->rows[j].arm, arm))
      j++;
    if (j < i) /* the arm's first row lists it */
      continue;
    for (int b = 0; b < XS_VALIDATE_FA_BANDS; b++) {
      const char *label;
      size_t n;
      double v = xs_validate_fa_band_bias(set, arm, b, &label, &n);
      if (!isnan(v))
        bad |= xs__jappend(bias, json_pack("{s:s,s:s,s:I,s:f}", "arm", arm, "band", label,
                                           "rows", (json_int_t)n, "signed_median_error", v));
    }
  }
  bad |= xs__jput(sum, "bias", bias);
  bad |= xs__jput(sum, "communication", json_pack(
      "{s:f,s:I,s:I,s:I,s:o,s:o,s:o,s:{s:o,s:o,s:o}}", "threshold", 0.10, "rings",
      (json_int_t)s.rings, "shows", (json_int_t)s.shows, "shows_sources",
      (json_int_t)s.shows_sources, "median_abs_error", real_or_null(s.median_shows),
      "max_abs_error", real_or_null(s.max_shows), "median_ratio_error",
      real_or_null(s.median_ratio_shows), "free", "median_abs_error_all",
      real_or_null(s.free_median_all), "median_abs_error", real_or_null(s.free_median_shows),
      "median_ratio_error", real_or_null(s.free_median_ratio_shows)));
  return bad;
}

/* MegaMoE's summary beyond the medians: every model per arm, the signed
 * bias per arm and token band, the pairs of arms, the pull-end rows, and
 * what leaving a source or a kernel out does (nothing is fitted to these
 * timings: the same predictions, listed so). 1 when a value could not be
 * written (sum is then incomplete and not to be printed). */
static int moe_summary(const xs_validate_set *set, const xs_validate_group *arms,
                       size_t narms, const xs_validate_group *sources, size_t nsources,
                       json_t *sum, xs_status *st, xs_error *err) {
  json_t *bym = json_object(), *bias = json_array(), *pl = json_array(),
         *pulls = json_array(), *bysrc = json_object(), *byk = json_object();
  int bad = !bym || !bias || !pl || !pulls || !bysrc || !byk;
  for (size_t k = 0; k < narms && !bad; k++) {
    json_t *a = json_object();
    for (int m = 0; m < XS_MODEL_COUNT; m++) {
      size_t n;
      double mx, md = xs_validate_median_model(set, (xs_model)m, xs_validate_same_arm,
                                               (void *)arms[k].name, &n, &mx);
      bad |= xs__jput(a, xs_model_name((xs_model)m),
                      json_pack("{s:I,s:o,s:o}", "rows", (json_int_t)n, "median_abs_error",
                                real_or_null(md), "max_abs_error", real_or_null(mx)));
    }
    bad |= xs__jput(bym, arms[k].name, a);
    for (int b = 0; b < XS_VALIDATE_BANDS; b++) {
      const char *label;
      size_t n;
      double v = xs_validate_band_bias(set, arms[k].name, b, &label, &n);
      if (!isnan(v))
        bad |= xs__jappend(bias, json_pack("{s:s,s:s,s:I,s:f}", "arm", arms[k].name,
                                           "band", label, "rows", (json_int_t)n,
                                           "signed_median_error", v));
    }
  }
  xs_validate_pair *p = NULL;
  size_t np = 0;
  if (!bad && (*st = xs_validate_pair_list(set, 0.05, &p, &np, err)))
    bad = 1;
  xs_validate_pair_stats ps;
  xs_validate_pair_stats_of(p, np, &ps);
  for (size_t i = 0; i < np && !bad; i++) {
    const xs_validate_row *a = &set->rows[p[i].a], *b = &set->rows[p[i].b];
    bad |= xs__jappend(pl, json_pack("{s:I,s:I,s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:b}",
        "line_a", (json_int_t)a->line, "line_b", (json_int_t)b->line, "source", a->source,
        "arm_a", a->arm, "arm_b", b->arm, "tokens", a->tokens, "measured_ratio",
        p[i].measured_ratio, "predicted_ratio", p[i].predicted_ratio, "ratio_error",
        p[i].predicted_ratio / p[i].measured_ratio - 1, "agree", p[i].agree));
  }
  free(p);
  for (size_t i = 0; i < set->nrows && !bad; i++) {
    const xs_validate_row *r = &set->rows[i];
    if (r->metric[0] && strcmp(r->metric, "time"))
      bad |= xs__jappend(pulls, json_pack("{s:I,s:s,s:s,s:f,s:o,s:f,s:f,s:f}",
          "line", (json_int_t)r->line, "metric", r->metric, "arm", r->arm, "tokens",
          r->tokens, "knobs", xs__api_moe_knobs((xs_moe_schedule)xs_moe_schedule_from_name(r->arm), &r->knobs), "measured_us", r->measured_us,
          "predicted_us", r->predicted_us, "error", r->error));
  }
  /* leave one out: no constant is fitted to these rows, so the medians
   * without a source's or a kernel's rows are their own; the sequential
   * arm's EP constants are fitted to EP timings (fitted_constants, and
   * refit below) */
  for (size_t k = 0; k < nsources + narms && !bad; k++) {
    const xs_validate_group *g = k < nsources ? &sources[k] : &arms[k - nsources];
    bad |= xs__jput(k < nsources ? bysrc : byk, g->name,
                    json_pack("{s:I,s:o,s:o}", "rows", (json_int_t)g->rows,
                              "median_abs_error", real_or_null(g->median_abs_error),
                              "left_out_median_abs_error",
                              real_or_null(g->median_abs_error)));
  }
  bad |= xs__jput(sum, "by_model", bym);
  bad |= xs__jput(sum, "bias", bias);
  bad |= xs__jput(sum, "pairs", json_pack("{s:f,s:I,s:I,s:o,s:o,s:I,s:I,s:o}",
      "apart", 0.05, "pairs", (json_int_t)ps.pairs, "agree", (json_int_t)ps.agree,
      "median_ratio_error", real_or_null(ps.median_ratio_error), "max_ratio_error",
      real_or_null(ps.max_ratio_error), "wide", (json_int_t)ps.wide, "wide_kept",
      (json_int_t)ps.wide_kept, "list", pl));
  bad |= xs__jput(sum, "pull_end", pulls);
  /* the constants the sequential arm takes, fitted to EP timings */
  json_t *fc = json_array();
  for (size_t i = 0; i < XS_EP_CONSTANTS && !bad; i++)
    bad |= xs__jappend(fc, json_pack("{s:s,s:f,s:s,s:s,s:s}", "name", xs_ep_constant_name(i),
        "value", xs_ep_constant_value(i), "about", xs_ep_constant_about(i), "fitted_to",
        "published EP dispatch and combine timings (data/published/ep.csv; docs/ep.md "
        "\"Fitted constants\")", "used_by", "sequential"));
  bad |= xs__jput(sum, "fitted_constants", fc);
  if (set->refitted && !bad) {
    /* the sequential rows with the constants refitted without some EP
     * sources (xs_validate_megamoe_refit) */
    json_t *rc = json_object(), *rbs = json_object();
    for (size_t i = 0; i < XS_EP_CONSTANTS; i++)
      bad |= xs__jput(rc, xs_ep_constant_name(i), json_real(set->refit[i]));
    for (size_t k = 0; k < nsources && !bad; k++) {
      size_t m;
      double mb, ma = xs_validate_refit_median(set, sources[k].name, &mb, &m);
      if (m)
        bad |= xs__jput(rbs, sources[k].name, json_pack("{s:I,s:o,s:o}", "rows",
            (json_int_t)m, "median_abs_error", real_or_null(ma),
            "shipped_median_abs_error", real_or_null(mb)));
    }
    size_t n;
    double mb, ma = xs_validate_refit_median(set, NULL, &mb, &n);
    bad |= xs__jput(sum, "refit", json_pack("{s:s,s:I,s:I,s:o,s:{s:I,s:o,s:o},s:o}",
        "without", set->refit_without, "left_out_rows", (json_int_t)set->refit_left_out,
        "of_rows", (json_int_t)set->refit_rows, "constants", rc, "sequential", "rows",
        (json_int_t)n, "median_abs_error", real_or_null(ma),
        "shipped_median_abs_error", real_or_null(mb), "by_source", rbs));
  }
  bad |= xs__jput(sum, "leave_one_out", json_pack("{s:o,s:o}", "by_source", bysrc,
                                                  "by_kernel", byk));
  return bad;
}

json_t *xs__api_intervals_json(const xs_validate_set *set) {
  xs_validate_cover *c = NULL;
  size_t n = 0, rows = 0, inside = 0;
  xs_error err;
  if (xs_validate_coverage(set, &c, &n, &err))
    return NULL;
  json_t *cells = json_array();
  int bad = !cells;
  double *hw = malloc((set->nrows + 1) * sizeof *hw);
  size_t k = 0;
  bad |= !hw;
  for (size_t i = 0; i < n && !bad; i++) {
    rows += c[i].rows;
    inside += c[i].inside;
    bad |= xs__jappend(cells, json_pack("{s:s,s:s,s:I,s:I,s:f,s:f,s:I}", "arm", c[i].arm,
                                        "band", c[i].band_name, "rows", (json_int_t)c[i].rows,
                                        "inside", (json_int_t)c[i].inside, "coverage",
                                        (double)c[i].inside / (double)c[i].rows,
                                        "median_half_width", c[i].median_half_width,
                                        "pooled", (json_int_t)c[i].pooled));
  }
  for (size_t i = 0; i < set->nrows && !bad; i++) {
    const xs_validate_row *r = &set->rows[i];
    if (isfinite(r->interval_us[0]))
      hw[k++] = (r->interval_us[1] - r->interval_us[0]) / (2 * r->predicted_us);
  }
  free(c);
  json_t *o = bad ? NULL
                  : json_pack("{s:f,s:I,s:I,s:o,s:o,s:o}", "level", 0.8, "rows",
                              (json_int_t)rows, "inside", (json_int_t)inside, "coverage",
                              rows ? json_real((double)inside / (double)rows) : json_null(),
                              "median_half_width",
                              k ? json_real(xs__median_of(hw, k)) : json_null(), "cells", cells);
  free(hw);
  if (!o)
    json_decref(cells);
  return o;
}

xs_status xs_validate_intervals_json(const xs_validate_set *set, char **out,
                                    xs_error *err) {
  *out = NULL;
  return xs__api_dump(xs__api_intervals_json(set), 12, out, err);
}

xs_status xs_validate_json(const xs_validate_set *set, char **out, xs_error *err) {
  *out = NULL;
  /* arms and sources in order of first appearance, with their medians */
  xs_validate_group *arms = NULL, *sources = NULL;
  size_t narms = 0, nsources = 0;
  xs_status st = xs_validate_groups(set, 0, &arms, &narms, err);
  if (!st)
    st = xs_validate_groups(set, 1, &sources, &nsources, err);
  if (st) {
    free(arms);
    return st;
  }
  double mx, med = xs_validate_median(set, NULL, NULL, NULL, &mx);
  json_t *root = json_object(), *rows = json_array(), *byarm = json_object();
  int bad = !root || !rows || !byarm;
  /* every row or none: a row jansson refuses (a value not finite, a name
   * not UTF-8; the reader lets neither through) fails the document */
  for (size_t i = 0; i < set->nrows && !bad; i++) {
    const xs_validate_row *r = &set->rows[i];
    json_t *o = json_pack("{s:s,s:s,s:f,s:s,s:f,s:f,s:f}",
        "source", r->source, "gpu", r->gpu, "tokens", r->tokens, "arm", r->arm,
        "measured_us", r->measured_us, "predicted_us", r->predicted_us,
        "error", r->error);
    if (o && r->kind == 0) {
      const xs_moe_config *c = &r->config;
      bad |= xs__jput(o, "ep", json_real(c->ep));
      bad |= xs__jput(o, "hidden", json_real(c->hidden));
      bad |= xs__jput(o, "intermediate", json_real(c->intermediate));
      bad |= xs__jput(o, "experts", json_real(c->experts));
      bad |= xs__jput(o, "topk", json_real(c->topk));
      bad |= xs__jput(o, "metric", json_string(r->metric[0] ? r->metric : "time"));
      bad |= xs__jput(o, "knobs", xs__api_moe_knobs((xs_moe_schedule)xs_moe_schedule_from_name(r->arm), &r->knobs));
      json_t *m = json_object();
      static const char *const mn[XS_MODEL_COUNT] = {"burstgap_us", "blocking_us",
                                                     "serial_us", "ideal_us"};
      for (int k = 0; k < XS_MODEL_COUNT; k++)
        bad |= xs__jput(m, mn[k], real_or_null(r->model_us[k]));
      bad |= xs__jput(o, "models", m);
      if (!isnan(r->alt_us)) {
        bad |= xs__jput(o, "other_bound_us", json_real(r->alt_us));
        bad |= xs__jput(o, "other_bound_knobs", xs__api_moe_knobs((xs_moe_schedule)xs_moe_schedule_from_name(r->arm), &r->alt_knobs));
      }
      if (r->breakdown.bound)
        bad |= xs__jput(o, "breakdown", xs__api_moe_breakdown(&r->breakdown));
      if (set->refitted && !isnan(r->refit_us) && r->refit_us > 0)
        bad |= xs__jput(o, "refit_us", json_real(r->refit_us));
    }
    if (o && r->kind == 1)
      bad |= fa_row_json(o, r);
    if (o)
      bad |= xs__jput(o, "interval_us", isfinite(r->interval_us[0])
                                            ? json_pack("[f,f]", r->interval_us[0], r->interval_us[1])
                                            : json_null());
    bad |= xs__jappend(rows, o);
    if (bad)
      st = xs__fail(err, XS_INVALID, "line %zu: its row cannot be written as JSON "
                    "(a number that is not finite, or text that is not UTF-8)",
                    r->line);
  }
  for (size_t k = 0; k < narms && !bad; k++)
    bad |= xs__jput(byarm, arms[k].name,
                    json_pack("{s:I,s:o}", "rows", (json_int_t)arms[k].rows,
                              "median_abs_error", real_or_null(arms[k].median_abs_error)));
  json_t *sum = bad ? NULL : json_pack("{s:I,s:o,s:o,s:O}", "rows",
      (json_int_t)set->nrows, "median_abs_error", real_or_null(med),
      "max_abs_error", real_or_null(mx), "by_arm", byarm);
  json_decref(byarm);
  bad |= !sum;
  if (!bad) {
    json_t *iv = xs__api_intervals_json(set);
    bad |= !iv || xs__jput(sum, "intervals", iv);
  }
  if (!bad && set->nrows && set->rows[0].kind == 0)
    bad |= moe_summary(set, arms, narms, sources, nsources, sum, &st, err);
  else if (!bad && set->nrows && set->rows[0].kind == 1)
    bad |= fa_summary_json(set, sum, &st, err);
  bad |= xs__jput(root, "rows", rows);
  bad |= xs__jput(root, "summary", sum);
  free(arms);
  free(sources);
  if (bad) {
    json_decref(root);
    return st ? st : xs__fail(err, XS_NOMEM, "out of memory");
  }
  return xs__api_dump(root, 10, out, err);
}

/* ---- validate ep ---- */

/* the summary of group k of g (g NULL: all rows) */
static json_t *ep_group_json(const xs_validate_set *set, const xs_validate_ep_groups *g,
                             size_t k_group, int loso) {
  size_t k;
  double mx, med = xs_validate_ep_median(set, g, k_group, XS_MODEL_BURSTGAP, &k, &mx);
  json_t *o = json_pack("{s:I,s:o,s:o}", "rows", (json_int_t)k, "median_abs_error",
                        real_or_null(med), "max_abs_error", real_or_null(mx));
  if (o && loso &&
      xs__jput(o, "loso_median_abs_error",
               real_or_null(xs_validate_ep_median(set, g, k_group, -1, NULL, NULL)))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

xs_status xs_validate_ep_json(const xs_validate_set *set, unsigned models_mask,
                              const double *values, char **out, xs_error *err) {
  static const char *const fields[] = {"by_library_kernel", "by_library", "by_phase",
                                       "by_source"};
  *out = NULL;
  int loso = values != NULL, others = (models_mask & ~1u) != 0;
  /* every object goes into its parent as it is made, so that freeing the
   * root frees whatever was built when something fails */
  json_t *root = json_object(), *rows = json_array(), *sum = json_object();
  int bad = xs__jput(root, "rows", rows) | xs__jput(root, "summary", sum);
  for (size_t i = 0; i < set->nrows && !bad; i++) {
    const xs_validate_row *r = &set->rows[i];
    const xs_validate_ep_row *e = &r->ep;
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:s,s:f,s:s,s:f,s:f,s:f,s:f,s:f}",
        "source", r->source, "gpu", r->gpu, "fabric", e->fabric, "library", e->library,
        "kernel", e->mode, "phase", e->phase, "ep", e->ep, "tokens", r->tokens, "hidden",
        e->hidden, "topk", e->topk, "experts", e->experts,
        /* the dtype column, as its element size stands for it */
        "dtype", e->elem_bytes == 1 ? "fp8" : "bf16", "sms", e->sms, "metric", e->metric,
        "measured", e->measured, "predicted", e->predicted, "error", r->error,
        "measured_us", r->measured_us, "predicted_us", r->predicted_us);
    bad |= xs__jappend(rows, o);
    if (!bad && others) {
      json_t *bm = json_object();
      bad |= xs__jput(o, "by_model", bm);
      for (int m = 0; m < XS_MODEL_COUNT && !bad; m++)
        if (models_mask >> m & 1u)
          bad |= xs__jput(bm, xs_model_name((xs_model)m), real_or_null(e->model[m]));
    }
    if (!bad && loso)
      bad |= xs__jput(o, "loso", json_pack("{s:o,s:o}", "predicted", real_or_null(e->loso),
                                           "error", real_or_null(e->loso_error)));
    if (!bad)
      bad |= xs__jput(o, "interval_us",
                      isfinite(r->interval_us[0])
                          ? json_pack("[f,f]", r->interval_us[0], r->interval_us[1])
                          : json_null());
  }
  if (!bad) {
    bad |= xs__jput(sum, "rows", json_integer((json_int_t)set->nrows));
    json_t *all = ep_group_json(set, NULL, 0, loso);
    bad |= !all || json_object_update(sum, all);
    json_decref(all);
  }
  xs_validate_ep_groups g[4] = {{0}};
  for (int f = 0; f < 4 && !bad; f++) {
    xs_status gst = xs_validate_ep_group(set, f, &g[f], err);
    if (gst) {
      for (int h = 0; h < f; h++)
        xs_validate_ep_groups_free(&g[h]);
      json_decref(root);
      return gst;
    }
  }
  for (int f = 0; f < 4 && !bad; f++) {
    json_t *by = json_object();
    bad |= xs__jput(sum, fields[f], by);
    for (size_t k = 0; k < g[f].n && !bad; k++)
      bad |= xs__jput(by, g[f].name[k], ep_group_json(set, &g[f], k, loso));
  }
  if (!bad) {
    /* the signed median per library and mode and token band */
    json_t *bias = json_array();
    bad |= xs__jput(sum, "bias", bias);
    for (size_t k = 0; k < g[0].n && !bad; k++)
      for (int b = 0; b < XS_VALIDATE_EP_BANDS && !bad; b++) {
        const char *label;
        size_t n;
        double v = xs_validate_ep_band_bias(set, g[0].name[k], b, &label, &n);
        if (!isnan(v))
          bad |= xs__jappend(bias, json_pack("{s:s,s:s,s:I,s:f}", "arm", g[0].name[k],
                                             "band", label, "rows", (json_int_t)n,
                                             "signed_median_error", v));
      }
  }
  if (!bad && others) {
    /* by_model: median and largest |error| per library and kernel mode */
    json_t *bm = json_object();
    bad |= xs__jput(sum, "by_model", bm);
    for (int m = 0; m < XS_MODEL_COUNT && !bad; m++) {
      if (!(models_mask >> m & 1u))
        continue;
      json_t *mo = json_object();
      bad |= xs__jput(bm, xs_model_name((xs_model)m), mo);
      for (size_t k = 0; k < g[0].n && !bad; k++) {
        size_t n;
        double mx, med = xs_validate_ep_median(set, &g[0], k, m, &n, &mx);
        bad |= xs__jput(mo, g[0].name[k],
                        json_pack("{s:I,s:o,s:o}", "rows", (json_int_t)n, "median_abs_error",
                                  real_or_null(med), "max_abs_error", real_or_null(mx)));
      }
    }
  }
  json_t *consts = json_array();
  bad |= xs__jput(sum, "fitted_constants", consts);
  /* the sources in order of first appearance, as xs_validate_ep_by_source
   * numbers them */
  for (size_t i = 0; i < XS_EP_CONSTANTS && !bad; i++) {
    json_t *c = json_pack("{s:s,s:s,s:f}", "name", xs_ep_constant_name(i), "about",
                          xs_ep_constant_about(i), "value", xs_ep_constant_value(i));
    bad |= xs__jappend(consts, c);
    if (!bad && loso) {
      json_t *lo = json_object();
      bad |= xs__jput(c, "without_source", lo);
      for (size_t k = 0; k < g[3].n && !bad; k++)
        bad |= xs__jput(lo, g[3].name[k], real_or_null(values[k * XS_EP_CONSTANTS + i]));
    }
  }
  for (int f = 0; f < 4; f++)
    xs_validate_ep_groups_free(&g[f]);
  if (!bad) {
    json_t *iv = xs__api_intervals_json(set);
    bad |= !iv || xs__jput(sum, "intervals", iv);
  }
  if (bad) {
    json_decref(root);
    return xs__fail(err, XS_NOMEM, "out of memory, or text that is not UTF-8");
  }
  return xs__api_dump(root, 10, out, err);
}
