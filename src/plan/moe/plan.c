/*
 * plan.c: the MegaMoE planner's entry points. A schedule is one of the
 * kernels (kernel_*.c) with knobs; a plan builds each schedule's program
 * for its knob candidates, evaluates them under burstgap, keeps the
 * fastest, and evaluates the chosen ones under every model; a program
 * that two schedules or rules share is built and evaluated once. The knob
 * rules (a rule per candidate, rule 0 the kernel's default) are what knob
 * tables keep from one token count to the next (moe_table.c).
 */
#include "plan/moe/moe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* classes of SMs a program has by default: within a percent of one worker
 * per SM on the validated kernels (tests/test_moe.c), at a tenth of the
 * cost */
#define DEFAULT_GROUPS 12

static const char *const sched_names[XS_MOE_SCHEDULES] = {
    "sequential", "l1-then-l2", "searched", "fused-split",
    "fused-wave", "fused-interleaved", "fused-lag"};

const char *xs_moe_schedule_name(xs_moe_schedule s) {
  return (unsigned)s < XS_MOE_SCHEDULES ? sched_names[s] : NULL;
}

int xs_moe_schedule_from_name(const char *name) {
  int i = xs__name_index(sched_names, XS_MOE_SCHEDULES, name);
  if (i >= 0)
    return i;
  if (strcmp(name, "interleaved") == 0)
    return XS_MOE_INTERLEAVED;
  return -1;
}

int xs_moe_schedule_interleaves(xs_moe_schedule s) {
  return s == XS_MOE_INTERLEAVED || s == XS_MOE_FUSED_DYNAMIC || s == XS_MOE_FUSED_LAG;
}

/* ---- knob rules ---- */

/* searched: lag and group of the lag machinery; "all-l1-first" is
 * l1-then-l2's order (a lag of 0 would mean the kernel's default: the
 * shortest lag is 1) */
static const struct {
  const char *name;
  unsigned lag, group;
} searched_rules[] = {{"all-l1-first", XS_MOE_LAG_ALL, 4}, {"lag-1", 1, 4},
                      {"lag-2", 2, 4},   {"lag-4", 4, 4},
                      {"lag-8", 8, 4},   {"lag-16", 16, 4},
                      {"lag-1/g1", 1, 1}, {"lag-8/g1", 8, 1}};
#define NSEARCHED (sizeof searched_rules / sizeof searched_rules[0])
static const char *const wave_rules[] = {"default", "half", "double", "one",
                                         "all"};
static const char *const inter_rules[] = {"default", "warmup-1", "warmup-2",
                                          "warmup-4"};
static const char *const lag_rules[] = {"default", "lag/4", "lag/2",
                                        "lag*2"};

const char *xs_moe_rule_name(xs_moe_schedule s, unsigned rule) {
  switch (s) {
  case XS_MOE_SEQUENTIAL:
  case XS_MOE_L1_THEN_L2:
  case XS_MOE_FUSED_SPLIT:
    return rule == 0 ? "default" : NULL;
  case XS_MOE_INTERLEAVED:
    return rule < NSEARCHED ? searched_rules[rule].name : NULL;
  case XS_MOE_FUSED_WAVE:
    return rule < 5 ? wave_rules[rule] : NULL;
  case XS_MOE_FUSED_DYNAMIC:
    return rule < 4 ? inter_rules[rule] : NULL;
  case XS_MOE_FUSED_LAG:
    return rule < 4 ? lag_rules[rule] : NULL;
  default:
    return NULL;
  }
}

/* The kernels that build programs: the l1-then-l2, searched and fused-lag
 * schedules share the lag kernel. */
enum { K_SEQUENTIAL, K_LAG, K_SPLIT, K_WAVE, K_INTERLEAVED };

/* A program a plan has evaluated, by the kernel that builds it and the
 * knobs the kernel was given (which, with the plan's workload and the
 * profile's kernel inputs, make the program): schedules that share a
 * kernel and rules whose knobs come out the same build the same program,
 * so it is built and evaluated once. l1-then-l2 is the searched
 * schedule's all-L1-first rule; fused-lag's rules often equal searched
 * ones. The program is kept (up to KEEP_OPS ops in all) for the other
 * models and for a profile moved in a number the kernel does not read. */
typedef struct evaluated {
  int kernel;
  xs_moe_pattern in, used; /* given, and as the kernel wrote them back */
  double time_s[XS_MODEL_COUNT]; /* NAN until evaluated */
  double above;            /* burstgap evaluation stopped: its time is
                              past this (time_s[0] NAN)                 */
  xs_moe_breakdown bd;
  int have_bd;
  xs_moe_breakdown built;  /* what its build counted (the fixed time)    */
  xs_program *prog;        /* kept, or NULL                             */
  uint32_t map[4];         /* its channel codes -> the profile's        */
  /* another entry of the same kernel whose build wrote back the same
   * knobs: the same program (the kernels build from the knobs they write
   * back; tests/test_plan_eval.c checks it), so its times are this one's
   * and this entry holds nothing of its own; NULL for none */
  struct evaluated *alias;
  int have_used;           /* its program was built once: used is known */
} evaluated;
/* programs kept in all: every program of a plan of 16384 tokens (about
 * 30 MB with their sends) */
#define KEEP_OPS 1000000.0

/* What the kernels read of the profile, resolved before the first build
 * (the tile terms, the link and the NIC, the sequential arm's all-to-all
 * kernels once it needs them): a profile moved in a number none of them
 * holds builds the same programs. */
typedef struct {
  xs__gemm_terms g;
  double link_latency_s, nic_share, nic_latency_s;
  double a2a_s[2];         /* the all-to-all's dispatch and combine       */
  int have_a2a;
  char link[64];
} kernel_inputs;

/* The workload and terms a plan shares between its programs, each
 * schedule's default knobs once a program of rule 0 has been built (the
 * other rules vary them), the programs evaluated so far, and the
 * profile's channels under burstgap and blocking, resolved once. */
struct xs__moe_planner {
  xs_moe_config c;
  const xs_profile *prof;
  xs__moe_wl wl;
  kernel_inputs in;
  xs__moe_kctx k;
  xs_moe_pattern dflt[XS_MOE_SCHEDULES];
  int have_dflt[XS_MOE_SCHEDULES];
  /* eval_burstgap's: per worker, its segments' sums by class; the marks
   * of channel codes and counters */
  double *sums;
  size_t sums_cap;
  uint8_t *marks;
  size_t marks_cap;
  evaluated **memo; /* each entry allocated on its own: pointers to it
                       stay good while the list grows */
  size_t nmemo, memo_cap;
  double kept_ops;
  xs__chan *chans[2]; /* burstgap, blocking: the profile's channels */
  size_t nch;
  int hbm;            /* the profile has an "hbm" channel */
  xs_result *spare;   /* a result to reuse */
};
typedef struct xs__moe_planner planner;

/* The typed inputs of the kernels and the channels of prof. */
static xs_status resolve(planner *pl, const xs_profile *prof, xs_error *err) {
  kernel_inputs *in = &pl->in;
  memset(in, 0, sizeof *in);
  const xs_moe_config *c = &pl->c;
  double sms = c->sms > 0 ? c->sms : xs_profile_sms(prof);
  xs_status st = xs__gemm_terms_read(prof, c, sms, &in->g, err);
  if (st)
    return st;
  size_t link = xs_profile_default_channel(prof);
  snprintf(in->link, sizeof in->link, "%s", xs_profile_channel_name(prof, link));
  in->link_latency_s = xs_profile_channel(prof, link)->latency_s;
  /* ranks beyond one NVLink domain are on other nodes: their share of the
   * traffic goes over the fabric's NIC, which the profile must have */
  double node = xs_profile_node_gpus(prof), P = c->ep;
  if (P > node) {
    long nic = xs_profile_find_channel(prof, "nic");
    if (nic < 0)
      return xs__fail(err, XS_INVALID,
                      "EP %g spans %g nodes of %g GPUs on profile \"%s\", "
                      "which has no network between them: name a fabric "
                      "(--fabric ib-400, roce-200 or efa-400; in C, "
                      "xs_profile_add_fabric)",
                      P, ceil(P / node), node, xs_profile_name(prof));
    in->nic_share = (P - node) / (P - 1);
    in->nic_latency_s = xs_profile_channel(prof, (size_t)nic)->latency_s;
  }
  pl->prof = prof;
  pl->hbm = xs_profile_find_channel(prof, "hbm") >= 0;
  size_t nch = xs_profile_channel_count(prof);
  for (int m = 0; m < 2; m++) {
    free(pl->chans[m]);
    if (!(pl->chans[m] = malloc((nch + 1) * sizeof *pl->chans[m])))
      return xs__fail(err, XS_NOMEM, "out of memory");
    xs__chans_of(prof, m ? XS_MODEL_BLOCKING : XS_MODEL_BURSTGAP, pl->chans[m]);
  }
  pl->nch = nch;
  pl->k.g = &pl->in.g;
  pl->k.link = pl->in.link;
  pl->k.link_latency_s = in->link_latency_s;
  pl->k.nic_share = in->nic_share;
  pl->k.nic_latency_s = in->nic_latency_s;
  return XS_OK;
}

static xs_status planner_init(planner *pl, const xs_moe_config *c,
                              const xs_profile *prof, const char *name,
                              xs_error *err) {
  memset(pl, 0, sizeof *pl);
  pl->c = *c;
  xs_status st = xs_moe_config_check(c, err);
  if (st)
    return st;
  double sms = c->sms > 0 ? c->sms : xs_profile_sms(prof);
  if ((st = xs__moe_wl_build(&pl->c, sms, &pl->wl, err)) ||
      (st = resolve(pl, prof, err)))
    return st;
  pl->k.wl = &pl->wl;
  pl->k.name = name ? name : pl->c.name;
  pl->k.groups = c->sm_groups > 0 ? (unsigned)c->sm_groups : DEFAULT_GROUPS;
  return XS_OK;
}

static double program_ops(const xs_program *p) {
  double n = 0;
  for (size_t w = 0; w < p->nworkers; w++)
    n += (double)p->workers[w].nops;
  return n;
}

static void drop_program(planner *pl, evaluated *e) {
  if (e->prog) {
    pl->kept_ops -= program_ops(e->prog);
    xs_program_free(e->prog);
    e->prog = NULL;
  }
}

static void planner_free(planner *pl) {
  xs__moe_wl_free(&pl->wl);
  free(pl->sums);
  free(pl->marks);
  for (size_t i = 0; i < pl->nmemo; i++) {
    xs_program_free(pl->memo[i]->prog);
    free(pl->memo[i]);
  }
  free(pl->memo);
  free(pl->chans[0]);
  free(pl->chans[1]);
  xs_result_free(pl->spare);
}

/* The sequential arm's all-to-all kernels' times, once a plan
 * (kernel_sequential.c says how the harness calls them). */
static xs_status a2a_times(planner *pl, xs_error *err) {
  if (pl->in.have_a2a)
    return XS_OK;
  xs_status st = xs__moe_a2a_times(&pl->k, pl->prof, pl->in.a2a_s, err);
  if (st)
    return st;
  pl->in.have_a2a = 1;
  pl->k.a2a_s[0] = pl->in.a2a_s[0];
  pl->k.a2a_s[1] = pl->in.a2a_s[1];
  return XS_OK;
}

/* The kernel of schedule s, with the knobs it is given (l1-then-l2's
 * order is the lag kernel's all-L1-first); -1 for no schedule. */
static int kernel_of(xs_moe_schedule s, xs_moe_pattern *kn) {
  switch (s) {
  case XS_MOE_SEQUENTIAL:
    return K_SEQUENTIAL;
  case XS_MOE_L1_THEN_L2:
    kn->lag = searched_rules[0].lag;
    kn->group = 4;
    return K_LAG;
  case XS_MOE_INTERLEAVED:
  case XS_MOE_FUSED_LAG:
    return K_LAG;
  case XS_MOE_FUSED_SPLIT:
    return K_SPLIT;
  case XS_MOE_FUSED_WAVE:
    return K_WAVE;
  case XS_MOE_FUSED_DYNAMIC:
    return K_INTERLEAVED;
  default:
    return -1;
  }
}

static xs_status run_kernel(planner *pl, int kernel, xs_moe_pattern *kn,
                            int ids, xs_program **out, xs_moe_breakdown *bd,
                            xs_error *err) {
  if (kernel == K_SEQUENTIAL) {
    xs_status st = a2a_times(pl, err);
    if (st)
      return st;
  }
  xs__moe_kctx k = pl->k;
  k.ids = ids;
  switch (kernel) {
  case K_SEQUENTIAL:
    return xs__moe_kernel_sequential(&k, kn, out, bd, err);
  case K_LAG:
    return xs__moe_kernel_lag(&k, kn, out, bd, err);
  case K_SPLIT:
    return xs__moe_kernel_split(&k, kn, out, bd, err);
  case K_WAVE:
    return xs__moe_kernel_wave(&k, kn, out, bd, err);
  default:
    return xs__moe_kernel_interleaved(&k, kn, out, bd, err);
  }
}

/* Every memo entry gone */
static void forget(planner *pl) {
  for (size_t i = 0; i < pl->nmemo; i++) {
    drop_program(pl, pl->memo[i]);
    free(pl->memo[i]);
  }
  pl->nmemo = 0;
  memset(pl->have_dflt, 0, sizeof pl->have_dflt);
}

/* Onto prof, a copy of the planner's profile with numbers moved: the
 * programs whose kernel inputs stay as they were are kept (a channel's
 * rates and HBM's latency, the all-to-all's terms for the fused kernels),
 * every time is forgotten. The planner's workload depends on the config
 * alone; prof must have the same channels. */
static xs_status planner_rebase(planner *pl, const xs_profile *prof, xs_error *err) {
  /* byte copies: the comparison below reads their padding too */
  kernel_inputs was;
  xs__moe_kctx was_k;
  memcpy(&was, &pl->in, sizeof was);
  memcpy(&was_k, &pl->k, sizeof was_k);
  xs_status st = resolve(pl, prof, err);
  if (st)
    return st;
  /* every field a kernel reads: the tile terms, the link's name, and the
   * context itself (its pointers are the planner's own, the same) */
  int same = memcmp(&was.g, &pl->in.g, sizeof was.g) == 0 &&
             strcmp(was.link, pl->in.link) == 0 && memcmp(&was_k, &pl->k, sizeof was_k) == 0;
  if (!same)
    memset(pl->have_dflt, 0, sizeof pl->have_dflt);
  for (size_t i = 0; i < pl->nmemo; i++) {
    evaluated *e = pl->memo[i];
    /* the sequential kernel holds the all-to-all's times, which any
     * channel of the profile moves */
    if (!same || e->kernel == K_SEQUENTIAL)
      drop_program(pl, e);
    for (int m = 0; m < XS_MODEL_COUNT; m++)
      e->time_s[m] = NAN;
    e->above = 0;
    e->have_bd = 0;
  }
  if (!same) /* nothing of the old programs is known to hold */
    forget(pl);
  return XS_OK;
}

/* Whether knobs kn of schedule s are its kernel's defaults (zeros;
 * l1-then-l2 has none of its own). */
static int default_knobs(xs_moe_schedule s, const xs_moe_pattern *kn) {
  static const xs_moe_pattern zero = {0};
  return (unsigned)s < XS_MOE_SCHEDULES && s != XS_MOE_L1_THEN_L2 &&
         memcmp(kn, &zero, sizeof zero) == 0;
}

/* A schedule's program with knobs kn (zeros: the kernel's defaults,
 * written back); a build with the defaults keeps them for rule_knobs. */
static xs_status build(planner *pl, xs_moe_schedule s, xs_moe_pattern *kn,
                       int ids, xs_program **out, xs_moe_breakdown *bd,
                       xs_error *err) {
  int dflt = default_knobs(s, kn);
  int kernel = kernel_of(s, kn);
  if (kernel < 0)
    return xs__fail(err, XS_INVALID, "unknown schedule %d", (int)s);
  xs_status st = run_kernel(pl, kernel, kn, ids, out, bd, err);
  if (!st && dflt) {
    pl->dflt[s] = *kn;
    pl->have_dflt[s] = 1;
  }
  return st;
}

/* The knobs of rule r of schedule s, or 0 when the rule does not apply
 * (-1 past the last rule). Rule 0 leaves every knob to the kernel. */
static int rule_knobs(planner *pl, xs_moe_schedule s, unsigned r,
                      xs_moe_pattern *kn, xs_error *err) {
  memset(kn, 0, sizeof *kn);
  if (!xs_moe_rule_name(s, r))
    return -1;
  if (r == 0 && s != XS_MOE_INTERLEAVED)
    return 1;
  /* the default's values, to vary (the wave and lag kernels'; the
   * interleaved kernel's rules are literal) */
  if ((s == XS_MOE_FUSED_WAVE || s == XS_MOE_FUSED_LAG) &&
      !pl->have_dflt[s]) {
    xs_moe_pattern zero = {0};
    xs_program *p = NULL;
    xs_status st = build(pl, s, &zero, 0, &p, NULL, err);
    xs_program_free(p);
    if (st)
      return -2;
  }
  const xs_moe_pattern d = pl->dflt[s];
  double el = pl->wl.El;
  switch (s) {
  case XS_MOE_INTERLEAVED:
    kn->lag = searched_rules[r].lag;
    kn->group = searched_rules[r].group;
    return 1;
  case XS_MOE_FUSED_WAVE: {
    double v[] = {d.experts_per_wave, floor(d.experts_per_wave / 2.0),
                  d.experts_per_wave * 2.0, 1, el};
    if (!(v[r] >= 1) || v[r] > el)
      return 0;
    kn->experts_per_wave = (unsigned)v[r];
    return 1;
  }
  case XS_MOE_FUSED_DYNAMIC: {
    static const unsigned w[] = {0, 1, 2, 4};
    kn->warmup = w[r];
    return 1;
  }
  case XS_MOE_FUSED_LAG: {
    static const double f[] = {1, 0.25, 0.5, 2};
    kn->lag = (unsigned)fmax(1, round(d.lag * f[r]));
    kn->group = d.group;
    return 1;
  }
  default:
    return 0;
  }
}

/* The profile channel of each of p's channel codes (its channels bound
 * once per program, by name: e->map). */
static xs_status bind(planner *pl, evaluated *e, const xs_program *p, xs_error *err) {
  if (p->nchan_names + 1 > sizeof e->map / sizeof e->map[0])
    return xs__fail(err, XS_INTERNAL, "a MegaMoE program of %zu channels",
                    p->nchan_names);
  e->map[0] = (uint32_t)xs_profile_default_channel(pl->prof);
  for (size_t i = 0; i < p->nchan_names; i++) {
    long c = xs_profile_find_channel(pl->prof, p->chan_names[i]);
    if (c < 0)
      return xs__fail(err, XS_INVALID, "profile \"%s\" has no channel \"%s\"",
                      xs_profile_name(pl->prof), p->chan_names[i]);
    e->map[i + 1] = (uint32_t)c;
  }
  return XS_OK;
}

/* A program's makespan under model m; burstgap and blocking with the
 * planner's channels and the program's map (e), the rest as xs_evaluate. */
static xs_status eval_model(planner *pl, const xs_program *p, const evaluated *e,
                            xs_model m, xs__seg_sums *sums, double stop_s,
                            double *t, int *stopped, xs_error *err) {
  xs_eval_options o = {0, 1, pl->spare, NULL};
  int typed = m == XS_MODEL_BURSTGAP || m == XS_MODEL_BLOCKING;
  xs__eval_extra x = {sums, stop_s, 0, 1,
                      typed ? pl->chans[m == XS_MODEL_BLOCKING] : NULL, pl->nch,
                      typed ? e->map : NULL};
  pl->spare = NULL;
  xs_status st = xs__evaluate_ex(p, pl->prof, m, &o, &x, &pl->spare, err);
  if (!st)
    *t = x.stopped ? INFINITY : pl->spare->makespan_s;
  if (stopped)
    *stopped = x.stopped;
  return st;
}

/* The classes of the breakdown's sums of segments (docs/plan-megamoe.md
 * "Output"): stall is a part of link */
enum { BD_COMPUTE, BD_HBM, BD_DISPATCH, BD_SYNC, BD_LINK, BD_STALL, BD_N };

/* The burstgap makespan of p (INFINITY when it is sure to pass stop_s,
 * where the evaluation stops), and with bd where that time goes on the
 * SMs that finish last (bd->fixed_s in: the fixed seconds the build
 * counted). The evaluation sums each worker's segments by class as it
 * goes (xs__seg_sums), in the order a timeline would record them: a
 * segment of a send on the "hbm" channel is hbm, of another send link
 * (and stall, for its backpressure stall), a wait in an await on the
 * dispatch's "rows" dispatch, on an all-to-all combine's "link" link, in
 * another await sync. */
static xs_status eval_burstgap(planner *pl, const xs_program *p, const evaluated *e,
                               double stop_s, double *t, xs_moe_breakdown *bd,
                               xs_error *err) {
  xs__seg_sums S = {NULL, NULL, {{0}}, {{0}}, BD_N, NULL};
  if (bd) {
    size_t nw = p->nworkers, ncode = p->nchan_names + 1, nk = p->ncounters;
    if (xs__grow(&pl->sums, &pl->sums_cap, nw * BD_N, sizeof *pl->sums) ||
        xs__grow(&pl->marks, &pl->marks_cap, ncode + nk, 1))
      return xs__fail(err, XS_NOMEM, "out of memory");
    memset(pl->sums, 0, nw * BD_N * sizeof *pl->sums);
    pl->marks[0] = 0; /* the default channel */
    for (size_t k = 0; k + 1 < ncode; k++)
      pl->marks[k + 1] = pl->hbm && strcmp(p->chan_names[k], "hbm") == 0;
    /* the dispatch's rows (and an all-to-all dispatch's "rows.a2a"), an
     * all-to-all combine's "link.a2a", the rest sync */
    for (size_t c = 0; c < nk; c++)
      pl->marks[ncode + c] = strncmp(p->counter_names[c], "rows", 4) == 0   ? 1
                             : strncmp(p->counter_names[c], "link", 4) == 0 ? 2
                                                                            : 0;
    S.chan_marked = pl->marks;
    S.counter_marked = pl->marks + ncode;
    S.sums = pl->sums;
    static const signed char cls[XS__SEG_AWAIT + 1][3] = {
        [XS_SEG_COMPUTE] = {BD_COMPUTE, BD_COMPUTE, -1},
        [XS_SEG_OVERHEAD] = {BD_LINK, BD_HBM, -1},
        [XS_SEG_ISSUE] = {BD_LINK, BD_HBM, -1},
        [XS_SEG_STALL] = {BD_LINK, BD_HBM, -1},
        [XS_SEG_BLOCKED] = {BD_LINK, BD_HBM, -1},
        [XS__SEG_AWAIT] = {BD_SYNC, BD_DISPATCH, BD_LINK}};
    memcpy(S.cls, cls, sizeof cls);
    memset(S.also, -1, sizeof S.also);
    S.also[XS_SEG_STALL][0] = BD_STALL;
  }
  int stopped = 0;
  xs_status st = eval_model(pl, p, e, XS_MODEL_BURSTGAP, bd ? &S : NULL, stop_s, t,
                            &stopped, err);
  if (st || !bd || stopped)
    return st;
  const xs_result *r = pl->spare;
  /* the math class that finishes last (dispatch and sync are helpers) */
  size_t last = 0;
  double fin = -1;
  for (size_t w = 0; w < r->nworkers; w++) {
    const char *nm = xs_program_worker_name(p, w);
    if (strncmp(nm, "sm[", 3) == 0 && r->workers[w].finish_s > fin) {
      fin = r->workers[w].finish_s;
      last = w;
    }
  }
  const double *v = pl->sums + last * BD_N;
  double fixed = bd->fixed_s;
  memset(bd, 0, sizeof *bd);
  bd->hbm_s = v[BD_HBM];
  bd->dispatch_s = v[BD_DISPATCH];
  bd->sync_s = v[BD_SYNC];
  bd->link_s = v[BD_LINK];
  bd->stall_s = v[BD_STALL];
  bd->fixed_s = fmin(fixed, v[BD_COMPUTE]);
  bd->compute_s = v[BD_COMPUTE] - bd->fixed_s;
  bd->xstage_tail_s = fmax(0, r->makespan_s - fin);
  bd->link_s += bd->xstage_tail_s;
  const char *names[6] = {"compute", "hbm", "fixed", "dispatch", "sync", "link"};
  double six[6] = {bd->compute_s, bd->hbm_s, bd->fixed_s, bd->dispatch_s,
                   bd->sync_s, bd->link_s};
  int best = 0;
  for (int i = 1; i < 6; i++)
    if (six[i] > six[best])
      best = i;
  bd->bound = names[best];
  return XS_OK;
}

/* The memo entry of kernel with knobs in, a new one (times unknown) when
 * there is none; NULL when out of memory. */
static evaluated *memo_entry(planner *pl, int kernel, const xs_moe_pattern *in) {
  for (size_t i = 0; i < pl->nmemo; i++)
    if (pl->memo[i]->kernel == kernel && memcmp(&pl->memo[i]->in, in, sizeof *in) == 0)
      return pl->memo[i];
  evaluated *m = calloc(1, sizeof *m);
  if (!m || xs__grow(&pl->memo, &pl->memo_cap, pl->nmemo + 1, sizeof *pl->memo)) {
    free(m);
    return NULL;
  }
  pl->memo[pl->nmemo++] = m;
  m->kernel = kernel;
  m->in = m->used = *in;
  for (int k = 0; k < XS_MODEL_COUNT; k++)
    m->time_s[k] = NAN;
  return m;
}

/* The program of memo entry m: its kept one, or built (and kept while
 * the kept programs stay under KEEP_OPS; else *tmp holds it, to free). A
 * build writes the knobs it used back and what it counted (m->built). */
static xs_status program(planner *pl, evaluated *m, xs_program **p, xs_program **tmp,
                         xs_error *err) {
  *tmp = NULL;
  if (m->prog) {
    *p = m->prog;
    return XS_OK;
  }
  xs_moe_pattern used = m->in;
  xs_program *q = NULL;
  xs_status st = run_kernel(pl, m->kernel, &used, 0, &q, &m->built, err);
  if (!st)
    st = bind(pl, m, q, err);
  if (st) {
    xs_program_free(q);
    return st;
  }
  m->used = used;
  m->have_used = 1;
  double ops = program_ops(q);
  drop_program(pl, m);
  if (pl->kept_ops + ops <= KEEP_OPS) {
    m->prog = q;
    pl->kept_ops += ops;
  } else {
    *tmp = q;
  }
  *p = q;
  return XS_OK;
}

/* Whether memo entry m's burstgap time (with its breakdown, with
 * want_bd) is known, or known to be past stop_s. */
static int is_known(const evaluated *m, double stop_s, int want_bd) {
  return (!isnan(m->time_s[0]) && (m->have_bd || !want_bd)) ||
         (isnan(m->time_s[0]) && m->above >= stop_s);
}

/* The built entry other than m, of m's kernel, whose build wrote back
 * the knobs kn (m's own, once m is built: its program repeats the other's;
 * a new m's as given: the knobs another build wrote back build the same
 * program), or NULL; none under the reference (xs__set_reference), which
 * builds and evaluates each. */
static evaluated *twin_of(planner *pl, const evaluated *m, const xs_moe_pattern *kn) {
  if (xs__reference())
    return NULL;
  for (size_t i = 0; i < pl->nmemo; i++) {
    evaluated *x = pl->memo[i];
    if (x != m && !x->alias && x->have_used && x->kernel == m->kernel &&
        memcmp(&x->used, kn, sizeof *kn) == 0)
      return x;
  }
  return NULL;
}

/* Schedule s with knobs kn (the knobs used written back) under burstgap,
 * from the plan's memo when its program was evaluated before, else built
 * and evaluated, stopping once its time is sure to pass stop_s; with
 * want_bd, with its breakdown. *e: its memo entry. */
static xs_status evaluate_rule(planner *pl, xs_moe_schedule s, xs_moe_pattern *kn,
                               double stop_s, int want_bd, evaluated **e,
                               xs_program **keep, xs_error *err) {
  if (keep)
    *keep = NULL;
  int dflt = default_knobs(s, kn);
  xs_moe_pattern in = *kn;
  int kernel = kernel_of(s, &in);
  if (kernel < 0)
    return xs__fail(err, XS_INVALID, "unknown schedule %d", (int)s);
  evaluated *m = memo_entry(pl, kernel, &in);
  if (!m)
    return xs__fail(err, XS_NOMEM, "out of memory");
  /* knobs that an earlier build wrote back (the tuner times each option on
   * its moved profiles by its values): that build's program, not built
   * again */
  if (!m->have_used && !m->alias)
    m->alias = twin_of(pl, m, &in);
  if (m->alias)
    m = m->alias;
  int known = is_known(m, stop_s, want_bd);
  if (!known) {
    xs_program *p, *tmp;
    xs_moe_breakdown b;
    double t = NAN;
    xs_status st = program(pl, m, &p, &tmp, err);
    evaluated *twin = st ? NULL : twin_of(pl, m, &m->used);
    if (twin) {
      /* the program twin's build made: what twin knows holds for it */
      m->alias = twin;
      if (m->prog && !twin->prog) { /* the memo keeps it as twin's */
        twin->prog = m->prog;
        memcpy(twin->map, m->map, sizeof twin->map);
        m->prog = NULL;
      } else if (m->prog) {
        drop_program(pl, m);
        p = twin->prog;
      }
      m = twin;
    }
    b = m->built;
    int repeat = twin && is_known(m, stop_s, want_bd); /* nothing to evaluate */
    if (!st && !repeat)
      st = eval_burstgap(pl, p, m, stop_s, &t, want_bd ? &b : NULL, err);
    if (!st && keep && !repeat && t < INFINITY)
      *keep = tmp; /* a program past the memo's room, for the caller */
    else
      xs_program_free(tmp);
    if (st)
      return st;
    if (repeat) {
      /* twin's times stand */
    } else if (t < INFINITY) {
      m->time_s[0] = t;
      m->bd = b;
      m->have_bd = want_bd;
    } else {
      m->above = stop_s;
    }
  }
  *kn = m->used;
  if (dflt) {
    pl->dflt[s] = *kn;
    pl->have_dflt[s] = 1;
  }
  *e = m;
  return XS_OK;
}

/* Search one schedule's rules under burstgap: its best memo entry, time,
 * knobs and breakdown. A rule's evaluation stops once its makespan is
 * sure to pass the best so far: it could not be chosen, and nothing else
 * of it is reported. */
static xs_status search(planner *pl, xs_moe_schedule s, double *time_s,
                        xs_moe_pattern *knobs, xs_moe_breakdown *bd,
                        evaluated **entry, xs_program **best_prog, unsigned *count,
                        xs_error *err) {
  double best_t = INFINITY;
  evaluated *best_e = NULL;
  xs_program *best_p = NULL; /* the best's, when the memo has no room */
  xs_status st = XS_OK;
  for (unsigned r = 0;; r++) {
    xs_moe_pattern kn;
    int have = rule_knobs(pl, s, r, &kn, err);
    if (have == -2) {
      st = err->status;
      break;
    }
    if (have < 0)
      break;
    if (!have)
      continue;
    evaluated *e;
    xs_program *p = NULL;
    if ((st = evaluate_rule(pl, s, &kn, best_t, bd != NULL, &e, best_prog ? &p : NULL,
                            err)))
      break;
    if (count)
      (*count)++;
    double t = isnan(e->time_s[0]) ? INFINITY : e->time_s[0];
    if (t < best_t) {
      best_t = t;
      best_e = e;
      if (knobs)
        *knobs = kn;
      xs_program_free(best_p);
      best_p = p;
    } else {
      xs_program_free(p);
    }
  }
  if (!st) {
    *time_s = best_t;
    if (bd && best_e)
      *bd = best_e->bd;
    if (entry)
      *entry = best_e;
    if (best_prog) {
      *best_prog = best_p;
      best_p = NULL;
    }
  }
  xs_program_free(best_p);
  return st;
}

/* The time of model m for memo entry e (evaluated once); have: its
 * program when the memo keeps none, or NULL */
static xs_status model_time(planner *pl, evaluated *e, xs_program *have, xs_model m,
                            xs_error *err) {
  if (!isnan(e->time_s[m]))
    return XS_OK;
  xs_program *p = have, *tmp = NULL;
  xs_status st = have || e->prog ? XS_OK : program(pl, e, &p, &tmp, err);
  if (!have && e->prog)
    p = e->prog;
  if (!st)
    st = eval_model(pl, p, e, m, NULL, INFINITY, &e->time_s[m], NULL, err);
  xs_program_free(tmp);
  return st;
}

double xs_moe_tiles(const xs_moe_config *c) {
  xs_error e;
  if (xs_moe_config_check(c, &e))
    return 0;
  /* an upper bound: the smallest BLOCK_M any kernel's heuristic takes at
   * this load (heuristics.c: 16 rows up to 8.5 rows per expert, 32 up to
   * 16.5, else 64), a partial block per expert, 128-wide tiles */
  double el = c->experts / c->ep;
  double rpe = c->tokens * c->ep * c->topk / c->experts;
  double bm = c->block_m > 0 ? c->block_m : rpe <= 8.5 ? 16 : rpe <= 16.5 ? 32 : 64;
  double bn = c->block_n > 0 ? fmin(c->block_n, 128) : 128;
  double pairs = c->tokens * fmin(c->topk, el) * c->ep * c->imbalance;
  double blocks = ceil(pairs / bm) + el + c->shared_experts * ceil(c->tokens / bm + 1);
  return blocks * (ceil(2 * c->intermediate / bn) + ceil(c->hidden / bn));
}

static void fill_work(const planner *pl, xs_moe_workload *w) {
  const xs__moe_wl *wl = &pl->wl;
  memset(w, 0, sizeof *w);
  w->pairs = wl->pairs;
  w->tokens_per_expert = wl->touched > 0 ? wl->pairs / wl->touched : 0;
  w->experts_touched = wl->touched;
  w->sms = wl->S;
  w->flops = 2 * wl->pairs * 3 * wl->H * wl->I +
             2 * (double)wl->nshared * wl->T * 3 * wl->H * wl->I;
  w->weights_B = 3 * wl->H * wl->I * pl->c.weight_bytes *
                 (wl->touched + (double)wl->nshared);
  w->mma_flops_per_s = pl->in.g.F_sm * pl->in.g.S;
  w->l2_Bps = pl->in.g.l2_sm_Bps * pl->in.g.S;
  w->offrank = wl->offrank;
  w->dispatch_B = wl->pairs * wl->H * pl->c.act_bytes * wl->offrank;
  w->combine_B = wl->pairs * wl->H * pl->c.combine_bytes * wl->offrank;
  w->a2a_dispatch_B = wl->T * wl->a2a_dest * wl->H * pl->c.act_bytes;
  w->a2a_combine_B = wl->T * wl->a2a_dest * wl->H * pl->c.combine_bytes;
  w->mean_pairs = wl->mean_pairs;
}

/* ---- the planner as a session (internal.h): one config, one profile at
 * a time, its programs and times kept between calls ---- */

xs_status xs__moe_planner_new(const xs_moe_config *c, const xs_profile *prof,
                              xs__moe_planner **out, xs_error *err) {
  *out = NULL;
  planner *pl = malloc(sizeof *pl);
  if (!pl)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_status st = planner_init(pl, c, prof, NULL, err);
  if (st) {
    planner_free(pl);
    free(pl);
    return st;
  }
  *out = pl;
  return XS_OK;
}

void xs__moe_planner_free(xs__moe_planner *pl) {
  if (!pl)
    return;
  planner_free(pl);
  free(pl);
}

xs_status xs__moe_planner_on(xs__moe_planner *pl, const xs_profile *prof,
                             xs_error *err) {
  /* under the reference, nothing of one profile's plan into another's */
  if (xs__reference())
    forget(pl);
  return planner_rebase(pl, prof, err);
}

xs_status xs__moe_planner_options(xs__moe_planner *pl, unsigned schedules,
                                  xs_moe_option *out, size_t *n, xs_moe_workload *work,
                                  xs_error *err) {
  return xs__moe_planner_near(pl, schedules, INFINITY, -1, 0, out, n, work, err);
}

xs_status xs__moe_planner_near(xs__moe_planner *pl, unsigned schedules, double tol,
                               int must_s, unsigned must_rule, xs_moe_option *out,
                               size_t *n, xs_moe_workload *work, xs_error *err) {
  *n = 0;
  if (work)
    fill_work(pl, work);
  xs_status st = XS_OK;
  /* the option that must be exact first: its time bounds the others' */
  double best = INFINITY;
  evaluated *e;
  if (must_s >= 0 && (!schedules || (schedules & (1u << must_s)))) {
    xs_moe_pattern mk;
    int have = rule_knobs(pl, (xs_moe_schedule)must_s, must_rule, &mk, err);
    if (have == -2)
      return err->status;
    if (have > 0 &&
        (st = evaluate_rule(pl, (xs_moe_schedule)must_s, &mk, INFINITY, 0, &e, NULL, err)))
      return st;
    if (have > 0)
      best = e->time_s[0];
  }
  for (int s = 0; s < XS_MOE_SCHEDULES && !st; s++) {
    if (schedules && !(schedules & (1u << s)))
      continue;
    size_t first = *n;
    xs_moe_pattern dflt = {0};
    int have0 = 0;
    for (unsigned k = 0; !st && *n < XS_MOE_MAX_OPTIONS; k++) {
      xs_moe_pattern kn;
      int have = rule_knobs(pl, (xs_moe_schedule)s, k, &kn, err);
      if (have == -2) {
        st = err->status;
        break;
      }
      if (have < 0)
        break;
      if (!have)
        continue;
      xs_moe_option *o = &out[*n];
      o->schedule = (xs_moe_schedule)s;
      o->rule = k;
      /* past the tolerance of the fastest so far it cannot be near the
       * fastest: its evaluation stops there, its time INFINITY */
      double stop = s == must_s && k == must_rule ? INFINITY : best * (1 + tol);
      if ((st = evaluate_rule(pl, (xs_moe_schedule)s, &kn, stop, 0, &e, NULL, err)))
        break;
      o->time_s = isnan(e->time_s[0]) ? INFINITY : e->time_s[0];
      if (o->time_s < best)
        best = o->time_s;
      o->knobs = kn;
      if (!have0) {
        dflt = kn;
        have0 = 1;
      }
      o->away = (o->knobs.experts_per_wave != dflt.experts_per_wave) +
                (o->knobs.warmup != dflt.warmup) + (o->knobs.lag != dflt.lag) +
                (o->knobs.group != dflt.group) +
                (o->knobs.block_m != dflt.block_m) +
                (o->knobs.block_n != dflt.block_n);
      /* a rule whose values repeat an earlier one's is that option */
      int dup = 0;
      for (size_t j = first; j < *n && !dup; j++)
        dup = memcmp(&out[j].knobs, &o->knobs, sizeof o->knobs) == 0;
      if (!dup)
        (*n)++;
    }
  }
  if (st)
    *n = 0;
  return st;
}

xs_status xs__moe_planner_time(xs__moe_planner *pl, xs_moe_schedule s,
                               const xs_moe_pattern *knobs, double *time_s,
                               xs_error *err) {
  xs_moe_pattern kn = knobs ? *knobs : (xs_moe_pattern){0};
  evaluated *e;
  xs_status st = evaluate_rule(pl, s, &kn, INFINITY, 0, &e, NULL, err);
  if (!st)
    *time_s = e->time_s[0];
  return st;
}

xs_status xs_moe_options(const xs_moe_config *c, const xs_profile *prof,
                         unsigned schedules, xs_moe_option *out, size_t *n,
                         xs_moe_workload *work, xs_error *err) {
  *n = 0;
  planner *pl;
  xs_status st = xs__moe_planner_new(c, prof, &pl, err);
  if (!st)
    st = xs__moe_planner_options(pl, schedules, out, n, work, err);
  xs__moe_planner_free(pl);
  return st;
}

xs_status xs__moe_time(const xs_moe_config *c, const xs_profile *prof,
                       xs_moe_schedule s, const xs_moe_pattern *knobs,
                       double *time_s, xs_error *err) {
  return xs__moe_time_ep(c, prof, s, knobs, NULL, time_s, err);
}

xs_status xs__moe_time_ep(const xs_moe_config *c, const xs_profile *prof,
                          xs_moe_schedule s, const xs_moe_pattern *knobs,
                          const struct xs__ep_params *par, double *time_s,
                          xs_error *err) {
  planner *pl;
  xs_status st = xs__moe_planner_new(c, prof, &pl, err);
  if (!st) {
    pl->k.ep_par = par; /* before the all-to-all's times, which read it */
    st = xs__moe_planner_time(pl, s, knobs, time_s, err);
  }
  xs__moe_planner_free(pl);
  return st;
}

xs_status xs_moe_evaluate(const xs_moe_config *c, const xs_profile *prof,
                          xs_moe_schedule s, xs_moe_pattern *knobs,
                          double time_s[XS_MODEL_COUNT],
                          xs_moe_breakdown *bd, xs_error *err) {
  if ((unsigned)s >= XS_MOE_SCHEDULES)
    return xs__fail(err, XS_INVALID, "unknown schedule %d", (int)s);
  planner *pl;
  xs_status st = xs__moe_planner_new(c, prof, &pl, err);
  xs_moe_pattern kn = knobs ? *knobs : (xs_moe_pattern){0};
  evaluated *e = NULL;
  xs_program *p = NULL;
  if (!st)
    st = evaluate_rule(pl, s, &kn, INFINITY, 1, &e, &p, err);
  for (int m = 1; m < XS_MODEL_COUNT && !st; m++)
    st = model_time(pl, e, p, (xs_model)m, err);
  xs_program_free(p);
  if (!st && time_s)
    memcpy(time_s, e->time_s, sizeof e->time_s);
  if (!st && bd)
    *bd = e->bd;
  if (!st && knobs)
    *knobs = kn;
  xs__moe_planner_free(pl);
  return st;
}

xs_status xs_moe_predict(const xs_moe_config *c, const xs_profile *prof,
                         xs_moe_schedule s, double *time_s,
                         xs_moe_pattern *knobs, xs_moe_breakdown *bd,
                         xs_error *err) {
  if ((unsigned)s >= XS_MOE_SCHEDULES)
    return xs__fail(err, XS_INVALID, "unknown schedule %d", (int)s);
  planner *pl;
  xs_status st = xs__moe_planner_new(c, prof, &pl, err);
  double t = NAN;
  if (!st)
    st = search(pl, s, &t, knobs, bd, NULL, NULL, NULL, err);
  if (!st && time_s)
    *time_s = t;
  xs__moe_planner_free(pl);
  return st;
}

static xs_status program_of(const xs_moe_config *c, const xs_profile *prof,
                            xs_moe_schedule sched, const xs_moe_pattern *pat,
                            xs__moe_audit *audit, xs_program **out,
                            xs_error *err) {
  *out = NULL;
  if ((unsigned)sched >= XS_MOE_SCHEDULES)
    return xs__fail(err, XS_INVALID, "unknown schedule %d", (int)sched);
  char name[160];
  snprintf(name, sizeof name, "%s T=%g EP=%g %s", c->name, c->tokens, c->ep,
           sched_names[sched]);
  planner pl;
  xs_status st = planner_init(&pl, c, prof, name, err);
  pl.k.audit = audit;
  xs_moe_pattern kn = pat ? *pat : (xs_moe_pattern){0};
  if (!st)
    st = build(&pl, sched, &kn, 1, out, NULL, err);
  /* a program a user gets is checked, as every program is */
  if (!st && (st = xs_program_finish(*out, err))) {
    xs_program_free(*out);
    *out = NULL;
  }
  planner_free(&pl);
  return st;
}

xs_status xs_moe_program(const xs_moe_config *c, const xs_profile *prof,
                         xs_moe_schedule sched, const xs_moe_pattern *pat,
                         xs_program **out, xs_error *err) {
  return program_of(c, prof, sched, pat, NULL, out, err);
}

xs_status xs__moe_audit_program(const xs_moe_config *c, const xs_profile *prof,
                                xs_moe_schedule sched, const xs_moe_pattern *pat,
                                xs__moe_audit *audit, xs_program **out,
                                xs_error *err) {
  memset(audit, 0, sizeof *audit);
  return program_of(c, prof, sched, pat, audit, out, err);
}

xs_status xs__moe_planner_plan(xs__moe_planner *pl, xs_moe_result *out, xs_error *err) {
  memset(out, 0, sizeof *out);
  fill_work(pl, &out->work);
  xs_status st = XS_OK;
  double best = INFINITY, best_il = INFINITY, best_pl = INFINITY;
  for (int s = 0; s < XS_MOE_SCHEDULES && !st; s++) {
    evaluated *e = NULL;
    xs_program *p = NULL;
    st = search(pl, (xs_moe_schedule)s, &out->time_s[s][0], &out->knobs[s],
                &out->breakdown[s], &e, &p, &out->searched, err);
    /* the other models, unless another schedule's search chose the same
     * program */
    for (int m = 1; m < XS_MODEL_COUNT && !st && e; m++) {
      st = model_time(pl, e, p, (xs_model)m, err);
      out->time_s[s][m] = e->time_s[m];
    }
    xs_program_free(p);
    if (!st && s != XS_MOE_SEQUENTIAL && out->time_s[s][0] < best) {
      best = out->time_s[s][0];
      out->best_fused = (xs_moe_schedule)s;
    }
    double *b = xs_moe_schedule_interleaves((xs_moe_schedule)s) ? &best_il : &best_pl;
    if (!st && out->time_s[s][0] < *b) {
      *b = out->time_s[s][0];
      *(b == &best_il ? &out->best_interleaved : &out->best_plain) = (xs_moe_schedule)s;
    }
  }
  if (!st) {
    const xs_moe_breakdown *b = &out->breakdown[XS_MOE_INTERLEAVED];
    out->chosen = out->knobs[XS_MOE_INTERLEAVED];
    out->compute_s = b->compute_s;
    out->dispatch_wait_s = b->dispatch_s;
    out->stall_s = b->stall_s;
    out->xstage_tail_s = b->xstage_tail_s;
  }
  return st;
}

xs_status xs_moe_plan(const xs_moe_config *c, const xs_profile *prof,
                      xs_moe_result *out, xs_error *err) {
  memset(out, 0, sizeof *out);
  planner *pl;
  xs_status st = xs__moe_planner_new(c, prof, &pl, err);
  if (!st)
    st = xs__moe_planner_plan(pl, out, err);
  xs__moe_planner_free(pl);
  return st;
}
