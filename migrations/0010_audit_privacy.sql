-- The audit log, and erasure of a person.

-- Security-relevant actions, append-only: who (the acting person, if any), what, about whom or
-- what, when, from where. Nothing updates or deletes a row (a trigger refuses it); an erased
-- person's rows keep only their opaque id.
CREATE TABLE audit_log (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT now(),
    actor_id   uuid,
    action     text NOT NULL CHECK (action IN (
                   'role_changed', 'coauthor_added', 'coauthor_removed', 'key_read',
                   'lti_registration_created', 'lti_registration_updated',
                   'lti_registration_deleted', 'account_erased')),
    subject_id uuid,
    detail     jsonb NOT NULL DEFAULT '{}',
    -- the client address as quizd judged it (forwarded headers only from trusted proxies)
    address    text
);
CREATE INDEX audit_log_action ON audit_log (action, id);
CREATE INDEX audit_log_actor ON audit_log (actor_id, id);
CREATE INDEX audit_log_subject ON audit_log (subject_id, id);

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only';
END $$;
CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- An erased person stays as a nameless row so that their attempts still count in statistics;
-- everything that identifies them is gone (see `DELETE /v1/me`).
ALTER TABLE users ADD COLUMN erased_at timestamptz;
ALTER TABLE users ADD CONSTRAINT users_erased_anonymous CHECK (
    erased_at IS NULL
    OR (email IS NULL AND password_hash IS NULL AND ext_issuer IS NULL AND locale IS NULL));
