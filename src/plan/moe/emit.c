/*
 * emit.c: the per-SM program of a persistent MoE kernel. The kernel files
 * say what the kernel does in order (launches, barriers, the dispatch
 * pull, phases of tiles in the order its scheduler hands them out); this
 * file turns that into workers, counters and channel traffic:
 *
 * - The SMs fall into classes of consecutive SMs; a class is one worker
 *   with a copy per SM ("sm[a-b]"). Tile t of a phase goes to SM t mod S,
 *   so at each position of the phase a class runs a contiguous stretch of
 *   the task order, one tile per SM: a "run". Classes split where a phase
 *   ends part way through the SMs, so a run is whole or absent.
 * - A run waits for what its tiles need, puts its HBM bytes on the "hbm"
 *   channel (loads and stores), computes its tiles (gemm.c), waits for its
 *   loads (the TMA pipeline overlaps them with the math: the run takes the
 *   longer), posts its output stores (L1's to the pool in HBM; L2's to the
 *   tokens' home ranks on the default channel: the combine), and counts
 *   itself done on its class's counter.
 * - Tile dependencies are counts of runs: an L2 tile of block b awaits, on
 *   each class that ran an L1 tile of b, that class's run count reaching
 *   that run; the pull's rows arrive on one counter, in pool order.
 * - The dispatch pull is its own worker, a copy per SM: each trip one row
 *   per dispatch warp, requested (one link latency), received over the
 *   default channel (behind what the egress holds: the combine's stores
 *   share it), stored to the local pool (waited for, or not), published.
 * - Barriers and kernel ends: every SM arrives on a counter; one SM's
 *   flag store to the other ranks goes out on the link, behind the queue.
 *
 * The per-SM lockstep of a class is the approximation; the counts (tiles,
 * bytes, rows) are exact. tests/test_moe.c checks one worker per SM
 * against the default classes.
 */
#include "plan/moe/moe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HBM "hbm"

/* the larger of two numbers that are never NaN (fmax is a call) */
static inline double dmax(double a, double b) { return a > b ? a : b; }

struct xs__emit {
  const xs__moe_wl *wl;
  const xs__gemm_terms *g;
  xs__tile_cfg tile;
  const xs__moe_block *blocks;
  size_t nblocks;
  xs__emit_flow flow;
  xs_program *p;
  xs_error *err;
  size_t S;
  /* classes of SMs */
  size_t nclass;
  size_t *cs;        /* nclass + 1 boundaries                            */
  uint32_t *class_of;/* per SM                                            */
  size_t *math;      /* worker per class                                  */
  size_t *done;      /* counter per class: its runs done (per copy)       */
  double *runs;      /* runs each class has done so far                   */
  double *fixed;     /* fixed seconds each class has been given           */
  /* per block and class, the run count that covers the block's L1 (l1cov)
   * and L2 (l2cov) tiles on that class, 0 for none */
  double *l1cov, *l2cov;
  /* per block and layer (2 b + layer - 1), the position (posstamp) at
   * which a class last covered it: a cov entry is above the count a class
   * had when the position began exactly when a class covered the block at
   * this position, which (classes going in SM order) only lower classes
   * have done yet */
  uint32_t *covpos;
  uint32_t posstamp;
  double *pull_end;  /* per block: routed rows pulled up to and with it    */
  double routed;     /* rows the pull brings                              */
  size_t sync;       /* the worker of barriers and flags                  */
  int have_sync;
  unsigned nbar;     /* barriers and kernel ends so far                   */
  size_t gate;       /* counter the pull starts after (SIZE_MAX: none)    */
  double gate_value;
  int pull_wanted;
  size_t pull_gate;  /* the gate when the pull was asked for              */
  double pull_gate_value;
  size_t rows;       /* the pull's counter                                */
  int ids;
  char name[64];
  double *need;      /* scratch: per class                                */
  xs__moe_audit *audit; /* tests: what is emitted, or NULL               */
  uint32_t *ncompute;   /* compute ops so far per class                  */
  double *tt;           /* per block, its L1 and its L2 tile's seconds    */
  uint32_t phases;      /* phases so far                                  */
  /* the highest value each math class (then the two pull workers) has
   * awaited on each class's done counter (then on rows): a lower await
   * of the same worker is met already, as counters only grow */
  double *seen;
  uint32_t code_hbm, code_link, code_nic; /* the program's channel codes, or NONE */
  double sm_load_Bps;   /* what one SM's pipeline pulls from HBM: its stages'
                           bytes per load round trip (0: no cap)          */
  double dirty_B;       /* dirty L2 bytes still to be written back         */
};

static int audit_blocks(xs__emit *e);
/* A stretch [i, j) of a class's tasks at one position that repeat one
 * tile (the same block, layer and tile count: a block's N tiles often
 * come one after another), so they have the same dependencies and bytes;
 * d: whether they need a task of this very position. */
typedef struct {
  uint32_t i, j;
  int d;
} tile_group;

static int audit_run(xs__emit *e, size_t c, size_t k, const xs__task *t,
                     const tile_group *grp, size_t ng, int pick);

static xs_status fail_nomem(xs__emit *e) {
  return xs__fail(e->err, XS_NOMEM, "out of memory");
}

/* a class's worker name: "sm[a-b]" or "sm[a]" */
static void class_name(char *buf, size_t n, size_t a, size_t b) {
  if (b - a == 1)
    snprintf(buf, n, "sm[%zu]", a);
  else
    snprintf(buf, n, "sm[%zu-%zu]", a, b - 1);
}

static int by_size(const void *x, const void *y) {
  size_t a = *(const size_t *)x, b = *(const size_t *)y;
  return (a > b) - (a < b);
}

xs_status xs__emit_new(const xs__moe_kctx *k, const xs__tile_cfg *tile,
                       const xs__moe_block *blocks, size_t nblocks,
                       const xs__emit_flow *flow, xs__emit **out,
                       xs_error *err) {
  *out = NULL;
  const xs__moe_wl *wl = k->wl;
  const xs__gemm_terms *g = k->g;
  unsigned groups = k->groups;
  xs__emit *e = calloc(1, sizeof *e);
  if (!e)
    return xs__fail(err, XS_NOMEM, "out of memory");
  e->wl = wl;
  e->g = g;
  e->tile = *tile;
  e->blocks = blocks;
  e->nblocks = nblocks;
  e->flow = *flow;
  e->err = err;
  e->S = (size_t)g->S;
  e->ids = k->ids;
  e->audit = k->audit;
  e->gate = SIZE_MAX;
  e->code_hbm = e->code_link = e->code_nic = XS__NONE;
  e->dirty_B = g->dirty_B;
  /* what one SM's TMA pipeline keeps in flight: its stages of A and B
   * tiles over 128 of K (as many as fit the shared memory where the
   * kernel's heuristic does not say), over a load's round trip */
  {
    double stage = 128 * (tile->bm * g->act_bytes + tile->bn * g->weight_bytes);
    double n = tile->stages > 0 ? tile->stages : floor((232448.0 - 40960.0) / stage);
    e->sm_load_Bps = g->hbm_latency_s > 0 && n >= 1 ? n * stage / g->hbm_latency_s : 0;
  }
  snprintf(e->name, sizeof e->name, "%s", k->name);
  xs__utf8_trim(e->name); /* cut between characters */
  size_t S = e->S;
  if (groups < 1)
    groups = 1;
  if (groups > S)
    groups = (unsigned)S;
  /* boundaries: groups even ones; the refinements come with the phases
   * (xs__emit_phase adds a class boundary where a phase ends) */
  e->cs = malloc((S + 2) * sizeof *e->cs);
  e->class_of = malloc(S * sizeof *e->class_of);
  e->need = malloc((S + 1) * sizeof *e->need);
  if (!e->cs || !e->class_of || !e->need) {
    xs__emit_free(e);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  for (unsigned i = 0; i <= groups; i++)
    e->cs[i] = (size_t)llround((double)i * (double)S / groups);
  e->nclass = groups;
  *out = e;
  return XS_OK;
}

void xs__emit_free(xs__emit *e) {
  if (!e)
    return;
  xs_program_free(e->p);
  free(e->cs);
  free(e->class_of);
  free(e->math);
  free(e->done);
  free(e->runs);
  free(e->fixed);
  free(e->l1cov);
  free(e->l2cov);
  free(e->covpos);
  free(e->pull_end);
  free(e->need);
  free(e->ncompute);
  free(e->tt);
  free(e->seen);
  free(e);
}

/* Split the classes at the given SM boundaries (phase ends), before any
 * worker is made. */
xs_status xs__emit_split(xs__emit *e, const size_t *at, size_t n) {
  size_t S = e->S;
  for (size_t i = 0; i < n; i++) {
    size_t b = at[i];
    if (b == 0 || b >= S)
      continue;
    int have = 0;
    for (size_t c = 0; c <= e->nclass && !have; c++)
      have = e->cs[c] == b;
    if (!have && e->nclass + 1 < S + 1)
      e->cs[++e->nclass] = b;
  }
  qsort(e->cs, e->nclass + 1, sizeof *e->cs, by_size);
  return XS_OK;
}

/* Make the program and its workers (once, at the first op). */
static xs_status start(xs__emit *e) {
  if (e->p)
    return XS_OK;
  xs_error *err = e->err;
  e->p = xs_program_new(e->name);
  size_t nc = e->nclass, nb = e->nblocks;
  e->math = calloc(nc, sizeof *e->math);
  e->done = calloc(nc, sizeof *e->done);
  e->runs = calloc(nc, sizeof *e->runs);
  e->fixed = calloc(nc, sizeof *e->fixed);
  e->l1cov = calloc(nb * nc + 1, sizeof *e->l1cov);
  e->l2cov = calloc(nb * nc + 1, sizeof *e->l2cov);
  e->covpos = calloc(2 * nb + 2, sizeof *e->covpos);
  e->pull_end = calloc(nb + 1, sizeof *e->pull_end);
  e->ncompute = calloc(nc, sizeof *e->ncompute);
  e->tt = malloc((2 * nb + 1) * sizeof *e->tt);
  e->seen = calloc((nc + 2) * (nc + 1), sizeof *e->seen);
  if (!e->p || !e->math || !e->done || !e->runs || !e->fixed || !e->l1cov ||
      !e->l2cov || !e->covpos || !e->pull_end || !e->ncompute || !e->tt ||
      !e->seen)
    return fail_nomem(e);
  /* most blocks are full: one tile time per distinct row count */
  for (size_t b = 0; b < nb; b++) {
    double r = e->blocks[b].rows;
    if (b && r == e->blocks[b - 1].rows) {
      e->tt[2 * b] = e->tt[2 * b - 2];
      e->tt[2 * b + 1] = e->tt[2 * b - 1];
    } else {
      e->tt[2 * b] = xs__tile_time(e->g, &e->tile, r, e->wl->H, 1);
      e->tt[2 * b + 1] = xs__tile_time(e->g, &e->tile, r, e->wl->I, 2);
    }
  }
  if (e->audit && audit_blocks(e))
    return fail_nomem(e);
  for (size_t c = 0; c < nc; c++)
    for (size_t s = e->cs[c]; s < e->cs[c + 1]; s++)
      e->class_of[s] = (uint32_t)c;
  double routed = 0;
  for (size_t b = 0; b < nb; b++) {
    if (!e->wl->experts[e->blocks[b].expert].local)
      routed += e->blocks[b].valid;
    e->pull_end[b] = routed;
  }
  e->routed = routed;
  xs_status st = XS_OK;
  char nm[64];
  for (size_t c = 0; c < nc && !st; c++) {
    class_name(nm, sizeof nm, e->cs[c], e->cs[c + 1]);
    st = xs_program_add_workers(e->p, nm, e->cs[c + 1] - e->cs[c],
                                &e->math[c], err);
    if (!st) {
      snprintf(nm, sizeof nm, "done.%zu", c);
      st = xs_program_counter(e->p, nm, &e->done[c], err);
    }
  }
  if (!st)
    st = xs_program_counter(e->p, "rows", &e->rows, err);
  return st;
}

static xs_status sync_worker(xs__emit *e) {
  if (e->have_sync)
    return XS_OK;
  e->have_sync = 1;
  return xs_program_add_worker(e->p, "sync", &e->sync, e->err);
}

/* A send of worker w on HBM or on the link (the channel's code looked up
 * once per program). */
static xs_status send_on(xs__emit *e, size_t w, double bytes, int link,
                         size_t *sid) {
  uint32_t *code = link ? &e->code_link : &e->code_hbm;
  xs_status st;
  if (*code == XS__NONE &&
      (st = xs__program_channel(e->p, link ? e->flow.link : HBM, code,
                                e->err)))
    return st;
  return xs__program_send_code(e->p, w, bytes, *code, sid, e->err);
}

/* Worker w (slot: its math class, or nclass + part for the pull workers)
 * awaits counter ctr (cslot: the class whose done counter it is, nclass
 * for rows) reaching value, unless it awaited as much before. */
static xs_status await_new(xs__emit *e, size_t slot, size_t w, size_t cslot,
                           size_t ctr, double value) {
  double *s = &e->seen[slot * (e->nclass + 1) + cslot];
  if (value <= *s)
    return XS_OK;
  *s = value;
  return xs_program_await_index(e->p, w, ctr, value, e->err);
}

/* Class c's worker computes s seconds (none for s = 0), counted among
 * its compute ops (the audit finds runs by that count). */
static xs_status math_compute(xs__emit *e, size_t c, double s) {
  if (!(s > 0))
    return XS_OK;
  e->ncompute[c]++;
  return xs_program_compute(e->p, e->math[c], s, e->err);
}

/* Every class: compute s seconds counted as fixed. */
static xs_status all_fixed(xs__emit *e, double s) {
  if (!(s > 0))
    return XS_OK;
  for (size_t c = 0; c < e->nclass; c++) {
    xs_status st = xs_program_compute(e->p, e->math[c], s, e->err);
    if (st)
      return st;
    e->fixed[c] += s;
    e->ncompute[c]++;
  }
  return XS_OK;
}

/* Bytes from worker w to other ranks. Across nodes the share bound for
 * other nodes goes over the NIC, the node's own over NVLink, as expert-
 * parallel kernels that span nodes move them; each send's index into
 * s[0] (link) and s[1] (NIC), SIZE_MAX for none. */
static xs_status link_send(xs__emit *e, size_t w, double bytes, size_t s[2]) {
  double f = e->flow.nic_share;
  s[0] = s[1] = SIZE_MAX;
  xs_status st = send_on(e, w, bytes * (1 - f), 1, &s[0]);
  if (!st && f > 0 && e->code_nic == XS__NONE)
    st = xs__program_channel(e->p, "nic", &e->code_nic, e->err);
  if (!st && f > 0)
    st = xs__program_send_code(e->p, w, bytes * f, e->code_nic, &s[1], e->err);
  return st;
}

/* worker w waits until both of link_send's sends are delivered */
static xs_status link_wait(xs__emit *e, size_t w, const size_t s[2]) {
  xs_status st = XS_OK;
  for (int i = 0; i < 2 && !st; i++)
    if (s[i] != SIZE_MAX)
      st = xs_program_wait_send(e->p, w, s[i], e->err);
  return st;
}

xs_status xs__emit_fixed(xs__emit *e, double seconds, const char *why,
                         xs_error *err) {
  (void)why;
  e->err = err;
  xs_status st = start(e);
  return st ? st : all_fixed(e, seconds);
}

/* Every SM arrives on a new counter; returns it. */
static xs_status arrive(xs__emit *e, const char *what, size_t *ctr) {
  char nm[32];
  snprintf(nm, sizeof nm, "%s.%u", what, ++e->nbar);
  xs_status st = xs_program_counter(e->p, nm, ctr, e->err);
  for (size_t c = 0; c < e->nclass && !st; c++)
    st = xs_program_signal_index(e->p, e->math[c], *ctr, 1, e->err);
  return st;
}

/* the sync worker computes s seconds (none for s = 0) */
static xs_status sync_compute(xs__emit *e, double s) {
  return s > 0 ? xs_program_compute(e->p, e->sync, s, e->err) : XS_OK;
}

/* SM0's round of flags with the other ranks (DeepGEMM's nvlink_barrier,
 * comm/barrier.cuh): with first_sync, the grid sync every SM's arrival
 * makes first; one flag to every rank queues behind the egress (by
 * symmetry theirs arrive the same way) and the poll sees the last of
 * them signal_s after it was stored, of which the link carries its
 * latency. */
static xs_status signal_round(xs__emit *e, int first_sync) {
  size_t f[2];
  xs_status st;
  double rest = e->g->signal_s - e->g->link_latency_s;
  if ((first_sync && (st = sync_compute(e, e->g->grid_sync_s))) ||
      (st = link_send(e, e->sync, 0, f)) || (st = link_wait(e, e->sync, f)))
    return st;
  return sync_compute(e, rest > 0 ? rest : 0);
}

/* The rank's side of a barrier (grid sync, SM0's round of flags, grid
 * sync; first_sync 0 where the caller's own grid sync came just before):
 * once every SM arrived, the round; then every SM is let go. Returns the
 * release counter. */
static xs_status barrier_rank(xs__emit *e, int first_sync, size_t *out) {
  xs_error *err = e->err;
  size_t in;
  xs_status st;
  if ((st = sync_worker(e)) || (st = arrive(e, "arrive", &in)))
    return st;
  char nm[32];
  snprintf(nm, sizeof nm, "barrier.%u", e->nbar);
  return (st = xs_program_counter(e->p, nm, out, err)) ||
                 (st = xs_program_await_index(e->p, e->sync, in,
                                              (double)e->S, err)) ||
                 (st = signal_round(e, first_sync)) ||
                 (st = sync_compute(e, e->g->grid_sync_s)) ||
                 (st = xs_program_signal_index(e->p, e->sync, *out, 1, err))
             ? st
             : XS_OK;
}

xs_status xs__emit_barrier(xs__emit *e, xs_error *err) {
  xs_status st = xs__emit_barrier_start(e, err);
  return st ? st : xs__emit_await_barrier(e, err);
}

xs_status xs__emit_barrier_start(xs__emit *e, xs_error *err) {
  e->err = err;
  xs_status st = start(e);
  size_t out;
  if (st || (st = barrier_rank(e, 1, &out)))
    return st;
  e->gate = out;
  e->gate_value = 1;
  return XS_OK;
}

xs_status xs__emit_await_barrier(xs__emit *e, xs_error *err) {
  e->err = err;
  xs_status st = XS_OK;
  for (size_t c = 0; c < e->nclass && !st; c++)
    st = xs_program_await_index(e->p, e->math[c], e->gate, e->gate_value,
                                err);
  return st;
}

/* The count hand-shake that replaces the first barrier in the lag kernel:
 * one flag to each rank, every SM polls its own; no grid sync. */
xs_status xs__emit_handshake(xs__emit *e, xs_error *err) {
  e->err = err;
  xs_status st = start(e);
  size_t out;
  char nm[32];
  snprintf(nm, sizeof nm, "counts.%u", ++e->nbar);
  if (st || (st = sync_worker(e)) ||
      (st = xs_program_counter(e->p, nm, &out, err)) ||
      (st = signal_round(e, 0)) ||
      (st = xs_program_signal_index(e->p, e->sync, out, 1, err)))
    return st;
  e->gate = out;
  e->gate_value = 1;
  return XS_OK;
}

xs_status xs__emit_launch(xs__emit *e, int pdl, xs_error *err) {
  double s = e->g->launch_cost_s - (pdl ? e->g->pdl_saving_s : 0);
  return xs__emit_fixed(e, s > 0 ? s : 0, "launch", err);
}

/* The routing's send-count step: each SM adds to every expert's counter
 * (its dispatch threads a few each, one after another), and each counter
 * takes the SMs' atomics in turn. */
static double routing_atomics_s(const xs__emit *e) {
  double threads = 32 * (e->flow.pull_warps > 0 ? e->flow.pull_warps : 1);
  return ceil(e->wl->E / threads) * (double)e->S * e->g->atomic_s;
}

xs_status xs__emit_routing(xs__emit *e, int handshake, xs_error *err) {
  e->err = err;
  xs_status st = start(e);
  if (st || (st = all_fixed(e, routing_atomics_s(e) + e->g->grid_sync_s)))
    return st;
  if (handshake)
    return xs__emit_handshake(e, err);
  /* SM0 stores each rank's counts there with a system-scope atomic per
   * expert (one round trip, the threads' atomics in flight together),
   * then the barrier's round of flags and its closing grid sync */
  size_t in, out;
  char nm[32];
  if ((st = sync_worker(e)) || (st = arrive(e, "counts", &in)))
    return st;
  snprintf(nm, sizeof nm, "barrier.%u", e->nbar);
  if ((st = xs_program_counter(e->p, nm, &out, err)) ||
      (st = xs_program_await_index(e->p, e->sync, in, (double)e->S, err)) ||
      (st = sync_compute(e, 2 * e->g->link_latency_s)) ||
      (st = signal_round(e, 0)) || (st = sync_compute(e, e->g->grid_sync_s)) ||
      (st = xs_program_signal_index(e->p, e->sync, out, 1, err)))
    return st;
  e->gate = out;
  e->gate_value = 1;
  return XS_OK;
}

xs_status xs__emit_kernel(xs__emit *e, int pdl, xs_error *err) {
  e->err = err;
  xs_status st = start(e);
  if (st)
    return st;
  if (e->pull_wanted) {
    /* the dispatch warps belong to this kernel: it ends once they did */
    for (size_t c = 0; c < e->nclass && !st; c++)
      st = await_new(e, c, e->math[c], e->nclass, e->rows,
                     fmax(1, e->routed));
    if (st)
      return st;
  }
  /* a kernel ends when every SM did and its stores landed */
  for (size_t c = 0; c < e->nclass && !st; c++)
    st = xs_program_fence(e->p, e->math[c], err);
  size_t end;
  if (st || (st = arrive(e, "kernel", &end)))
    return st;
  for (size_t c = 0; c < e->nclass && !st; c++)
    st = xs_program_await_index(e->p, e->math[c], end, (double)e->S, err);
  if (st)
    return st;
  double s = e->g->launch_cost_s - (pdl ? e->g->pdl_saving_s : 0);
  return all_fixed(e, s > 0 ? s : 0);
}

xs_status xs__emit_pull(xs__emit *e, xs_error *err) {
  e->err = err;
  xs_status st = start(e);
  if (st)
    return st;
  e->pull_wanted = 1;
  e->pull_gate = e->gate;
  e->pull_gate_value = e->gate_value;
  return XS_OK;
}

/* HBM bytes of one task: the weight slice for the expert's first block
 * (its other blocks find it in L2), the block's activations over its
 * tiles, and the layer's output written to HBM (L1's to the pool; L2's
 * for the rank's own tokens: the others' go over the link). */
static void task_bytes(const xs__emit *e, const xs__task *t, double *hbm_in,
                       double *hbm_out, double *link_out) {
  const xs__moe_block *b = &e->blocks[t->block];
  const xs__moe_wl *wl = e->wl;
  int local = wl->experts[b->expert].local;
  double n = t->ntiles, bn = e->tile.bn;
  double wb = e->g->weight_bytes;
  if (t->layer == 1) {
    double n1 = ceil(2 * wl->I / bn);
    *hbm_in = (b->first ? n * bn * wl->H * wb : 0) +
              n / n1 * b->rows * wl->H * e->g->act_bytes;
    *hbm_out = n * b->valid * (bn / 2) * e->flow.l1_out_bytes;
    *link_out = 0;
  } else {
    double n2 = ceil(wl->H / bn);
    double out = n * b->valid * bn * e->g->combine_bytes;
    *hbm_in = (b->first ? n * bn * wl->I * wb : 0) +
              n / n2 * b->rows * wl->I * e->flow.l2_in_bytes;
    double off = local || !e->flow.combine_push ? 0 : wl->offrank;
    *hbm_out = out * (1 - off);
    *link_out = out * off;
  }
}

/* ---- the audit (tests/test_moe.c) ---- */

static int audit_blocks(xs__emit *e) {
  xs__moe_audit *a = e->audit;
  if (a->blocks)
    return 0; /* a kernel of two emitters keeps the first one's blocks */
  a->blocks = calloc(e->nblocks + 1, sizeof *a->blocks);
  if (!a->blocks)
    return -1;
  a->nblocks = e->nblocks;
  for (size_t b = 0; b < e->nblocks; b++) {
    a->blocks[b].valid = e->blocks[b].valid;
    a->blocks[b].rows = e->blocks[b].rows;
  }
  a->bn = e->tile.bn;
  a->bm = e->tile.bm;
  return 0;
}

static int audit_run(xs__emit *e, size_t c, size_t k, const xs__task *t,
                     const tile_group *grp, size_t ng, int pick) {
  xs__moe_audit *a = e->audit;
  size_t n = ng ? grp[ng - 1].j : 0;
  if (xs__grow(&a->runs, &a->runs_cap, a->nruns + 1, sizeof *a->runs) ||
      xs__grow(&a->tasks, &a->tasks_cap, a->ntasks + n, sizeof *a->tasks))
    return -1;
  a->runs[a->nruns] = (xs__moe_audit_run){(uint32_t)e->math[c], e->ncompute[c],
                                          e->phases, (uint32_t)k,
                                          (uint32_t)(e->cs[c + 1] - e->cs[c])};
  for (size_t g = 0; g < ng; g++) {
    if (grp[g].d != pick)
      continue;
    for (size_t i = grp[g].i; i < grp[g].j; i++) {
      a->tasks[a->ntasks++] = (xs__moe_audit_task){
          (uint32_t)a->nruns, t[i].block, t[i].layer, t[i].ntiles};
      a->blocks[t[i].block].tiles[t[i].layer - 1] += t[i].ntiles;
    }
  }
  a->nruns++;
  return 0;
}

void xs__moe_audit_free(xs__moe_audit *a) {
  free(a->blocks);
  free(a->runs);
  free(a->tasks);
  memset(a, 0, sizeof *a);
}

/* One sub-run of a class: the tasks of t in the groups flagged `pick`,
 * after waiting for what they need (need: run counts per class), then
 * their HBM bytes, tiles and stores; counts itself done. Seconds and
 * bytes are added task by task, in order. */
static xs_status sub_run(xs__emit *e, size_t c, size_t k, const xs__task *t,
                         const tile_group *grp, size_t ng, int pick,
                         double rows_needed, const double *need, int fill) {
  xs_error *err = e->err;
  size_t nc = e->nclass, w = e->math[c];
  double g = (double)(e->cs[c + 1] - e->cs[c]);
  double secs = 0, hin = 0, hout = 0, lout = 0;
  int l1 = 0;
  for (size_t q = 0; q < ng; q++) {
    if (grp[q].d != pick)
      continue;
    const xs__task *ti = &t[grp[q].i];
    double s1 = ti->ntiles * e->tt[2 * ti->block + (ti->layer == 2)];
    double a, o, l;
    task_bytes(e, ti, &a, &o, &l);
    l1 |= ti->layer == 1;
    for (size_t x = grp[q].i; x < grp[q].j; x++) {
      secs += s1;
      hin += a;
      hout += o;
      lout += l;
    }
  }
  /* an SM pulls from HBM no faster than the bytes its pipeline keeps in
   * flight per load round trip (Little's law): a cap that binds only
   * where few SMs stream, the HBM channel's share binding otherwise */
  if (hin > 0 && e->sm_load_Bps > 0 && hin / g / e->sm_load_Bps > secs / g)
    secs = hin / e->sm_load_Bps;
  /* each byte read while the L2 still holds a flush's dirty lines evicts
   * one, which HBM writes back beside the read */
  if (hin > 0 && e->dirty_B > 0) {
    double wb = hin < e->dirty_B ? hin : e->dirty_B;
    e->dirty_B -= wb;
    hin += wb;
  }
  xs_status st = XS_OK;
  if (rows_needed > 0)
    st = await_new(e, c, w, nc, e->rows, ceil(rows_needed));
  for (size_t x = 0; x < nc && !st; x++)
    if (need[x] > 0 && x != c)
      st = await_new(e, c, w, x, e->done[x],
                     need[x] * (double)(e->cs[x + 1] - e->cs[x]));
  /* a run whose inputs were being made just before (fill): the A loader
   * sees the producer's flag flag_s after its release, then the math
   * waits for the first stage's round trip from HBM (the B loader's
   * weights run ahead; the tokens cannot) */
  if (!st && fill)
    st = math_compute(e, c, e->g->flag_s);
  size_t load = 0;
  if (!st && hin > 0)
    st = send_on(e, w, hin / g, 0, &load);
  if (!st && fill)
    st = math_compute(e, c, e->g->hbm_latency_s);
  if (!st)
    st = xs_program_compute(e->p, w, secs / g, err);
  if (!st && e->audit && audit_run(e, c, k, t, grp, ng, pick))
    st = fail_nomem(e);
  e->ncompute[c]++;
  if (!st && hin > 0)
    st = xs_program_wait_send(e->p, w, load, err);
  size_t out = 0;
  if (!st && hout > 0)
    st = send_on(e, w, hout / g, 0, &out);
  /* an L1 epilogue publishes its rows once its store has landed */
  if (!st && hout > 0 && l1 && e->flow.publish_wait)
    st = xs_program_wait_send(e->p, w, out, err);
  size_t ls[2];
  if (!st && lout > 0)
    st = link_send(e, w, lout / g, ls);
  if (!st)
    st = xs_program_signal_index(e->p, w, e->done[c], 1, err);
  /* coverage: the tiles' blocks are done on this class at this count */
  e->runs[c] += 1;
  for (size_t q = 0; q < ng; q++)
    if (grp[q].d == pick) {
      const xs__task *ti = &t[grp[q].i];
      double *cov = ti->layer == 1 ? e->l1cov : e->l2cov;
      cov[ti->block * nc + c] = e->runs[c];
      e->covpos[2 * ti->block + (ti->layer == 2)] = e->posstamp;
    }
  return st;
}

/* A phase. At each position k (one task per SM), the classes in SM order;
 * a class's tasks split in two sub-runs: those whose dependencies all ran
 * at earlier positions, then those that need a task of this position (an
 * L2 tile after its block's L1 tiles on lower SMs, or, with the ring, an
 * L1 tile after the L2 tiles that free its slot). Lower classes' sub-runs
 * of this position are awaited (they never wait for higher ones, so no
 * cycle); within one class the second sub-run follows the first. */
xs_status xs__emit_phase(xs__emit *e, const xs__task *tasks, size_t n,
                         xs_error *err) {
  e->err = err;
  xs_status st = start(e);
  if (st || n == 0)
    return st;
  size_t S = e->S, nc = e->nclass;
  const xs__moe_wl *wl = e->wl;
  double *need1 = malloc(nc * sizeof *need1);
  tile_group *grp = malloc((S + 1) * sizeof *grp);
  /* per block and layer: the class-run (stamp) that last had it, and, for
   * each of the two sub-runs, the class-run that last took its coverage
   * into that sub-run's needs */
  uint32_t *mark = calloc(3 * (2 * e->nblocks + 2), sizeof *mark);
  if (!need1 || !grp || !mark) {
    free(need1);
    free(grp);
    free(mark);
    return fail_nomem(e);
  }
  uint32_t *merged = mark + 2 * e->nblocks + 2;
  uint32_t stamp = 0;
  size_t npos = (n + S - 1) / S;
  double R = e->flow.ring_blocks;
  for (size_t k = 0; k < npos && !st; k++) {
    e->posstamp++;
    for (size_t c = 0; c < nc && !st; c++) {
      size_t t0 = k * S + e->cs[c], t1 = k * S + e->cs[c + 1];
      if (t0 >= n)
        continue;
      if (t1 > n)
        t1 = n; /* cannot happen once the classes split at the phase end */
      const xs__task *t = tasks + t0;
      size_t m = t1 - t0;
      double rows0 = 0, rows1 = 0;
      for (size_t x = 0; x < nc; x++)
        e->need[x] = need1[x] = 0;
      int have[2] = {0, 0}, prev = 0;
      size_t ng = 0;
      stamp++;
      for (size_t i = 0, j; i < m; i = j) {
        j = i + 1;
        while (j < m && t[j].block == t[i].block &&
               t[j].layer == t[i].layer && t[j].ntiles == t[i].ntiles)
          j++;
        const xs__moe_block *b = &e->blocks[t[i].block];
        size_t bi = t[i].block;
        const double *cov = NULL;
        int d = 0; /* needs a task of this very run */
        double rn = 0;
        size_t key_prev = SIZE_MAX; /* the dependency's covpos entry */
        if (t[i].layer == 1) {
          if (e->pull_wanted && !wl->experts[b->expert].local)
            rn = e->pull_end[bi];
          /* ring: the L1 epilogue writes over the slot of block bi - R,
           * which that block's L2 tiles must have read */
          if (R > 0 && (double)bi >= R) {
            size_t key = 2 * (bi - (size_t)R) + 1;
            cov = &e->l2cov[(bi - (size_t)R) * nc];
            d = mark[key] == stamp || e->covpos[key] == e->posstamp;
            key_prev = key;
          }
        } else {
          cov = &e->l1cov[bi * nc];
          d = mark[2 * bi] == stamp || e->covpos[2 * bi] == e->posstamp;
          key_prev = 2 * bi;
        }
        /* a dependency covered at the position just before */
        if (!d && cov && key_prev != SIZE_MAX && e->covpos[key_prev] > 0 &&
            e->covpos[key_prev] + 1 == e->posstamp)
          prev = 1;
        grp[ng++] = (tile_group){(uint32_t)i, (uint32_t)j, d};
        have[d] = 1;
        double *nd = d ? need1 : e->need;
        /* a tile already taken into these needs in this class-run adds
         * nothing: its coverage has not changed since */
        uint32_t *mg = &merged[2 * (2 * bi + (t[i].layer == 2)) + (size_t)d];
        if (cov && *mg != stamp)
          for (size_t x = 0; x < nc; x++)
            nd[x] = dmax(nd[x], cov[x]);
        *mg = stamp;
        if (d)
          rows1 = dmax(rows1, rn);
        else
          rows0 = dmax(rows0, rn);
        mark[2 * bi + (t[i].layer == 2)] = stamp;
      }
      /* the first run after a dependency being made: the pull's rows at a
       * phase's first position, a tile of the position just before
       * (sub-run 0) or of this one (sub-run 1) */
      if (have[0])
        st = sub_run(e, c, k, t, grp, ng, 0, rows0, e->need,
                     (k == 0 && rows0 > 0) || prev);
      if (have[1] && !st)
        st = sub_run(e, c, k, t, grp, ng, 1, rows1, need1, 1);
    }
  }
  e->phases++;
  free(need1);
  free(grp);
  free(mark);
  return st;
}

xs_status xs__emit_stream(xs__emit *e, double bytes, double fixed_s,
                          const char *why, xs_error *err) {
  (void)why;
  e->err = err;
  xs_status st = start(e);
  if (st)
    return st;
  if (bytes > 0 && e->dirty_B > 0) {
    double wb = bytes < e->dirty_B ? bytes : e->dirty_B;
    e->dirty_B -= wb;
    bytes += wb;
  }
  double per = bytes / (double)e->S;
  for (size_t c = 0; c < e->nclass && !st; c++) {
    size_t w = e->math[c], s;
    if (per > 0 &&
        !(st = send_on(e, w, per, 0, &s)))
      st = xs_program_wait_send(e->p, w, s, err);
  }
  return st ? st : all_fixed(e, fixed_s);
}

xs_status xs__emit_combine(xs__emit *e, double bytes, int cleanup,
                           xs_error *err) {
  e->err = err;
  xs_status st = start(e);
  if (st)
    return st;
  /* beside the reduction, the dispatch warps clean the workspace and meet
   * the other ranks once more: a grid sync and SM0's round of flags, which
   * SM0 waits out before the kernel ends */
  if (cleanup && !(st = sync_worker(e)) && !(st = signal_round(e, 1)))
    st = XS_OK;
  /* a warp reduces one token at a time: its top-k rows two loads in
   * flight, then the store */
  double chain = (ceil(e->wl->K / 2) + 1) * e->g->hbm_latency_s;
  return st ? st : xs__emit_stream(e, bytes, chain, "combine", err);
}

xs_status xs__emit_ep(xs__emit *e, double seconds, int dispatch,
                      xs_error *err) {
  e->err = err;
  xs_status st = start(e);
  if (st)
    return st;
  /* a worker of the library's kernel: once every SM has arrived, its time,
   * then it lets them go; they wait on a counter the breakdown reads as
   * the dispatch ("rows...") or the link ("link...") */
  size_t in, out, w;
  char nm[32];
  snprintf(nm, sizeof nm, "%s.%u", dispatch ? "rows.a2a" : "link.a2a", ++e->nbar);
  if ((st = arrive(e, "a2a", &in)) ||
      (st = xs_program_counter(e->p, nm, &out, err)) ||
      (st = xs_program_add_worker(e->p, nm, &w, err)) ||
      (st = xs_program_await_index(e->p, w, in, (double)e->S, err)) ||
      (seconds > 0 && (st = xs_program_compute(e->p, w, seconds, err))) ||
      (st = xs_program_signal_index(e->p, w, out, 1, err)))
    return st;
  for (size_t c = 0; c < e->nclass && !st; c++)
    st = xs_program_await_index(e->p, e->math[c], out, 1, err);
  return st;
}

int xs__tasks_layer(xs__tasks *l, size_t b0, size_t b1, int layer, size_t n) {
  for (size_t b = b0; b < b1; b++)
    for (size_t j = 0; j < n; j++)
      if (xs__tasks_add(l, b, layer, 1))
        return -1;
  return 0;
}

xs_status xs__moe_kernel_blocks(const xs__moe_wl *wl, xs__tile_cfg *tile,
                                xs_moe_pattern *kn, double align,
                                xs__moe_block **blocks, size_t *nb,
                                size_t *n1, size_t *n2, xs_error *err) {
  if (kn->block_m)
    tile->bm = kn->block_m;
  if (kn->block_n)
    tile->bn = kn->block_n;
  kn->block_m = (unsigned)tile->bm;
  kn->block_n = (unsigned)tile->bn;
  *n1 = (size_t)ceil(2 * wl->I / tile->bn);
  *n2 = (size_t)ceil(wl->H / tile->bn);
  return xs__moe_blocks(wl, tile->bm, align, blocks, nb, err);
}

void xs__moe_fused_flow(const xs__moe_kctx *k, xs__emit_flow *flow) {
  memset(flow, 0, sizeof *flow);
  flow->pull = 1;
  flow->pull_warps = 1;
  flow->combine_push = 1;
  flow->l1_out_bytes = 1;
  flow->l2_in_bytes = 1;
  /* a trip's rows wait for the farthest: across nodes, the NIC's */
  flow->pull_request_s = k->nic_share > 0 ? fmax(k->link_latency_s, k->nic_latency_s)
                                          : k->link_latency_s;
  flow->link = k->link;
  flow->nic_share = k->nic_share;
}

double xs__moe_reduce_bytes(const xs__moe_kctx *k) {
  return k->wl->T * k->wl->H * k->g->combine_bytes * (k->wl->K + 1);
}

xs_status xs__moe_emit_fused(const xs__moe_kctx *k, const xs__tile_cfg *tile,
                             xs__moe_block *blocks, size_t nb,
                             const xs__emit_flow *flow, xs__tasks *tasks, int oom,
                             xs__fused_launch how, xs_program **out,
                             xs_moe_breakdown *bd, xs_error *err) {
  xs__emit *e = NULL;
  size_t sizes[1] = {tasks->n % (size_t)k->g->S};
  xs_status st = oom ? xs__fail(err, XS_NOMEM, "out of memory") : XS_OK;
  if (!st && !(st = xs__emit_new(k, tile, blocks, nb, flow, &e, err)) &&
      !(st = xs__emit_split(e, sizes, 1)) &&
      !(st = xs__emit_launch(e, how.pdl, err)) &&
      !(st = xs__emit_routing(e, how.handshake, err)) &&
      !(st = xs__emit_pull(e, err)) &&
      !(st = xs__emit_phase(e, tasks->t, tasks->n, err)) &&
      !(st = how.early_combine ? xs__emit_barrier_start(e, err)
                               : xs__emit_barrier(e, err)) &&
      !(st = xs__emit_combine(e, xs__moe_reduce_bytes(k), !how.early_combine, err)) &&
      !(st = how.early_combine ? xs__emit_await_barrier(e, err) : XS_OK))
    st = xs__emit_finish(e, out, bd, err);
  xs__emit_free(e);
  free(tasks->t);
  free(blocks);
  return st;
}

/* The pull: a worker with a copy per SM, each trip one row per dispatch
 * warp; the rows that do not fill a last trip come from a second worker
 * of one copy per row. */
static xs_status emit_pull_workers(xs__emit *e) {
  xs_error *err = e->err;
  const xs__moe_wl *wl = e->wl;
  double warps = e->flow.pull_warps > 0 ? e->flow.pull_warps : 1;
  double W = (double)e->S * warps, R = e->routed;
  if (!(R > 0))
    return XS_OK;
  double trips = floor(R / W), rest = R - trips * W;
  double row_B = wl->H * e->g->act_bytes;
  /* a trip: the slot's source index from L2 (half a flag's round), the
   * remote read's request; a row pulled in chunks reads and stores each
   * chunk before the next (a read round trip and a store each), the
   * last one as the model's own send below */
  double chunks = e->flow.pull_chunk_B > 0 ? ceil(row_B / e->flow.pull_chunk_B) : 1;
  double lat = e->flow.pull_request_s + 0.5 * e->g->flag_s +
               (chunks - 1) * (2 * e->g->link_latency_s + e->g->hbm_latency_s);
  xs_status st = XS_OK;
  for (int part = 0; part < 2 && !st; part++) {
    double copies = part == 0 ? (double)e->S : rest;
    double per = part == 0 ? warps : 1; /* rows a copy pulls a trip */
    double ntrips = part == 0 ? trips : (rest > 0 ? 1 : 0);
    if (!(copies >= 1) || !(ntrips >= 1))
      continue;
    size_t w;
    if ((st = xs_program_add_workers(e->p, part == 0 ? "dispatch" : "dispatch.tail",
                                     (size_t)copies, &w, err)))
      break;
    if (e->pull_gate != SIZE_MAX &&
        (st = xs_program_await_index(e->p, w, e->pull_gate,
                                     e->pull_gate_value, err)))
      break;
    if (part == 1 && trips > 0 &&
        (st = await_new(e, e->nclass + (size_t)part, w, e->nclass, e->rows,
                        trips * W)))
      break;
    size_t blk = 0;
    for (double j = 0; j < ntrips && !st; j++) {
      double end = part == 0 ? (j + 1) * W : R; /* rows pulled after it */
      /* ring: a slot is free once the L1 tiles of the block that held it
       * a generation ago are done */
      double Rb = e->flow.ring_blocks;
      while (blk + 1 < e->nblocks && e->pull_end[blk] < end)
        blk++;
      if (Rb > 0 && (double)blk >= Rb) {
        const double *cov = &e->l1cov[(blk - (size_t)Rb) * e->nclass];
        for (size_t x = 0; x < e->nclass && !st; x++)
          if (cov[x] > 0)
            st = await_new(e, e->nclass + (size_t)part, w, x, e->done[x],
                           cov[x] * (double)(e->cs[x + 1] - e->cs[x]));
      }
      size_t s, ls[2];
      if (st || (lat > 0 && (st = xs_program_compute(e->p, w, lat, err))) ||
          (st = link_send(e, w, per * row_B * wl->offrank, ls)) ||
          (st = link_wait(e, w, ls)) ||
          (st = send_on(e, w, per * row_B, 0, &s)) ||
          (e->flow.pull_store_wait &&
           (st = xs_program_wait_send(e->p, w, s, err))) ||
          (st = xs_program_signal_index(e->p, w, e->rows, per, err)))
        break;
    }
  }
  return st;
}

xs_status xs__emit_finish(xs__emit *e, xs_program **out, xs_moe_breakdown *bd,
                          xs_error *err) {
  e->err = err;
  *out = NULL;
  xs_status st = start(e);
  if (!st && e->pull_wanted)
    st = emit_pull_workers(e);
  if (st)
    return st;
  if (bd) {
    memset(bd, 0, sizeof *bd);
    double f = 0;
    for (size_t c = 0; c < e->nclass; c++)
      f = fmax(f, e->fixed[c]);
    bd->fixed_s = f;
  }
  if ((st = xs__program_seal(e->p, err)))
    return st;
  *out = e->p;
  e->p = NULL;
  return XS_OK;
}
