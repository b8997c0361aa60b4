/*
 * profile.c: machine profiles (named channels plus a compute section) for
 * the evaluators and planners: building, parsing, the built-in set, and
 * serialising back to JSON. Format: docs/formats.md "Profile".
 */
#include "jsonutil.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
  char *name;
  xs_channel ch;
} named_channel;

typedef struct {
  char *dtype;
  double flops_per_s;
} flops_entry;

/* A FLOP/s table (flops_per_s or an attention table): entries in the order
 * they were set, found by dtype through the index. */
typedef struct {
  flops_entry *e;
  size_t n, cap;
  xs__strmap index; /* dtype -> entry */
} rate_table;

typedef struct {
  char *key, *text; /* "compute.hbm_Bps": "datasheet: ..." */
} source_entry;

/* The kernel costs' JSON keys, checks and fields: one table serves
 * xs_profile_set_kernel_costs, parsing and serialising. */
static const struct {
  const char *key;
  size_t offset;
  double hi;
  int whole; /* a count: a whole number, written as an integer */
} cost_keys[] = {
    {"launch_s", offsetof(xs_kernel_costs, launch_s), 1, 0},
    {"barrier_s", offsetof(xs_kernel_costs, barrier_s), 1, 0},
    {"a2a_fixed_s", offsetof(xs_kernel_costs, a2a_fixed_s), 1, 0},
    {"tile_overhead_s", offsetof(xs_kernel_costs, tile_overhead_s), 1, 0},
    {"mma_clock_hz", offsetof(xs_kernel_costs, mma_clock_hz), 1e11, 0},
    {"wgmma_cycles", offsetof(xs_kernel_costs, wgmma_cycles), 1e5, 0},
    {"l2_Bps", offsetof(xs_kernel_costs, l2_Bps), 1e16, 0},
    {"promotion", offsetof(xs_kernel_costs, promotion), 1, 0},
    {"setup_s", offsetof(xs_kernel_costs, setup_s), 1, 0},
    {"host_sync_s", offsetof(xs_kernel_costs, host_sync_s), 1, 0},
    {"copy_efficiency", offsetof(xs_kernel_costs, copy_efficiency), 1, 0},
    {"ring_step_s", offsetof(xs_kernel_costs, ring_step_s), 1, 0},
    {"comm_sms", offsetof(xs_kernel_costs, comm_sms), 1e4, 0},
    {"comm_cta_Bps", offsetof(xs_kernel_costs, comm_cta_Bps), 1e15, 0},
    {"forward_sm_Bps", offsetof(xs_kernel_costs, forward_sm_Bps), 1e15, 0},
    {"host_op_s", offsetof(xs_kernel_costs, host_op_s), 1, 0},
    {"kernel_gap_s", offsetof(xs_kernel_costs, kernel_gap_s), 1, 0},
    {"nccl_p2p_s", offsetof(xs_kernel_costs, nccl_p2p_s), 1, 0},
    {"ep_sm_streams", offsetof(xs_kernel_costs, ep_sm_streams), 1e3, 1},
    {"grid_sync_s", offsetof(xs_kernel_costs, grid_sync_s), 1, 0},
    {"signal_s", offsetof(xs_kernel_costs, signal_s), 1, 0},
    {"pdl_saving_s", offsetof(xs_kernel_costs, pdl_saving_s), 1, 0},
    {"atomic_s", offsetof(xs_kernel_costs, atomic_s), 1, 0},
    {"flag_s", offsetof(xs_kernel_costs, flag_s), 1, 0},
    {"l2_B", offsetof(xs_kernel_costs, l2_B), 1e12, 0}};
#define NCOSTS (sizeof cost_keys / sizeof cost_keys[0])
#define COST(k, i) (*(double *)((char *)(k) + cost_keys[i].offset))

struct xs_profile {
  char *name, *source;
  char *default_channel; /* NULL: the first in name order */
  named_channel *channels;
  size_t nchannels, channels_cap;
  unsigned sms;
  unsigned arch; /* compute capability x 10 (90: sm90); 0: not stated */
  double efficiency, hbm_Bps;
  rate_table flops, attn[XS_ATTN_TABLES];
  xs_kernel_costs costs;
  source_entry *sources;
  size_t nsources, sources_cap;
  /* GPUs that share one NVLink domain (0: not stated) and the fabric
   * merged in by xs_profile_add_fabric (NULL: none) */
  unsigned node_gpus;
  char *fabric;
};

/* generated from the JSON files in profiles/ by cmake/embed.cmake */
extern const size_t xs__builtin_count;
extern const char *const xs__builtin_names[];
extern const char *const xs__builtin_texts[];

size_t xs_builtin_profile_count(void) { return xs__builtin_count; }
const char *xs_builtin_profile_name(size_t i) {
  return i < xs__builtin_count ? xs__builtin_names[i] : NULL;
}
const char *xs_builtin_profile_text(size_t i) {
  return i < xs__builtin_count ? xs__builtin_texts[i] : NULL;
}

void xs_channel_init(xs_channel *c, double inject_Bps, double drain_Bps) {
  memset(c, 0, sizeof *c);
  c->inject_Bps = inject_Bps;
  c->worker_inject_Bps = inject_Bps;
  c->drain_Bps = drain_Bps;
  c->capacity_B = INFINITY;
  c->worker_inflight_B = INFINITY;
}

static int pos_finite(double x) { return isfinite(x) && x > 0; }
static int nonneg_finite(double x) { return isfinite(x) && x >= 0; }

xs_status xs_channel_check(const xs_channel *c, const char *name,
                           xs_error *err) {
  const char *n = name ? name : "channel";
  if (!pos_finite(c->inject_Bps))
    return xs__fail(err, XS_INVALID,
                    "%s: inject_Bps must be positive and finite, got %g", n,
                    c->inject_Bps);
  if (!pos_finite(c->worker_inject_Bps))
    return xs__fail(err, XS_INVALID,
                    "%s: worker_inject_Bps must be positive and finite, got %g",
                    n, c->worker_inject_Bps);
  if (!pos_finite(c->drain_Bps))
    return xs__fail(err, XS_INVALID,
                    "%s: drain_Bps must be positive and finite, got %g", n,
                    c->drain_Bps);
  if (!(c->capacity_B >= 0) || isnan(c->capacity_B))
    return xs__fail(err, XS_INVALID,
                    "%s: capacity_B must be >= 0 (or unbounded), got %g", n,
                    c->capacity_B);
  if (!nonneg_finite(c->latency_s))
    return xs__fail(err, XS_INVALID,
                    "%s: latency_s must be >= 0 and finite, got %g", n,
                    c->latency_s);
  if (!nonneg_finite(c->issue_overhead_s))
    return xs__fail(err, XS_INVALID,
                    "%s: issue_overhead_s must be >= 0 and finite, got %g", n,
                    c->issue_overhead_s);
  if (!nonneg_finite(c->packet_B))
    return xs__fail(err, XS_INVALID,
                    "%s: packet_B must be > 0 and finite, got %g", n,
                    c->packet_B);
  if (!(c->worker_inflight_B > 0))
    return xs__fail(err, XS_INVALID,
                    "%s: worker_inflight_B must be > 0 (or unbounded), got %g",
                    n, c->worker_inflight_B);
  return XS_OK;
}

xs_profile *xs_profile_new(const char *name, const char *source) {
  xs_profile *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->efficiency = 1; /* as a profile file without "efficiency" */
  p->name = xs__strdup(name ? name : "");
  p->source = xs__strdup(source ? source : "");
  if (!p->name || !p->source) {
    xs_profile_free(p);
    return NULL;
  }
  return p;
}

static void rates_free(rate_table *t) {
  for (size_t i = 0; i < t->n; i++)
    free(t->e[i].dtype);
  free(t->e);
  xs__strmap_free(&t->index);
  memset(t, 0, sizeof *t);
}

void xs_profile_free(xs_profile *p) {
  if (!p)
    return;
  for (size_t i = 0; i < p->nchannels; i++)
    free(p->channels[i].name);
  rates_free(&p->flops);
  free(p->default_channel);
  for (int t = 0; t < XS_ATTN_TABLES; t++)
    rates_free(&p->attn[t]);
  for (size_t i = 0; i < p->nsources; i++) {
    free(p->sources[i].key);
    free(p->sources[i].text);
  }
  free(p->sources);
  free(p->fabric);
  free(p->channels);
  free(p->name);
  free(p->source);
  free(p);
}

static xs_status channel_ok(const char *name, const xs_channel *c,
                            xs_error *err) {
  if (!name || !*name)
    return xs__fail(err, XS_INVALID, "a channel needs a non-empty name");
  if (!xs__utf8_ok(name))
    return xs__fail(err, XS_INVALID, "a channel's name must be UTF-8");
  return xs_channel_check(c, name, err);
}

/* Put a checked channel at index at. */
static xs_status put_channel(xs_profile *p, size_t at, const char *name,
                             const xs_channel *c, xs_error *err) {
  if (xs__grow(&p->channels, &p->channels_cap, p->nchannels + 1,
               sizeof *p->channels))
    return xs__fail(err, XS_NOMEM, "out of memory");
  char *copy = xs__strdup(name);
  if (!copy)
    return xs__fail(err, XS_NOMEM, "out of memory");
  memmove(p->channels + at + 1, p->channels + at,
          (p->nchannels - at) * sizeof *p->channels);
  p->channels[at].name = copy;
  p->channels[at].ch = *c;
  p->nchannels++;
  return XS_OK;
}

xs_status xs_profile_add_channel(xs_profile *p, const char *name,
                                 const xs_channel *c, xs_error *err) {
  xs_status st = channel_ok(name, c, err);
  if (st)
    return st;
  /* the channels stay in name order: the first not before name */
  size_t lo = 0, hi = p->nchannels;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(p->channels[mid].name, name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < p->nchannels && strcmp(p->channels[lo].name, name) == 0)
    return xs__fail(err, XS_INVALID, "channel \"%s\" is defined twice", name);
  return put_channel(p, lo, name, c, err);
}

static int by_channel_name(const void *x, const void *y) {
  const named_channel *a = x, *b = y;
  return strcmp(a->name, b->name);
}

xs_status xs_profile_set_compute(xs_profile *p, unsigned sms,
                                 double efficiency, double hbm_Bps,
                                 xs_error *err) {
  if (!(efficiency > 0 && efficiency <= 1))
    return xs__fail(err, XS_INVALID,
                    "compute efficiency must be in (0, 1], got %g",
                    efficiency);
  if (!(hbm_Bps >= 0) || !isfinite(hbm_Bps))
    return xs__fail(err, XS_INVALID, "hbm_Bps must be >= 0, got %g", hbm_Bps);
  p->sms = sms;
  p->efficiency = efficiency;
  p->hbm_Bps = hbm_Bps;
  return XS_OK;
}

xs_status xs_profile_copy_compute(xs_profile *to, const xs_profile *from,
                                  xs_error *err) {
  if (!from->sms)
    return xs__fail(err, XS_INVALID, "profile \"%s\" has no compute section", from->name);
  rates_free(&to->flops);
  for (int t = 0; t < XS_ATTN_TABLES; t++)
    rates_free(&to->attn[t]);
  xs_status st = xs_profile_set_compute(to, from->sms, from->efficiency, from->hbm_Bps, err);
  to->arch = from->arch;
  for (size_t i = 0; !st && i < from->flops.n; i++)
    st = xs_profile_set_flops(to, from->flops.e[i].dtype, from->flops.e[i].flops_per_s, err);
  for (int t = 0; t < XS_ATTN_TABLES; t++)
    for (size_t i = 0; !st && i < from->attn[t].n; i++)
      st = xs_profile_set_attn(to, (xs_attn_table)t, from->attn[t].e[i].dtype,
                               from->attn[t].e[i].flops_per_s, err);
  if (!st)
    st = xs_profile_set_kernel_costs(to, &from->costs, err);
  /* the GPU's memory is a channel: it comes with the compute section */
  long hf = xs_profile_find_channel(from, "hbm");
  if (!st && hf >= 0)
    st = xs_profile_add_channel(to, "hbm", &from->channels[hf].ch, err);
  return st;
}

/* set dtype's entry of a FLOP/s table, named key in messages */
static xs_status set_rate(rate_table *t, const char *key, const char *dtype,
                          double flops_per_s, xs_error *err) {
  if (!dtype || !*dtype || !xs__utf8_ok(dtype))
    return xs__fail(err, XS_INVALID, "%s: a name must be non-empty UTF-8", key);
  if (!pos_finite(flops_per_s))
    return xs__fail(err, XS_INVALID,
                    "%s.%s must be positive and finite, got %g", key,
                    dtype, flops_per_s);
  uint32_t i;
  if (xs__strmap_get(&t->index, dtype, &i)) {
    t->e[i].flops_per_s = flops_per_s;
    return XS_OK;
  }
  if (t->n >= UINT32_MAX ||
      xs__grow(&t->e, &t->cap, t->n + 1, sizeof *t->e))
    return xs__fail(err, XS_NOMEM, "out of memory");
  char *copy = xs__strdup(dtype);
  if (!copy || xs__strmap_put(&t->index, dtype, (uint32_t)t->n) < 0) {
    free(copy);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  t->e[t->n].dtype = copy;
  t->e[t->n].flops_per_s = flops_per_s;
  t->n++;
  return XS_OK;
}

/* dtype's entry, or NULL */
static const flops_entry *find_rate(const rate_table *t, const char *dtype) {
  uint32_t i;
  return xs__strmap_get(&t->index, dtype, &i) ? &t->e[i] : NULL;
}

xs_status xs_profile_set_flops(xs_profile *p, const char *dtype,
                               double flops_per_s, xs_error *err) {
  return set_rate(&p->flops, "flops_per_s", dtype, flops_per_s, err);
}

xs_status xs_profile_set_default_channel(xs_profile *p, const char *name,
                                         xs_error *err) {
  if (!name) {
    free(p->default_channel);
    p->default_channel = NULL;
    return XS_OK;
  }
  if (xs_profile_find_channel(p, name) < 0)
    return xs__fail(err, XS_INVALID,
                    "default_channel \"%s\" is not a channel of profile \"%s\"",
                    name, p->name);
  char *c = xs__strdup(name);
  if (!c)
    return xs__fail(err, XS_NOMEM, "out of memory");
  free(p->default_channel);
  p->default_channel = c;
  return XS_OK;
}

size_t xs_profile_default_channel(const xs_profile *p) {
  long c = p->default_channel ? xs_profile_find_channel(p, p->default_channel)
                              : -1;
  return c >= 0 ? (size_t)c : 0;
}

xs_status xs_profile_set_kernel_costs(xs_profile *p, const xs_kernel_costs *k,
                                      xs_error *err) {
  for (size_t i = 0; i < NCOSTS; i++) {
    double v = COST(k, i);
    if (!(v >= 0 && v <= cost_keys[i].hi))
      return xs__fail(err, XS_INVALID, "%s must be in [0, %g], got %g",
                      cost_keys[i].key, cost_keys[i].hi, v);
    if (cost_keys[i].whole && v != floor(v))
      return xs__fail(err, XS_INVALID, "%s must be a whole number, got %g",
                      cost_keys[i].key, v);
  }
  if (k->promotion != 0 && k->promotion != 1)
    return xs__fail(err, XS_INVALID,
                    "promotion must be 0 (the MMA scales) or 1 (CUDA cores "
                    "promote the accumulators), got %g",
                    k->promotion);
  p->costs = *k;
  return XS_OK;
}

void xs_profile_kernel_costs(const xs_profile *p, xs_kernel_costs *out) {
  *out = p->costs;
}

static const char *const attn_names[XS_ATTN_TABLES] = {
    "attn_flops_per_s", "attn_cta_s", "attn_causal_efficiency"};

xs_status xs_profile_set_attn(xs_profile *p, xs_attn_table t,
                              const char *kernel, double value,
                              xs_error *err) {
  if ((unsigned)t >= XS_ATTN_TABLES)
    return xs__fail(err, XS_INVALID, "unknown attention table %d", (int)t);
  if (t == XS_ATTN_CAUSAL_EFFICIENCY && value > 2)
    return xs__fail(err, XS_INVALID, "%s.%s: expected a ratio in (0, 2], "
                    "got %g", attn_names[t], kernel, value);
  return set_rate(&p->attn[t], attn_names[t], kernel, value, err);
}

double xs_profile_attn(const xs_profile *p, xs_attn_table t,
                       const char *kernel) {
  if ((unsigned)t >= XS_ATTN_TABLES)
    return 0;
  const flops_entry *a = find_rate(&p->attn[t], kernel);
  return a ? a->flops_per_s : 0;
}


static xs_status set_source(xs_profile *p, const char *key, const char *text,
                            xs_error *err) {
  if (xs__grow(&p->sources, &p->sources_cap, p->nsources + 1,
               sizeof *p->sources))
    return xs__fail(err, XS_NOMEM, "out of memory");
  char *k = xs__strdup(key), *v = xs__strdup(text);
  if (!k || !v) {
    free(k);
    free(v);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  p->sources[p->nsources++] = (source_entry){k, v};
  return XS_OK;
}

const char *xs_profile_number_source(const xs_profile *p, const char *key) {
  for (size_t i = 0; i < p->nsources; i++)
    if (strcmp(p->sources[i].key, key) == 0)
      return p->sources[i].text;
  return NULL;
}
size_t xs_profile_source_count(const xs_profile *p) { return p->nsources; }
const char *xs_profile_source_key(const xs_profile *p, size_t i) {
  return i < p->nsources ? p->sources[i].key : NULL;
}

const char *xs_profile_name(const xs_profile *p) { return p->name; }
const char *xs_profile_source(const xs_profile *p) { return p->source; }
size_t xs_profile_channel_count(const xs_profile *p) { return p->nchannels; }
const char *xs_profile_channel_name(const xs_profile *p, size_t i) {
  return i < p->nchannels ? p->channels[i].name : NULL;
}
const xs_channel *xs_profile_channel(const xs_profile *p, size_t i) {
  return i < p->nchannels ? &p->channels[i].ch : NULL;
}
long xs_profile_find_channel(const xs_profile *p, const char *name) {
  for (size_t i = 0; i < p->nchannels; i++)
    if (strcmp(p->channels[i].name, name) == 0)
      return (long)i;
  return -1;
}
unsigned xs_profile_sms(const xs_profile *p) { return p->sms; }
double xs_profile_efficiency(const xs_profile *p) { return p->efficiency; }
double xs_profile_hbm_Bps(const xs_profile *p) { return p->hbm_Bps; }
double xs_profile_flops_per_s(const xs_profile *p, const char *dtype) {
  const flops_entry *f = find_rate(&p->flops, dtype);
  return f ? f->flops_per_s : 0;
}

/* ---- node size and fabrics (docs/formats.md "Fabrics") ---- */

#define NODE_GPUS_DEFAULT 8
#define NODE_GPUS_MAX 65536

unsigned xs_profile_arch(const xs_profile *p) { return p->arch; }

/* the architectures xstage's planners know kernels for: Ampere, Ada,
 * Hopper, Blackwell (datacenter, Ultra, consumer) */
static int arch_known(unsigned a) {
  static const unsigned known[] = {80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (a == known[i])
      return 1;
  return 0;
}

xs_status xs_profile_set_arch(xs_profile *p, unsigned arch, xs_error *err) {
  if (arch && !arch_known(arch))
    return xs__fail(err, XS_INVALID,
                    "arch sm%u is not one xstage knows (sm80, sm86, sm87, sm89, "
                    "sm90, sm100, sm101, sm103, sm110, sm120, sm121)",
                    arch);
  p->arch = arch;
  return XS_OK;
}

unsigned xs_profile_node_gpus(const xs_profile *p) {
  return p->node_gpus ? p->node_gpus : NODE_GPUS_DEFAULT;
}

xs_status xs_profile_set_node_gpus(xs_profile *p, unsigned gpus,
                                   xs_error *err) {
  if (gpus < 1 || gpus > NODE_GPUS_MAX)
    return xs__fail(err, XS_INVALID,
                    "node_gpus must be a whole number from 1 to %d, got %u",
                    NODE_GPUS_MAX, gpus);
  p->node_gpus = gpus;
  return XS_OK;
}

const char *xs_profile_fabric(const xs_profile *p) { return p->fabric; }

static xs_status set_fabric_name(xs_profile *p, const char *name,
                                 xs_error *err) {
  char *c = xs__strdup(name);
  if (!c)
    return xs__fail(err, XS_NOMEM, "out of memory");
  free(p->fabric);
  p->fabric = c;
  return XS_OK;
}

xs_status xs_profile_add_fabric(xs_profile *p, const xs_profile *fabric,
                                xs_error *err) {
  if (p->fabric)
    return xs__fail(err, XS_INVALID,
                    "profile \"%s\" already has the fabric \"%s\"", p->name,
                    p->fabric);
  if (xs_profile_find_channel(fabric, "nic") < 0)
    return xs__fail(err, XS_INVALID,
                    "\"%s\" is not a fabric: a fabric profile has a channel "
                    "named \"nic\" (docs/formats.md \"Fabrics\")",
                    fabric->name);
  for (size_t i = 0; i < fabric->nchannels; i++)
    if (xs_profile_find_channel(p, fabric->channels[i].name) >= 0)
      return xs__fail(err, XS_INVALID,
                      "fabric \"%s\": profile \"%s\" already has a channel "
                      "named \"%s\"",
                      fabric->name, p->name, fabric->channels[i].name);
  size_t len = strlen(p->name) + strlen(fabric->name) + 2;
  char *name = malloc(len);
  if (!name)
    return xs__fail(err, XS_NOMEM, "out of memory");
  snprintf(name, len, "%s+%s", p->name, fabric->name);
  xs_status st = XS_OK;
  for (size_t i = 0; !st && i < fabric->nchannels; i++)
    st = xs_profile_add_channel(p, fabric->channels[i].name,
                                &fabric->channels[i].ch, err);
  /* the fabric's numbers keep their sources, under the same keys
   * ("channels.nic.drain_Bps") */
  for (size_t i = 0; !st && i < fabric->nsources; i++)
    if (!xs_profile_number_source(p, fabric->sources[i].key))
      st = set_source(p, fabric->sources[i].key, fabric->sources[i].text, err);
  if (!st)
    st = set_fabric_name(p, fabric->name, err);
  if (st) {
    free(name);
    return st;
  }
  free(p->name);
  p->name = name;
  return XS_OK;
}

/* ---- parsing ---- */

static xs_status parse_channel(xs__jdoc *d, xs_profile *p, const char *name,
                               json_t *obj) {
  static const char *const keys[] = {
      "inject_Bps", "worker_inject_Bps", "drain_Bps",       "capacity_B",
      "latency_s",  "issue_overhead_s",  "packet_B",        "worker_inflight_B",
      "source",     NULL};
  if (!json_is_object(obj))
    return xs__jfail(d, "a channel is an object of parameters, got %s",
                     xs__jtype(obj));
  xs_status st = xs__jkeys(d, obj, keys);
  if (st)
    return st;
  xs_channel c;
  xs_channel_init(&c, 1, 1);
  int have;
  if ((st = xs__jnumber(d, obj, "inject_Bps", XS__J_POSITIVE,
                        "an injection rate in bytes/s", &c.inject_Bps, NULL)))
    return st;
  c.worker_inject_Bps = c.inject_Bps;
  if ((st = xs__jnumber(d, obj, "worker_inject_Bps", XS__J_POSITIVE,
                        "a per-worker injection rate in bytes/s",
                        &c.worker_inject_Bps, &have)))
    return st;
  if ((st = xs__jnumber(d, obj, "drain_Bps", XS__J_POSITIVE,
                        "a drain rate in bytes/s", &c.drain_Bps, NULL)))
    return st;
  if ((st = xs__jnumber(d, obj, "capacity_B", XS__J_NONNEG | XS__J_NULLABLE,
                        "a capacity in bytes or null", &c.capacity_B, &have)))
    return st;
  if ((st = xs__jnumber(d, obj, "latency_s", XS__J_NONNEG,
                        "a latency in seconds", &c.latency_s, &have)))
    return st;
  if ((st = xs__jnumber(d, obj, "issue_overhead_s", XS__J_NONNEG,
                        "an overhead in seconds", &c.issue_overhead_s, &have)))
    return st;
  if ((st = xs__jnumber(d, obj, "packet_B", XS__J_POSITIVE,
                        "a packet size in bytes", &c.packet_B, &have)))
    return st;
  if ((st = xs__jnumber(d, obj, "worker_inflight_B",
                        XS__J_POSITIVE | XS__J_NULLABLE,
                        "a per-worker in-flight limit in bytes or null",
                        &c.worker_inflight_B, &have)))
    return st;
  const char *src;
  if ((st = xs__jstring(d, obj, "source", &src, &have)))
    return st;
  /* appended: the parser puts the channels in name order once all are in
   * (the names differ: the JSON parser refuses a key given twice) */
  xs_error e2;
  if (channel_ok(name, &c, &e2) || put_channel(p, p->nchannels, name, &c, &e2))
    return xs__jfail(d, "%s", e2.message);
  return XS_OK;
}

static xs_status parse_compute(xs__jdoc *d, xs_profile *p, json_t *obj) {
  static const char *const keys[] = {
      "sms",          "flops_per_s",    "efficiency",   "hbm_Bps",
      "launch_s",     "barrier_s",      "a2a_fixed_s",  "tile_overhead_s",
      "mma_clock_hz", "wgmma_cycles",   "l2_Bps",       "promotion",
      "setup_s",      "host_sync_s",    "attn_flops_per_s", "attn_cta_s",
      "attn_causal_efficiency", "copy_efficiency", "ring_step_s", "comm_sms",
      "comm_cta_Bps", "forward_sm_Bps", "ep_sm_streams", "host_op_s",
      "kernel_gap_s", "nccl_p2p_s",     "grid_sync_s",
      "signal_s",     "pdl_saving_s",   "atomic_s",
      "flag_s",       "l2_B",           "arch",
      NULL};
  if (!json_is_object(obj))
    return xs__jfail(d, "expected an object, got %s", xs__jtype(obj));
  xs_status st = xs__jkeys(d, obj, keys);
  if (st)
    return st;
  double sms = 0, eff = 1, hbm = 0;
  int have;
  if ((st = xs__jnumber(d, obj, "sms", XS__J_POSITIVE | XS__J_INTEGER,
                        "a number of SMs", &sms, &have)))
    return st;
  if ((st = xs__jnumber(d, obj, "efficiency", XS__J_POSITIVE,
                        "an efficiency in (0, 1]", &eff, &have)))
    return st;
  if (eff > 1) {
    xs__jpath_key(&d->path, "efficiency");
    return xs__jfail(d, "expected an efficiency in (0, 1], got %g", eff);
  }
  if ((st = xs__jnumber(d, obj, "hbm_Bps", XS__J_POSITIVE,
                        "a memory bandwidth in bytes/s", &hbm, &have)))
    return st;
  p->sms = (unsigned)sms;
  p->efficiency = eff;
  p->hbm_Bps = hbm;
  const char *arch;
  if ((st = xs__jstring(d, obj, "arch", &arch, &have)))
    return st;
  if (have) {
    /* "sm90", "sm100": the GPU's compute capability, which says which
     * kernels it runs (docs/formats.md) */
    char *end;
    unsigned long a = strncmp(arch, "sm", 2) ? 0 : strtoul(arch + 2, &end, 10);
    xs_error e2;
    if (!a || *end || a > 1000 || xs_profile_set_arch(p, (unsigned)a, &e2)) {
      xs__jpath_key(&d->path, "arch");
      return xs__jfail(d, "expected an architecture such as \"sm90\" (sm80, sm86, "
                          "sm87, sm89, sm90, sm100, sm101, sm103, sm110, sm120, "
                          "sm121), got \"%s\"", arch);
    }
  }
  xs_kernel_costs k = {0};
  xs__jfield costs[NCOSTS];
  for (size_t i = 0; i < NCOSTS; i++)
    costs[i] = (xs__jfield){cost_keys[i].key, &COST(&k, i)};
  if ((st = xs__jnumbers(d, obj, costs, NCOSTS)))
    return st;
  xs_error e2;
  if (xs_profile_set_kernel_costs(p, &k, &e2))
    return xs__jfail_checked(d, obj, &e2);
  static const char *const tables[] = {"flops_per_s", "attn_flops_per_s",
                                       "attn_cta_s", "attn_causal_efficiency"};
  for (int t = 0; t < 4; t++) {
    json_t *fl = json_object_get(obj, tables[t]);
    if (!fl)
      continue;
    xs__jpath_key(&d->path, tables[t]);
    if (!json_is_object(fl))
      return xs__jfail(d, "expected an object of dtype: FLOP/s, got %s",
                       xs__jtype(fl));
    const char *key;
    json_t *v;
    json_object_foreach(fl, key, v) {
      double x;
      if ((st = xs__jnumber(d, fl, key, XS__J_POSITIVE, "FLOP/s", &x, NULL)))
        return st;
      if ((t >= 1 ? xs_profile_set_attn(p, (xs_attn_table)(t - 1), key, x, &e2)
                  : xs_profile_set_flops(p, key, x, &e2)))
        return xs__jfail(d, "%s", e2.message);
    }
    xs__jpath_pop(&d->path);
  }
  return XS_OK;
}

static xs_status parse_sources(xs__jdoc *d, xs_profile *p, json_t *obj) {
  if (!json_is_object(obj))
    return xs__jfail(d, "expected an object of \"key path\": \"where the "
                        "number comes from\", got %s",
                     xs__jtype(obj));
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v) {
    const char *text;
    xs_status st = xs__jstring(d, obj, k, &text, NULL);
    if (st)
      return st;
    xs_error e2;
    if (set_source(p, k, text, &e2))
      return xs__jfail(d, "%s", e2.message);
  }
  return XS_OK;
}

xs_status xs_profile_parse(const char *text, size_t length,
                           const char *filename, xs_profile **out,
                           xs_error *err) {
  static const char *const keys[] = {"name",    "source",          "channels",
                                     "compute", "default_channel", "notes",
                                     "sources", "node_gpus",       "fabric",
                                     NULL};
  xs__jdoc d = {filename, text, length, {0}, err};
  json_t *root;
  *out = NULL;
  xs_status st = xs__jparse(&d, &root);
  if (st)
    return st;
  xs_profile *p = NULL;
  if (!json_is_object(root)) {
    st = xs__jfail(&d, "a profile is an object with \"name\" and "
                       "\"channels\", got %s",
                   xs__jtype(root));
    goto done;
  }
  if ((st = xs__jkeys(&d, root, keys)))
    goto done;
  const char *name, *source = "";
  int have;
  if ((st = xs__jstring(&d, root, "name", &name, NULL)) ||
      (st = xs__jstring(&d, root, "source", &source, &have)))
    goto done;
  p = xs_profile_new(name, source);
  if (!p) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  json_t *chs = json_object_get(root, "channels");
  if (!chs) {
    st = xs__jfail(&d, "missing \"channels\" (an object of named channels)");
    goto done;
  }
  xs__jpath_key(&d.path, "channels");
  if (!json_is_object(chs) || json_object_size(chs) == 0) {
    st = xs__jfail(&d, "expected a non-empty object of named channels, got %s",
                   json_is_object(chs) ? "an empty object" : xs__jtype(chs));
    goto done;
  }
  const char *k;
  json_t *v;
  json_object_foreach(chs, k, v) {
    xs__jpath_key(&d.path, k);
    if (!*k) {
      st = xs__jfail(&d, "a channel needs a non-empty name");
      goto done;
    }
    if ((st = parse_channel(&d, p, k, v)))
      goto done;
    xs__jpath_pop(&d.path);
  }
  qsort(p->channels, p->nchannels, sizeof *p->channels, by_channel_name);
  xs__jpath_pop(&d.path);
  const char *dc;
  if ((st = xs__jstring(&d, root, "default_channel", &dc, &have)))
    goto done;
  if (have) {
    xs_error e2;
    if (xs_profile_set_default_channel(p, dc, &e2)) {
      xs__jpath_key(&d.path, "default_channel");
      st = e2.status == XS_NOMEM ? xs__fail(err, XS_NOMEM, "%s", e2.message)
                                 : xs__jfail(&d, "%s", e2.message);
      goto done;
    }
  }
  double node_gpus;
  if ((st = xs__jnumber(&d, root, "node_gpus", XS__J_POSITIVE | XS__J_INTEGER,
                        "a number of GPUs in one NVLink domain", &node_gpus,
                        &have)))
    goto done;
  if (have) {
    xs_error e2;
    if (node_gpus > NODE_GPUS_MAX) { /* past an unsigned's range, named as given */
      xs__jpath_key(&d.path, "node_gpus");
      st = xs__jfail(&d, "expected a whole number from 1 to %d, got %g", NODE_GPUS_MAX,
                     node_gpus);
      goto done;
    }
    if (xs_profile_set_node_gpus(p, (unsigned)node_gpus, &e2)) {
      xs__jpath_key(&d.path, "node_gpus");
      st = xs__jfail(&d, "%s", e2.message);
      goto done;
    }
  }
  const char *fab;
  if ((st = xs__jstring(&d, root, "fabric", &fab, &have)))
    goto done;
  if (have && (st = set_fabric_name(p, fab, err)))
    goto done;
  json_t *comp = json_object_get(root, "compute");
  if (comp) {
    xs__jpath_key(&d.path, "compute");
    if ((st = parse_compute(&d, p, comp)))
      goto done;
    xs__jpath_pop(&d.path);
  }
  json_t *srcs = json_object_get(root, "sources");
  if (srcs) {
    xs__jpath_key(&d.path, "sources");
    if ((st = parse_sources(&d, p, srcs)))
      goto done;
    xs__jpath_pop(&d.path);
  }
done:
  json_decref(root);
  if (st) {
    xs_profile_free(p);
    return st;
  }
  *out = p;
  return XS_OK;
}

static xs_status load_with_fabric(const char *spec, const char *plus,
                                  xs_profile **out, xs_error *err);

/* 1 for a fabric (a profile with a "nic" channel), 0 for a GPU's, -1 when
 * the built-in profile i does not parse */
static int builtin_kind(size_t i, xs_profile **keep) {
  xs_profile *p;
  xs_error e;
  char fn[128];
  snprintf(fn, sizeof fn, "builtin:%s", xs__builtin_names[i]);
  if (xs_profile_parse(xs__builtin_texts[i], strlen(xs__builtin_texts[i]), fn, &p, &e))
    return -1;
  int fabric = xs_profile_find_channel(p, "nic") >= 0;
  if (keep)
    *keep = p;
  else
    xs_profile_free(p);
  return fabric;
}

xs_status xs__profile_builtin(const char *name, int fabric, xs_profile **out,
                              xs_error *err) {
  *out = NULL;
  const char *kind = fabric ? "fabric" : "GPU profile";
  int found = -1;
  for (size_t i = 0; i < xs__builtin_count; i++)
    if (!strcmp(xs__builtin_names[i], name)) {
      xs_profile *p = NULL;
      found = builtin_kind(i, &p);
      if (found == !!fabric) {
        *out = p;
        return XS_OK;
      }
      xs_profile_free(p);
    }
  /* the built-in ones of the kind asked for, for the message */
  char list[512];
  size_t n = 0;
  list[0] = '\0';
  for (size_t i = 0; i < xs__builtin_count && n < sizeof list; i++)
    if (builtin_kind(i, NULL) == !!fabric) {
      int w = snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "",
                       xs__builtin_names[i]);
      n += w > 0 ? (size_t)w : 0;
    }
  if (found >= 0)
    return xs__fail(err, XS_INVALID, "\"%s\" is a %s, not a %s (%s)", name,
                    fabric ? "GPU profile" : "fabric", kind, list);
  return xs__fail(err, XS_INVALID, "\"%.96s\"%s is not a built-in %s (%s)", name,
                  strlen(name) > 96 ? "..." : "", kind, list);
}

xs_status xs_profile_load(const char *name_or_path, xs_profile **out,
                          xs_error *err) {
  *out = NULL;
  for (size_t i = 0; i < xs__builtin_count; i++)
    if (strcmp(xs__builtin_names[i], name_or_path) == 0) {
      char fn[128];
      snprintf(fn, sizeof fn, "builtin:%s", name_or_path);
      return xs_profile_parse(xs__builtin_texts[i],
                              strlen(xs__builtin_texts[i]), fn, out, err);
    }
  struct stat sb;
  const char *plus = strchr(name_or_path, '+');
  if (plus && stat(name_or_path, &sb) != 0)
    return load_with_fabric(name_or_path, plus, out, err);
  if (stat(name_or_path, &sb) != 0) {
    char list[512];
    size_t n = 0;
    list[0] = '\0';
    for (size_t i = 0; i < xs__builtin_count && n < sizeof list; i++) {
      int w = snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
                       xs__builtin_names[i]);
      if (w < 0)
        break;
      n += (size_t)w;
    }
    return xs__fail(err, XS_NOTFOUND,
                    "unknown profile \"%s\": no such file, and not a built-in "
                    "profile (%s)",
                    name_or_path, list);
  }
  char *text;
  size_t len;
  xs_status st = xs__read_file(name_or_path, &text, &len, err);
  if (st)
    return st;
  st = xs_profile_parse(text, len, name_or_path, out, err);
  free(text);
  return st;
}

static int set_num(json_t *o, const char *k, double v) {
  return xs__jput(o, k, json_real(v));
}

static int set_rates(json_t *o, const char *key, const rate_table *t) {
  json_t *g = json_object();
  int bad = 0;
  for (size_t i = 0; i < t->n; i++)
    bad |= set_num(g, t->e[i].dtype, t->e[i].flops_per_s);
  return bad | xs__jput(o, key, g);
}

char *xs_profile_to_json(const xs_profile *p) {
  json_t *root = json_object();
  int bad = xs__jput(root, "name", json_string(p->name)) |
            xs__jput(root, "source", json_string(p->source));
  json_t *chs = json_object();
  for (size_t i = 0; i < p->nchannels; i++) {
    const xs_channel *c = &p->channels[i].ch;
    json_t *o = json_object();
    bad |= set_num(o, "inject_Bps", c->inject_Bps);
    if (c->worker_inject_Bps != c->inject_Bps)
      bad |= set_num(o, "worker_inject_Bps", c->worker_inject_Bps);
    bad |= set_num(o, "drain_Bps", c->drain_Bps);
    bad |= xs__jput(o, "capacity_B",
                    isfinite(c->capacity_B) ? json_real(c->capacity_B) : json_null());
    bad |= set_num(o, "latency_s", c->latency_s);
    if (c->issue_overhead_s)
      bad |= set_num(o, "issue_overhead_s", c->issue_overhead_s);
    if (c->packet_B)
      bad |= set_num(o, "packet_B", c->packet_B);
    if (isfinite(c->worker_inflight_B))
      bad |= set_num(o, "worker_inflight_B", c->worker_inflight_B);
    bad |= xs__jput(chs, p->channels[i].name, o);
  }
  bad |= xs__jput(root, "channels", chs);
  if (p->default_channel)
    bad |= xs__jput(root, "default_channel", json_string(p->default_channel));
  if (p->node_gpus)
    bad |= xs__jput(root, "node_gpus", json_integer(p->node_gpus));
  if (p->fabric)
    bad |= xs__jput(root, "fabric", json_string(p->fabric));
  int have_costs = 0, have_attn = 0;
  for (size_t i = 0; i < NCOSTS; i++)
    have_costs |= COST(&p->costs, i) != 0;
  for (int t = 0; t < XS_ATTN_TABLES; t++)
    have_attn |= p->attn[t].n != 0;
  /* any compute number makes the section: one set through the API without
   * xs_profile_set_compute still has the parser's default efficiency */
  if (p->sms || p->flops.n || p->hbm_Bps || have_costs || have_attn) {
    json_t *c = json_object();
    if (p->sms)
      bad |= xs__jput(c, "sms", json_integer(p->sms));
    if (p->arch) {
      char a[16];
      snprintf(a, sizeof a, "sm%u", p->arch);
      bad |= xs__jput(c, "arch", json_string(a));
    }
    bad |= set_rates(c, "flops_per_s", &p->flops);
    bad |= set_num(c, "efficiency", p->efficiency);
    if (p->hbm_Bps)
      bad |= set_num(c, "hbm_Bps", p->hbm_Bps);
    for (int t = 0; t < XS_ATTN_TABLES; t++)
      if (p->attn[t].n)
        bad |= set_rates(c, attn_names[t], &p->attn[t]);
    for (size_t i = 0; i < NCOSTS; i++)
      if (COST(&p->costs, i))
        bad |= cost_keys[i].whole
                   ? xs__jput(c, cost_keys[i].key,
                              json_integer((json_int_t)COST(&p->costs, i)))
                   : set_num(c, cost_keys[i].key, COST(&p->costs, i));
    bad |= xs__jput(root, "compute", c);
  }
  if (p->nsources) {
    json_t *so = json_object();
    for (size_t i = 0; i < p->nsources; i++)
      bad |= xs__jput(so, p->sources[i].key, json_string(p->sources[i].text));
    bad |= xs__jput(root, "sources", so);
  }
  char *s = bad ? NULL : json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(xs__jdigits(root)));
  json_decref(root);
  return s;
}

xs_channel *xs__profile_channel_mut(xs_profile *p, size_t i) {
  return i < p->nchannels ? &p->channels[i].ch : NULL;
}

/* ---- typed copies, for the fit, the tuner and the sensitivity runs,
 * which move one number at a time without a JSON round trip ---- */

static xs_status copy_rates(rate_table *to, const rate_table *from,
                            const char *key, xs_error *err) {
  xs_status st = XS_OK;
  for (size_t i = 0; !st && i < from->n; i++)
    st = set_rate(to, key, from->e[i].dtype, from->e[i].flops_per_s, err);
  return st;
}

xs_status xs__profile_copy(const xs_profile *p, xs_profile **out,
                           xs_error *err) {
  *out = NULL;
  xs_profile *q = xs_profile_new(p->name, p->source);
  if (!q)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_status st = XS_OK;
  for (size_t i = 0; !st && i < p->nchannels; i++)
    st = put_channel(q, q->nchannels, p->channels[i].name, &p->channels[i].ch, err);
  if (!st && p->default_channel)
    st = xs_profile_set_default_channel(q, p->default_channel, err);
  q->sms = p->sms;
  q->arch = p->arch;
  q->efficiency = p->efficiency;
  q->hbm_Bps = p->hbm_Bps;
  q->costs = p->costs;
  if (!st)
    st = copy_rates(&q->flops, &p->flops, "flops_per_s", err);
  for (int t = 0; !st && t < XS_ATTN_TABLES; t++)
    st = copy_rates(&q->attn[t], &p->attn[t], attn_names[t], err);
  for (size_t i = 0; !st && i < p->nsources; i++)
    st = set_source(q, p->sources[i].key, p->sources[i].text, err);
  if (st) {
    xs_profile_free(q);
    return st;
  }
  *out = q;
  return XS_OK;
}

void xs__profile_scale_flops(xs_profile *p, double factor) {
  for (size_t i = 0; i < p->flops.n; i++)
    p->flops.e[i].flops_per_s *= factor;
}

size_t xs__profile_flops_count(const xs_profile *p) { return p->flops.n; }
const char *xs__profile_flops_dtype(const xs_profile *p, size_t i) {
  return i < p->flops.n ? p->flops.e[i].dtype : NULL;
}

xs_status xs__profile_put_source(xs_profile *p, const char *key,
                                 const char *text, xs_error *err) {
  for (size_t i = 0; i < p->nsources; i++)
    if (strcmp(p->sources[i].key, key) == 0) {
      char *v = xs__strdup(text);
      if (!v)
        return xs__fail(err, XS_NOMEM, "out of memory");
      free(p->sources[i].text);
      p->sources[i].text = v;
      return XS_OK;
    }
  return set_source(p, key, text, err);
}

xs_status xs__profile_set_text(xs_profile *p, const char *name,
                               const char *source, xs_error *err) {
  char *n = name ? xs__strdup(name) : NULL, *s = source ? xs__strdup(source) : NULL;
  if ((name && !n) || (source && !s)) {
    free(n);
    free(s);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  if (n) {
    free(p->name);
    p->name = n;
  }
  if (s) {
    free(p->source);
    p->source = s;
  }
  return XS_OK;
}

/* A fabric that is neither a file nor built in: the message lists the
 * built-in fabrics only (the profiles with a "nic" channel and no compute
 * section), not every built-in profile as xs_profile_load's does. */
static xs_status unknown_fabric(const char *fabric, xs_error *err) {
  char list[256] = "";
  size_t n = 0;
  for (size_t i = 0; i < xs__builtin_count; i++) {
    xs_profile *b;
    xs_error e;
    if (xs_profile_load(xs__builtin_names[i], &b, &e))
      continue;
    if (xs_profile_find_channel(b, "nic") >= 0 && !xs_profile_sms(b)) {
      int w = snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", xs__builtin_names[i]);
      if (w > 0 && (size_t)w < sizeof list - n)
        n += (size_t)w;
    }
    xs_profile_free(b);
  }
  return xs__fail(err, XS_NOTFOUND,
                  "unknown fabric \"%s\": no such file, and not a built-in fabric (%s)",
                  fabric, list);
}

xs_status xs_profile_load_fabric(const char *gpu, const char *fabric,
                                 xs_profile **out, xs_error *err) {
  *out = NULL;
  xs_profile *p, *f;
  xs_status st = xs_profile_load(gpu, &p, err);
  if (st)
    return st;
  if (!fabric) {
    *out = p;
    return XS_OK;
  }
  if ((st = xs_profile_load(fabric, &f, err))) {
    xs_profile_free(p);
    if (st == XS_NOTFOUND)
      return unknown_fabric(fabric, err);
    return st;
  }
  st = xs_profile_add_fabric(p, f, err);
  xs_profile_free(f);
  if (st) {
    xs_profile_free(p);
    return st;
  }
  *out = p;
  return XS_OK;
}

/* "GPU+FABRIC", when no file has that name */
static xs_status load_with_fabric(const char *spec, const char *plus,
                                  xs_profile **out, xs_error *err) {
  size_t n = (size_t)(plus - spec);
  char *gpu = malloc(n + 1);
  if (!gpu)
    return xs__fail(err, XS_NOMEM, "out of memory");
  memcpy(gpu, spec, n);
  gpu[n] = '\0';
  xs_status st = xs_profile_load_fabric(gpu, plus + 1, out, err);
  free(gpu);
  return st;
}
