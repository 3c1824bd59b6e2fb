"""One settings object for every way in: ``no64.Options`` from the API's
words, from the environment (``Options.from_env``) and from ``no64 convert``'s
flags are equal for the same request, ``demote``'s keyword arguments are the
same as the object, and the environment variables are declared once (the
documentation's table is made from the declaration)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import no64
import no64.cli
from no64.errors import ConfigurationError
from no64.kinds import FloatPolicy, IntegerPolicy, Outputs, RangePolicy
from no64.options import ENVIRONMENT, Options, environment_table, read, variable
from no64.targets import target
from no64.transforms.plan import Settings
from support import ir, make_context

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
OPTION_VARIABLES = [v for v in ENVIRONMENT if v.field]


#: What the environment sets when no variable is set: the API's defaults,
#: but float hints, which the compile hook skips unless asked.
ENV_DEFAULT = Options(float_hints=False)


def test_the_environment_leaves_float_hints_off_unless_asked() -> None:
    assert Options().float_hints and not Options.from_env({}).float_hints
    assert Options.from_env({"NO64_FLOAT_HINTS": "on"}).float_hints
    assert Options(float_hints="off") == ENV_DEFAULT
    with pytest.raises(ValueError, match="float_hints must be on or off"):
        Options(float_hints="maybe")


def test_the_option_variables_are_declared() -> None:
    assert {v.name: v.field for v in OPTION_VARIABLES} == {
        "NO64_INTEGER_POLICY": "integer_policy", "NO64_POLICY": "policy",
        "NO64_FLOAT_POLICY": "float_policy", "NO64_TARGET": "target", "NO64_FLOAT_HINTS": "float_hints"}
    assert [v.name for v in ENVIRONMENT][:2] == ["NO64_PLATFORMS", "NO64_MODE"]


@pytest.mark.parametrize("var", OPTION_VARIABLES, ids=lambda v: v.name)
def test_each_variable_sets_its_option(var) -> None:
    assert var.choices is not None
    for word in var.choices():
        # read without surrounding spaces, in any case
        got = Options.from_env({var.name: f" {word.upper()} "})
        assert got == ENV_DEFAULT.replace(**{var.field: word}), word
        others = [getattr(got, v.field) == getattr(ENV_DEFAULT, v.field) for v in OPTION_VARIABLES if v is not var]
        assert all(others)
    # unset or empty: the default
    assert Options.from_env({}) == Options.from_env({var.name: "  "}) == ENV_DEFAULT


@pytest.mark.parametrize("var", [v for v in ENVIRONMENT if v.choices], ids=lambda v: v.name)
def test_a_bad_value_is_one_line_naming_the_variable(var) -> None:
    env = {var.name: "Typo"}
    choices = ", ".join(var.choices())
    with pytest.raises(ConfigurationError) as bad:
        read(env, var.name)
    assert str(bad.value) == f"no64: {var.name}='Typo' is not one of {choices}"
    assert isinstance(bad.value, ValueError)
    if var.field:
        with pytest.raises(ConfigurationError, match=f"^no64: {var.name}='Typo' is not one of {choices}$"):
            Options.from_env(env)
        problems: list[str] = []  # collected instead: the default is taken
        assert Options.from_env(env, problems=problems) == ENV_DEFAULT
        assert problems == [f"{var.name}='Typo' is not one of {choices}"]


def test_every_bad_variable_is_collected_in_order() -> None:
    problems: list[str] = []
    env = {"NO64_POLICY": "exakt", "NO64_INTEGER_POLICY": "saturat", "NO64_FLOAT_POLICY": "f32"}
    assert Options.from_env(env, problems=problems) == ENV_DEFAULT
    assert [p.split("=")[0] for p in problems] == ["NO64_INTEGER_POLICY", "NO64_POLICY"]


def test_words_and_members_are_the_same_options() -> None:
    words = Options(policy="exact", integer_policy="wrap", float_policy="pairs", outputs="narrow",
                    target="neuron", input_ranges={"tokens": (0, 9), 1: [2, 3]}, verify=False, check=True)
    members = Options(policy=RangePolicy.EXACT, integer_policy=IntegerPolicy.WRAP, float_policy=FloatPolicy.PAIRS,
                      outputs=Outputs.NARROW, target=target("neuron"),
                      input_ranges={"tokens": (0, 9), 1: (2, 3)}, verify=False, check=True)
    assert words == members and hash(words) == hash(members)
    assert words.policy is RangePolicy.EXACT and words.target is target("neuron")
    assert words.declared_ranges == {"tokens": (0, 9), 1: (2, 3)} and Options().declared_ranges is None
    assert words.native == target("neuron").native and Options(target="mtl").native == {"i64", "u64"}
    assert words.replace(policy="strict") == Options(**{**_fields(words), "policy": "strict"})
    assert words.replace() == words and Options().replace(float_hints=False) == Options.from_env({})
    assert repr(Options(policy="strict", target="neuron")) == "Options(policy='strict', target='neuron')"


def _fields(o: Options) -> dict:
    return {"policy": o.policy, "integer_policy": o.integer_policy, "float_policy": o.float_policy,
            "outputs": o.outputs, "target": o.target, "input_ranges": o.declared_ranges,
            "verify": o.verify, "check": o.check}


@pytest.mark.parametrize("kwargs, error, message", [
    ({"policy": "lax"}, ValueError,
     r"^policy must be one of \('default', 'strict', 'permissive', 'exact'\), not 'lax'$"),
    ({"integer_policy": 3}, ValueError, r"^integer_policy must be one of"),
    ({"float_policy": "f16"}, ValueError, r"^float_policy must be one of \('f32', 'pairs'\), not 'f16'$"),
    ({"outputs": "pairs"}, ValueError, r"^outputs must be one of"),
    ({"target": "nope"}, ValueError, r"^unknown target 'nope'; known: "),
    ({"input_ranges": [(0, (1, 2))]}, TypeError, r"^input_ranges must be a mapping"),
    ({"input_ranges": {0: (1, 2, 3)}}, ValueError, r"the range of argument 0 must be a pair"),
    ({"input_ranges": {-1: (0, 1)}}, ValueError, r"argument position -1 is negative"),
])
def test_a_bad_option_names_itself(kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        Options(**kwargs)


def _convert_args(*flags: str):
    return no64.cli._build_parser().parse_args(["convert", "in.mlir", "-o", "out.mlir", *flags])


@pytest.mark.parametrize("flags, env, api", [
    ((), {}, {}),
    (("--policy", "exact"), {"NO64_POLICY": "exact"}, {"policy": "exact"}),
    (("--policy", "strict", "--integer-policy", "saturate", "--float-policy", "pairs", "--target", "neuron"),
     {"NO64_POLICY": "strict", "NO64_INTEGER_POLICY": "saturate", "NO64_FLOAT_POLICY": "pairs",
      "NO64_TARGET": "neuron"},
     {"policy": RangePolicy.STRICT, "integer_policy": "saturate", "float_policy": "pairs", "target": "neuron"}),
    (("--integer-policy", "wrap", "--target", "mtl"), {"NO64_INTEGER_POLICY": "WRAP", "NO64_TARGET": "mtl"},
     {"integer_policy": "wrap", "target": target("mtl")}),
])
def test_cli_environment_and_api_agree(flags: tuple, env: dict, api: dict) -> None:
    from_cli = no64.cli.convert_options(_convert_args(*flags))
    # the same but float hints, which the environment (the compile hook's) leaves off
    assert from_cli == Options.from_env(env).replace(float_hints=True) == Options(**api) == no64.Options(**api)


def test_cli_ranges_are_the_options_input_ranges() -> None:
    args = _convert_args("--range", "tokens=0:50256", "--range", "2=0:7")
    assert no64.cli.convert_options(args) == Options(input_ranges={"tokens": (0, 50256), 2: (0, 7)})


def _load(name: str) -> ir.Module:
    return ir.Module.parse((DATA / name).read_text(), make_context())


@pytest.mark.parametrize("name, kwargs", [
    ("f64_mixed.mlir", {}),
    ("f64_mixed.mlir", {"float_policy": "pairs"}),
    ("f64_mixed.mlir", {"policy": "exact", "outputs": "narrow", "check": True, "input_ranges": {1: (0, 9)}}),
    ("f64_mixed.mlir", {"policy": "exact", "outputs": "checked", "verify": False, "input_ranges": {1: (-5, 5)}}),
    ("big_constant.mlir", {"integer_policy": "saturate", "policy": "permissive"}),
    ("big_constant.mlir", {"policy": "exact"}),
    ("repeated_big_constants.mlir", {"integer_policy": "wrap", "target": "neuron-trn2"}),
])
def test_demote_keywords_are_the_options(name: str, kwargs: dict) -> None:
    """demote(m, **kw), demote(m, Options(**kw)) and demote(m, Options(),
    **kw) emit the same module and report; a keyword replaces that field
    of the options given."""
    rest = {k: v for k, v in kwargs.items() if k != "policy"}
    out = []
    for call in (lambda m: no64.demote(m, **kwargs), lambda m: no64.demote(m, Options(**kwargs)),
                 lambda m: no64.demote(m, Options(policy="strict", **rest), policy=kwargs.get("policy", "default"))):
        m = _load(name)
        report = call(m)
        out.append((str(m), report.to_dict()))
    assert out[0] == out[1] == out[2]


def test_a_keyword_replaces_that_field_only() -> None:
    report = no64.demote(_load("f64_mixed.mlir"), Options(float_policy="pairs", integer_policy="wrap"),
                         integer_policy="saturate")
    assert report.integer_policy == "saturate" and report.float_policy == "pairs"


def test_options_are_an_options_object() -> None:
    with pytest.raises(TypeError, match=r"^demote\(\)'s options must be a no64.Options, not str"):
        no64.demote(_load("f64_mixed.mlir"), "strict")  # type: ignore[arg-type]


def test_settings_are_derived_from_the_options() -> None:
    m = _load("f64_mixed.mlir")
    root = m.operation
    s = Settings.of(Options(integer_policy="wrap", float_policy="pairs", target="neuron-trn2"), root)
    assert (s.integer_policy, s.range_policy, s.float_pairs, s.keep, s.words_in) == (
        IntegerPolicy.WRAP, RangePolicy.DEFAULT, True, frozenset(target("neuron-trn2").native), False)
    assert Settings.of(Options(policy="exact"), root).words_in
    assert not Settings.of(Options(policy="exact", outputs="narrow"), root).words_in


# --------------------------------------------------------------------------- the declaration


_NAME = re.compile(r"\bNO64_[A-Z][A-Z0-9_]*[A-Z0-9]\b")


def test_every_variable_named_anywhere_is_declared() -> None:
    """The source, the docs and the README name no NO64_ variable the
    declaration lacks (so the reference lists every one)."""
    declared = {v.name for v in ENVIRONMENT}
    named: dict[str, str] = {}
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "src").rglob("*.pth"), *(ROOT / "docs").rglob("*.md"),
             ROOT / "README.md"]
    for path in files:
        for name in _NAME.findall(path.read_text()):
            named.setdefault(name, str(path.relative_to(ROOT)))
    undeclared = {n: p for n, p in named.items() if n not in declared}
    assert not undeclared, undeclared
    assert variable("NO64_POLICY").field == "policy"
    with pytest.raises(KeyError):
        variable("NO64_NOPE")


def test_the_reference_page_is_the_declaration() -> None:
    page = (ROOT / "docs" / "reference" / "environment.md").read_text()
    generated = page.split("<!-- generated from no64.options.ENVIRONMENT: do not edit by hand -->\n", 1)[1]
    generated = generated.split("<!-- end of generated table -->", 1)[0]
    assert generated == environment_table()
    for v in ENVIRONMENT:
        assert f"| `{v.name}` |" in generated
