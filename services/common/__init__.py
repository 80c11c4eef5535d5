"""Small pieces more than one service needs (outside retrieval and telemetry)."""
