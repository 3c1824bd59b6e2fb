"""Every fenced code block of the README and of the pages under docs/ is
executed by a test, or marked in the page with the reason it is not.

A block's directive is an HTML comment on the line right before its fence
(MkDocs leaves it out of the page):

``<!-- docs-test: skip REASON -->`` (or, where nothing may come before the
block, ``<!-- docs-test (the block above): skip REASON -->`` right after it)
    not executed; REASON is required (a ``pip install``, a make target, a
    command that needs a Neuron device).
``<!-- docs-test: checked-by tests/FILE.py::TEST -->``
    compared by that test, which reads the page (it exists and names the
    page's file).
``<!-- docs-test: run [OPTIONS] -->`` (or no directive)
    ``python`` blocks run, those of one page in one process in page order,
    each after the code in the directive's body (lines after the first,
    hidden from the reader); ``sh`` blocks run each line as a command
    (exit status 0, or the ``# exit status N`` its comment says);
    ``console`` blocks run each ``$ `` line and compare what it prints with
    the lines shown after it.
``<!-- docs-test: output [OPTIONS] -- COMMAND -->``
    a ``text`` block (or one without a language) is what COMMAND prints.
``<!-- docs-test: synopsis COMMAND... -->``
    a usage synopsis: every ``--option`` it names is an option of one of
    the ``no64 COMMAND --help`` it summarizes.
``<!-- docs-test: tree DIR -->``
    a file tree: every entry exists under DIR.

OPTIONS: ``cwd=DIR`` (a folder of the repository, read only; else a fresh
temporary folder), ``files=NAME:PATH,...`` (repository files copied into the
temporary folder under NAME), ``prepare=PATH`` (a repository script run
in the temporary folder first, to write a file a block reads), ``env=K=V,...``, ``platform=P`` (a command's
``NO64_PLATFORMS=neuron`` runs as ``NO64_PLATFORMS=P``: the backend here
stands in for the device), ``stream=stderr`` (compare only the report on
stderr), ``release=verified`` (outputs of a JAX program's modules: compared
on the release the releases guide names, elsewhere only run).  The working
folder's path is left out of what a command prints.

A command's program is ``no64`` (run as ``python -m no64``), ``python`` or
``pytest`` (this interpreter's); a shown output line ``...`` stands for any
lines, and ``...`` inside a line for any text.  Every block is accounted for:
a block of another language, or a ``text`` block, without a directive fails.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^(`{3,})(\S*)\s*$")
_DIRECTIVE = re.compile(r"<!-- docs-test: (.*?)-->\s*$", re.S)
_ABOVE = "<!-- docs-test (the block above): "
_STATUS = re.compile(r"exit status (\d+)")


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    kind: str = "run"
    options: dict[str, str] = field(default_factory=dict)
    arg: str = ""  # skip's reason, checked-by's test, output's command, ...
    setup: str = ""  # hidden code run before a python block

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _parse_directive(block: Block, comment: str) -> None:
    first, _, body = comment.partition("\n")
    block.setup = body
    words = first.strip().split(None, 1)
    if not words:
        raise ValueError(f"{block.where}: an empty docs-test directive")
    block.kind = words[0]
    rest = words[1] if len(words) > 1 else ""
    if block.kind in ("skip", "checked-by", "synopsis", "tree"):
        block.arg = rest.strip()
        return
    if block.kind not in ("run", "output"):
        raise ValueError(f"{block.where}: unknown docs-test directive {block.kind!r}")
    head, _, command = rest.partition(" -- ")
    block.arg = command.strip()
    for word in head.split():
        key, _, value = word.partition("=")
        block.options[key] = value


def blocks(page: Path) -> list[Block]:
    lines = page.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j] == m.group(1))
        block = Block(page, i + 1, m.group(2), "\n".join(lines[i + 1:end]) + "\n")
        # the directive: a comment that ends on the line before the fence, or
        # (where nothing may come before the block) one on the line after it
        if i > 0 and lines[i - 1].rstrip().endswith("-->"):
            start = max(k for k in range(i) if "<!--" in lines[k])
            d = _DIRECTIVE.search("\n".join(lines[start:i]))
            if d:
                _parse_directive(block, d.group(1).rstrip())
        if end + 1 < len(lines) and lines[end + 1].startswith(_ABOVE):
            _parse_directive(block, lines[end + 1][len(_ABOVE):].removesuffix("-->").rstrip())
        found.append(block)
        i = end + 1
    return found


ALL = [b for page in PAGES for b in blocks(page)]


# --------------------------------------------------------------------------- running


def _verified_release() -> bool:
    page = (ROOT / "docs" / "guides" / "jax-releases.md").read_text()
    m = re.search(r"installs \(jax (\S+) on Python", page)
    assert m is not None
    return importlib.metadata.version("jax") == m.group(1)


def _env(block: Block, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NO64_") and k != "JAX_ENABLE_X64"}
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "80"  # pytest's section rules
    env["NO_COLOR"] = "1"
    # tests/ for the audit scripts' `support` module
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), *filter(None, [env.get("PYTHONPATH")])])
    for item in filter(None, block.options.get("env", "").split(",")):
        key, _, value = item.partition("=")
        env[key] = value
    env.update(extra or {})
    return env


def _workdir(block: Block, tmp_path: Path) -> Path:
    for item in filter(None, block.options.get("files", "").split(",")):
        name, _, source = item.partition(":")
        shutil.copy(ROOT / source, tmp_path / name)
    if "prepare" in block.options:
        subprocess.run([sys.executable, str(ROOT / block.options["prepare"])], cwd=tmp_path, env=_env(block),
                       check=True, capture_output=True, timeout=300)
    cwd = block.options.get("cwd")
    if cwd is not None:
        assert "files" not in block.options, f"{block.where}: cwd= and files= exclude each other"
        return ROOT / cwd
    return tmp_path


def _argv(block: Block, command: str) -> tuple[list[str], dict[str, str]]:
    words = shlex.split(command)
    env: dict[str, str] = {}
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        key, _, value = words.pop(0).partition("=")
        if key == "NO64_PLATFORMS" and "platform" in block.options:
            value = value.replace("neuron", block.options["platform"])
        env[key] = value
    program, args = words[0], words[1:]
    prefix = {"no64": [sys.executable, "-m", "no64"], "python": [sys.executable],
              "pytest": [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]}
    assert program in prefix, f"{block.where}: cannot run {program!r} here: mark the block skip with a reason"
    return prefix[program] + args, env


def _run(block: Block, command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv, env = _argv(block, command)
    return subprocess.run(argv, cwd=cwd, env=_env(block, env), capture_output=True, text=True, timeout=300)


def _printed(block: Block, proc: subprocess.CompletedProcess[str], cwd: Path) -> list[str]:
    """What a command shows: its stdout, then no64's lines on stderr (from the
    first that starts with ``no64 `` or ``no64:``: the program's own warnings and XLA's
    log before it are left out); with stream=stderr only the latter.  The
    working folder's path is left out of file names."""
    err = proc.stderr.splitlines()
    head = next((i for i, text in enumerate(err) if text.startswith(("no64 ", "no64:"))), len(err))
    out = [] if block.options.get("stream") == "stderr" else proc.stdout.splitlines()
    return [text.replace(f"{cwd}{os.sep}", "") for text in out + err[head:]]


def _matches(shown: list[str], got: list[str]) -> bool:
    if not shown:
        return not got
    if shown[0] == "...":
        return any(_matches(shown[1:], got[k:]) for k in range(len(got) + 1))
    if not got:
        return False
    pattern = ".*?".join(re.escape(part) for part in shown[0].split("..."))
    return re.fullmatch(pattern, got[0]) is not None and _matches(shown[1:], got[1:])


def _compare(block: Block, command: str, shown: list[str], proc: subprocess.CompletedProcess[str],
             cwd: Path) -> None:
    if block.options.get("release") == "verified" and not _verified_release():
        return  # another JAX release compiles other modules of its own
    got = _printed(block, proc, cwd)
    assert _matches(shown, got), (
        f"{block.where}: `{command}` printed\n" + "\n".join(got) + "\n\nthe page shows\n" + "\n".join(shown))


def _commands(block: Block) -> list[tuple[str, int, list[str]]]:
    """(command, exit status, shown output) of each command of the block."""
    out: list[tuple[str, int, list[str]]] = []
    for text in block.text.splitlines():
        if block.lang == "console":
            if not text.startswith("$ "):
                out[-1][2].append(text)
                continue
            text = text[2:]
        if not text.strip():
            continue
        m = re.match(r"(.*?)(?:\s+#\s(.*))?$", text)
        assert m is not None
        command, comment = m.group(1), m.group(2) or ""
        status = _STATUS.search(comment)
        out.append((command.strip(), int(status.group(1)) if status else 0, []))
    return out


def _run_commands(block: Block, tmp_path: Path) -> None:
    cwd = _workdir(block, tmp_path)
    for command, status, shown in _commands(block):
        proc = _run(block, command, cwd)
        assert proc.returncode == status, (
            f"{block.where}: `{command}` exited {proc.returncode}, not {status}\n{proc.stdout}\n{proc.stderr}")
        if block.lang == "console":
            _compare(block, command, shown, proc, cwd)


def _run_output(block: Block, tmp_path: Path) -> None:
    cwd = _workdir(block, tmp_path)
    status = int(block.options.get("exit", "0"))
    proc = _run(block, block.arg, cwd)
    assert proc.returncode == status, (
        f"{block.where}: `{block.arg}` exited {proc.returncode}, not {status}\n{proc.stdout}\n{proc.stderr}")
    _compare(block, block.arg, block.text.splitlines(), proc, cwd)


_PYTHON_PAGE = """
import sys
for _where, _code in BLOCKS:
    print("docs-test:", _where, file=sys.stderr, flush=True)
    exec(compile(_code, _where, "exec"), globals())
print("docs-test: done", file=sys.stderr)
"""


def _run_python(page: Path, tmp_path: Path) -> None:
    page_blocks = [b for b in blocks(page) if b.lang == "python" and b.kind == "run"]
    assert page_blocks
    env: dict[str, str] = {}
    for block in page_blocks:
        _workdir(block, tmp_path)
        env.update(_env(block))
    code = [(b.where, b.setup + "\n" + b.text) for b in page_blocks]
    script = tmp_path / "docs_page.py"
    script.write_text(f"BLOCKS = {code!r}\n" + _PYTHON_PAGE)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and proc.stderr.rstrip().endswith("docs-test: done"), proc.stderr[-6000:]


def _help_options(commands: list[str]) -> set[str]:
    options: set[str] = set()
    for command in commands:
        proc = subprocess.run([sys.executable, "-m", "no64", *command.split(), "--help"],
                              env=_env(Block(ROOT, 0, "", "")), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        options |= set(re.findall(r"(?<![\w-])--[a-z][\w-]*", proc.stdout))
    return options


# --------------------------------------------------------------------------- the tests


def _id(block: Block) -> str:
    return block.where.replace("/", "-")


def test_every_block_is_executed_or_marked_with_a_reason() -> None:
    assert len(ALL) > 20
    for block in ALL:
        if block.kind == "skip":
            assert block.arg, f"{block.where}: a skip says why"
        elif block.kind == "checked-by":
            file, _, test = block.arg.partition("::")
            source = (ROOT / file).read_text()
            assert f"\ndef {test}(" in source, f"{block.where}: no test {block.arg}"
            assert f'"{block.page.name}"' in source, f"{block.where}: {file} does not read {block.page.name}"
        elif block.kind == "run":
            assert block.lang in ("python", "sh", "console"), (
                f"{block.where}: a ```{block.lang or '(no language)'} block needs a docs-test directive "
                "(output, synopsis, tree, checked-by, or skip with a reason)")
        elif block.kind == "output":
            assert block.lang in ("text", ""), block.where
            assert block.arg, f"{block.where}: output names its command after ` -- `"
        else:
            assert block.kind in ("synopsis", "tree") and block.arg, block.where


def test_the_parser_reads_directives_and_shown_output() -> None:
    assert _matches(["a", "...", "c ... d"], ["a", "x", "y", "c long d"])
    assert not _matches(["a", "c"], ["a", "b", "c"])
    assert not _matches(["a ... d"], ["a b c"])
    kinds = {b.kind for b in ALL}
    assert {"run", "skip", "output", "checked-by", "synopsis", "tree"} <= kinds
    assert _commands(Block(ROOT, 0, "sh", "no64 check x.mlir   # exit status 1 if any\nno64 x  # y\n")) == [
        ("no64 check x.mlir", 1, []), ("no64 x", 0, [])]


@pytest.mark.parametrize("page", sorted({b.page for b in ALL if b.lang == "python" and b.kind == "run"}),
                         ids=lambda p: str(p.relative_to(ROOT)).replace("/", "-"))
def test_python_blocks_run(page: Path, tmp_path: Path) -> None:
    _run_python(page, tmp_path)


_COMMAND_BLOCKS = [b for b in ALL if (b.kind == "run" and b.lang in ("sh", "console")) or b.kind == "output"]


@pytest.mark.parametrize("block", _COMMAND_BLOCKS, ids=_id)
def test_command_blocks_run(block: Block, tmp_path: Path) -> None:
    if block.kind == "output":
        _run_output(block, tmp_path)
    else:
        _run_commands(block, tmp_path)


def test_synopses_name_real_options() -> None:
    for block in [b for b in ALL if b.kind == "synopsis"]:
        named = set(re.findall(r"(?<![\w-])--[a-z][\w-]*", block.text))
        assert named, block.where
        assert named <= _help_options(block.arg.split(",")), (block.where, named - _help_options(block.arg.split(",")))


def test_trees_name_real_files() -> None:
    for block in [b for b in ALL if b.kind == "tree"]:
        base = ROOT / block.arg
        for text in block.text.splitlines()[1:]:
            name = text.split()[0]
            assert (base / name).exists(), (block.where, name)
