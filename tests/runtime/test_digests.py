"""SHA-256 digests in one format (rollout_equality.runtime.digests), checked against hashlib directly."""

import hashlib

from rollout_equality.runtime import digests


def test_bytes_files_and_split_files_give_the_hex_of_their_bytes(tmp_path):
    parts = [tmp_path / "a", tmp_path / "b"]
    parts[0].write_bytes(b"x" * (3 << 20) + b"tail")  # more than one chunk
    parts[1].write_bytes(b"second part")
    joined = parts[0].read_bytes() + parts[1].read_bytes()
    assert digests.of_bytes(b"abc") == hashlib.sha256(b"abc").hexdigest()
    assert digests.of_file(parts[0]) == hashlib.sha256(parts[0].read_bytes()).hexdigest()
    assert digests.of_files(parts) == hashlib.sha256(joined).hexdigest()


def test_the_labelled_form_names_the_algorithm():
    hexdigest = digests.of_bytes(b"abc")
    assert digests.labelled(hexdigest) == f"sha256:{hexdigest}"
