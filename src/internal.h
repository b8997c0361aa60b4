/*
 * internal.h: what the library's files share and users never see: the flat
 * program layout the evaluators walk, the error helpers, a string map, and
 * the JSON position locator.
 */
#ifndef XSTAGE_INTERNAL_H
#define XSTAGE_INTERNAL_H

#include "xstage.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define XS__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define XS__PRINTF(a, b)
#endif

/* Fill err (if not NULL) and return status. */
xs_status xs__fail(xs_error *err, xs_status status, const char *fmt, ...)
    XS__PRINTF(3, 4);
xs_status xs__vfail(xs_error *err, xs_status status, const char *fmt,
                    va_list ap);
char *xs__strdup(const char *s);
/* The first reason only: when *set is 0, set it and format the reason into
 * buf (size n); later calls keep the first (a proposal's change). */
void xs__first_reason(int *set, char *buf, size_t n, const char *fmt, ...)
    XS__PRINTF(4, 5);
/* 1 when s is well-formed UTF-8 (no overlong forms, surrogates or code
 * points past U+10FFFF): what JSON, and so every serialiser, can hold. */
int xs__utf8_ok(const char *s);
/* How many of the n bytes at s are well-formed UTF-8 from the start: n
 * when all are, else where the first bad or cut-short character starts. */
size_t xs__utf8_prefix(const char *s, size_t n);
/* The length of s cut to at most max bytes without splitting a character
 * (s UTF-8): strlen(s) when it fits. */
size_t xs__utf8_cut(const char *s, size_t max);
/* Remove the start of a character that s ends with, cut short: what
 * snprintf leaves of a UTF-8 name cut into a fixed buffer. */
void xs__utf8_trim(char *s);
/* Grow *array (element size elem) to hold at least need elements. */
int xs__grow(void *array_ptr, size_t *capacity, size_t need, size_t elem);

/* ---- Numbers in text, whatever the host process's locale ----
 * A decimal number at s: optional spaces, an optional sign, digits with
 * an optional point (at least one digit), an optional exponent; never
 * hex, inf or nan, which strtod takes, and always with a point, which
 * strtod under a comma-decimal locale (de_DE) does not. Its value into
 * *v (finite, or the overflow's infinity) and where it ends into *end
 * (may be NULL); 0, or -1 when s holds no such number. */
int xs__decimal(const char *s, double *v, const char **end);
/* The calling thread's locale set to "C" for printing numbers with a
 * point (a host program may have set another), and back: what
 * xs__numeric_c returns goes to xs__numeric_restore. */
void *xs__numeric_c(void);
void xs__numeric_restore(void *old);

/* ---- String map: string -> uint32, open addressing ---- */
typedef struct xs__strmap {
  char **keys;
  uint32_t *values;
  size_t cap, count;
} xs__strmap;
void xs__strmap_free(xs__strmap *m);
/* 0 inserted, 1 already present (value left unchanged), -1 out of memory */
int xs__strmap_put(xs__strmap *m, const char *key, uint32_t value);
/* 1 found (*value set), 0 not found */
int xs__strmap_get(const xs__strmap *m, const char *key, uint32_t *value);

/* ---- JSON paths for messages: "workers[1].ops[3].send" ---- */
#define XS__JPATH_MAX 16
typedef struct xs__jpath {
  int depth;
  struct {
    const char *key; /* NULL: an array index */
    size_t index;
  } seg[XS__JPATH_MAX];
} xs__jpath;
void xs__jpath_key(xs__jpath *p, const char *key);
void xs__jpath_index(xs__jpath *p, size_t index);
void xs__jpath_pop(xs__jpath *p);
void xs__jpath_format(const xs__jpath *p, char *buf, size_t size);
/* Find where the value at path begins in text; 1-based line and column.
 * Returns 0 when found, -1 when the path is not in the text. */
int xs__json_locate(const char *text, size_t length, const xs__jpath *path,
                    int *line, int *column);
/* Fail with "FILE:LINE:COL: PATH: message", the position found from the
 * text; falls back to "FILE: PATH: message". */
xs_status xs__json_fail(xs_error *err, xs_status status, const char *filename,
                        const char *text, size_t length,
                        const xs__jpath *path, const char *fmt, ...)
    XS__PRINTF(7, 8);

/* Read a whole file (NUL-terminated), at most XS_INPUT_LIMIT_BYTES. */
xs_status xs__read_file(const char *path, char **text, size_t *length,
                        xs_error *err);

/* ---- Programs: per-worker arrays of compact ops ---- */
typedef struct xs__op {
  double value;   /* seconds (compute), bytes (send), the amount (signal,
                     await)                                              */
  uint32_t aux;   /* send: its send index; wait: the target send index;
                     signal and await: the counter                       */
  uint8_t kind;   /* xs_op_kind                                           */
  uint8_t pending; /* wait whose id is still a string (aux: pending index) */
  uint8_t pad[2];
} xs__op;

#define XS__NONE UINT32_MAX
#define XS__AWAITED 0x80000000u

typedef struct xs__worker {
  char *name;
  xs__op *ops; /* its own array, or (cap 0) a stretch of the program's opblock */
  size_t nops, cap;
  uint32_t copies; /* identical workers it stands for, >= 1 */
} xs__worker;

struct xs_program {
  char *name;
  xs__worker *workers;
  size_t nworkers, workers_cap;
  /* sends, numbered in the order they were added (for parsed programs:
   * worker by worker, op by op) */
  size_t nsends, sends_cap;
  uint32_t *send_worker;   /* worker of send s                          */
  uint32_t *send_op;       /* op index within its worker                */
  uint32_t *send_idoff;    /* offset into idpool, or XS__NONE for auto  */
  uint32_t *send_chan;     /* 0 = default channel, k + 1 = chan_names[k] */
  char *idpool;
  size_t idpool_len, idpool_cap;
  char **chan_names;
  size_t nchan_names, chan_names_cap;
  xs__strmap chan_map, worker_map, id_map;
  char **pending; /* ids of waits not yet resolved */
  size_t npending, pending_cap;
  size_t nwaits; /* wait ops, so evaluators know without a scan */
  /* counters: names, index by name, and how many signal and await ops */
  char **counter_names;
  size_t ncounters, counters_cap;
  xs__strmap counter_map;
  size_t nsignals, nawaits;
  double copies_sum; /* workers counted with their copies */
  /* all workers' compute seconds and all sends' bytes, summed by
   * xs_program_finish: evaluations refuse a program whose times these
   * make overflow (run_model in eval.c) */
  double compute_sum, bytes_sum;
  /* xs_program_finish moves every worker's ops into this one block, in
   * worker order: an evaluation reads all workers' ops at once, and
   * arrays grown op by op lie wherever the allocator had room (measured:
   * a quarter slower with 132 workers, README "Speed") */
  xs__op *opblock;
  int finished;
  int sealed; /* finished by xs__program_seal: not checked yet */
  /* the JSON it came from, for positions in later messages */
  char *src_name, *src_text;
  size_t src_len;
};

/* The program with every worker's copies written out as workers of their
 * own ("NAME[k]"), for evaluators that cannot run copies as one (the packet
 * simulator). first_worker (one per worker) and first_send (one per send)
 * receive where each worker's and send's first copy is in the result. */
xs_status xs__program_expand_copies(const xs_program *p, xs_program **out,
                                    uint32_t *first_worker,
                                    uint32_t *first_send, xs_error *err);

/* Finish a program a planner built by a rule that cannot deadlock (the
 * MegaMoE kernels' emitter) without xs_program_finish's check that every
 * op is reached and its op block, which cost a tenth of building one: an
 * evaluation still stops with an error on a worker that never finishes.
 * A program a user gets is finished (checked) after. */
xs_status xs__program_seal(xs_program *p, xs_error *err);

/* For builders that send many times on a few channels: the channel's code
 * in the program (0 for NULL, the profile's default; the name added when
 * new), and a send of no id on the channel of a code. */
xs_status xs__program_channel(xs_program *p, const char *channel,
                              uint32_t *code, xs_error *err);
xs_status xs__program_send_code(xs_program *p, size_t w, double bytes,
                                uint32_t code, size_t *send_index,
                                xs_error *err);

/* Fail naming op i of worker w: "file:line:col: workers[w].ops[i].key: ..."
 * for parsed programs, "worker NAME, op I: ..." otherwise. */
xs_status xs__program_op_fail(const xs_program *p, xs_error *err,
                              xs_status status, size_t w, size_t i,
                              const char *key, const char *fmt, ...)
    XS__PRINTF(7, 8);

/* ---- Indexed 4-ary min-heap of next-event times, keyed by (time, id),
 * one slot per entity (INFINITY: no event), for the event-driven
 * evaluators. Ties break by id, which keeps evaluations deterministic. ---- */
typedef struct xs__hnode {
  double key;
  uint32_t id;
} xs__hnode;
/* An entry that loses every comparison: 4-ary heaps keep four of them past
 * their last slot, so a parent's four children can be read unchecked. */
#define XS__HSENTINEL ((xs__hnode){INFINITY, UINT32_MAX})
/* (a->key, a->id) < (b->key, b->id), without branches: which child is the
 * smallest is a coin toss to a branch predictor, and the sift loops are
 * most of an event-driven evaluation's time. */
static inline size_t xs__hbefore(const xs__hnode *a, const xs__hnode *b) {
  return (size_t)((a->key < b->key) | ((a->key == b->key) & (a->id < b->id)));
}
/* The smallest of v[c..c+3], by a two-round tournament */
static inline size_t xs__hleast4(const xs__hnode *v, size_t c) {
  size_t a = c + xs__hbefore(&v[c + 1], &v[c]);
  size_t b = c + 2 + xs__hbefore(&v[c + 3], &v[c + 2]);
  return a + (b - a) * xs__hbefore(&v[b], &v[a]);
}
/* Keys set in ascending (key, id) order (a worker that starts a compute
 * of the same length as the workers before it) go to the end of a sorted
 * ring instead of into the heap: a run of them costs no sifting. Entries
 * of the ring whose entity has moved since are skipped when they come to
 * its head (a ticket per entry tells). Only from XS__IHEAP_RING entities;
 * up to XS__IHEAP_LINEAR, the nodes stay in id order and the least is
 * found by a scan when it moves back (a program's few channels, a
 * planner's few dozen classes of SMs: a scan of them costs less than the
 * heap's sifts, measured on the MegaMoE programs). */
#define XS__IHEAP_RING 32
#define XS__IHEAP_LINEAR 31
typedef struct xs__iheap {
  xs__hnode *node; /* the heap: entities not in the ring, INFINITY too */
  uint32_t *pos;
  size_t n;
  xs__hnode *ring;  /* [head, head + len) mod cap, ascending */
  uint32_t *ticket; /* per ring slot */
  size_t cap, head, len;
  uint32_t *in_ring; /* per entity: the ticket of its ring entry, 0: none */
  uint32_t next_ticket;
  const xs__hnode *top; /* the least of the ring's head and the heap's */
} xs__iheap;
/* n entities 0..n-1, all at INFINITY; -1 when out of memory */
int xs__iheap_init(xs__iheap *h, size_t n);
void xs__iheap_free(xs__iheap *h);
/* more than XS__IHEAP_LINEAR entities: the ring and the heap */
void xs__iheap_set_many(xs__iheap *h, uint32_t id, double key);
void xs__iheap_rescan(xs__iheap *h);
/* xs__iheap_set, inline for the evaluators: model/iheap.h */
static inline double xs__iheap_top(const xs__iheap *h) { return h->top->key; }
static inline uint32_t xs__iheap_top_id(const xs__iheap *h) {
  return h->top->id;
}

/* ---- Evaluation internals ---- */

/* Per-channel parameters after the model's overrides, indexed like the
 * profile's channels. */
typedef struct xs__chan {
  double inject_Bps, worker_Bps, drain_Bps, capacity_B, latency_s,
      overhead_s;
  double packet_B, worker_inflight_B; /* the simulator's */
} xs__chan;

/* The serial and ideal baselines' communication time of a channel that
 * carries bytes (docs/model.md "Baselines"): its bytes cannot be issued
 * faster than R_inj nor delivered faster than R_drain. */
static inline double xs__chan_comm_s(const xs__chan *c, double bytes) {
  return bytes / (c->inject_Bps < c->drain_Bps ? c->inject_Bps : c->drain_Bps) +
         c->latency_s;
}

/* Per-worker sums of the segments a timeline would record, by class, kept
 * during an evaluation instead of the timeline (a planner's breakdown of
 * where the time goes). A segment's class comes from its kind and whether
 * it is marked: a send's segment when the send's program channel code is
 * marked, a segment blocked in an await when its counter is. Each segment
 * of end > start adds end - start to sums[worker * ncls + cls[kind][mark]]
 * (skipped for -1) and to also[kind][mark] (the same); they are added in
 * the order the timeline records them, so each sum is bit for bit the
 * timeline's segments of that worker and class added up in order. */
#define XS__SEG_AWAIT 5 /* kind index of a segment blocked in an await */
typedef struct xs__seg_sums {
  const uint8_t *chan_marked;    /* per program channel code            */
  const uint8_t *counter_marked; /* per counter: 0, 1 or 2             */
  /* the class of a segment by its kind and its mark (a send's channel
   * 0 or 1; an await's counter 0, 1 or 2), and a second class it also
   * counts in; -1 for none */
  signed char cls[XS__SEG_AWAIT + 1][3], also[XS__SEG_AWAIT + 1][3];
  size_t ncls;
  double *sums; /* nworkers x ncls, zeroed by the caller                */
} xs__seg_sums;

typedef struct xs__eval {
  const xs_program *prog;
  const xs__chan *chans;
  size_t nchans;
  const uint32_t *chan_map; /* program channel (send_chan) -> profile's */
  int fence_after_send; /* blocking model */
  int summary_only;
  xs_timeline *tl; /* record into it, or NULL */
  double packet_B;  /* simulator: 0 = per channel */
  int arbitration;  /* simulator: xs_arbitration */
  xs__seg_sums *sums; /* fluid evaluation: sum segments into it, or NULL */
  /* fluid evaluation: stop once the makespan is certain to exceed this
   * (INFINITY: never); *stopped is then set and the result not filled */
  double stop_s;
  int *stopped;
  /* the planners' mode of the fluid evaluation (no timeline): a backlog
   * reaching 0 is no event (the senders' rate is x on either side of it,
   * and advancing the channel clamps the backlog at 0 as the event would
   * set it), and a send that starts alone on its channel, when nothing
   * else is due before its last byte is in, ends without a trip through
   * the event queues (sends to HBM nearly all do). The same results to
   * rounding, with a third of the events (tests/test_plan_eval.c). */
  int plan;
} xs__eval;

/* What a planner adds to an evaluation (xs__evaluate_ex), NULL fields
 * and stop_s INFINITY for none. */
typedef struct xs__eval_extra {
  xs__seg_sums *sums;
  double stop_s;
  int stopped; /* out: 1 when the evaluation stopped past stop_s */
  /* 1: a summary for a planner, in the planners' mode (xs__eval.plan)
   * unless the reference is asked for (xs__reference) */
  int plan;
  /* the profile's channels for the model (xs__chans_of) and the program's
   * channel codes bound to them, when a planner resolved both once; NULL
   * for by name, as xs_evaluate binds them */
  const xs__chan *chans;
  size_t nchans;
  const uint32_t *chan_map;
} xs__eval_extra;
/* The channels of prof as model m sees them (blocking: no capacity),
 * indexed like the profile's. */
void xs__chans_of(const xs_profile *prof, xs_model m, xs__chan *out);
/* xs_evaluate with the extras above (burstgap and blocking, multi-worker
 * programs: the fluid evaluation); with extra->stopped set on return the
 * result is not filled, only *out given back (for reuse). */
xs_status xs__evaluate_ex(const xs_program *p, const xs_profile *prof,
                          xs_model model, const xs_eval_options *opt,
                          xs__eval_extra *extra, xs_result **out,
                          xs_error *err);
/* A program's makespan under model m (no per-send results; tl, when not
 * NULL, takes its timeline): for the planners, which want the time only. */
xs_status xs__makespan(const xs_program *p, const xs_profile *prof, xs_model m,
                       xs_timeline *tl, double *out, xs_error *err);

/* Append to a timeline; out of memory drops the record (a plot with a
 * gap beats a failed evaluation). */
void xs__tl_segment(xs_timeline *tl, xs_segment_kind kind, size_t worker,
                    uint32_t send, double start_s, double end_s);
/* A blocked segment of an await on counter c. */
void xs__tl_await(xs_timeline *tl, size_t worker, uint32_t counter,
                  double start_s, double end_s);
void xs__tl_point(xs_timeline *tl, size_t channel, double t_s,
                  double backlog_B);

/* The profile channel of send s. */
static inline uint32_t xs__chan_of(const xs__eval *ev, uint32_t s) {
  return ev->chan_map[ev->prog->send_chan[s]];
}

/* ---- The worker machine: runs each worker's ops (compute, send, wait,
 * fence, overheads, the blocking model's implicit fences) for the
 * event-driven evaluators, which supply what happens on a channel. ---- */
/* A send the backend ended at once (the planners' mode): when its last
 * byte is in, when it is delivered, its stall. */
typedef struct xs__wm_end {
  double end_s, deliver_s, stall_s;
  int ended;
} xs__wm_end;
typedef struct xs__wm_ops {
  /* Worker w starts pushing bytes (> 0) of send sid on channel c at now;
   * the backend calls xs__wm_send_done once the last byte is in. When end
   * is not NULL nothing else is due at now, and the backend may end the
   * send at once instead, if nothing else happens before its last byte is
   * in: it fills *end (ended set). */
  xs_status (*join)(void *ctx, size_t w, uint32_t sid, size_t c,
                    double bytes, double now, xs__wm_end *end, xs_error *err);
  /* A send of 0 bytes on channel c at now: its delivery time. */
  double (*signal)(void *ctx, size_t c, double now);
} xs__wm_ops;

typedef struct xs__wm_worker {
  size_t pc;
  int state, overhead_done, pending_fence;
  uint32_t send, next_waiter;
  double await_value; /* the counter value an awaiting worker needs */
  uint32_t wake; /* waiters on the send just ended still to let go */
  double t_block, issue_start, max_deliver;
  uint32_t max_send;  /* the send of max_deliver                       */
  uint32_t block_on;  /* what a blocked worker waits for: a send, or a
                         counter (XS__AWAITED | index)                 */
  double compute_s, issue_s, overhead_s, blocked_s, stall_s, finish_s;
} xs__wm_worker;

typedef struct xs__wm {
  const xs__eval *ev;
  const xs_program *p;
  xs_result *r;
  const xs__wm_ops *ops;
  void *ctx;
  size_t nw;
  xs__wm_worker *ws;
  uint32_t *stack;  /* the workers run() is running, innermost last */
  xs__iheap timers; /* each worker's next timed event */
  double *deliver;  /* per send, NAN until its last byte is in (waits) */
  uint32_t *waiters; /* per send, first worker waiting on it */
  double *counters;  /* per counter, its value now */
  uint32_t *cwaiters; /* per counter, first worker awaiting it */
  uint32_t *ready;   /* workers an await let go, still to run at now */
  size_t nready, ready_head;
  double last_deliver;
  int rec;           /* segments go to a timeline or sums              */
  /* the planners' mode: solo, nothing else is due at the time of the run
   * the backend starts next (it sets it; start and timers set their own);
   * depth, the workers on run()'s stack; now, the time the last run
   * reached (a send that ended at once moves it on) */
  int solo;
  size_t depth;
  double now;
  double stop_s;     /* ev->stop_s with a rounding margin               */
  double *compute_total; /* per worker, with stop_s finite: its computes */
  int stopped;       /* a worker cannot finish by stop_s                */
} xs__wm;

int xs__wm_init(xs__wm *m, const xs__eval *ev, xs_result *r,
                const xs__wm_ops *ops, void *ctx);
void xs__wm_free(xs__wm *m);
/* Run every worker from time 0 until each blocks. */
xs_status xs__wm_start(xs__wm *m, xs_error *err);
static inline double xs__wm_next(const xs__wm *m) {
  return xs__iheap_top(&m->timers);
}
/* Fire the earliest worker event. */
xs_status xs__wm_timer(xs__wm *m, xs_error *err);
/* The send of worker w has its last byte in at now. */
xs_status xs__wm_send_done(xs__wm *m, size_t w, double now, double deliver,
                           double stall, xs_error *err);
/* After the last event: check that every worker finished, fill the
 * result's workers, makespan and issue_done_s. */
xs_status xs__wm_finish(xs__wm *m, xs_error *err);

/* A growable string; oom is set (and the text left short) when memory ran
 * out. */
typedef struct xs__sbuf {
  char *s;
  size_t n, cap;
  int oom;
} xs__sbuf;
void xs__sb_printf(xs__sbuf *b, const char *fmt, ...) XS__PRINTF(2, 3);
/* n bytes of text, as they are */
void xs__sb_put(xs__sbuf *b, const char *text, size_t n);
/* text with XML's special characters escaped and control bytes dropped */
void xs__sb_escaped(xs__sbuf *b, const char *text);

/* Send s's id, whole however long its worker's name: its own, or
 * "WORKER#OP" written into b (NULL when out of memory) */
const char *xs__send_id(const xs_program *p, size_t s, xs__sbuf *b);

/* Generated C headers (knob and ring tables): prefix in capitals into up
 * (size at least 65, the prefix an xs_c_header_prefix), and the binary search
 * over the table's lo column that every such header ends with. */
void xs__c_upper(const char *prefix, char *up);
/* 1 when v can be written into a generated header as a C constant: finite,
 * and when whole a whole number from 0 to 2^32 - 1 (an unsigned long) */
int xs__c_value_ok(double v, int whole);
void xs__c_lookup(xs__sbuf *b, const char *row_type, const char *prefix,
                  const char *up, const char *arg);
/* The work of evaluating every option of c at tokens, in GEMM tiles and
 * a fixed part (what XS_MOE_WORK_MAX bounds) */
double xs__moe_plan_work(const xs_moe_config *c, double tokens);
/* xs_moe_plan_table and xs_moe_sensitivity_run with the work limit
 * (XS_MOE_WORK_MAX for them) as a parameter, for tests of the limit */
xs_status xs__moe_plan_table_within(const xs_moe_config *c, const xs_profile *prof,
                                    const xs_moe_table_options *o, double limit,
                                    xs_moe_table **out, xs_error *err);
/* The ring a plan keeps among rows[0..n): prev's (the same way and
 * layout) while within tol of the fastest, else the fastest (prev NULL:
 * the fastest); NULL for no ring. xs_fa_table and the sensitivity run. */
const xs_fa_ring *xs__fa_ring_keep(const xs_fa_ring *rows, size_t n, const xs_fa_ring *prev,
                                   double tol);
xs_status xs__moe_sensitivity_within(const xs_moe_config *c, const xs_profile *prof,
                                     double tol, unsigned schedules, double limit,
                                     xs_moe_pick *base, xs_moe_sensitivity *out,
                                     size_t *n, xs_error *err);

/* The index of name in names[0..n), or -1 */
int xs__name_index(const char *const *names, size_t n, const char *name);
/* The lowest set bit of a nonzero mask (a term mask's first bad bit) */
static inline int xs__lowest_bit(unsigned mask) {
  int b = 0;
  while (mask && !(mask & 1u))
    mask >>= 1, b++;
  return b;
}

/* A profile's channel to change in place (the planners' sensitivity
 * works on a copy). */
xs_channel *xs__profile_channel_mut(xs_profile *p, size_t i);
/* A built-in profile by its name alone, never a file: a GPU's (fabric
 * 0) or a fabric's (1, the profiles with a "nic" channel). XS_INVALID,
 * naming the built-in ones of that kind, for any other name, a path
 * included: the profiles a data file names resolve here, so that a row
 * cannot make xstage open a file. */
xs_status xs__profile_builtin(const char *name, int fabric, xs_profile **out,
                              xs_error *err);
/* A deep copy of a profile, typed (no JSON round trip): the fit, the
 * tuner and the sensitivity runs move numbers of copies. */
xs_status xs__profile_copy(const xs_profile *p, xs_profile **out,
                           xs_error *err);
/* Every dtype's flops_per_s times factor (the SM's MMA clock moved). */
void xs__profile_scale_flops(xs_profile *p, double factor);
size_t xs__profile_flops_count(const xs_profile *p);
const char *xs__profile_flops_dtype(const xs_profile *p, size_t i);
/* Set (or replace) the "sources" text of one key path. */
xs_status xs__profile_put_source(xs_profile *p, const char *key,
                                 const char *text, xs_error *err);
/* Replace the name and/or the source text (NULL: keep). */
xs_status xs__profile_set_text(xs_profile *p, const char *name,
                               const char *source, xs_error *err);

/* ---- MegaMoE planner internals, for its tests ---- */
/* What a MegaMoE program is made of, recorded as the kernel model emits
 * it: the token blocks with their tiles, and every run (one tile per SM of
 * a class of SMs at one position of a phase) with its tasks. A test
 * checks the counts against the config and, on a timeline of the
 * program, that every L2 tile starts after the L1 tiles of its block that
 * the kernel ran at earlier positions. */
typedef struct {
  double valid, rows; /* tokens, and rows computed (padding included)   */
  double tiles[2];    /* L1 and L2 tiles                                */
} xs__moe_audit_block;
typedef struct {
  uint32_t worker;    /* the class's worker                             */
  uint32_t compute;   /* its compute op: this many came before it       */
  uint32_t phase, position;
  uint32_t sms;       /* the SMs of the class                           */
} xs__moe_audit_run;
typedef struct {
  uint32_t run, block;
  uint8_t layer;
  uint16_t ntiles;
} xs__moe_audit_task;
typedef struct xs__moe_audit {
  double bm, bn;      /* the tile                                       */
  xs__moe_audit_block *blocks;
  size_t nblocks;
  xs__moe_audit_run *runs;
  size_t nruns, runs_cap;
  xs__moe_audit_task *tasks;
  size_t ntasks, tasks_cap;
} xs__moe_audit;
/* The program of one schedule with its kernel's default knobs where
 * pattern is NULL, and its audit (free with xs__moe_audit_free). */
xs_status xs__moe_audit_program(const xs_moe_config *c, const xs_profile *prof,
                                xs_moe_schedule sched,
                                const xs_moe_pattern *pattern,
                                xs__moe_audit *audit, xs_program **out,
                                xs_error *err);
void xs__moe_audit_free(xs__moe_audit *audit);
/* The time of one grouped GEMM phase (layer 1 or 2) of the config's
 * busiest rank as a standalone kernel, with the tile the sequential arm's
 * grouped GEMMs take (written to tile_used's block_m and block_n when not
 * NULL); and of a plain FP8 GEMM of groups x (m x n x k) as DeepGEMM's
 * README benchmarks it, with the tile its heuristic at 55ab91f picks
 * (layout "dense", "contiguous" or "masked"). tests/test_moe.c holds them
 * to published figures (data/published/deepgemm-h800.csv, gemm-h200.csv). */
xs_status xs__moe_gemm_phase_time(const xs_moe_config *c, const xs_profile *prof,
                                  int layer, xs_moe_pattern *tile_used,
                                  double *time_s, xs_error *err);
/* ---- prediction intervals (src/plan/interval.c) ---- */
/* One residual: a validation row (or, pair, a ratio of two arms of one
 * config), measured beside predicted; strings point into the table. */
typedef struct {
  const char *family, *source, *arm; /* arm "pair" for a ratio         */
  int pair;
  double size;       /* tokens (or sequence) per rank                   */
  double measured, predicted;
} xs__resid;
typedef struct {
  xs__resid *rows;
  size_t nrows;
  char *strings;
  size_t nstrings;
} xs__resid_table;
xs_status xs__resid_table_parse(const char *text, size_t len, xs__resid_table *t,
                                xs_error *err);
/* the residual table the library carries (data/residuals.csv) */
xs_status xs__resid_builtin(xs__resid_table *t, xs_error *err);
void xs__resid_table_free(xs__resid_table *t);
int xs__interval_band(const char *family, double size);
/* the arm (kernel) of a MegaMoE schedule's residuals */
const char *xs__moe_schedule_arm(int schedule);
const char *xs__interval_band_name(const char *family, int band);
/* The interval of a new prediction of family/arm at size, from the rows
 * of sources other than exclude (NULL: all). */
xs_status xs__interval_of(const xs__resid *rows, size_t nrows, const char *family,
                          const char *arm, double size, const char *exclude,
                          xs_interval *out, xs_error *err);

/* The timing a source's free-text description of its harness names
 * (xs_moe_config.timing): "device" where it reports the kernels' own
 * durations (Kineto, Nsight, an in-kernel trace), "graph" for a CUDA
 * graph's replay, else "stream" (CUDA events or a clock around calls
 * launched from the host, or not said). */
const char *xs__moe_timing_of_text(const char *text);
/* 1 where the description says the L2 was flushed before each call
 * ("cold L2", "flush"), else 0 */
double xs__moe_cold_of_text(const char *text);
xs_status xs__gemm_table_time(const xs_profile *prof, const char *layout,
                              double groups, double m, double n, double k,
                              double *time_s, xs_error *err);

/* the median of v[0..k), which it sorts; NAN when k is 0 */
double xs__median_of(double *v, size_t k);
/* One CSV line split into fields, in place (fields may be double-quoted,
 * "" inside quotes is a quote): the field count, or -1 for an unterminated
 * quote, -2 for more than max fields, -3 for a quote in the wrong place
 * (after a quoted field's end, or inside an unquoted field), its column in
 * *bad_col; xs__csv_split_why(code) says which, for a message. */
typedef struct {
  const char *s; /* into the line */
  size_t col;    /* 1-based column of its first character */
} xs__csv_field;
int xs__csv_split(char *line, xs__csv_field *f, int max, size_t *bad_col);
const char *xs__csv_split_why(int code);
/* tests: the tuner's grid point of tokens: its m options' log times a
 * and gradients g (m x K) as built, and the belief's mean log time and
 * variance of each (arrays of XS_MOE_MAX_OPTIONS, x XS_MOE_TERMS for g) */
void xs__tuner_point(const xs_tuner *t, double tokens, size_t *m, size_t *K,
                     double *a, double *g, double *mu, double *var);

/* The burstgap time of one schedule with the given knob values; with the
 * EP programs' constants par for the sequential arm's all-to-all (NULL:
 * the shipped ones). */
xs_status xs__moe_time(const xs_moe_config *c, const xs_profile *prof,
                       xs_moe_schedule s, const xs_moe_pattern *knobs,
                       double *time_s, xs_error *err);
/* The MegaMoE planner of one config as a session: what xs_moe_plan,
 * xs_moe_options and xs__moe_time do, with the programs and times of
 * earlier calls kept; xs__moe_planner_on moves it onto another profile
 * with the same channels (a copy with numbers moved: the sensitivity run,
 * the tuner), keeping the programs whose kernel inputs did not move.
 * prof must outlive its use. */
typedef struct xs__moe_planner xs__moe_planner;
xs_status xs__moe_planner_new(const xs_moe_config *c, const xs_profile *prof,
                              xs__moe_planner **out, xs_error *err);
void xs__moe_planner_free(xs__moe_planner *pl);
xs_status xs__moe_planner_on(xs__moe_planner *pl, const xs_profile *prof,
                             xs_error *err);
xs_status xs__moe_planner_plan(xs__moe_planner *pl, xs_moe_result *out, xs_error *err);
xs_status xs__moe_planner_options(xs__moe_planner *pl, unsigned schedules,
                                  xs_moe_option *out, size_t *n, xs_moe_workload *work,
                                  xs_error *err);
/* The options as xs__moe_planner_options gives them, exact for those
 * within tol of the fastest and for schedule must_s's rule must_rule (-1:
 * none); the others' evaluations stop past it (time INFINITY). */
xs_status xs__moe_planner_near(xs__moe_planner *pl, unsigned schedules, double tol,
                               int must_s, unsigned must_rule, xs_moe_option *out,
                               size_t *n, xs_moe_workload *work, xs_error *err);
xs_status xs__moe_planner_time(xs__moe_planner *pl, xs_moe_schedule s,
                               const xs_moe_pattern *knobs, double *time_s,
                               xs_error *err);

/* 1 while the planners evaluate in the reference's way (the fluid
 * evaluation event by event, xs__eval.plan clear) and take nothing of one
 * plan into another: process-wide, for the tests that hold the two ways
 * to each other. */
void xs__set_reference(int on);
int xs__reference(void);
/* The calls of one config on one profile (xs_moe_call_of), their
 * workload and tile terms made once for every schedule and option a
 * document names; the config must outlive the handle. */
typedef struct xs__moe_calls xs__moe_calls;
xs_status xs__moe_calls_open(const xs_moe_config *c, const xs_profile *prof,
                            xs__moe_calls **out, xs_error *err);
xs_status xs__moe_calls_of(xs__moe_calls *x, xs_moe_schedule s,
                           const xs_moe_pattern *knobs, xs_moe_call *out,
                           xs_error *err);
void xs__moe_calls_close(xs__moe_calls *x);
struct xs__ep_params;
xs_status xs__moe_time_ep(const xs_moe_config *c, const xs_profile *prof,
                          xs_moe_schedule s, const xs_moe_pattern *knobs,
                          const struct xs__ep_params *par, double *time_s,
                          xs_error *err);

/* One worker, closed forms of docs/model.md; fills r. */
xs_status xs__eval_closed(const xs__eval *ev, xs_result *r, xs_error *err);
/* Any program, exact event-driven fluid evaluation; fills r. */
xs_status xs__eval_fluid(const xs__eval *ev, xs_result *r, xs_error *err);
/* Any program, packet-level simulation; fills r. */
xs_status xs__simulate(const xs__eval *ev, xs_result *r, xs_error *err);

#endif /* XSTAGE_INTERNAL_H */
