"""The AgentBeats assessment server: the evaluator as an A2A agent, one assessment per task.

An assessment request names the agent to evaluate and how (:mod:`.request`); the executor runs
the evaluation of :mod:`services.green_agent.evaluation` on it, streaming progress
(:mod:`.executor`), and answers with the report and the public evaluator's leaderboard keys
(:mod:`.leaderboard`). Around it: the card (:mod:`.card`), the SDK's request handler, which
cancels the execution of a caller that hung up (:mod:`.handler`, :mod:`.running`), the counts of
a result kept integers on the wire (:mod:`.json_numbers`), and the app in the frame
(:mod:`.app`). It never imports the load generator.
"""
