"""tests/conftest.py's ports for a test stack: below the ephemeral range with their weed gRPC
twins, a band per xdist worker, never handed out twice."""

from __future__ import annotations

import socket

from breadth.stack.local import WEED_GRPC_PORT_OFFSET
from tests import conftest


def test_ports_and_their_twins_are_free_distinct_and_in_the_workers_band(monkeypatch):
    monkeypatch.setattr(conftest, "_handed_out", set())
    bands = {}
    for worker in ("gw0", "gw1"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        bands[worker] = [conftest.stack_port() for _ in range(6)]
    ports = bands["gw0"] + bands["gw1"]
    assert len(set(ports)) == len(ports)
    assert max(bands["gw0"]) < min(bands["gw1"])  # gw0's band lies below gw1's
    assert all(port + WEED_GRPC_PORT_OFFSET < 32768 for port in ports)


def test_a_port_whose_twin_is_taken_is_not_drawn(monkeypatch):
    monkeypatch.setattr(conftest, "_handed_out", set())
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw5")
    first = conftest.stack_port()
    # Hold the twin of every other port of the band but one: that one must be drawn next.
    band = range(first - first % conftest.PORT_BAND, first - first % conftest.PORT_BAND
                 + conftest.PORT_BAND)
    left = next(port for port in band if port != first and conftest._bindable(port))
    held = []
    try:
        for port in band:
            if port not in (first, left):
                sock = socket.socket()
                try:
                    sock.bind(("127.0.0.1", port + WEED_GRPC_PORT_OFFSET))
                    held.append(sock)
                except OSError:
                    sock.close()
        assert conftest.stack_port() == left
    finally:
        for sock in held:
            sock.close()
