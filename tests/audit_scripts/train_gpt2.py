"""A few float64 training steps of the GPT-2 model of benchmarks/bench_gpt2.py.

``python train_gpt2.py [STEPS] [small|default]``: ``small`` (the default)
is 2 layers of d_model 64, 4 heads, a vocabulary of 512 and 32 positions;
``default`` is the benchmark's own sizes (d_model 768, vocabulary 50257,
128 positions) with 2 layers.  Parameters, Adam's moments and the data are
real arrays; the step is the benchmark's ``train_step``, jitted.
"""

import importlib.util
import sys
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_gpt2.py"
_spec = importlib.util.spec_from_file_location("bench_gpt2", _BENCH)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench  # its dataclasses look their module up
_spec.loader.exec_module(bench)

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
SIZE = sys.argv[2] if len(sys.argv) > 2 else "small"
if SIZE == "small":
    CFG = bench.GPTConfig(layers=2, d_model=64, heads=4, vocab=512, seq=32, batch=2)
else:
    CFG = bench.GPTConfig(layers=2)


@jax.jit
def step(params, opt_state, tokens, targets):
    return bench.train_step(params, opt_state, tokens, targets, CFG)


def main() -> None:
    rng = np.random.default_rng(0)
    params = jax.tree.map(np.asarray, bench.init_params(jax.random.key(0), CFG))
    opt_state = {"step": np.int64(0), "m": jax.tree.map(np.zeros_like, params),
                 "v": jax.tree.map(np.zeros_like, params)}
    for i in range(STEPS):
        tokens = rng.integers(0, CFG.vocab, (CFG.batch, CFG.seq))
        targets = np.roll(tokens, -1, axis=1)
        loss, params, opt_state = step(params, opt_state, tokens, targets)
        print(f"step {i} loss {float(loss):.4f}")


if __name__ == "__main__":
    main()
