"""The tables' sources (rollout_equality.acquire.tables): what a bad source is told, and an unreachable OpenML."""

import pytest

from rollout_equality.acquire.tables import TableUnavailableError, load_raw


def test_a_bad_source_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="not installed"):
        load_raw(
            "t",
            {
                "task": "binclass",
                "source": {"csv": {"path": "dist:no-such-dist:x.csv", "target": "y", "header": "infer"}},
            },
            tmp_path,
        )
    with pytest.raises(ValueError, match=r"data set 't': source: .*give exactly one of openml, sklearn, csv; got \["):
        load_raw("t", {"task": "binclass", "source": {"sklearn": "diabetes", "openml": {"id": 1590}}}, tmp_path)


def test_openml_unreachable_fails_fast_naming_the_data_set(tmp_path, host_lookups):
    with pytest.raises(TableUnavailableError) as err:
        load_raw("adult", {"task": "binclass", "source": {"openml": {"id": 1590, "target": "class"}}}, tmp_path)
    assert host_lookups == ["www.openml.org"]  # one attempt, no retry loop (counted, not timed)
    assert "adult" in str(err.value) and "OpenML 1590" in str(err.value) and "offline" in str(err.value)
