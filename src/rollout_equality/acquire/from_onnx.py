"""Transformers models out of their torch.onnx exports: the weights read from the graph, by the export's own rules.

A torch.onnx export (the TorchScript-based exporter, ``dynamo=False``) keeps a module's tensors in
the graph's initialisers, but not all under their module names:

* a parameter used as it is keeps its state-dict name (``backbone.encoder.layer.0.norm1.weight``);
  one whose values equal another's is kept once, and the others are ``Identity`` nodes whose
  output carries their name;
* an ``nn.Linear`` weight applied to a 3-D input is stored transposed, under a generated name
  (``onnx::MatMul_1966``), as the second input of a ``MatMul`` node named after the module
  (``/backbone/encoder/layer.0/attention/attention/query/MatMul``);
* a parameter the traced code slices before use is stored in its pieces under generated names
  (DINOv2's position embedding: the CLS position and the patch positions), each flowing into one
  ``Concat`` in the module's scope: the pieces joined in that Concat's input order, along its axis,
  are the parameter.

:func:`read_export` applies these rules to every float initialiser; :func:`match_parameters` matches
the result, renamed by transformers' own checkpoint conversion (e.g. DINOv2's ``attention.attention.query``
→ ``attention.q_proj``), against a transformers model's parameters: each parameter exactly once and with
its shape, or :class:`ExportMismatchError` names what is missing, ambiguous or left over. Tensors outside
``prefix`` (a saliency decoder, say) are listed as not used. :func:`build_from_export` writes the result
as an ordinary transformers folder (``save_pretrained``) beside the image processor or tokenizer.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$")  # a state-dict name, not onnx::…
# Nodes a value passes through unchanged in content on its way from a piece to its Concat (reshaped,
# transposed, resampled or cast; the piece is the stored parameter's slice, not these results).
_PASS_THROUGH = {"Reshape", "Transpose", "Resize", "Cast", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Expand"}


class ExportMismatchError(ValueError):
    """The export's tensors do not match the transformers model's parameters one to one."""


@dataclass
class ExportTensors:
    """What :func:`read_export` found: ``tensors`` (state-dict name under the prefix → array, in the
    module's own layout) with ``rules`` (name → which rule found it), ``not_used`` (tensors outside
    the prefix, name → shape) and ``left_over`` (float initialisers inside it that no rule explains)."""

    tensors: dict[str, np.ndarray] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)
    not_used: dict[str, list[int]] = field(default_factory=dict)
    left_over: dict[str, str] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)


def _scope(node_name: str) -> str:
    """A node's module path: ``/backbone/encoder/layer.0/mlp/fc1/MatMul`` → ``backbone.encoder.layer.0.mlp.fc1``."""
    return ".".join(p for p in node_name.split("/")[:-1] if p)


def _under(path: str, prefix: str) -> str | None:
    """``path`` after ``prefix`` where the prefix starts at a component boundary (None: not under it).

    The root module of an export may or may not appear in node scopes (a sentence-transformers export
    names its nodes ``/model/model.0/auto_model/…`` and its tensors ``model.0.auto_model.…``), so the
    prefix is looked for at every boundary; more than one place is an error.
    """
    if not prefix:
        return path
    starts = [i for i in range(len(path)) if (i == 0 or path[i - 1] == ".") and path.startswith(prefix, i)]
    if len(starts) > 1:
        raise ExportMismatchError(f"prefix {prefix!r} occurs {len(starts)} times in the module path {path!r}")
    return path[starts[0] + len(prefix) :] if starts else None


def read_export(model, prefix: str) -> ExportTensors:
    """The tensors of a loaded ``onnx.ModelProto`` as state-dict entries of the module under ``prefix``.

    ``prefix`` ends with a dot (``"backbone."``) or is empty (the exported module itself). Integer
    initialisers (shapes, axes) are not tensors of a module and are skipped.
    """
    from onnx import numpy_helper

    if prefix and not prefix.endswith("."):
        raise ValueError(f"prefix must end with '.' (or be empty); got {prefix!r}")
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    consumers: dict[str, list] = defaultdict(list)
    for node in graph.node:
        for position, name in enumerate(node.input):
            consumers[name].append((node, position))
    out = ExportTensors()

    def add(name_in_module: str, value: np.ndarray, rule: str, source: str) -> None:
        if name_in_module in out.tensors:
            out.duplicates.append(f"{name_in_module} ({out.rules[name_in_module]} and {rule} {source})")
            return
        out.tensors[name_in_module] = value
        out.rules[name_in_module] = f"{rule} {source}".strip()

    arrays = {}
    for name, tensor in inits.items():
        array = numpy_helper.to_array(tensor)
        if not np.issubdtype(array.dtype, np.floating):
            continue
        arrays[name] = array
    # Rule 1: named initialisers, and the Identity nodes that stand for deduplicated copies of them.
    aliases = [
        (node.output[0], node.input[0])
        for node in graph.node
        if node.op_type == "Identity" and node.input[0] in arrays and _MODULE_NAME.match(node.output[0])
    ]
    for name, source in [(n, n) for n in arrays if _MODULE_NAME.match(n)] + aliases:
        inner = _under(name, prefix)
        if inner is None:
            out.not_used[name] = list(arrays[source].shape)
        else:
            add(inner, arrays[source], "named" if name == source else "identity of", source if name != source else "")
    # Rule 2: unnamed MatMul weights, by the consuming node's module; rule 3: pieces of a Concat.
    pieces: dict[str, list[tuple[int, str, Any]]] = defaultdict(list)
    for name, array in arrays.items():
        if _MODULE_NAME.match(name):
            continue
        uses = consumers.get(name, [])
        if uses and all(node.op_type == "MatMul" and position == 1 and array.ndim == 2 for node, position in uses):
            for node, _ in uses:
                inner = _under(_scope(node.name), prefix)
                if inner is None:
                    out.not_used[f"{name} ({node.name})"] = list(array.shape)
                else:
                    add(f"{inner}.weight", np.ascontiguousarray(array.T), "transposed MatMul weight of", node.name)
            continue
        concat = _concat_reached(name, consumers)
        if concat is None:
            scopes = sorted({_scope(node.name) for node, _ in uses})
            if scopes and all(_under(s, prefix) is None for s in scopes):
                out.not_used[name] = list(array.shape)
            else:
                out.left_over[name] = (
                    f"shape {list(array.shape)}, used by {[f'{n.op_type} {n.name}' for n, _ in uses] or 'no node'}"
                )
            continue
        node, position = concat
        pieces[node.name].append((position, name, node))
    for concat_name, found in pieces.items():
        found.sort()
        node = found[0][2]
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        parts = [arrays[name] for _, name, _ in found]
        scope = _under(_scope(concat_name), prefix)
        label = f"{' + '.join(name for _, name, _ in found)} (into {concat_name})"
        if scope is None:
            out.not_used[label] = [list(p.shape) for p in parts]
            continue
        try:
            joined = np.concatenate(parts, axis=axis)
        except ValueError as err:
            for _, name, _ in found:
                out.left_over[name] = f"a piece of {concat_name} that does not join the others on axis {axis}: {err}"
            continue
        out.tensors.setdefault(f"__concat__:{scope}", joined)  # resolved by match_parameters (its name is not known)
        out.rules[f"__concat__:{scope}"] = f"pieces {label}"
    return out


def _concat_reached(name: str, consumers: dict[str, list]) -> tuple[Any, int] | None:
    """The Concat node (and input position) that ``name`` flows into through single-use pass-through nodes."""
    current = name
    for _ in range(64):
        uses = [u for u in consumers.get(current, []) if u[0].op_type != "Shape"]  # Shape reads no values
        if len(uses) != 1:
            return None
        node, position = uses[0]
        if node.op_type == "Concat":
            return node, position
        if node.op_type not in _PASS_THROUGH or position != 0:
            return None
        current = node.output[0]
    return None


def _renamer(model):
    """The function that turns a checkpoint name into the model's parameter name: transformers' own
    conversion mapping for the model (renamings only; a converter that splits or merges tensors is refused)."""
    from transformers.conversion_mapping import get_model_conversion_mapping
    from transformers.core_model_loading import WeightConverter, WeightRenaming, rename_source_key

    transforms = get_model_conversion_mapping(model)
    renamings = [t for t in transforms if isinstance(t, WeightRenaming)]
    converters = [t for t in transforms if isinstance(t, WeightConverter)]

    def rename(key: str) -> str:
        renamed, converter = rename_source_key(key, renamings, converters)
        if converter is not None:
            raise ExportMismatchError(
                f"{key}: transformers converts it with {converter!r} (one tensor to many), which an export does not hold"
            )
        return renamed

    return rename


def match_parameters(
    found: ExportTensors, model, not_exported: list[str] = (), what: str = "the export"
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(parameter name → array, parameter name → where it came from) for every parameter of ``model``.

    ``not_exported``: parameters the export does not hold because the traced code never used them
    (DINOv2's ``mask_token``; BERT's pooler in a sentence-embedding export); they are filled with zeros
    and must indeed be absent. Raises :class:`ExportMismatchError` listing every missing, ambiguous,
    misshapen or left-over tensor at once.
    """
    params = {name: tuple(p.shape) for name, p in model.named_parameters()}
    rename = _renamer(model)
    result: dict[str, np.ndarray] = {}
    origin: dict[str, str] = {}
    problems: list[str] = [f"ambiguous: {d}" for d in found.duplicates]
    problems += [f"left over: {name}: {why}" for name, why in found.left_over.items()]
    concats = {}
    for key, value in found.tensors.items():
        if key.startswith("__concat__:"):
            concats[key.removeprefix("__concat__:")] = (key, value)
            continue
        name = rename(key)
        if name not in params:
            problems.append(f"left over: {key} {list(value.shape)} ({found.rules[key]}) is no parameter of the model")
        elif name in result:
            problems.append(f"ambiguous: {name} from {origin[name]} and from {found.rules[key]}")
        elif tuple(value.shape) != params[name]:
            problems.append(f"shape: {name} is {list(params[name])} in the model, {list(value.shape)} in {what}")
        else:
            result[name], origin[name] = value, found.rules[key]
    for scope, (key, value) in concats.items():
        module = rename(scope + ".x")[: -len(".x")] if scope else ""
        candidates = [
            n
            for n, shape in params.items()
            if n not in result
            and n not in not_exported
            and n.rpartition(".")[0] == module
            and shape == tuple(value.shape)
        ]
        if len(candidates) == 1:
            result[candidates[0]], origin[candidates[0]] = value, found.rules[key]
        else:
            problems.append(
                f"{'ambiguous' if candidates else 'left over'}: {found.rules[key]}, joined {list(value.shape)}, fits "
                f"{candidates or 'no unmatched parameter'} of module {module!r}"
            )
    for name in not_exported:
        if name not in params:
            problems.append(f"not_exported names {name!r}, which is no parameter of the model")
        elif name in result:
            problems.append(
                f"not_exported names {name!r}, but {what} holds it ({origin[name]}): remove it from the list"
            )
        else:
            result[name] = np.zeros(params[name], dtype=np.float32)
            origin[name] = "not exported: zeros"
    missing = [n for n in params if n not in result]
    problems += [f"missing: {n} {list(params[n])}" for n in missing]
    if problems:
        raise ExportMismatchError(
            f"{what} does not match the model's {len(params)} parameters one to one:\n  " + "\n  ".join(problems)
        )
    return result, origin


def build_from_export(name: str, spec: dict[str, Any], modality: str, out_dir: Path) -> dict[str, Any]:
    """Write the transformers folder of an ``onnx_export`` source to ``out_dir``; return its record.

    ``spec``: ``path`` (a file, or ``dist:DISTRIBUTION:FILE``), ``prefix``, ``config`` (with
    ``model_type``), ``not_exported`` (optional), and ``image_processor`` (images) or ``tokenizer``
    (text: a directory or ``package:MODULE``). The folder (config.json, model.safetensors, the
    preprocessor or tokenizer files) is written beside ``out_dir`` and renamed onto it, so a failure
    leaves nothing there. The record holds the .onnx file's SHA-256, its distribution and version,
    which rule found each parameter, and the tensors not used.
    """
    import importlib.metadata
    import os
    import shutil
    import tempfile

    import onnx
    import torch
    import transformers

    from rollout_equality.acquire.installed import ModelUnavailableError, resolve_local, resolve_path
    from rollout_equality.runtime import digests

    needed = "image_processor" if modality == "image" else "tokenizer"
    if needed not in spec:
        raise ValueError(f"model {name!r}: an onnx_export source of a {modality} model needs `{needed}:`")
    path_spec = spec["path"]
    try:
        onnx_path = resolve_path(path_spec)
    except FileNotFoundError as err:
        raise ModelUnavailableError(f"model {name!r}: its ONNX export is missing: {err}") from err
    record: dict[str, Any] = {
        "path": path_spec,
        "onnx_sha256": digests.of_file(onnx_path),
        "prefix": spec.get("prefix", ""),
    }
    if path_spec.startswith("dist:"):
        dist = path_spec.removeprefix("dist:").partition(":")[0]
        record.update(distribution=dist, version=importlib.metadata.version(dist))
    graph = onnx.load(str(onnx_path))
    record["producer"] = f"{graph.producer_name} {graph.producer_version}".strip()
    found = read_export(graph, record["prefix"])
    config_dict = dict(spec["config"])
    config = transformers.AutoConfig.for_model(config_dict.pop("model_type"), **config_dict)
    with torch.device("meta"):
        skeleton = transformers.AutoModel.from_config(config)
    weights, origin = match_parameters(found, skeleton, list(spec.get("not_exported", [])), what=str(onnx_path.name))
    model = transformers.AutoModel.from_config(config, attn_implementation="eager")
    state = {n: torch.from_numpy(np.array(v, dtype=np.float32, copy=True)) for n, v in weights.items()}
    model.load_state_dict(state, strict=False)  # buffers (position ids) are the model's own
    missing = [n for n, _ in model.named_parameters() if n not in state]
    if missing:
        raise ExportMismatchError(f"model {name!r}: parameters left unset: {missing}")
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out_dir.name}.", dir=out_dir.parent) as tmp:
        folder = Path(tmp) / "model"
        model.save_pretrained(folder)
        if modality == "image":
            kwargs = dict(spec["image_processor"])
            getattr(transformers, kwargs.pop("type"))(**kwargs).save_pretrained(folder)
        else:
            tokenizer = transformers.AutoTokenizer.from_pretrained(resolve_local(spec["tokenizer"]))
            if len(tokenizer) != config.vocab_size:
                raise ExportMismatchError(
                    f"model {name!r}: the tokenizer of {spec['tokenizer']} has {len(tokenizer)} entries, the model's "
                    f"embedding {config.vocab_size}: it is not this model's vocabulary"
                )
            tokenizer.save_pretrained(folder)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(folder, out_dir)
    record.update(
        parameters=len(weights),
        rules=dict(sorted(_count_rules(origin).items())),
        not_exported=sorted(n for n, o in origin.items() if o.startswith("not exported")),
        not_used=found.not_used,
    )
    log.info(
        "model %s: %d parameters from %s (%s); %d tensors not used",
        name,
        len(weights),
        onnx_path,
        record["rules"],
        len(found.not_used),
    )
    return record


RULES = ("named", "identity of", "transposed MatMul weight of", "pieces", "not exported")


def _count_rules(origin: dict[str, str]) -> dict[str, int]:
    """How many parameters each rule found."""
    counts: dict[str, int] = defaultdict(int)
    for how in origin.values():
        counts[next(rule for rule in RULES if how.startswith(rule))] += 1
    return counts
