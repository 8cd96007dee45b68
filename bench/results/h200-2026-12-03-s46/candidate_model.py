"""What the two models of sample_tiles' plain top-k candidate path share (session 46; run on
the repository's machine): the benchmark's peaked rows, N(0, 2) with 20 tokens boosted by
+8..+14 (three rows of 128256, seed 1), split in 4096-token tiles of 16 rounds, 32 lanes of 8
tokens a round, and the floor from the lanes' two largest values of the first rounds."""
import random

V, T, R, L, LT = 128256, 4096, 16, 32, 8


def peaked_tiles(rows=3, seed=1):
    """Every 4096-token tile of `rows` peaked rows, in order."""
    rng = random.Random(seed)
    tiles = []
    for _ in range(rows):
        x = [rng.gauss(0, 2) for _ in range(V)]
        for i in rng.sample(range(V), 20):
            x[i] += rng.uniform(8, 14)
        tiles.extend(x[t * T:(t + 1) * T] for t in range(V // T))
    return tiles


def rounds_of(tile):
    return [tile[r * 256:(r + 1) * 256] for r in range(R)]


def lane_floor(rounds):
    """The 32nd largest of the lanes' two largest values over `rounds`: 32 tokens are at or
    above it (tiles.rs' `loaded_floor`)."""
    tops = []
    for lane in range(L):
        vals = []
        for rd in rounds:
            vals.extend(rd[lane * LT:(lane + 1) * LT])
        vals.sort()
        tops.extend(vals[-2:])
    tops.sort(reverse=True)
    return tops[31]
