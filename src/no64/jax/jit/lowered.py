"""What :func:`no64.lower` and :meth:`no64.jit(...).lower <no64.jax.jit.Jitted.lower>`
return: a function lowered 32-bit, every 64-bit value removed."""

from __future__ import annotations

from typing import Any

from ... import io as no64_io
from ...errors import No64Error
from ...ir._mlir import ir
from ...options import Options
from ...report import DemotionReport
from ...transforms.boundary import native_boundary
from ...transforms.demote import demote
from ...transforms.scan import check
from .. import hook as jaxhook, host


class Lowered:
    """A function lowered 32-bit, with every 64-bit value removed.

    Attributes:
      module: The 64-bit-free StableHLO ``ir.Module`` (in no64's own MLIR
        context, with JAX's debug locations and sharding annotations).
      report: The :class:`no64.DemotionReport` of the leftover 64-bit values
        that were narrowed (empty when JAX produced none).
      jax_lowered: JAX's ``Lowered`` of the 32-bit trace (before demotion).
    """

    def __init__(self, module: ir.Module, report: DemotionReport, jax_lowered: Any, name: str) -> None:
        self.module = module
        self.report = report
        self.jax_lowered = jax_lowered
        self.name = name

    @classmethod
    def _from_jax(cls, lowered: Any, options: Options, name: str) -> "Lowered":
        import io

        buf = io.BytesIO()
        lowered.compiler_ir("stablehlo").operation.write_bytecode(file=buf)
        module = no64_io.load(buf.getvalue(), format="mlirbc")
        try:
            report = demote(module, options)
        except No64Error as exc:
            host.name_callers_line(exc, module)
            raise
        if report.kept_native:
            # the device's native 64-bit integers cross the call as word
            # pairs, as emulated ones do (a 32-bit JAX makes no int64 buffer)
            boundary = native_boundary(module.operation, frozenset(report.kept_native))
            if boundary is not None:
                with module.context, ir.Location.unknown():
                    boundary.as_words()
                report.emulated_inputs = sorted({*report.emulated_inputs, *boundary.inputs})
                report.emulated_outputs = sorted({*report.emulated_outputs, *boundary.outputs})
        check(module, keep=report.kept_native)
        return cls(module, report, lowered, name)

    def _for_target(self, config: Any) -> "Lowered":
        """This, its module made exact on and checked against ``config``'s
        target (:func:`no64.jax.hook.check_device`), where it names one."""
        if config.target is not None:
            self.module = jaxhook.check_device(self.module, config, "", owned=True)
        return self

    def as_text(self, *, debug_info: bool = False) -> str:
        """StableHLO text (with source locations when ``debug_info``)."""
        return self.module.operation.get_asm(enable_debug_info=debug_info)

    def as_bytecode(self) -> bytes:
        """MLIR bytecode of the module."""
        return no64_io.dumps(self.module, "mlirbc")

    def as_hlo_proto(self) -> bytes:
        """The module as a serialized XLA ``HloModuleProto``."""
        return no64_io.dumps(self.module, "hlopb")

    def __repr__(self) -> str:
        return f"<no64.Lowered {self.name}: {self.report.summary().splitlines()[0]}>"
