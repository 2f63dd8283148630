"""The serving image installs what serving imports, and nothing for tests.

Reads the requirement files and ``Dockerfile.triton`` as the image build
does, and the imports of the packages the image serves from their source.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from triton_runtime.allocator import JEMALLOC_CONF

REPO = Path(__file__).resolve().parent.parent
SERVED_PACKAGES = ("frontend", "engine", "grammar_compiler", "model_repository")
TEST_ONLY = {
    "pytest",
    "pytest-timeout",
    "ruff",
    "hypothesis",
    "schemathesis",
    "matplotlib",
    "openai",
    "kubernetes-validate",
    "nvidia-pytriton",
}
# Modules that exist only inside Triton's Python backend stub.
PROVIDED_BY_TRITON = {"triton_python_backend_utils"}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(path: Path) -> list[Requirement]:
    """A requirement file's entries, following ``-r`` includes."""
    found = []
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-r "):
            found += _requirements(path.parent / line[3:].strip())
        else:
            found.append(Requirement(line))
    return found


def _image_requirements() -> list[Requirement]:
    """What Dockerfile.triton's pip installs name: requirement files and packages."""
    dockerfile = (REPO / "Dockerfile.triton").read_text()
    installs = re.findall(r"pip install ([^\n&]+)", dockerfile.replace("\\\n", " "))
    found = []
    for command in installs:
        words = [word for word in command.split() if not word.startswith("--")]
        for index, word in enumerate(words):
            if words[index - 1 : index] == ["-r"]:
                found += _requirements(REPO / word)
            elif word != "-r" and word != ".":
                found.append(Requirement(word))
    return found


def _third_party_imports(package: str) -> set[str]:
    modules = set()
    for source in (REPO / package).rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    own = {"frontend", "engine", "grammar_compiler", "triton_runtime", "demo_model"}
    return modules - set(sys.stdlib_module_names) - own - PROVIDED_BY_TRITON


def _installed_by(requirements: list[Requirement]) -> set[str]:
    """The named distributions and what they require in turn (with their extras)."""
    names, pending = set(), list(requirements)
    while pending:
        requirement = pending.pop()
        name = _canonical(requirement.name)
        if name in names:
            continue
        names.add(name)
        try:
            dependencies = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:  # xgrammar's `triton`, deliberately left out
            continue
        for dependency in dependencies:
            needed = Requirement(dependency)
            if needed.marker is None or any(
                needed.marker.evaluate({"extra": extra}) for extra in requirement.extras or {""}
            ):
                pending.append(needed)
    return names


def test_the_image_installs_no_test_or_benchmark_tool() -> None:
    image = {_canonical(requirement.name) for requirement in _image_requirements()}
    assert "torch" in image and "xgrammar" in image  # the parse found the installs
    assert not image & TEST_ONLY, image & TEST_ONLY


def test_every_import_of_the_served_code_is_installed_in_the_image() -> None:
    distributions = metadata.packages_distributions()
    installed = _installed_by(_image_requirements())
    missing = {}
    for package in SERVED_PACKAGES:
        for module in _third_party_imports(package):
            owners = {_canonical(owner) for owner in distributions.get(module, [module])}
            if not owners & installed:
                missing[module] = package
    assert not missing, f"imported but not in the image's requirements: {missing}"


def test_development_requirements_include_the_serving_pins() -> None:
    serving = {str(requirement) for requirement in _requirements(REPO / "requirements.txt")}
    development = {
        str(requirement) for requirement in _requirements(REPO / "requirements-test.txt")
    }
    assert serving <= development
    assert TEST_ONLY - {"pytest-timeout"} <= {
        _canonical(Requirement(requirement).name) for requirement in development
    }


def test_the_image_preloads_jemalloc_as_local_runs_do() -> None:
    """The image's malloc settings are the ones triton_runtime sets locally."""
    dockerfile = (REPO / "Dockerfile.triton").read_text()
    assert "libjemalloc2" in dockerfile
    assert "LD_PRELOAD=libjemalloc.so.2" in dockerfile
    assert f"MALLOC_CONF={JEMALLOC_CONF}\n" in dockerfile
