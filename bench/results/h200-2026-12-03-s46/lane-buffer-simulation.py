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
from candidate_model import L, LT, lane_floor, peaked_tiles, rounds_of


def scan(tile, floor_rounds, capacity):
    rounds = rounds_of(tile)
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


tiles = peaked_tiles()
for floor_rounds in (3, 16):
    for capacity in (0, 2, 4, 8):
        tot = [0, 0, 0]
        for tile in tiles:
            tot = [a + b for a, b in zip(tot, scan(tile, floor_rounds, capacity))]
        n = len(tiles)
        print(f"floor from {floor_rounds:2d} rounds, lane buffer {capacity}: per tile {tot[0] / n:.1f} "
              f"warp-wide flushes, {tot[1] / n:.2f} merges, {tot[2] / n:.1f} keys buffered")
