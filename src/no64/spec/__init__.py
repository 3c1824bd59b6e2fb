"""The op schema: what an op table entry holds (OpSpec), the lookup, the protocols that
transfer functions and rules are typed against, and the range lattice they speak."""
