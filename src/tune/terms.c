/*
 * terms.c: the MegaMoE kernel model's terms that kernel timings can
 * inform (docs/tune.md "Terms"): each is a number of a profile, or a set
 * moved together, scaled by a factor on a typed profile. The fit
 * (fit.c) and the online tuner (tuner.c) both work in these terms.
 */
#include "internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

enum { T_COST, T_CHANNEL };

static const struct {
  const char *name;
  int kind;
  int hbm;        /* T_CHANNEL: the "hbm" channel, else the default one  */
  size_t offset;  /* in xs_kernel_costs or xs_channel                    */
  const char *key;/* the key under compute. or channels.NAME.            */
} terms[XS_MOE_TERMS] = {
    {"gemm", T_COST, 0, offsetof(xs_kernel_costs, mma_clock_hz), "mma_clock_hz"},
    {"tile", T_COST, 0, offsetof(xs_kernel_costs, tile_overhead_s), "tile_overhead_s"},
    {"l2", T_COST, 0, offsetof(xs_kernel_costs, l2_Bps), "l2_Bps"},
    {"hbm", T_CHANNEL, 1, offsetof(xs_channel, drain_Bps), "drain_Bps"},
    {"link", T_CHANNEL, 0, offsetof(xs_channel, drain_Bps), "drain_Bps"},
    {"link-issue", T_CHANNEL, 0, offsetof(xs_channel, inject_Bps), "inject_Bps"},
    {"capacity", T_CHANNEL, 0, offsetof(xs_channel, capacity_B), "capacity_B"},
    {"latency", T_CHANNEL, 0, offsetof(xs_channel, latency_s), "latency_s"},
    {"launch", T_COST, 0, offsetof(xs_kernel_costs, launch_s), "launch_s"},
    {"barrier", T_COST, 0, offsetof(xs_kernel_costs, barrier_s), "barrier_s"},
    {"setup", T_COST, 0, offsetof(xs_kernel_costs, setup_s), "setup_s"},
    {"host-sync", T_COST, 0, offsetof(xs_kernel_costs, host_sync_s), "host_sync_s"},
    {"a2a", T_COST, 0, offsetof(xs_kernel_costs, a2a_fixed_s), "a2a_fixed_s"}};

#define FIELD(base, off) (*(double *)((char *)(base) + (off)))

const char *xs_moe_term_name(xs_moe_term t) {
  return (unsigned)t < XS_MOE_TERMS ? terms[t].name : NULL;
}

int xs_moe_term_from_name(const char *name) {
  for (int i = 0; i < XS_MOE_TERMS; i++)
    if (name && strcmp(terms[i].name, name) == 0)
      return i;
  return -1;
}

/* the channel a term moves, or -1 */
static long term_channel(const xs_profile *p, xs_moe_term t) {
  if (terms[t].kind != T_CHANNEL)
    return -1;
  if (terms[t].hbm)
    return xs_profile_find_channel(p, "hbm");
  return xs_profile_channel_count(p) ? (long)xs_profile_default_channel(p) : -1;
}

const char *xs_moe_term_keys(const xs_profile *p, xs_moe_term t, char *buf,
                             size_t size) {
  if (!size)
    return buf;
  buf[0] = '\0';
  if ((unsigned)t >= XS_MOE_TERMS)
    return buf;
  if (terms[t].kind == T_COST) {
    size_t n = (size_t)snprintf(buf, size, "compute.%s", terms[t].key);
    /* gemm: every dtype's MMA peak moves with the clock */
    for (size_t i = 0; t == XS_MOE_TERM_GEMM && n < size &&
                       i < xs__profile_flops_count(p); i++)
      n += (size_t)snprintf(buf + n, size - n, ", compute.flops_per_s.%s",
                            xs__profile_flops_dtype(p, i));
    return buf;
  }
  long c = term_channel(p, t);
  const char *ch = c >= 0 ? xs_profile_channel_name(p, (size_t)c)
                          : terms[t].hbm ? "hbm" : "LINK";
  size_t n = (size_t)snprintf(buf, size, "channels.%s.%s", ch, terms[t].key);
  if (t == XS_MOE_TERM_LINK_ISSUE && n < size && c >= 0) {
    const xs_channel *x = xs_profile_channel(p, (size_t)c);
    if (x->worker_inject_Bps != x->inject_Bps)
      snprintf(buf + n, size - n, ", channels.%s.worker_inject_Bps", ch);
  }
  return buf;
}

double xs_moe_term_value(const xs_profile *p, xs_moe_term t) {
  if ((unsigned)t >= XS_MOE_TERMS)
    return 0;
  if (terms[t].kind == T_COST) {
    xs_kernel_costs k;
    xs_profile_kernel_costs(p, &k);
    return FIELD(&k, terms[t].offset);
  }
  long c = term_channel(p, t);
  return c < 0 ? 0 : FIELD(xs_profile_channel(p, (size_t)c), terms[t].offset);
}

xs_status xs_moe_term_scale(xs_profile *p, xs_moe_term t, double f,
                            xs_error *err) {
  if ((unsigned)t >= XS_MOE_TERMS)
    return xs__fail(err, XS_INVALID, "unknown term %d", (int)t);
  if (!(f > 0 && isfinite(f)))
    return xs__fail(err, XS_INVALID, "%s: a factor must be positive and finite, got %g",
                    terms[t].name, f);
  if (terms[t].kind == T_COST) {
    xs_kernel_costs k;
    xs_profile_kernel_costs(p, &k);
    FIELD(&k, terms[t].offset) *= f;
    xs_status st = xs_profile_set_kernel_costs(p, &k, err);
    if (!st && t == XS_MOE_TERM_GEMM)
      xs__profile_scale_flops(p, f);
    return st;
  }
  long c = term_channel(p, t);
  if (c < 0)
    return xs__fail(err, XS_INVALID, "%s: profile \"%s\" has no %s channel",
                    terms[t].name, xs_profile_name(p),
                    terms[t].hbm ? "\"hbm\"" : "default");
  xs_channel *ch = xs__profile_channel_mut(p, (size_t)c);
  xs_channel was = *ch;
  FIELD(ch, terms[t].offset) *= f;
  if (t == XS_MOE_TERM_LINK_ISSUE)
    ch->worker_inject_Bps *= f;
  xs_status st = xs_channel_check(ch, xs_profile_channel_name(p, (size_t)c), err);
  if (st)
    *ch = was;
  return st;
}
