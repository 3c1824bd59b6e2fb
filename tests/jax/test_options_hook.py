"""The compile hook's configuration, ``no64.install``, ``no64.jit`` and the
audit hold the same :class:`no64.Options` for the same request as the
environment, the API and ``no64 convert`` build."""

from __future__ import annotations

import warnings

import pytest

import no64
import no64.cli
from no64.jax import hook
from no64.jax.audit import _hook_settings
from no64.kinds import Mode
from no64.options import ENVIRONMENT, Options

# one request, four ways
REQUESTS = [
    ({}, {}, ()),
    ({"NO64_POLICY": "Exact"}, {"policy": "exact"}, ("--policy", "exact")),
    ({"NO64_POLICY": "strict", "NO64_INTEGER_POLICY": "saturate", "NO64_FLOAT_POLICY": "pairs",
      "NO64_TARGET": "neuron"},
     {"policy": "strict", "integer_policy": "saturate", "float_policy": "pairs", "target": "neuron"},
     ("--policy", "strict", "--integer-policy", "saturate", "--float-policy", "pairs", "--target", "neuron")),
]


def _environment(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> list[hook.Config]:
    for v in ENVIRONMENT:
        monkeypatch.delenv(v.name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NO64_PLATFORMS", "cpu")
    monkeypatch.setattr(hook.STATE, "explicit", False)
    activated: list[hook.Config] = []
    monkeypatch.setattr(hook.activation, "_activate", lambda config, **_: activated.append(config))
    return activated


@pytest.mark.parametrize("env, api, flags", REQUESTS)
def test_hook_install_jit_cli_and_demote_agree(monkeypatch: pytest.MonkeyPatch, env: dict, api: dict,
                                               flags: tuple) -> None:
    activated = _environment(monkeypatch, env)
    assert hook.initialize_from_environment(strict=True) is activated[0]
    from_env = activated[0]
    # (the hook leaves float hints off unless NO64_FLOAT_HINTS=on; the API and the CLI look)
    assert from_env == hook.Config(frozenset({"cpu"}), Mode.FIX, Options(**api, float_hints=False))
    assert from_env.options == Options.from_env(env) == Options(**api, float_hints=False)
    assert from_env.policy is from_env.options.policy and from_env.float_policy is from_env.options.float_policy
    assert from_env.target == api.get("target")
    # no64.install builds the same configuration
    monkeypatch.setattr(hook.STATE, "explicit", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", no64.X64DisabledWarning)
        assert hook.install("cpu", **api) == from_env == activated[-1]
    # no64 convert's flags
    args = no64.cli._build_parser().parse_args(["convert", "in.mlir", "-o", "out.mlir", *flags])
    assert no64.cli.convert_options(args) == from_env.options.replace(float_hints=True)
    # no64.jit's keywords (it has no target: the device is the one it runs on)
    jit_kwargs = {k: v for k, v in api.items() if k != "target"}
    assert no64.jit(lambda x: x, **jit_kwargs).options == from_env.options.replace(target=None, float_hints=True)
    # the audit reads the hook's settings as the hook does
    settings = _hook_settings({})
    assert settings["mode"] == "fix"
    assert Options(**{k: v for k, v in settings.items() if k != "mode" and v is not None}) == from_env.options


def test_a_bad_variable_fails_closed_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    activated = _environment(monkeypatch, {"NO64_MODE": "bogus", "NO64_FLOAT_POLICY": "double"})
    with pytest.raises(no64.ConfigurationError, match=r"^no64: NO64_MODE='bogus' is not one of fix, check, off$"):
        hook.initialize_from_environment(strict=True)
    config = hook.initialize_from_environment()
    assert config is activated[0] and config == hook.Config(frozenset({"cpu"}))  # the defaults, refused at compile
    assert hook.STATE.config_error == ("NO64_MODE='bogus' is not one of fix, check, off; "
                                       "NO64_FLOAT_POLICY='double' is not one of f32, pairs")
    with pytest.raises(no64.ConfigurationError, match="NO64_FLOAT_POLICY='double'"):
        _hook_settings({"mode": "check"})
    assert _hook_settings({"mode": "check", "float_policy": "pairs"})["float_policy"] == "pairs"


def test_config_holds_options() -> None:
    with pytest.raises(TypeError, match="Options"):
        hook.Config(frozenset({"cpu"}), Mode.FIX, "strict")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown target"):
        hook.install("cpu", target="nope")
    assert hash(hook.Config(frozenset({"cpu"}), options=Options(policy="exact", input_ranges={0: (0, 1)})))
