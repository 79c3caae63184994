-- Question banks (issue #15): an attempt on a quiz with banks serves the questions drawn for it
-- when it started, not every question of its version.

-- The keys of the questions the attempt serves, in layout order (before any shuffle), drawn
-- at start from the attempt's seed (`attempts::draw`) and never changed. NULL: every question
-- of the version (a quiz without banks, and every attempt started before this migration).
ALTER TABLE attempts ADD COLUMN question_set text[];

-- As in 0014, but an attempt crosses only the questions it served: a question it was not
-- served is not in its total nor in that question's counts (so each question's n is the
-- attempts that saw it). Unchanged for attempts without a question set.
CREATE OR REPLACE FUNCTION item_sums_vectors(p_attempts uuid[])
RETURNS TABLE (attempt_id uuid, assignment_id uuid, quiz_version_id uuid, locale text,
               score double precision, max_score double precision, abandoned boolean,
               total double precision, question_key text, points double precision,
               answered boolean, seconds double precision)
LANGUAGE sql STABLE AS $$
    WITH t AS MATERIALIZED (
        SELECT t.id, t.assignment_id, t.quiz_version_id, t.locale, t.score, t.max_score,
               t.finish_reason = 'deadline' AS abandoned, t.question_keys, t.question_points,
               t.question_seconds, t.question_set
          FROM unnest(p_attempts) AS p(id) JOIN attempts t ON t.id = p.id
         WHERE t.finished_at IS NOT NULL
    ), vq AS MATERIALIZED (
        SELECT v.id AS version_id, e.question ->> 'key' AS key
          FROM quiz_versions v, jsonb_array_elements(v.content -> 'questions') AS e(question)
         WHERE v.id IN (SELECT DISTINCT quiz_version_id FROM t)
    ), scored AS (
        SELECT t.id, t.assignment_id, t.quiz_version_id, t.locale, t.score, t.max_score,
               t.abandoned, vq.key, coalesce(t.question_points[x.i], 0) AS points,
               x.i IS NOT NULL AS answered, t.question_seconds[x.i] AS seconds
          FROM t JOIN vq ON vq.version_id = t.quiz_version_id
                        AND (t.question_set IS NULL OR vq.key = ANY (t.question_set))
          CROSS JOIN LATERAL (SELECT array_position(t.question_keys, vq.key) AS i) x
    )
    SELECT id, assignment_id, quiz_version_id, locale, score, max_score, abandoned,
           sum(points) OVER (PARTITION BY id), key, points, answered, seconds
      FROM scored
$$;

-- BI tools see what each attempt served (a column added at the end, as the schema promises).
CREATE OR REPLACE VIEW analytics.attempts AS
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
       a.grading_method,
       t.question_set
  FROM attempts t
  JOIN assignments a ON a.id = t.assignment_id
  JOIN quiz_versions v ON v.id = t.quiz_version_id
  JOIN quizzes q ON q.id = v.quiz_id;
COMMENT ON VIEW analytics.attempts IS 'One row per attempt. state: in_progress | submitted | abandoned (finished by its deadline without being submitted). percentage: 0-100, NULL until finished. question_set: the question keys the attempt served (a quiz with banks), NULL = every question of its version.';
