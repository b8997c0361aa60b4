/*
 * program.c: programs, the schedules of fused kernels (docs/formats.md
 * "Program"): the builder that planners use (workers, ops, sends and
 * their channels, counters), the lookup of "worker#op" send ids, and the
 * accessors. The JSON form, read and written, is program_json.c;
 * finishing a program (ids, waits, cycles) program_check.c.
 */
#include "formats/program.h"

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

xs_status xs__program_push(xs_program *p, size_t w, xs_op_kind kind,
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
  return xs__program_push(p, w, XS_OP_COMPUTE, seconds, 0, NULL, err);
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
  xs_status st = xs__program_push(p, w, XS_OP_SEND, bytes, (uint32_t)s, NULL, err);
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
      xs__program_push(p, w, XS_OP_WAIT, 0, (uint32_t)p->npending, &op, err);
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
  return xs__program_push(p, w, XS_OP_WAIT, 0, (uint32_t)send_index, NULL, err);
}

xs_status xs_program_fence(xs_program *p, size_t w, xs_error *err) {
  return xs__program_push(p, w, XS_OP_FENCE, 0, 0, NULL, err);
}

/* ---- counters ---- */

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
  /* whole: the cast is exact in range, and cheaper than floor() */
  if (!(amount >= 1 && amount <= COUNTER_MAX) || amount != (double)(int64_t)amount)
    return xs__fail(err, XS_INVALID,
                    "%s must be a whole number from 1 to 2^53, got %g",
                    kind == XS_OP_SIGNAL ? "a signal's add"
                                         : "an await's value",
                    amount);
  return xs__program_push(p, w, kind, amount, (uint32_t)counter, NULL, err);
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

/* ---- lookups ---- */

int xs__program_find_auto_id(const xs_program *p, const char *id,
                              uint32_t *send) {
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
