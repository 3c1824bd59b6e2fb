"""Bad input on the command line and the API: truncated and corrupted files of
every format, deep nesting, odd file names, devices, FIFOs and links.

Every case checks the exit status, that no traceback is printed, and that no
input file changed.  Cases run in this process (``no64.cli.main``) except
those whose failure mode would be a crash of the process.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import no64
from no64 import io as no64io
from no64.cli import main
from support import ir, make_context

DATA = Path(__file__).parents[1] / "data"
F64 = DATA / "f64_mixed.mlir"
FORMATS = ("mlir", "mlirbc", "vhlo", "hlo", "hlopb")
EXT = {"mlir": "mlir", "mlirbc": "mlirbc", "vhlo": "vhlo", "hlo": "hlo", "hlopb": "hlo.pb"}


def _snapshot(paths: list[Path]) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), stat.S_IMODE(os.stat(p).st_mode)) for p in paths if p.is_file()}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    return code, out, err


def _refused(capsys: pytest.CaptureFixture[str], *argv: str, inputs: list[Path] = ()) -> str:
    """Run ``no64 argv``; assert exit 2, one error line, inputs unchanged; return the line."""
    before = _snapshot(list(inputs))
    code, _, err = _run(capsys, *argv)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("no64: error: "), err
    assert _snapshot(list(inputs)) == before
    return lines[-1]


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The 64-bit sample module in every format."""
    module = no64io.load(str(F64))
    return {fmt: no64io.dumps(module, fmt) for fmt in FORMATS}


# --------------------------------------------------------------------------- truncated and corrupt files

def _damaged(data: bytes, seed: int) -> Iterator[tuple[str, bytes]]:
    """Truncations at fixed and random points, and random byte flips."""
    rng = np.random.default_rng(seed)
    n = len(data)
    cuts = sorted({1, 4, 8, n // 3, n // 2, n - 2, *rng.integers(9, n - 2, 6).tolist()})
    for cut in cuts:
        yield f"cut{cut}", data[:cut]
    for i in range(4):
        damaged = bytearray(data)
        for pos in rng.integers(0, n, 3):
            damaged[pos] ^= int(rng.integers(1, 256))
        yield f"flip{i}", bytes(damaged)


_CORPUS_SCRIPT = textwrap.dedent(
    """
    import contextlib, io, json, sys
    from no64.cli import main
    for f in sys.argv[1:]:
        row = {"file": f}
        for cmd, argv in (("check", ["check", f]), ("convert", ["convert", f, "-o", f + ".out.mlir"])):
            err, out = io.StringIO(), io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                row[cmd] = main(argv)
            row[cmd + "_err"] = err.getvalue()
        print(json.dumps(row), flush=True)
    """
)


@pytest.mark.parametrize("fmt", FORMATS)
def test_damaged_files(fmt: str, samples: dict[str, bytes], tmp_path: Path) -> None:
    """A damaged file gets exit 2 and one line -- or, where the damage leaves a
    valid module (a byte flip inside a constant), an ordinary result.  Run in
    a child process: the parsers abort on some damaged bytecode."""
    files = []
    for label, data in _damaged(samples[fmt], seed=FORMATS.index(fmt)):
        path = tmp_path / f"{label}.{EXT[fmt]}"
        path.write_bytes(data)
        files.append(path)
    before = _snapshot(files)
    proc = subprocess.run(
        [sys.executable, "-c", _CORPUS_SCRIPT, *map(str, files)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["file"] for r in rows] == [str(f) for f in files]
    for row in rows:
        label = Path(row["file"]).name
        for cmd in ("check", "convert"):
            code, err = row[cmd], row[cmd + "_err"]
            assert "Traceback" not in err and "internal error" not in err, (label, err)
            assert code in (0, 1, 2), (label, err)
            if label.startswith("cut") and fmt in ("mlir", "mlirbc", "vhlo"):
                # A cut MLIR file is never complete (a cut HloModuleProto
                # may end at a field boundary; XLA reads HLO text without
                # its last brace).
                assert code == 2, (label, cmd, err)
            if code == 2:
                lines = err.strip().splitlines()
                assert len(lines) == 1 and lines[0].startswith("no64: error: "), (label, err)
                assert row["file"] in lines[0], (label, err)
    assert _snapshot(files) == before


# --------------------------------------------------------------------------- nesting

def _nested(kind: str, n: int) -> str:
    if kind == "module":
        return "module {\n" * n + "}\n" * n
    if kind == "tuple":
        t = "tensor<f64>"
        for _ in range(n):
            t = f"tuple<{t}>"
        return f"func.func @main(%a: {t}) -> {t} {{\n  return %a : {t}\n}}\n"
    if kind == "callsite":
        loc = '"a"'
        for _ in range(n):
            loc = f'callsite({loc} at "b")'
        return f"func.func @main(%a: tensor<f64>) -> tensor<f64> {{\n  return %a : tensor<f64>\n}} loc({loc})\n"
    if kind == "region":
        inner = "stablehlo.return %a : tensor<f64>"
        for i in range(n):
            inner = (
                f'%r{i} = "stablehlo.case"(%i) ({{\n{inner}\n}}) : (tensor<i32>) -> tensor<f64>\n'
                f"stablehlo.return %r{i} : tensor<f64>"
            )
        return (
            "func.func @main(%a: tensor<f64>, %i: tensor<i32>) -> tensor<f64> {\n"
            f'%r = "stablehlo.case"(%i) ({{\n{inner}\n}}) : (tensor<i32>) -> tensor<f64>\n'
            "return %r : tensor<f64>\n}\n"
        )
    if kind == "hlotuple":
        t = "f64[]"
        for _ in range(n):
            t = f"({t})"
        return f"HloModule m\n\nENTRY main {{\n  p = {t} parameter(0)\n  ROOT r = {t} copy(p)\n}}\n"
    raise ValueError(kind)


_KINDS = ("module", "tuple", "callsite", "region", "hlotuple")


@pytest.mark.parametrize("kind", _KINDS)
def test_nesting_at_the_limit_is_read(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Input a little below the documented depth is read as usual.  (Each
    level of regions is two levels of brackets: ``({``.)"""
    depth = (no64io.MAX_NESTING - 8) // (2 if kind == "region" else 1)
    path = tmp_path / f"{kind}.{'hlo' if kind == 'hlotuple' else 'mlir'}"
    path.write_text(_nested(kind, depth))
    code, _, err = _run(capsys, "check", str(path))
    assert "nested" not in err
    assert code in (0, 1, 2)  # (XLA's own proto depth limit refuses deep HLO tuples)


@pytest.mark.parametrize("kind", _KINDS)
def test_nesting_past_the_limit_is_refused(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"{kind}.{'hlo' if kind == 'hlotuple' else 'mlir'}"
    path.write_text(_nested(kind, no64io.MAX_NESTING + 1))
    line = _refused(capsys, "check", str(path), inputs=[path])
    assert f"nested more than {no64io.MAX_NESTING} levels deep" in line
    assert line.startswith(f"no64: error: {path}:")
    _refused(capsys, "convert", str(path), "-o", str(tmp_path / "out.mlirbc"), inputs=[path])
    assert not (tmp_path / "out.mlirbc").exists()


def _deep_bytecode(n: int) -> bytes:
    """Regions nested ``n`` deep, as bytecode (parsed in a thread with a
    large stack: the text parser recurses per level)."""
    out: list[bytes] = []

    def work() -> None:
        module = ir.Module.parse(_nested("region", n), context=make_context())
        out.append(no64io.dumps(module, "mlirbc"))

    old = threading.stack_size(256 << 20)
    try:
        t = threading.Thread(target=work)
        t.start()
    finally:
        threading.stack_size(old)
    t.join()
    return out[0]


def test_deep_bytecode_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.mlirbc"
    path.write_bytes(_deep_bytecode(no64io.MAX_NESTING + 20))
    line = _refused(capsys, "check", str(path), inputs=[path])
    assert f"regions nested more than {no64io.MAX_NESTING} levels deep" in line
    _refused(capsys, "convert", str(path), "-o", str(tmp_path / "o.mlir"), inputs=[path])


def test_far_too_deep_input_does_not_crash(tmp_path: Path) -> None:
    """Thousands of levels (which crashed the parsers with SIGSEGV): refused
    with exit 2.  Run in a child process, whose crash cannot take pytest down."""
    files = []
    for kind, n in (("module", 20000), ("tuple", 5000), ("callsite", 20000), ("region", 5000), ("hlotuple", 5000)):
        path = tmp_path / f"{kind}.{'hlo' if kind == 'hlotuple' else 'mlir'}"
        path.write_text(_nested(kind, n))
        files.append(str(path))
    (tmp_path / "deep.mlirbc").write_bytes(_deep_bytecode(1000))
    files.append(str(tmp_path / "deep.mlirbc"))
    script = textwrap.dedent(
        """
        import sys
        from no64.cli import main
        for f in sys.argv[1:]:
            print(main(["check", f]), main(["convert", f, "-o", f + ".out.mlir"]), flush=True)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, *files], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["2"] * (2 * len(files)), proc.stderr
    assert "Traceback" not in proc.stderr
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 2 * len(files) and all(e.startswith("no64: error: ") for e in errors)
    assert not any(os.path.exists(f + ".out.mlir") for f in files)


# --------------------------------------------------------------------------- file names


_NAMES = [
    "with space.mlir",
    "ünïcødé.mlir",
    "-leading-dash.mlir",
    "no_extension",
    "x" * 200 + ".mlir",
    "new\nline.mlir",
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", _NAMES, ids=lambda n: repr(n)[:20])
def test_odd_file_names(
    fmt: str, name: str, samples: dict[str, bytes], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Any name the OS gives is read, whatever the format."""
    path = os.path.join(str(tmp_path), name)
    with open(path, "wb") as f:
        f.write(samples[fmt])
    code, out, err = _run(capsys, "check", "--", path) if path.startswith("-") else _run(capsys, "check", path)
    assert code == 1, err
    out_path = os.path.join(str(tmp_path), "out-" + os.fsdecode(name)) + ".mlir"
    code, _, err = _run(capsys, "convert", path, "-o", out_path)
    assert code == 0, err
    assert no64.find_64bit(no64io.load(out_path)) == []
    assert open(path, "rb").read() == samples[fmt]


def test_file_names_that_are_not_utf8(samples: dict[str, bytes], tmp_path: Path) -> None:
    """A name that is not UTF-8 (it reaches Python with surrogate escapes) is
    read in every format and printed as the bytes it is."""
    names = []
    for fmt in FORMATS:
        name = os.path.join(os.fsencode(tmp_path), b"latin1-\xe9\xff." + EXT[fmt].encode())
        with open(name, "wb") as f:
            f.write(samples[fmt])
        names.append(name)
    out = os.path.join(os.fsencode(tmp_path), b"out-\xe9.mlir")
    proc = subprocess.run(
        [sys.executable, "-m", "no64", "check", *names], capture_output=True, timeout=120
    )
    assert proc.returncode == 1, proc.stderr
    assert b"Traceback" not in proc.stderr
    assert proc.stdout.count(b"latin1-\xe9\xff.") == 2 * len(FORMATS)  # table header, summary
    proc = subprocess.run(
        [sys.executable, "-m", "no64", "convert", names[0], "-o", out], capture_output=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert no64.find_64bit(no64io.load(os.fsdecode(out))) == []
    assert [open(n, "rb").read() for n in names] == [samples[f] for f in FORMATS]


# --------------------------------------------------------------------------- devices, FIFOs, sizes


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_device_input_is_refused(device: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(capsys, "check", device)
    assert "character device" in line
    assert stat.S_ISCHR(os.stat(device).st_mode)


def test_directory_without_modules_and_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "no module files" in _refused(capsys, "check", str(tmp_path))
    assert "no such file" in _refused(capsys, "check", str(tmp_path / "missing.mlir"))
    assert "is a directory" in _refused(capsys, "convert", str(tmp_path), "-o", str(tmp_path / "o.mlir"))


def test_fifo_without_writer_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(no64io.sources, "PIPE_WAIT_SECONDS", 0.2)  # where the pipe is read
    fifo = tmp_path / "in.mlir"
    os.mkfifo(fifo)
    assert "nothing written to this pipe" in _refused(capsys, "check", str(fifo))
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_fifo_input_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "in.mlir"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f'cat "{F64}" > "{fifo}"'])
    try:
        code, out, err = _run(capsys, "check", str(fifo))
    finally:
        writer.wait(timeout=30)
    assert code == 1, err
    assert "8 64-bit values" in out


def test_endless_fifo_hits_the_size_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "in.mlir"
    os.mkfifo(fifo)
    writer = subprocess.Popen(
        ["sh", "-c", f'yes "// comment" > "{fifo}"'], stderr=subprocess.DEVNULL
    )
    try:
        line = _refused(capsys, "check", "--max-input-size", "1M", str(fifo))
    finally:
        writer.kill()
        writer.wait(timeout=30)
    assert "larger than 1 MiB" in line and "--max-input-size" in line


def test_size_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    size = F64.stat().st_size
    line = _refused(capsys, "check", "--max-input-size", str(size - 1), str(F64), inputs=[F64])
    assert f"larger than {size - 1} bytes" in line
    code, _, _ = _run(capsys, "check", "--max-input-size", str(size), str(F64))
    assert code == 1
    code, _, _ = _run(capsys, "check", "--max-input-size", "0", str(F64))  # no limit
    assert code == 1
    for bad in ("-1", "1x", "", "1.5G"):
        _refused(capsys, "check", "--max-input-size", bad, str(F64))
    with pytest.raises(no64.InputError, match="larger than 10 bytes"):
        no64io.load(str(F64), max_size=10)
    assert no64io.load(F64.read_bytes(), max_size=10)  # bytes in memory are not limited


# --------------------------------------------------------------------------- outputs


def test_output_to_dev_null(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for extra in ([], ["--force"]):
        code, _, err = _run(capsys, "convert", str(F64), "-o", "/dev/null", "--output-format", "mlir", *extra)
        assert code == 0, err
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_output_to_fifo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "out.mlir"
    os.mkfifo(fifo)
    assert "no program reads from this pipe" in _refused(capsys, "convert", str(F64), "-o", str(fifo))
    # A reader that holds the pipe open before the writer starts (a reader
    # started as a process might not have opened it yet on a busy machine);
    # the small module fits in the pipe's buffer, read once the writer is done.
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        code, _, err = _run(capsys, "convert", str(F64), "-o", str(fifo))
        chunks = []
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    written = b"".join(chunks)
    assert code == 0, err
    assert written.startswith(b"#loc") or b"module" in written
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_output_through_symlink(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "target.mlir"
    link = tmp_path / "link.mlir"
    link.symlink_to(target.name)  # dangling: the target is created
    code, _, err = _run(capsys, "convert", str(F64), "-o", str(link))
    assert code == 0, err
    assert link.is_symlink() and target.is_file()
    first = target.read_bytes()
    # Existing target: refused without --force, written through with it.
    assert "file exists" in _refused(capsys, "convert", str(F64), "-o", str(link), inputs=[target])
    target.write_text("old")
    code, _, err = _run(capsys, "convert", str(F64), "-o", str(link), "--force")
    assert code == 0, err
    assert link.is_symlink() and target.read_bytes() == first


def test_overwrite_keeps_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.mlir"
    out.write_text("old")
    os.chmod(out, 0o640)
    code, _, err = _run(capsys, "convert", str(F64), "-o", str(out), "--force")
    assert code == 0, err
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640
    assert out.read_text() != "old"
    # --in-place keeps it too.
    copy = tmp_path / "copy.mlir"
    copy.write_bytes(F64.read_bytes())
    os.chmod(copy, 0o600)
    code, _, err = _run(capsys, "convert", str(copy), "--in-place")
    assert code == 0, err
    assert stat.S_IMODE(os.stat(copy).st_mode) == 0o600


def test_refused_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    existing = tmp_path / "exists.mlir"
    existing.write_text("keep me")
    assert "file exists" in _refused(capsys, "convert", str(F64), "-o", str(existing), inputs=[existing, F64])
    assert "is a directory" in _refused(capsys, "convert", str(F64), "-o", str(tmp_path))
    assert "refusing to overwrite the input" in _refused(capsys, "convert", str(F64), "-o", str(F64), inputs=[F64])
    link = tmp_path / "to-input.mlir"
    link.symlink_to(F64)
    _refused(capsys, "convert", str(F64), "-o", str(link), "--force", inputs=[F64])
    assert "cannot write" in _refused(capsys, "convert", str(F64), "-o", str(tmp_path / "no" / "dir.mlir"))
    assert existing.read_text() == "keep me"


# --------------------------------------------------------------------------- usage errors


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "o.mlir")
    cases = [
        ["convert", str(F64), "-o", out, "--range", "1=0:5", "--range", "1=0:6"],
        ["convert", str(F64), "-o", out, "--range", "n=0:5", "--range", "n=0:5"],
        ["convert", str(F64), "-o", out, "--range", "1=1.5:2"],
        ["convert", str(F64), "-o", out, "--range", "1=5:1"],
        ["convert", str(F64), "-o", out, "--range", "9=0:1"],
        ["convert", str(F64)],
        ["convert", str(F64), "-o", out, "--policy", "nope"],
        ["check"],
        ["nope"],
        [],
        ["audit"],
        ["audit", "-m", "no64_missing_module_for_tests"],
        ["audit", "-m", "no64_missing_package.sub"],
        ["audit", "-m", "json"],  # a package without __main__
        ["audit", str(tmp_path / "missing.py")],
    ]
    for argv in cases:
        before = _snapshot([F64])
        code, _, err = _run(capsys, *argv)
        assert code == 2, (argv, err)
        assert _snapshot([F64]) == before
    assert not os.path.exists(out)


# --------------------------------------------------------------------------- the API


def test_api_input_ranges_are_validated() -> None:
    module = no64io.load(str(F64))
    text = str(module)
    with pytest.raises(TypeError, match="input_ranges must be a mapping"):
        no64.demote(module, input_ranges=[(1, (0, 5))])
    for ranges, match in (
        ({True: (0, 5)}, "key True"),
        ({1: (0.0, 5)}, "argument 1 must be a pair of integers"),
        ({1: "0:5"}, "argument 1 must be a pair"),
        ({1: (0, 5, 6)}, "argument 1 must be a pair"),
        ({-1: (0, 5)}, "position -1"),
        ({1.0: (0, 5)}, "key 1.0"),
    ):
        with pytest.raises(ValueError, match=match):
            no64.demote(module, input_ranges=ranges)
    assert str(module) == text  # refused before anything changed
    report = no64.demote(module, input_ranges={1: (np.int64(0), 5)})
    assert report is not None


def test_api_demote_wants_a_module() -> None:
    module = no64io.load(str(F64))
    func = module.body.operations[0]
    with pytest.raises(TypeError, match=r"takes a module .* not a func\.func op"):
        no64.demote(func)
    with pytest.raises(TypeError):
        no64.demote("module {}")


def test_api_refuses_unregistered_ops() -> None:
    ctx = make_context()
    ctx.allow_unregistered_dialects = True
    text = (DATA / "unknown_op.mlir").read_text().replace(
        "mystery.frobnicate %x : tensor<4xf64>",
        '"mystery.frobnicate"(%x) : (tensor<4xf64>) -> tensor<4xf64>',
    )
    module = ir.Module.parse(text, context=ctx)
    before = str(module)
    with pytest.raises(no64.UnsupportedOpError, match="mystery.frobnicate at .*:4:10") as info:
        no64.demote(module)
    assert info.value.op == "mystery.frobnicate"
    assert str(module) == before
    # Without 64-bit types there is nothing to narrow, and nothing to refuse.
    clean = ir.Module.parse(text.replace("f64", "f32"), context=ctx)
    no64.demote(clean)
