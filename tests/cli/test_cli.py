"""The ``no64`` command line: exit codes, output, and refusals."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import no64
import no64.cli
import no64.jax.audit
import no64.targets.legality
from no64 import io as no64io
from no64.cli import main
from no64.jax.reference import compare_outputs, lower_x64, narrow_inputs, run_module

DATA = Path(__file__).parents[1] / "data"
F64 = str(DATA / "f64_mixed.mlir")
CLEAN = str(DATA / "clean_f32.mlir")
BIG = str(DATA / "big_constant.mlir")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(err: str, *parts: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("no64: error: "), err
    for part in parts:
        assert part in lines[0], err
    return lines[0]


# --------------------------------------------------------------------------- check


def test_check_clean(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", CLEAN)
    assert code == 0
    assert out.strip() == f"{CLEAN}: clean, no 64-bit values"
    assert err == ""


def test_check_finds_64bit_values(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", F64, CLEAN)
    assert code == 1
    lines = out.splitlines()
    header = lines[1].split()
    assert header == ["op", "type", "role", "location"]
    mul = [line for line in lines if line.startswith("  stablehlo.multiply")]
    assert len(mul) == 1
    # Columns are aligned: each starts at the header's column.
    for column in ("type", "role", "location"):
        start = lines[1].index(column)
        assert lines[2][start - 2 : start] == "  " and lines[2][start] != " "
    assert f"{F64}:5:" in mul[0]  # the op's line in the file
    assert f"{F64}: 8 64-bit values -- by type: f64 4, i64 4; by op: func.func 4, " \
        "stablehlo.constant 2, stablehlo.add 1, stablehlo.multiply 1" in lines
    assert lines[-2] == f"{CLEAN}: clean, no 64-bit values"
    assert lines[-1].startswith("total: 8 64-bit values in 1 of 2 files -- by type: f64 4, i64 4; ")


def test_check_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--json", F64, CLEAN)
    assert code == 1
    doc = json.loads(out)
    assert [d["file"] for d in doc] == [F64, CLEAN]
    assert [d["clean"] for d in doc] == [False, True]
    expected = [f.to_dict() for f in no64.find_64bit(no64io.load(F64))]
    assert doc[0]["findings"] == expected
    assert doc[1]["findings"] == []


def test_check_json_records_bad_files(capsys: pytest.CaptureFixture[str]) -> None:
    bad = str(DATA / "unknown_op.mlir")
    code, out, err = run(capsys, "check", "--json", CLEAN, bad)
    assert code == 2
    doc = json.loads(out)
    assert doc[0]["clean"] is True
    assert doc[1]["file"] == bad and doc[1]["clean"] is None and "mystery" in doc[1]["error"]
    assert_one_error_line(err, bad)


def test_check_hlo_and_forced_format(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "check", str(DATA / "f64_mixed.hlo"))
    assert code == 1 and "9 64-bit values" in out
    code, _, err = run(capsys, "check", "--format", "hlo", F64)
    assert code == 2
    assert_one_error_line(err, F64)


GARBAGE = bytes(range(256)) * 2


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("empty.mlir", b"", ["empty"]),
        ("garbage.bin", GARBAGE, ["cannot tell the format"]),
        ("garbage.mlir", GARBAGE, [":2:118:", "not UTF-8"]),
        ("malformed.mlir", (DATA / "malformed.mlir").read_bytes(), [":4:24:", "tensor<3xf64>"]),
        ("unknown.mlir", (DATA / "unknown_op.mlir").read_bytes(), [":4:10:", "mystery"]),
        ("malformed.hlo", (DATA / "malformed.hlo").read_bytes(), [":5:22:", "frobnicate"]),
    ],
)
@pytest.mark.parametrize("command", ["check", "convert"])
def test_bad_input(
    command: str,
    name: str,
    content: bytes,
    words: list[str],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    argv = [command, str(path)]
    if command == "convert":
        argv += ["-o", str(tmp_path / "out.mlir")]
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert_one_error_line(err, str(path), *words)
    assert not (tmp_path / "out.mlir").exists()


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "check", str(tmp_path / "nope.mlir"))
    assert code == 2
    assert_one_error_line(err, "nope.mlir", "no such file")


# --------------------------------------------------------------------------- convert


def _model(x, n):
    return jnp.cos(x) * 3.0 - n.astype(jnp.float64), jnp.cumsum(n) * 2


def test_convert_matches_the_64bit_program(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    x = np.linspace(0.0, 2.0, 5)
    n = np.arange(5, dtype=np.int64)
    original = lower_x64(_model, x, n)
    src = tmp_path / "model.mlir"
    src.write_bytes(no64io.dumps(original, "mlir"))
    dest = tmp_path / "model32.hlo"

    code, out, err = run(capsys, "convert", str(src), "-o", str(dest))
    assert code == 0, err
    assert f"wrote {dest} (hlo)" in out
    assert "integer policy: error" in out

    converted, fmt = no64io.load_with_format(dest)
    assert fmt == "hlo"
    assert no64.find_64bit(converted) == []
    want = run_module(original, [x, n], strict=False)
    got = run_module(converted, narrow_inputs([x, n]), strict=True)
    compare_outputs(want, got)

    code, out, _ = run(capsys, "check", str(dest))
    assert code == 0


def test_convert_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    dest = tmp_path / "out.mlir"
    code, out, _ = run(capsys, "convert", F64, "-o", str(dest), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["changed"] is True and doc["integer_policy"] == "error"
    assert no64.find_64bit(no64io.load(dest)) == []


def test_convert_output_format(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    dest = tmp_path / "out.bin"
    code, _, _ = run(capsys, "convert", F64, "-o", str(dest), "--output-format", "vhlo")
    assert code == 0
    assert no64io.detect_format(dest.read_bytes()) == "vhlo"
    # No known extension, no --output-format: the input's format.
    dest2 = tmp_path / "out2"
    code, _, _ = run(capsys, "convert", str(DATA / "f64_mixed.hlo"), "-o", str(dest2))
    assert code == 0
    assert no64io.detect_format(dest2.read_bytes()) == "hlo"


def test_convert_out_of_range_constant(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                      without_word_rule) -> None:  # type: ignore[no-untyped-def]
    # read by an add: emulated exactly in 32-bit words
    dest = tmp_path / "out.mlir"
    code, out, err = run(capsys, "convert", BIG, "-o", str(dest))
    assert code == 0, err
    assert "emulated 1 value " in out and "word pairs" in out
    converted = dest.read_text()
    assert "5000000000" not in converted and "i64" not in converted
    assert "-> tensor<2xi32>" in converted  # the result comes back as (low, high) words
    dest.unlink()

    # read by an op with no 32-bit word form (power, its rule taken out): refused, nothing written
    without_word_rule("stablehlo.power")
    big_power = str(DATA / "big_constant_power.mlir")
    code, out, err = run(capsys, "convert", big_power, "-o", str(dest))
    assert code == 2
    assert out == ""
    assert_one_error_line(err, "stablehlo.constant", f"{big_power}:5:", "5000000000")
    assert not dest.exists()

    code, out, _ = run(capsys, "convert", BIG, "-o", str(dest), "--integer-policy", "saturate")
    assert code == 0
    assert "saturated" in out
    assert "2147483647" in dest.read_text()


def test_convert_refuses_existing_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    dest = tmp_path / "out.mlir"
    dest.write_text("precious")
    code, _, err = run(capsys, "convert", F64, "-o", str(dest))
    assert code == 2
    assert_one_error_line(err, str(dest), "--force")
    assert dest.read_text() == "precious"

    code, _, _ = run(capsys, "convert", F64, "-o", str(dest), "--force")
    assert code == 0
    assert no64.find_64bit(no64io.load(dest)) == []


def test_convert_never_overwrites_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = tmp_path / "in.mlir"
    original = Path(F64).read_bytes()
    src.write_bytes(original)
    for extra in ([], ["--force"]):
        code, _, err = run(capsys, "convert", str(src), "-o", str(src), *extra)
        assert code == 2
        assert_one_error_line(err, "input file", "--in-place")
        assert src.read_bytes() == original
    # The same file under other names is still the input.
    alias = tmp_path / "alias.mlir"
    alias.symlink_to(src)
    for other in (os.path.join(str(tmp_path), ".", "in.mlir"), str(alias)):
        code, _, err = run(capsys, "convert", str(src), "-o", other, "--force")
        assert code == 2
        assert_one_error_line(err, "input file")
    assert src.read_bytes() == original

    code, _, _ = run(capsys, "convert", str(src), "--in-place")
    assert code == 0
    assert no64.find_64bit(no64io.load(src)) == []


def test_convert_in_place_with_other_output_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "convert", F64, "--in-place", "-o", str(tmp_path / "x.mlir"))
    assert code == 2
    assert_one_error_line(err, "--in-place")


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["check"],
        ["convert", F64],
        ["convert", F64, "-o", "x.mlir", "--integer-policy", "round"],
        ["check", "--format", "onnx", F64],
    ],
)
def test_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert "Traceback" not in err
    assert err.strip()


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "convert" in out
    code, out, _ = run(capsys, "--version")
    assert code == 0 and no64.__version__ in out


def test_internal_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("no64.transforms.pipeline.demote", broken)
    monkeypatch.delenv("NO64_DEBUG", raising=False)
    argv = ["convert", F64, "-o", str(tmp_path / "out.mlir")]
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert "Traceback" not in err
    assert err.splitlines() == [
        "no64: internal error: RuntimeError: boom second line -- please report this as a no64 bug "
        "(with the input file)"
    ]

    monkeypatch.setenv("NO64_DEBUG", "1")
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert "Traceback" in err


def _broken(*args: object, **kwargs: object) -> None:
    raise KeyError("boom\nsecond line")


INTERNAL = ("no64: internal error: KeyError: 'boom\\nsecond line' -- please report this as a "
            "no64 bug (with the input file)")


@pytest.mark.parametrize("command", ["check", "check-dir", "check-target", "convert", "audit", "parse"])
def test_an_internal_error_is_one_line_and_exit_2(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO64_DEBUG", raising=False)
    script = tmp_path / "prog.py"
    script.write_text("print('hi')\n")
    dump = tmp_path / "dump"
    dump.mkdir()
    shutil.copy(F64, dump / "a.mlir")
    if command in ("check", "check-dir"):
        monkeypatch.setattr(no64.cli, "find_64bit", _broken)
        argv = ["check", F64 if command == "check" else str(dump)]
    elif command == "check-target":
        monkeypatch.setattr(no64.targets.legality, "check_target", _broken)
        argv = ["check", "--target", "neuron", F64]
    elif command == "convert":
        monkeypatch.setattr("no64.transforms.pipeline.demote", _broken)
        argv = ["convert", F64, "-o", str(tmp_path / "out.mlir")]
    elif command == "audit":
        monkeypatch.setattr(no64.jax.audit, "run_program", _broken)
        argv = ["audit", str(script)]
    else:
        monkeypatch.setattr(no64.cli, "_build_parser", _broken)
        argv = ["check", F64]
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.splitlines() == [INTERNAL]
    assert not (tmp_path / "out.mlir").exists()


def test_no64_debug_adds_the_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(no64.cli, "find_64bit", _broken)
    monkeypatch.setenv("NO64_DEBUG", "1")
    code, _, err = run(capsys, "check", F64)
    assert code == 2
    assert err.startswith("Traceback") and err.splitlines()[-1] == INTERNAL


# --------------------------------------------------------------------------- as a program


def test_python_dash_m(tmp_path: Path) -> None:
    """The real entry point, in a fresh interpreter: exit codes and clean stderr."""
    src_dir = str(Path(no64.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src_dir, os.environ.get("PYTHONPATH", "")]))
    env.pop("NO64_DEBUG", None)
    dest = tmp_path / "out.mlir"
    proc = subprocess.run(
        [sys.executable, "-m", "no64", "convert", str(DATA / "big_constant_truncated.mlir"), "-o", str(dest)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert_one_error_line(proc.stderr, "stablehlo.constant", "big_constant_truncated.mlir:5:")
    assert not dest.exists()


def test_convert_json_and_summary_list_float_hints(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    def tol(x, y):
        return jnp.abs(x - y) < 1e-12

    src = tmp_path / "tol.mlir"
    no64io.save(lower_x64(tol, np.ones(2), np.ones(2)), src)
    code, out, _ = run(capsys, "convert", str(src), "-o", str(tmp_path / "a.mlir"), "--json")
    assert code == 0
    (hint,) = json.loads(out)["float_hints"]
    assert hint["kind"] == "tolerance" and hint["pairs_fixes"] is True
    assert hint["location"]["file"] == __file__
    code, out, _ = run(capsys, "convert", str(src), "-o", str(tmp_path / "b.mlir"))
    assert code == 0 and "float hints: 1 place " in out and "[tolerance]" in out
    code, out, _ = run(capsys, "convert", str(src), "-o", str(tmp_path / "c.mlir"), "--json",
                       "--float-policy", "pairs")
    assert code == 0 and json.loads(out)["float_hints"] == []


def test_convert_exact_hlo_with_random_matches_x64(tmp_path: Path) -> None:
    """XLA HLO of a program drawing jax.random numbers from an int64 seed converts under
    --policy exact (XLA's importer leaves each while's regions as uncalled functions:
    dropped, not converted), and the converted module computes the x64 program's values,
    the seed entering as its two words."""
    import jax

    from no64.jax.reference import converted_inputs, word_pair_inputs
    from support import enable_x64

    f = lambda s: jax.random.bits(jax.random.PRNGKey(s), (6,), jax.numpy.uint32)  # noqa: E731
    seed = np.int64(-(2**40) - 3)
    with enable_x64(True):
        hlo = jax.jit(f).lower(seed).as_text(dialect="hlo")
        ref = np.asarray(jax.jit(f)(seed))
    src = tmp_path / "rand.hlo"
    src.write_text(hlo)
    out = tmp_path / "rand.mlir"
    assert main(["convert", "--policy", "exact", str(src), "-o", str(out)]) == 0
    original = no64io.load(src.read_bytes(), format="hlo")
    converted = no64io.load(out.read_bytes(), format="mlir")
    assert not no64.find_64bit(converted)
    words = word_pair_inputs(original, converted)
    assert words == [0]
    (got,) = run_module(converted, converted_inputs([seed], words))
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("argv,part", [
    (["check"], "check: the following arguments are required: FILE (see no64 check --help)"),
    (["bogus"], "invalid choice: 'bogus'"),
    (["convert", "--policy", "exakt", CLEAN], "convert: argument --policy: invalid choice: 'exakt'"),
    (["check", "--target"], "check: argument --target: expected one argument"),
])
def test_a_usage_error_is_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], part: str) -> None:
    """A usage error is one line naming the command and the way to its usage, exit 2."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert_one_error_line(err, part)
