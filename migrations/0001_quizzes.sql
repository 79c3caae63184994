-- Quizzes and their immutable versions. A version's content (questions, options, answer key,
-- texts in every locale) is the importer's normalized JSON; it is never updated once written.
CREATE TABLE quizzes (
    id                 uuid PRIMARY KEY,
    slug               text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,63}$'),
    current_version_id uuid,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE quiz_versions (
    id           uuid PRIMARY KEY,
    quiz_id      uuid NOT NULL REFERENCES quizzes (id),
    version      integer NOT NULL CHECK (version > 0),
    content_hash text NOT NULL,
    content      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (quiz_id, version)
);

ALTER TABLE quizzes
    ADD CONSTRAINT quizzes_current_version_fk
    FOREIGN KEY (current_version_id) REFERENCES quiz_versions (id);

-- Versions are immutable: refuse any UPDATE of one.
CREATE FUNCTION quiz_versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'quiz versions are immutable (version % of quiz %)', OLD.version, OLD.quiz_id;
END $$;

CREATE TRIGGER quiz_versions_no_update BEFORE UPDATE ON quiz_versions
    FOR EACH ROW EXECUTE FUNCTION quiz_versions_immutable();
