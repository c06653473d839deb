"""Fixtures of the capture tests: a real JAX job with its profiler server on loopback, a stand-in
profiler server (a real gRPC server answering as a job on another machine, or an idle one would),
and a port nothing listens on."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import pytest

from profscope.capture import protocol
from tests.support.jax_profiler import free_port, running_jax_job


@pytest.fixture(scope="module")
def jax_server() -> Iterator[str]:
    """`127.0.0.1:PORT` of a running JAX program (`tests/capture/jax_job.py`) and its profiler server."""
    with running_jax_job() as address:
        yield address


@pytest.fixture
def unused_address() -> str:
    """A loopback address nothing listens on."""
    return f"127.0.0.1:{free_port()}"


StandIn = Callable[[Callable[[Any], Any]], str]


@pytest.fixture
def stand_in_profiler() -> Iterator[StandIn]:
    """Factory: `stand_in_profiler(answer)` serves `ProfilerService.Profile` on a loopback port with
    `answer(request) -> ProfileResponse` and returns its address."""
    import grpc

    servers: list[Any] = []

    def start(answer: Callable[[Any], Any]) -> str:
        handler = grpc.method_handlers_generic_handler(
            protocol.SERVICE,
            {
                "Profile": grpc.unary_unary_rpc_method_handler(
                    lambda request, _context: answer(request),
                    request_deserializer=protocol.ProfileRequest.decode,
                    response_serializer=protocol.ProfileResponse.encode,
                )
            },
        )
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[handler])
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return f"127.0.0.1:{port}"

    yield start
    for server in servers:
        server.stop(grace=None)
