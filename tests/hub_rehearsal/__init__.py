"""The paper target rehearsed against replicas of its sources, with the real clients.

* :mod:`.replicas` builds git repositories laid out like the hub repositories the ``paper``
  suite and the ``dynamics`` target read (real ids, file names, config families, token
  structure, tokenizer kinds, preprocessors; tiny random weights), an openml-python cache of
  OpenML 1590 built from the real UCI Adult rows, and scikit-learn's cache of California Housing
  with its real columns (synthetic values).
* :mod:`.mirror` serves the repositories with olah, a self-hosted Hugging Face mirror, in
  offline mode; ``HF_ENDPOINT`` points huggingface_hub, transformers and datasets at it.
* :mod:`.rehearse` writes the shipped ``config.yaml`` with only the revisions (the replicas'
  commits) and the sizes changed, and runs the workflow; ``python tests/hub_rehearsal/rehearse.py
  DIR`` does it by hand.

The rehearsal proves loading, layout and plumbing, never the paper's numbers: its weights are
random and its tables say nothing about trained transformers.
"""
