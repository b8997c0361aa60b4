/*
 * iheap.c: the indexed 4-ary min-heap of next-event times that the fluid
 * evaluation and the packet simulator schedule workers and channels with.
 * Keys live in the nodes (one cache line holds a node's four children), and
 * a key change moves the node only in the direction it changed.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

int xs__iheap_init(xs__iheap *h, size_t n) {
  /* n slots, then 4 sentinels: a parent's four children are always there */
  h->node = malloc((n + 4) * sizeof *h->node);
  h->pos = malloc((n + 1) * sizeof *h->pos);
  h->n = n;
  if (!h->node || !h->pos)
    return -1;
  for (size_t e = 0; e < n + 4; e++) /* slot 0 of an empty heap: its top */
    h->node[e] = e < n ? (xs__hnode){INFINITY, (uint32_t)e} : XS__HSENTINEL;
  for (size_t e = 0; e < n; e++)
    h->pos[e] = (uint32_t)e;
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
      if (!xs__hbefore(&n, &h->node[up]))
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
      size_t m = xs__hleast4(h->node, c);
      if (!xs__hbefore(&h->node[m], &n))
        break;
      h->node[i] = h->node[m];
      h->pos[h->node[i].id] = (uint32_t)i;
      i = m;
    }
  }
  h->node[i] = n;
  h->pos[e] = (uint32_t)i;
}
