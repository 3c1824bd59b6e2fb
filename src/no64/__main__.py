"""``python -m no64``: the same as the ``no64`` command."""

from .cli import main

raise SystemExit(main())
