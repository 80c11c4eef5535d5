"""The text encoders both times share: MiniLM dense vectors and BM25 sparse vectors.

:mod:`.onnx_model` prepares the ONNX model once (same outputs, less memory), and
:mod:`.memory_trim` keeps the loaded weights and the C heap from staying resident for nothing.
"""
