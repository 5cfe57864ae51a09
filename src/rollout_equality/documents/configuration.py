"""docs/configuration.md: every key of the config's schema with its type, default and description.

:func:`rows` walks the schema: a mapping's keys, the entries of a mapping of named entries (``<name>``), the
items of a list (``[]``), with ``$ref`` and ``allOf`` merged in; a shared definition is spelled out at its first place and referred to after.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import yaml

from rollout_equality.documents.fill import COMMAND
from rollout_equality.documents.wording import cell
from rollout_equality.schema import SCHEMA


class Row(NamedTuple):
    """One key of the schema as its table shows it (Markdown: the key and default in backquotes)."""

    key: str
    type: str
    default: str  # the default, "required", or empty
    description: str


def resolve(node: dict, defs: dict) -> dict:
    """``node`` with its ``$ref`` (and ``allOf`` parts) merged in; the node's own keys win."""
    merged: dict = {}
    if "$ref" in node:
        merged.update(resolve(defs[node["$ref"].rsplit("/", 1)[1]], defs))
    for part in node.get("allOf", []):
        part = resolve(part, defs)
        if "properties" in part:
            merged.setdefault("properties", {}).update(part["properties"])
        if "required" in part:
            merged["required"] = [*merged.get("required", []), *part["required"]]
        merged.update({k: v for k, v in part.items() if k not in ("properties", "required", "if", "then")})
    merged.update({k: v for k, v in node.items() if k not in ("$ref", "allOf")})
    return merged


def type_of(node: dict, defs: dict) -> str:
    """The type of ``node`` as the table reads it: ``integer``, `` `"a"` | `"b"` ``, ``list of string``,
    ``mapping of number``, ``string or null``."""
    node = resolve(node, defs)
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return " | ".join(f"`{v if isinstance(v, str) else json.dumps(v)}`" for v in node["enum"])
    alternatives = node.get("oneOf", node.get("anyOf", []))
    if alternatives and all(any(k in alt for k in ("type", "const", "enum", "$ref")) for alt in alternatives):
        return " or ".join(type_of(alt, defs) for alt in alternatives)
    kind = node.get("type", "object" if "properties" in node else "any")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array" and "items" in node:
        return f"list of {type_of(node['items'], defs)}"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict):
        inner = resolve(node["additionalProperties"], defs)
        return "mapping" if "properties" in inner else f"mapping of {type_of(inner, defs)}"
    return kind


def rows(node: dict, path: str, defs: dict, required: bool = False, seen: dict | None = None) -> list[Row]:
    """The row of ``node`` (at key ``path``) and of every key below it. ``seen``: the shared definitions already
    spelled out, by ``$ref``, and where (a later one is referred to them)."""
    seen = {} if seen is None else seen
    ref = node.get("$ref")
    resolved = resolve(node, defs)
    default = f"`{json.dumps(resolved['default'], ensure_ascii=False)}`" if "default" in resolved else ""
    row = Row(
        f"`{path}`",
        type_of(resolved, defs),
        default or ("required" if required else ""),
        resolved.get("description", ""),
    )
    if ref and "properties" in resolved and ref in seen:
        return [row._replace(description=f"{row.description} As `{seen[ref]}`.".strip())]
    if ref:
        seen[ref] = path
    out = [row]
    for key, child in resolved.get("properties", {}).items():
        out += rows(child, f"{path}.{key}", defs, key in resolved.get("required", []), seen)
    extra = resolved.get("additionalProperties")
    if isinstance(extra, dict) and has_keys(extra, defs):
        out += rows(extra, f"{path}.<name>", defs, False, seen)
    items = resolved.get("items")
    if isinstance(items, dict) and has_keys(items, defs):
        item = rows(items, f"{path}[]", defs, False, seen)
        out += item[1:] or item  # the keys of an item (the list's own row says what an item is)
    return out


def has_keys(node: dict, defs: dict) -> bool:
    """Whether ``node`` has keys of its own to document: a mapping with properties, or a list of such mappings."""
    node = resolve(node, defs)
    return "properties" in node or (isinstance(node.get("items"), dict) and has_keys(node["items"], defs))


def table(rows: list[Row]) -> list[str]:
    """``rows`` as the lines of a Markdown table."""
    lines = ["| key | type | default | description |", "| --- | --- | --- | --- |"]
    return lines + [f"| {r.key} | {cell(r.type)} | {cell(r.default)} | {cell(r.description)} |" for r in rows]


def configuration_md(schema: dict | None = None) -> str:
    """docs/configuration.md: one section per top-level key of ``schema`` (the config's schema when None), a table of
    every key below it."""
    schema = yaml.safe_load(SCHEMA.read_text()) if schema is None else schema
    defs = schema.get("$defs", {})
    seen: dict[str, str] = {}
    out = [
        "# Configuration",
        "",
        f"<!-- Generated by {COMMAND} from workflow/schemas/config.schema.yaml; do not edit. -->",
        "",
        f"{schema['description']} `config.yaml` is validated against `workflow/schemas/config.schema.yaml` before "
        "every run: an unknown or misspelled key or a wrong type stops the run with a message that names it. The "
        "schema holds the default of every optional key (filled in before a run; the library has no defaults of its "
        "own), and `rollout_equality.config.check_references` then checks that every name refers to a defined entry "
        "(experiments, tables, ALBERT runs, the subjects of the claims). Override single values on the command line "
        "(`--config baseline='{seed: 1, trials: 2000, ns: [4, 16], chunk_size: 256}'`) or pass your own file "
        "(`--configfile my.yaml`, merged into config.yaml).",
        "",
        "`<name>` stands for a name you choose and `[]` for each item of a list; *required* marks a key without a "
        "default that must be given.",
        "",
    ]
    for key, node in schema["properties"].items():
        node = resolve(node, defs)
        out += [f"## `{key}`", "", cell(node.get("description", "")), ""]
        out += table(rows(node, key, defs, key in schema.get("required", []), seen)[1:])
        out.append("")
    return "\n".join(out + [ADDING])


ADDING = """## Adding a model or a claim

To swap in your own model, add an entry under `models:` and an experiment under a suite:

```yaml
models:
  dinov2_giant: {backend: transformers, modality: image, hub: {id: facebook/dinov2-giant, revision: main}}
suites:
  paper:
    - {model: dinov2_giant, dataset: imagenet_val}
```

(`main` is resolved at download and recorded; pin the commit it logs. The rehearsal runs exactly this.)

To set a model that is not one of the paper's beside a claim, name it under the claim's `out_of_sample`
(it gets rows, labelled out of sample, wherever a suite measures it):

```yaml
claims:
  content:
    out_of_sample: {minilm: all-MiniLM-L6-v2, mpnet: all-mpnet-base-v2, my_model: what it is}
```

A new claim is one more entry under `claims:` (`kind`, `text`, `subjects`, `range`, and `token_set` where
its kind needs one). Renaming a model means renaming it in its claims too: a subject that names no model
or table stops the run, naming the claim.

With conda (`snakemake --sdm conda`), every rule runs in the one environment of `envs/workflow.yaml`; Snakemake
creates it and runs `envs/workflow.post-deploy.sh` in it, which installs the data wheels without their dependencies.
tests/test_conda_envs.py checks the environment against the scripts' imports and pyproject; conda itself does not
run in the tests.
"""
