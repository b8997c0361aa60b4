#!/usr/bin/env python3
"""The packet channel of xstage's simulator (src/sim.c), written in SimPy 3
(Debian python3-simpy3), for a speed comparison: xstage-bench sim runs it
beside the C simulator and prints the ratio of their event rates.

Same model: a packet of P bytes is admitted after P/R_inj on the channel's
injection server, when the channel has credit (capacity_B bytes admitted
and not drained); packets drain first in, first out at R_drain and give
their credit back. Workers alternate compute and sends. Counted events: one
admission and one departure per packet, as in the C simulator.

usage: simpy_channel.py WORKERS SENDS SEND_BYTES PACKET_BYTES
prints: simpy_events N / simpy_seconds S / simpy_events_per_s R /
        simpy_makespan_s T (the last departure; the profile has no latency
        to add in this comparison)
"""
import sys
import time

import simpy

INJECT_BPS, DRAIN_BPS, CAPACITY_B = 1.2e12, 3.7e11, 4194304  # h200-nvlink
COMPUTE_S = 10e-6


def main():
    workers, sends, send_b, packet_b = (int(a) for a in sys.argv[1:5])
    env = simpy.Environment()
    credit = simpy.Container(env, capacity=CAPACITY_B, init=CAPACITY_B)
    injector = simpy.Resource(env, capacity=1)
    queue = simpy.Store(env)
    events = [0]

    def drain():
        while True:
            b = yield queue.get()
            yield env.timeout(b / DRAIN_BPS)
            yield credit.put(b)
            events[0] += 1

    def worker():
        for _ in range(sends):
            yield env.timeout(COMPUTE_S)
            left = send_b
            while left > 0:
                b = min(packet_b, left)
                yield credit.get(b)
                with injector.request() as req:
                    yield req
                    yield env.timeout(b / INJECT_BPS)
                yield queue.put(b)
                events[0] += 1
                left -= b

    env.process(drain())
    for _ in range(workers):
        env.process(worker())
    t0 = time.perf_counter()
    env.run()
    dt = time.perf_counter() - t0
    print(f"simpy_events {events[0]}")
    print(f"simpy_seconds {dt:.6g}")
    print(f"simpy_events_per_s {events[0] / dt:.6g}")
    print(f"simpy_makespan_s {env.now:.9g}")


if __name__ == "__main__":
    main()
