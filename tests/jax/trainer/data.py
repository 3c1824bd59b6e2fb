"""Token batches as int64 host data, with a 0/1 padding mask."""

import numpy as np
from settings import BATCH, SEQ, VOCAB


def batches(steps):
    rng = np.random.default_rng(0)
    for i in range(steps):
        tokens = rng.integers(0, VOCAB, (BATCH, SEQ + 1), dtype=np.int64)
        mask = (np.arange(SEQ)[None, :] < SEQ - (np.arange(BATCH)[:, None] + i) % 3).astype(np.int64)
        yield tokens, mask
