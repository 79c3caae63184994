-- Tell every quizd process when a quiz's current version changes, so that the slug → version
-- cache is dropped at once (see quizzes::VersionCache).
CREATE FUNCTION quizzes_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('quizd_quizzes', NEW.slug);
    RETURN NULL;
END $$;

CREATE TRIGGER quizzes_changed AFTER INSERT OR UPDATE OF current_version_id ON quizzes
    FOR EACH ROW EXECUTE FUNCTION quizzes_notify_change();
