-- Live mode (#21, item 13): an instructor runs an assignment question by question; learners
-- join with a short code and answer against a timer. The state is authoritative here; each
-- instance fans it out to its own streams (`live::hub`).

CREATE TABLE live_sessions (
    id               uuid PRIMARY KEY,
    assignment_id    uuid NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
    -- The version the session runs (the assignment's when it was created).
    quiz_version_id  uuid NOT NULL REFERENCES quiz_versions (id),
    created_by       uuid REFERENCES users (id) ON DELETE SET NULL,
    -- Six characters of an unambiguous alphabet (no 0/O, 1/I/L); unique among open sessions.
    code             text NOT NULL CHECK (code ~ '^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{6}$'),
    -- A code joins nothing after this, nor after the session ends.
    code_expires_at  timestamptz NOT NULL,
    -- The question shown now (or last): its index in the version's questions; NULL before the
    -- first.
    question_index   integer CHECK (question_index >= 0),
    question_key     text,
    opened_at        timestamptz,
    closes_at        timestamptz,
    leaderboard      boolean NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL DEFAULT now(),
    ended_at         timestamptz,
    CHECK ((question_index IS NULL) = (question_key IS NULL)),
    CHECK ((question_index IS NULL) = (opened_at IS NULL) AND (opened_at IS NULL) = (closes_at IS NULL))
);

-- A join looks the code up here and nowhere else.
CREATE UNIQUE INDEX live_sessions_open_code ON live_sessions (code) WHERE ended_at IS NULL;
CREATE INDEX live_sessions_assignment ON live_sessions (assignment_id);

-- Who joined, with the attempt the session runs for them.
CREATE TABLE live_participants (
    session_id  uuid NOT NULL REFERENCES live_sessions (id) ON DELETE CASCADE,
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    attempt_id  uuid NOT NULL UNIQUE REFERENCES attempts (id) ON DELETE CASCADE,
    joined_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, user_id)
);

-- An attempt started by joining a live session takes answers only through it (against its
-- timer); any other attempt never through one. Set at insert, never changed.
ALTER TABLE attempts ADD COLUMN live_session_id uuid REFERENCES live_sessions (id) ON DELETE SET NULL;

-- Joins counted per client address and per account, like sign-ups (`auth::ratelimit`).
ALTER TYPE sign_in_limit ADD VALUE 'live_join_address';
ALTER TYPE sign_in_limit ADD VALUE 'live_join_account';
