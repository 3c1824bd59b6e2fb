"""The docstrings' Sphinx roles as the documentation site's cross-references.

The sources' docstrings name other objects with Sphinx's roles
(``:func:`demote```, ``:class:`~no64.report.DemotionReport```, ``:mod:`no64.io```);
MkDocs renders Markdown, where such a role would show as literal text.
:func:`convert_roles` turns each role into a cross-reference of
mkdocs-autorefs: a link where the reference documents its target, the name
in code where it does not (an object the reference leaves out, such as a
private module, or one outside the package, such as ``jax.jit``).  The
docstrings keep their roles, which Python's ``help()`` and the sources read
as they are.

This module needs nothing beyond the standard library, so that the tests
check the conversion without the documentation's tools;
``tools/griffe_no64.py`` applies it to every docstring as the site is built,
and this module, as an MkDocs hook, fails the build on a role a page still
shows as literal text.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Callable
from typing import Any

#: The roles the sources use (and Sphinx's other Python roles).
ROLES = ("func", "class", "mod", "data", "attr", "meth", "exc", "obj", "const")
#: A role: ``:func:`name```, ``:func:`~a.b.name``` (shown as ``name``), or
#: ``:func:`title <a.b.name>```.
ROLE = re.compile(r":(?:py:)?(?P<role>" + "|".join(ROLES) + r"):`(?P<body>[^`]+)`")
#: What a role left as literal text looks like in Markdown or in HTML.
LITERAL_ROLE = re.compile(r":(?:py:)?(?:" + "|".join(ROLES) + r"):(?:`|<code>)")


def target_and_title(body: str) -> tuple[str, str]:
    """A role's target and the text it shows, as Sphinx reads them."""
    explicit = re.fullmatch(r"(?P<title>.*?)\s*<(?P<target>[^<>]+)>", body, flags=re.S)
    if explicit:
        return explicit["target"].strip().lstrip("!.~"), explicit["title"].strip()
    target = body.strip().lstrip("!")
    if target.startswith("~"):
        target = target[1:].lstrip(".")
        return target, target.rsplit(".", 1)[-1]
    target = target.lstrip(".")
    return target, target


def convert_roles(text: str, resolve: Callable[[str], str | None]) -> str:
    """``text`` with each Sphinx role replaced by a cross-reference.

    ``resolve`` maps a role's target (as written, relative or absolute) to
    the full path of the object it names, or ``None`` when the package has no
    such object.  A resolved target becomes an optional autorefs reference:
    a link where the site documents that path, the title in code where it
    does not; an unresolved one becomes the title in code.
    """

    def replace(match: re.Match[str]) -> str:
        target, title = target_and_title(match["body"])
        path = resolve(target)
        if path is None:
            return f"`{title}`"
        return f'<autoref identifier="{html.escape(path)}" optional><code>{html.escape(title)}</code></autoref>'

    return ROLE.sub(replace, text)


def on_post_page(output: str, *, page: Any, **kwargs: Any) -> str:
    """MkDocs hook: a role left as literal text on a page fails the build."""
    text = re.sub(r"<pre[^>]*>.*?</pre>", "", output, flags=re.S)  # code blocks may show a role
    for match in LITERAL_ROLE.finditer(text):
        context = html.unescape(re.sub(r"<[^>]+>", "", text[match.start(): match.start() + 80]))
        logging.getLogger("mkdocs.hooks.docs_roles").warning(
            "%s: a Sphinx role left as literal text: %s", page.file.src_uri, context.splitlines()[0]
        )
    return output
