"""gunicorn's binds with SERVER_METRICS_PORT: the metrics port beside each host the API binds."""

from __future__ import annotations

import pytest

from services.common.metrics_port import with_metrics_binds


def test_the_metrics_port_joins_each_host_of_the_api() -> None:
    binds = ["0.0.0.0:9009", "[::]:9009", "unix:/tmp/api.sock"]
    assert with_metrics_binds(binds, 9090) == [*binds, "0.0.0.0:9090", "[::]:9090"]


def test_without_a_metrics_port_the_binds_are_as_given() -> None:
    assert with_metrics_binds(["127.0.0.1:8000"], None) == ["127.0.0.1:8000"]


def test_the_api_s_own_port_is_refused() -> None:
    with pytest.raises(ValueError, match="port of its own"):
        with_metrics_binds(["0.0.0.0:8000"], 8000)
