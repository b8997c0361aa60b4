/*
 * report.c: the JSON report of `xstage predict --json`, a contract that
 * other tools parse (docs/predict.md): program and profile names, then one
 * object per model under "models".
 */
#include "internal.h"

#include <jansson.h>
#include <stdlib.h>

static json_t *num(double v) { return json_real(v); }

static json_t *model_json(const xs_program *p, const xs_profile *prof,
                          const xs_result *r) {
  json_t *m = json_object();
  json_object_set_new(m, "makespan_s", num(r->makespan_s));
  if (r->model == XS_MODEL_SERIAL || r->model == XS_MODEL_IDEAL)
    return m;
  json_object_set_new(m, "issue_done_s", num(r->issue_done_s));
  json_t *ws = json_array();
  for (size_t w = 0; w < r->nworkers; w++) {
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(xs_program_worker_name(p, w)));
    json_object_set_new(o, "finish_s", num(r->workers[w].finish_s));
    json_object_set_new(o, "stall_s", num(r->workers[w].stall_s));
    json_array_append_new(ws, o);
  }
  json_object_set_new(m, "workers", ws);
  json_t *ss = json_array();
  for (size_t s = 0; s < r->nsends && r->sends; s++) {
    const xs_send_result *sr = &r->sends[s];
    char buf[256];
    json_t *o = json_object();
    const char *ch = xs_program_send_channel(p, s);
    json_object_set_new(o, "id",
                        json_string(xs_program_send_id(p, s, buf, sizeof buf)));
    json_object_set_new(
        o, "worker",
        json_string(xs_program_worker_name(p, xs_program_send_worker(p, s))));
    json_object_set_new(
        o, "channel",
        json_string(ch ? ch : xs_profile_channel_name(prof, 0)));
    json_object_set_new(o, "bytes", num(xs_program_send_bytes(p, s)));
    json_object_set_new(o, "issue_start_s", num(sr->issue_start_s));
    json_object_set_new(o, "issue_end_s", num(sr->issue_end_s));
    json_object_set_new(o, "deliver_s", num(sr->deliver_s));
    json_object_set_new(o, "xstage_s", num(sr->xstage_s));
    json_object_set_new(o, "stall_s", num(sr->stall_s));
    json_array_append_new(ss, o);
  }
  json_object_set_new(m, "sends", ss);
  json_t *cs = json_array();
  for (size_t c = 0; c < r->nchannels; c++) {
    if (!r->channels[c].sends)
      continue;
    json_t *o = json_object();
    json_object_set_new(o, "name",
                        json_string(xs_profile_channel_name(prof, c)));
    json_object_set_new(o, "bytes", num(r->channels[c].bytes));
    json_object_set_new(o, "peak_backlog_B",
                        num(r->channels[c].peak_backlog_B));
    json_array_append_new(cs, o);
  }
  json_object_set_new(m, "channels", cs);
  return m;
}

char *xs_report_json(const xs_program *p, const xs_profile *prof,
                     xs_result *const *results, size_t count) {
  json_t *root = json_object();
  json_object_set_new(root, "program", json_string(xs_program_name(p)));
  json_object_set_new(root, "profile", json_string(xs_profile_name(prof)));
  json_t *models = json_object();
  for (size_t i = 0; i < count; i++)
    json_object_set_new(models, xs_model_name(results[i]->model),
                        model_json(p, prof, results[i]));
  json_object_set_new(root, "models", models);
  char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
  json_decref(root);
  return s;
}
