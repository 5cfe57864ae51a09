import os

# Tests never reach a model hub; loading code must fail fast instead of retrying.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
