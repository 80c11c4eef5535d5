"""The green agent: evaluator and load generator for retrieval agents, as a CLI and over A2A."""
