"""A model of sample_tiles' plain top-k candidate path (session 46), run on the repository's
machine, not the GPU: how many tokens of a 4096-token tile pass the floor, in how many of its
16 rounds some lane has one, how many per-lane loop steps the warp takes (the most any lane
has, summed over rounds), and how many 32-key merges the list takes, when the floor comes from
the first 3, 8 or 16 rounds (the lanes' two largest values; 32 lanes of 8 tokens a round).
Rows as the benchmark's peaked rows: N(0, 2) with 20 tokens boosted by +8..+14. Tempering is
left out (it preserves order; the floor's margin is a few ulps). Pure Python: python3 this."""
import random

random.seed(1)
V, T, R, L, LT = 128256, 4096, 16, 32, 8


def lane_floor(rounds):
    tops = []
    for lane in range(L):
        vals = []
        for rd in rounds:
            vals.extend(rd[lane * LT:(lane + 1) * LT])
        vals.sort()
        tops.extend(vals[-2:])
    tops.sort(reverse=True)
    return tops[31]


def scan(tile, floor_rounds):
    rounds = [tile[r * 256:(r + 1) * 256] for r in range(R)]
    floor = lane_floor(rounds[:floor_rounds])
    top, buffer, threshold = [], [], float("-inf")
    passes = rounds_with_pass = loop_steps = merges = 0
    for y in rounds:
        f = max(floor, threshold)
        per_lane = [sum(1 for v in y[lane * LT:(lane + 1) * LT] if v >= f) for lane in range(L)]
        passes += sum(per_lane)
        rounds_with_pass += sum(per_lane) > 0
        loop_steps += max(per_lane)
        buffer.extend(v for v in y if v >= f and v > threshold)
        while len(buffer) >= 32:
            merges += 1
            top = sorted(top + buffer[:32], reverse=True)[:32]
            buffer = buffer[32:]
            threshold = top[31]
    return passes, rounds_with_pass, loop_steps, merges


totals = {3: [0] * 4, 8: [0] * 4, 16: [0] * 4}
tiles = 0
for _ in range(3):
    x = [random.gauss(0, 2) for _ in range(V)]
    for i in random.sample(range(V), 20):
        x[i] += random.uniform(8, 14)
    for t in range(V // T):
        tiles += 1
        for k in totals:
            totals[k] = [a + b for a, b in zip(totals[k], scan(x[t * T:(t + 1) * T], k))]
for k, v in totals.items():
    print(f"floor from {k:2d} rounds, per tile: passes {v[0] / tiles:.1f}, rounds with a pass "
          f"{v[1] / tiles:.1f}, per-lane loop steps {v[2] / tiles:.1f}, merges {v[3] / tiles:.2f}")
