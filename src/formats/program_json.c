/*
 * program_json.c: the JSON form of programs (docs/formats.md "Program"):
 * the reader of what users feed, with counted workers and repeats
 * (bounded: docs/limits.md; program_check.c finishes what it reads),
 * messages that name the op's place in the text, and the serialisation
 * back to JSON.
 */
#include "formats/program.h"
#include "jsonutil.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- compact forms: counted workers and repeats (docs/formats.md
 * "Counted workers and repeats") ---- */

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
      if (xs__strmap_get(&p->id_map, name, &s) || xs__program_find_auto_id(p, name, &s))
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

xs_status xs__program_read(const char *text, size_t length,
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
  if (st) {
    xs_program_free(p);
    return st;
  }
  *out = p;
  return XS_OK;
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
