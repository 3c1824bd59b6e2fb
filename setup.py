"""Ships ``no64-startup.pth`` next to the packages (everything else is in pyproject.toml).

The file makes Python call :func:`jax_plugins.no64.start` at start-up when
``NO64_PLATFORMS`` is set, so that no64 is active before the first
computation is traced; with the variable unset it does nothing.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

STARTUP = Path("src") / "no64-startup.pth"


class BuildPyWithStartup(build_py):
    def run(self) -> None:
        super().run()
        self.copy_file(str(STARTUP), str(Path(self.build_lib) / STARTUP.name), preserve_mode=False)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / STARTUP.name)]


setup(cmdclass={"build_py": BuildPyWithStartup})
