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
from ..ir._mlir import as_operation, func, ir
from ..kinds import OpForm
from ..spec.protocols import Legalization
from ..spec.registry import spec_of
from ..spec.util import install_function

__all__ = ["expand_lapack", "is_lu", "lu"]

_GETRF = "lapack_dgetrf_ffi"
#: XLA:TPU's LU factorization (JAX's TPU lowering of ``lu``).
_TPU_LU = "LuDecomposition"
#: The calls that factor a matrix as LU (of any element type).
_LU_CALLS = frozenset({_TPU_LU, "lapack_sgetrf_ffi", _GETRF, "lapack_cgetrf_ffi", "lapack_zgetrf_ffi",
                       "cusolver_getrf_ffi", "hipsolver_getrf_ffi"})
_TRSM = "lapack_dtrsm_ffi"
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


def is_lu(op: ir.Operation) -> OpForm | None:
    """:attr:`~no64.kinds.OpForm.LU` where ``op`` (a ``custom_call``) factors
    a matrix as LU, else None (the form the op table gives ``custom_call``)."""
    return OpForm.LU if "call_target_name" in op.attributes and _call_target(op) in _LU_CALLS else None


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
