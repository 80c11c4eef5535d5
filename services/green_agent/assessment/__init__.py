"""The AgentBeats assessment server: the evaluator as an A2A agent, one assessment per task."""
