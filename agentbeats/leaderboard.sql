-- The NFCorpus retrieval leaderboard, as agentbeats.dev builds it: one DuckDB query over the
-- leaderboard repository's results files, one row per run, the participant's AgentBeats id
-- first. A results file holds the green agent's data part of every shard of the run
-- ({"status", "participants": {role: id}, "results": [...]}, as the leaderboard workflow
-- writes it); the run's figures are recomputed from the shards' counts and sums, never by
-- averaging their means, which would weigh a small shard like a big one.
SELECT
    participants.retrieval_agent AS id,
    ROUND(SUM(r.sums."ndcg@5") / SUM(r.num_queries), 4) AS "NDCG@5",
    ROUND(SUM(r.sums."ndcg@10") / SUM(r.num_queries), 4) AS "NDCG@10",
    ROUND(SUM(r.sums.mrr) / SUM(r.num_queries), 4) AS "MRR",
    SUM(r.answered) AS "Answered",
    SUM(r.num_queries) AS "Queries",
    COUNT(*) AS "Shards"
FROM (
    SELECT participants, filename, UNNEST(results) AS r
    FROM read_json_auto('results/*.json', filename = true)
    WHERE status = 'completed'
)
GROUP BY filename, participants.retrieval_agent
ORDER BY "NDCG@5" DESC, id;
