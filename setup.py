"""Packaging for profscope: the built frontend in static/ ships as package data, so no Node is needed."""

import pathlib

from setuptools import find_packages, setup

HERE = pathlib.Path(__file__).parent
VERSION: dict = {}
exec((HERE / "tb_plugin/profscope/version.py").read_text(), VERSION)

setup(
    name="profscope",
    version=VERSION["__version__"],
    description="TensorBoard plugin: streaming trace viewer, roofline and XLA runtime diagnosis for ML profiles",
    long_description=(HERE / "README.md").read_text(encoding="utf-8")
    if (HERE / "README.md").exists()
    else "",
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    package_dir={"": "tb_plugin"},
    packages=find_packages("tb_plugin"),
    package_data={"profscope": ["static/*", "static/**/*"]},
    include_package_data=True,
    install_requires=[
        "tensorboard>=2.18",
        "protobuf>=4.25",
        "numpy>=1.23",
        "werkzeug>=2.2",
        "fsspec>=2023.1",
        "msgspec>=0.18",
    ],
    extras_require={
        # Lower bounds: without them pip may resolve s3fs 0.4.2 beside boto3, which fsspec itself
        # warns is "very old and known to cause severe performance issues".
        "gcs": ["gcsfs>=2023.1"],
        "s3": ["s3fs>=2023.1"],
        "tensorflow": ["tensorflow"],
        "torch": ["torch"],
        # `profscope ingest` and --profscope_dask_scheduler: ingest fanned out on a Dask cluster.
        "dask": ["dask[distributed]>=2024.1"],
        # `profscope mcp`: the analyses served to an agent over the Model Context Protocol (SDK 2.x API).
        "mcp": ["mcp>=2.3"],
        # Capturing from profiler servers (the Capture dialog, `profscope capture`): their gRPC service.
        "capture": ["grpcio>=1.48"],
        # moto's S3 API server and s3fs: the s3:// logdir tests run against a real server on loopback;
        # dask.distributed: the fan-out tests run a LocalCluster of worker processes; mcp: the MCP server's
        # tests drive it with the SDK's own client.
        "test": [
            "pytest",
            # tests/run_all.sh runs each pass on one worker per usable core (2 to 4): most tests wait
            # on processes (TensorBoard, a browser, ingest children), so two workers overlap their waits.
            "pytest-xdist",
            "hypothesis",
            "ruff",
            "playwright",
            "moto[server]>=5.0",
            "s3fs>=2023.1",
            "dask[distributed]>=2024.1",
            "mcp>=2.3",
            # The capture tests profile a real JAX program through its profiler server (tests/capture):
            # jax + jaxlib (CPU) are about 90 MB of wheels, with scipy and ml_dtypes some 20 s of install
            # per test environment; without JAX those tests skip and say why.
            "grpcio>=1.48",
            "jax",
        ],
    },
    entry_points={
        "tensorboard_plugins": ["profscope = profscope.plugin:ProfscopeLoader"],
        "console_scripts": ["profscope = profscope.cli:main"],
    },
)
