/*
 * test_calls.c: the calls a MegaMoE plan names (xs_moe_call_of,
 * docs/plan-megamoe.md "The calls"). Every argument and every given name
 * a call prints is a parameter of that function in the source the call
 * cites, as this file transcribes those signatures on its own (so a name
 * the library made up, or took from another version, fails here); and
 * every option of a plan, fed back to `validate megamoe` as the row its
 * call names (arm and knobs column), is predicted in the same time the
 * plan gave it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "xstage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The signatures: (label, function, its parameters). Transcribed from:
 * - DeepGEMM PR 440: tests/test_mega_moe_sm90_fused_ring.py at c3586bb
 *   (the calls it makes) and csrc/apis/sm90_fused_mega.hpp at 187288b;
 * - DeepGEMM PR 383: AichenF/DeepGEMM deep_gemm/mega/__init__.py at
 *   bc4f33a;
 * - sgl-project/DeepGEMM PR 36 (and PR 69's entry points):
 *   sgl_deep_gemm/__init__.py at 3f9268b;
 * - DeepGEMM PR 316 at 54e2261: deep_gemm/mega/__init__.py;
 * - DeepGEMM PR 377: AichenF/DeepGEMM deep_gemm/mega/__init__.py at 559d79f;
 * - DeepGEMM's grouped GEMMs: csrc/apis/gemm.hpp at 54e2261;
 * - DeepEP V2: deep_ep/buffers/elastic.py at dd758ca; V1 (and UCCL-EP's
 *   wrapper of its API): deep_ep/buffer.py at 567632d; HybridEP:
 *   deep_ep/hybrid_ep_buffer.py at 94a9f8f;
 * - pplx-kernels: wufann/pplx-kernels src/pplx_kernels/all_to_all.py at
 *   081394b. */
#define GEMM_CONTIG                                                          \
  " a b d grouped_layout recipe recipe_a recipe_b compiled_dims "            \
  "disable_ue8m0_cast use_psum_layout ensure_zero_padding "                  \
  "expected_m_for_psum_layout "
#define GEMM_MASKED                                                          \
  " a b d masked_m expected_m recipe recipe_a recipe_b compiled_dims "       \
  "disable_ue8m0_cast "
#define V1_DISPATCH                                                          \
  " x handle num_tokens_per_rank num_tokens_per_rdma_rank is_token_in_rank " \
  "num_tokens_per_expert topk_idx topk_weights expert_alignment "            \
  "num_worst_tokens config previous_event async_finish "                     \
  "allocate_on_comm_stream "
#define V1_COMBINE                                                           \
  " x handle topk_weights bias config previous_event async_finish "          \
  "allocate_on_comm_stream "
#define V1_LAYOUT                                                            \
  " topk_idx num_experts previous_event async_finish "                       \
  "allocate_on_comm_stream "
#define V1_LL_DISPATCH                                                       \
  " x topk_idx num_max_dispatch_tokens_per_rank num_experts "                \
  "cumulative_local_expert_recv_stats dispatch_wait_recv_cost_stats "        \
  "use_fp8 round_scale use_ue8m0 async_finish return_recv_hook "
#define V1_LL_COMBINE                                                        \
  " x topk_idx topk_weights handle use_logfmt zero_copy async_finish "       \
  "return_recv_hook out combine_wait_recv_cost_stats "
#define SM90_FP8_MEGA_MOE                                                    \
  " y l1_weights l2_weights sym_buffer cumulative_local_expert_recv_stats "  \
  "recipe activation activation_clamp fast_math "
#define PPLX_NEW                                                             \
  " max_num_tokens num_experts experts_per_token rank world_size dp_size "   \
  "hidden_dim hidden_dim_bytes hidden_dim_scale_bytes "

static const struct {
  const char *label, *function, *params;
} sigs[] = {
    {"DeepGEMM PR 440", "deep_gemm.get_symm_buffer_for_sm90_mega_moe",
     " group num_experts num_max_tokens_per_rank num_topk hidden "
     "intermediate_hidden fused num_experts_per_wave l2_act_sf_gran_k "},
    {"DeepGEMM PR 440", "deep_gemm.fp8_mega_moe",
     " y l1_weights l2_weights sym_buffer recipe activation activation_clamp "
     "fast_math num_tokens_bound "},
    {"DeepGEMM PR 383", "deep_gemm.get_symm_buffer_for_sm90_mega_moe",
     " group num_experts num_max_tokens_per_rank num_topk hidden "
     "intermediate_hidden use_fp8_dispatch activation "},
    {"DeepGEMM PR 383", "deep_gemm.fp8_mega_moe", SM90_FP8_MEGA_MOE},
    {"sgl DeepGEMM PR 36", "deep_gemm.get_symm_buffer_for_mega_moe",
     " group num_experts num_max_tokens_per_rank num_topk hidden "
     "intermediate_hidden use_fp8_dispatch activation "},
    {"sgl DeepGEMM PR 36", "deep_gemm.fp8_mega_moe", SM90_FP8_MEGA_MOE},
    {"sgl DeepGEMM PR 69", "deep_gemm.get_symm_buffer_for_mega_moe",
     " group num_experts num_max_tokens_per_rank num_topk hidden "
     "intermediate_hidden use_fp8_dispatch activation "},
    {"sgl DeepGEMM PR 69", "deep_gemm.fp8_mega_moe", SM90_FP8_MEGA_MOE},
    {"DeepGEMM PR 316", "deep_gemm.get_symm_buffer_for_mega_moe",
     " group num_experts num_max_tokens_per_rank num_topk hidden "
     "intermediate_hidden use_fp8_dispatch mma_type activation "},
    {"DeepGEMM PR 316", "deep_gemm.fp8_fp4_mega_moe",
     " y l1_weights l2_weights sym_buffer cumulative_local_expert_recv_stats "
     "recipe activation activation_clamp fast_math "},
    {"DeepGEMM PR 377", "deep_gemm.get_symm_buffer_for_mega_moe",
     " group num_experts num_max_tokens_per_rank num_topk hidden "
     "intermediate_hidden num_shared_experts use_fp8_dispatch mma_type "
     "activation "},
    {"DeepGEMM PR 377", "deep_gemm.fp8_fp4_mega_moe",
     " y l1_weights l2_weights sym_buffer shared_l1_weights shared_l2_weights "
     "cumulative_local_expert_recv_stats recipe activation activation_clamp "
     "fast_math "},
    {NULL, "deep_gemm.m_grouped_fp8_gemm_nt_contiguous", GEMM_CONTIG},
    {NULL, "deep_gemm.m_grouped_fp8_fp4_gemm_nt_contiguous", GEMM_CONTIG},
    {NULL, "deep_gemm.m_grouped_fp8_gemm_nt_masked", GEMM_MASKED},
    {NULL, "deep_gemm.m_grouped_fp8_fp4_gemm_nt_masked", GEMM_MASKED},
    {"DeepEP V2 + DeepGEMM", "deep_ep.ElasticBuffer",
     " group num_bytes num_cpu_bytes num_max_tokens_per_rank hidden num_topk "
     "use_fp8_dispatch deterministic allow_hybrid_mode "
     "allow_multiple_reduction prefer_overlap_with_compute sl_idx "
     "num_allocated_qps num_cpu_timeout_secs num_gpu_timeout_secs "
     "explicitly_destroy "},
    {"DeepEP V2 + DeepGEMM", "buffer.dispatch",
     " x topk_idx topk_weights cumulative_local_expert_recv_stats num_experts "
     "num_max_tokens_per_rank expert_alignment num_sms num_qps previous_event "
     "previous_event_before_epilogue async_with_compute_stream "
     "allocate_on_comm_stream handle do_handle_copy do_cpu_sync do_expand "
     "do_zero_padding use_tma_aligned_col_major_sf "},
    {"DeepEP V2 + DeepGEMM", "buffer.combine",
     " x handle topk_weights bias num_sms num_qps previous_event "
     "previous_event_before_epilogue async_with_compute_stream "
     "allocate_on_comm_stream "},
    {"DeepEP V1 + DeepGEMM", "deep_ep.Buffer.set_num_sms", " new_num_sms "},
    {"DeepEP V1 + DeepGEMM", "buffer.get_dispatch_layout", V1_LAYOUT},
    {"DeepEP V1 + DeepGEMM", "buffer.dispatch", V1_DISPATCH},
    {"DeepEP V1 + DeepGEMM", "buffer.combine", V1_COMBINE},
    {"DeepEP V1 + DeepGEMM", "buffer.low_latency_dispatch", V1_LL_DISPATCH},
    {"DeepEP V1 + DeepGEMM", "buffer.low_latency_combine", V1_LL_COMBINE},
    {"UCCL-EP + DeepGEMM", "buffer.get_dispatch_layout", V1_LAYOUT},
    {"UCCL-EP + DeepGEMM", "buffer.dispatch", V1_DISPATCH},
    {"UCCL-EP + DeepGEMM", "buffer.combine", V1_COMBINE},
    {"UCCL-EP + DeepGEMM", "buffer.low_latency_dispatch", V1_LL_DISPATCH},
    {"UCCL-EP + DeepGEMM", "buffer.low_latency_combine", V1_LL_COMBINE},
    {"HybridEP + DeepGEMM", "deep_ep.HybridEPBuffer",
     " group hidden_dim max_num_of_tokens_per_rank num_local_experts use_fp8 "
     "num_sms_dispatch_api num_sms_combine_api num_sms_preprocessing_api "
     "num_blocks_permute num_blocks_unpermute load_cached_kernels "
     "use_shared_buffer enable_custom_allgather "
     "num_of_hybrid_ep_ranks_per_nvlink_domain use_mnnvl "},
    {"HybridEP + DeepGEMM", "buffer.dispatch",
     " hidden scaling_factor topk_idx topk_weights num_of_experts probs "
     "routing_map num_dispatched_tokens_tensor num_dispatched_tokens handle "},
    {"HybridEP + DeepGEMM", "buffer.combine", " hidden probs handle "},
    {"pplx-kernels + DeepGEMM", "pplx_kernels.AllToAll.intranode",
     PPLX_NEW "group_name "},
    {"pplx-kernels + DeepGEMM", "pplx_kernels.AllToAll.internode", PPLX_NEW},
    {"pplx-kernels + DeepGEMM", "ata.dispatch",
     " out_expert_num_tokens out_expert_x out_expert_x_scale dp_x dp_x_scale "
     "indices bound_m do_send do_recv "},
    {"pplx-kernels + DeepGEMM", "ata.combine",
     " out_tokens indices weights expert_y bound_m do_send do_recv "},
};

static const char *params_of(const char *label, const char *function) {
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    if ((!sigs[i].label || !strcmp(sigs[i].label, label)) &&
        !strcmp(sigs[i].function, function))
      return sigs[i].params;
  return NULL;
}

/* name (a word) is one of params (" a b c ") */
static int has_param(const char *params, const char *name, size_t len) {
  char w[96];
  if (len + 3 > sizeof w)
    return 0;
  snprintf(w, sizeof w, " %.*s ", (int)len, name);
  return strstr(params, w) != NULL;
}

static int check_call(const xs_moe_call *k, const char *where) {
  int bad = 0;
  assert_non_null(k->label);
  assert_true(k->nsteps > 0);
  for (size_t i = 0; i < k->nsteps; i++) {
    const xs_moe_call_step *s = &k->steps[i];
    const char *p = params_of(k->label, s->function);
    if (!p) {
      fprintf(stderr, "%s: %s: no signature of %s here\n", where, k->label, s->function);
      bad = 1;
      continue;
    }
    for (size_t j = 0; j < s->nargs; j++)
      if (!has_param(p, s->args[j].name, strlen(s->args[j].name))) {
        fprintf(stderr, "%s: %s %s has no parameter %s\n", where, k->label,
                s->function, s->args[j].name);
        bad = 1;
      }
    /* the given names: "y, l1_weights, ..." */
    for (const char *g = s->tensors; g && *g;) {
      size_t n = strcspn(g, ",");
      while (n && g[n - 1] == ' ')
        n--;
      if (n && !has_param(p, g, n)) {
        fprintf(stderr, "%s: %s %s has no parameter %.*s\n", where, k->label,
                s->function, (int)n, g);
        bad = 1;
      }
      g += strcspn(g, ",");
      while (*g == ',' || *g == ' ')
        g++;
    }
  }
  /* no sentinel anywhere: every argument a sane whole number */
  for (size_t i = 0; i < k->nsteps; i++)
    for (size_t j = 0; j < k->steps[i].nargs; j++)
      for (unsigned v = 0; v < k->steps[i].args[j].count; v++)
        if (k->steps[i].args[j].value[v] < 0 || k->steps[i].args[j].value[v] >= 16777215) {
          fprintf(stderr, "%s: %s = %lld\n", where, k->steps[i].args[j].name,
                  k->steps[i].args[j].value[v]);
          bad = 1;
        }
  if (k->proposal && !k->change[0]) {
    fprintf(stderr, "%s: a proposal without its change\n", where);
    bad = 1;
  }
  return bad;
}

static void test_arguments_exist(void **st) {
  (void)st;
  const char *presets[] = {"deepseek-v3", "deepseek-v4-flash", "qwen3.5", "mixtral-8x7b"};
  const char *profiles[] = {"h200-nvlink", "h800-nvlink", "b200-nvlink", "h20-nvlink"};
  const double tokens[] = {1, 64, 256, 1000, 4096};
  const char *libs[][2] = {{"", ""},
                           {"deepep-v1", "normal"},
                           {"deepep-v1", "low-latency"},
                           {"deepep-hybrid", "normal"},
                           {"pplx-kernels", "low-latency"},
                           {"uccl-ep", "normal"},
                           {"uccl-ep", "low-latency"}};
  int bad = 0;
  size_t calls = 0, proposals = 0;
  for (size_t q = 0; q < 4; q++) {
    xs_profile *prof;
    xs_error e;
    assert_int_equal(xs_profile_load(profiles[q], &prof, &e), XS_OK);
    for (size_t p = 0; p < 4; p++)
      for (size_t t = 0; t < 5; t++) {
        xs_moe_config c;
        assert_int_equal(xs_moe_preset(presets[p], &c), 0);
        c.tokens = tokens[t];
        c.sm_groups = 4; /* fewer classes: the options only name calls here */
        xs_moe_option o[XS_MOE_MAX_OPTIONS];
        size_t n;
        if (xs_moe_options(&c, prof, 0, o, &n, NULL, &e)) {
          fprintf(stderr, "%s %s %g: %s\n", profiles[q], presets[p], c.tokens, e.message);
          fail();
        }
        for (size_t i = 0; i < n; i++) {
          xs_moe_call k;
          char where[160];
          snprintf(where, sizeof where, "%s %s T=%g %s rule %u", profiles[q],
                   presets[p], c.tokens, xs_moe_schedule_name(o[i].schedule),
                   o[i].rule);
          assert_int_equal(xs_moe_call_of(&c, prof, o[i].schedule, &o[i].knobs, &k, &e),
                           XS_OK);
          bad |= check_call(&k, where);
          calls++;
          proposals += (size_t)k.proposal;
        }
        /* the sequential arm with every all-to-all library */
        for (size_t l = 1; l < sizeof libs / sizeof libs[0]; l++) {
          xs_moe_config d = c;
          snprintf(d.ep_library, sizeof d.ep_library, "%s", libs[l][0]);
          snprintf(d.ep_kernel, sizeof d.ep_kernel, "%s", libs[l][1]);
          xs_moe_pattern kn = {0};
          kn.block_m = 128, kn.block_n = 192;
          xs_moe_call k;
          char where[160];
          snprintf(where, sizeof where, "%s %s T=%g sequential %s %s", profiles[q],
                   presets[p], c.tokens, libs[l][0], libs[l][1]);
          assert_int_equal(xs_moe_call_of(&d, prof, XS_MOE_SEQUENTIAL, &kn, &k, &e), XS_OK);
          bad |= check_call(&k, where);
          assert_true(k.arm[0] == '\0'); /* no validate row runs another library */
        }
      }
    xs_profile_free(prof);
  }
  fprintf(stderr, "%zu calls checked, %zu of them proposals\n", calls, proposals);
  assert_true(calls > 100 && proposals > 0 && proposals < calls);
  assert_false(bad);
}

/* The three plans the calls are first for: DeepSeek-V3 at 64 and 4096
 * tokens per rank on H200, at 128 on B200; and every option of each, fed
 * back to validate megamoe as the row its call names, predicts the time
 * the plan gave it. */
static void test_validate_round_trip(void **st) {
  (void)st;
  const struct {
    const char *profile;
    double tokens, capacity;
  } plans[] = {{"h200-nvlink", 64, 0},   {"h200-nvlink", 4096, 0},
               {"b200-nvlink", 128, 0},  {"h800-nvlink", 2048, 8192},
               {"h100-nvlink", 512, 0}};
  const char *hdr = "source,gpu,ep,hidden,intermediate,experts,topk,shared_experts,"
                    "act_dtype,weight_dtype,tokens,arm,time_us,knobs\n";
  for (size_t q = 0; q < sizeof plans / sizeof plans[0]; q++) {
    xs_profile *prof;
    xs_error e;
    assert_int_equal(xs_profile_load(plans[q].profile, &prof, &e), XS_OK);
    xs_moe_config c;
    assert_int_equal(xs_moe_preset("deepseek-v3", &c), 0);
    c.tokens = plans[q].tokens;
    c.capacity = plans[q].capacity;
    xs_moe_option o[XS_MOE_MAX_OPTIONS];
    size_t n;
    assert_int_equal(xs_moe_options(&c, prof, 0, o, &n, NULL, &e), XS_OK);
    /* the recommended option has a call with a kernel, its arguments and
     * no sentinel */
    xs_moe_pick pick;
    assert_int_equal(xs_moe_recommend(&c, prof, 0.01, 0, &pick, &e), XS_OK);
    xs_moe_call rec;
    assert_int_equal(xs_moe_call_of(&c, prof, pick.chosen.schedule, &pick.chosen.knobs,
                                    &rec, &e), XS_OK);
    assert_true(rec.nsteps >= 2 && rec.steps[0].nargs > 0 && rec.version && rec.source);
    assert_false(check_call(&rec, "recommended"));
    size_t cap = 1 << 16, len = 0;
    char *csv = malloc(cap);
    assert_non_null(csv);
    len += (size_t)snprintf(csv, cap, "%s", hdr);
    size_t rows = 0, which[XS_MOE_MAX_OPTIONS];
    for (size_t i = 0; i < n; i++) {
      xs_moe_call k;
      assert_int_equal(xs_moe_call_of(&c, prof, o[i].schedule, &o[i].knobs, &k, &e), XS_OK);
      assert_true(k.arm[0] != '\0');
      int w = snprintf(csv + len, cap - len, "option %zu,%s,%g,%g,%g,%g,%g,0,fp8,fp8,%g,%s,1,"
                       "\"%s\"\n", i, plans[q].profile, c.ep, c.hidden, c.intermediate,
                       c.experts, c.topk, c.tokens, k.arm, k.knobs);
      assert_true(w > 0 && (size_t)w < cap - len);
      len += (size_t)w;
      which[rows++] = i;
    }
    xs_validate_set set;
    if (xs_validate_megamoe(csv, len, "calls.csv", &set, NULL, NULL, &e)) {
      fprintf(stderr, "%s\n%s", e.message, csv);
      fail();
    }
    assert_int_equal(set.nrows, rows);
    int bad = 0;
    for (size_t r = 0; r < rows; r++) {
      const xs_moe_option *x = &o[which[r]];
      double want = x->time_s * 1e6, got = set.rows[r].predicted_us;
      if (!(fabs(got / want - 1) <= 1e-9)) {
        fprintf(stderr, "%s T=%g: %s %s: the plan %.9g us, its validate row (arm %s) "
                        "%.9g us\n", plans[q].profile, c.tokens,
                xs_moe_schedule_name(x->schedule), xs_moe_rule_name(x->schedule, x->rule),
                want, set.rows[r].arm, got);
        bad = 1;
      }
    }
    xs_validate_free(&set);
    free(csv);
    xs_profile_free(prof);
    assert_false(bad);
  }
}

/* No output carries the lag that stands for all L1 first (16777215):
 * plan, table, header and sweep of DeepSeek-V3 at 64 and 4096 tokens,
 * where l1-then-l2 and the searched all-l1-first rule are among the
 * options. */
static void test_no_sentinel(void **st) {
  (void)st;
  xs_profile *prof;
  xs_error e;
  assert_int_equal(xs_profile_load("h200-nvlink", &prof, &e), XS_OK);
  xs_moe_config c[2];
  for (int i = 0; i < 2; i++) {
    assert_int_equal(xs_moe_preset("deepseek-v3", &c[i]), 0);
    c[i].tokens = i ? 4096 : 64;
  }
  char *texts[5] = {0};
  xs_moe_result r[2];
  assert_int_equal(xs_moe_plan_json(&c[1], prof, 0.01, 0, 0, &r[1], &texts[0], &e), XS_OK);
  assert_int_equal(xs_moe_plan(&c[0], prof, &r[0], &e), XS_OK);
  assert_true(r[0].knobs[XS_MOE_L1_THEN_L2].lag >= XS_MOE_LAG_ALL); /* what is hidden */
  assert_int_equal(xs_moe_sweep_json(prof, c, 2, r, &texts[1], &e), XS_OK);
  double grid[] = {64, 4096};
  xs_moe_table_options to = {grid, 2, 0, 0, 0.01, 0};
  xs_moe_table *t;
  assert_int_equal(xs_moe_plan_table(&c[0], prof, &to, &t, &e), XS_OK);
  assert_int_equal(xs_moe_table_json(t, &c[0], prof, 0.01, &texts[2], &e), XS_OK);
  texts[3] = xs_moe_table_header(t, &c[0], prof, "moe", NULL);
  assert_non_null(texts[3]);
  for (int i = 0; i < 4; i++) {
    if (strstr(texts[i], "16777215") || strstr(texts[i], "0xffffff")) {
      fprintf(stderr, "output %d shows the sentinel\n", i);
      fail();
    }
    /* and the one-wave order is named where it is */
    assert_non_null(strstr(texts[i], i == 3 ? "l1-then-l2" : "all-l1-first"));
  }
  for (int i = 0; i < 3; i++)
    xs_free(texts[i]);
  free(texts[3]);
  xs_moe_table_free(t);
  xs_profile_free(prof);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_arguments_exist),
                                     cmocka_unit_test(test_validate_round_trip),
                                     cmocka_unit_test(test_no_sentinel)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
