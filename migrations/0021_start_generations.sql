-- Starts no longer bump their assignment's one `analytics_generations` row. That row lock is
-- held from the bump to the commit, so on an exam morning every start of the class queued
-- behind it, one commit (one WAL flush) at a time: 3,000 learners started at 278 a second and
-- 10,000 at 188, with PostgreSQL's CPU per start growing with the class (the row's dead
-- versions; bench/exam-start). A start's change to the statistics (an attempt in progress)
-- only has to change the cache key; it orders nothing. So starts bump one of 16 rows of their
-- assignment instead, chosen by the attempt id's random last byte, and the generation a report
-- is cached under is the sum of both tables. Finishes keep the one row: its lock orders a
-- finish against an item-sums rebuild (0014).
CREATE TABLE analytics_start_generations (
    assignment_id uuid NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
    shard         smallint NOT NULL CHECK (shard BETWEEN 0 AND 15),
    generation    bigint NOT NULL,
    PRIMARY KEY (assignment_id, shard)
);
