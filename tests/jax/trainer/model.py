"""A next-token model in Flax linen: embedding of int64 token ids, a dense layer."""

import flax.linen as nn
import jax.numpy as jnp
from settings import VOCAB

import no64


class TinyLM(nn.Module):
    @nn.compact
    def __call__(self, tokens):
        tokens = no64.assume(tokens, 0, VOCAB - 1)  # token ids are < VOCAB
        x = nn.Embed(VOCAB, 16)(tokens)
        x = nn.relu(nn.Dense(32)(x))
        return nn.Dense(VOCAB)(x).astype(jnp.float32)
