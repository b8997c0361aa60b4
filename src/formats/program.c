/*
 * program.c: programs, the schedules of fused kernels (docs/formats.md
 * "Program"): the builder that planners use, the JSON parser that users
 * feed, validation (ids, waits, cycles) and serialisation back to JSON.
 */
#include "jsonutil.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

xs_program *xs_program_new(const char *name) {
  xs_program *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->name = xs__strdup(name ? name : "");
  if (!p->name) {
    free(p);
    return NULL;
  }
  return p;
}

void xs_program_free(xs_program *p) {
  if (!p)
    return;
  for (size_t w = 0; w < p->nworkers; w++) {
    free(p->workers[w].name);
    if (p->workers[w].cap)
      free(p->workers[w].ops);
  }
  free(p->opblock);
  free(p->workers);
  free(p->send_worker);
  free(p->send_op);
  free(p->send_idoff);
  free(p->send_chan);
  free(p->idpool);
  for (size_t i = 0; i < p->nchan_names; i++)
    free(p->chan_names[i]);
  free(p->chan_names);
  for (size_t i = 0; i < p->npending; i++)
    free(p->pending[i]);
  free(p->pending);
  for (size_t i = 0; i < p->ncounters; i++)
    free(p->counter_names[i]);
  free(p->counter_names);
  xs__strmap_free(&p->counter_map);
  xs__strmap_free(&p->chan_map);
  xs__strmap_free(&p->worker_map);
  xs__strmap_free(&p->id_map);
  free(p->src_name);
  free(p->src_text);
  free(p->name);
  free(p);
}

/* ---- compact forms: counted workers and repeats (docs/formats.md
 * "Counted workers and repeats") ---- */

/* A worker's "count" is at most this, and a program with counted workers
 * has at most this many workers in all. */
#define COUNT_MAX ((size_t)1 << 20)
/* A program that uses count or repeat expands to at most this many ops:
 * about what 256 MiB (XS_INPUT_LIMIT_BYTES) of ops written out holds. */
#define EXPAND_MAX ((size_t)1 << 24)
/* and to at most this many bytes of the strings it keeps per op or worker
 * (send ids, wait names, counted workers' names, with their indexes):
 * each is held about three times (the program's pool, its map of ids, a
 * wait's pending name), so up to about 200 MB. */
#define EXPAND_NAME_BYTES ((size_t)64 << 20)
/* Repeats nest at most this deep, so that the path of an op inside them
 * (workers[w].ops[a].ops[b]....send) fits an xs__jpath. */
#define REPEAT_DEPTH 5

/* What an op list expands to: its ops, the strings it keeps (ids of
 * sends, names of waits) and their bytes with the indexes count and
 * repeat append, each with its NUL. */
typedef struct {
  size_t ops, names, bytes;
} expanse;

static xs_status measure_ops(xs__jdoc *d, json_t *ops, int depth,
                             const expanse *budget, expanse *out);

/* The op at expanded position i of an op list as written: its path
 * appended to path. 0 when found. Only for text that parsed, whose
 * repeats are well-formed and bounded: measure_ops gives each body's
 * size. */
static int ops_origin(json_t *ops, size_t i, int depth, xs__jpath *path) {
  size_t k;
  json_t *v;
  const expanse all = {SIZE_MAX, SIZE_MAX, SIZE_MAX};
  json_array_foreach(ops, k, v) {
    json_t *rep = json_is_object(v) ? json_object_get(v, "repeat") : NULL;
    json_t *inner = rep ? json_object_get(v, "ops") : NULL;
    size_t n = 1;
    expanse one = {1, 0, 0};
    xs__jdoc quiet = {NULL, NULL, 0, {0}, NULL};
    if (rep && json_is_array(inner) &&
        measure_ops(&quiet, inner, depth + 1, &all, &one) == XS_OK)
      n = (size_t)json_number_value(rep) * one.ops;
    else
      inner = NULL;
    if (i >= n) {
      i -= n;
      continue;
    }
    xs__jpath_index(path, k);
    if (!inner)
      return 0;
    xs__jpath_key(path, "ops");
    return ops_origin(inner, i % one.ops, depth + 1, path);
  }
  return -1;
}

/* The path of op i of worker w in the program's text: workers[W].ops[I]
 * for programs written out, a path through repeats for an op they made.
 * 0 when found. */
static int op_origin(const xs_program *p, size_t w, size_t i,
                     xs__jpath *path) {
  json_t *root = json_loadb(p->src_text, p->src_len, 0, NULL);
  json_t *ws = json_object_get(root, "workers");
  int r = -1;
  size_t wi;
  json_t *wv;
  json_array_foreach(ws, wi, wv) {
    json_t *c = json_object_get(wv, "count");
    size_t n = json_is_number(c) ? (size_t)json_number_value(c) : 1;
    if (w >= n) {
      w -= n;
      continue;
    }
    json_t *ops = json_object_get(wv, "ops");
    path->depth = 0;
    xs__jpath_key(path, "workers");
    xs__jpath_index(path, wi);
    xs__jpath_key(path, "ops");
    if (json_is_array(ops))
      r = ops_origin(ops, i, 0, path);
    break;
  }
  json_decref(root);
  return r;
}

xs_status xs__program_op_fail(const xs_program *p, xs_error *err,
                              xs_status status, size_t w, size_t i,
                              const char *key, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  xs__utf8_trim(msg); /* cut short: between characters */
  if (p->src_text) {
    xs__jpath path = {0};
    if (op_origin(p, w, i, &path)) {
      path.depth = 0;
      xs__jpath_key(&path, "workers");
      xs__jpath_index(&path, w);
      xs__jpath_key(&path, "ops");
      xs__jpath_index(&path, i);
    }
    if (key)
      xs__jpath_key(&path, key);
    return xs__json_fail(err, status, p->src_name, p->src_text, p->src_len,
                         &path, "%s", msg);
  }
  return xs__fail(err, status, "program \"%s\", worker \"%s\", op %zu: %s",
                  p->name, p->workers[w].name, i, msg);
}

xs_status xs_program_add_worker(xs_program *p, const char *name,
                                size_t *index, xs_error *err) {
  return xs_program_add_workers(p, name, 1, index, err);
}

xs_status xs_program_add_workers(xs_program *p, const char *name,
                                 size_t copies, size_t *index, xs_error *err) {
  if (copies < 1 || copies > COUNT_MAX)
    return xs__fail(err, XS_INVALID,
                    "a worker stands for 1 to %zu copies, got %zu", COUNT_MAX,
                    copies);
  if (!name || !*name)
    return xs__fail(err, XS_INVALID, "a worker needs a non-empty name");
  if (!xs__utf8_ok(name))
    return xs__fail(err, XS_INVALID, "a worker's name must be UTF-8");
  if (p->nworkers >= XS__NONE - 1)
    return xs__fail(err, XS_INVALID, "too many workers");
  int r = xs__strmap_put(&p->worker_map, name, (uint32_t)p->nworkers);
  if (r < 0)
    return xs__fail(err, XS_NOMEM, "out of memory");
  if (r > 0)
    return xs__fail(err, XS_INVALID, "two workers are named \"%s\"", name);
  if (xs__grow(&p->workers, &p->workers_cap, p->nworkers + 1,
               sizeof *p->workers))
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs__worker *wk = &p->workers[p->nworkers];
  memset(wk, 0, sizeof *wk);
  wk->copies = (uint32_t)copies;
  if (!(wk->name = xs__strdup(name)))
    return xs__fail(err, XS_NOMEM, "out of memory");
  if (index)
    *index = p->nworkers;
  p->nworkers++;
  p->finished = 0;
  return XS_OK;
}

/* Room for one more op of worker wk: its array grown, or made its own
 * when it is a stretch of the opblock (cap 0), copied. */
static xs_status grow_ops(xs__worker *wk, xs_error *err) {
  xs__op *borrowed = wk->cap ? NULL : wk->ops;
  if (borrowed)
    wk->ops = NULL;
  if (xs__grow(&wk->ops, &wk->cap, wk->nops + 1, sizeof *wk->ops)) {
    if (borrowed)
      wk->ops = borrowed;
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  if (borrowed && wk->nops)
    memcpy(wk->ops, borrowed, wk->nops * sizeof *wk->ops);
  return XS_OK;
}

static xs_status push_op(xs_program *p, size_t w, xs_op_kind kind,
                         double value, uint32_t aux, xs__op **out,
                         xs_error *err) {
  if (w >= p->nworkers)
    return xs__fail(err, XS_INVALID, "no worker %zu (the program has %zu)", w,
                    p->nworkers);
  xs__worker *wk = &p->workers[w];
  if (wk->nops >= XS__NONE - 1)
    return xs__fail(err, XS_INVALID, "worker \"%s\" has too many ops",
                    wk->name);
  xs_status st;
  if (wk->nops >= wk->cap && (st = grow_ops(wk, err)))
    return st;
  xs__op *op = &wk->ops[wk->nops++];
  *op = (xs__op){value, aux, (uint8_t)kind, 0, {0, 0}};
  if (kind == XS_OP_WAIT)
    p->nwaits++;
  else if (kind == XS_OP_SIGNAL)
    p->nsignals++;
  else if (kind == XS_OP_AWAIT)
    p->nawaits++;
  if (out)
    *out = op;
  p->finished = 0;
  return XS_OK;
}

xs_status xs_program_compute(xs_program *p, size_t w, double seconds,
                             xs_error *err) {
  if (!(seconds >= 0) || !isfinite(seconds))
    return xs__fail(err, XS_INVALID,
                    "compute must be a finite number of seconds >= 0, got %g",
                    seconds);
  return push_op(p, w, XS_OP_COMPUTE, seconds, 0, NULL, err);
}

static int grow_sends(xs_program *p) {
  size_t need = p->nsends + 1, cap = p->sends_cap;
  if (need <= cap)
    return 0;
  size_t c1 = cap, c2 = cap, c3 = cap;
  if (xs__grow(&p->send_worker, &cap, need, sizeof(uint32_t)) ||
      xs__grow(&p->send_op, &c1, need, sizeof(uint32_t)) ||
      xs__grow(&p->send_idoff, &c2, need, sizeof(uint32_t)) ||
      xs__grow(&p->send_chan, &c3, need, sizeof(uint32_t)))
    return -1;
  p->sends_cap = cap;
  return 0;
}

/* The channel code of a name (k + 1 for chan_names[k]), added when new. */
static xs_status channel_code(xs_program *p, const char *channel,
                              uint32_t *code, xs_error *err) {
  uint32_t chan;
  if (!*channel)
    return xs__fail(err, XS_INVALID, "a channel name must not be empty");
  if (!xs__utf8_ok(channel))
    return xs__fail(err, XS_INVALID, "a channel name must be UTF-8");
  if (!xs__strmap_get(&p->chan_map, channel, &chan)) {
    if (xs__grow(&p->chan_names, &p->chan_names_cap, p->nchan_names + 1,
                 sizeof *p->chan_names))
      return xs__fail(err, XS_NOMEM, "out of memory");
    char *c = xs__strdup(channel);
    if (!c ||
        xs__strmap_put(&p->chan_map, channel, (uint32_t)p->nchan_names) < 0) {
      free(c);
      return xs__fail(err, XS_NOMEM, "out of memory");
    }
    chan = (uint32_t)p->nchan_names;
    p->chan_names[p->nchan_names++] = c;
  }
  *code = chan + 1;
  return XS_OK;
}

xs_status xs__program_channel(xs_program *p, const char *channel,
                              uint32_t *code, xs_error *err) {
  if (!channel) {
    *code = 0;
    return XS_OK;
  }
  return channel_code(p, channel, code, err);
}

/* A send of worker w with its channel code and id (idpool offset or
 * XS__NONE), its arguments checked. */
static xs_status add_send(xs_program *p, size_t w, double bytes, uint32_t code,
                          uint32_t idoff, size_t *send_index, xs_error *err) {
  if (grow_sends(p))
    return xs__fail(err, XS_NOMEM, "out of memory");
  size_t s = p->nsends;
  xs_status st = push_op(p, w, XS_OP_SEND, bytes, (uint32_t)s, NULL, err);
  if (st)
    return st;
  p->send_worker[s] = (uint32_t)w;
  p->send_op[s] = (uint32_t)(p->workers[w].nops - 1);
  p->send_idoff[s] = idoff;
  p->send_chan[s] = code;
  p->nsends++;
  if (send_index)
    *send_index = s;
  return XS_OK;
}

static xs_status check_send(const xs_program *p, size_t w, double bytes,
                            xs_error *err) {
  if (!(bytes >= 0) || !isfinite(bytes))
    return xs__fail(err, XS_INVALID,
                    "send must be a finite number of bytes >= 0, got %g",
                    bytes);
  if (w >= p->nworkers)
    return xs__fail(err, XS_INVALID, "no worker %zu (the program has %zu)", w,
                    p->nworkers);
  if (p->nsends >= XS__NONE - 1)
    return xs__fail(err, XS_INVALID, "too many sends");
  return XS_OK;
}

xs_status xs__program_send_code(xs_program *p, size_t w, double bytes,
                                uint32_t code, size_t *send_index,
                                xs_error *err) {
  xs_status st = check_send(p, w, bytes, err);
  if (!st && code > p->nchan_names)
    st = xs__fail(err, XS_INVALID, "no channel code %" PRIu32, code);
  return st ? st : add_send(p, w, bytes, code, XS__NONE, send_index, err);
}

xs_status xs_program_send(xs_program *p, size_t w, double bytes,
                          const char *channel, const char *id,
                          size_t *send_index, xs_error *err) {
  xs_status st = check_send(p, w, bytes, err);
  if (st)
    return st;
  uint32_t code = 0;
  if (channel && (st = channel_code(p, channel, &code, err)))
    return st;
  uint32_t idoff = XS__NONE;
  if (id) {
    if (!*id)
      return xs__fail(err, XS_INVALID, "a send id must not be empty");
    if (!xs__utf8_ok(id))
      return xs__fail(err, XS_INVALID, "a send id must be UTF-8");
    uint32_t other;
    if (xs__strmap_get(&p->id_map, id, &other))
      return xs__fail(err, XS_INVALID,
                      "duplicate send id \"%s\" (also worker \"%s\", op %" PRIu32
                      ")",
                      id, p->workers[p->send_worker[other]].name,
                      p->send_op[other]);
    size_t n = strlen(id) + 1;
    if (p->idpool_len + n > XS__NONE - 1 ||
        xs__grow(&p->idpool, &p->idpool_cap, p->idpool_len + n, 1))
      return xs__fail(err, XS_NOMEM, "out of memory");
    if (xs__strmap_put(&p->id_map, id, (uint32_t)p->nsends) < 0)
      return xs__fail(err, XS_NOMEM, "out of memory");
    idoff = (uint32_t)p->idpool_len;
    memcpy(p->idpool + p->idpool_len, id, n);
    p->idpool_len += n;
  }
  return add_send(p, w, bytes, code, idoff, send_index, err);
}

xs_status xs_program_wait(xs_program *p, size_t w, const char *id,
                          xs_error *err) {
  if (!id || !*id)
    return xs__fail(err, XS_INVALID, "wait needs the id of a send");
  if (!xs__utf8_ok(id))
    return xs__fail(err, XS_INVALID, "a send id must be UTF-8");
  if (xs__grow(&p->pending, &p->pending_cap, p->npending + 1,
               sizeof *p->pending))
    return xs__fail(err, XS_NOMEM, "out of memory");
  char *copy = xs__strdup(id);
  if (!copy)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs__op *op;
  xs_status st =
      push_op(p, w, XS_OP_WAIT, 0, (uint32_t)p->npending, &op, err);
  if (st) {
    free(copy);
    return st;
  }
  op->pending = 1;
  p->pending[p->npending++] = copy;
  return XS_OK;
}

xs_status xs_program_wait_send(xs_program *p, size_t w, size_t send_index,
                               xs_error *err) {
  if (send_index >= p->nsends)
    return xs__fail(err, XS_INVALID, "wait on send %zu: the program has %zu",
                    send_index, p->nsends);
  return push_op(p, w, XS_OP_WAIT, 0, (uint32_t)send_index, NULL, err);
}

xs_status xs_program_fence(xs_program *p, size_t w, xs_error *err) {
  return push_op(p, w, XS_OP_FENCE, 0, 0, NULL, err);
}

/* ---- counters ---- */

/* Counter values and amounts are whole numbers a double holds exactly. */
#define COUNTER_MAX 9007199254740992.0 /* 2^53 */

xs_status xs_program_counter(xs_program *p, const char *name, size_t *index,
                             xs_error *err) {
  if (!name || !*name)
    return xs__fail(err, XS_INVALID, "a counter needs a non-empty name");
  if (!xs__utf8_ok(name))
    return xs__fail(err, XS_INVALID, "a counter's name must be UTF-8");
  uint32_t c;
  if (xs__strmap_get(&p->counter_map, name, &c)) {
    if (index)
      *index = c;
    return XS_OK;
  }
  if (p->ncounters >= XS__NONE - 1)
    return xs__fail(err, XS_INVALID, "too many counters");
  if (xs__grow(&p->counter_names, &p->counters_cap, p->ncounters + 1,
               sizeof *p->counter_names))
    return xs__fail(err, XS_NOMEM, "out of memory");
  char *copy = xs__strdup(name);
  if (!copy || xs__strmap_put(&p->counter_map, name,
                              (uint32_t)p->ncounters) < 0) {
    free(copy);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  p->counter_names[p->ncounters] = copy;
  if (index)
    *index = p->ncounters;
  p->ncounters++;
  p->finished = 0;
  return XS_OK;
}

static xs_status counter_op(xs_program *p, size_t w, size_t counter,
                            double amount, xs_op_kind kind, xs_error *err) {
  if (counter >= p->ncounters)
    return xs__fail(err, XS_INVALID, "no counter %zu (the program has %zu)",
                    counter, p->ncounters);
  if (!(amount >= 1 && amount <= COUNTER_MAX) || amount != floor(amount))
    return xs__fail(err, XS_INVALID,
                    "%s must be a whole number from 1 to 2^53, got %g",
                    kind == XS_OP_SIGNAL ? "a signal's add"
                                         : "an await's value",
                    amount);
  return push_op(p, w, kind, amount, (uint32_t)counter, NULL, err);
}

xs_status xs_program_signal_index(xs_program *p, size_t w, size_t counter,
                                  double add, xs_error *err) {
  return counter_op(p, w, counter, add, XS_OP_SIGNAL, err);
}

xs_status xs_program_await_index(xs_program *p, size_t w, size_t counter,
                                 double value, xs_error *err) {
  return counter_op(p, w, counter, value, XS_OP_AWAIT, err);
}

xs_status xs_program_signal(xs_program *p, size_t w, const char *counter,
                            double add, xs_error *err) {
  size_t c;
  xs_status st = xs_program_counter(p, counter, &c, err);
  return st ? st : counter_op(p, w, c, add, XS_OP_SIGNAL, err);
}

xs_status xs_program_await(xs_program *p, size_t w, const char *counter,
                           double value, xs_error *err) {
  size_t c;
  xs_status st = xs_program_counter(p, counter, &c, err);
  return st ? st : counter_op(p, w, c, value, XS_OP_AWAIT, err);
}

size_t xs_program_counter_count(const xs_program *p) { return p->ncounters; }
const char *xs_program_counter_name(const xs_program *p, size_t c) {
  return c < p->ncounters ? p->counter_names[c] : NULL;
}

/* ---- finish: resolve waits, check ids and cycles ---- */

/* A send named "worker#k" without an explicit id. */
static int find_auto_id(const xs_program *p, const char *id, uint32_t *send) {
  const char *hash = strrchr(id, '#');
  if (!hash || !hash[1])
    return 0;
  char *end;
  unsigned long long k = strtoull(hash + 1, &end, 10);
  /* the op number as auto ids write it: "a#00" and "a#+0" are not "a#0" */
  if (*end || hash[1] < '0' || hash[1] > '9' || (hash[1] == '0' && hash[2]))
    return 0;
  /* the worker's name, however long */
  size_t n = (size_t)(hash - id);
  char small[256], *name = n < sizeof small ? small : malloc(n + 1);
  if (!name)
    return 0;
  memcpy(name, id, n);
  name[n] = '\0';
  uint32_t w;
  int found = xs__strmap_get(&p->worker_map, name, &w);
  if (name != small)
    free(name);
  if (!found)
    return 0;
  const xs__worker *wk = &p->workers[w];
  if (k >= wk->nops || wk->ops[k].kind != XS_OP_SEND)
    return 0;
  uint32_t s = wk->ops[k].aux;
  if (p->send_idoff[s] != XS__NONE)
    return 0;
  *send = s;
  return 1;
}

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

xs_status xs_program_finish(xs_program *p, xs_error *err) {
  if (p->finished)
    return XS_OK;
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
    if (strchr(id, '#') && find_auto_id(p, id, &other) && other != s)
      return xs__program_op_fail(
          p, err, XS_INVALID, p->send_worker[s], p->send_op[s], "id",
          "duplicate send id \"%s\": it is also the automatic id of the "
          "send at worker \"%s\", op %" PRIu32,
          id, p->workers[p->send_worker[other]].name, p->send_op[other]);
  }
  for (size_t w = 0; w < p->nworkers; w++) {
    xs__worker *wk = &p->workers[w];
    for (size_t i = 0; i < wk->nops; i++) {
      xs__op *op = &wk->ops[i];
      if (op->kind != XS_OP_WAIT || !op->pending)
        continue;
      const char *id = p->pending[op->aux];
      uint32_t s;
      if (!xs__strmap_get(&p->id_map, id, &s) && !find_auto_id(p, id, &s))
        return xs__program_op_fail(p, err, XS_INVALID, w, i, "wait",
                                   "wait on unknown send id \"%s\"", id);
      op->aux = s;
      op->pending = 0;
    }
  }
  for (size_t i = 0; i < p->npending; i++)
    free(p->pending[i]);
  p->npending = 0;
  xs_status st = check_progress(p, err);
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
  xs__op *blk = p->nworkers > 1 ? malloc(total * sizeof *blk) : NULL;
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
  return XS_OK;
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
          st = push_op(x, xw, XS_OP_WAIT, 0, t, NULL, err);
          break;
        }
        case XS_OP_FENCE:
          st = xs_program_fence(x, xw, err);
          break;
        default: /* signal, await: one copy's amount each */
          st = push_op(x, xw, (xs_op_kind)op->kind, op->value, op->aux, NULL,
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

/* ---- accessors ---- */

const char *xs_program_name(const xs_program *p) { return p->name; }
size_t xs_program_worker_count(const xs_program *p) { return p->nworkers; }
const char *xs_program_worker_name(const xs_program *p, size_t w) {
  return w < p->nworkers ? p->workers[w].name : NULL;
}
size_t xs_program_op_count(const xs_program *p, size_t w) {
  return w < p->nworkers ? p->workers[w].nops : 0;
}
size_t xs_program_worker_copies(const xs_program *p, size_t w) {
  return w < p->nworkers ? p->workers[w].copies : 0;
}
void xs_program_op(const xs_program *p, size_t w, size_t i, xs_op_info *out) {
  const xs__op *op = &p->workers[w].ops[i];
  out->kind = (xs_op_kind)op->kind;
  out->value = op->value;
  out->counter = op->kind == XS_OP_SIGNAL || op->kind == XS_OP_AWAIT
                     ? p->counter_names[op->aux]
                     : NULL;
  out->send = op->kind == XS_OP_SEND || (op->kind == XS_OP_WAIT &&
                                         !op->pending)
                  ? op->aux
                  : SIZE_MAX;
  out->channel = op->kind == XS_OP_SEND ? xs_program_send_channel(p, op->aux)
                                        : NULL;
}
size_t xs_program_send_count(const xs_program *p) { return p->nsends; }
size_t xs_program_send_worker(const xs_program *p, size_t s) {
  return p->send_worker[s];
}
double xs_program_send_bytes(const xs_program *p, size_t s) {
  return p->workers[p->send_worker[s]].ops[p->send_op[s]].value;
}
const char *xs_program_send_channel(const xs_program *p, size_t s) {
  uint32_t c = p->send_chan[s];
  return c == 0 ? NULL : p->chan_names[c - 1];
}
const char *xs_program_send_id(const xs_program *p, size_t s, char *buf,
                               size_t size) {
  if (p->send_idoff[s] != XS__NONE)
    return p->idpool + p->send_idoff[s];
  snprintf(buf, size, "%s#%" PRIu32, p->workers[p->send_worker[s]].name,
           p->send_op[s]);
  xs__utf8_trim(buf); /* cut short: between characters */
  return buf;
}

const char *xs__send_id(const xs_program *p, size_t s, xs__sbuf *b) {
  if (p->send_idoff[s] != XS__NONE)
    return p->idpool + p->send_idoff[s];
  b->n = 0;
  xs__sb_printf(b, "%s#%" PRIu32, p->workers[p->send_worker[s]].name, p->send_op[s]);
  return b->oom ? NULL : b->s;
}

/* ---- JSON ---- */

/* A wait inside a counted worker or a repeat: its name with the indexes
 * appended, resolved once every worker is read. */
typedef struct scoped_wait {
  uint32_t w, i;    /* the wait op */
  uint32_t pending; /* p->pending entry: the name with its indexes */
  uint32_t base;    /* length of the name as written (inputs are smaller
                       than XS_INPUT_LIMIT_BYTES) */
} scoped_wait;

typedef struct reader {
  xs__jdoc *d;
  xs_program *p;
  size_t w;      /* the worker being read */
  char sfx[128]; /* "[i][j]...": indexes of the enclosing count and repeats */
  size_t sfx_len;
  scoped_wait *waits;
  size_t nwaits, waits_cap;
} reader;

/* name followed by the reader's indexes: in buf when it fits, else in
 * *heap (to free); NULL when out of memory. */
static const char *scoped_name(const reader *r, const char *name, char *buf,
                               size_t size, char **heap) {
  size_t n = strlen(name);
  char *s = buf;
  *heap = NULL;
  if (n + r->sfx_len + 1 > size && !(s = *heap = malloc(n + r->sfx_len + 1)))
    return NULL;
  memcpy(s, name, n);
  memcpy(s + n, r->sfx, r->sfx_len + 1);
  return s;
}

static xs_status parse_op(reader *r, json_t *op) {
  static const char *const keys[] = {"compute", "send",   "channel", "id",
                                     "wait",    "fence",  "signal",  "add",
                                     "await",   "value",  NULL};
  static const char *const kinds[] = {"compute", "send",   "wait",
                                      "fence",   "signal", "await"};
  /* keys that belong to one kind of op */
  static const struct {
    const char *key, *kind;
  } own[] = {{"channel", "send"}, {"id", "send"}, {"add", "signal"},
             {"value", "await"}};
  xs__jdoc *d = r->d;
  xs_program *p = r->p;
  size_t w = r->w;
  if (!json_is_object(op))
    return xs__jfail(d, "an op is an object such as {\"compute\": 1e-6} or "
                        "{\"send\": 4096}, got %s",
                     xs__jtype(op));
  if (json_object_get(op, "ops"))
    return xs__jfail(d, "missing \"repeat\": an op with \"ops\" is a repeat, "
                        "{\"repeat\": K, \"ops\": [...]}");
  xs_status st = xs__jkeys(d, op, keys);
  if (st)
    return st;
  const char *kind = NULL;
  for (int k = 0; k < 6; k++) {
    if (!json_object_get(op, kinds[k]))
      continue;
    if (kind) {
      xs__jpath_key(&d->path, kinds[k]);
      return xs__jfail(d, "an op has one kind, this one has \"%s\" and \"%s\"",
                       kind, kinds[k]);
    }
    kind = kinds[k];
  }
  if (!kind)
    return xs__jfail(d, "an op needs one of \"compute\", \"send\", \"wait\", "
                        "\"fence\", \"signal\", \"await\"");
  xs_error e2;
  for (size_t k = 0; k < sizeof own / sizeof own[0]; k++) {
    if (strcmp(kind, own[k].kind) == 0 || !json_object_get(op, own[k].key))
      continue;
    xs__jpath_key(&d->path, own[k].key);
    return xs__jfail(d, "\"%s\" belongs to a %s op, not to a %s op",
                     own[k].key, own[k].kind, kind);
  }
  if (strcmp(kind, "signal") == 0 || strcmp(kind, "await") == 0) {
    int sig = kind[0] == 's';
    const char *name;
    double amount = 1;
    int have;
    if ((st = xs__jstring(d, op, kind, &name, NULL)))
      return st;
    if (!*name) {
      xs__jpath_key(&d->path, kind);
      return xs__jfail(d, "a counter needs a non-empty name");
    }
    const char *akey = sig ? "add" : "value";
    char desc[96];
    snprintf(desc, sizeof desc, "%s, a whole number from 1 to 2^53",
             sig ? "the amount to add" : "the counter value to wait for");
    if ((st = xs__jnumber(d, op, akey, XS__J_POSITIVE, desc, &amount, &have)))
      return st;
    if (!have)
      amount = 1;
    if (amount != floor(amount) || amount > COUNTER_MAX) {
      xs__jpath_key(&d->path, akey);
      return xs__jfail(d, "expected %s, got %.17g", desc, amount);
    }
    xs_status sst = sig ? xs_program_signal(p, w, name, amount, &e2)
                        : xs_program_await(p, w, name, amount, &e2);
    if (sst) {
      if (sst == XS_NOMEM)
        return xs__fail(d->err, XS_NOMEM, "%s", e2.message);
      xs__jpath_key(&d->path, kind);
      return xs__jfail(d, "%s", e2.message);
    }
    return XS_OK;
  }
  char buf[256], *heap = NULL;
  if (strcmp(kind, "compute") == 0) {
    double s;
    if ((st = xs__jnumber(d, op, "compute", XS__J_NONNEG,
                          "a time in seconds", &s, NULL)))
      return st;
    if (xs_program_compute(p, w, s, &e2))
      return xs__jfail(d, "%s", e2.message);
  } else if (strcmp(kind, "send") == 0) {
    double b;
    const char *chan = NULL, *id = NULL;
    int have;
    if ((st = xs__jnumber(d, op, "send", XS__J_NONNEG, "a size in bytes", &b,
                          NULL)) ||
        (st = xs__jstring(d, op, "channel", &chan, &have)) ||
        (st = xs__jstring(d, op, "id", &id, &have)))
      return st;
    /* inside count and repeat an id gets their indexes: "x" -> "x[3][0]" */
    const char *full = id;
    if (id && *id && r->sfx_len &&
        !(full = scoped_name(r, id, buf, sizeof buf, &heap)))
      return xs__fail(d->err, XS_NOMEM, "out of memory");
    xs_status sst = xs_program_send(p, w, b, chan, full, NULL, &e2);
    free(heap);
    if (sst) {
      xs__jpath_key(&d->path, id && strstr(e2.message, "id") ? "id"
                              : chan                         ? "channel"
                                                             : "send");
      return xs__jfail(d, "%s", e2.message);
    }
  } else if (strcmp(kind, "wait") == 0) {
    const char *id;
    if ((st = xs__jstring(d, op, "wait", &id, NULL)))
      return st;
    int scoped = *id && r->sfx_len;
    const char *full = id;
    if (scoped) {
      if (xs__grow(&r->waits, &r->waits_cap, r->nwaits + 1, sizeof *r->waits))
        return xs__fail(d->err, XS_NOMEM, "out of memory");
      if (!(full = scoped_name(r, id, buf, sizeof buf, &heap)))
        return xs__fail(d->err, XS_NOMEM, "out of memory");
    }
    xs_status sst = xs_program_wait(p, w, full, &e2);
    free(heap);
    if (sst) {
      xs__jpath_key(&d->path, "wait");
      return xs__jfail(d, "%s", e2.message);
    }
    if (scoped)
      r->waits[r->nwaits++] = (scoped_wait){
          (uint32_t)w, (uint32_t)(p->workers[w].nops - 1),
          (uint32_t)(p->npending - 1), (uint32_t)strlen(id)};
  } else {
    json_t *f = json_object_get(op, "fence");
    if (!json_is_true(f)) {
      xs__jpath_key(&d->path, "fence");
      return xs__jfail(d, "expected true (\"fence\": true), got %s",
                       json_is_false(f) ? "false" : xs__jtype(f));
    }
    if (xs_program_fence(p, w, &e2))
      return xs__jfail(d, "%s", e2.message);
  }
  return XS_OK;
}

/* A whole number from 1 to max at obj[key], which must be there. */
static xs_status read_times(xs__jdoc *d, json_t *obj, const char *key,
                            size_t max, const char *what, size_t *out) {
  char desc[128];
  double x;
  snprintf(desc, sizeof desc, "%s, a whole number from 1 to %zu", what, max);
  xs_status st = xs__jnumber(d, obj, key, XS__J_POSITIVE, desc, &x, NULL);
  if (st)
    return st;
  xs__jpath_key(&d->path, key);
  if (x != floor(x))
    st = xs__jfail(d, "expected %s, got %g (must be a whole number)", desc, x);
  else if (x > (double)max)
    st = xs__jfail(d, "expected %s, got %.17g (too large: at most %zu)", desc,
                   x, max);
  else
    *out = (size_t)x;
  xs__jpath_pop(&d->path);
  return st;
}

/* The bytes of the indexes "[0]" ... "[k-1]" */
static size_t index_bytes(size_t k) {
  size_t total = 0, lo = 0, hi = 10, digits = 1;
  while (lo < k) {
    size_t top = k < hi ? k : hi;
    total += (top - lo) * (2 + digits);
    lo = hi;
    hi *= 10;
    digits++;
  }
  return total;
}

/* k copies of e, each with one more index on its strings: into *out, or
 * -1 when that passes budget (what *out then holds is not to be used) */
static int times_expanse(size_t k, const expanse *e, const expanse *budget,
                         expanse *out) {
  if ((e->ops && k > budget->ops / e->ops) ||
      (e->names && k > budget->names / e->names) ||
      (e->bytes && k > budget->bytes / e->bytes))
    return -1;
  size_t idx = index_bytes(k);
  if (e->names && idx > (budget->bytes - k * e->bytes) / e->names)
    return -1;
  *out = (expanse){k * e->ops, k * e->names, k * e->bytes + e->names * idx};
  return 0;
}

/* The strings an op keeps: a send's id, a wait's name */
static void op_names(json_t *op, expanse *e) {
  static const char *const keys[] = {"id", "wait"};
  for (int k = 0; k < 2; k++) {
    json_t *v = json_is_object(op) ? json_object_get(op, keys[k]) : NULL;
    size_t n = json_is_string(v) ? json_string_length(v) : 0;
    if (n) {
      e->names++;
      e->bytes += n + 1;
    }
  }
}

/* The one walk before expanding: check the repeats of an op list (the
 * path at the list, depth of them around it) and measure what it expands
 * to into *out. budget: what the program may still grow by; a repeat
 * that would take it past fails, naming the bound. */
static xs_status measure_ops(xs__jdoc *d, json_t *ops, int depth,
                             const expanse *budget, expanse *out) {
  static const char *const keys[] = {"repeat", "ops", NULL};
  size_t k;
  json_t *v;
  xs_status st;
  expanse total = {0, 0, 0};
  json_array_foreach(ops, k, v) {
    if (!json_is_object(v) || !json_object_get(v, "repeat")) {
      total.ops++; /* an op, checked as it is read */
      op_names(v, &total);
      continue;
    }
    xs__jpath_index(&d->path, k);
    size_t times;
    if ((st = xs__jkeys(d, v, keys)) ||
        (st = read_times(d, v, "repeat", EXPAND_MAX, "a number of passes",
                         &times)))
      return st;
    if (depth >= REPEAT_DEPTH) {
      xs__jpath_key(&d->path, "repeat");
      return xs__jfail(d, "repeats nest at most %d deep, this one is inside "
                          "%d others",
                       REPEAT_DEPTH, depth);
    }
    json_t *inner = json_object_get(v, "ops");
    if (!inner)
      return xs__jfail(d, "missing \"ops\" (the array of ops to repeat)");
    xs__jpath_key(&d->path, "ops");
    if (!json_is_array(inner))
      return xs__jfail(d, "expected an array of ops, got %s",
                       xs__jtype(inner));
    expanse left = {budget->ops > total.ops ? budget->ops - total.ops : 0,
                    budget->names > total.names ? budget->names - total.names : 0,
                    budget->bytes > total.bytes ? budget->bytes - total.bytes : 0},
            one, all;
    if ((st = measure_ops(d, inner, depth + 1, &left, &one)))
      return st;
    xs__jpath_pop(&d->path);
    if (times_expanse(times, &one, &left, &all)) {
      xs__jpath_key(&d->path, "repeat");
      if (one.ops && times > left.ops / one.ops)
        return xs__jfail(d, "repeat %zu x %zu ops takes the program past %zu "
                            "ops (the most that count and repeat expand to)",
                         times, one.ops, EXPAND_MAX);
      return xs__jfail(d, "repeat %zu x %zu ids and wait names (%zu bytes a pass) "
                          "takes the program past %zu bytes of them (the most "
                          "that count and repeat expand to)",
                       times, one.names, one.bytes, EXPAND_NAME_BYTES);
    }
    total.ops += all.ops;
    total.names += all.names;
    total.bytes += all.bytes;
    xs__jpath_pop(&d->path);
  }
  *out = total;
  return XS_OK;
}

/* The second walk: read an op list (the path at it) into worker r->w,
 * repeats expanded. A repeat whose first pass adds no op (its body
 * expands to nothing) makes no other pass. */
static xs_status read_ops(reader *r, json_t *ops) {
  xs__jdoc *d = r->d;
  size_t k;
  json_t *v;
  xs_status st;
  json_array_foreach(ops, k, v) {
    xs__jpath_index(&d->path, k);
    json_t *rep = json_is_object(v) ? json_object_get(v, "repeat") : NULL;
    if (rep) { /* checked by measure_ops */
      size_t times = (size_t)json_number_value(rep), mark = r->sfx_len;
      size_t before = r->p->workers[r->w].nops;
      json_t *inner = json_object_get(v, "ops");
      xs__jpath_key(&d->path, "ops");
      for (size_t j = 0; j < times; j++) {
        int n = snprintf(r->sfx + mark, sizeof r->sfx - mark, "[%zu]", j);
        r->sfx_len = mark + (n > 0 ? (size_t)n : 0);
        st = read_ops(r, inner);
        r->sfx_len = mark;
        r->sfx[mark] = '\0';
        if (st)
          return st;
        if (r->p->workers[r->w].nops == before)
          break; /* an empty body: empty every pass */
      }
      xs__jpath_pop(&d->path);
    } else if ((st = parse_op(r, v))) {
      return st;
    }
    xs__jpath_pop(&d->path);
  }
  return XS_OK;
}

static xs_status add_worker(xs__jdoc *d, xs_program *p, const char *name,
                            int have_name, size_t copies, size_t *w) {
  xs_error e2;
  if (!xs_program_add_workers(p, name, copies, w, &e2))
    return XS_OK;
  if (e2.status == XS_NOMEM)
    return xs__fail(d->err, XS_NOMEM, "%s", e2.message);
  if (have_name)
    xs__jpath_key(&d->path, "name");
  return xs__jfail(d, "%s", e2.message);
}

/* Fills r->p, or frees what it built of it. */
static xs_status parse_program(xs__jdoc *d, json_t *root, reader *r) {
  static const char *const keys[] = {"name", "workers", "description", NULL};
  static const char *const wkeys[] = {"name", "ops", "count", "copies", NULL};
  xs_status st;
  if (!json_is_object(root))
    return xs__jfail(d, "a program is an object with \"workers\", got %s",
                     xs__jtype(root));
  if ((st = xs__jkeys(d, root, keys)))
    return st;
  const char *name = NULL;
  int have;
  if ((st = xs__jstring(d, root, "name", &name, &have)))
    return st;
  json_t *ws = json_object_get(root, "workers");
  if (!ws)
    return xs__jfail(d, "missing \"workers\" (an array of workers, each with "
                        "\"name\" and \"ops\")");
  xs__jpath_key(&d->path, "workers");
  if (!json_is_array(ws))
    return xs__jfail(d, "expected an array of workers, got %s",
                     xs__jtype(ws));
  if (json_array_size(ws) == 0)
    return xs__jfail(d, "the program is empty: it has no workers");
  xs_program *p = xs_program_new(name ? name : "");
  if (!p)
    return xs__fail(d->err, XS_NOMEM, "out of memory");
  r->p = p;
  size_t wi;
  expanse total = {0, 0, 0}; /* so far */
  int any_counted = 0;
  json_t *wv;
  char *cname = NULL; /* NAME[i] of a counted worker */
  json_array_foreach(ws, wi, wv) {
    xs__jpath_index(&d->path, wi);
    if (!json_is_object(wv)) {
      st = xs__jfail(d, "a worker is an object with \"name\" and \"ops\", "
                        "got %s",
                     xs__jtype(wv));
      goto fail;
    }
    if ((st = xs__jkeys(d, wv, wkeys)))
      goto fail;
    const char *wname = NULL;
    char defname[32];
    if ((st = xs__jstring(d, wv, "name", &wname, &have)))
      goto fail;
    if (!wname) {
      snprintf(defname, sizeof defname, "w%zu", wi);
      wname = defname;
    }
    int counted = json_object_get(wv, "count") != NULL;
    size_t count = 1, copies = 1, w = 0;
    expanse body, all;
    any_counted |= counted;
    if (counted && (st = read_times(d, wv, "count", COUNT_MAX,
                                    "a number of workers", &count)))
      goto fail;
    if (json_object_get(wv, "copies") &&
        (st = read_times(d, wv, "copies", COUNT_MAX,
                         "a number of identical copies", &copies)))
      goto fail;
    if (!counted && any_counted && p->nworkers >= COUNT_MAX) {
      st = xs__jfail(d, "this worker takes the program past %zu workers (the "
                        "most a program with count has)",
                     COUNT_MAX);
      goto fail;
    }
    if (!counted && (st = add_worker(d, p, wname, have, copies, &w)))
      goto fail;
    json_t *ops = json_object_get(wv, "ops");
    if (!ops) {
      st = xs__jfail(d, "missing \"ops\" (an array of ops)");
      goto fail;
    }
    xs__jpath_key(&d->path, "ops");
    if (!json_is_array(ops)) {
      st = xs__jfail(d, "expected an array of ops, got %s", xs__jtype(ops));
      goto fail;
    }
    expanse budget = {EXPAND_MAX > total.ops ? EXPAND_MAX - total.ops : 0, SIZE_MAX,
                      EXPAND_NAME_BYTES > total.bytes ? EXPAND_NAME_BYTES - total.bytes
                                                      : 0};
    if ((st = measure_ops(d, ops, 0, &budget, &body)))
      goto fail;
    xs__jpath_pop(&d->path);
    all = body;
    if (counted) {
      xs__jpath_key(&d->path, "count");
      /* the copies' ops and strings, and their own names NAME[c] */
      expanse named = {body.ops, body.names + 1, body.bytes + strlen(wname) + 1};
      if (times_expanse(count, &named, &budget, &all)) {
        if (body.ops && count > budget.ops / body.ops)
          st = xs__jfail(d, "count %zu x %zu ops takes the program past %zu "
                            "ops (the most that count and repeat expand to)",
                         count, body.ops, EXPAND_MAX);
        else
          st = xs__jfail(d, "count %zu x %zu names (%zu bytes a copy) takes the "
                            "program past %zu bytes of ids, wait names and "
                            "worker names (the most that count and repeat "
                            "expand to)",
                         count, named.names, named.bytes, EXPAND_NAME_BYTES);
        goto fail;
      }
      if (count > COUNT_MAX - (p->nworkers < COUNT_MAX ? p->nworkers
                                                       : COUNT_MAX)) {
        st = xs__jfail(d, "count %zu takes the program past %zu workers "
                          "(the most a program with count has)",
                       count, COUNT_MAX);
        goto fail;
      }
      xs__jpath_pop(&d->path);
      size_t n = strlen(wname) + 24;
      if (!(cname = malloc(n))) {
        st = xs__fail(d->err, XS_NOMEM, "out of memory");
        goto fail;
      }
    }
    for (size_t c = 0; c < count; c++) {
      r->sfx_len = 0;
      r->sfx[0] = '\0';
      if (counted) {
        /* copy c is NAME[c], and its ids get [c] */
        snprintf(cname, strlen(wname) + 24, "%s[%zu]", wname, c);
        if ((st = add_worker(d, p, cname, have, copies, &w)))
          goto fail;
        int n = snprintf(r->sfx, sizeof r->sfx, "[%zu]", c);
        r->sfx_len = n > 0 ? (size_t)n : 0;
      }
      r->w = w;
      xs__jpath_key(&d->path, "ops");
      if ((st = read_ops(r, ops)))
        goto fail;
      xs__jpath_pop(&d->path);
    }
    free(cname);
    cname = NULL;
    total.ops += all.ops;
    total.names += all.names;
    total.bytes += all.bytes;
    xs__jpath_pop(&d->path);
  }
  if (total.ops == 0) { /* every op list empty, or expanding to nothing */
    xs__jpath_index(&d->path, 0);
    xs__jpath_key(&d->path, "ops");
    st = xs__jfail(d, "the program is empty: no worker has an op");
    goto fail;
  }
  return XS_OK;
fail:
  free(cname);
  xs_program_free(p);
  r->p = NULL;
  return st;
}

/* A wait inside count or repeat names the send whose id is its name with
 * the most of its indexes: all of them, then without the innermost, and
 * so on, the name as written last. */
static xs_status resolve_scoped_waits(xs_program *p, const reader *r,
                                      xs_error *err) {
  for (size_t k = 0; k < r->nwaits; k++) {
    const scoped_wait *sw = &r->waits[k];
    char *name = p->pending[sw->pending];
    size_t len = strlen(name);
    char tried[512];
    size_t nt = 0;
    tried[0] = '\0';
    for (;;) {
      char save = name[len];
      name[len] = '\0';
      uint32_t s;
      if (xs__strmap_get(&p->id_map, name, &s) || find_auto_id(p, name, &s))
        break; /* the name stays cut here */
      if (nt < sizeof tried) {
        int n = snprintf(tried + nt, sizeof tried - nt, "%s\"%s\"",
                         nt ? ", " : "", name);
        nt += n > 0 ? (size_t)n : 0;
      }
      name[len] = save;
      if (len <= sw->base) {
        name[sw->base] = '\0';
        xs__utf8_trim(tried); /* a long list cut between characters */
        return xs__program_op_fail(p, err, XS_INVALID, sw->w, sw->i, "wait",
                                   "wait on unknown send id \"%s\" (no send "
                                   "has the id %s)",
                                   name, tried);
      }
      do
        len--;
      while (len > sw->base && name[len] != '[');
    }
  }
  return XS_OK;
}

xs_status xs_program_parse(const char *text, size_t length,
                           const char *filename, xs_program **out,
                           xs_error *err) {
  xs__jdoc d = {filename, text, length, {0}, err};
  json_t *root;
  *out = NULL;
  xs_status st = xs__jparse(&d, &root);
  if (st)
    return st;
  reader r = {0};
  r.d = &d;
  st = parse_program(&d, root, &r);
  json_decref(root);
  xs_program *p = r.p;
  if (st) {
    free(r.waits);
    return st;
  }
  p->src_name = xs__strdup(filename ? filename : "<input>");
  p->src_text = malloc(length + 1);
  if (!p->src_name || !p->src_text) {
    free(r.waits);
    xs_program_free(p);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  memcpy(p->src_text, text, length);
  p->src_text[length] = '\0';
  p->src_len = length;
  if (!*p->name) {
    /* a program without a name is called after its file */
    const char *base = filename ? strrchr(filename, '/') : NULL;
    char *nm = xs__strdup(base ? base + 1 : filename ? filename : "program");
    if (nm) {
      free(p->name);
      p->name = nm;
    }
  }
  st = resolve_scoped_waits(p, &r, err);
  free(r.waits);
  if (st || (st = xs_program_finish(p, err))) {
    xs_program_free(p);
    return st;
  }
  *out = p;
  return XS_OK;
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

json_t *xs__send_id_json(const xs_program *p, size_t s) {
  xs__sbuf b = {0};
  const char *id = xs__send_id(p, s, &b);
  json_t *v = id ? json_string(id) : NULL;
  free(b.s);
  return v;
}

char *xs_program_to_json(const xs_program *p) {
  json_t *root = json_object(), *ws = json_array();
  int bad = xs__jput(root, "name", json_string(p->name));
  for (size_t w = 0; w < p->nworkers && !bad; w++) {
    const xs__worker *wk = &p->workers[w];
    json_t *wo = json_object(), *ops = json_array();
    bad = xs__jput(wo, "name", json_string(wk->name));
    if (wk->copies > 1)
      bad |= xs__jput(wo, "copies", json_integer(wk->copies));
    for (size_t i = 0; i < wk->nops && !bad; i++) {
      const xs__op *op = &wk->ops[i];
      json_t *o = json_object();
      switch (o ? (int)op->kind : -1) {
      case XS_OP_COMPUTE:
        bad = xs__jput(o, "compute", json_real(op->value));
        break;
      case XS_OP_SEND: {
        bad = xs__jput(o, "send", json_real(op->value));
        const char *ch = xs_program_send_channel(p, op->aux);
        if (ch)
          bad |= xs__jput(o, "channel", json_string(ch));
        if (p->send_idoff[op->aux] != XS__NONE)
          bad |= xs__jput(o, "id", json_string(p->idpool + p->send_idoff[op->aux]));
        break;
      }
      case XS_OP_WAIT:
        bad = xs__jput(o, "wait", op->pending ? json_string(p->pending[op->aux])
                                         : xs__send_id_json(p, op->aux));
        break;
      case XS_OP_SIGNAL:
      case XS_OP_AWAIT: {
        int sig = op->kind == XS_OP_SIGNAL;
        bad = xs__jput(o, sig ? "signal" : "await",
                       json_string(p->counter_names[op->aux]));
        if (op->value != 1)
          bad |= xs__jput(o, sig ? "add" : "value",
                          json_integer((json_int_t)op->value));
        break;
      }
      case -1:
        bad = 1;
        break;
      default:
        bad = xs__jput(o, "fence", json_true());
        break;
      }
      bad |= xs__jappend(ops, o);
    }
    bad |= xs__jput(wo, "ops", ops) | xs__jappend(ws, wo);
  }
  bad |= xs__jput(root, "workers", ws);
  char *s = bad ? NULL
                : json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(17) |
                                       JSON_COMPACT);
  json_decref(root);
  return s;
}
