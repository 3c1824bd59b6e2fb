"""The README and the documentation pages hold together: the README opens
with its two set-up commands and stays short, every page it links to
exists, every page under docs/ is in mkdocs.yml's navigation (and every
navigation entry is a page), and every relative link between pages names a
file that exists.  ``make docs`` builds the site itself, with MkDocs'
``--strict`` checks of links and anchors."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
# [text](target) outside code spans; the target without its #anchor
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # fenced code
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans
    targets = [m.group(1) for m in _LINK.finditer(text)]
    return [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def _nav() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    block = re.split(r"\n(?=\S)", text, maxsplit=1)[0]  # up to the next top-level key
    return re.findall(r"^\s*- (?:[^:\n]+: )?(\S+\.md)\s*$", block, flags=re.M)


def test_readme_opens_with_the_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme.startswith("# no64\n\n```sh\nmake demo\nmake test\n```\n")
    assert len(readme.splitlines()) <= 200
    first = "\n".join(readme.splitlines()[:80])
    for command in ("pip install .", "NO64_PLATFORMS=neuron python train.py", "no64 audit --fail-on"):
        assert command in first, command


def test_readme_opening_says_what_each_policy_does() -> None:
    # what happens where a value needs 64 bits, before the quick start; each
    # sentence is held by a test: the default's warning and wrapped value
    # (tests/jax/test_intent.py, test_meaning_traced_at_compile_...), strict's
    # NarrowingError and exact's values and OutputRangeError (test_each_policy),
    # the float64 argument beyond float32's range under both float policies
    # (tests/jax/test_meaning_runs.py)
    readme = (ROOT / "README.md").read_text()
    opening = " ".join(readme.split("## Install", 1)[0].split())
    assert "refuses what cannot be narrowed" not in opening
    for said in ("`default`: the 32-bit program runs and no64 warns at the line (`no64.UnprovenIntegerWarning`",
                 "an int64 `cumsum` reaching 3,200,000,000 gives -1,094,967,296 with that warning",
                 "`strict`: refused, a `no64.NarrowingError` naming the line",
                 "`exact`: computed exactly in pairs of 32-bit words",
                 "a `no64.OutputRangeError` when it runs",
                 "`f32` (the default): computed as float32", "`pairs`: computed as pairs of float32",
                 "a float64 argument beyond 3.4e38 is refused",
                 "`make test-quick`", "Continuous integration runs the full suite"):
        assert said in opening, said
    assert "\ntest-quick: $(STAMP)\n" in (ROOT / "Makefile").read_text()  # the target the README offers


def test_readme_links_exist() -> None:
    links = _links(ROOT / "README.md")
    assert any(link.startswith("docs/") for link in links)
    for link in links:
        assert (ROOT / link).exists(), link


def test_every_page_is_in_the_navigation() -> None:
    nav = _nav()
    assert len(nav) == len(set(nav))
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages


def test_links_between_pages_exist() -> None:
    for page in DOCS.rglob("*.md"):
        for link in _links(page):
            assert (page.parent / link).exists(), (page, link)
    for link in _links(ROOT / "CONTRIBUTING.md"):
        assert (ROOT / link).exists(), link


def _tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_reference_puts_the_entry_points_first() -> None:
    # every public name has its own entry, under the name users call it by
    # (`no64.jit`, not the module that defines it); the entry points come
    # first, the exceptions after them
    import no64

    public = no64.__all__
    api = (DOCS / "reference" / "api.md").read_text()
    entries = re.findall(r"^::: (\S+)$", api, flags=re.M)
    assert public
    for name in public:
        assert f"no64.{name}" in entries, name
    assert entries[:2] == ["no64.jit", "no64.lower"]
    first_error = min(entries.index(f"no64.{n}") for n in public if n.endswith(("Error", "Warning")))
    for name in ("jit", "install", "demote", "check", "audit", "numerics"):
        assert entries.index(f"no64.{name}") < first_error, name
    assert "no64.jax.jit.jit" not in api


def test_the_roles_become_cross_references() -> None:
    roles = _tool("docs_roles")
    resolve = {"no64.demote": "no64.demote", "Options": "no64.options.Options",
               "no64.report.DemotionReport": "no64.report.DemotionReport"}.get
    text = ("(:func:`no64.demote`), :class:`~no64.report.DemotionReport`, :class:`Options`, "
            ":meth:`the swap <no64.demote>`, :mod:`no64.private`, :func:`jax.jit`")
    assert roles.convert_roles(text, resolve) == (
        '(<autoref identifier="no64.demote" optional><code>no64.demote</code></autoref>), '
        '<autoref identifier="no64.report.DemotionReport" optional><code>DemotionReport</code></autoref>, '
        '<autoref identifier="no64.options.Options" optional><code>Options</code></autoref>, '
        '<autoref identifier="no64.demote" optional><code>the swap</code></autoref>, '
        "`no64.private`, `jax.jit`"
    )


def _docstrings() -> list[tuple[str, str]]:
    found = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    found.append((f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 1)}", doc))
    return found


def test_no_docstring_keeps_a_literal_role() -> None:
    # the reference renders the docstrings through convert_roles: every role
    # the sources write is one it converts, resolved or not
    roles = _tool("docs_roles")
    docstrings = _docstrings()
    converted = 0
    for where, doc in docstrings:
        converted += len(roles.ROLE.findall(doc))
        for resolve in (lambda target: target, lambda target: None):
            out = roles.convert_roles(doc, resolve)
            assert not roles.LITERAL_ROLE.search(out), (where, roles.LITERAL_ROLE.search(out))
            assert not re.search(r":(?:py:)?[a-z]+:`", out), where
    assert converted > 100
