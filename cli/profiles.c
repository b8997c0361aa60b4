/*
 * profiles.c: `xstage profiles` lists the built-in profiles with their
 * channels and where their numbers come from; `xstage profiles show NAME`
 * prints one (built-in or a file) as JSON.
 */
#include "common.h"

#include <stdlib.h>
#include <string.h>

static void help(FILE *f) {
  fprintf(f,
          "usage: xstage profiles [list]\n"
          "       xstage profiles show NAME|FILE\n"
          "\n"
          "Built-in profiles are leads taken from published figures (each says\n"
          "its source); a profile measured by a probe replaces them. Pass a\n"
          "profile's name or a JSON file to --profile of other commands.\n");
}

int cmd_profiles(int argc, char **argv) {
  for (int i = 1; i < argc; i++) /* also after list or show */
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      help(stdout);
      return EXIT_OK;
    }
  if (argc < 2 || strcmp(argv[1], "list") == 0) {
    if (argc > 2)
      return cli_usage_error("profiles", "list takes no arguments");
    printf("%-18s %-8s %12s %12s %12s %10s\n", "profile", "channel", "inject",
           "drain", "capacity", "latency");
    for (size_t i = 0; i < xs_builtin_profile_count(); i++) {
      xs_profile *p;
      xs_error err;
      if (xs_profile_load(xs_builtin_profile_name(i), &p, &err))
        return cli_error("profiles", &err);
      for (size_t c = 0; c < xs_profile_channel_count(p); c++) {
        const xs_channel *ch = xs_profile_channel(p, c);
        char a[32], b[32], d[32], e[32];
        printf("%-18s %-8s %12s %12s %12s %10s\n", c ? "" : xs_profile_name(p),
               xs_profile_channel_name(p, c),
               xs_format_rate(ch->inject_Bps, a, sizeof a),
               xs_format_rate(ch->drain_Bps, b, sizeof b),
               xs_format_size(ch->capacity_B, d, sizeof d),
               xs_format_time(ch->latency_s, e, sizeof e));
      }
      xs_profile_free(p);
    }
    printf("\nAll built-in numbers are leads from published figures, not xstage\n"
           "measurements; capacities and injection rates are unmeasured guesses.\n"
           "`xstage profiles show NAME` prints one with its sources.\n");
    return EXIT_OK;
  }
  if (strcmp(argv[1], "show") == 0) {
    if (argc != 3)
      return cli_usage_error("profiles", "show takes one profile name or file");
    xs_profile *p;
    xs_error err;
    if (xs_profile_load(argv[2], &p, &err))
      return cli_error("profiles", &err);
    char *text = xs_profile_to_json(p);
    xs_profile_free(p);
    if (!text) {
      fprintf(stderr, "xstage profiles: out of memory\n");
      return EXIT_MACHINE;
    }
    printf("%s\n", text);
    free(text);
    return EXIT_OK;
  }
  return cli_usage_error("profiles", "unknown subcommand \"%s\" (list, show)",
                         argv[1]);
}
