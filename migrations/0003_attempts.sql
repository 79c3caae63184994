-- Attempts, their responses, and the outbox of events written with them.

CREATE TABLE attempts (
    id              uuid PRIMARY KEY,
    assignment_id   uuid NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    quiz_version_id uuid NOT NULL REFERENCES quiz_versions (id),
    -- 1, 2, … per learner and assignment: the attempts limit is enforced by this key
    number          integer NOT NULL CHECK (number > 0),
    -- the locale the attempt is served in (negotiated at start)
    locale          text NOT NULL,
    -- secret: derives the question and option order and the ids served in this attempt
    seed            bytea NOT NULL CHECK (length(seed) = 32),
    started_at      timestamptz NOT NULL,
    deadline        timestamptz,
    finished_at     timestamptz,
    finish_reason   text CHECK (finish_reason IN ('submitted', 'deadline')),
    score           double precision,
    max_score       double precision NOT NULL,
    UNIQUE (assignment_id, user_id, number),
    CHECK ((finished_at IS NULL) = (finish_reason IS NULL)),
    CHECK ((finished_at IS NULL) = (score IS NULL))
);
CREATE INDEX attempts_user ON attempts (user_id, started_at);
CREATE INDEX attempts_assignment ON attempts (assignment_id, user_id);
-- what the sweep looks for
CREATE INDEX attempts_open_deadline ON attempts (deadline) WHERE finished_at IS NULL AND deadline IS NOT NULL;

-- At most one graded response per (attempt, question): the primary key says so.
CREATE TABLE responses (
    attempt_id   uuid NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
    question_key text NOT NULL,
    -- in content terms: {"selected": [option keys]} | {"number": x} | {"text": "…"}
    answer       jsonb NOT NULL,
    points       double precision NOT NULL CHECK (points >= 0),
    max_points   double precision NOT NULL CHECK (max_points > 0),
    correct      boolean NOT NULL,
    answered_at  timestamptz NOT NULL,
    -- seconds from the attempt's start (or the previous answer) to this answer
    seconds      double precision NOT NULL,
    revision     integer NOT NULL DEFAULT 1,
    PRIMARY KEY (attempt_id, question_key),
    CHECK (points <= max_points)
);

-- Events written in the same transaction as the change they report; delivered at least once
-- (LMS grade passback, xAPI) by workers that mark them done.
CREATE TABLE outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic           text NOT NULL,
    aggregate_id    uuid NOT NULL,
    payload         jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    delivery_tries  integer NOT NULL DEFAULT 0,
    last_error      text,
    next_attempt_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbox_pending ON outbox (next_attempt_at) WHERE delivered_at IS NULL;
