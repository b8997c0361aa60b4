/*
 * iheap.c: the indexed min-queue of next-event times that the fluid
 * evaluation and the packet simulator schedule workers and channels with:
 * a 4-ary heap, keys in the nodes (one cache line holds a node's four
 * children), where a key change moves the node only in the direction it
 * changed; and beside it a sorted ring for keys that come in ascending
 * order, which many workers that compute and send in turn do: their timers
 * then cost an append and a pop instead of two sifts; and for a few
 * entities a scan (internal.h).
 */
#include "model/iheap.h"

#include "internal.h"

#include <math.h>
#include <stdlib.h>

int xs__iheap_init(xs__iheap *h, size_t n) {
  /* n slots, then 4 sentinels: a parent's four children are always there */
  h->node = malloc((n + 4) * sizeof *h->node);
  h->pos = malloc((n + 1) * sizeof *h->pos);
  h->n = n;
  /* the ring holds each entity at most once live, so a compaction (below)
   * leaves room for at least n + 2 more; a few entities go without (a
   * heap of them is about as cheap, and the ring's upkeep is not) */
  h->cap = n >= XS__IHEAP_RING ? 2 * n + 2 : 0;
  h->ring = malloc((h->cap + 1) * sizeof *h->ring);
  h->ticket = malloc((h->cap + 1) * sizeof *h->ticket);
  h->in_ring = calloc(n + 1, sizeof *h->in_ring);
  h->head = h->len = 0;
  h->next_ticket = 0;
  h->top = h->node;
  if (!h->node || !h->pos || !h->ring || !h->ticket || !h->in_ring)
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
  free(h->ring);
  free(h->ticket);
  free(h->in_ring);
  h->node = h->ring = NULL;
  h->pos = h->ticket = h->in_ring = NULL;
  h->top = NULL;
}

/* The heap alone: the node moves only in the direction its key changed. */
static void heap_set(xs__iheap *h, uint32_t e, double t) {
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

/* An entry is live while its entity's ring ticket is its own. */
static int live(const xs__iheap *h, size_t s) {
  return h->in_ring[h->ring[s].id] == h->ticket[s];
}

/* The ring is [head, head + len) of its array; when that reaches the end,
 * its live entries move to the front, in order. */
static void compact(xs__iheap *h) {
  size_t k = 0;
  for (size_t s = h->head; s < h->head + h->len; s++)
    if (live(h, s)) {
      h->ring[k] = h->ring[s];
      h->ticket[k] = h->ticket[s];
      k++;
    }
  h->head = 0;
  h->len = k;
}

static void ring_set(xs__iheap *h, uint32_t e, double t) {
  int was_ring = h->in_ring[e] != 0;
  h->in_ring[e] = 0; /* an entry it had is left to be skipped */
  xs__hnode n = {t, e};
  if (t < INFINITY && h->head + h->len == h->cap)
    compact(h);
  if (t < INFINITY &&
      (h->len == 0 || xs__hbefore(&h->ring[h->head + h->len - 1], &n))) {
    if (!was_ring)
      heap_set(h, e, INFINITY);
    size_t s = h->head + h->len++;
    h->ring[s] = n;
    if (++h->next_ticket == 0) /* 0 means none: wrap past it */
      h->next_ticket = 1;
    h->ticket[s] = h->in_ring[e] = h->next_ticket;
  } else {
    heap_set(h, e, t); /* out of order, or none (its heap key is INFINITY
                          when it was in the ring) */
  }
  while (h->len && !live(h, h->head)) {
    h->head++;
    h->len--;
  }
  if (!h->len)
    h->head = 0;
  h->top = h->len && xs__hbefore(&h->ring[h->head], &h->node[0])
               ? &h->ring[h->head]
               : &h->node[0];
}

/* The top found again after it moved up (a few entities: internal.h) */
void xs__iheap_rescan(xs__iheap *h) {
  /* in id order, the first of the least keys is the least (key, id) */
  const xs__hnode *m = h->node;
  double k = m->key;
  for (size_t i = 1; i < h->n; i++)
    if (h->node[i].key < k) {
      m = &h->node[i];
      k = m->key;
    }
  h->top = m;
}

void xs__iheap_set_many(xs__iheap *h, uint32_t e, double t) {
  if (h->cap)
    ring_set(h, e, t);
  else
    heap_set(h, e, t);
}
