-- People, sign-in, courses, enrollments, and assignments with their policies.

CREATE TABLE users (
    id            uuid PRIMARY KEY,
    email         text CHECK (email IS NULL OR length(email) BETWEEN 3 AND 254),
    display_name  text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 200),
    -- argon2id PHC string; NULL for people who only sign in through an LMS
    password_hash text,
    role          text NOT NULL DEFAULT 'learner' CHECK (role IN ('learner', 'instructor', 'admin')),
    locale        text,
    -- an external identity (LTI: the platform's iss and the person's sub)
    ext_issuer    text,
    ext_subject   text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((ext_issuer IS NULL) = (ext_subject IS NULL))
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));
CREATE UNIQUE INDEX users_external_key ON users (ext_issuer, ext_subject) WHERE ext_issuer IS NOT NULL;

-- Refresh tokens are stored only as SHA-256 hashes. Each use rotates the token within its
-- family; presenting a used token again revokes the family.
CREATE TABLE refresh_tokens (
    id         uuid PRIMARY KEY,
    family_id  uuid NOT NULL,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash bytea NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    revoked_at timestamptz
);
CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id);
CREATE INDEX refresh_tokens_user ON refresh_tokens (user_id);

-- Keys quizd generated for itself when none was configured, so tokens survive restarts.
CREATE TABLE signing_keys (
    purpose    text PRIMARY KEY,
    secret     bytea NOT NULL CHECK (length(secret) >= 32),
    created_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE quizzes ADD COLUMN owner_id uuid REFERENCES users (id);

CREATE TABLE courses (
    id         uuid PRIMARY KEY,
    title      text NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    code       text CHECK (code IS NULL OR length(code) BETWEEN 1 AND 64),
    created_by uuid REFERENCES users (id),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE enrollments (
    course_id  uuid NOT NULL REFERENCES courses (id) ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('learner', 'instructor')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (course_id, user_id)
);
CREATE INDEX enrollments_user ON enrollments (user_id);

-- A quiz version placed somewhere with a policy. course_id NULL: the version's practice
-- assignment, open to every signed-in learner, its policy from the content file.
CREATE TABLE assignments (
    id                 uuid PRIMARY KEY,
    course_id          uuid REFERENCES courses (id) ON DELETE CASCADE,
    quiz_id            uuid NOT NULL REFERENCES quizzes (id),
    quiz_version_id    uuid NOT NULL REFERENCES quiz_versions (id),
    title              text NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    feedback           text NOT NULL CHECK (feedback IN ('immediate', 'on_finish', 'after_close', 'never')),
    attempts_allowed   integer CHECK (attempts_allowed > 0),
    time_limit_minutes integer CHECK (time_limit_minutes > 0),
    grading_method     text NOT NULL CHECK (grading_method IN ('highest', 'latest', 'first', 'average')),
    shuffle_questions  boolean NOT NULL,
    shuffle_options    boolean NOT NULL,
    opens_at           timestamptz,
    closes_at          timestamptz,
    created_by         uuid REFERENCES users (id),
    created_at         timestamptz NOT NULL DEFAULT now(),
    CHECK (opens_at IS NULL OR closes_at IS NULL OR opens_at < closes_at)
);
CREATE UNIQUE INDEX assignments_practice_key ON assignments (quiz_version_id) WHERE course_id IS NULL;
CREATE INDEX assignments_course ON assignments (course_id);

-- Practice assignments for the versions that exist already.
INSERT INTO assignments (id, course_id, quiz_id, quiz_version_id, title, feedback, attempts_allowed,
                         time_limit_minutes, grading_method, shuffle_questions, shuffle_options)
SELECT gen_random_uuid(), NULL, v.quiz_id, v.id,
       coalesce(v.content -> 'title' ->> (v.content ->> 'source_locale'), 'Practice'),
       coalesce(v.content -> 'practice' ->> 'feedback', 'immediate'),
       (v.content -> 'practice' ->> 'attempts_allowed')::integer,
       (v.content -> 'practice' ->> 'time_limit_minutes')::integer,
       coalesce(v.content -> 'practice' ->> 'grading_method', 'highest'),
       coalesce((v.content -> 'practice' ->> 'shuffle_questions')::boolean, false),
       coalesce((v.content -> 'practice' ->> 'shuffle_options')::boolean, false)
  FROM quiz_versions v;
