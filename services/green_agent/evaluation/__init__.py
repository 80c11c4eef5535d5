"""The evaluation: ask a retrieval agent sampled NFCorpus test queries and score its answers.

The test set and its seeded sample (:mod:`.dataset`), the A2A clients of protocols 1.0 and 0.3
(:mod:`.client`), the answer contract every reply is checked against (:mod:`.answer_contract`),
the run of the queries (:mod:`.evaluator`), its report (:mod:`.report`), and the MCP server's
REST search scored on whole splits (:mod:`.rest`). Beside them, what the client and both other
rooms of the green agent share: the origins its requests may go to (:mod:`.egress`) and the MCP
server's counters read around a run (:mod:`.mcp_counters`). It imports neither
:mod:`services.green_agent.assessment` nor :mod:`services.green_agent.load`, which build on it.
"""
