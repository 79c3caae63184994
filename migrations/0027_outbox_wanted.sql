-- The outbox takes an event only when some consumer wants its topic (issue #16).
--
-- Until now every answer, start and cleared answer wrote its outbox row whether or not anyone
-- wanted it, and events nobody wants (`response.recorded` and `attempt.started` without xAPI or
-- a webhook for them, `response.cleared` always) were dispatched to nobody and purged a week
-- later. Measured with pgbench on the answer's statement (BENCHMARKS.md, "The answer against
-- the cheapest durable HTTP write"): the outbox row was the one part of the statement that cost
-- PostgreSQL something (8,900 → 10,600 transactions/s without it); its row lock and the
-- previous answer's time cost nothing measurable.
--
-- The writers ask this function in the same statement as the write they record, so an event
-- that a consumer wants is still written in the transaction that made it. Whether a consumer
-- registered concurrently with a write sees that write's event was already a matter of timing
-- (dispatch fans out to the consumers there are when it runs); now a consumer gets the events
-- of the writes that start after its registration commits (a webhook's `since` is then at most
-- the creating transaction's few milliseconds early).
--
-- Inlined by the planner (a STABLE SQL function of one SELECT): an uncorrelated EXISTS, run
-- once per statement, over a table of a few rows.
CREATE FUNCTION outbox_wanted(wanted_topic text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT EXISTS (SELECT 1 FROM event_consumers WHERE topic = wanted_topic) $$;
