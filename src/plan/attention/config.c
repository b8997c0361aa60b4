/*
 * config.c: a ring attention config: the presets, the JSON config and its
 * checks, and the names of layouts and ways of moving KV
 * (docs/plan-flashattn.md "Config").
 */
#include "formats/jsonutil.h"
#include "plan/attention/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const layout_names[XS_FA_LAYOUTS] = {"contiguous", "zigzag",
                                                        "stripe"};
static const char *const path_names[XS_FA_PATHS] = {
    "local", "sequential", "dedicated-stream", "dedicated-sms", "piggyback"};
static const char *const timing_names[XS_FA_TIMINGS] = {"pipelined", "synced"};

const char *xs_fa_timing_name(xs_fa_timing t) {
  return (unsigned)t < XS_FA_TIMINGS ? timing_names[t] : NULL;
}
int xs_fa_timing_from_name(const char *n) {
  return xs__name_index(timing_names, XS_FA_TIMINGS, n);
}

const char *xs_fa_layout_name(xs_fa_layout l) {
  return (unsigned)l < XS_FA_LAYOUTS ? layout_names[l] : NULL;
}
int xs_fa_layout_from_name(const char *n) {
  return xs__name_index(layout_names, XS_FA_LAYOUTS, n);
}
const char *xs_fa_path_name(xs_fa_path p) {
  return (unsigned)p < XS_FA_PATHS ? path_names[p] : NULL;
}
int xs_fa_path_from_name(const char *n) {
  return xs__name_index(path_names, XS_FA_PATHS, n);
}

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
    c->block_m = 0; /* the kernel's own tiles */
    c->block_n = 0;
    snprintf(c->dtype, sizeof c->dtype, "bf16");
    c->batch = 1;
    c->layout = XS_FA_ZIGZAG;
    c->backward = 0;
    c->kernel[0] = '\0'; /* the best the GPU runs (xs_fa_kernel_resolve) */
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
           {"block_m", c->block_m, 0, 4096}, {"block_n", c->block_n, 0, 4096},
           {"sms", c->sms, 0, 1e5},          {"batch", c->batch, 1, 1e6}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (!(f[i].v >= f[i].lo && f[i].v <= f[i].hi) ||
        (strcmp(f[i].key, "bytes") && f[i].v != floor(f[i].v)))
      return xs__fail(err, XS_INVALID, "%s must be a number in [%g, %g]%s, got %g",
                      f[i].key, f[i].lo, f[i].hi,
                      strcmp(f[i].key, "bytes") ? " and whole" : "", f[i].v);
  if (c->sms == 1)
    return xs__fail(err, XS_INVALID, "sms must be 0 (the profile's) or at least 2: "
                    "dedicated-sms needs an SM to forward and one to compute");
  if (fmod(c->heads_q, c->heads_kv) != 0)
    return xs__fail(err, XS_INVALID,
                    "heads_kv (%g) must divide heads_q (%g): each KV head "
                    "serves a group of query heads",
                    c->heads_kv, c->heads_q);
  /* the dtypes the attention kernels run (one the kernels do not was
   * taken and never used) */
  if (strcmp(c->dtype, "bf16") && strcmp(c->dtype, "fp16") && strcmp(c->dtype, "fp8"))
    return xs__fail(err, XS_INVALID, "dtype must be bf16, fp16 or fp8 (what the attention "
                    "kernels run), got \"%s\"", c->dtype);
  if ((unsigned)c->layout >= XS_FA_LAYOUTS)
    return xs__fail(err, XS_INVALID, "layout %d: expected contiguous, zigzag "
                    "or stripe", c->layout);
  if ((unsigned)c->timing >= XS_FA_TIMINGS)
    return xs__fail(err, XS_INVALID, "timing %d: expected pipelined or synced", c->timing);
  if (c->kernel[0] && strcmp(c->kernel, "fa2") && strcmp(c->kernel, "fa3") &&
      strcmp(c->kernel, "fa4"))
    return xs__fail(err, XS_INVALID, "kernel \"%s\": expected fa2, fa3 or fa4 (or "
                    "none: the best the GPU runs)", c->kernel);
  return XS_OK;
}

xs_status xs_fa_config_parse(const char *text, size_t length,
                             const char *filename, xs_fa_config *out,
                             xs_error *err) {
  static const char *const keys[] = {"name",  "preset",   "seq",     "heads_q",
                                     "heads_kv", "head_dim", "cp",   "causal",
                                     "bytes", "block_m",  "block_n", "sms",
                                     "dtype", "batch",   "layout", "kernel",
                                     "backward", "timing", NULL};
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
  if ((st = xs__jstring(&d, root, "timing", &s, &have)))
    goto done;
  if (have && (c.timing = xs_fa_timing_from_name(s)) < 0) {
    xs__jpath_key(&d.path, "timing");
    st = xs__jfail(&d, "unknown timing \"%s\" (pipelined, synced)", s);
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

