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


class TinyGPT(nn.Module):
    """One causal self-attention block with dropout over embedded token ids."""

    @nn.compact
    def __call__(self, tokens, train=False):
        tokens = no64.assume(tokens, 0, VOCAB - 1)
        x = nn.Embed(VOCAB, 16)(tokens)
        mask = nn.make_causal_mask(tokens)
        x = x + nn.SelfAttention(num_heads=2, dropout_rate=0.1, deterministic=not train, use_bias=False)(x, mask=mask)
        x = x + nn.Dropout(0.1, deterministic=not train)(nn.relu(nn.Dense(16)(x)))
        return nn.Dense(VOCAB)(nn.LayerNorm()(x))
