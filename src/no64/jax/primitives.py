"""The primitive table: what no64 knows about JAX primitives, in one place.

The op table (:mod:`no64.rules.ops`) says what each StableHLO op does; a
traced program is made of JAX primitives, which lower to those ops.  Each
entry here names the ops its primitive lowers to -- their entries in the op
table -- and takes from them what the primitive does with a host sentinel
(``INT64_MAX`` as "no value", which becomes its 32-bit extreme before JAX
traces the program: :mod:`no64.jax.host.sentinel_walk` follows it through the
jaxpr), and its structural role.  An entry declares only where the jaxpr
level differs:

* ``sentinels``, its operands' :class:`~no64.kinds.SentinelUse` where the
  primitive's operands are not its op's (``select_n``'s case index is an
  integer the op's predicate is not, ``scatter``'s are given by a function
  of the op), or it has no counterpart in the table;
* ``results``, how its results hold the elements its operands carry
  (:class:`Results`): each result all of them (the default for ops that
  carry), result ``i`` operand ``i``'s, only the first result (the others
  indices), or none (ops that only compare);
* ``loop``, how a loop's operands divide (:class:`LoopOperands`): the op is
  one (``stablehlo.while``) for two primitives whose operands differ.

What follows from them (the role, which operands meet one another) is
computed here, once, when the table is built.  A primitive no entry knows
reads its operands as numbers -- unless it calls one sub-program with its
operands (``jit``, ``custom_jvp_call``, ...), which is followed into.
``version_dependent`` marks a primitive that some JAX release the project
supports does not have (the tests check every other exists).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable

from ..kinds import SentinelUse
from ..rules import ops as _ops  # noqa: F401  (fills the op table)
from ..spec.registry import REGISTRY, Computes, OpSpec

__all__ = ["Results", "LoopOperands", "Role", "PrimitiveSpec", "PRIMITIVES", "WIDTH_PARAMETERS", "HOST_CALLBACKS",
           "CALLS_ITS_IMPLEMENTATION", "primitive"]

CARRIES, COMPARES, READS = SentinelUse.CARRIES, SentinelUse.COMPARES, SentinelUse.READS

#: What a primitive does with a sentinel in each operand: one use for all
#: operands, one per leading operand (the others ``READS``), or ``f(i)``.
PrimitiveSentinelUses = SentinelUse | tuple[SentinelUse, ...] | Callable[[int], SentinelUse]


class Results(enum.Enum):
    """Which operand elements a primitive's results hold."""

    #: Each result holds elements of every operand that carries.
    JOINED = "joined"
    #: Result ``i`` holds operand ``i``'s elements (where there are as many
    #: results as operands; else each holds every operand's).
    EACH = "each"
    #: The first result holds the carried elements, the others are indices.
    FIRST = "first"
    #: No result holds an operand element (the operands are only compared).
    NONE = "none"


class LoopOperands(enum.Enum):
    """How a loop primitive's operands divide."""

    #: Constants of the condition, constants of the body, the carried state.
    WHILE = "cond consts, body consts, carry"
    #: Constants, the carried state, the scanned inputs.
    SCAN = "consts, carry, xs"


class Role(enum.Enum):
    """How :mod:`no64.jax.host.sentinel_walk` follows a primitive."""

    #: Moves, selects or orders its carried operands into its results.
    MOVES = "moves"
    #: Reads its operands only by order or equality; results hold none of them.
    ORDERS = "orders"
    #: The indices along one dimension of its result.
    IOTA = "iota"
    #: Converts its operand to another element type.
    CONVERT = "convert"
    #: A loop (see :class:`LoopOperands`).
    LOOP = "loop"
    #: Branches: operand 0 picks one, the others are its arguments.
    BRANCHES = "branches"


def _index_then_carried(i: int) -> SentinelUse:
    """Operand 0 is an index (read); the others are carried."""
    return READS if i == 0 else CARRIES


@dataclasses.dataclass(frozen=True)
class PrimitiveSpec:
    """What no64 knows about one JAX primitive (see the module docstring)."""

    name: str
    #: The ops of the op table it lowers to (the first gives its facts).
    ops: tuple[str, ...] = ()
    #: Its operands' sentinel uses, where they are not its op's.
    sentinels: PrimitiveSentinelUses | None = None
    #: Which operand elements its results hold, where not the default.
    results: Results | None = None
    #: A loop's operands, for a primitive whose op is a loop.
    loop: LoopOperands | None = None
    #: Some JAX release the project supports has no primitive of this name.
    version_dependent: bool = False
    #: Derived from the above and the op table when the table is built.
    role: Role | None = dataclasses.field(default=None, compare=False)

    @property
    def op(self) -> OpSpec:
        """The op table's entry for its first counterpart."""
        return REGISTRY[self.ops[0]]

    def sentinel_use(self, i: int) -> SentinelUse:
        """What the primitive does with a sentinel in its operand ``i``."""
        uses = self.sentinels
        if uses is None:
            if not self.ops:
                return READS
            per_op = self.op.sentinels
            if not isinstance(per_op, (SentinelUse, tuple)):
                raise ValueError(f"primitive {self.name!r}: its op decides per op; declare its sentinels")
            uses = per_op
        if isinstance(uses, SentinelUse):
            return uses
        if isinstance(uses, tuple):
            return uses[i] if i < len(uses) else READS
        return uses(i)

    def meeting(self, n: int) -> list[int]:
        """Of ``n`` operands, those that meet one another (are selected
        among, ordered or compared): the carried ones, where every result
        holds them all, or the compared ones."""
        if self.role is Role.ORDERS:
            return [i for i in range(n) if self.sentinel_use(i) is COMPARES]
        if self.role is Role.MOVES and self.results is Results.JOINED:
            return [i for i in range(n) if self.sentinel_use(i) is CARRIES]
        return []


def _role(spec: PrimitiveSpec) -> Role | None:
    """A primitive's role, from its op's entry in the op table."""
    if spec.loop is not None:
        return Role.LOOP
    if spec.results is Results.NONE:
        return Role.ORDERS
    op = spec.op if spec.ops else None
    if op is not None:
        if op.computes is Computes.IOTA:
            return Role.IOTA
        if op.convert:
            return Role.CONVERT
        if op.branches:
            return Role.BRANCHES
    # what its leading operands do (a leading index is read: select_n's)
    uses = {spec.sentinel_use(i) for i in range(3)}
    if CARRIES in uses:
        return Role.MOVES
    if COMPARES in uses:
        return Role.ORDERS
    return None


def _declare(*names: str, ops: tuple[str, ...] = (), **fields: object) -> None:
    for name in names:
        if name in PRIMITIVES:
            raise ValueError(f"primitive {name!r} is declared twice")
        for op in ops:
            if op not in REGISTRY:
                raise ValueError(f"primitive {name!r}: its op {op!r} is not in the op table")
        spec = PrimitiveSpec(name, ops, **fields)  # type: ignore[arg-type]
        role = _role(spec)
        if role is None:
            raise ValueError(f"primitive {name!r}: no role follows from its op; declare it")
        results = spec.results
        if results is None and role in (Role.MOVES, Role.ORDERS):
            results = Results.JOINED if role is Role.MOVES else Results.NONE
        PRIMITIVES[name] = dataclasses.replace(spec, results=results, role=role)


#: primitive name -> its entry.
PRIMITIVES: dict[str, PrimitiveSpec] = {}


def primitive(name: str) -> PrimitiveSpec | None:
    """The entry for primitive ``name`` (``None``: it reads its operands)."""
    return PRIMITIVES.get(name)


# ------------------------------------------------ results hold operand 0's
# (their other operands, if any, are indices or dynamic shapes: read)
_declare("broadcast_in_dim", ops=("stablehlo.broadcast_in_dim", "stablehlo.dynamic_broadcast_in_dim"))
_declare("reshape", "squeeze", ops=("stablehlo.reshape", "stablehlo.dynamic_reshape"))
_declare("transpose", ops=("stablehlo.transpose",))
_declare("rev", ops=("stablehlo.reverse",))
_declare("slice", ops=("stablehlo.slice",))
_declare("dynamic_slice", ops=("stablehlo.dynamic_slice",))
_declare("gather", ops=("stablehlo.gather",))
_declare("tile", ops=("stablehlo.broadcast_in_dim", "stablehlo.reshape"), version_dependent=True)  # from 0.8
_declare("copy", ops=("stablehlo.copy",))
_declare("sharding_constraint", ops=("sdy.sharding_constraint",))
_declare("reshard", ops=("sdy.reshard",))
_declare("mesh_cast", ops=("sdy.reshard",), version_dependent=True)  # up to 0.9
_declare("all_gather", ops=("stablehlo.all_gather",))
_declare("all_to_all", ops=("stablehlo.all_to_all",))
_declare("ppermute", ops=("stablehlo.collective_permute",))
_declare("pbroadcast", sentinels=CARRIES)  # (lowers to no op of its own)
# reductions and scans picking the minimum or maximum of operand 0's elements
_declare("reduce_min", "reduce_max", ops=("stablehlo.reduce",))
_declare("cummin", "cummax", ops=("stablehlo.reduce_window",))

# ------------------------------------- results join several operands' elements
_declare("concatenate", ops=("stablehlo.concatenate",))
_declare("stack", ops=("stablehlo.concatenate",), version_dependent=True)  # from 0.8
_declare("pad", ops=("stablehlo.pad",))
_declare("dynamic_update_slice", ops=("stablehlo.dynamic_update_slice",))
_declare("min", ops=("stablehlo.minimum",))
_declare("max", ops=("stablehlo.maximum",))
_declare("clamp", ops=("stablehlo.clamp",))
_declare("pmin", "pmax", ops=("stablehlo.all_reduce",))
# the case index is an integer (the op's predicate is a boolean)
_declare("select_n", ops=("stablehlo.select",), sentinels=_index_then_carried)
# the operand and the updates carry; the indices are read
_declare("scatter", ops=("stablehlo.scatter",), sentinels=(CARRIES, READS, CARRIES))

# ----------------------------------------- result i holds operand i's elements
_declare("sort", ops=("stablehlo.sort",), results=Results.EACH)
_declare("split", ops=("stablehlo.slice",), results=Results.EACH)
_declare("unstack", ops=("stablehlo.slice", "stablehlo.reshape"), results=Results.EACH,
         version_dependent=True)  # from 0.8
_declare("optimization_barrier", ops=("stablehlo.optimization_barrier",), results=Results.EACH)
_declare("device_put", sentinels=CARRIES, results=Results.EACH)
# the values first, their indices second
_declare("top_k", ops=("chlo.top_k",), sentinels=(CARRIES,), results=Results.FIRST)

# ------------------------------------------------------- order and equality
_declare("eq", "ne", "lt", "le", "gt", "ge", ops=("stablehlo.compare",))
# (total orders, for sorting: -0.0 before 0.0, NaNs last)
_declare("eq_to", "lt_to", "le_to", ops=("stablehlo.compare",))
# the index of the minimum or maximum: a reduction comparing the elements,
# whose result is no element
_declare("argmin", "argmax", ops=("stablehlo.reduce", "stablehlo.compare"), sentinels=COMPARES,
         results=Results.NONE)

# ---------------------------------------------------------------- structure
_declare("iota", ops=("stablehlo.iota",))
_declare("convert_element_type", ops=("stablehlo.convert",))
_declare("while", ops=("stablehlo.while",), loop=LoopOperands.WHILE)
_declare("scan", ops=("stablehlo.while",), loop=LoopOperands.SCAN)
_declare("cond", ops=("stablehlo.case", "stablehlo.if"))

# ------------------------------------------------------- widths in parameters
#: Parameters that give a width in bits, which the x64 program's trace fixed
#: from a 64-bit dtype (``jax.random.bits`` of ``uint64`` draws 64 bits) and
#: a trace with x64 off from its 32-bit image: the 32-bit replay of the x64
#: program (:mod:`no64.jax.replay`) narrows them as it narrows dtypes.
WIDTH_PARAMETERS: dict[str, tuple[str, ...]] = {
    "random_bits": ("bit_width",),
}


# ------------------------------------------------------------ host callbacks
#: The primitives that call a Python function on the host while the program
#: runs (``jax.debug.print``/``jax.debug.callback``, ``jax.pure_callback``,
#: ``io_callback``), each with the parameter holding its results' abstract
#: values (``None``: it returns nothing).  Each has a parameter ``callback``,
#: called with the operands placed on the CPU as ``jax.Array``s, but those of
#: :data:`CALLS_ITS_IMPLEMENTATION`.  The x64
#: program keeps them, their boundary made 32-bit (:mod:`no64.jax.callbacks`).
HOST_CALLBACKS: dict[str, str | None] = {
    "debug_callback": None,
    "debug_print": None,
    "pure_callback": "result_avals",
    "io_callback": "result_avals",
}
#: Host callbacks whose host function is the primitive's own implementation
#: (``jax.debug.print`` formats its operands on the host): the x64 program
#: binds them as the ``jax.debug.callback`` they lower as, calling it.
CALLS_ITS_IMPLEMENTATION = frozenset({"debug_print"})
