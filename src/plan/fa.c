/*
 * fa.c: the context-parallel attention planner. In ring attention each
 * rank forwards the KV block it holds while it attends to it; this decides
 * whether the forwarding stores fit under the channel's in-flight capacity
 * when issued from inside the FlashAttention loop (piggyback), against
 * computing then forwarding (sequential) and against k SMs set aside to
 * forward (dedicated). docs/plan-flashattn.md.
 *
 * By symmetry every rank sends what it receives at the same time, so step
 * s+1 waits for the delivery of this rank's own forward of step s.
 */
#include "formats/jsonutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name;
  double hq, hkv, d;
} presets[] = {{"llama3-8b", 32, 8, 128},
               {"llama3-70b", 64, 8, 128},
               {"mha", 32, 32, 128}};
#define NPRESETS (sizeof presets / sizeof presets[0])

size_t xs_fa_preset_count(void) { return NPRESETS; }
const char *xs_fa_preset_name(size_t i) {
  return i < NPRESETS ? presets[i].name : NULL;
}

int xs_fa_preset(const char *name, xs_fa_config *c) {
  for (size_t i = 0; i < NPRESETS; i++) {
    if (strcmp(name, presets[i].name) != 0)
      continue;
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->seq = 16384;
    c->heads_q = presets[i].hq;
    c->heads_kv = presets[i].hkv;
    c->head_dim = presets[i].d;
    c->cp = 8;
    c->causal = 1;
    c->bytes = 2;
    c->block_m = 128;
    c->block_n = 128;
    snprintf(c->dtype, sizeof c->dtype, "bf16");
    c->batch = 1;
    c->layout = XS_FA_ZIGZAG;
    c->backward = 0;
    snprintf(c->kernel, sizeof c->kernel, "fa2");
    return 0;
  }
  return -1;
}

xs_status xs_fa_config_check(const xs_fa_config *c, xs_error *err) {
  const struct {
    const char *key;
    double v, lo, hi;
  } f[] = {{"seq", c->seq, 1, 1e8},          {"heads_q", c->heads_q, 1, 1e4},
           {"heads_kv", c->heads_kv, 1, 1e4}, {"head_dim", c->head_dim, 1, 1e4},
           {"cp", c->cp, 1, 4096},            {"bytes", c->bytes, 0.125, 16},
           {"block_m", c->block_m, 1, 4096}, {"block_n", c->block_n, 1, 4096},
           {"sms", c->sms, 0, 1e5},          {"batch", c->batch, 1, 1e6}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (!(f[i].v >= f[i].lo && f[i].v <= f[i].hi) ||
        (strcmp(f[i].key, "bytes") && f[i].v != floor(f[i].v)))
      return xs__fail(err, XS_INVALID, "%s must be a number in [%g, %g]%s, got %g",
                      f[i].key, f[i].lo, f[i].hi,
                      strcmp(f[i].key, "bytes") ? " and whole" : "", f[i].v);
  if (c->sms == 1)
    return xs__fail(err, XS_INVALID, "sms must be 0 (the profile's) or at least 2: "
                    "the dedicated schedules need an SM to forward and one to compute");
  if (fmod(c->heads_q, c->heads_kv) != 0)
    return xs__fail(err, XS_INVALID,
                    "heads_kv (%g) must divide heads_q (%g): each KV head "
                    "serves a group of query heads",
                    c->heads_kv, c->heads_q);
  if (!c->dtype[0])
    return xs__fail(err, XS_INVALID, "dtype must name a compute dtype");
  if ((unsigned)c->layout >= XS_FA_LAYOUTS)
    return xs__fail(err, XS_INVALID, "layout %d: expected contiguous, zigzag "
                    "or stripe", c->layout);
  if (strcmp(c->kernel, "fa2") && strcmp(c->kernel, "fa3") && strcmp(c->kernel, "fa4"))
    return xs__fail(err, XS_INVALID, "kernel \"%s\": expected fa2, fa3 or fa4",
                    c->kernel);
  return XS_OK;
}

xs_status xs_fa_config_parse(const char *text, size_t length,
                             const char *filename, xs_fa_config *out,
                             xs_error *err) {
  static const char *const keys[] = {"name",  "preset",   "seq",     "heads_q",
                                     "heads_kv", "head_dim", "cp",   "causal",
                                     "bytes", "block_m",  "block_n", "sms",
                                     "dtype", "batch",   "layout", "kernel",
                                     "backward", NULL};
  xs__jdoc d = {filename, text, length, {0}, err};
  json_t *root;
  xs_status st = xs__jparse(&d, &root);
  if (st)
    return st;
  xs_fa_config c;
  const char *pre = "llama3-8b", *s;
  int have;
  if (!json_is_object(root)) {
    st = xs__jfail(&d, "an attention config is an object, got %s", xs__jtype(root));
    goto done;
  }
  if ((st = xs__jkeys(&d, root, keys)) ||
      (st = xs__jstring(&d, root, "preset", &s, &have)))
    goto done;
  if (have)
    pre = s;
  if (xs_fa_preset(pre, &c) != 0) {
    xs__jpath_key(&d.path, "preset");
    st = xs__jfail(&d, "unknown preset \"%s\" (llama3-8b, llama3-70b, mha)", pre);
    goto done;
  }
  if ((st = xs__jstrcpy(&d, root, "name", c.name, sizeof c.name)) ||
      (st = xs__jstrcpy(&d, root, "dtype", c.dtype, sizeof c.dtype)) ||
      (st = xs__jstrcpy(&d, root, "kernel", c.kernel, sizeof c.kernel)) ||
      (st = xs__jstring(&d, root, "layout", &s, &have)))
    goto done;
  if (have && (c.layout = xs_fa_layout_from_name(s)) < 0) {
    xs__jpath_key(&d.path, "layout");
    st = xs__jfail(&d, "unknown layout \"%s\" (contiguous, zigzag, stripe)", s);
    goto done;
  }
  if ((st = xs__jbool(&d, root, "backward", &c.backward)) ||
      (st = xs__jbool(&d, root, "causal", &c.causal)))
    goto done;
  const xs__jfield nums[] = {{"seq", &c.seq},         {"heads_q", &c.heads_q},
              {"heads_kv", &c.heads_kv}, {"head_dim", &c.head_dim},
              {"cp", &c.cp},           {"bytes", &c.bytes},
              {"block_m", &c.block_m}, {"block_n", &c.block_n},
              {"sms", &c.sms}, {"batch", &c.batch}};
  if ((st = xs__jnumbers(&d, root, nums, sizeof nums / sizeof nums[0])))
    goto done;
  xs_error e2;
  if (xs_fa_config_check(&c, &e2)) {
    st = xs__jfail_checked(&d, root, &e2);
    goto done;
  }
  *out = c;
done:
  json_decref(root);
  return st;
}

/* ---- workload ---- */

typedef struct {
  xs_fa_workload w;
  double kv_tile_B, sm_inject_Bps;
  size_t steps;
} fa_work;

static xs_status build_work(const xs_fa_config *c, const xs_profile *prof,
                            fa_work *fw, xs_error *err) {
  xs_status st = xs_fa_config_check(c, err);
  if (st)
    return st;
  double sms = c->sms > 0 ? c->sms : xs_profile_sms(prof);
  double F = xs_profile_flops_per_s(prof, c->dtype) * xs_profile_efficiency(prof);
  if (!(sms > 0) || !(F > 0))
    return xs__fail(err, XS_INVALID,
                    "profile \"%s\" has no compute section with SMs and FLOP/s "
                    "for dtype \"%s\" (see xstage profiles show)",
                    xs_profile_name(prof), c->dtype);
  const xs_channel *ch = xs_profile_channel(prof, xs_profile_default_channel(prof));
  if (!ch)
    return xs__fail(err, XS_INVALID,
                    "profile \"%s\" has no channel to forward the KV blocks "
                    "on (see xstage profiles show)",
                    xs_profile_name(prof));
  memset(fw, 0, sizeof *fw);
  xs_fa_workload *w = &fw->w;
  /* QK^T and PV: 2 flops a multiply-add, 2 matmuls of S x S x d per head;
   * a load-balanced causal mask does half of every step */
  w->step_flops = 4 * c->seq * c->seq * c->heads_q * c->head_dim *
                  (c->causal ? 0.5 : 1);
  w->step_s = w->step_flops / F;
  w->kv_B = 2 * c->seq * c->heads_kv * c->head_dim * c->bytes;
  w->q_tiles = ceil(c->seq / c->block_m) * c->heads_q;
  w->iterations = ceil(c->seq / c->block_n);
  w->kv_tiles = w->iterations * c->heads_kv;
  w->sms = sms;
  w->waves = ceil(w->q_tiles / sms);
  fw->kv_tile_B = w->kv_B / w->kv_tiles;
  fw->steps = (size_t)c->cp;
  fw->sm_inject_Bps = fmin(ch->worker_inject_Bps, ch->inject_Bps / sms);
  return XS_OK;
}

/* ---- schedules ---- */

static xs_status build(const fa_work *fw, xs_fa_schedule sched,
                       const xs_fa_choice *ch, const char *name,
                       xs__fa_audit *audit, xs_program **out, xs_error *err) {
  const xs_fa_workload *w = &fw->w;
  xs_program *p = xs_program_new(name);
  if (!p)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_status st = XS_OK;
  size_t sms, prev = SIZE_MAX, steps = fw->steps;
  char id[48];
  if (audit)
    memset(audit, 0, sizeof *audit);
  if (sched == XS_FA_DEDICATED) {
    unsigned k = ch && ch->forward_sms ? ch->forward_sms : 1;
    if (k >= w->sms) {
      xs_program_free(p);
      return xs__fail(err, XS_INVALID, "forward_sms (%u) must leave SMs to compute (%g)",
                      k, w->sms);
    }
    size_t *fwd = calloc(k, sizeof *fwd);
    size_t *sent = calloc(k, sizeof *sent), *before = calloc(k, sizeof *before);
    if (!fwd || !sent || !before) {
      free(fwd), free(sent), free(before);
      xs_program_free(p);
      return xs__fail(err, XS_NOMEM, "out of memory");
    }
    if ((st = xs_program_add_worker(p, "sms", &sms, err)))
      goto ded_done;
    for (unsigned j = 0; j < k && !st; j++) {
      snprintf(id, sizeof id, "forward%u", j);
      st = xs_program_add_worker(p, id, &fwd[j], err);
    }
    double step = w->step_s * w->sms / (w->sms - k);
    for (size_t s = 0; s < steps && !st; s++) {
      if (s > 0)
        for (unsigned j = 0; j < k && !st; j++)
          st = xs_program_wait_send(p, sms, sent[j], err);
      if (!st)
        st = xs_program_compute(p, sms, step, err);
      if (audit)
        audit->flops += step * (w->sms - k) / w->sms * (w->step_flops / w->step_s);
      memcpy(before, sent, k * sizeof *sent);
      if (s + 1 < steps)
        for (unsigned j = 0; j < k && !st; j++) {
          /* the forwarders start on block s once all of it is here */
          for (unsigned q = 0; s > 0 && q < k && !st; q++)
            st = xs_program_wait_send(p, fwd[j], before[q], err);
          snprintf(id, sizeof id, "kv%zu.%u", s, j);
          if (!st)
            st = xs_program_send(p, fwd[j], w->kv_B / k, NULL, id, &sent[j], err);
          if (audit) {
            audit->tiles_forwarded += w->kv_tiles / k;
            audit->bytes += w->kv_B / k;
          }
        }
    }
  ded_done:
    free(fwd);
    free(sent);
    free(before);
    if (st)
      goto fail;
    goto finish;
  }
  if ((st = xs_program_add_worker(p, "sms", &sms, err)))
    goto fail;
  unsigned spread = sched == XS_FA_PIGGYBACK && ch ? ch->spread_waves : 0;
  unsigned chunks = ch && ch->chunks ? ch->chunks : 1;
  if (spread > w->waves)
    spread = (unsigned)w->waves;
  double wave_s = w->step_s / w->waves;
  for (size_t s = 0; s < steps; s++) {
    if (s > 0 && (st = xs_program_wait_send(p, sms, prev, err)))
      goto fail;
    if (audit)
      audit->flops += w->step_flops;
    int forward = s + 1 < steps;
    if (!forward || spread == 0) {
      if ((st = xs_program_compute(p, sms, w->step_s, err)))
        goto fail;
      if (forward) {
        snprintf(id, sizeof id, "kv%zu", s);
        if ((st = xs_program_send(p, sms, w->kv_B, NULL, id, &prev, err)))
          goto fail;
        if (sched == XS_FA_SEQUENTIAL && (st = xs_program_fence(p, sms, err)))
          goto fail;
        if (audit) {
          audit->tiles_forwarded += w->kv_tiles;
          audit->bytes += w->kv_B;
        }
      }
      continue;
    }
    /* piggyback: the first `spread` waves of the step forward the tiles
     * they load; KV tile (j, g) goes from a CTA of head group g in wave
     * g mod spread, at iteration j, so each tile leaves exactly once; the
     * iterations of a wave are grouped into `chunks` sends */
    double tiles_per_wave = w->kv_tiles / spread;
    for (unsigned v = 0; v < spread; v++) {
      for (unsigned k = 0; k < chunks; k++) {
        double tiles = tiles_per_wave / chunks;
        if ((st = xs_program_compute(p, sms, wave_s / chunks, err)))
          goto fail;
        int last = v + 1 == spread && k + 1 == chunks;
        if (last)
          snprintf(id, sizeof id, "kv%zu", s);
        if ((st = xs_program_send(p, sms, tiles * fw->kv_tile_B, NULL,
                                  last ? id : NULL, last ? &prev : NULL, err)))
          goto fail;
        if (audit) {
          audit->tiles_forwarded += tiles;
          audit->bytes += tiles * fw->kv_tile_B;
        }
      }
    }
    if (w->waves > spread &&
        (st = xs_program_compute(p, sms, wave_s * (w->waves - spread), err)))
      goto fail;
  }
finish:
  if ((st = xs_program_finish(p, err)))
    goto fail;
  if (audit)
    audit->steps = steps;
  *out = p;
  return XS_OK;
fail:
  xs_program_free(p);
  return st;
}

/* The profile for the dedicated schedule: one worker is one SM. */
static xs_profile *per_sm_profile(const xs_profile *prof, const fa_work *fw) {
  xs_profile *q = xs_profile_new(xs_profile_name(prof), xs_profile_source(prof));
  if (!q)
    return NULL;
  for (size_t c = 0; c < xs_profile_channel_count(prof); c++) {
    xs_channel ch = *xs_profile_channel(prof, c);
    ch.worker_inject_Bps = fmin(ch.worker_inject_Bps, fw->sm_inject_Bps);
    if (xs_profile_add_channel(q, xs_profile_channel_name(prof, c), &ch, NULL)) {
      xs_profile_free(q);
      return NULL;
    }
  }
  return q;
}

xs_status xs__fa_audit_program(const xs_fa_config *c, const xs_profile *prof,
                               xs_fa_schedule sched, const xs_fa_choice *ch,
                               xs__fa_audit *audit, xs_program **out,
                               xs_error *err) {
  fa_work fw;
  xs_status st = build_work(c, prof, &fw, err);
  if (st)
    return st;
  st = build(&fw, sched, ch, c->name, audit, out, err);
  if (!st)
    audit->config_flops = fw.w.step_flops * (double)fw.steps;
  return st;
}

xs_status xs_fa_program(const xs_fa_config *c, const xs_profile *prof,
                        xs_fa_schedule sched, const xs_fa_choice *ch,
                        xs_program **out, xs_profile **profile_out,
                        xs_error *err) {
  static const char *const names[] = {"sequential", "dedicated", "piggyback"};
  *out = NULL;
  if (profile_out)
    *profile_out = NULL;
  if ((unsigned)sched >= XS_FA_SCHEDULES)
    return xs__fail(err, XS_INVALID, "unknown schedule %d", (int)sched);
  fa_work fw;
  xs_status st = build_work(c, prof, &fw, err);
  if (st)
    return st;
  char name[160];
  snprintf(name, sizeof name, "%s S=%g CP=%g%s %s", c->name, c->seq, c->cp,
           c->causal ? " causal" : "", names[sched]);
  if ((st = build(&fw, sched, ch, name, NULL, out, err)))
    return st;
  if (profile_out && !(*profile_out = per_sm_profile(prof, &fw))) {
    xs_program_free(*out);
    *out = NULL;
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  return XS_OK;
}

static xs_status makespans(const xs_program *p, const xs_profile *prof,
                           double out[3], xs_error *err) {
  static const xs_model m[3] = {XS_MODEL_BURSTGAP, XS_MODEL_BLOCKING,
                                XS_MODEL_IDEAL};
  xs_eval_options o = {0, 1, NULL, NULL};
  for (int k = 0; k < 3; k++) {
    xs_result *r;
    xs_status st = xs_evaluate(p, prof, m[k], &o, &r, err);
    if (st)
      return st;
    out[k] = r->makespan_s;
    xs_result_free(r);
  }
  return XS_OK;
}

/* Evaluate one candidate under burstgap, keep it when it beats *best. */
static xs_status try_choice(const fa_work *fw, const xs_profile *prof,
                            xs_fa_schedule sched, xs_fa_choice ch,
                            double *best, xs_fa_choice *keep, xs_error *err) {
  xs_program *p;
  xs_status st = build(fw, sched, &ch, "candidate", NULL, &p, err);
  if (st)
    return st;
  xs_eval_options o = {0, 1, NULL, NULL};
  xs_result *r;
  st = xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &r, err);
  xs_program_free(p);
  if (st)
    return st;
  if (r->makespan_s < *best) {
    *best = r->makespan_s;
    *keep = ch;
  }
  xs_result_free(r);
  return XS_OK;
}

xs_status xs_fa_plan(const xs_fa_config *c, const xs_profile *prof,
                     xs_fa_result *out, xs_error *err) {
  memset(out, 0, sizeof *out);
  fa_work fw;
  xs_status st = build_work(c, prof, &fw, err);
  if (st)
    return st;
  out->work = fw.w;
  xs_profile *per_sm = per_sm_profile(prof, &fw);
  if (!per_sm)
    return xs__fail(err, XS_NOMEM, "out of memory");
  double best = INFINITY;
  static const unsigned ks[] = {1, 2, 4, 8, 16, 32};
  for (size_t i = 0; i < 6 && !st; i++)
    if (ks[i] < fw.w.sms) {
      xs_fa_choice ch = {ks[i], 0, 1};
      st = try_choice(&fw, per_sm, XS_FA_DEDICATED, ch, &best, &out->dedicated, err);
      out->searched++;
    }
  /* piggyback: spread 0 (forward at the step's end, the sequential timing
   * without its fence) is a candidate, so piggyback never loses to it */
  best = INFINITY;
  static const unsigned spreads[] = {0, 1, 2, 4, 8, 16};
  static const unsigned chunk[] = {1, 4, 16};
  for (size_t i = 0; i < 6 && !st; i++)
    for (size_t j = 0; j < 3 && !st; j++) {
      if ((spreads[i] == 0 && j > 0) || spreads[i] > fw.w.waves)
        continue;
      xs_fa_choice ch = {0, spreads[i], chunk[j]};
      st = try_choice(&fw, prof, XS_FA_PIGGYBACK, ch, &best, &out->piggyback, err);
      out->searched++;
    }
  for (int s = 0; s < XS_FA_SCHEDULES && !st; s++) {
    xs_program *p;
    const xs_fa_choice *ch = s == XS_FA_DEDICATED ? &out->dedicated
                             : s == XS_FA_PIGGYBACK ? &out->piggyback
                                                    : NULL;
    if (!(st = build(&fw, (xs_fa_schedule)s, ch, c->name, NULL, &p, err))) {
      st = makespans(p, s == XS_FA_DEDICATED ? per_sm : prof, out->time_s[s], err);
      xs_program_free(p);
    }
  }
  xs_profile_free(per_sm);
  return st;
}
