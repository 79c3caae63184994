-- Running a course exam: changing and closing assignments, archiving them, per-learner
-- overrides and course-wide accommodations, sequential navigation.

-- An attempt ended by closing its assignment early (POST /v1/assignments/{id}/close).
ALTER TABLE attempts DROP CONSTRAINT attempts_finish_reason_check;
ALTER TABLE attempts ADD CONSTRAINT attempts_finish_reason_check
    CHECK (finish_reason IN ('submitted', 'deadline', 'closed'));

-- free: any question in any order; sequential: one question at a time, no way back.
ALTER TABLE assignments
    ADD COLUMN navigation text NOT NULL DEFAULT 'free' CHECK (navigation IN ('free', 'sequential')),
    -- an assignment that had attempts when it was deleted: hidden from learners' lists, no new
    -- starts, its attempts kept
    ADD COLUMN archived_at timestamptz;

-- The layout of an attempt (its order, and whether it is served one question at a time) is
-- fixed when it starts: a later change of the assignment's policy must not reorder or
-- re-navigate an attempt in progress, nor one reopened for review.
ALTER TABLE attempts
    ADD COLUMN shuffle_questions boolean,
    ADD COLUMN shuffle_options   boolean,
    ADD COLUMN navigation        text CHECK (navigation IN ('free', 'sequential'));
UPDATE attempts t
   SET shuffle_questions = a.shuffle_questions, shuffle_options = a.shuffle_options,
       navigation = a.navigation
  FROM assignments a WHERE a.id = t.assignment_id;
ALTER TABLE attempts
    ALTER COLUMN shuffle_questions SET NOT NULL,
    ALTER COLUMN shuffle_options SET NOT NULL,
    ALTER COLUMN navigation SET NOT NULL;

-- One learner's exceptions to one assignment's policy. The most generous applicable rule wins
-- (see `assignments::rules`); an attempt's deadline column holds the result, updated in the
-- transaction that changes a rule, so answering reads it as before.
CREATE TABLE assignment_overrides (
    assignment_id   uuid NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    time_multiplier double precision CHECK (time_multiplier > 0 AND time_multiplier <= 10),
    extra_minutes   integer CHECK (extra_minutes BETWEEN 0 AND 10080),
    extra_attempts  integer CHECK (extra_attempts BETWEEN 0 AND 1000),
    opens_at        timestamptz,
    closes_at       timestamptz,
    created_by      uuid REFERENCES users (id) ON DELETE SET NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (assignment_id, user_id),
    CHECK (opens_at IS NULL OR closes_at IS NULL OR opens_at < closes_at)
);
CREATE INDEX assignment_overrides_user ON assignment_overrides (user_id);

-- One learner's accommodation in every assignment of a course.
CREATE TABLE course_accommodations (
    course_id       uuid NOT NULL REFERENCES courses (id) ON DELETE CASCADE,
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    time_multiplier double precision CHECK (time_multiplier > 0 AND time_multiplier <= 10),
    extra_minutes   integer CHECK (extra_minutes BETWEEN 0 AND 10080),
    extra_attempts  integer CHECK (extra_attempts BETWEEN 0 AND 1000),
    opens_at        timestamptz,
    closes_at       timestamptz,
    created_by      uuid REFERENCES users (id) ON DELETE SET NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (course_id, user_id),
    CHECK (opens_at IS NULL OR closes_at IS NULL OR opens_at < closes_at)
);
CREATE INDEX course_accommodations_user ON course_accommodations (user_id);

ALTER TABLE audit_log DROP CONSTRAINT audit_log_action_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_action_check CHECK (action IN (
    'role_changed', 'coauthor_added', 'coauthor_removed', 'key_read',
    'lti_registration_created', 'lti_registration_updated',
    'lti_registration_deleted', 'account_erased',
    'override_set', 'override_removed'));
