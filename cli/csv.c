/* --csv of plan and validate: the rows of the command's JSON document as
 * CSV, flattened as the Python package's records() flattens them (nested
 * keys joined with "."), so that the two read alike. */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a field as RFC 4180 writes it: quoted when it holds a comma, a quote or
 * a line break, its quotes doubled */
static void field(const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, stdout);
    return;
  }
  putchar('"');
  for (; *s; s++) {
    if (*s == '"')
      putchar('"');
    putchar(*s);
  }
  putchar('"');
}

/* whether a list is a kernel's calls: objects that carry their Python */
static int is_calls(json_t *a) {
  return json_array_size(a) && json_is_object(json_array_get(a, 0)) &&
         json_is_string(json_object_get(json_array_get(a, 0), "python"));
}

/* one row's flat keys and values into flat (key: its text): objects by
 * their keys joined with ".", a list of calls as their Python joined by
 * "; ", any other list as its length, numbers exactly (the fewest digits
 * that read back the same), true and
 * false, null empty */
static int flatten(const char *prefix, json_t *v, json_t *flat) {
  if (json_is_object(v)) {
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
      size_t n = strlen(prefix) + strlen(k) + 2;
      char *key = malloc(n);
      if (!key)
        return -1;
      snprintf(key, n, "%s%s%s", prefix, *prefix ? "." : "", k);
      int bad = flatten(key, x, flat);
      free(key);
      if (bad)
        return -1;
    }
    return 0;
  }
  char num[64];
  json_t *text = NULL;
  if (json_is_array(v) && is_calls(v)) {
    size_t total = 1, i;
    json_t *c;
    json_array_foreach(v, i, c) total += strlen(json_string_value(json_object_get(c, "python"))) + 2;
    char *buf = malloc(total);
    if (!buf)
      return -1;
    buf[0] = '\0';
    json_array_foreach(v, i, c) {
      if (i)
        strcat(buf, "; ");
      strcat(buf, json_string_value(json_object_get(c, "python")));
    }
    text = json_string(buf);
    free(buf);
  } else if (json_is_array(v)) {
    snprintf(num, sizeof num, "%zu", json_array_size(v));
    text = json_string(num);
  } else if (json_is_integer(v)) {
    snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
    text = json_string(num);
  } else if (json_is_real(v)) {
    /* the fewest digits that read back as the same double, as Python's
     * repr() writes it */
    double x = json_real_value(v);
    for (int digits = 15; digits <= 17; digits++) {
      snprintf(num, sizeof num, "%.*g", digits, x);
      if (strtod(num, NULL) == x)
        break;
    }
    text = json_string(num);
  } else if (json_is_boolean(v)) {
    text = json_string(json_is_true(v) ? "true" : "false");
  } else if (json_is_string(v)) {
    text = json_string(json_string_value(v));
  } else {
    text = json_string("");
  }
  return text ? json_object_set_new(flat, prefix, text) : -1;
}

int cli_csv_rows(const char *cmd, json_t *rows) {
  size_t n = json_array_size(rows), i;
  json_t *flats = json_array(), *cols = json_array(), *seen = json_object(), *row;
  int bad = !flats || !cols || !seen;
  json_array_foreach(rows, i, row) {
    json_t *flat = json_object();
    if (bad || !flat || flatten("", row, flat)) {
      json_decref(flat);
      bad = 1;
      break;
    }
    const char *k;
    json_t *x;
    json_object_foreach(flat, k, x) {
      if (!json_object_get(seen, k)) {
        bad |= json_object_set_new(seen, k, json_true()) ||
               json_array_append_new(cols, json_string(k));
      }
    }
    bad |= json_array_append_new(flats, flat);
  }
  if (bad) {
    json_decref(flats);
    json_decref(cols);
    json_decref(seen);
    return cli_out_of_memory(cmd);
  }
  size_t nc = json_array_size(cols), c;
  json_t *col;
  json_array_foreach(cols, c, col) {
    if (c)
      putchar(',');
    field(json_string_value(col));
  }
  putchar('\n');
  for (i = 0; i < n; i++) {
    json_t *flat = json_array_get(flats, i);
    for (c = 0; c < nc; c++) {
      json_t *x = json_object_get(flat, json_string_value(json_array_get(cols, c)));
      if (c)
        putchar(',');
      if (x)
        field(json_string_value(x));
    }
    putchar('\n');
  }
  json_decref(flats);
  json_decref(cols);
  json_decref(seen);
  cli_flush_stdout();
  return EXIT_OK;
}

int cli_plan_format(const char *what, int csv, int sensitivity, int *json) {
  if (*json && csv)
    return cli_usage_error("plan", "--json and --csv exclude each other");
  if (csv && sensitivity)
    return cli_usage_error("plan", "--csv prints the %s, one a line: --sensitivity is for "
                                   "the text and --json", what);
  if (csv)
    *json = 2; /* the JSON document, printed as CSV */
  return 0;
}

/* the object at a dotted path of doc, or NULL */
static json_t *at_path(json_t *doc, const char *path) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", path);
  json_t *v = doc;
  for (char *save, *p = strtok_r(buf, ".", &save); p && v; p = strtok_r(NULL, ".", &save))
    v = json_object_get(v, p);
  return v;
}

int cli_csv_document(const char *cmd, const char *text, const char *member,
                     const char *name_key, const char *chosen_path,
                     const char *const *match) {
  json_error_t je;
  json_t *doc = json_loads(text, 0, &je);
  if (!doc)
    return cli_out_of_memory(cmd); /* the library wrote it: only memory fails */
  json_t *m = json_object_get(doc, member), *rows = json_array();
  json_t *chosen = chosen_path ? at_path(doc, chosen_path) : NULL;
  int rc = rows ? 0 : -1;
  if (json_is_array(m)) {
    size_t i;
    json_t *r;
    json_array_foreach(m, i, r) rc |= json_array_append(rows, r);
  } else if (json_is_object(m)) {
    /* an object of rows by name: the name first */
    const char *k;
    json_t *r;
    json_object_foreach(m, k, r) {
      json_t *o = json_pack("{s:s}", name_key, k);
      rc |= !o || json_object_update(o, r) || json_array_append_new(rows, o);
    }
  }
  if (!rc && chosen && match) {
    /* the recommended row: every match key equal to the chosen one's */
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
      int same = 1;
      for (const char *const *k = match; *k; k++) {
        const char *a = json_string_value(json_object_get(r, *k));
        const char *b = json_string_value(json_object_get(chosen, *k));
        same &= a && b && !strcmp(a, b);
      }
      /* the mark after the name, before the row's own keys */
      json_t *own = json_object();
      if (name_key && own)
        rc |= json_object_set(own, name_key, json_object_get(r, name_key));
      rc |= !own || json_object_set_new(own, "recommended", json_boolean(same)) ||
            json_object_update(own, r) || json_array_set_new(rows, i, own);
    }
  }
  int out = rc ? cli_out_of_memory(cmd) : cli_csv_rows(cmd, rows);
  json_decref(rows);
  json_decref(doc);
  return out;
}
