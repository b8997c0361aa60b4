/*
 * iheap.c: the indexed 4-ary min-heap of next-event times that the fluid
 * evaluation and the packet simulator schedule workers and channels with.
 * Keys live in the nodes (one cache line holds a node's four children), and
 * a key change moves the node only in the direction it changed.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

/* Without branches: which child is smallest is a coin toss to a branch
 * predictor, and the sift loops are most of an evaluation's time. */
static inline size_t before(const xs__hnode *a, const xs__hnode *b) {
  return (size_t)((a->key < b->key) | ((a->key == b->key) & (a->id < b->id)));
}

/* The smallest of the four children from c on, by a two-round tournament;
 * the slots past the last entity hold sentinels that lose every match. */
static inline size_t least4(const xs__hnode *v, size_t c) {
  size_t a = c + before(&v[c + 1], &v[c]);
  size_t b = c + 2 + before(&v[c + 3], &v[c + 2]);
  size_t bw = before(&v[b], &v[a]);
  return a + (b - a) * bw;
}

int xs__iheap_init(xs__iheap *h, size_t n) {
  /* n slots, then 4 sentinels: a parent's four children are always there */
  h->node = malloc((n + 4) * sizeof *h->node);
  h->pos = malloc((n + 1) * sizeof *h->pos);
  h->n = n;
  if (!h->node || !h->pos)
    return -1;
  for (size_t e = 0; e < n + 4; e++) {
    h->node[e].key = INFINITY; /* slot 0 of an empty heap: its top */
    h->node[e].id = e < n ? (uint32_t)e : UINT32_MAX;
    if (e < n)
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
      size_t c = 4 * i + 1;
      if (c >= h->n)
        break;
      size_t m = least4(h->node, c);
      if (!before(&h->node[m], &n))
        break;
      h->node[i] = h->node[m];
      h->pos[h->node[i].id] = (uint32_t)i;
      i = m;
    }
  }
  h->node[i] = n;
  h->pos[e] = (uint32_t)i;
}
