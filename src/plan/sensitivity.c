/*
 * sensitivity.c: the numbers a planner reads, their ranges by kind of
 * source, and typed copies of a profile with one of them moved (see
 * sensitivity.h and docs/tune.md "Sensitivity").
 */
#include "plan/sensitivity.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD(base, off) (*(double *)((char *)(base) + (off)))

static const struct {
  const char *name;
  size_t offset;
} channel_fields[] = {
    {"inject_Bps", offsetof(xs_channel, inject_Bps)},
    {"worker_inject_Bps", offsetof(xs_channel, worker_inject_Bps)},
    {"drain_Bps", offsetof(xs_channel, drain_Bps)},
    {"capacity_B", offsetof(xs_channel, capacity_B)},
    {"latency_s", offsetof(xs_channel, latency_s)},
    {"issue_overhead_s", offsetof(xs_channel, issue_overhead_s)}},
  cost_fields[] = {{"tile_overhead_s", offsetof(xs_kernel_costs, tile_overhead_s)},
                   {"wgmma_cycles", offsetof(xs_kernel_costs, wgmma_cycles)},
                   {"l2_Bps", offsetof(xs_kernel_costs, l2_Bps)},
                   {"launch_s", offsetof(xs_kernel_costs, launch_s)},
                   {"barrier_s", offsetof(xs_kernel_costs, barrier_s)},
                   {"setup_s", offsetof(xs_kernel_costs, setup_s)},
                   {"host_sync_s", offsetof(xs_kernel_costs, host_sync_s)},
                   {"a2a_fixed_s", offsetof(xs_kernel_costs, a2a_fixed_s)},
                   {"copy_efficiency", offsetof(xs_kernel_costs, copy_efficiency)},
                   {"ring_step_s", offsetof(xs_kernel_costs, ring_step_s)},
                   {"comm_sms", offsetof(xs_kernel_costs, comm_sms)},
                   {"comm_cta_Bps", offsetof(xs_kernel_costs, comm_cta_Bps)},
                   {"forward_sm_Bps", offsetof(xs_kernel_costs, forward_sm_Bps)},
                   {"host_op_s", offsetof(xs_kernel_costs, host_op_s)},
                   {"kernel_gap_s", offsetof(xs_kernel_costs, kernel_gap_s)},
                   {"nccl_p2p_s", offsetof(xs_kernel_costs, nccl_p2p_s)}};

static const char *const attn_keys[XS_ATTN_TABLES] = {
    "attn_flops_per_s", "attn_cta_s", "attn_causal_efficiency"};

/* the next slot of l (a spare past its room: counted, not kept) */
static xs__sens_param *next(xs__sens_list *l, int kind, double value) {
  static xs__sens_param spare;
  xs__sens_param *p = l->n < l->cap ? &l->p[l->n] : &spare;
  l->n++;
  memset(p, 0, sizeof *p);
  p->kind = kind;
  p->value = value;
  return p;
}

static int set(double v) { return v > 0 && isfinite(v); }

void xs__sens_channel(xs__sens_list *l, const xs_profile *prof, size_t i) {
  xs_channel ch = *xs_profile_channel(prof, i);
  for (size_t f = 0; f < sizeof channel_fields / sizeof channel_fields[0]; f++) {
    double v = FIELD(&ch, channel_fields[f].offset);
    if (!set(v) || (channel_fields[f].offset == offsetof(xs_channel, worker_inject_Bps) &&
                    v == ch.inject_Bps))
      continue;
    xs__sens_param *p = next(l, XS__SENS_CHANNEL, v);
    snprintf(p->key, sizeof p->key, "channels.%s.%s", xs_profile_channel_name(prof, i),
             channel_fields[f].name);
    p->chan = i;
    p->field = channel_fields[f].offset;
  }
}

void xs__sens_flops(xs__sens_list *l, const xs_profile *prof, const char *dtype) {
  double F = xs_profile_flops_per_s(prof, dtype);
  if (!set(F))
    return;
  xs__sens_param *p = next(l, XS__SENS_FLOPS, F);
  snprintf(p->key, sizeof p->key, "compute.flops_per_s.%s", dtype);
  snprintf(p->name, sizeof p->name, "%s", dtype);
}

void xs__sens_costs(xs__sens_list *l, const xs_profile *prof,
                    const char *const *names, size_t n) {
  xs_kernel_costs k;
  xs_profile_kernel_costs(prof, &k);
  for (size_t i = 0; i < n; i++)
    for (size_t f = 0; f < sizeof cost_fields / sizeof cost_fields[0]; f++) {
      double v = FIELD(&k, cost_fields[f].offset);
      if (strcmp(names[i], cost_fields[f].name) || !set(v))
        continue;
      xs__sens_param *p = next(l, XS__SENS_COST, v);
      snprintf(p->key, sizeof p->key, "compute.%s", cost_fields[f].name);
      p->field = cost_fields[f].offset;
    }
}

void xs__sens_hbm(xs__sens_list *l, const xs_profile *prof) {
  double v = xs_profile_hbm_Bps(prof);
  if (set(v))
    snprintf(next(l, XS__SENS_HBM, v)->key, sizeof l->p->key, "compute.hbm_Bps");
}

void xs__sens_efficiency(xs__sens_list *l, const xs_profile *prof) {
  double v = xs_profile_efficiency(prof);
  if (set(v))
    snprintf(next(l, XS__SENS_EFFICIENCY, v)->key, sizeof l->p->key, "compute.efficiency");
}

/* a fraction of a peak, 1 at most */
static int fraction(const xs__sens_param *p) {
  return p->kind == XS__SENS_EFFICIENCY ||
         (p->kind == XS__SENS_COST && p->field == offsetof(xs_kernel_costs, copy_efficiency));
}

void xs__sens_attn(xs__sens_list *l, const xs_profile *prof, xs_attn_table t,
                   const char *kernel) {
  double v = xs_profile_attn(prof, t, kernel);
  if (!set(v))
    return;
  xs__sens_param *p = next(l, XS__SENS_ATTN, v);
  snprintf(p->key, sizeof p->key, "compute.%s.%s", attn_keys[t], kernel);
  snprintf(p->name, sizeof p->name, "%s", kernel);
  p->table = (int)t;
}

xs_status xs__sens_moved(const xs_profile *prof, const xs__sens_param *p,
                         double f, xs_profile **out, xs_error *err) {
  *out = NULL;
  xs_profile *q = NULL;
  xs_status st = xs__profile_copy(prof, &q, err);
  if (st)
    return st;
  xs_error range; /* why the number left its valid range: not an error */
  /* the top of a fraction's range is 1 itself, not a rounding above it */
  double v = fraction(p) ? fmin(1, p->value * f) : p->value * f;
  switch (p->kind) {
  case XS__SENS_CHANNEL: {
    xs_channel *ch = xs__profile_channel_mut(q, p->chan);
    if (p->field == offsetof(xs_channel, inject_Bps) &&
        ch->worker_inject_Bps == ch->inject_Bps)
      ch->worker_inject_Bps *= f;
    FIELD(ch, p->field) *= f;
    st = xs_channel_check(ch, p->key, &range);
    break;
  }
  case XS__SENS_FLOPS:
    st = xs_profile_set_flops(q, p->name, v, &range);
    break;
  case XS__SENS_HBM:
    st = xs_profile_set_compute(q, xs_profile_sms(q), xs_profile_efficiency(q), v, &range);
    break;
  case XS__SENS_EFFICIENCY:
    st = xs_profile_set_compute(q, xs_profile_sms(q), v, xs_profile_hbm_Bps(q), &range);
    break;
  case XS__SENS_ATTN:
    st = xs_profile_set_attn(q, (xs_attn_table)p->table, p->name, v, &range);
    break;
  default: {
    xs_kernel_costs k;
    xs_profile_kernel_costs(q, &k);
    FIELD(&k, p->field) = v;
    st = xs_profile_set_kernel_costs(q, &k, &range);
  }
  }
  if (st == XS_INVALID) {
    xs_profile_free(q);
    return XS_OK;
  }
  if (st) {
    xs_profile_free(q);
    return xs__fail(err, st, "%s", range.message);
  }
  *out = q;
  return XS_OK;
}

void xs__sens_head(const xs_profile *prof, const xs__sens_param *p, const char *compute,
                   char param[96], double *value, char kind[16], double *lo, double *hi,
                   char settle[128], double factor[XS_MOE_SENS_FACTORS]) {
  memcpy(param, p->key, 96);
  *value = p->value;
  xs__sens_range(prof, p, kind, lo, hi, factor);
  snprintf(settle, 128, "%s", xs__sens_settle(p, compute));
}

/* a measurement's stated spread: the first "+-N%" or "\u00b1N%" of its
 * source, as a fraction; 0 when it states none */
static double stated_spread(const char *src) {
  for (const char *p = src; *p; p++) {
    const char *q = NULL;
    if (p[0] == '+' && p[1] == '-')
      q = p + 2;
    else if ((unsigned char)p[0] == 0xc2 && (unsigned char)p[1] == 0xb1)
      q = p + 2;
    if (!q)
      continue;
    const char *end;
    double v;
    if (!xs__decimal(q, &v, &end) && *end == '%' && v > 0 && v < 100)
      return v / 100;
  }
  return 0;
}

void xs__sens_range(const xs_profile *prof, const xs__sens_param *p,
                    char kind[16], double *lo_out, double *hi_out,
                    double factor[XS_MOE_SENS_FACTORS]) {
  const char *src = xs_profile_number_source(prof, p->key);
  size_t kl = src ? strcspn(src, ": (") : 0;
  snprintf(kind, 16, "%.*s", (int)(kl < 16 ? kl : 0), src ? src : "");
  size_t n = strlen(p->key);
  int rate = (n > 4 && !strcmp(p->key + n - 4, "_Bps")) || strstr(p->key, "flops_per_s");
  int capacity = n > 10 && !strcmp(p->key + n - 10, "capacity_B");
  double lo = 0.5, hi = 1.5;
  if (!strcmp(kind, "measurement")) {
    double sp = stated_spread(src);
    lo = 1 - (sp > 0 ? sp : 0.1);
    hi = 1 + (sp > 0 ? sp : 0.1);
  } else if (!strcmp(kind, "derived")) {
    lo = 0.8;
    hi = 1.2;
  } else if (!strcmp(kind, "datasheet")) {
    /* a peak: what kernels reach is below it */
    lo = rate ? 0.7 : 0.9;
    hi = rate ? 1 : 1.1;
  } else if (!strcmp(kind, "lead")) {
    if (capacity) {
      /* no fabric documents its buffers: from one CTA's outstanding
       * stores (64 KiB, reported for a GB300 host link, sglang issue
       * 40278) to that for every SM */
      double sms = xs_profile_sms(prof) > 0 ? xs_profile_sms(prof) : 132;
      lo = 65536 / p->value;
      hi = fmax(sms * 65536 / p->value, lo * 2);
    } else {
      lo = 1.0 / 3;
      hi = 3;
    }
  } else if (!strcmp(kind, "fitted")) {
    /* the fit's 68% interval of its factor (xstage fit megamoe), or the
     * spread of its refits without each source (the EP programs'
     * constants), about the number now */
    const char *q = strstr(src, "fitted: x");
    double scale = 1, l = 0, h = 0;
    if (q && xs__decimal(q + 9, &scale, NULL))
      scale = 0;
    const char *iv = strstr(src, "interval x"), *at = iv ? iv + 10 : NULL, *end;
    if (!iv && (iv = strstr(src, "without each source x")))
      at = iv + 21;
    if (at && !xs__decimal(at, &l, &end)) {
      const char *to = strstr(end, " to x");
      if (!to || xs__decimal(to + 5, &h, NULL))
        h = 0;
    }
    if (scale > 0 && l > 0 && h > l) {
      lo = l / scale;
      hi = h / scale;
    }
  }
  /* a fraction of a peak reaches 1 at most */
  if (fraction(p) && p->value * hi > 1)
    hi = fmax(1 / p->value, lo * 1.01);
  *lo_out = lo;
  *hi_out = hi;
  /* four factors from lo to hi, geometric; where one end is 1 (a peak),
   * none of them is */
  double a = log(lo), b = log(hi);
  for (int f = 0; f < XS_MOE_SENS_FACTORS; f++) {
    double t = hi == 1 ? (double)f / XS_MOE_SENS_FACTORS
                       : lo == 1 ? (double)(f + 1) / XS_MOE_SENS_FACTORS
                                 : (double)f / (XS_MOE_SENS_FACTORS - 1);
    factor[f] = exp(a + (b - a) * t);
  }
}

const char *xs__sens_settle(const xs__sens_param *p, const char *compute) {
  if (p->kind == XS__SENS_HBM || (p->kind == XS__SENS_CHANNEL && strstr(p->key, ".hbm.")))
    return "a device-memory bandwidth benchmark (no xstage probe measures HBM)";
  if (p->kind == XS__SENS_CHANNEL)
    return "xstage probe cuda-p2p (or xstage calibrate cuda-p2p) between two of the GPUs";
  return compute;
}
