"""What does 1 ms of injected host work cost a launch-bound GPU loop? (session 12: the 1x4 comparison's step grew by
about twice the injection's own clock; on the CPU runner by about 1.05 times.)

A chain of small ops (Linear(64, 64), x0.5; launch-bound on a GPU) runs in chunks of PER ops; between chunks the host does
  none  : nothing,
  sum   : UNITS x sum(range(1000)), InjectWork kind "host" (allocates and frees about 1000 ints per unit),
  spin  : a busy wait on perf_counter for as long as the last sum took (touches no memory).
Each run is REPS chunks, then a synchronize; each round runs none, sum, spin, none, and "none" is the mean of its two. For each round it prints the time
added over "none" per ms of the work's own clock: 1.0 means the host work costs its clock time, more means it slows
what follows it (the caches it evicts for sum, the GPU or driver after an idle gap for both).
usage: python3 host_cost_probe.py [cuda|cpu]
"""

import statistics as st
import sys
import time

import torch

DEV = sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu")
REPS, PER, UNITS, ROUNDS = 300, 20, 4, 7
x = torch.ones(4, 64, device=DEV)
w = torch.nn.Linear(64, 64).to(DEV)
last = [50e-6]


def work(kind):
    t0 = time.perf_counter()
    if kind == "sum":
        for _ in range(UNITS):
            sum(range(1000))
        last[0] = time.perf_counter() - t0
    elif kind == "spin":
        end = t0 + last[0]
        while time.perf_counter() < end:
            pass
    return time.perf_counter() - t0


def run(kind):
    spent, y = 0.0, x
    if DEV == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.no_grad():
        for _ in range(REPS):
            for _ in range(PER):
                y = w(y) * 0.5
            if kind != "none":
                spent += work(kind)
    if DEV == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0, spent


def main():
    print(f"device {DEV}, {REPS} chunks of {PER} x (Linear + mul), {UNITS} units of sum(range(1000)) per chunk")
    for kind in ("none", "sum", "spin"):
        run(kind)  # warm-up
    ratios = {"sum": [], "spin": []}
    for r in range(ROUNDS):
        t = {k: run(k if k != "none2" else "none") for k in ("none", "sum", "spin", "none2")}
        base = (t["none"][0] + t["none2"][0]) / 2
        cells = []
        for k in ("sum", "spin"):
            wall, clock = t[k]
            ratios[k].append((wall - base) / clock)
            cells.append(f"{k}: +{(wall - base) * 1e3:.2f} ms for {clock * 1e3:.2f} ms of clock = x{ratios[k][-1]:.2f}")
        print(f"round {r + 1}: none {base * 1e3:.1f} ms ({base / (REPS * PER * 2) * 1e6:.1f} us per op); " + "; ".join(cells))
    print("median cost per ms of own clock: " + ", ".join(f"{k} x{st.median(v):.2f}" for k, v in ratios.items()))


if __name__ == "__main__":
    main()
