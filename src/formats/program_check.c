/*
 * program_check.c: xs_program_finish, what makes a built or parsed
 * program ready to evaluate: waits resolved to their sends (explicit ids
 * and "worker#op" ones), ids that cannot name two sends, and the check
 * that every op is reached (a wait or await that never returns is a
 * cycle, named op by op); then every worker's ops in one block. A
 * planner's program, deadlock-free by its builder's rule, is sealed
 * instead (xs__program_seal): no progress check, no block. And what
 * gives finished programs: copies written out one by one (the packet
 * simulator's view), and xs_program_parse and xs_program_load (the JSON
 * read by program_json.c, then finished).
 */
#include "formats/program.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- finish: resolve waits, check ids and cycles ---- */

static const char *op_kind_name(int kind) {
  static const char *const names[] = {"compute", "send",   "wait",
                                      "fence",   "signal", "await"};
  return kind >= 0 && kind < 6 ? names[kind] : "op";
}

/* The awaits blocked on one counter, least value first: a pairing heap
 * threaded through per-worker arrays (a worker is blocked at one op at a
 * time, so it is in at most one heap), which needs no memory per counter
 * and costs O(log n) amortized per await that blocks. */
typedef struct {
  double *need;      /* per worker: the value its blocked await needs */
  uint32_t *child, *sib;
} await_heap;

static uint32_t ah_meld(const await_heap *h, uint32_t a, uint32_t b) {
  if (a == XS__NONE)
    return b;
  if (b == XS__NONE)
    return a;
  if (h->need[b] < h->need[a]) {
    uint32_t t = a;
    a = b;
    b = t;
  }
  h->sib[b] = h->child[a];
  h->child[a] = b;
  return a;
}

/* The heap left when its root is taken: the root's children melded in
 * pairs from the left, then those melded from the right. */
static uint32_t ah_pop(const await_heap *h, uint32_t root) {
  uint32_t first = h->child[root], stack = XS__NONE;
  h->child[root] = XS__NONE;
  while (first != XS__NONE) {
    uint32_t a = first, b = h->sib[a];
    if (b == XS__NONE) {
      h->sib[a] = stack;
      stack = a;
      break;
    }
    first = h->sib[b];
    h->sib[a] = h->sib[b] = XS__NONE;
    uint32_t m = ah_meld(h, a, b);
    h->sib[m] = stack;
    stack = m;
  }
  uint32_t r = XS__NONE;
  while (stack != XS__NONE) {
    uint32_t next = h->sib[stack];
    h->sib[stack] = XS__NONE;
    r = ah_meld(h, r, stack);
    stack = next;
  }
  return r;
}

/* Why the program cannot finish, given how far each worker got (pc: its
 * first op that never runs; the ops before it do) and each counter's
 * final value: walk back through unfinished predecessors from the first
 * op that never runs until an await that never gets its value, or an op
 * that repeats (a cycle of waits). */
static xs_status progress_fail(xs_program *p, const size_t *pc,
                               const double *acc, xs_error *err) {
  size_t total = 0;
  size_t *base = malloc((p->nworkers + 1) * sizeof *base);
  if (!base)
    return xs__fail(err, XS_NOMEM, "out of memory");
  for (size_t w = 0; w < p->nworkers; w++) {
    base[w] = total;
    total += p->workers[w].nops;
  }
  base[p->nworkers] = total;
  uint32_t *node_worker = malloc(total * sizeof *node_worker + 1);
  size_t *trail = malloc(total * sizeof *trail + 1);
  size_t *seen_at = malloc(total * sizeof *seen_at + 1);
  xs_status st = XS_OK;
  if (!node_worker || !trail || !seen_at) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto out;
  }
  size_t start = SIZE_MAX;
  for (size_t w = 0; w < p->nworkers; w++) {
    for (size_t i = 0; i < p->workers[w].nops; i++)
      node_worker[base[w] + i] = (uint32_t)w;
    if (start == SIZE_MAX && pc[w] < p->workers[w].nops)
      start = base[w] + pc[w];
  }
#define DONE(node) ((node) - base[node_worker[node]] < pc[node_worker[node]])
  for (size_t k = 0; k < total; k++)
    seen_at[k] = SIZE_MAX;
  size_t len = 0, node = start;
  while (node != SIZE_MAX && seen_at[node] == SIZE_MAX) {
    seen_at[node] = len;
    trail[len++] = node;
    uint32_t w = node_worker[node];
    size_t i = node - base[w];
    const xs__op *op = &p->workers[w].ops[i];
    size_t prev = SIZE_MAX;
    if (op->kind == XS_OP_AWAIT && i > 0 && !DONE(node - 1)) {
      prev = node - 1; /* its own worker has not got here yet */
    } else if (op->kind == XS_OP_AWAIT) {
      double all = 0;
      for (size_t x = 0; x < p->nworkers; x++)
        for (size_t j = 0; j < p->workers[x].nops; j++) {
          const xs__op *o = &p->workers[x].ops[j];
          if (o->kind == XS_OP_SIGNAL && o->aux == op->aux)
            all += o->value * p->workers[x].copies;
        }
      const char *cn = p->counter_names[op->aux];
      if (all < op->value)
        st = xs__program_op_fail(
            p, err, XS_INVALID, w, i, "await",
            "await \"%s\" for %.17g can never return: the program's signals "
            "of \"%s\" add up to %.17g",
            cn, op->value, cn, all);
      else
        st = xs__program_op_fail(
            p, err, XS_CYCLE, w, i, "await",
            "await \"%s\" for %.17g never returns, so the program never "
            "finishes: \"%s\" reaches only %.17g before it (of %.17g that "
            "its signals add up to; the rest come after ops that wait for "
            "this one)",
            cn, op->value, cn, acc[op->aux], all);
      goto out;
    } else if (op->kind == XS_OP_WAIT) {
      uint32_t s = op->aux;
      size_t snode = base[p->send_worker[s]] + p->send_op[s];
      if (!DONE(snode))
        prev = snode;
    }
    if (prev == SIZE_MAX && i > 0 && !DONE(node - 1))
      prev = node - 1;
    node = prev;
  }
#undef DONE
  char msg[700];
  size_t n = 0;
  msg[0] = '\0';
  size_t from = node == SIZE_MAX ? 0 : seen_at[node];
  size_t first_w = 0, first_i = 0;
  int have_first = 0;
  /* trail runs backwards in time; print it forwards */
  for (size_t k = len; k-- > from && n < sizeof msg - 64;) {
    size_t nd = trail[k];
    uint32_t w = node_worker[nd];
    size_t i = nd - base[w];
    const xs__op *op = &p->workers[w].ops[i];
    if (op->kind != XS_OP_WAIT && op->kind != XS_OP_SEND)
      continue;
    char idbuf[256];
    const char *id = xs_program_send_id(p, op->aux, idbuf, sizeof idbuf);
    int wn = snprintf(msg + n, sizeof msg - n, "%s%s op %zu (%s \"%s\")",
                      n ? " -> " : "", p->workers[w].name, i,
                      op_kind_name(op->kind), id);
    if (wn > 0)
      n += (size_t)wn;
    if (!have_first && op->kind == XS_OP_WAIT) {
      first_w = w;
      first_i = i;
      have_first = 1;
    }
  }
  xs__utf8_trim(msg);
  st = xs__program_op_fail(p, err, XS_CYCLE, first_w, first_i,
                           have_first ? "wait" : NULL,
                           "waits form a cycle, so the program never "
                           "finishes: %s",
                           msg);
out:
  free(base);
  free(node_worker);
  free(trail);
  free(seen_at);
  return st;
}

/* Whether every op is reached: each worker runs its ops in order until a
 * wait whose send has not run or an await whose counter is short, and
 * goes on when that send runs or the signals add up. Counters only grow,
 * so the ops this reaches are exactly the ops an evaluation reaches, in
 * any order of events; the order here is immaterial. O(ops) and, per
 * await that blocks, O(log workers); memory per worker, send and counter,
 * none per op. */
static xs_status check_progress(xs_program *p, xs_error *err) {
  size_t nw = p->nworkers, nc = p->ncounters, ns = p->nsends;
  size_t *pc = calloc(nw + 1, sizeof *pc);
  uint32_t *stack = malloc((nw + 1) * sizeof *stack);
  uint32_t *wnext = malloc((nw + 1) * sizeof *wnext);
  uint32_t *shead = malloc((ns + 1) * sizeof *shead);
  uint8_t *sdone = calloc(ns + 1, 1);
  double *acc = calloc(nc + 1, sizeof *acc);
  uint32_t *root = malloc((nc + 1) * sizeof *root);
  await_heap h = {malloc((nw + 1) * sizeof(double)),
                  malloc((nw + 1) * sizeof(uint32_t)),
                  malloc((nw + 1) * sizeof(uint32_t))};
  xs_status st = XS_OK;
  if (!pc || !stack || !wnext || !shead || !sdone || !acc || !root ||
      !h.need || !h.child || !h.sib) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto out;
  }
  for (size_t s = 0; s < ns; s++)
    shead[s] = XS__NONE;
  for (size_t c = 0; c < nc; c++)
    root[c] = XS__NONE;
  /* each worker is on the stack at most once: only a blocked one is let go */
  size_t top = 0;
  for (size_t w = nw; w-- > 0;)
    stack[top++] = (uint32_t)w;
  while (top) {
    uint32_t w = stack[--top];
    const xs__worker *wk = &p->workers[w];
    size_t i = pc[w];
    for (; i < wk->nops; i++) {
      const xs__op *op = &wk->ops[i];
      uint32_t a = op->aux;
      if (op->kind == XS_OP_SEND) {
        sdone[a] = 1;
        for (uint32_t x = shead[a]; x != XS__NONE; x = wnext[x])
          stack[top++] = x;
        shead[a] = XS__NONE;
      } else if (op->kind == XS_OP_WAIT) {
        if (!sdone[a]) {
          wnext[w] = shead[a];
          shead[a] = w;
          break;
        }
      } else if (op->kind == XS_OP_SIGNAL) {
        acc[a] += op->value * wk->copies;
        while (root[a] != XS__NONE && h.need[root[a]] <= acc[a]) {
          uint32_t x = root[a];
          root[a] = ah_pop(&h, x);
          stack[top++] = x;
        }
      } else if (op->kind == XS_OP_AWAIT && acc[a] < op->value) {
        h.need[w] = op->value;
        h.child[w] = h.sib[w] = XS__NONE;
        root[a] = ah_meld(&h, root[a], w);
        break;
      }
    }
    pc[w] = i;
  }
  for (size_t w = 0; w < nw && !st; w++)
    if (pc[w] < p->workers[w].nops)
      st = progress_fail(p, pc, acc, err);
out:
  free(pc), free(stack), free(wnext), free(shead), free(sdone), free(acc);
  free(root), free(h.need), free(h.child), free(h.sib);
  return st;
}

/* Waits resolved, ids checked, each op reached (check: the progress
 * check and the op block, else neither), the sums. */
static xs_status finish(xs_program *p, int check, xs_error *err) {
  size_t total = 0;
  for (size_t w = 0; w < p->nworkers; w++)
    total += p->workers[w].nops;
  if (p->nworkers == 0 || total == 0)
    return xs__fail(err, XS_INVALID,
                    "%s%s%sprogram is empty: it needs at least one worker with "
                    "at least one op",
                    p->src_name ? p->src_name : "", p->src_name ? ": " : "",
                    "");
  /* explicit ids that look like auto ids must not name another send */
  for (size_t s = 0; s < p->nsends; s++) {
    if (p->send_idoff[s] == XS__NONE)
      continue;
    const char *id = p->idpool + p->send_idoff[s];
    uint32_t other;
    if (strchr(id, '#') && xs__program_find_auto_id(p, id, &other) && other != s)
      return xs__program_op_fail(
          p, err, XS_INVALID, p->send_worker[s], p->send_op[s], "id",
          "duplicate send id \"%s\": it is also the automatic id of the "
          "send at worker \"%s\", op %" PRIu32,
          id, p->workers[p->send_worker[other]].name, p->send_op[other]);
  }
  for (size_t w = 0; w < p->nworkers && p->npending; w++) {
    xs__worker *wk = &p->workers[w];
    for (size_t i = 0; i < wk->nops; i++) {
      xs__op *op = &wk->ops[i];
      if (op->kind != XS_OP_WAIT || !op->pending)
        continue;
      const char *id = p->pending[op->aux];
      uint32_t s;
      if (!xs__strmap_get(&p->id_map, id, &s) && !xs__program_find_auto_id(p, id, &s))
        return xs__program_op_fail(p, err, XS_INVALID, w, i, "wait",
                                   "wait on unknown send id \"%s\"", id);
      op->aux = s;
      op->pending = 0;
    }
  }
  for (size_t i = 0; i < p->npending; i++)
    free(p->pending[i]);
  p->npending = 0;
  xs_status st = check ? check_progress(p, err) : XS_OK;
  if (st)
    return st;
  p->compute_sum = p->bytes_sum = p->copies_sum = 0;
  for (size_t w = 0; w < p->nworkers; w++) {
    double k = p->workers[w].copies;
    p->copies_sum += k;
    for (size_t i = 0; i < p->workers[w].nops; i++) {
      const xs__op *op = &p->workers[w].ops[i];
      if (op->kind == XS_OP_COMPUTE)
        p->compute_sum += op->value;
      else if (op->kind == XS_OP_SEND)
        p->bytes_sum += op->value * k;
    }
  }
  /* one block for all ops; when out of memory the arrays stay as they are */
  xs__op *blk = check && p->nworkers > 1 ? malloc(total * sizeof *blk) : NULL;
  if (blk) {
    size_t at = 0;
    for (size_t w = 0; w < p->nworkers; w++) {
      xs__worker *wk = &p->workers[w];
      if (wk->nops)
        memcpy(blk + at, wk->ops, wk->nops * sizeof *blk);
      if (wk->cap)
        free(wk->ops);
      wk->ops = blk + at;
      wk->cap = 0;
      at += wk->nops;
    }
    free(p->opblock);
    p->opblock = blk;
  }
  p->finished = 1;
  p->sealed = !check;
  return XS_OK;
}

xs_status xs_program_finish(xs_program *p, xs_error *err) {
  if (p->finished && !p->sealed)
    return XS_OK;
  return finish(p, 1, err);
}

xs_status xs__program_seal(xs_program *p, xs_error *err) {
  return p->finished ? XS_OK : finish(p, 0, err);
}

/* ---- copies written out one by one (the packet simulator's view) ---- */

xs_status xs__program_expand_copies(const xs_program *p, xs_program **out,
                                    uint32_t *first_worker,
                                    uint32_t *first_send, xs_error *err) {
  *out = NULL;
  /* where each worker's first copy and each send's first copy land */
  size_t nw = 0, ns = 0;
  for (size_t w = 0; w < p->nworkers; w++) {
    const xs__worker *wk = &p->workers[w];
    first_worker[w] = (uint32_t)nw;
    size_t sends = 0;
    for (size_t i = 0; i < wk->nops; i++)
      if (wk->ops[i].kind == XS_OP_SEND)
        first_send[wk->ops[i].aux] = (uint32_t)(ns + sends++);
    nw += wk->copies;
    ns += sends * wk->copies;
  }
  if (nw >= XS__NONE - 1 || ns >= XS__NONE - 1)
    return xs__fail(err, XS_INVALID,
                    "program \"%s\" has too many copies to write out one by "
                    "one (%zu workers, %zu sends)",
                    p->name, nw, ns);
  xs_program *x = xs_program_new(p->name);
  xs_status st = x ? XS_OK : xs__fail(err, XS_NOMEM, "out of memory");
  for (size_t c = 0; c < p->ncounters && !st; c++)
    st = xs_program_counter(x, p->counter_names[c], NULL, err);
  char *name = NULL;
  for (size_t w = 0; w < p->nworkers && !st; w++) {
    const xs__worker *wk = &p->workers[w];
    size_t len = strlen(wk->name) + 24;
    free(name);
    if (!(name = malloc(len))) {
      st = xs__fail(err, XS_NOMEM, "out of memory");
      break;
    }
    for (uint32_t k = 0; k < wk->copies && !st; k++) {
      size_t xw;
      if (wk->copies > 1)
        snprintf(name, len, "%s[%" PRIu32 "]", wk->name, k);
      else
        snprintf(name, len, "%s", wk->name);
      if ((st = xs_program_add_worker(x, name, &xw, err)))
        break;
      for (size_t i = 0; i < wk->nops && !st; i++) {
        const xs__op *op = &wk->ops[i];
        switch (op->kind) {
        case XS_OP_COMPUTE:
          st = xs_program_compute(x, xw, op->value, err);
          break;
        case XS_OP_SEND:
          st = xs_program_send(x, xw, op->value,
                               xs_program_send_channel(p, op->aux), NULL,
                               NULL, err);
          break;
        case XS_OP_WAIT: {
          /* copy k of a worker waits on copy k of a worker with as many
           * copies (its sibling in lockstep), else on the first copy */
          const xs__worker *tw = &p->workers[p->send_worker[op->aux]];
          size_t tsends = 0;
          for (size_t j = 0; j < tw->nops; j++)
            tsends += tw->ops[j].kind == XS_OP_SEND;
          uint32_t t = first_send[op->aux] +
                       (tw->copies == wk->copies ? k * (uint32_t)tsends : 0);
          st = xs__program_push(x, xw, XS_OP_WAIT, 0, t, NULL, err);
          break;
        }
        case XS_OP_FENCE:
          st = xs_program_fence(x, xw, err);
          break;
        default: /* signal, await: one copy's amount each */
          st = xs__program_push(x, xw, (xs_op_kind)op->kind, op->value, op->aux, NULL,
                       err);
          break;
        }
      }
    }
  }
  free(name);
  if (!st)
    st = xs_program_finish(x, err);
  if (st) {
    xs_program_free(x);
    return st;
  }
  *out = x;
  return XS_OK;
}

/* ---- reading one: JSON (program_json.c), then finished ---- */

xs_status xs_program_parse(const char *text, size_t length,
                           const char *filename, xs_program **out,
                           xs_error *err) {
  xs_status st = xs__program_read(text, length, filename, out, err);
  if (!st && (st = xs_program_finish(*out, err))) {
    xs_program_free(*out);
    *out = NULL;
  }
  return st;
}

xs_status xs_program_load(const char *path, xs_program **out, xs_error *err) {
  char *text;
  size_t len;
  *out = NULL;
  xs_status st = xs__read_file(path, &text, &len, err);
  if (st)
    return st;
  st = xs_program_parse(text, len, path, out, err);
  free(text);
  return st;
}
