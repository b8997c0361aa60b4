/*
 * validate_fa.c: what `xstage validate flashattn` prints beyond the
 * medians every validation prints: the rows (each model's prediction with
 * --model all, and the ring with communication free), and where
 * communication shows: the rings measured more than 10% above their ideal
 * (P times the local arm), their errors, the error on that overhead, and
 * the same if communication were free (docs/validate.md "flashattn").
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

void cli_validate_fa_rows(const xs_validate_set *set, const char *data, int model,
                          const cli_sources *sources) {
  printf("Ring attention validation: %zu rows of %s, each predicted by the attention\n"
         "planner on its gpu's built-in profile under %s; free: the same ring with\n"
         "communication free; ideal/meas.: the measured ring over P x its measured local\n"
         "arm, and predicted over predicted\n\n",
         set->nrows, cli_name_text(data), model < 0 ? "every model" : xs_model_name((xs_model)model));
  cli_sources_print(sources);
  printf("  %-16s %-11s %2s %6s %5s %-10s %-7s %-16s %9s", "source", "gpu", "cp", "seq",
         "heads", "layout", "pass", "arm", "measured");
  if (model < 0)
    for (int m = 0; m < XS_MODEL_COUNT; m++)
      printf(" %9s %6s", xs_model_name((xs_model)m), "error");
  else
    printf(" %9s %6s", "predicted", "error");
  printf(" %9s %6s %13s  %s\n", "free", "error", "ideal/meas.", "bound");
  for (size_t i = 0; i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    char hd[32], src[96], ov[32] = "";
    snprintf(hd, sizeof hd, "%g/%g", r->fa.heads_q, r->fa.heads_kv);
    size_t l = xs_validate_fa_local(set, i);
    if (l != SIZE_MAX) {
      const xs_validate_row *lr = &set->rows[l];
      snprintf(ov, sizeof ov, "%.2f %.2f", r->measured_us / (r->fa.cp * lr->measured_us),
               r->predicted_us / (r->fa.cp * lr->predicted_us));
    }
    printf("  %-16s %-11.11s %2g %6g %5s %-10s %-7s %-16s %9.0f",
           cli_source_label(sources, r->source, src, sizeof src), r->gpu, r->fa.cp,
           r->tokens, hd, r->layout,
           r->pass, r->arm, r->measured_us);
    if (model < 0)
      for (int m = 0; m < XS_MODEL_COUNT; m++)
        printf(" %9.0f %+5.0f%%", r->model_us[m], 100 * (r->model_us[m] / r->measured_us - 1));
    else
      printf(" %9.0f %+5.1f%%", r->predicted_us, 100 * r->error);
    double f = r->fa_breakdown.free_s * 1e6;
    printf(" %9.0f %+5.0f%% %13s  %s\n", f, 100 * (f / r->measured_us - 1), ov,
           r->fa_breakdown.bound ? r->fa_breakdown.bound : "");
  }
  printf("  (times in us; a ring with a measured local arm shows its ideal/meas.)\n");
}

int cli_validate_fa_sections(const xs_validate_set *set, const xs_validate_group *arms,
                             size_t narms) {
  xs_validate_fa_stats s;
  xs_error err;
  if (xs_validate_fa_summary(set, 0.10, &s, &err))
    return cli_error("validate", &err);
  printf("\n  every model, median |error| over all %zu rows:", set->nrows);
  for (int m = 0; m < XS_MODEL_COUNT; m++)
    printf(" %s %.1f%%", xs_model_name((xs_model)m),
           100 * xs_validate_median_model(set, (xs_model)m, NULL, NULL, NULL, NULL));
  /* the signed median per arm and sequence band: where the model leans */
  printf("\n\n  signed median error per arm and sequence band (tokens per rank; rows):\n");
  cli_validate_bias_table(set, arms, narms, XS_VALIDATE_FA_BANDS, xs_validate_fa_band_bias);
  printf("\n  where communication shows: of %zu rings with a measured local arm, %zu\n"
         "  measured more than 10%% above their ideal (P x the local arm), from %zu\n"
         "  source%s:\n", s.rings, s.shows, s.shows_sources, s.shows_sources == 1 ? "" : "s");
  if (s.shows)
    printf("    median |error| %.1f%%, largest %.1f%%; the ring over its ideal (the\n"
           "    overhead itself), predicted against measured: median |error| %.1f%%\n",
           100 * s.median_shows, 100 * s.max_shows, 100 * s.median_ratio_shows);
  printf("  if communication were free (the same rings, nothing forwarded):\n"
         "    median |error| %.1f%% over all rows (%.1f%% as predicted)", 100 * s.free_median_all,
         100 * s.median_all);
  if (s.shows)
    printf(", %.1f%% on those rows (%.1f%%),\n    %.1f%% on the overhead (%.1f%%)",
           100 * s.free_median_shows, 100 * s.median_shows, 100 * s.free_median_ratio_shows,
           100 * s.median_ratio_shows);
  printf("\n");
  /* does the data test the communication? only if leaving it out scores
   * worse by more than the spread the sources themselves show */
  double gap = s.shows ? s.free_median_shows - s.median_shows : NAN;
  if (!s.shows)
    printf("  no ring shows communication by measurement: the data does not test it\n");
  else if (!(gap > 0.02))
    printf("  with communication free the rows score the same (within 2 points): the\n"
           "  data does not test the communication yet\n");
  else
    printf("  leaving communication out scores %.1f points worse on those rows: the\n"
           "  data tests it\n", 100 * gap);
  return 0;
}
