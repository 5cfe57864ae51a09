"""docs/outputs.md: where every output lands, and the records' columns from their Arrow schemas
(:data:`rollout_equality.records.LAYER_SCHEMA`, :data:`~rollout_equality.records.ROLLOUT_SCHEMA`) and their meanings
(:data:`~rollout_equality.records.COLUMNS`)."""

from __future__ import annotations

from rollout_equality.documents.wording import markdown_table


def records_table() -> str:
    """One row per column of the records files: its name, Arrow type, which file holds it, what it means."""
    from rollout_equality.records import COLUMNS, LAYER_SCHEMA, ROLLOUT_SCHEMA

    names = list(dict.fromkeys([*LAYER_SCHEMA.names, *ROLLOUT_SCHEMA.names]))
    missing = [name for name in names if name not in COLUMNS]
    if missing:
        raise ValueError(f"rollout_equality.records.COLUMNS says nothing of the columns {', '.join(missing)}")
    rows = []
    for name in names:
        schemas = [s for s in (LAYER_SCHEMA, ROLLOUT_SCHEMA) if name in s.names]
        types = {str(s.field(name).type) for s in schemas}
        where = " and ".join(
            label for label, s in (("layer", LAYER_SCHEMA), ("rollout", ROLLOUT_SCHEMA)) if s in schemas
        )
        rows.append((f"`{name}`", " / ".join(sorted(types)), where, COLUMNS[name]))
    return "\n".join(markdown_table(("column", "type", "records", "what it holds"), rows))


def outputs_values() -> dict[str, str]:
    """Every ``{name}`` of docs/outputs.in.md."""
    return {"records_columns": records_table()}
