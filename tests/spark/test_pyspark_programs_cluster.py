"""The Iceberg-docs pipeline on local-cluster (executors in other JVMs), apart from the local runs so the
two files run in parallel under ``pytest -n 2 --dist loadfile``."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_pyspark_programs import check_pipeline


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("how", ["attach", "session"])
def test_iceberg_docs_pipeline_runs_on_local_cluster(tmp_path: Path, how: str) -> None:
    check_pipeline(tmp_path, "local-cluster[2,1,1024]", how)
