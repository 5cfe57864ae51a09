"""Regenerate fixtures/albert-base-v2/: a small SentencePiece tokenizer of ALBERT's kind.

albert/albert-base-v2 ships ``spiece.model`` (a SentencePiece unigram model) and the
``tokenizer.json`` converted from it; transformers reads the latter, and converting the former
needs the ``sentencepiece`` package, which the pipeline does not install. So the replica's pair is
built once, here, in an environment that has it, and committed (33 KB):

    python -m venv /tmp/sp && /tmp/sp/bin/pip install sentencepiece protobuf transformers
    /tmp/sp/bin/python tests/hub_rehearsal/make_albert_tokenizer.py

A unigram model of 400 pieces trained on Python's own documentation (``pydoc_data.topics``),
with ALBERT's special pieces ``<pad>`` (0), ``<unk>`` (1), ``[CLS]`` (2), ``[SEP]`` (3) and
``[MASK]``; identity normalisation keeps the files small (the real model uses nmt_nfkc).
"""

import json
import shutil
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent / "fixtures" / "albert-base-v2"


def main() -> None:
    from pydoc_data.topics import topics

    import sentencepiece as spm
    import transformers

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpus = tmp / "corpus.txt"
        corpus.write_text("\n".join(topics[k] for k in sorted(topics)), encoding="utf-8")
        spm.SentencePieceTrainer.train(
            input=str(corpus),
            model_prefix=str(tmp / "spiece"),
            vocab_size=400,
            model_type="unigram",
            pad_id=0,
            unk_id=1,
            bos_id=2,
            eos_id=3,
            pad_piece="<pad>",
            unk_piece="<unk>",
            bos_piece="[CLS]",
            eos_piece="[SEP]",
            user_defined_symbols=["[MASK]"],
            character_coverage=1.0,
            normalization_rule_name="identity",
            minloglevel=2,
        )
        (tmp / "slow").mkdir()
        shutil.copy(tmp / "spiece.model", tmp / "slow" / "spiece.model")
        tokenizer = transformers.AlbertTokenizer.from_pretrained(tmp / "slow")
        tokenizer.save_pretrained(tmp / "fast")
        OUT.mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp / "spiece.model", OUT / "spiece.model")
        shutil.copy(tmp / "fast" / "tokenizer.json", OUT / "tokenizer.json")
        cfg = json.loads((tmp / "fast" / "tokenizer_config.json").read_text())
        for key in ("is_local", "local_files_only", "backend"):
            cfg.pop(key, None)
        cfg.update(model_max_length=512, remove_space=True)
        (OUT / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True))
    print(f"wrote {sorted(p.name for p in OUT.iterdir())} to {OUT}")


if __name__ == "__main__":
    main()
