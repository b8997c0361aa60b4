/*
 * report.c: the JSON report of `xstage predict --json`, a contract that
 * other tools parse (docs/predict.md): program and profile names, then one
 * object per model under "models".
 */
#include "formats/jsonutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int num(json_t *o, const char *key, double v) {
  return xs__jput(o, key, json_real(v));
}

/* Where a model's "sends" go: a string no name can make in that place
 * (the dump escapes \x01, and a quote that is not escaped ends a string,
 * so '"sends": "' with this after it is the key of a model object) */
#define MARK "\x01xs-sends-"
#define MARK_DUMPED "\"sends\": \"\\u0001xs-sends-"

/* One send's object, as the report has always written it */
static json_t *send_json(const xs_program *p, const xs_profile *prof, const xs_result *r,
                         size_t s) {
  const xs_send_result *sr = &r->sends[s];
  json_t *o = json_object();
  const char *ch = xs_program_send_channel(p, s);
  int bad = xs__jput(o, "id", xs__send_id_json(p, s)) |
            xs__jput(o, "worker",
                     json_string(xs_program_worker_name(p, xs_program_send_worker(p, s)))) |
            xs__jput(o, "channel", json_string(ch ? ch : xs_profile_channel_name(prof, xs_profile_default_channel(prof)))) |
            num(o, "bytes", xs_program_send_bytes(p, s)) |
            num(o, "issue_start_s", sr->issue_start_s) |
            num(o, "issue_end_s", sr->issue_end_s) | num(o, "deliver_s", sr->deliver_s) |
            num(o, "xstage_s", sr->xstage_s) | num(o, "stall_s", sr->stall_s);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* The sends of result r as the array json_dumps would write at indent
 * 8, one send's objects at a time: a whole tree of them took about 1.3 KB
 * a send more than the text does (about 350 bytes). 0, or 1 when a part
 * failed. */
static int write_sends(xs__sbuf *b, const xs_program *p, const xs_profile *prof,
                       const xs_result *r) {
  xs__sb_put(b, "[", 1);
  for (size_t s = 0; s < r->nsends && !b->oom; s++) {
    json_t *o = send_json(p, prof, r, s);
    char *t = o ? json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(o);
    if (!t)
      return 1;
    static const char nl[] = ",\n        ";
    xs__sb_put(b, s ? nl : nl + 1, s ? sizeof nl - 1 : sizeof nl - 2);
    for (const char *c = t, *e; *c; c = e) {
      e = strchr(c, '\n');
      if (!e) {
        xs__sb_put(b, c, strlen(c));
        break;
      }
      xs__sb_put(b, c, (size_t)(e - c));
      xs__sb_put(b, nl + 1, sizeof nl - 2);
      e++;
    }
    free(t);
  }
  xs__sb_put(b, "\n      ]", 8);
  return b->oom;
}

/* the model's object into models, or 1 when jansson refused a part */
static int model_json(json_t *models, const xs_program *p, const xs_profile *prof,
                      const xs_result *r, size_t index) {
  json_t *m = json_object();
  int bad = num(m, "makespan_s", r->makespan_s);
  if (r->model != XS_MODEL_SERIAL && r->model != XS_MODEL_IDEAL) {
    bad |= num(m, "issue_done_s", r->issue_done_s);
    json_t *ws = json_array();
    for (size_t w = 0; w < r->nworkers; w++) {
      json_t *o = json_object();
      bad |= xs__jput(o, "name", json_string(xs_program_worker_name(p, w))) |
             (xs_program_worker_copies(p, w) > 1
                  ? xs__jput(o, "copies",
                             json_integer((json_int_t)xs_program_worker_copies(p, w)))
                  : 0) |
             num(o, "finish_s", r->workers[w].finish_s) |
             num(o, "stall_s", r->workers[w].stall_s) | xs__jappend(ws, o);
    }
    bad |= xs__jput(m, "workers", ws);
    /* the sends are written later, one at a time (write_sends) */
    char mark[32];
    snprintf(mark, sizeof mark, MARK "%zu", index);
    bad |= xs__jput(m, "sends", r->nsends && r->sends ? json_string(mark) : json_array());
    json_t *cs = json_array();
    for (size_t c = 0; c < r->nchannels; c++) {
      if (!r->channels[c].sends)
        continue;
      json_t *o = json_object();
      bad |= xs__jput(o, "name", json_string(xs_profile_channel_name(prof, c))) |
             num(o, "bytes", r->channels[c].bytes) |
             num(o, "peak_backlog_B", r->channels[c].peak_backlog_B) | xs__jappend(cs, o);
    }
    bad |= xs__jput(m, "channels", cs);
  }
  return bad | xs__jput(models, xs_model_name(r->model), m);
}

char *xs_report_json(const xs_program *p, const xs_profile *prof,
                     xs_result *const *results, size_t count) {
  json_t *root = json_object(), *models = json_object();
  int bad = xs__jput(root, "program", json_string(xs_program_name(p))) |
            xs__jput(root, "profile", json_string(xs_profile_name(prof)));
  for (size_t i = 0; i < count; i++)
    bad |= model_json(models, p, prof, results[i], i);
  bad |= xs__jput(root, "models", models);
  char *s = bad ? NULL : json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
  json_decref(root);
  if (!s)
    return NULL;
  /* splice each model's sends in where its mark is */
  xs__sbuf b = {0};
  const char *at = s, *hit;
  while (!b.oom && (hit = strstr(at, MARK_DUMPED))) {
    char *end;
    hit += strlen("\"sends\": ");
    size_t i = strtoul(hit + strlen("\"\\u0001xs-sends-"), &end, 10);
    xs__sb_put(&b, at, (size_t)(hit - at));
    if (i >= count || *end != '"' || write_sends(&b, p, prof, results[i])) {
      free(s);
      free(b.s);
      return NULL;
    }
    at = end + 1;
  }
  xs__sb_put(&b, at, strlen(at));
  free(s);
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}
