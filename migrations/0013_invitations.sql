-- Verified email addresses, invitations to a course for people who have no account yet, and
-- archived courses.

-- When the person proved they receive mail at `email` (by a link quizd sent there). Only a
-- verified address claims invitations.
ALTER TABLE users ADD COLUMN email_verified_at timestamptz;

-- Links quizd mailed to verify an address. The token is stored only as its SHA-256: a copy of
-- the database cannot verify anyone. Each token works once, until `expires_at`, and only for the
-- address it was sent to.
CREATE TABLE email_verifications (
    token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email      text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
-- The per-account send limit counts an account's recent tokens.
CREATE INDEX email_verifications_user ON email_verifications (user_id, created_at);

-- A pending invitation: `email` (trimmed, lower case) is enrolled in the course with `role`
-- when a person whose address is verified signs in or verifies it. Claiming or revoking it
-- deletes the row (the enrollment is the record), so no address outlives its purpose here.
CREATE TABLE invitations (
    id           uuid PRIMARY KEY,
    course_id    uuid NOT NULL REFERENCES courses (id) ON DELETE CASCADE,
    email        text NOT NULL CHECK (length(email) BETWEEN 3 AND 254 AND email = lower(btrim(email))),
    role         text NOT NULL CHECK (role IN ('learner', 'instructor')),
    invited_by   uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL,
    -- When the invitation was last handed to the mailer (a resend is limited by it).
    last_sent_at timestamptz,
    UNIQUE (course_id, email)
);
CREATE INDEX invitations_email ON invitations (email);
-- The per-account limit on invitations mailed counts an inviter's recent ones.
CREATE INDEX invitations_invited_by ON invitations (invited_by, last_sent_at);

-- An archived course is read-only: no new enrollments, invitations or assignments, no new
-- attempts. It is listed apart from the active ones.
ALTER TABLE courses ADD COLUMN archived_at timestamptz;
