-- Grades: a grade set by course staff beside the computed score, and the append-only history
-- of every change of an attempt's grade.

-- The grade course staff set by hand; NULL: the computed score stands. `score` stays the
-- computed one (item analysis reads it); an attempt's effective grade is
-- coalesce(override_points, score), which the gradebook and LMS grade passback read.
ALTER TABLE attempts
    ADD COLUMN override_points double precision,
    ADD CONSTRAINT attempts_override_range
        CHECK (override_points IS NULL OR (override_points >= 0 AND override_points <= max_score)),
    ADD CONSTRAINT attempts_override_finished
        CHECK (override_points IS NULL OR finished_at IS NOT NULL);

-- Every change of an attempt's grade: its finish (reason: how it finished), a staff override or
-- a later regrade (reason: what staff wrote). Never updated or deleted (a trigger refuses it);
-- an attempt with events cannot be deleted either (the foreign key has no cascade). An erased
-- person keeps their opaque id here, as in the audit log: erasure keeps the users row.
CREATE TABLE grade_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    attempt_id  uuid NOT NULL REFERENCES attempts (id),
    kind        text NOT NULL CHECK (kind IN ('finished', 'override', 'regrade')),
    -- who changed it; NULL: quizd itself (a finish, the deadline sweep)
    actor_id    uuid REFERENCES users (id),
    -- by the server's (injectable) clock
    at          timestamptz NOT NULL,
    -- NULL for a finish: the attempt had no grade before
    from_points double precision CHECK (from_points IS NULL OR from_points >= 0),
    to_points   double precision NOT NULL CHECK (to_points >= 0),
    max_points  double precision NOT NULL CHECK (max_points >= 0),
    reason      text NOT NULL CHECK (length(reason) BETWEEN 1 AND 1000),
    CHECK ((kind = 'finished') = (from_points IS NULL)),
    CHECK (to_points <= max_points)
);
CREATE INDEX grade_events_attempt ON grade_events (attempt_id, id);
CREATE INDEX grade_events_actor ON grade_events (actor_id) WHERE actor_id IS NOT NULL;

CREATE FUNCTION grade_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'grade events are append-only';
END $$;
CREATE TRIGGER grade_events_no_change BEFORE UPDATE OR DELETE ON grade_events
    FOR EACH ROW EXECUTE FUNCTION grade_events_append_only();
CREATE TRIGGER grade_events_no_truncate BEFORE TRUNCATE ON grade_events
    FOR EACH STATEMENT EXECUTE FUNCTION grade_events_append_only();

-- The attempts finished before this migration: their finish, as it was recorded.
INSERT INTO grade_events (attempt_id, kind, actor_id, at, from_points, to_points, max_points, reason)
SELECT id, 'finished', NULL, finished_at, NULL, score, max_score, finish_reason
  FROM attempts WHERE finished_at IS NOT NULL
 ORDER BY finished_at, id;

ALTER TABLE audit_log DROP CONSTRAINT audit_log_action_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_action_check CHECK (action IN (
    'role_changed', 'coauthor_added', 'coauthor_removed', 'key_read',
    'lti_registration_created', 'lti_registration_updated',
    'lti_registration_deleted', 'account_erased',
    'override_set', 'override_removed', 'grade_overridden'));
