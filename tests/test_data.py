"""Data preparation: deterministic samples, stratification, manifests, clear errors."""

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from rollout_equality.data import load_inputs, prepare_data, read_manifest
from rollout_equality.data.images import stratified_sample
from rollout_equality.io import resolve_path


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

    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config.yaml").read_text())
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
