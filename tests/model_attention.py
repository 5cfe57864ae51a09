"""A model's attention read as a user's own code reads it, turned into records by the library's call
(rollout_equality.attention_records), batch by batch as rule measure batches: what tests/condition/test_from_model.py
and tests/workflow/test_workflow.py compare with rule measure's records."""

import pandas as pd
import torch

from rollout_equality import attention_records
from rollout_equality.condition.records import SCHEMAS

FIELDS = dict(zip(SCHEMAS, ("layers", "rollout", "heads", "heads_rollout")))
"""Each records file's kind (as rollout_equality.condition.records.SCHEMAS names it) and its AttentionRecords field."""


def in_input_order(frames: list[pd.DataFrame], ids: list[str]) -> pd.DataFrame:
    """Per-batch frames joined in the order of ``ids`` (each input's rows in their own order)."""
    joined = pd.concat(frames, ignore_index=True)
    position = {input_id: k for k, input_id in enumerate(ids)}
    order = joined["input_id"].map(position).sort_values(kind="stable").index
    return joined.loc[order].reset_index(drop=True)


def text_records(path, ids, texts, model_name, dataset, extraction, condition, heads) -> dict[str, pd.DataFrame]:
    """{kind: frame} of the transformers text model in ``path`` on ``texts``: loaded with eager attention, its
    tokenizer truncating to ``extraction.max_tokens``, batches of ``extraction.batch_size`` formed by length
    (``extraction.batch_by_length``) on ``extraction.threads`` torch threads, each batch's ``output_attentions``
    and encoding passed to attention_records with ``condition``'s tolerances and the ``heads`` analysis."""
    from transformers import AutoModel, AutoTokenizer

    from rollout_equality.runtime.threads import torch_threads

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    limit = min(extraction.max_tokens, model.config.max_position_embeddings, tokenizer.model_max_length)
    sizes = [len(tokenizer(t, truncation=True, max_length=limit)["input_ids"]) for t in texts]
    order = sorted(range(len(texts)), key=sizes.__getitem__) if extraction.batch_by_length else range(len(texts))
    order = list(order)
    parts = []
    for start in range(0, len(order), extraction.batch_size):
        picked = order[start : start + extraction.batch_size]
        encoding = tokenizer([texts[i] for i in picked], truncation=True, max_length=limit, padding=True,
                             return_special_tokens_mask=True, return_tensors="pt")  # fmt: skip
        inputs = {k: v for k, v in encoding.items() if k != "special_tokens_mask"}
        with torch_threads(extraction.threads), torch.inference_mode():
            attentions = model(**inputs, output_attentions=True).attentions
        parts.append(
            attention_records(
                attentions, encoding, ids=[ids[i] for i in picked], model=model_name, dataset=dataset,
                per_head=heads.per_head, fusions=heads.fusions, atol=condition.atol,
                row_sum_atol=condition.row_sum_atol,
            )
        )  # fmt: skip
    return {kind: in_input_order([getattr(part, field) for part in parts], ids) for kind, field in FIELDS.items()}
