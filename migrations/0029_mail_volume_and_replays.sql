-- Issue #32: mail volume per sender; no signing secret kept for idempotent replays.

-- The mail quizd sent at someone's request (course invitations and their resends), a row per
-- request: `invitations::reserve_mails` sums a sender's last day of it under an advisory lock
-- before it sends more, and deletes what is older.
CREATE TABLE mail_volume (
    sender_id uuid NOT NULL REFERENCES users (id),
    sent_at   timestamptz NOT NULL,
    messages  integer NOT NULL CHECK (messages > 0)
);
CREATE INDEX mail_volume_sender ON mail_volume (sender_id, sent_at);

-- A replayed webhook creation answered its signing secret, kept in clear with the response;
-- responses are now stored without it. What was stored before goes (a retry then runs again,
-- and its Idempotency-Key is simply new).
DELETE FROM idempotency_keys WHERE position('"secret":"whsec_'::bytea IN response_body) > 0;
