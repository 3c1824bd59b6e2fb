"""The transforms: the 64-bit scan, constants, word and pair emulation, and the pass."""
