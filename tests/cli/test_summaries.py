"""What ``no64 check`` sums up: each file's count line (by element type and
by op), ``--summary`` and the total, the counts in ``--json``; each module
of an XLA dump folder counted once; and the outputs the command line's page
shows."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

import no64
import no64.cli
from no64 import io as no64io
from no64.cli import main

ROOT = Path(__file__).parents[2]
DATA = Path(__file__).parents[1] / "data"
F64 = str(DATA / "f64_mixed.mlir")
CLEAN = str(DATA / "clean_f32.mlir")

#: f64_mixed.mlir's count line, after its name.
F64_COUNTS = (
    "8 64-bit values -- by type: f64 4, i64 4; "
    "by op: func.func 4, stablehlo.constant 2, stablehlo.add 1, stablehlo.multiply 1"
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- check: counts


def test_each_file_ends_with_its_counts_by_type_and_op(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", F64)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"{F64}:" and len(lines) == 1 + 1 + 8 + 1  # name, header, 8 rows, counts
    assert lines[-1] == f"{F64}: {F64_COUNTS}"


def test_summary_prints_only_the_count_lines_and_the_total(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", "--summary", F64, CLEAN, F64)
    assert code == 1 and err == ""
    assert out.splitlines() == [
        f"{F64}: {F64_COUNTS}",
        f"{CLEAN}: clean, no 64-bit values",
        f"{F64}: {F64_COUNTS}",
        "total: 16 64-bit values in 2 of 3 files -- by type: f64 8, i64 8; "
        "by op: func.func 8, stablehlo.constant 4, stablehlo.add 2, stablehlo.multiply 2",
    ]
    # one file: its count line is the whole output
    code, out, _ = run(capsys, "check", "--summary", F64)
    assert code == 1 and out.splitlines() == [f"{F64}: {F64_COUNTS}"]


def test_the_total_names_files_not_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("not a module")
    code, out, err = run(capsys, "check", "--summary", CLEAN, str(bad))
    assert code == 2 and err.startswith("no64: error: ")
    assert out.splitlines()[-1] == "total: no 64-bit values in 0 of 1 file (1 not read)"


def test_ops_past_the_tenth_are_summed_up(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    ops = ["abs", "negate", "sign", "floor", "ceil", "sqrt", "exponential", "log", "sine", "cosine",
           "tanh", "logistic"]
    body = [f"    %v{i} = stablehlo.{op} %v{i - 1} : tensor<f64>" for i, op in enumerate(ops, 1)]
    src = tmp_path / "many.mlir"
    src.write_text("func.func @main(%v0: tensor<f64>) -> tensor<f64> {\n" + "\n".join(body)
                   + f"\n    return %v{len(ops)} : tensor<f64>\n}}\n")
    code, out, _ = run(capsys, "check", "--summary", str(src))
    assert code == 1
    (line,) = out.splitlines()
    assert line.startswith(f"{src}: 14 64-bit values -- by type: f64 14; by op: func.func 2, stablehlo.abs 1, ")
    assert line.endswith(", 3 other ops 3")  # 13 op names: 10 named, 3 summed up
    assert line.count("stablehlo.") == 9


def test_json_counts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("not a module")
    code, out, _ = run(capsys, "check", "--json", F64, CLEAN, str(bad))
    assert code == 2
    doc = json.loads(out)
    assert [sorted(d) for d in doc[:2]] == [["clean", "counts", "file", "findings"]] * 2
    assert doc[0]["findings"] == [f.to_dict() for f in no64.find_64bit(no64io.load(F64))]
    assert doc[0]["counts"] == {
        "total": 8,
        "by_type": {"f64": 4, "i64": 4},
        "by_op": {"func.func": 4, "stablehlo.constant": 2, "stablehlo.add": 1, "stablehlo.multiply": 1},
    }
    assert doc[1]["counts"] == {"total": 0, "by_type": {}, "by_op": {}}
    assert doc[2]["counts"] is None and "error" in doc[2]


def test_summary_and_json_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", "--summary", "--json", F64)
    assert code == 2 and out == ""
    assert err.startswith("no64: error: check: argument --json: not allowed with argument --summary")


def test_target_counts(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--target", "generic", "--summary", F64, CLEAN)
    assert code == 1
    assert out.splitlines() == [
        f"{F64}: 6 findings for target generic (6 type)",
        f"{CLEAN}: nothing target generic refuses or computes inexactly",
        "total: 6 findings for target generic in 1 of 2 files (6 type)",
    ]
    code, out, _ = run(capsys, "check", "--target", "generic", "--json", F64)
    (entry,) = json.loads(out)
    assert entry["counts"]["total"] == 6 and entry["counts"]["by_kind"] == {"type": 6}


# --------------------------------------------------------------------------- check: XLA dump folders


def _xla_dump(folder: Path, name: str, module_text: bytes, hlo_text: bytes) -> None:
    """One module as XLA's --xla_dump_to writes it: StableHLO and HLO text."""
    (folder / name).mkdir(parents=True)
    (folder / name / "module.mlir").write_bytes(module_text)
    (folder / f"{name}.before_optimizations.txt").write_bytes(hlo_text)
    (folder / f"{name}.cpu_after_optimizations.txt").write_bytes(hlo_text)  # never read


def test_a_module_xla_dumped_twice_is_counted_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    module = no64io.load(F64)
    mlir, hlo = Path(F64).read_bytes(), no64io.dumps(module, "hlo")
    n_mlir, n_hlo = len(no64.find_64bit(module)), len(no64.find_64bit(no64io.load(hlo)))
    dump = tmp_path / "dump"
    _xla_dump(dump, "module_0001.jit_f", mlir, hlo)
    _xla_dump(dump, "module_0002.jit_g", b"this is not a module", hlo)  # StableHLO unreadable
    (dump / "module_0003.jit_h.before_optimizations.txt").write_bytes(hlo)  # HLO text only

    code, out, err = run(capsys, "check", "--summary", str(dump))
    assert code == 1
    lines = out.splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [
        f"{dump}/module_0001.jit_f/module.mlir",  # not its HLO text
        f"{dump}/module_0002.jit_g.before_optimizations.txt",  # its StableHLO cannot be read
        f"{dump}/module_0003.jit_h.before_optimizations.txt",
        "total",
    ]
    assert lines[0].endswith(F64_COUNTS)
    assert lines[1].split(": ", 1)[1].startswith(f"{n_hlo} 64-bit values -- ")
    assert lines[3].startswith(f"total: {n_mlir + 2 * n_hlo} 64-bit values in 3 of 3 files -- ")
    assert err == ""  # every module was read, module_0002 from its HLO text
    code, out, _ = run(capsys, "check", "--json", str(dump))
    files = [d["file"] for d in json.loads(out) if d["clean"] is not None]
    assert [Path(f).relative_to(dump).as_posix() for f in files] == [
        "module_0001.jit_f/module.mlir",
        "module_0002.jit_g.before_optimizations.txt",
        "module_0003.jit_h.before_optimizations.txt",
    ]


def test_a_module_unreadable_in_both_forms_is_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    dump = tmp_path / "dump"
    _xla_dump(dump, "module_0001.jit_f", b"not a module", b"not HLO either")
    shutil.copy(F64, dump / "other.mlir")
    code, out, err = run(capsys, "check", "--summary", str(dump))
    assert code == 1
    assert out.splitlines()[-1].startswith("total: 8 64-bit values in 1 of 1 file (1 skipped) -- ")
    (note,) = err.splitlines()
    assert note.startswith("no64: note: skipped 2 files no64 cannot read (1 x ") and note.endswith("-v lists each")
    code, out, err = run(capsys, "check", "--summary", "-v", str(dump))
    notes = err.splitlines()
    assert [n.split(": ", 3)[2] for n in notes[:2]] == [
        f"skipped {dump}/module_0001.jit_f/module.mlir", f"skipped {dump}/module_0001.jit_f.before_optimizations.txt"]
    assert notes[2].startswith("no64: note: skipped 2 files") and len(notes) == 3


def test_a_dump_with_every_form_of_a_module_counts_it_once_and_sums_up_the_unread(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A dump as jax 0.8's XLA writes it: each module's StableHLO beside its
    HLO text as files named after the module's number (no NAME/module.mlir
    folder), and files of its passes no64 cannot read (Shardy's dialect):
    each module is counted once, from its StableHLO, and the files of the
    modules that cannot be read at all are one line, by reason."""
    module = no64io.load(F64)
    mlir, hlo = Path(F64).read_bytes(), no64io.dumps(module, "hlo")
    n_mlir = len(no64.find_64bit(module))
    dump = tmp_path / "dump"
    dump.mkdir()
    for i in range(1, 4):
        (dump / f"module_000{i}.jit_f.before_optimizations.mlir").write_bytes(mlir)
        (dump / f"module_000{i}.jit_f.before_optimizations.txt").write_bytes(hlo)
        for stage in ("sdy_before_propagation", "sdy_after_propagation"):
            (dump / f"module_000{i}.jit_f.{stage}.mlir").write_bytes(b'sdy.mesh @mesh = <["x"=2]>\n')
    for i in range(4, 9):  # modules with nothing no64 reads
        (dump / f"module_000{i}.jit_p.sdy_before_propagation.mlir").write_bytes(b"sdy.mesh @mesh\n")
    (dump / "module_0009.jit_q.before_optimizations.txt").write_bytes(b"not HLO")
    code, out, err = run(capsys, "check", "--summary", str(dump))
    assert code == 1
    lines = out.splitlines()
    assert [line.split(": ", 1)[0] for line in lines[:-1]] == [
        f"{dump}/module_000{i}.jit_f.before_optimizations.mlir" for i in range(1, 4)]
    assert lines[-1].startswith(f"total: {3 * n_mlir} 64-bit values in 3 of 3 files (6 skipped) -- ")
    (note,) = err.splitlines()
    assert note.startswith("no64: note: skipped 6 files no64 cannot read (5 x ") and "; 1 x " in note


# --------------------------------------------------------------------------- the documented outputs

_SHOWN = re.compile(r"```console\n\$ (no64 [^\n]*)\n(.*?)```", re.S)


def test_the_command_line_page_shows_what_the_commands_print(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    monkeypatch.chdir(ROOT)
    shown = _SHOWN.findall(page)
    assert len(shown) == 3
    for command, output in shown:
        main(shlex.split(command)[1:])
        assert capsys.readouterr().out == output, command
    (line,) = [line for line in page.splitlines() if line.startswith("no64: internal error: ")]
    no64.cli._internal_error(KeyError("boom"))
    assert capsys.readouterr().err == line + "\n"
