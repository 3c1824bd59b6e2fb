"""Float64 factorizations written out as StableHLO loops of float64 ops.

A LAPACK custom call is opaque: under ``float_policy="pairs"`` it would be
handed its float64 operands rounded to f32 and computed by its f32 sibling,
which loses what pairs are for (a 50 x 50 solve of condition 1e8 is then
off by tens of percent).  The pair step therefore first replaces the calls
it knows (:func:`expand_lapack`) by a call to a private function of
ordinary float64 StableHLO ops -- a ``while`` loop over the columns, counted
from a constant to a constant -- which the pair rewrite then computes on
pairs like any other function:

* ``lapack_dgetrf_ffi`` (an LU factorization with partial pivoting, what
  ``jnp.linalg.solve``, ``inv``, ``det`` and ``jax.scipy.linalg.lu_factor``
  call) on one square matrix: the pivot of each column is its first element
  of largest magnitude, as LAPACK's ``idamax`` picks it; the pivots are
  LAPACK's (1-based row interchanges) and ``info`` is the 1-based column of
  the first exactly zero pivot (0 if none);
* ``lapack_dtrsm_ffi`` (a triangular solve ``A X = B`` or ``A^T X = B`` with
  ``A`` on the left; lower or upper, unit diagonal or not) on one matrix;
* ``lapack_dpotrf_ffi`` (a Cholesky factorization, lower or upper: what
  ``jnp.linalg.cholesky`` and ``jax.scipy.linalg.cho_factor`` call) on one
  matrix; ``info`` is LAPACK's (the order of the first leading minor that
  is not positive definite).

Other calls, batched ones (``num_batch_dims`` other than 0) and other
variants are left to the pair rule (computed in f32, recorded as
``precision-reduced``).

A device that keeps float64 but refuses its LU factorization (XLA:TPU:
"Only F32 and C64 types are implemented in LuDecomposition") gets the same
loop, in float64, from the ``unfold`` rule of ``custom_call``
(:func:`lu`, applied by :mod:`no64.transforms.legalize` where the target's
profile refuses the op form :attr:`~no64.kinds.OpForm.LU`): XLA:TPU's
``LuDecomposition`` (JAX's TPU lowering of ``lu``: the factors, the 0-based
row interchanges and the permutation they make) and LAPACK's
``lapack_dgetrf_ffi`` (a module lowered for the CPU), on square matrices,
batched ones by a counted loop over the batch calling the loop of one
matrix.

The functions do ``O(n^3)`` work in ``n`` steps, as LAPACK's unblocked
algorithms do; the results differ from LAPACK's blocked ones only by
rounding.
"""

from __future__ import annotations

import math

from ..ir import words as W
from ..ir._compat import attribute_dict
from ..ir._mlir import as_operation, defining_op, enum_word, func, ir, stablehlo
from ..kinds import OpForm
from ..spec.protocols import Legalization
from ..spec.registry import Computes, form_of, spec_of
from ..spec.util import install_function
from ..spec.walk import all_ops, functions, is_public, symbol_name

__all__ = ["expand_lapack", "form", "lu", "refinable", "refine_solves", "REFINE_STEPS", "REFINE_TOLERANCE"]

_GETRF = "lapack_dgetrf_ffi"
#: XLA:TPU's LU factorization (JAX's TPU lowering of ``lu``).
_TPU_LU = "LuDecomposition"
#: The calls that factor a matrix as LU (of any element type).
_LU_CALLS = frozenset({_TPU_LU, "lapack_sgetrf_ffi", _GETRF, "lapack_cgetrf_ffi", "lapack_zgetrf_ffi",
                       "cusolver_getrf_ffi", "hipsolver_getrf_ffi"})
_TRSM = "lapack_dtrsm_ffi"
#: LAPACK's triangular solves (of any element type).
_TRSM_CALLS = frozenset({"lapack_strsm_ffi", _TRSM, "lapack_ctrsm_ffi", "lapack_ztrsm_ffi"})
_POTRF = "lapack_dpotrf_ffi"


def _counted_while(results: str, carried: str, types: str, n: int) -> str:
    """The head of a ``while`` loop whose first carried value ``%k`` (i32,
    from ``%zero``) counts its ``n`` iterations, up to the start of its body
    (which has ``%z`` = 0 and ``%one`` = 1 and ends by returning ``%k + 1``)."""
    SI, SB = "tensor<i32>", "tensor<i1>"
    return f"""  {results} = stablehlo.while({carried}) : {types}
  cond {{
    %n = stablehlo.constant dense<{n}> : {SI}
    %c = stablehlo.compare LT, %k, %n, SIGNED : ({SI}, {SI}) -> {SB}
    stablehlo.return %c : {SB}
  }} do {{
    %z = stablehlo.constant dense<0> : {SI}
    %one = stablehlo.constant dense<1> : {SI}"""


def _maybe_transposed(result: str, value: str, matrix: str, transpose: bool) -> str:
    """``result`` = the square ``value`` transposed, or as it is."""
    if transpose:
        return f"{result} = stablehlo.transpose {value}, dims = [1, 0] : ({matrix}) -> {matrix}"
    return f"{result} = stablehlo.reshape {value} : ({matrix}) -> {matrix}"


def _getrf_text(n: int, tpu: bool = False) -> str:
    """LU with partial pivoting of an ``n x n`` float64 matrix: the factors,
    LAPACK's pivots and ``info`` -- or, ``tpu``, the factors, the 0-based
    pivots and the permutation they make (what ``LuDecomposition`` returns)."""
    M, V, VI = f"tensor<{n}x{n}xf64>", f"tensor<{n}xf64>", f"tensor<{n}xi32>"
    MI, MB, VB = f"tensor<{n}x{n}xi32>", f"tensor<{n}x{n}xi1>", f"tensor<{n}xi1>"
    S, SI, SB = "tensor<f64>", "tensor<i32>", "tensor<i1>"
    carried, types = "%k = %zero, %m = %a, %p = %piv0, %info = %zero", f"{SI}, {M}, {VI}, {SI}"
    results, returned = f"{M}, {VI}, {SI}", f"%r#1, %r#2, %r#3 : {M}, {VI}, {SI}"
    stored, start, permute, permuted = "%piv1", "", "", ""
    if tpu:  # the permutation carried too; the pivots 0-based
        carried, types = carried + ", %perm = %perm0", types + f", {VI}"
        results, returned = f"{M}, {VI}, {VI}", f"%r#1, %r#2, %r#4 : {M}, {VI}, {VI}"
        stored, start, permuted = "%piv", f"\n  %perm0 = stablehlo.iota dim = 0 : {VI}", ", %perm2"
        permute = f"""
    %pk = stablehlo.dynamic_slice %perm, %k, sizes = [1] : ({VI}, {SI}) -> tensor<1xi32>
    %pp = stablehlo.dynamic_slice %perm, %piv, sizes = [1] : ({VI}, {SI}) -> tensor<1xi32>
    %perm1 = stablehlo.dynamic_update_slice %perm, %pk, %piv : ({VI}, tensor<1xi32>, {SI}) -> {VI}
    %perm2 = stablehlo.dynamic_update_slice %perm1, %pp, %k : ({VI}, tensor<1xi32>, {SI}) -> {VI}"""
    return f"""
func.func private @getrf(%a: {M}) -> ({results}) {{
  %zero = stablehlo.constant dense<0> : {SI}
  %piv0 = stablehlo.constant dense<0> : {VI}{start}
{_counted_while(f"%r:{len(types.split(', '))}", carried, types, n)}
    %nsc = stablehlo.constant dense<{n}> : {SI}
    %nvec = stablehlo.constant dense<{n}> : {VI}
    %iota = stablehlo.iota dim = 0 : {VI}
    %kb = stablehlo.broadcast_in_dim %k, dims = [] : ({SI}) -> {VI}
    %colm = stablehlo.dynamic_slice %m, %z, %k, sizes = [{n}, 1] : ({M}, {SI}, {SI}) -> tensor<{n}x1xf64>
    %col = stablehlo.reshape %colm : (tensor<{n}x1xf64>) -> {V}
    %acol = stablehlo.abs %col : {V}
    %from_k = stablehlo.compare GE, %iota, %kb, SIGNED : ({VI}, {VI}) -> {VB}
    %minus1 = stablehlo.constant dense<-1.0> : {V}
    %cand = stablehlo.select %from_k, %acol, %minus1 : {VB}, {V}
    %ninf = stablehlo.constant dense<0xFFF0000000000000> : {S}
    %mx = stablehlo.reduce(%cand init: %ninf) applies stablehlo.maximum across dimensions = [0] : ({V}, {S}) -> {S}
    %mxb = stablehlo.broadcast_in_dim %mx, dims = [] : ({S}) -> {V}
    %ismax = stablehlo.compare EQ, %cand, %mxb, FLOAT : ({V}, {V}) -> {VB}
    %idx = stablehlo.select %ismax, %iota, %nvec : {VB}, {VI}
    %first = stablehlo.reduce(%idx init: %nsc) applies stablehlo.minimum across dimensions = [0] : ({VI}, {SI}) -> {SI}
    %none = stablehlo.compare EQ, %first, %nsc, SIGNED : ({SI}, {SI}) -> {SB}
    %piv = stablehlo.select %none, %k, %first : {SB}, {SI}
    %rowk = stablehlo.dynamic_slice %m, %k, %z, sizes = [1, {n}] : ({M}, {SI}, {SI}) -> tensor<1x{n}xf64>
    %rowp = stablehlo.dynamic_slice %m, %piv, %z, sizes = [1, {n}] : ({M}, {SI}, {SI}) -> tensor<1x{n}xf64>
    %m1a = stablehlo.dynamic_update_slice %m, %rowk, %piv, %z : ({M}, tensor<1x{n}xf64>, {SI}, {SI}) -> {M}
    %m1 = stablehlo.dynamic_update_slice %m1a, %rowp, %k, %z : ({M}, tensor<1x{n}xf64>, {SI}, {SI}) -> {M}
    %piv1 = stablehlo.add %piv, %one : {SI}
    %piv1v = stablehlo.reshape {stored} : ({SI}) -> tensor<1xi32>{permute}
    %p2 = stablehlo.dynamic_update_slice %p, %piv1v, %k : ({VI}, tensor<1xi32>, {SI}) -> {VI}
    %urow = stablehlo.reshape %rowp : (tensor<1x{n}xf64>) -> {V}
    %pvs = stablehlo.dynamic_slice %urow, %k, sizes = [1] : ({V}, {SI}) -> tensor<1xf64>
    %pv = stablehlo.reshape %pvs : (tensor<1xf64>) -> {S}
    %fzero = stablehlo.constant dense<0.0> : {S}
    %isz = stablehlo.compare EQ, %pv, %fzero, FLOAT : ({S}, {S}) -> {SB}
    %noinfo = stablehlo.compare EQ, %info, %z, SIGNED : ({SI}, {SI}) -> {SB}
    %setinfo = stablehlo.and %isz, %noinfo : {SB}
    %k1 = stablehlo.add %k, %one : {SI}
    %info2 = stablehlo.select %setinfo, %k1, %info : {SB}, {SI}
    %col2m = stablehlo.dynamic_slice %m1, %z, %k, sizes = [{n}, 1] : ({M}, {SI}, {SI}) -> tensor<{n}x1xf64>
    %col2 = stablehlo.reshape %col2m : (tensor<{n}x1xf64>) -> {V}
    %pvb = stablehlo.broadcast_in_dim %pv, dims = [] : ({S}) -> {V}
    %q = stablehlo.divide %col2, %pvb : {V}
    %below = stablehlo.compare GT, %iota, %kb, SIGNED : ({VI}, {VI}) -> {VB}
    %nz = stablehlo.not %isz : {SB}
    %nzb = stablehlo.broadcast_in_dim %nz, dims = [] : ({SB}) -> {VB}
    %scale = stablehlo.and %below, %nzb : {VB}
    %l = stablehlo.select %scale, %q, %col2 : {VB}, {V}
    %lm = stablehlo.reshape %l : ({V}) -> tensor<{n}x1xf64>
    %m2a = stablehlo.dynamic_update_slice %m1, %lm, %z, %k : ({M}, tensor<{n}x1xf64>, {SI}, {SI}) -> {M}
    %zv = stablehlo.constant dense<0.0> : {V}
    %lz = stablehlo.select %below, %l, %zv : {VB}, {V}
    %uz = stablehlo.select %below, %urow, %zv : {VB}, {V}
    %lb = stablehlo.broadcast_in_dim %lz, dims = [0] : ({V}) -> {M}
    %ub = stablehlo.broadcast_in_dim %uz, dims = [1] : ({V}) -> {M}
    %prod = stablehlo.multiply %lb, %ub : {M}
    %upd = stablehlo.subtract %m2a, %prod : {M}
    %ri = stablehlo.iota dim = 0 : {MI}
    %ci = stablehlo.iota dim = 1 : {MI}
    %kbb = stablehlo.broadcast_in_dim %k, dims = [] : ({SI}) -> {MI}
    %rgt = stablehlo.compare GT, %ri, %kbb, SIGNED : ({MI}, {MI}) -> {MB}
    %cgt = stablehlo.compare GT, %ci, %kbb, SIGNED : ({MI}, {MI}) -> {MB}
    %trail = stablehlo.and %rgt, %cgt : {MB}
    %m2 = stablehlo.select %trail, %upd, %m2a : {MB}, {M}
    stablehlo.return %k1, %m2, %p2, %info2{permuted} : {types}
  }}
  return {returned}
}}
"""


def _potrf_text(n: int, lower: bool) -> str:
    """Cholesky factor of an ``n x n`` float64 matrix, column by column: the
    lower factor in the lower triangle (the upper one as it was), or for
    ``lower=False`` the upper factor ``U = L^T`` of the upper triangle,
    computed as the lower factor of the transpose.  ``info`` is the
    1-based order of the first leading minor found not positive definite
    (0 if none)."""
    M, V, VI = f"tensor<{n}x{n}xf64>", f"tensor<{n}xf64>", f"tensor<{n}xi32>"
    MI, MB, VB = f"tensor<{n}x{n}xi32>", f"tensor<{n}x{n}xi1>", f"tensor<{n}xi1>"
    S, SI, SB = "tensor<f64>", "tensor<i32>", "tensor<i1>"
    flip_in = _maybe_transposed("%a", "%a0", M, not lower)
    flip_out = _maybe_transposed("%out", "%r#1", M, not lower)
    return f"""
func.func private @potrf(%a0: {M}) -> ({M}, {SI}) {{
  {flip_in}
  %zero = stablehlo.constant dense<0> : {SI}
{_counted_while("%r:3", "%k = %zero, %m = %a, %info = %zero", f"{SI}, {M}, {SI}", n)}
    %iota = stablehlo.iota dim = 0 : {VI}
    %kb = stablehlo.broadcast_in_dim %k, dims = [] : ({SI}) -> {VI}
    %rowm = stablehlo.dynamic_slice %m, %k, %z, sizes = [1, {n}] : ({M}, {SI}, {SI}) -> tensor<1x{n}xf64>
    %row = stablehlo.reshape %rowm : (tensor<1x{n}xf64>) -> {V}
    %ci = stablehlo.iota dim = 1 : {MI}
    %kbb = stablehlo.broadcast_in_dim %k, dims = [] : ({SI}) -> {MI}
    %done = stablehlo.compare LT, %ci, %kbb, SIGNED : ({MI}, {MI}) -> {MB}
    %rowb = stablehlo.broadcast_in_dim %row, dims = [1] : ({V}) -> {M}
    %prod = stablehlo.multiply %m, %rowb : {M}
    %zm = stablehlo.constant dense<0.0> : {M}
    %terms = stablehlo.select %done, %prod, %zm : {MB}, {M}
    %fzero = stablehlo.constant dense<0.0> : {S}
    %sum = stablehlo.reduce(%terms init: %fzero) applies stablehlo.add across dimensions = [1] : ({M}, {S}) -> {V}
    %colm = stablehlo.dynamic_slice %m, %z, %k, sizes = [{n}, 1] : ({M}, {SI}, {SI}) -> tensor<{n}x1xf64>
    %col = stablehlo.reshape %colm : (tensor<{n}x1xf64>) -> {V}
    %c = stablehlo.subtract %col, %sum : {V}
    %dks = stablehlo.dynamic_slice %c, %k, sizes = [1] : ({V}, {SI}) -> tensor<1xf64>
    %dk = stablehlo.reshape %dks : (tensor<1xf64>) -> {S}
    %pd = stablehlo.compare GT, %dk, %fzero, FLOAT : ({S}, {S}) -> {SB}
    %notpd = stablehlo.not %pd : {SB}
    %noinfo = stablehlo.compare EQ, %info, %z, SIGNED : ({SI}, {SI}) -> {SB}
    %setinfo = stablehlo.and %notpd, %noinfo : {SB}
    %k1 = stablehlo.add %k, %one : {SI}
    %info2 = stablehlo.select %setinfo, %k1, %info : {SB}, {SI}
    %d = stablehlo.sqrt %dk : {S}
    %db = stablehlo.broadcast_in_dim %d, dims = [] : ({S}) -> {V}
    %q = stablehlo.divide %c, %db : {V}
    %below = stablehlo.compare GT, %iota, %kb, SIGNED : ({VI}, {VI}) -> {VB}
    %diag = stablehlo.compare EQ, %iota, %kb, SIGNED : ({VI}, {VI}) -> {VB}
    %keep = stablehlo.select %diag, %db, %col : {VB}, {V}
    %new = stablehlo.select %below, %q, %keep : {VB}, {V}
    %newm = stablehlo.reshape %new : ({V}) -> tensor<{n}x1xf64>
    %m2 = stablehlo.dynamic_update_slice %m, %newm, %z, %k : ({M}, tensor<{n}x1xf64>, {SI}, {SI}) -> {M}
    stablehlo.return %k1, %m2, %info2 : {SI}, {M}, {SI}
  }}
  {flip_out}
  return %out, %r#2 : {M}, {SI}
}}
"""


def _trsm_text(n: int, m: int, lower: bool, unit: bool, transpose: bool = False) -> str:
    """``X`` with ``A X = B`` (``A^T X = B`` if ``transpose``), ``A``
    ``n x n`` lower or upper triangular (the other triangle not read), ``B``
    ``n x m``: row by row, each row from the rows solved before it."""
    if transpose:  # A^T is triangular the other way
        lower = not lower
    A, B, V = f"tensor<{n}x{n}xf64>", f"tensor<{n}x{m}xf64>", f"tensor<{n}xf64>"
    R, VI, VB = f"tensor<{m}xf64>", f"tensor<{n}xi32>", f"tensor<{n}xi1>"
    S, SI = "tensor<f64>", "tensor<i32>"
    if lower:
        row = "    %i = stablehlo.add %k, %z : " + SI
        solved = "LT"
    else:
        row = f"    %last = stablehlo.constant dense<{n - 1}> : {SI}\n    %i = stablehlo.subtract %last, %k : {SI}"
        solved = "GT"
    if unit:
        divide, xi = "", "%r"
    else:
        xi = "%xi"
        divide = f"""    %ds = stablehlo.dynamic_slice %arow, %i, sizes = [1] : ({V}, {SI}) -> tensor<1xf64>
    %d = stablehlo.reshape %ds : (tensor<1xf64>) -> {S}
    %db = stablehlo.broadcast_in_dim %d, dims = [] : ({S}) -> {R}
    %xi = stablehlo.divide %r, %db : {R}"""
    return f"""
func.func private @trsm(%a0: {A}, %b: {B}) -> {B} {{
  {_maybe_transposed("%a", "%a0", A, transpose)}
  %zero = stablehlo.constant dense<0> : {SI}
  %x0 = stablehlo.constant dense<0.0> : {B}
{_counted_while("%w:2", "%k = %zero, %x = %x0", f"{SI}, {B}", n)}
{row}
    %arowm = stablehlo.dynamic_slice %a, %i, %z, sizes = [1, {n}] : ({A}, {SI}, {SI}) -> tensor<1x{n}xf64>
    %arow = stablehlo.reshape %arowm : (tensor<1x{n}xf64>) -> {V}
    %jota = stablehlo.iota dim = 0 : {VI}
    %ib = stablehlo.broadcast_in_dim %i, dims = [] : ({SI}) -> {VI}
    %known = stablehlo.compare {solved}, %jota, %ib, SIGNED : ({VI}, {VI}) -> {VB}
    %zv = stablehlo.constant dense<0.0> : {V}
    %ar = stablehlo.select %known, %arow, %zv : {VB}, {V}
    %arb = stablehlo.broadcast_in_dim %ar, dims = [0] : ({V}) -> {B}
    %prod = stablehlo.multiply %arb, %x : {B}
    %fzero = stablehlo.constant dense<0.0> : {S}
    %s = stablehlo.reduce(%prod init: %fzero) applies stablehlo.add across dimensions = [0] : ({B}, {S}) -> {R}
    %browm = stablehlo.dynamic_slice %b, %i, %z, sizes = [1, {m}] : ({B}, {SI}, {SI}) -> tensor<1x{m}xf64>
    %brow = stablehlo.reshape %browm : (tensor<1x{m}xf64>) -> {R}
    %r = stablehlo.subtract %brow, %s : {R}
{divide}
    %xim = stablehlo.reshape {xi} : ({R}) -> tensor<1x{m}xf64>
    %x2 = stablehlo.dynamic_update_slice %x, %xim, %i, %z : ({B}, tensor<1x{m}xf64>, {SI}, {SI}) -> {B}
    %k1 = stablehlo.add %k, %one : {SI}
    stablehlo.return %k1, %x2 : {SI}, {B}
  }}
  return %w#1 : {B}
}}
"""


def _static_2d(t: ir.Type) -> list[int] | None:
    if not isinstance(t, ir.RankedTensorType) or not ir.RankedTensorType(t).has_static_shape:
        return None
    shape = list(ir.RankedTensorType(t).shape)
    if len(shape) != 2 or not isinstance(ir.RankedTensorType(t).element_type, ir.F64Type):
        return None
    return shape


def _unbatched(op: ir.Operation) -> bool:
    attrs = attribute_dict(op)
    fa = attrs.get("mhlo.frontend_attributes")
    if fa is None:
        return True
    d = ir.DictAttr(fa)
    if "num_batch_dims" not in d:
        return True
    return ir.StringAttr(d["num_batch_dims"]).value == "0"


def _char(config: ir.DictAttr, key: str) -> str | None:
    if key not in config:
        return None
    return chr(ir.IntegerAttr(config[key]).value)


def _square(op: ir.Operation) -> int | None:
    """``n`` where ``op`` takes one ``n x n`` float64 matrix and returns its
    type first; else None."""
    shape = _static_2d(op.operands[0].type)
    if shape is None or shape[0] != shape[1] or op.results[0].type != op.operands[0].type:
        return None
    return shape[0]


def _config(op: ir.Operation) -> ir.DictAttr | None:
    """The call's ``mhlo.backend_config`` dictionary (LAPACK's flags)."""
    attr = attribute_dict(op).get("mhlo.backend_config")
    return ir.DictAttr(attr) if isinstance(attr, ir.DictAttr) else None


def _text_for(op: ir.Operation, target: str) -> tuple[str, str] | None:
    """The helper's text and symbol for ``op``, or None where this step does
    not write the call out."""
    if not _unbatched(op):
        return None
    if target == _GETRF and len(op.operands) == 1 and len(op.results) == 3:
        n = _square(op)
        return None if n is None else (_getrf_text(n), f"no64.getrf.{n}")
    if target == _TRSM and len(op.operands) == 2 and len(op.results) == 1:
        a, b = (_static_2d(x.type) for x in op.operands)
        if a is None or b is None or a[0] != a[1] or b[0] != a[0] or op.results[0].type != op.operands[1].type:
            return None
        config = _config(op)
        if config is None:
            return None
        side, uplo, trans, diag = (_char(config, k) for k in ("side", "uplo", "trans_x", "diag"))
        if side != "L" or trans not in ("N", "T", "C") or uplo not in ("L", "U") or diag not in ("U", "N"):
            return None
        lower, unit, transpose = uplo == "L", diag == "U", trans != "N"  # (real: C is T)
        symbol = (f"no64.trsm.{'lower' if lower else 'upper'}{'.unit' if unit else ''}"
                  f"{'.transposed' if transpose else ''}.{a[0]}x{b[1]}")
        return _trsm_text(a[0], b[1], lower, unit, transpose), symbol
    if target == _POTRF and len(op.operands) == 1 and len(op.results) == 2:
        n, config = _square(op), _config(op)
        uplo = None if config is None else _char(config, "uplo")
        if n is None or uplo not in ("L", "U"):
            return None
        return _potrf_text(n, uplo == "L"), f"no64.potrf.{'lower' if uplo == 'L' else 'upper'}.{n}"
    return None


def expand_lapack(root: ir.Operation) -> list[tuple[str, str, ir.Location, str]]:
    """Replace each LAPACK float64 call of ``root`` this step can write out by
    a call to a private StableHLO function computing the same (see the
    module docstring).  Returns ``(op name, target, location, helper)`` per
    call replaced."""
    found: list[tuple[ir.Operation, str]] = []

    def visit(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    child = as_operation(child)
                    if spec_of(child.name).external:
                        target = ir.StringAttr(child.attributes["call_target_name"]).value
                        if target in (_GETRF, _TRSM, _POTRF):
                            found.append((child, target))
                    visit(child)

    visit(root)
    done: list[tuple[str, str, ir.Location, str]] = []
    for op, target in found:
        made = _text_for(op, target)
        if made is None:
            continue
        text, symbol = made
        name, results = install_function(op, text, symbol)
        with ir.InsertionPoint(op), op.location:
            call = func.CallOp(results, ir.FlatSymbolRefAttr.get(name), list(op.operands))
        for old, new in zip(op.results, call.results):
            old.replace_all_uses_with(new)
        done.append((op.name, target, op.location, name))
        op.erase()
    return done


# ------------------------------------------- a device that refuses float64 LU
def _batched_text(inner: str, batch: int, n: int, results: list[tuple[list[int], str]]) -> str:
    """A function of a stack of ``batch`` ``n x n`` float64 matrices that calls
    ``@inner`` on each in a counted loop and stacks its results (each of the
    unbatched shape and element type given); ``@inner`` is declared after it
    (for the parser: :func:`~no64.spec.util.install_function` takes the first
    function only)."""
    SI = "tensor<i32>"
    stacked = [f"tensor<{'x'.join(map(str, [batch, *shape]))}x{elem}>" for shape, elem in results]
    one = [f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{elem}>" for shape, elem in results]
    lead = [f"tensor<{'x'.join(map(str, [1, *shape]))}x{elem}>" for shape, elem in results]
    A = f"tensor<{batch}x{n}x{n}xf64>"
    inits = "\n".join(f"  %o{i} = stablehlo.constant dense<0{'.0' if elem == 'f64' else ''}> : {t}"
                      for i, ((_, elem), t) in enumerate(zip(results, stacked)))
    carried = ", ".join(["%k = %zero", *(f"%x{i} = %o{i}" for i in range(len(results)))])
    types = ", ".join([SI, *stacked])
    body = [f"    %s = stablehlo.dynamic_slice %a, %k, %z, %z, sizes = [1, {n}, {n}] : ({A}, {SI}, {SI}, {SI}) "
            f"-> tensor<1x{n}x{n}xf64>",
            f"    %m = stablehlo.reshape %s : (tensor<1x{n}x{n}xf64>) -> tensor<{n}x{n}xf64>",
            f"    %c:{len(results)} = func.call @{inner}(%m) : (tensor<{n}x{n}xf64>) -> ({', '.join(one)})"]
    for i, ((shape, _), t1, tl, ts) in enumerate(zip(results, one, lead, stacked)):
        at = ", ".join(["%k", *["%z"] * len(shape)])
        body += [f"    %u{i} = stablehlo.reshape %c#{i} : ({t1}) -> {tl}",
                 f"    %y{i} = stablehlo.dynamic_update_slice %x{i}, %u{i}, {at} : ({ts}, {tl}, "
                 f"{', '.join([SI] * (len(shape) + 1))}) -> {ts}"]
    body.append("    %k1 = stablehlo.add %k, %one : " + SI)
    body.append(f"    stablehlo.return {', '.join(['%k1', *(f'%y{i}' for i in range(len(results)))])} : {types}")
    body_text = "\n".join(body)
    out = ", ".join(f"%r#{i + 1}" for i in range(len(results)))
    return f"""
func.func private @batched(%a: {A}) -> ({', '.join(stacked)}) {{
  %zero = stablehlo.constant dense<0> : {SI}
{inits}
{_counted_while(f"%r:{len(results) + 1}", carried, types, batch)}
{body_text}
  }}
  return {out} : {', '.join(stacked)}
}}
func.func private @{inner}(tensor<{n}x{n}xf64>) -> ({', '.join(one)})
"""


def _call_target(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["call_target_name"]).value


def form(op: ir.Operation) -> OpForm | None:
    """:attr:`~no64.kinds.OpForm.LU` where ``op`` (a ``custom_call``) factors
    a matrix as LU, :attr:`~no64.kinds.OpForm.TRIANGULAR_SOLVE` where it is
    LAPACK's triangular solve, else None (the form the op table gives
    ``custom_call``)."""
    if "call_target_name" not in op.attributes:
        return None
    target = _call_target(op)
    if target in _LU_CALLS:
        return OpForm.LU
    return OpForm.TRIANGULAR_SOLVE if target in _TRSM_CALLS else None


class _WrittenOut:
    """An LU call replaced by a call of its loop (a :class:`~no64.spec.protocols.Legalization`)."""

    def __init__(self, op: ir.Operation, inner: tuple[str, str], batch: list[int], n: int,
                 results: list[tuple[list[int], str]]) -> None:
        self.op, self.inner, self.batch, self.n, self.results = op, inner, batch, n, results

    @property
    def summary(self) -> str:
        count = math.prod(self.batch)
        each = f", for each of {count} matrices" if self.batch else ""
        return f"written out in float64 ops: a loop over the {self.n} columns{each} ({self.inner[1]})"

    @property
    def ops(self) -> int:
        return 1

    def apply(self) -> None:
        op = self.op
        name, _ = install_function(op, *self.inner)
        count = math.prod(self.batch)
        with ir.InsertionPoint(op), op.location:
            operand = op.operands[0]
            if self.batch:
                helper, _ = install_function(op, _batched_text(name, count, self.n, self.results),
                                             f"{self.inner[1]}.batched.{count}")
                f64 = ir.F64Type.get()
                operand = W.make("reshape", [operand], ir.RankedTensorType.get([count, self.n, self.n], f64))
                types = [ir.RankedTensorType.get([count, *shape], _element(elem)) for shape, elem in self.results]
                call = func.CallOp(types, ir.FlatSymbolRefAttr.get(helper), [operand])
                values = [W.make("reshape", [v], r.type) for v, r in zip(call.results, op.results)]
            else:
                call = func.CallOp([r.type for r in op.results], ir.FlatSymbolRefAttr.get(name), [operand])
                values = list(call.results)
        for old, new in zip(op.results, values):
            old.replace_all_uses_with(new)
        op.erase()


def _element(name: str) -> ir.Type:
    return ir.F64Type.get() if name == "f64" else ir.IntegerType.get_signless(32)


def lu(op: ir.Operation) -> Legalization | str:
    """``op``, an LU call on float64 matrices (XLA:TPU's ``LuDecomposition``
    or LAPACK's ``lapack_dgetrf_ffi``), as a call of a loop of float64 ops
    with the same results (see the module docstring), or why not."""
    target = _call_target(op)
    if target not in (_TPU_LU, _GETRF):
        return f"no64 writes out the float64 LU of {_TPU_LU} and {_GETRF}, not of {target}"
    t = op.operands[0].type
    if len(op.operands) != 1 or len(op.results) != 3 or not isinstance(t, ir.RankedTensorType) \
            or not ir.RankedTensorType(t).has_static_shape:
        return "an LU of other operands or results than one matrix of static shape"
    shape = list(ir.RankedTensorType(t).shape)
    if not isinstance(ir.RankedTensorType(t).element_type, ir.F64Type):
        return f"an LU of {ir.RankedTensorType(t).element_type} (no64 writes out float64's)"
    if len(shape) < 2 or shape[-1] != shape[-2]:
        return f"an LU of a {'x'.join(map(str, shape))} matrix (no64 writes out square ones)"
    n, batch = shape[-1], shape[:-2]
    tpu = target == _TPU_LU
    results = [([n, n], "f64"), ([n], "i32"), ([n] if tpu else [], "i32")]
    symbol = f"no64.{'lu' if tpu else 'getrf'}.{n}"
    with op.location:
        expected = [ir.RankedTensorType.get([*batch, *s], _element(e)) for s, e in results]
    if [r.type for r in op.results] != expected:
        return "an LU whose results are not the factors, the pivots and the permutation (or info)"
    return _WrittenOut(op, (_getrf_text(n, tpu), symbol), batch, n, results)


# --------------------------------- a float64 solve refined from an f32 LU
#: The refinement's steps at most (LAPACK's ``dsgesv``: ``ITERMAX``).
REFINE_STEPS = 30
#: A column has converged when its residual is within this many times
#: ``||A||_inf ||x||_inf`` (a normwise backward error of ``2**-44``: the
#: pairs' residual is computed within ``2**-45.2`` of ``|A||x|``).
REFINE_TOLERANCE = 2.0**-44
#: Each correction at most this share of the one before while the
#: residual is not yet within :data:`REFINE_TOLERANCE` (else the f32 LU does
#: not contract the error: ``cond(A)`` too large); once it is, a correction
#: that shrinks less has reached the residual's noise: the solve is done.
REFINE_SHRINK = 0.5
#: A correction within this share of ``||X_j||_inf`` no longer changes a
#: pair (``u**2``, ``u = 2**-24``): the column is done.
REFINE_RESOLUTION = 2.0**-48

#: The f32 LU each float64 LU call is refined from: LAPACK's ``sgetrf`` for
#: its ``dgetrf``, XLA:TPU's own f32 ``LuDecomposition`` for its float64 one.
_LAPACK, _TPU = "lapack", "tpu"
_ROWS = ('#stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], '
         'index_vector_dim = 1>')
_LAPACK_ATTRS = 'backend_config = "", mhlo.frontend_attributes = {num_batch_dims = "0"}'
_COLUMN_MAJOR = "dense<[0, 1]> : tensor<2xindex>"


def _rows(result: str, rhs: str, index: str, n: int, m: int, elem: str) -> str:
    """``result`` = the rows of the ``n x m`` ``rhs`` in the order ``index``
    (``n x 1``) gives."""
    t = f"tensor<{n}x{m}x{elem}>"
    return (f'{result} = "stablehlo.gather"({rhs}, {index}) <{{dimension_numbers = {_ROWS}, '
            f'indices_are_sorted = false, slice_sizes = array<i64: 1, {m}>}}> : ({t}, tensor<{n}x1xi32>) -> {t}')


def _triangular32(result: str, lu: str, rhs: str, n: int, m: int, lower: bool, kind: str) -> str:
    """``result`` = the f32 solve of ``L X = rhs`` (unit lower) or ``U X = rhs``
    by the f32 factors ``lu``: LAPACK's ``strsm`` or StableHLO's own."""
    A, B = f"tensor<{n}x{n}xf32>", f"tensor<{n}x{m}xf32>"
    if kind == _LAPACK:
        config = (f"{{diag = {ord('U' if lower else 'N')} : ui8, side = 76 : ui8, trans_x = 78 : ui8, "
                  f"uplo = {ord('L' if lower else 'U')} : ui8}}")
        return (f"{result} = stablehlo.custom_call @lapack_strsm_ffi({lu}, {rhs}) {{{_LAPACK_ATTRS}, "
                f"mhlo.backend_config = {config}, operand_layouts = [{_COLUMN_MAJOR}, {_COLUMN_MAJOR}], "
                f"result_layouts = [{_COLUMN_MAJOR}]}} : ({A}, {B}) -> {B}")
    flag = "true" if lower else "false"
    return (f'{result} = "stablehlo.triangular_solve"({lu}, {rhs}) <{{left_side = true, lower = {flag}, '
            f"transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = {flag}}}> : ({A}, {B}) -> {B}")


def _solve32(p: str, rhs: str, n: int, m: int, kind: str, indent: str) -> str:
    """``%{p}d`` (float64) = ``rhs`` (float64) rounded to f32 and solved by
    the f32 factors ``%f#0`` with the row order ``%perm``."""
    F, F32 = f"tensor<{n}x{m}xf64>", f"tensor<{n}x{m}xf32>"
    lines = [f"%{p}r = stablehlo.convert {rhs} : ({F}) -> {F32}",
             _rows(f"%{p}g", f"%{p}r", "%perm", n, m, "f32"),
             _triangular32(f"%{p}y", "%f#0", f"%{p}g", n, m, True, kind),
             _triangular32(f"%{p}z", "%f#0", f"%{p}y", n, m, False, kind),
             f"%{p}d = stablehlo.convert %{p}z : ({F32}) -> {F}"]
    return "\n".join(indent + line for line in lines)


def _factor32(n: int, kind: str) -> str:
    """``%f`` (the f32 LU of ``%a``) and ``%perm`` (its rows' order, ``n x 1``)."""
    A32, VI, SI = f"tensor<{n}x{n}xf32>", f"tensor<{n}xi32>", "tensor<i32>"
    head = f"  %a32 = stablehlo.convert %a : (tensor<{n}x{n}xf64>) -> {A32}\n"
    if kind == _TPU:
        return head + f"""  %f:3 = stablehlo.custom_call @LuDecomposition(%a32) {{api_version = 2 : i32}} \
: ({A32}) -> ({A32}, {VI}, {VI})
  %perm = stablehlo.reshape %f#2 : ({VI}) -> tensor<{n}x1xi32>"""
    # LAPACK's pivots (1-based row interchanges) applied to 0 .. n-1
    layouts = (f"operand_layouts = [{_COLUMN_MAJOR}], result_layouts = [{_COLUMN_MAJOR}, dense<0> : tensor<1xindex>, "
               "dense<> : tensor<0xindex>]")
    return head + f"""  %f:3 = stablehlo.custom_call @lapack_sgetrf_ffi(%a32) {{{_LAPACK_ATTRS}, \
mhlo.backend_config = {{}}, {layouts}}} : ({A32}) -> ({A32}, {VI}, {SI})
  %ones = stablehlo.constant dense<1> : {VI}
  %piv = stablehlo.subtract %f#1, %ones : {VI}
  %iota = stablehlo.iota dim = 0 : {VI}
  %zero = stablehlo.constant dense<0> : {SI}
{_counted_while("%pp:2", "%k = %zero, %p = %iota", f"{SI}, {VI}", n)}
    %pks = stablehlo.dynamic_slice %piv, %k, sizes = [1] : ({VI}, {SI}) -> tensor<1xi32>
    %pk = stablehlo.reshape %pks : (tensor<1xi32>) -> {SI}
    %ek = stablehlo.dynamic_slice %p, %k, sizes = [1] : ({VI}, {SI}) -> tensor<1xi32>
    %ep = stablehlo.dynamic_slice %p, %pk, sizes = [1] : ({VI}, {SI}) -> tensor<1xi32>
    %p1 = stablehlo.dynamic_update_slice %p, %ep, %k : ({VI}, tensor<1xi32>, {SI}) -> {VI}
    %p2 = stablehlo.dynamic_update_slice %p1, %ek, %pk : ({VI}, tensor<1xi32>, {SI}) -> {VI}
    %k1 = stablehlo.add %k, %one : {SI}
    stablehlo.return %k1, %p2 : {SI}, {VI}
  }}
  %perm = stablehlo.reshape %pp#1 : ({VI}) -> tensor<{n}x1xi32>"""


def _column_max(result: str, value: str, n: int, m: int, indent: str) -> str:
    """``result`` (``m``) = the largest magnitude of each column of ``value``."""
    F, M = f"tensor<{n}x{m}xf64>", f"tensor<{m}xf64>"
    return (f"{indent}{result}a = stablehlo.abs {value} : {F}\n"
            f"{indent}{result} = stablehlo.reduce({result}a init: %fz) applies stablehlo.maximum across "
            f"dimensions = [0] : ({F}, tensor<f64>) -> {M}")


def _refine_text(n: int, m: int, kind: str, fallback: tuple[str, str, str]) -> str:
    """``X`` with ``A X = B`` (``A`` ``n x n``, ``B`` ``n x m``, float64): the
    f32 LU's solve refined with float64 residuals (see :func:`refine_solves`),
    or -- where that does not converge -- the float64 LU ``fallback`` (the
    symbols of the LU, the unit lower and the upper triangular solve)."""
    A, F, M = f"tensor<{n}x{n}xf64>", f"tensor<{n}x{m}xf64>", f"tensor<{m}xf64>"
    VI, SI, SB, S = f"tensor<{n}xi32>", "tensor<i32>", "tensor<i1>", "tensor<f64>"
    MB, FB = f"tensor<{m}xi1>", f"tensor<{n}x{m}xi1>"
    getrf, lower, upper = fallback
    return f"""
func.func private @refine(%a: {A}, %b: {F}) -> {F} {{
{_factor32(n, kind)}
{_solve32("x0", "%b", n, m, kind, "  ")}
  %fz = stablehlo.constant dense<0.0> : {S}
  %aa = stablehlo.abs %a : {A}
  %arow = stablehlo.reduce(%aa init: %fz) applies stablehlo.add across dimensions = [1] : ({A}, {S}) -> tensor<{n}xf64>
  %anorm = stablehlo.reduce(%arow init: %fz) applies stablehlo.maximum across dimensions = [0] \
: (tensor<{n}xf64>, {S}) -> {S}
  %tolc = stablehlo.constant dense<{REFINE_TOLERANCE!r}> : {S}
  %atol = stablehlo.multiply %anorm, %tolc : {S}
  %atolm = stablehlo.broadcast_in_dim %atol, dims = [] : ({S}) -> {M}
{_column_max("%dn0", "%x0d", n, m, "  ")}
  %zero_i = stablehlo.constant dense<0> : {SI}
  %w:4 = stablehlo.while(%k = %zero_i, %x = %x0d, %dprev = %dn0, %state = %zero_i) : {SI}, {F}, {M}, {SI}
  cond {{
    %z = stablehlo.constant dense<0> : {SI}
    %c = stablehlo.compare EQ, %state, %z, SIGNED : ({SI}, {SI}) -> {SB}
    stablehlo.return %c : {SB}
  }} do {{
    %z = stablehlo.constant dense<0> : {SI}
    %one = stablehlo.constant dense<1> : {SI}
    %two = stablehlo.constant dense<2> : {SI}
    %yes = stablehlo.constant dense<true> : {SB}
    %ax = stablehlo.dot_general %a, %x, contracting_dims = [1] x [0] : ({A}, {F}) -> {F}
    %r = stablehlo.subtract %b, %ax : {F}
{_column_max("%rn", "%r", n, m, "    ")}
{_column_max("%xn", "%x", n, m, "    ")}
    %lim = stablehlo.multiply %xn, %atolm : {M}
    %small = stablehlo.compare LE, %rn, %lim, FLOAT : ({M}, {M}) -> {MB}
{_solve32("c", "%r", n, m, kind, "    ")}
{_column_max("%dn", "%cd", n, m, "    ")}
    %tinyc = stablehlo.constant dense<{REFINE_RESOLUTION!r}> : {M}
    %tinylim = stablehlo.multiply %xn, %tinyc : {M}
    %tiny = stablehlo.compare LE, %dn, %tinylim, FLOAT : ({M}, {M}) -> {MB}
    %halfc = stablehlo.constant dense<{REFINE_SHRINK!r}> : {M}
    %bound = stablehlo.multiply %dprev, %halfc : {M}
    %shrinks = stablehlo.compare LE, %dn, %bound, FLOAT : ({M}, {M}) -> {MB}
    %stalled = stablehlo.not %shrinks : {MB}
    %settled = stablehlo.or %tiny, %stalled : {MB}
    %donej = stablehlo.and %small, %settled : {MB}
    %large = stablehlo.not %small : {MB}
    %failj = stablehlo.and %stalled, %large : {MB}
    %no = stablehlo.constant dense<false> : {SB}
    %done = stablehlo.reduce(%donej init: %yes) applies stablehlo.and across dimensions = [0] : ({MB}, {SB}) -> {SB}
    %fail = stablehlo.reduce(%failj init: %no) applies stablehlo.or across dimensions = [0] : ({MB}, {SB}) -> {SB}
    %k1 = stablehlo.add %k, %one : {SI}
    %steps = stablehlo.constant dense<{REFINE_STEPS}> : {SI}
    %last = stablehlo.compare GE, %k1, %steps, SIGNED : ({SI}, {SI}) -> {SB}
    %stop = stablehlo.or %fail, %last : {SB}
    %xnext = stablehlo.add %x, %cd : {F}
    %doneb = stablehlo.broadcast_in_dim %done, dims = [] : ({SB}) -> {FB}
    %x2 = stablehlo.select %doneb, %x, %xnext : {FB}, {F}
    %failed = stablehlo.select %stop, %two, %z : {SB}, {SI}
    %state2 = stablehlo.select %done, %one, %failed : {SB}, {SI}
    stablehlo.return %k1, %x2, %dn, %state2 : {SI}, {F}, {M}, {SI}
  }}
  %one_i = stablehlo.constant dense<1> : {SI}
  %refined = stablehlo.compare EQ, %w#3, %one_i, SIGNED : ({SI}, {SI}) -> {SB}
  %branch = stablehlo.convert %refined : ({SB}) -> {SI}
  %out = "stablehlo.case"(%branch) ({{
    %lu:3 = func.call @{getrf}(%a) : ({A}) -> ({A}, {VI}, {VI})
    %lperm = stablehlo.reshape %lu#2 : ({VI}) -> tensor<{n}x1xi32>
    {_rows("%pb", "%b", "%lperm", n, m, "f64")}
    %ly = func.call @{lower}(%lu#0, %pb) : ({A}, {F}) -> {F}
    %lx = func.call @{upper}(%lu#0, %ly) : ({A}, {F}) -> {F}
    stablehlo.return %lx : {F}
  }}, {{
    stablehlo.return %w#1 : {F}
  }}) : ({SI}) -> {F}
  return %out : {F}
}}
func.func private @{getrf}({A}) -> ({A}, {VI}, {VI})
func.func private @{lower}({A}, {F}) -> {F}
func.func private @{upper}({A}, {F}) -> {F}
"""


def _triangular(op: ir.Operation) -> tuple[bool, bool] | None:
    """``(lower, unit)`` where ``op`` solves ``A X = B`` with ``A`` on the
    left, untransposed, unbatched (LAPACK's ``trsm`` or StableHLO's own);
    else None."""
    if form_of(op) is not OpForm.TRIANGULAR_SOLVE or len(op.operands) != 2:
        return None
    if spec_of(op.name).external:
        config = _config(op)
        if config is None or not _unbatched(op):
            return None
        side, uplo, trans, diag = (_char(config, k) for k in ("side", "uplo", "trans_x", "diag"))
        if side != "L" or trans != "N" or uplo not in ("L", "U") or diag not in ("U", "N"):
            return None
        return uplo == "L", diag == "U"
    attrs = attribute_dict(op)
    flags = [attrs.get(k) for k in ("left_side", "lower", "unit_diagonal")]
    if any(not isinstance(f, ir.BoolAttr) for f in flags) or "transpose_a" not in attrs:
        return None
    left, lower, unit = (ir.BoolAttr(f).value for f in flags)
    if not left or enum_word(attrs["transpose_a"]) != "NO_TRANSPOSE":
        return None
    return lower, unit


def _lu_kind(op: ir.Operation) -> str | None:
    """Which f32 LU refines the float64 LU call ``op`` (of one square matrix
    of static shape), or None."""
    if form_of(op) is not OpForm.LU or len(op.operands) != 1 or len(op.results) != 3 or not _unbatched(op):
        return None
    if _square(op) is None:
        return None
    target = _call_target(op)
    return _LAPACK if target == _GETRF else _TPU if target == _TPU_LU else None


def _nan_splat(v: ir.Value) -> bool:
    """Whether ``v`` is a float constant whose every element is NaN (or
    such a constant's elements moved: broadcast, reshaped)."""
    op = defining_op(v)
    while op is not None and spec_of(op.name).moves and len(op.operands) == 1:
        op = defining_op(op.operands[0])
    if op is None or not spec_of(op.name).constant or "value" not in op.attributes:
        return False
    attr = op.attributes["value"]
    if not isinstance(attr, ir.DenseFPElementsAttr) or not attr.is_splat:
        return False
    return math.isnan(ir.FloatAttr(attr.get_splat_value()).value)


def _derived_from(v: ir.Value, sources: list[ir.Value], parent: ir.Operation) -> bool:
    """Whether ``v`` is computed, in ``parent``'s body, from ``sources`` and
    constants alone (the ops of loops and calls between included)."""
    seen: list[ir.Value] = []
    work = [v]
    while work:
        x = work.pop()
        if x in sources or x in seen:
            continue
        seen.append(x)
        op = defining_op(x)
        if op is None or op.parent != parent or spec_of(op.name).external:
            return False
        work.extend(op.operands)
    return True


class _Solve:
    """One solve by an LU's factors: ``upper`` (``U X = Y``) of ``lower``
    (``L Y = P B``); ``P B`` is ``layout`` (transposes and reshapes, in
    order) of ``rows`` (a ``gather`` of the rows of its operand in the LU's
    order), so that ``B`` is ``layout`` of ``rows``'s operand."""

    def __init__(self, lower: ir.Operation, upper: ir.Operation, rows: ir.Operation,
                 layout: list[ir.Operation]) -> None:
        self.lower, self.upper, self.rows, self.layout = lower, upper, rows, layout

    def rhs(self) -> ir.Value:
        """``B`` (built at the current insertion point)."""
        v = self.rows.operands[0]
        for op in self.layout:
            copy = op.clone(ip=ir.InsertionPoint.current)
            copy.operands[0] = v
            v = copy.results[0]
        return v


def _shape(v: ir.Value) -> list[int] | None:
    t = v.type
    if not isinstance(t, ir.RankedTensorType) or not ir.RankedTensorType(t).has_static_shape:
        return None
    return list(ir.RankedTensorType(t).shape)


def _permuted_axis(op: ir.Operation, n: int, lu: ir.Operation) -> int | None:
    """The axis of ``op``'s result along which the ``gather`` ``op`` takes
    its operand's ``n`` slices in an order computed from ``lu``'s pivots or
    permutation alone, every slice whole and in its place (so that with the
    indices ``0 .. n-1`` it would be its operand); else None."""
    if spec_of(op.name).computes is not Computes.GATHER or len(op.operands) != 2:
        return None
    shape, index = _shape(op.operands[0]), _shape(op.operands[1])
    if shape is None or op.results[0].type != op.operands[0].type or index != [n, 1]:
        return None
    attrs = attribute_dict(op)
    numbers, sizes = attrs.get("dimension_numbers"), attrs.get("slice_sizes")
    if numbers is None or sizes is None:
        return None
    d = stablehlo.GatherDimensionNumbers(numbers)
    axis = list(d.start_index_map)
    if len(axis) != 1 or list(d.collapsed_slice_dims) != axis or d.index_vector_dim != 1 \
            or list(getattr(d, "operand_batching_dims", [])) or shape[axis[0]] != n:
        return None
    c = axis[0]
    if [int(x) for x in ir.DenseI64ArrayAttr(sizes)] != [1 if i == c else x for i, x in enumerate(shape)] \
            or list(d.offset_dims) != [i for i in range(len(shape)) if i != c]:
        return None
    if not _derived_from(op.operands[1], [lu.results[1], lu.results[2]], lu.parent):
        return None
    return c


def _moved_axis(op: ir.Operation, axis: int, n: int) -> int | None:
    """Where the transpose or reshape ``op`` puts its operand's ``axis`` (of
    ``n`` elements, kept whole and in order), or None."""
    computes, shape, out = spec_of(op.name).computes, _shape(op.operands[0]), _shape(op.results[0])
    if shape is None or out is None or len(op.operands) != 1:
        return None
    if computes is Computes.TRANSPOSE:
        perm = [int(x) for x in ir.DenseI64ArrayAttr(attribute_dict(op)["permutation"])]
        return perm.index(axis)
    if computes is Computes.RESHAPE:
        before = math.prod(shape[:axis])
        for i, x in enumerate(out):
            if x == n and math.prod(out[:i]) == before:
                return i
    return None


def _rows_of(v: ir.Value, n: int, lu: ir.Operation) -> tuple[ir.Operation, list[ir.Operation]] | None:
    """``(rows, layout)`` where the ``n x m`` float64 ``v`` is the transposes
    and reshapes ``layout`` of a ``gather`` ``rows`` that takes the rows of
    its operand in ``lu``'s order (see :func:`_permuted_axis`), that axis
    becoming ``v``'s rows; else None."""
    layout: list[ir.Operation] = []
    op = defining_op(v)
    while op is not None and op.parent == lu.parent \
            and spec_of(op.name).computes in (Computes.TRANSPOSE, Computes.RESHAPE):
        layout.insert(0, op)
        op = defining_op(op.operands[0])
    if op is None or op.parent != lu.parent:
        return None
    axis = _permuted_axis(op, n, lu)
    for step in layout:
        if axis is None:
            return None
        axis = _moved_axis(step, axis, n)
    return (op, layout) if axis == 0 else None


def _reshaped_use(v: ir.Value) -> tuple[ir.Operation, ir.Value] | None:
    """The one op reading ``v`` past reshapes (each read once), with the
    value it reads; None where ``v`` is read otherwise."""
    while True:
        uses = [as_operation(u.owner) for u in v.uses]
        if len(uses) != 1:
            return None
        if spec_of(uses[0].name).computes is not Computes.RESHAPE:
            return uses[0], v
        v = uses[0].results[0]


def _solves_of(lu: ir.Operation) -> list[_Solve] | None:
    """The solves by ``lu``'s factors, where those factors (or the factors
    made NaN where ``info`` is negative, as JAX's CPU lowering does) are read
    by nothing else than the solves' two triangular solves, in ``lu``'s
    function body; else None."""
    n = _square(lu)
    assert n is not None
    factors = [lu.results[0]]
    for use in lu.results[0].uses:
        user = as_operation(use.owner)
        if spec_of(user.name).computes is Computes.SELECT and use.operand_number == 1 \
                and _nan_splat(user.operands[2]) and _derived_from(user.operands[0], [lu.results[2]], lu.parent):
            factors.append(user.results[0])
    lowers: list[ir.Operation] = []
    uppers: list[ir.Operation] = []
    for f in factors:
        for use in f.uses:
            user = as_operation(use.owner)
            if f == lu.results[0] and any(user == defining_op(g) for g in factors[1:]):
                continue
            kind = _triangular(user)
            if use.operand_number != 0 or user.parent != lu.parent:
                return None
            if kind == (True, True):
                lowers.append(user)
            elif kind == (False, False):
                uppers.append(user)
            else:
                return None
    solves: list[_Solve] = []
    for low in lowers:
        shape = _static_2d(low.results[0].type)
        read = _reshaped_use(low.results[0])
        if shape is None or shape[0] != n or read is None:
            return None
        up, value = read
        if not any(up == u for u in uppers) or up.operands[1] != value or up.results[0].type != low.results[0].type:
            return None
        rows = _rows_of(low.operands[1], n, lu)
        if rows is None:
            return None
        solves.append(_Solve(low, up, *rows))
    if len(solves) != len(uppers) or not solves:
        return None
    return solves


def refinable(op: ir.Operation) -> bool:
    """Whether ``op`` is a float64 LU call of a kind :func:`refine_solves`
    refines the solves of (where its factors serve only solves)."""
    return _lu_kind(op) is not None


def _removable(op: ir.Operation) -> bool:
    """Whether ``op`` may be erased once nothing reads its results: it
    computes without effects (the op table's ``pure``, moving or computing
    ops, the LU and triangular solves), and so do the ops inside its regions
    and the functions it calls."""
    spec = spec_of(op.name)
    if spec.pure or spec.moves or spec.computes is not None or form_of(op) in (OpForm.LU, OpForm.TRIANGULAR_SOLVE):
        return not len(op.regions) or all(_removable_body(r) for r in op.regions)
    if spec.loop or spec.branches or spec.owns_regions:
        return all(_removable_body(r) for r in op.regions)
    if spec.call:
        callee = _callee_of(op)
        return callee is not None and all(_removable_body(r) for r in callee.regions)
    return False


def _removable_body(region: ir.Region) -> bool:
    return all(spec_of(o.name).terminator or _removable(o)
               for block in region.blocks for o in map(as_operation, block.operations))


def _callee_of(call: ir.Operation) -> ir.Operation | None:
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    cur = call.parent
    while cur is not None and cur.name != "builtin.module":
        cur = cur.parent
    if cur is None:
        return None
    for top in cur.regions[0].blocks[0].operations:
        top = as_operation(top)
        if spec_of(top.name).function and ir.StringAttr(top.attributes["sym_name"]).value == name:
            return top
    return None


def _erase_unread(op: ir.Operation, callees: set[str]) -> None:
    """Erase ``op`` if nothing reads it, then the producers of its operands
    that nothing reads any more, as long as each is :func:`_removable`;
    adds to ``callees`` the functions the ops erased called."""
    work: list[ir.Operation | None] = [op]
    while work:
        cur = work.pop()
        if cur is None or spec_of(cur.name).function or any(True for r in cur.results for _ in r.uses):
            continue
        if not _removable(cur):
            continue
        producers = [defining_op(v) for v in cur.operands]
        callees.update(ir.FlatSymbolRefAttr(o.attributes["callee"]).value
                       for o in (cur, *all_ops(cur)) if spec_of(o.name).call)
        cur.erase()
        for p in producers:
            if p is not None and not any(p == w for w in work):
                work.append(p)


def refine_solves(root: ir.Operation) -> list[tuple[str, ir.Location, str, str]]:
    """Replace each float64 solve by the factors of an LU call (the pattern
    of ``jnp.linalg.solve``, ``inv`` and ``lu_solve``: the rows of ``B`` in
    the LU's order, solved by the unit lower factor and then by the upper
    one, the factors read by nothing else) by a call of a private function
    of ``A`` and ``B`` that refines the device's own f32 LU:

    * ``A`` rounded to f32 and factored by the device's f32 LU
      (``lapack_sgetrf_ffi`` for ``lapack_dgetrf_ffi``, XLA:TPU's f32
      ``LuDecomposition`` for its float64 one); ``X_0`` its f32 solve of
      ``B`` rounded to f32;
    * each step, the residual ``R = B - A X_k`` in float64 ops (a float64
      dot: on pairs, the pair dot), the correction ``D`` its f32 solve, and
      ``X_{k+1} = X_k + D``;
    * a column has *converged* when ``||R_j||_inf <= 2**-44 ||A||_inf
      ||X_j||_inf`` (LAPACK ``dsgesv``'s test, a backward error of
      ``2**-44``); the refinement *fails* when a column not converged has a
      correction larger than half the one before (``D_0`` being ``X_0``),
      a NaN, or after :data:`REFINE_STEPS` steps. It converges when the
      f32 factors' error contracts (``||A^{-1} E|| < 1/2`` for ``LU = PA +
      E``: about ``cond(A)·n·2**-24`` well below 1);
    * where it fails, a ``case`` computes the solve by the float64 LU
      written out (:func:`_getrf_text`, :func:`_trsm_text`): today's result.

    The LU call and the ops computing the rows' order are erased where
    nothing else reads them.  Returns ``(op name, location, helper, f32 LU)``
    per solve refined (located at its upper triangular solve).  Calls of
    private functions are expected inlined (the LU and its solves in one
    function body); an LU whose factors are read otherwise keeps its path."""
    found: list[tuple[ir.Operation, str, list[_Solve]]] = []
    for op in all_ops(root):
        kind = _lu_kind(op)
        if kind is None:
            continue
        solves = _solves_of(op)
        if solves is not None:
            found.append((op, kind, solves))
    done: list[tuple[str, ir.Location, str, str]] = []
    callees: set[str] = set()
    for lu, kind, solves in found:
        n = _square(lu)
        assert n is not None
        getrf, _ = install_function(lu, _getrf_text(n, tpu=True), f"no64.lu.{n}")
        for s in solves:
            upper = s.upper
            shape = _static_2d(upper.results[0].type)
            assert shape is not None
            m = shape[1]
            lower, _ = install_function(lu, _trsm_text(n, m, True, True), f"no64.trsm.lower.unit.{n}x{m}")
            upper_fn, _ = install_function(lu, _trsm_text(n, m, False, False), f"no64.trsm.upper.{n}x{m}")
            helper, _ = install_function(lu, _refine_text(n, m, kind, (getrf, lower, upper_fn)),
                                         f"no64.refine.{kind}.{n}x{m}")
            with ir.InsertionPoint(upper), upper.location:
                call = func.CallOp([upper.results[0].type], ir.FlatSymbolRefAttr.get(helper),
                                   [lu.operands[0], s.rhs()])
            upper.results[0].replace_all_uses_with(call.results[0])
            done.append((upper.name, upper.location, helper, "lapack_sgetrf_ffi" if kind == _LAPACK else _TPU_LU))
            _erase_unread(upper, callees)
    if callees:  # the private functions only the ops erased called
        called = {ir.FlatSymbolRefAttr(o.attributes["callee"]).value for o in all_ops(root) if spec_of(o.name).call}
        for fn in functions(root):
            if symbol_name(fn) in callees - called and not is_public(fn):
                fn.erase()
    return done
