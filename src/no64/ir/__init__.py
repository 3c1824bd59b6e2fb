"""The bindings and op-agnostic IR helpers: the MLIR bindings and their compatibility seam, the
type converter, source locations, walks, and the word- and pair-arithmetic IR builders."""
