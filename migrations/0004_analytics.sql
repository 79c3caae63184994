-- Stable views for BI tools (Metabase, Superset, psql) in the `analytics` schema, a read-only
-- role to query them, and a generation counter that tells cached statistics they are stale.
-- quizd's own analytics endpoints read these same views, so the API and the views agree.

CREATE SCHEMA analytics;
COMMENT ON SCHEMA analytics IS 'quizd: stable, documented views for analysis; columns are only ever added';

CREATE VIEW analytics.attempts AS
SELECT t.id                                    AS attempt_id,
       t.assignment_id,
       a.course_id,
       q.slug                                  AS quiz,
       v.version                               AS quiz_version,
       t.quiz_version_id,
       t.user_id,
       t.number,
       t.locale,
       t.started_at,
       t.finished_at,
       CASE WHEN t.finished_at IS NULL THEN 'in_progress'
            WHEN t.finish_reason = 'deadline' THEN 'abandoned'
            ELSE 'submitted' END               AS state,
       t.score,
       t.max_score,
       100 * t.score / nullif(t.max_score, 0)  AS percentage,
       a.grading_method
  FROM attempts t
  JOIN assignments a ON a.id = t.assignment_id
  JOIN quiz_versions v ON v.id = t.quiz_version_id
  JOIN quizzes q ON q.id = v.quiz_id;
COMMENT ON VIEW analytics.attempts IS 'One row per attempt. state: in_progress | submitted | abandoned (finished by its deadline without being submitted). percentage: 0-100, NULL until finished.';

CREATE VIEW analytics.responses AS
SELECT r.attempt_id,
       t.assignment_id,
       t.quiz_version_id,
       r.question_key,
       r.points,
       r.max_points,
       r.points / r.max_points                  AS fraction,
       r.correct,
       r.answered_at,
       r.seconds,
       r.revision,
       CASE WHEN r.answer ? 'selected'
            THEN ARRAY(SELECT jsonb_array_elements_text(r.answer -> 'selected')) END AS selected_options,
       (r.answer ->> 'number')::double precision AS number,
       r.answer ->> 'text'                       AS text
  FROM responses r
  JOIN attempts t ON t.id = r.attempt_id;
COMMENT ON VIEW analytics.responses IS 'One row per answered question of an attempt (unanswered questions have no row and score 0). selected_options: option keys (choice kinds). seconds: time since the attempt started or the previous answer.';

CREATE VIEW analytics.questions AS
SELECT q.slug                                        AS quiz,
       v.version                                     AS quiz_version,
       v.id                                          AS quiz_version_id,
       e.position::integer                           AS position,
       e.question ->> 'key'                          AS question_key,
       e.question ->> 'kind'                         AS kind,
       (e.question ->> 'points')::double precision   AS points,
       e.question -> 'prompt' ->> (v.content ->> 'source_locale') AS prompt
  FROM quiz_versions v
  JOIN quizzes q ON q.id = v.quiz_id,
       jsonb_array_elements(v.content -> 'questions') WITH ORDINALITY AS e(question, position);
COMMENT ON VIEW analytics.questions IS 'One row per question of each quiz version, in authored order; prompt in the source locale.';

CREATE VIEW analytics.options AS
SELECT qs.quiz,
       qs.quiz_version,
       qs.quiz_version_id,
       qs.question_key,
       o.position::integer                                   AS position,
       o.option ->> 'key'                                    AS option_key,
       coalesce((o.option ->> 'correct')::boolean, false)    AS correct,
       o.option -> 'text' ->> (v.content ->> 'source_locale') AS text
  FROM analytics.questions qs
  JOIN quiz_versions v ON v.id = qs.quiz_version_id,
       jsonb_array_elements(v.content -> 'questions' -> (qs.position - 1) -> 'options') WITH ORDINALITY AS o(option, position);
COMMENT ON VIEW analytics.options IS 'One row per option of each choice question, in authored order, with the answer key.';

-- A read-only role for BI tools: GRANT it to a login role, e.g.
--   CREATE ROLE metabase LOGIN PASSWORD '…' IN ROLE quizd_analytics;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'quizd_analytics') THEN
        CREATE ROLE quizd_analytics NOLOGIN;
    END IF;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO quizd_analytics', current_database());
    GRANT USAGE ON SCHEMA analytics TO quizd_analytics;
    GRANT SELECT ON ALL TABLES IN SCHEMA analytics TO quizd_analytics;
    -- the views read these as their owner; the role itself gets nothing outside `analytics`
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'quizd_analytics role not created: the migrating user may not create roles';
END $$;

-- Bumped in the same transaction as every attempt start and finish, so cached statistics
-- know when they are stale.
CREATE TABLE analytics_generations (
    assignment_id uuid PRIMARY KEY REFERENCES assignments (id) ON DELETE CASCADE,
    generation    bigint NOT NULL
);
