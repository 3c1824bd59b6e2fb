"""MkDocs hook: the command line's reference from its argparse parser.

A page line ``<!-- no64-cli-help -->`` is replaced by the ``--help`` text of
``no64`` and of each of its commands, as ``no64.cli`` builds them.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

MARKER = "<!-- no64-cli-help -->"


def _help() -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal's width
    from no64 import cli

    parser = cli._build_parser()
    parts = ["## `no64 --help`", "", "```text", parser.format_help().rstrip(), "```"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                parts += ["", f"## `no64 {name} --help`", "", "```text", sub.format_help().rstrip(), "```"]
    return "\n".join(parts) + "\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, _help())
