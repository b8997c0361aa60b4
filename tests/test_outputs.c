/*
 * test_outputs.c: the command's output files. A path that names a stream
 * the shell opened (/dev/stdout, /dev/fd/N, the file standard output is
 * redirected to) is written through it and loses nothing; a replaced file
 * keeps its mode and owner; a write that fails, or a SIGINT or SIGTERM
 * in the middle of one, leaves the old file and no temporary file.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testio.h"
#include "xstage.h"

static char dir[64];

static int setup(void **s) {
  (void)s;
  snprintf(dir, sizeof dir, "/tmp/xstage-outputs-%d", (int)getpid());
  return mkdir(dir, 0700);
}

/* every file of the folder removed, then the folder */
static int teardown(void **s) {
  (void)s;
  DIR *d = opendir(dir);
  struct dirent *e;
  char p[512];
  while (d && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      remove(p);
    }
  if (d)
    closedir(d);
  return rmdir(dir);
}

/* the names in the folder that hold ".tmp": 0 when none */
static int temp_files(char *first, size_t n) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int found = 0;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, ".tmp")) {
      if (!found++ && first)
        snprintf(first, n, "%s", e->d_name);
    }
  if (d)
    closedir(d);
  return found;
}

static void put_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

/* "sh -c CMD" from the source tree: its exit status, -1 when killed */
static int sh(const char *fmt, ...) {
  char cmd[4096], full[4200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  snprintf(full, sizeof full, "cd '%s' && %s", XSTAGE_SRC, cmd);
  int st = system(full);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define PREDICT "'" XSTAGE_BIN "' predict --program examples/two-bursts.json --profile h100-nvlink"

/* --svg through a stream the shell opened for append: what the file held
 * stays, the text report follows, then the SVG; the same bytes as the
 * report and the SVG written each to a file of its own. */
static void test_streams_append(void **s) {
  (void)s;
  char report[160], svg[160], log[160];
  snprintf(report, sizeof report, "%s/report.txt", dir);
  snprintf(svg, sizeof svg, "%s/alone.svg", dir);
  snprintf(log, sizeof log, "%s/log.txt", dir);
  assert_int_equal(sh(PREDICT " --svg %s > %s", svg, report), 0);
  size_t nr, ns;
  char *r = xs_test_read_file(report, &nr), *v = xs_test_read_file(svg, &ns);
  assert_non_null(r);
  assert_non_null(v);
  assert_true(nr > 100 && ns > 1000);
  const char *kept = "a line the log held before\n";
  /* the report and the SVG to one log, opened for append by the shell */
  const char *ways[] = {"--svg /dev/stdout >> %s", "--svg /proc/self/fd/1 >> %s",
                        "--svg /dev/fd/7 7>> %s >> %s", "--svg %s >> %s"};
  for (size_t w = 0; w < sizeof ways / sizeof *ways; w++) {
    put_file(log, kept);
    char args[512];
    snprintf(args, sizeof args, ways[w], log, log);
    assert_int_equal(sh(PREDICT " %s", args), 0);
    size_t n;
    char *got = xs_test_read_file(log, &n);
    assert_non_null(got);
    size_t nk = strlen(kept);
    if (n != nk + nr + ns || memcmp(got, kept, nk) || memcmp(got + nk, r, nr) ||
        memcmp(got + nk + nr, v, ns)) {
      fprintf(stderr, "way %zu (%s): %zu bytes, want %zu (kept %zu + report %zu + "
              "svg %zu)\n", w, args, n, nk + nr + ns, nk, nr, ns);
      fail();
    }
    free(got);
  }
  free(r);
  free(v);
  assert_int_equal(temp_files(NULL, 0), 0);
  /* standard input is no output */
  assert_int_equal(sh(PREDICT " --svg /dev/stdin < /dev/null > /dev/null 2>%s", log), 2);
  char *e = xs_test_read_file(log, NULL);
  assert_non_null(strstr(e, "/dev/stdin: descriptor 0 is open for reading only"));
  free(e);
  /* a folder is refused, and nothing is made beside it */
  assert_int_equal(sh(PREDICT " --svg %s > /dev/null 2>%s", dir, log), 2);
  e = xs_test_read_file(log, NULL);
  assert_non_null(strstr(e, ": is a directory"));
  free(e);
  char pattern[96];
  glob_t g;
  snprintf(pattern, sizeof pattern, "%s.tmp*", dir);
  assert_int_equal(glob(pattern, 0, NULL, &g), GLOB_NOMATCH);
}

/* A replaced file keeps its mode, and as root its owner and group; a new
 * one gets 0666 less the umask. Checked against stat before and after. */
static void test_mode_and_owner(void **s) {
  (void)s;
  char out[160];
  snprintf(out, sizeof out, "%s/mode.svg", dir);
  const mode_t modes[] = {0600, 0640, 0604, 0644};
  for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
    put_file(out, "old\n");
    assert_int_equal(chmod(out, modes[i]), 0);
    int as_root = geteuid() == 0;
    if (as_root)
      assert_int_equal(chown(out, 4321, 4322), 0);
    struct stat before, after;
    assert_int_equal(stat(out, &before), 0);
    assert_int_equal(sh(PREDICT " --svg %s > /dev/null", out), 0);
    assert_int_equal(stat(out, &after), 0);
    if (as_root && (after.st_uid != 4321 || after.st_gid != 4322)) {
      fprintf(stderr, "owner %d:%d, want 4321:4322\n", (int)after.st_uid,
              (int)after.st_gid);
      fail();
    }
    if ((after.st_mode & 07777) != modes[i] || after.st_ino == before.st_ino ||
        after.st_size < 1000) {
      fprintf(stderr, "mode %o (want %o), inode %s, %lld bytes\n",
              (unsigned)(after.st_mode & 07777), (unsigned)modes[i],
              after.st_ino == before.st_ino ? "the same" : "new",
              (long long)after.st_size);
      fail();
    }
    assert_int_equal(remove(out), 0);
  }
  assert_int_equal(sh("umask 077 && " PREDICT " --svg %s > /dev/null", out), 0);
  struct stat sb;
  assert_int_equal(stat(out, &sb), 0);
  assert_int_equal(sb.st_mode & 07777, 0600);
  /* a read-only file is refused, whoever runs the command (a rename
   * replaced it, also as a user who may not write it), and stays whole */
  const mode_t ro[] = {0444, 0400, 0555};
  for (size_t i = 0; i < sizeof ro / sizeof *ro; i++) {
    put_file(out, "old\n");
    assert_int_equal(chmod(out, ro[i]), 0);
    assert_int_equal(sh(PREDICT " --svg %s > /dev/null 2>&1", out), 2);
    assert_int_equal(stat(out, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, ro[i]);
    assert_int_equal(sb.st_size, 4);
    xs_error e;
    assert_int_equal(xs_check_output(out, &e), XS_INVALID);
    assert_non_null(strstr(e.message, "read-only"));
    assert_int_equal(xs_write_file_atomic(out, "new\n", 4, &e), XS_INVALID);
    assert_int_equal(chmod(out, 0600), 0);
    assert_int_equal(xs_check_output(out, &e), XS_OK);
  }
  /* a folder, a missing folder, an empty path: refused before any work;
   * a new file, a device: fine */
  xs_error e;
  assert_int_equal(xs_check_output(dir, &e), XS_INVALID);
  char missing[200];
  snprintf(missing, sizeof missing, "%s/none/x.svg", dir);
  assert_int_equal(xs_check_output(missing, &e), XS_NOTFOUND);
  assert_non_null(strstr(e.message, "no folder"));
  assert_int_equal(xs_check_output("", &e), XS_NOTFOUND);
  snprintf(missing, sizeof missing, "%s/new.svg", dir);
  assert_int_equal(xs_check_output(missing, &e), XS_OK);
  assert_int_equal(xs_check_output("/dev/null", &e), XS_OK);
  assert_int_equal(xs_check_output("/dev/stdout", &e), XS_OK);
}

/* A write that fails half way (the file size limit, with SIGXFSZ
 * ignored): exit 1 naming the file and why, the old file whole, no
 * temporary file. */
static void test_failed_write(void **s) {
  (void)s;
  char out[160], err[160];
  snprintf(out, sizeof out, "%s/limited.svg", dir);
  snprintf(err, sizeof err, "%s/err.txt", dir);
  put_file(out, "old\n");
  assert_int_equal(sh("trap '' XFSZ; ulimit -f 4 && " PREDICT " --svg %s > /dev/null 2>%s",
                      out, err), 1);
  char *e = xs_test_read_file(err, NULL);
  assert_non_null(e);
  if (!strstr(e, "limited.svg: write error: File too large")) {
    fprintf(stderr, "stderr: %s\n", e);
    fail();
  }
  free(e);
  char *got = xs_test_read_file(out, NULL);
  assert_string_equal(got, "old\n");
  free(got);
  char tmp[256];
  if (temp_files(tmp, sizeof tmp)) {
    fprintf(stderr, "left behind: %s\n", tmp);
    fail();
  }
}

/* A program of 1,000,000 compute ops, whose SVG is about 70 MB: long
 * enough a write to catch the command in it. */
static void big_program(char *path, size_t n) {
  snprintf(path, n, "%s/big.json", dir);
  put_file(path, "{\"name\": \"big\", \"workers\": [{\"name\": \"w\", \"count\": 4, "
                 "\"ops\": [{\"repeat\": 250000, \"ops\": [{\"compute\": 1e-6}]}]}]}\n");
}

/* Start the command writing the big SVG over a file, stop it while its
 * temporary file exists, send sig and let it go on: it dies of sig, and
 * the old file is whole with no temporary file beside it. 1 when the
 * command was caught writing, 0 when it finished first (try again). */
static int signal_mid_write(const char *prog, int sig) {
  char out[160], cmd[1024];
  snprintf(out, sizeof out, "%s/target.svg", dir);
  put_file(out, "old\n");
  snprintf(cmd, sizeof cmd, "exec '%s' predict --program %s --profile h100-nvlink "
           "--svg %s > /dev/null", XSTAGE_BIN, prog, out);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  int st, caught = 0;
  char tmp[256];
  struct timespec tick = {0, 20000};
  for (;;) {
    if (temp_files(tmp, sizeof tmp)) {
      kill(pid, SIGSTOP);
      assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
      if (WIFSTOPPED(st)) {
        caught = temp_files(tmp, sizeof tmp) > 0; /* still writing */
        if (caught)
          kill(pid, sig);
        kill(pid, SIGCONT);
        assert_int_equal(waitpid(pid, &st, 0), pid);
      }
      break;
    }
    pid_t done = waitpid(pid, &st, WNOHANG);
    assert_true(done >= 0);
    if (done == pid)
      break;
    nanosleep(&tick, NULL);
  }
  if (caught && !(WIFSIGNALED(st) && WTERMSIG(st) == sig)) {
    fprintf(stderr, "signal %d during the write of %s: status %#x, want killed by "
            "it\n", sig, tmp, st);
    fail();
  }
  if (!caught && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
    fprintf(stderr, "the command failed on its own: status %#x\n", st);
    fail();
  }
  if (temp_files(tmp, sizeof tmp)) {
    fprintf(stderr, "signal %d: left behind: %s\n", sig, tmp);
    fail();
  }
  if (caught) {
    char *got = xs_test_read_file(out, NULL);
    assert_string_equal(got, "old\n");
    free(got);
  }
  return caught;
}

static void test_signal_mid_write(void **s) {
  (void)s;
  char prog[160];
  big_program(prog, sizeof prog);
  const int sigs[] = {SIGINT, SIGTERM};
  for (size_t i = 0; i < 2; i++) {
    int tries = 0;
    while (!signal_mid_write(prog, sigs[i]))
      if (++tries == 8) {
        fprintf(stderr, "signal %d: 8 runs finished their write before it was seen\n",
                sigs[i]);
        fail();
      }
  }
}

/* The library alone: the same rules without the command, and
 * xs_remove_temp_files with no write in progress touches nothing. */
static void test_library(void **s) {
  (void)s;
  char out[160], link[160];
  xs_error e;
  snprintf(out, sizeof out, "%s/lib.txt", dir);
  put_file(out, "old\n");
  assert_int_equal(chmod(out, 0600), 0);
  assert_int_equal(xs_write_file_atomic(out, "new\n", 4, &e), XS_OK);
  struct stat sb;
  assert_int_equal(stat(out, &sb), 0);
  assert_int_equal(sb.st_mode & 07777, 0600);
  snprintf(link, sizeof link, "%s/lib-link.txt", dir);
  assert_int_equal(symlink("lib.txt", link), 0);
  assert_int_equal(xs_write_file_atomic(link, "linked\n", 7, &e), XS_OK);
  assert_int_equal(lstat(link, &sb), 0);
  assert_true(S_ISLNK(sb.st_mode));
  char *got = xs_test_read_file(out, NULL);
  assert_string_equal(got, "linked\n");
  free(got);
  assert_int_equal(stat(out, &sb), 0);
  assert_int_equal(sb.st_mode & 07777, 0600);
  xs_remove_temp_files();
  assert_int_equal(xs_write_file_atomic("", "x", 1, &e), XS_NOTFOUND);
  assert_int_equal(xs_write_file_atomic(dir, "x", 1, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "is a directory"));
  assert_int_equal(xs_write_file_atomic("/dev/fd/999", "x", 1, &e), XS_NOTFOUND);
  assert_non_null(strstr(e.message, "descriptor 999 is not open"));
  assert_int_equal(temp_files(NULL, 0), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_streams_append), cmocka_unit_test(test_mode_and_owner),
      cmocka_unit_test(test_failed_write), cmocka_unit_test(test_signal_mid_write),
      cmocka_unit_test(test_library)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
