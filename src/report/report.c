/*
 * report.c: the JSON report of `xstage predict --json`, a contract that
 * other tools parse (docs/predict.md): program and profile names, then one
 * object per model under "models".
 */
#include "formats/jsonutil.h"

#include <jansson.h>
#include <stdlib.h>

static int num(json_t *o, const char *key, double v) {
  return xs__jput(o, key, json_real(v));
}

/* the model's object into models, or 1 when jansson refused a part */
static int model_json(json_t *models, const xs_program *p, const xs_profile *prof,
                      const xs_result *r) {
  json_t *m = json_object();
  int bad = num(m, "makespan_s", r->makespan_s);
  if (r->model != XS_MODEL_SERIAL && r->model != XS_MODEL_IDEAL) {
    bad |= num(m, "issue_done_s", r->issue_done_s);
    json_t *ws = json_array();
    for (size_t w = 0; w < r->nworkers; w++) {
      json_t *o = json_object();
      bad |= xs__jput(o, "name", json_string(xs_program_worker_name(p, w))) |
             num(o, "finish_s", r->workers[w].finish_s) |
             num(o, "stall_s", r->workers[w].stall_s) | xs__jappend(ws, o);
    }
    bad |= xs__jput(m, "workers", ws);
    json_t *ss = json_array();
    for (size_t s = 0; s < r->nsends && r->sends; s++) {
      const xs_send_result *sr = &r->sends[s];
      json_t *o = json_object();
      const char *ch = xs_program_send_channel(p, s);
      bad |= xs__jput(o, "id", xs__send_id_json(p, s)) |
             xs__jput(o, "worker",
                      json_string(xs_program_worker_name(p, xs_program_send_worker(p, s)))) |
             xs__jput(o, "channel", json_string(ch ? ch : xs_profile_channel_name(prof, 0))) |
             num(o, "bytes", xs_program_send_bytes(p, s)) |
             num(o, "issue_start_s", sr->issue_start_s) |
             num(o, "issue_end_s", sr->issue_end_s) | num(o, "deliver_s", sr->deliver_s) |
             num(o, "xstage_s", sr->xstage_s) | num(o, "stall_s", sr->stall_s) |
             xs__jappend(ss, o);
    }
    bad |= xs__jput(m, "sends", ss);
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
    bad |= model_json(models, p, prof, results[i]);
  bad |= xs__jput(root, "models", models);
  char *s = bad ? NULL : json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
  json_decref(root);
  return s;
}
