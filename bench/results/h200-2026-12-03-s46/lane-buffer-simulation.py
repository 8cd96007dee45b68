"""A model, run on the repository's machine, of an untried form of sample_tiles' plain top-k
candidate path (session 46): each lane keeps the keys that pass the floor in a private buffer
of C keys, and the warp merges every lane's buffer into its list only when a lane's would
overflow, and at the tile's end. Counts per 4096-token tile: warp-wide flushes (the rounds that
would run the vote, prefix sum and merges), 32-key merges, and keys buffered; the floor comes
from the first 3 rounds (as now) or from all 16. The same rows and the same list and floor
rules as floor-simulation.py. C = 0 flushes in every round with a passing token, which is
where today's path takes its warp-wide steps (vote, prefix sum, stores); today's shared buffer
merges only every 32 keys (3.1 merges a tile), so C = 0's merge count is not today's. Pure
Python: python3 this."""
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


def scan(tile, floor_rounds, capacity):
    rounds = [tile[r * 256:(r + 1) * 256] for r in range(R)]
    floor = lane_floor(rounds[:floor_rounds])
    top, threshold = [], float("-inf")
    lanes = [[] for _ in range(L)]
    flushes = merges = buffered = 0

    def flush():
        nonlocal top, threshold, merges
        keys = [k for lane in lanes for k in lane if k > threshold]
        for lane in lanes:
            lane.clear()
        while keys:
            merges += 1
            top = sorted(top + keys[:32], reverse=True)[:32]
            keys = keys[32:]
            if len(top) >= 32:
                threshold = top[31]

    for y in rounds:
        f = max(floor, threshold)
        passing = [[v for v in y[lane * LT:(lane + 1) * LT] if v >= f and v > threshold] for lane in range(L)]
        buffered += sum(len(p) for p in passing)
        if any(len(lanes[i]) + len(passing[i]) > capacity for i in range(L)):
            for i in range(L):
                lanes[i].extend(passing[i])
            flushes += 1
            flush()
        else:
            for i in range(L):
                lanes[i].extend(passing[i])
    if any(lanes):
        flushes += 1
        flush()
    return flushes, merges, buffered


rows = []
for _ in range(3):
    x = [random.gauss(0, 2) for _ in range(V)]
    for i in random.sample(range(V), 20):
        x[i] += random.uniform(8, 14)
    rows.append(x)
for floor_rounds in (3, 16):
    for capacity in (0, 2, 4, 8):
        tot, tiles = [0, 0, 0], 0
        for x in rows:
            for t in range(V // T):
                tiles += 1
                tot = [a + b for a, b in zip(tot, scan(x[t * T:(t + 1) * T], floor_rounds, capacity))]
        print(f"floor from {floor_rounds:2d} rounds, lane buffer {capacity}: per tile {tot[0] / tiles:.1f} "
              f"warp-wide flushes, {tot[1] / tiles:.2f} merges, {tot[2] / tiles:.1f} keys buffered")
