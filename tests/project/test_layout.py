"""Tests mirror the package: the tests of ``flask_krm/<package>/<module>.py`` are in
``tests/<package>/test_<module>.py`` (more files for one module are ``test_<module>_<aspect>.py``).

The browser, security, contract, docs, example and conformance suites are organized by behaviour,
not by module; checks of the whole repository are in ``tests/project/``. A simulator module whose
behaviour is the Kubernetes API itself may instead be tested by the contract suite's file of the
same name (``tests/contract/test_<module>.py``), which runs against the simulator and the real
kube-apiserver alike.

``python tests/project/test_layout.py`` prints the modules without a test file of their own.
"""

from __future__ import annotations

import typing as t
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "flask_krm"
TESTS = REPO / "tests"

WITHOUT_LOGIC: t.Final[dict[str, str]] = {
    "errors.py": "exception types only, each asserted by the tests of the code that raises it",
    "ops.py": "frozen dataclasses of what a source tells the engine, fed to it by test_stream.py",
    "signals.py": "blinker signal declarations, received in the tests of the code that sends them",
    "store/errors.py": "exception types only, asserted by the store's tests",
    "store/operations.py": "frozen dataclasses of a person's changes, performed by store/test_pipeline.py",
}
"""Modules that declare and do nothing, so that a test file of their own would test nothing."""


def modules() -> list[str]:
    """Every module of the package, as its path under ``flask_krm/``."""
    return sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py") if path.name != "__init__.py")


def mirror_of(module: str) -> Path:
    """Where the tests of ``module`` (a path under ``flask_krm/``) belong."""
    folder, _, name = module.rpartition("/")
    return TESTS / folder / f"test_{name.removesuffix('.py').strip('_')}.py"


def has_tests(module: str) -> bool:
    if mirror_of(module).is_file():
        return True
    name = Path(module).name
    return module.startswith("testing/simulator/") and (TESTS / "contract" / f"test_{name}").is_file()


def without_tests() -> list[str]:
    return [module for module in modules() if not has_tests(module)]


def test_every_module_with_logic_has_a_test_file_of_its_own() -> None:
    missing = [module for module in without_tests() if module not in WITHOUT_LOGIC]
    assert not missing, f"no test file for {missing}: add {[str(mirror_of(m).relative_to(REPO)) for m in missing]}"


def test_the_allow_list_names_only_modules_that_need_it() -> None:
    existing = set(modules())
    gone = sorted(WITHOUT_LOGIC.keys() - existing)
    assert not gone, f"no such modules any more, remove them from WITHOUT_LOGIC: {gone}"
    tested = sorted(module for module in WITHOUT_LOGIC if has_tests(module))
    assert not tested, f"these have a test file, so they are not without logic: {tested}"


def test_each_test_file_at_the_root_is_a_top_level_module_s() -> None:
    """A file at ``tests/`` root is named after a top-level module (checks of the whole repository
    belong in ``tests/project/``)."""
    top_level = {Path(module).stem.strip("_") for module in modules() if "/" not in module}
    strays = sorted(
        path.name
        for path in TESTS.glob("test_*.py")
        if not any(path.stem == f"test_{name}" or path.stem.startswith(f"test_{name}_") for name in top_level)
    )
    assert not strays, f"name these after the module they test, or move them to tests/project/: {strays}"


if __name__ == "__main__":
    found = modules()
    missing = without_tests()
    print(f"{len(found) - len(missing)} of {len(found)} modules have a test file of their own")
    for module in missing:
        reason = WITHOUT_LOGIC.get(module, "MISSING")
        print(f"  {module}: {reason}")
