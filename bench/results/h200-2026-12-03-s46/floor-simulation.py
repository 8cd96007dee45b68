"""A model of sample_tiles' plain top-k candidate path (session 46), run on the repository's
machine, not the GPU: how many tokens of a 4096-token tile pass the floor, in how many of its
16 rounds some lane has one, how many per-lane loop steps the warp takes (the most any lane
has, summed over rounds), and how many 32-key merges the list takes, when the floor comes from
the first 3, 8 or 16 rounds (the lanes' two largest values; 32 lanes of 8 tokens a round).
Rows as the benchmark's peaked rows: N(0, 2) with 20 tokens boosted by +8..+14. Tempering is
left out (it preserves order; the floor's margin is a few ulps). Pure Python: python3 this."""
from candidate_model import L, LT, lane_floor, peaked_tiles, rounds_of


def scan(tile, floor_rounds):
    rounds = rounds_of(tile)
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
tiles = peaked_tiles()
for tile in tiles:
    for k in totals:
        totals[k] = [a + b for a, b in zip(totals[k], scan(tile, k))]
for k, v in totals.items():
    print(f"floor from {k:2d} rounds, per tile: passes {v[0] / len(tiles):.1f}, rounds with a pass "
          f"{v[1] / len(tiles):.1f}, per-lane loop steps {v[2] / len(tiles):.1f}, merges {v[3] / len(tiles):.2f}")
