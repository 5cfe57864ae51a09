"""Image sets: deterministic, class-stratified samples from a folder tree, a hub data set or sample photos.

Sources (``source`` in an image data set's config entry, exactly one):

* ``image_folder: DIR`` — an ImageFolder tree (one sub-folder per class, e.g. an
  ImageNet validation set sorted into synsets) or a flat folder of images;
* ``hf_dataset: {path, revision, name, data_files, split, image_field, label_field}`` — a hub
  data set through :func:`datasets.load_dataset` at a pinned commit (e.g. Imagenette's
  validation images, 10 ImageNet classes, from the parquet files committed on ``frgfm/imagenette``'s
  ``main``);
* ``skimage: [NAME, ...]`` — photographs shipped with scikit-image
  (``skimage.data``), real images that need no network;
* ``files: [FILE, ...]`` — image files, each a path or ``dist:DISTRIBUTION:FILE`` (a file of an
  installed distribution: the sample photographs of scikit-image, scikit-learn and matplotlib),
  labelled by file name.

``n`` images are drawn with ``seed``, round-robin over classes (shuffled within
each class), saved as RGB PNG files; models apply their own preprocessing later.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import numpy as np

from rollout_equality.data import load_hub_dataset, sha256_bytes, write_manifest
from rollout_equality.io import atomic_path, progress

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"}


def stratified_sample(labels: list[str], n: int, seed: int) -> list[int]:
    """Indices of ``n`` items: classes in sorted order take turns, each in a seeded random order."""
    if n > len(labels):
        raise ValueError(f"asked for n = {n} images but the source has only {len(labels)}")
    rng = np.random.default_rng(seed)
    by_class: dict[str, list[int]] = defaultdict(list)
    for i, label in enumerate(labels):
        by_class[label].append(i)
    queues = {c: list(rng.permutation(idx)) for c, idx in sorted(by_class.items())}
    chosen: list[int] = []
    while len(chosen) < n:
        for c in sorted(queues):
            if queues[c] and len(chosen) < n:
                chosen.append(int(queues[c].pop(0)))
    return chosen


def _source(
    source: dict[str, Any], name: str, out_dir: Path
) -> tuple[list[str], list[str], Callable[[int], Any], dict]:
    """(references, labels, loader of item i as a PIL image, origin) of an image source.

    ``origin`` records where a downloaded source came from (hub commit and files); a hub data
    set's files are kept under ``out_dir/hub``.
    """
    from PIL import Image

    if "files" in source:
        from rollout_equality.io import resolve_path

        refs = list(source["files"])
        try:
            paths = [resolve_path(ref) for ref in refs]
        except FileNotFoundError as err:
            raise FileNotFoundError(f"data set {name!r}: {err}") from err
        labels = [p.name for p in paths]
        twice = sorted({label for label in labels if labels.count(label) > 1})
        if twice:
            raise ValueError(f"data set {name!r}: files with the same name {twice}; each file is its own class")
        return refs, labels, lambda i: Image.open(paths[i]), {}
    if "image_folder" in source:
        root = Path(source["image_folder"]).expanduser()
        if not root.is_dir():
            raise FileNotFoundError(f"data set {name!r}: image folder {root} does not exist")
        files = sorted(p for p in root.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise FileNotFoundError(f"data set {name!r}: no image under {root}")
        labels = [str(p.parent.relative_to(root)) for p in files]
        return [str(p.relative_to(root)) for p in files], labels, lambda i: Image.open(files[i]), {}
    if "skimage" in source:
        import skimage.data

        names = list(source["skimage"])

        def load(i: int):
            array = getattr(skimage.data, names[i])()
            if isinstance(array, tuple):  # stereo pairs: the left image
                array = array[0]
            return Image.fromarray(np.asarray(array))

        return [f"skimage.data.{n}" for n in names], names, load, {}
    spec = source["hf_dataset"]
    ds, snap = load_hub_dataset(
        name, spec, "Or use `image_folder:` with a local ImageNet validation tree.", out_dir / "hub"
    )
    image_field = spec["image_field"]
    label_field = spec.get("label_field", "label" if "label" in ds.column_names else None)  # None: unlabelled
    for field in (image_field, label_field):
        if field is not None and field not in ds.column_names:
            raise ValueError(
                f"data set {name!r}: hub data set {spec['path']} has no column {field!r} (columns: "
                f"{ds.column_names}); set image_field / label_field in its config entry"
            )
    if label_field is None:
        labels = [""] * len(ds)
    else:
        feature = ds.features[label_field]
        names = feature.int2str if hasattr(feature, "int2str") else str  # class names of a ClassLabel column
        labels = [str(names(x)) for x in ds[label_field]]
    refs = [f"{spec['path']}@{snap.commit}:{i}" for i in range(len(ds))]
    return refs, labels, lambda i: ds[i][image_field], snap.record()


def prepare_images(name: str, spec: dict[str, Any], out_dir) -> dict[str, Any]:
    out_dir = Path(out_dir)
    refs, labels, load, origin = _source(spec["source"], name, out_dir)
    chosen = stratified_sample(labels, spec["n"], spec["seed"])
    items = []
    for k, idx in enumerate(progress(chosen, desc=f"prepare {name}", unit="image")):
        image = load(idx).convert("RGB")
        item_id = f"{name}-{k:05d}"
        rel = f"images/{item_id}.png"
        with atomic_path(out_dir / rel) as tmp:
            image.save(tmp, format="PNG")
        pixels = np.asarray(image)
        items.append(
            {
                "id": item_id,
                "ref": refs[idx],
                "label": labels[idx],
                "file": rel,
                "size": list(image.size),
                "sha256": sha256_bytes(pixels.tobytes()),
            }
        )
    manifest = {
        "name": name,
        "modality": "image",
        "source": spec["source"],
        "n": spec["n"],
        "seed": spec["seed"],
        "origin": origin,
        "pool_size": len(refs),
        "n_classes": len(set(labels)),
        "items": items,
    }
    return write_manifest(out_dir, manifest)
