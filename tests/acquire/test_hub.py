"""The hub layer: which files a loader reads, which files a data set split needs, and errors that name their cause."""

import socket
import urllib.error

import httpx2
import pytest
import requests
from huggingface_hub import errors as hf_errors

from rollout_equality.acquire import hub, network
from rollout_equality.acquire.data import _config_patterns, split_patterns

# File lists of real repositories (public evidence: the hub's file pages and projects that pin them).
ROBERTA_BASE = [
    "config.json",
    "dict.txt",
    "flax_model.msgpack",
    "merges.txt",
    "model.safetensors",
    "pytorch_model.bin",
    "rust_model.ot",
    "tf_model.h5",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "README.md",
    ".gitattributes",
]
ALBERT_BASE_V2 = [
    "config.json",
    "flax_model.msgpack",
    "model.safetensors",
    "pytorch_model.bin",
    "rust_model.ot",
    "spiece.model",
    "tf_model.h5",
    "tokenizer.json",
    "with-prefix-tf_model.h5",
    "README.md",
    ".gitattributes",
]
DINOV2_SMALL = [
    "config.json",
    "model.safetensors",
    "preprocessor_config.json",
    "pytorch_model.bin",
    "README.md",
    ".gitattributes",
]
TIMM_DEIT = ["config.json", "model.safetensors", "pytorch_model.bin", "README.md", ".gitattributes"]


@pytest.mark.parametrize(
    "files, expected",
    [
        (
            ROBERTA_BASE,
            [
                "config.json",
                "dict.txt",
                "merges.txt",
                "model.safetensors",
                "tokenizer.json",
                "tokenizer_config.json",
                "vocab.json",
            ],
        ),
        (ALBERT_BASE_V2, ["config.json", "model.safetensors", "spiece.model", "tokenizer.json"]),
        (DINOV2_SMALL, ["config.json", "model.safetensors", "preprocessor_config.json"]),
        (TIMM_DEIT, ["config.json", "model.safetensors"]),
        # tokenizer files of other families (SentencePiece .spm, tiktoken, chat templates)
        (
            [
                "config.json",
                "model.safetensors",
                "source.spm",
                "target.spm",
                "vocab.json",
                "tokenizer.tiktoken",
                "chat_template.jinja",
                "generation_config.json",
                "training_args.bin",
                "logo.png",
            ],
            [
                "chat_template.jinja",
                "config.json",
                "generation_config.json",
                "model.safetensors",
                "source.spm",
                "target.spm",
                "tokenizer.tiktoken",
                "vocab.json",
            ],
        ),
        # sharded safetensors: the index and its shards, not the .bin copy
        (
            [
                "config.json",
                "model.safetensors.index.json",
                "model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors",
                "pytorch_model.bin.index.json",
                "pytorch_model-00001-of-00002.bin",
                "tf_model.h5.index.json",
                "onnx/model.onnx",
                "onnx/config.json",
            ],
            [
                "config.json",
                "model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors",
                "model.safetensors.index.json",
            ],
        ),
        # PyTorch pickles only (older repositories)
        (
            ["config.json", "pytorch_model.bin", "tf_model.h5", "vocab.txt"],
            ["config.json", "pytorch_model.bin", "vocab.txt"],
        ),
    ],
)
def test_loader_files_take_one_weight_format_and_the_metadata(files, expected):
    assert hub.loader_files(files) == expected


def test_a_repository_without_pytorch_weights_is_refused_by_name():
    with pytest.raises(hub.HubError, match="no PyTorch weights"):
        hub.loader_files(["config.json", "tf_model.h5", "flax_model.msgpack"])


def test_data_file_patterns_follow_datasets_globbing():
    files = [
        "full_size/validation/0000.parquet",
        "full_size/train/0000.parquet",
        "320px/validation/0000.parquet",
        "wikitext-103-raw-v1/test-00000-of-00001.parquet",
        "wikitext-2-raw-v1/test-00000-of-00001.parquet",
        "README.md",
    ]
    assert hub.match_files(files, "full_size/validation/*.parquet") == ["full_size/validation/0000.parquet"]
    assert hub.match_files(files, "*/validation/*") == [
        "320px/validation/0000.parquet",
        "full_size/validation/0000.parquet",
    ]
    assert hub.match_files(files, "*.parquet") == []  # `*` stays within a folder
    assert hub.match_files(files, "**/test-*") == [
        "wikitext-103-raw-v1/test-00000-of-00001.parquet",
        "wikitext-2-raw-v1/test-00000-of-00001.parquet",
    ]
    assert hub.match_files(files, ["README.md", "wikitext-103-raw-v1/test-?????-of-?????.parquet"]) == [
        "README.md",
        "wikitext-103-raw-v1/test-00000-of-00001.parquet",
    ]
    assert hub.match_files(files, "[0-9]*/validation/*") == ["320px/validation/0000.parquet"]
    assert hub.match_files(files, "[!0-9]*/validation/*") == ["full_size/validation/0000.parquet"]


def test_split_patterns_and_card_configurations():
    assert split_patterns({"validation": "a/*.parquet", "train": ["b/0.parquet"]}, "validation") == ["a/*.parquet"]
    assert split_patterns({"validation": "a/*.parquet"}, "test") is None
    assert split_patterns("data/*.csv", "test") == ["data/*.csv"]  # bare patterns hold the split asked for
    assert split_patterns(["a.parquet", "b.parquet"], "validation") == ["a.parquet", "b.parquet"]
    card = (
        "---\nconfigs:\n- config_name: wikitext-103-raw-v1\n  data_files:\n  - split: test\n"
        "    path: wikitext-103-raw-v1/test-*\n  - split: train\n    path: wikitext-103-raw-v1/train-*\n"
        "- config_name: plain\n  data_files: plain/*.parquet\n---\n# card\n"
    )
    assert _config_patterns(card, "wikitext-103-raw-v1", "test") == ["wikitext-103-raw-v1/test-*"]
    assert _config_patterns(card, "plain", "train") == ["plain/*.parquet"]
    assert _config_patterns(card, "plain", "test") is None  # a card's bare patterns are its train split
    assert _config_patterns(card, "wikitext-2-v1", "test") is None
    assert _config_patterns("# no header\n", "x", "train") is None


def _response(status: int, code: str | None = None) -> httpx2.Response:
    headers = {"X-Error-Code": code} if code else {}
    return httpx2.Response(
        status, request=httpx2.Request("GET", "https://huggingface.co/api/models/org/repo"), headers=headers
    )


@pytest.mark.parametrize(
    "err, connection, said",
    [
        (httpx2.ConnectError("[Errno -2] Name or service not known"), True, "the hub is unreachable"),
        (httpx2.ReadTimeout("timed out"), True, "the hub is unreachable"),
        (
            httpx2.RemoteProtocolError("peer closed connection without sending complete message body"),
            True,
            "the connection to the hub broke during the transfer",
        ),
        (hf_errors.HfHubHTTPError("Too Many Requests", response=_response(429)), False, "rate-limiting"),
        (hf_errors.HfHubHTTPError("Service Unavailable", response=_response(503)), False, "temporarily unavailable"),
        (requests.exceptions.ConnectionError("Max retries exceeded"), True, "the hub is unreachable"),
        (urllib.error.URLError(socket.gaierror(-2, "Name or service not known")), True, "the hub is unreachable"),
        (
            hf_errors.RepositoryNotFoundError("Repository Not Found", response=_response(404, "RepoNotFound")),
            False,
            "no such repository",
        ),
        (hf_errors.GatedRepoError("Access restricted", response=_response(401, "GatedRepo")), False, "is gated"),
        (
            hf_errors.RevisionNotFoundError("Invalid rev id: v9", response=_response(404, "RevisionNotFound")),
            False,
            "no such revision",
        ),
        (hf_errors.HfHubHTTPError("Server error", response=_response(500)), False, "answered HTTP 500"),
        (urllib.error.HTTPError("https://x", 404, "Not Found", {}, None), False, "HTTPError"),
        (RuntimeError("Dataset scripts are no longer supported, but found imagenette.py"), False, "scripts"),
    ],
)
def test_only_connection_failures_say_the_hub_is_unreachable(err, connection, said, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert network.cause(err).network is connection
    message = hub.describe(err, "model 'x' (org/repo@main)")
    assert said in message and "model 'x' (org/repo@main)" in message
    assert ("unreachable" in message) is (said == "the hub is unreachable")


def test_a_connection_failure_behind_other_errors_is_found_and_offline_mode_is_named(monkeypatch):
    try:
        try:
            raise httpx2.ConnectError("connection refused")
        except httpx2.ConnectError as inner:
            raise hf_errors.LocalEntryNotFoundError("Cannot find the requested files in the disk cache") from inner
    except hf_errors.LocalEntryNotFoundError as outer:
        err = outer
    assert network.cause(err).network
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub.offline()
    assert "HF_HUB_OFFLINE=1 forbids downloading it" in hub.describe(err, "model 'x'")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert not hub.offline()


def test_file_digests_are_the_hubs_own(tmp_path):
    """git's blob id for files stored in git, SHA-256 for LFS files: what the hub's file list gives."""
    import hashlib
    import subprocess

    path = tmp_path / "config.json"
    path.write_bytes(b'{"model_type": "dinov2"}\n')
    blob = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, check=True).stdout.strip()
    assert hub.file_digest(path, "git-sha1") == f"git-sha1:{blob}"
    assert hub.file_digest(path, "sha256") == f"sha256:{hashlib.sha256(path.read_bytes()).hexdigest()}"
