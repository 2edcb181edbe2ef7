"""korch model zoo: PyTorch definitions of the benchmark models, exported to ONNX.

See models/README.md. Entry point: ``python -m models.build`` (via
scripts/build-models.sh).
"""
