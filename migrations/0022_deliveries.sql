-- Several consumers of one outbox: LTI grade passback (`lti-ags`), xAPI statements to an LRS
-- (`xapi`), later webhooks. Until now the delivery state (delivered_at, tries, last error,
-- next try) was on the outbox row itself, so an event could be delivered to one consumer only.
--
-- The design: the outbox row stays the event, written in the transaction of the change it
-- reports (the hot paths keep their one INSERT, with no trigger); a dispatch step, run by every
-- delivery worker before it claims work, takes undispatched events (`FOR UPDATE SKIP LOCKED`,
-- so instances share it) and writes one `deliveries` row per consumer that wants the event,
-- then marks the event dispatched. Each consumer claims, leases, backs off, parks and retries
-- its own rows, keyed (consumer, event_id), with the same code for every consumer.
--
-- Why rows and not a per-consumer cursor over outbox ids: ids come from a sequence, and a
-- transaction that took a lower id may commit after one that took a higher one, so a cursor
-- would skip events unless it tracked transaction snapshots; and a cursor still needs a table
-- for the failed events it passed. A row per wanted delivery is simple, exact, shows every
-- delivery to admins with one query, and costs nothing for events nobody wants.
--
-- Who wants what is the table `event_consumers` (consumer, topic): `lti-ags` is always there
-- (and only takes events of attempts whose assignment an LMS links, checked at dispatch);
-- `xapi` is registered by `quizd serve` with --xapi-endpoint and removed without it.
--
-- Nothing piles up: an event is purged (with its delivery rows) a week after its dispatch
-- once every delivery of it is done; events no consumer wants (`response.recorded` without
-- xAPI) are dispatched to nobody and purged the same way. Parked deliveries keep their event.
CREATE TABLE event_consumers (
    consumer text NOT NULL,
    topic    text NOT NULL,
    PRIMARY KEY (consumer, topic)
);
INSERT INTO event_consumers (consumer, topic)
VALUES ('lti-ags', 'attempt.finished'), ('lti-ags', 'attempt.regraded');

CREATE TABLE deliveries (
    consumer        text NOT NULL,
    event_id        bigint NOT NULL REFERENCES outbox (id) ON DELETE CASCADE,
    -- tries so far, counted when a try starts (a crash mid-delivery still counts)
    tries           integer NOT NULL DEFAULT 0,
    -- the last failure, or why nothing was sent
    last_error      text,
    -- due from then; 'infinity': parked until an admin retries it; a lease while claimed
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    PRIMARY KEY (consumer, event_id)
);
CREATE INDEX deliveries_due ON deliveries (consumer, next_attempt_at) WHERE delivered_at IS NULL;
CREATE INDEX deliveries_event ON deliveries (event_id);

-- Grade passback's state carries over as it was (delivered, failed, parked, pending).
INSERT INTO deliveries (consumer, event_id, tries, last_error, next_attempt_at, delivered_at)
SELECT 'lti-ags', o.id, o.delivery_tries, o.last_error, o.next_attempt_at, o.delivered_at
  FROM outbox o
 WHERE o.topic IN ('attempt.finished', 'attempt.regraded')
   AND EXISTS (SELECT 1 FROM attempts t JOIN lti_resource_links l ON l.assignment_id = t.assignment_id
                WHERE t.id = o.aggregate_id);

-- Every event written so far counts as dispatched: grade passback's are above; the others
-- (`response.recorded`, unlinked finishes) had no consumer.
ALTER TABLE outbox ADD COLUMN dispatched_at timestamptz;
UPDATE outbox SET dispatched_at = coalesce(delivered_at, created_at);
DROP INDEX outbox_lti_pending;
DROP INDEX outbox_pending;
ALTER TABLE outbox DROP COLUMN delivered_at, DROP COLUMN delivery_tries, DROP COLUMN last_error,
                   DROP COLUMN next_attempt_at;
-- What dispatch looks for, and what the purge looks for; a new event enters only the first.
CREATE INDEX outbox_undispatched ON outbox (id) WHERE dispatched_at IS NULL;
CREATE INDEX outbox_dispatched ON outbox (dispatched_at) WHERE dispatched_at IS NOT NULL;
