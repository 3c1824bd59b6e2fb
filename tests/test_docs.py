"""The README and the documentation pages hold together: the README opens
with its two set-up commands and stays short, every page it links to
exists, every page under docs/ is in mkdocs.yml's navigation (and every
navigation entry is a page), and every relative link between pages names a
file that exists.  ``make docs`` builds the site itself, with MkDocs'
``--strict`` checks of links and anchors."""

from __future__ import annotations

import re
from pathlib import Path

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
    first = "\n".join(readme.splitlines()[:60])
    for command in ("pip install .", "NO64_PLATFORMS=neuron python train.py", "no64 audit --fail-on"):
        assert command in first, command


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


def test_api_reference_lists_the_lazy_names() -> None:
    # `::: no64` renders the names `import no64` defines; the JAX layer's
    # load on first use and are listed one by one
    init = (ROOT / "src" / "no64" / "__init__.py").read_text()
    lazy = dict(re.findall(r'"(\w+)": "([\w.]+)"', init.split("_LAZY_EXPORTS = {", 1)[1].split("}", 1)[0]))
    api = (DOCS / "reference" / "api.md").read_text()
    assert lazy
    for name, module in lazy.items():
        assert f"::: no64.{module}.{name}\n" in api, name
