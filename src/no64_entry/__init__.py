"""Entry points that must work even where no64 itself cannot load.

The ``no64`` command and the pytest plugin are started by installers and
test runners that know nothing of jax: where no64 cannot be imported (a
jaxlib older than the tested range, or none), the command says why in one
line and exits 2, and the pytest plugin lets the test run go on (see
:mod:`no64_entry.pytest_plugin`).  Nothing here imports jax or jaxlib.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

EXIT_ERROR = 2


def main() -> int:
    """The ``no64`` command: :func:`no64.cli.main`, or one line and exit 2
    when no64 cannot be imported."""
    try:
        from no64.cli import main as cli_main
    except ImportError as exc:
        print(f"no64: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - a bug in no64, said in one line as no64.cli does
        message = " ".join(str(exc).split()) or "(no message)"
        print(f"no64: internal error: {type(exc).__name__}: {message} "
              "-- please report this as a no64 bug (with the input file)", file=sys.stderr)
        return EXIT_ERROR
    return cli_main()
