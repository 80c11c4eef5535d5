"""Test suites. Imported before any test module, so this is where process-wide env is set."""

import os

# Keep BLAS from fighting the model runtime for the 2 cores (see ARCHITECTURE.md).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
