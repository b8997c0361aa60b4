/*
 * iheap.h: the setter of the indexed min-queue (internal.h, iheap.c) for
 * the event-driven evaluators that include it, inline: an evaluation sets
 * a key at every event.
 */
#ifndef XSTAGE_MODEL_IHEAP_H
#define XSTAGE_MODEL_IHEAP_H

#include "internal.h"

/* A few entities: node e is entity e. The top moves to a node whose key
 * passes it, and is looked for again when its own key grows. Inline: an
 * evaluation sets a key at every event. */
static inline void xs__iheap_set(xs__iheap *h, uint32_t e, double t) {
  if (h->n > XS__IHEAP_LINEAR) {
    xs__iheap_set_many(h, e, t);
    return;
  }
  xs__hnode *x = &h->node[e];
  double old = x->key;
  x->key = t;
  if (xs__hbefore(x, h->top))
    h->top = x;
  else if (x == h->top && t > old)
    xs__iheap_rescan(h);
}

#endif
