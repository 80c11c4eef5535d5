"""``python -m services.green_agent eval|load|serve``: see :mod:`services.green_agent.cli`."""

from __future__ import annotations

import sys

from services.green_agent.cli import main

if __name__ == "__main__":
    sys.exit(main())
