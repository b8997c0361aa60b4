/*
 * iheap.c: the indexed 4-ary min-heap of next-event times that the fluid
 * evaluation and the packet simulator schedule workers and channels with.
 * Keys live in the nodes (one cache line holds a node's four children), and
 * a key change moves the node only in the direction it changed.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

static int before(const xs__hnode *a, const xs__hnode *b) {
  return a->key < b->key || (a->key == b->key && a->id < b->id);
}

int xs__iheap_init(xs__iheap *h, size_t n) {
  h->node = malloc((n + 1) * sizeof *h->node);
  h->pos = malloc((n + 1) * sizeof *h->pos);
  h->n = n;
  if (!h->node || !h->pos)
    return -1;
  h->node[0].key = INFINITY; /* an empty heap's top */
  h->node[0].id = 0;
  for (size_t e = 0; e < n; e++) {
    h->node[e].key = INFINITY;
    h->node[e].id = (uint32_t)e;
    h->pos[e] = (uint32_t)e;
  }
  return 0;
}

void xs__iheap_free(xs__iheap *h) {
  free(h->node);
  free(h->pos);
  h->node = NULL;
  h->pos = NULL;
}

void xs__iheap_set(xs__iheap *h, uint32_t e, double t) {
  size_t i = h->pos[e];
  xs__hnode n = {t, e};
  if (h->node[i].key == t)
    return;
  if (t < h->node[i].key) {
    while (i > 0) {
      size_t up = (i - 1) / 4;
      if (!before(&n, &h->node[up]))
        break;
      h->node[i] = h->node[up];
      h->pos[h->node[i].id] = (uint32_t)i;
      i = up;
    }
  } else {
    for (;;) {
      size_t c = 4 * i + 1, m = SIZE_MAX;
      const xs__hnode *best = &n;
      for (size_t k = c; k < c + 4 && k < h->n; k++)
        if (before(&h->node[k], best)) {
          best = &h->node[k];
          m = k;
        }
      if (m == SIZE_MAX)
        break;
      h->node[i] = h->node[m];
      h->pos[h->node[i].id] = (uint32_t)i;
      i = m;
    }
  }
  h->node[i] = n;
  h->pos[e] = (uint32_t)i;
}
