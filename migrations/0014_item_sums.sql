-- Incremental item analysis. Classical test statistics are functions of sums, so instead of
-- reading every finished attempt for a report, quizd keeps COUNT tables per (assignment, quiz
-- version, locale, counted set), updated in the transaction that finishes an attempt. Every
-- table is keyed by the values as they are stored (double precision points, totals, scores)
-- and holds only integer counts: adding and removing attempts is exact, and the tables after
-- any history of finishes equal the tables rebuilt from scratch. A report reads a few rows
-- and does the arithmetic (`analytics::sums`).
--
-- `graded`: false is every finished attempt; true is the attempts that make each learner's
-- grade under the assignment's grading method (every attempt under `average`).

-- The attempt totals: the test statistics (mean, median, SD, skewness, kurtosis, histogram)
-- and the attempt counts by state.
CREATE TABLE item_totals (
    assignment_id   uuid NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
    quiz_version_id uuid NOT NULL,
    locale          text NOT NULL,
    graded          boolean NOT NULL,
    -- the attempt's score as stored, its maximum, and its total over the version's questions
    score           double precision NOT NULL,
    max_score       double precision NOT NULL,
    total           double precision NOT NULL,
    attempts        bigint NOT NULL,
    -- of which finished by their deadline
    abandoned       bigint NOT NULL,
    PRIMARY KEY (assignment_id, quiz_version_id, graded, locale, score, max_score, total)
);

-- Per question: how many attempts scored `points` on it with `total` on the test (so the rest
-- score is total − points). Gives n, Σx, Σx², Σx·T, the marginals that discriminative
-- efficiency sorts, full marks per locale (homogeneity) and the Mantel–Haenszel strata.
CREATE TABLE item_cells (
    assignment_id   uuid NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
    quiz_version_id uuid NOT NULL,
    locale          text NOT NULL,
    graded          boolean NOT NULL,
    question_key    text NOT NULL,
    points          double precision NOT NULL,
    total           double precision NOT NULL,
    attempts        bigint NOT NULL,
    -- of which answered it (an unanswered question scores 0)
    answered        bigint NOT NULL,
    PRIMARY KEY (assignment_id, quiz_version_id, graded, locale, question_key, points, total)
);

-- Distractor analysis: attempts that chose an option, by the attempt's score.
CREATE TABLE item_options (
    assignment_id   uuid NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
    quiz_version_id uuid NOT NULL,
    locale          text NOT NULL,
    graded          boolean NOT NULL,
    question_key    text NOT NULL,
    option_key      text NOT NULL,
    score           double precision NOT NULL,
    max_score       double precision NOT NULL,
    attempts        bigint NOT NULL,
    PRIMARY KEY (assignment_id, quiz_version_id, graded, locale, question_key, option_key, score, max_score)
);

-- Answer times, in whole seconds (floor(seconds + 0.5)), for the median time per question: bounded by the
-- distinct whole seconds, where exact times would make a row per answer.
CREATE TABLE item_seconds (
    assignment_id   uuid NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
    quiz_version_id uuid NOT NULL,
    locale          text NOT NULL,
    graded          boolean NOT NULL,
    question_key    text NOT NULL,
    seconds         double precision NOT NULL,
    attempts        bigint NOT NULL,
    PRIMARY KEY (assignment_id, quiz_version_id, graded, locale, question_key, seconds)
);

-- The attempt that makes each learner's grade as counted in the `graded` set, under methods
-- other than `average`.
CREATE TABLE item_graded (
    assignment_id   uuid NOT NULL REFERENCES assignments (id) ON DELETE CASCADE,
    quiz_version_id uuid NOT NULL,
    user_id         uuid NOT NULL,
    attempt_id      uuid,
    PRIMARY KEY (assignment_id, quiz_version_id, user_id)
);

-- An assignment whose tables are maintained, and the grading method its `graded` set follows.
-- No row: not maintained yet (attempts finished before this migration, or by a path that did
-- not maintain them): a report rebuilds first. A different method (the policy was changed):
-- a report rebuilds first.
CREATE TABLE item_sums_state (
    assignment_id  uuid PRIMARY KEY REFERENCES assignments (id) ON DELETE CASCADE,
    grading_method text NOT NULL
);

-- Attempts in progress, counted by reports without reading finished attempts.
CREATE INDEX attempts_in_progress ON attempts (assignment_id) WHERE finished_at IS NULL;

-- One row per (finished attempt, question of its version): its points (0 unanswered), whether
-- it answered, its seconds, and its total over the version's questions.
CREATE FUNCTION item_sums_vectors(p_attempts uuid[])
RETURNS TABLE (attempt_id uuid, assignment_id uuid, quiz_version_id uuid, locale text,
               score double precision, max_score double precision, abandoned boolean,
               total double precision, question_key text, points double precision,
               answered boolean, seconds double precision)
LANGUAGE sql STABLE AS $$
    -- Materialized, and the arrays dropped before the per-attempt sum: otherwise the planner
    -- carries each version's content and each attempt's arrays into the sort.
    WITH t AS MATERIALIZED (
        SELECT t.id, t.assignment_id, t.quiz_version_id, t.locale, t.score, t.max_score,
               t.finish_reason = 'deadline' AS abandoned, t.question_keys, t.question_points,
               t.question_seconds
          FROM unnest(p_attempts) AS p(id) JOIN attempts t ON t.id = p.id
         WHERE t.finished_at IS NOT NULL
    ), vq AS MATERIALIZED (
        SELECT v.id AS version_id, e.question ->> 'key' AS key
          FROM quiz_versions v, jsonb_array_elements(v.content -> 'questions') AS e(question)
         WHERE v.id IN (SELECT DISTINCT quiz_version_id FROM t)
    ), scored AS (
        -- The answer's position in the attempt's own arrays: no join between attempts and
        -- answers, whose plan would rest on a row estimate for the array of attempts.
        SELECT t.id, t.assignment_id, t.quiz_version_id, t.locale, t.score, t.max_score,
               t.abandoned, vq.key, coalesce(t.question_points[x.i], 0) AS points,
               x.i IS NOT NULL AS answered, t.question_seconds[x.i] AS seconds
          FROM t JOIN vq ON vq.version_id = t.quiz_version_id
          CROSS JOIN LATERAL (SELECT array_position(t.question_keys, vq.key) AS i) x
    )
    SELECT id, assignment_id, quiz_version_id, locale, score, max_score, abandoned,
           sum(points) OVER (PARTITION BY id), key, points, answered, seconds
      FROM scored
$$;

-- Adds (p_sign = 1) or removes (p_sign = -1) finished attempts in one counted set. Rows are
-- written in key order, so concurrent finishes lock them in the same order.
CREATE FUNCTION item_sums_apply(p_attempts uuid[], p_graded boolean, p_sign bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(cardinality(p_attempts), 0) = 0 THEN
        RETURN;
    END IF;
    INSERT INTO item_totals AS s (assignment_id, quiz_version_id, locale, graded, score,
                                  max_score, total, attempts, abandoned)
    SELECT v.assignment_id, v.quiz_version_id, v.locale, p_graded, v.score, v.max_score, v.total,
           p_sign * count(*), p_sign * count(*) FILTER (WHERE v.abandoned)
      FROM (SELECT DISTINCT ON (attempt_id) * FROM item_sums_vectors(p_attempts)) v
     GROUP BY 1, 2, 3, 5, 6, 7
     ORDER BY 1, 2, 3, 5, 6, 7
    ON CONFLICT (assignment_id, quiz_version_id, graded, locale, score, max_score, total)
    DO UPDATE SET attempts = s.attempts + excluded.attempts,
                  abandoned = s.abandoned + excluded.abandoned;

    INSERT INTO item_cells AS s (assignment_id, quiz_version_id, locale, graded, question_key,
                                 points, total, attempts, answered)
    SELECT v.assignment_id, v.quiz_version_id, v.locale, p_graded, v.question_key, v.points,
           v.total, p_sign * count(*), p_sign * count(*) FILTER (WHERE v.answered)
      FROM item_sums_vectors(p_attempts) v
     GROUP BY 1, 2, 3, 5, 6, 7
     ORDER BY 1, 2, 3, 5, 6, 7
    ON CONFLICT (assignment_id, quiz_version_id, graded, locale, question_key, points, total)
    DO UPDATE SET attempts = s.attempts + excluded.attempts,
                  answered = s.answered + excluded.answered;

    INSERT INTO item_seconds AS s (assignment_id, quiz_version_id, locale, graded, question_key,
                                   seconds, attempts)
    SELECT v.assignment_id, v.quiz_version_id, v.locale, p_graded, v.question_key,
           floor(v.seconds + 0.5), p_sign * count(*)
      FROM item_sums_vectors(p_attempts) v
     WHERE v.answered
     GROUP BY 1, 2, 3, 5, 6
     ORDER BY 1, 2, 3, 5, 6
    ON CONFLICT (assignment_id, quiz_version_id, graded, locale, question_key, seconds)
    DO UPDATE SET attempts = s.attempts + excluded.attempts;

    INSERT INTO item_options AS s (assignment_id, quiz_version_id, locale, graded, question_key,
                                   option_key, score, max_score, attempts)
    SELECT t.assignment_id, t.quiz_version_id, t.locale, p_graded,
           split_part(c.choice, ':', 1), substr(c.choice, strpos(c.choice, ':') + 1),
           t.score, t.max_score, p_sign * count(*)
      FROM unnest(p_attempts) AS p(id) JOIN attempts t ON t.id = p.id,
           unnest(t.choices) AS c(choice)
     WHERE t.finished_at IS NOT NULL AND strpos(c.choice, ':') > 0
     GROUP BY 1, 2, 3, 5, 6, 7, 8
     ORDER BY 1, 2, 3, 5, 6, 7, 8
    ON CONFLICT (assignment_id, quiz_version_id, graded, locale, question_key, option_key, score, max_score)
    DO UPDATE SET attempts = s.attempts + excluded.attempts;
END $$;

-- Counts attempts that have just finished, in the transaction that finishes them, AFTER it
-- bumped their assignments' `analytics_generations` rows: that row lock is what orders a
-- finish against a rebuild (`item_sums_rebuild`), so neither misses nor double-counts one.
-- Assignments without a state row are left to the rebuild at their first report, unless no
-- other attempt of theirs has finished (then the tables start here, empty).
CREATE FUNCTION item_sums_finish(p_attempts uuid[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_assignment uuid;
    v_attempts uuid[];
    v_old uuid[];
    v_new uuid[];
BEGIN
    -- An assignment not maintained yet starts its tables here if these are its only finished
    -- attempts (checked once per such assignment: rare, and never on the maintained path).
    FOR v_assignment IN
        SELECT DISTINCT t.assignment_id
          FROM unnest(p_attempts) AS p(id) JOIN attempts t ON t.id = p.id
         WHERE NOT EXISTS (SELECT 1 FROM item_sums_state s WHERE s.assignment_id = t.assignment_id)
    LOOP
        IF (SELECT count(*) FROM attempts o
             WHERE o.assignment_id = v_assignment AND o.finished_at IS NOT NULL)
         = (SELECT count(*) FROM unnest(p_attempts) AS p(id) JOIN attempts t ON t.id = p.id
             WHERE t.assignment_id = v_assignment AND t.finished_at IS NOT NULL) THEN
            INSERT INTO item_sums_state (assignment_id, grading_method)
            SELECT id, grading_method FROM assignments WHERE id = v_assignment
            ON CONFLICT DO NOTHING;
        END IF;
    END LOOP;

    -- Only the attempts of maintained assignments.
    v_attempts := ARRAY(SELECT t.id
                          FROM unnest(p_attempts) AS p(id) JOIN attempts t ON t.id = p.id
                          JOIN item_sums_state s ON s.assignment_id = t.assignment_id
                         WHERE t.finished_at IS NOT NULL);
    PERFORM item_sums_apply(v_attempts, false, 1);

    -- The graded set, where the state follows the assignment's method (otherwise the next
    -- report rebuilds it). Under `average` every attempt makes the grade.
    PERFORM item_sums_apply(ARRAY(
        SELECT t.id
          FROM unnest(v_attempts) AS p(id) JOIN attempts t ON t.id = p.id
          JOIN assignments a ON a.id = t.assignment_id
          JOIN item_sums_state s ON s.assignment_id = a.id AND s.grading_method = a.grading_method
         WHERE a.grading_method = 'average'), true, 1);

    -- Otherwise one attempt per learner: lock each learner's row (in key order) before
    -- reading their attempts, so two finishes of one learner are counted one after the other.
    INSERT INTO item_graded (assignment_id, quiz_version_id, user_id)
    SELECT DISTINCT t.assignment_id, t.quiz_version_id, t.user_id
      FROM unnest(v_attempts) AS p(id) JOIN attempts t ON t.id = p.id
      JOIN assignments a ON a.id = t.assignment_id
      JOIN item_sums_state s ON s.assignment_id = a.id AND s.grading_method = a.grading_method
     WHERE a.grading_method <> 'average'
     ORDER BY 1, 2, 3
    ON CONFLICT DO NOTHING;
    PERFORM 1
       FROM item_graded g
       JOIN (SELECT DISTINCT t.assignment_id, t.quiz_version_id, t.user_id
               FROM unnest(v_attempts) AS p(id) JOIN attempts t ON t.id = p.id) l
         ON (g.assignment_id, g.quiz_version_id, g.user_id) = (l.assignment_id, l.quiz_version_id, l.user_id)
      ORDER BY g.assignment_id, g.quiz_version_id, g.user_id
        FOR UPDATE OF g;

    -- A new statement, so a new snapshot: it sees what a finish we waited for committed.
    WITH learners AS (
        SELECT g.assignment_id, g.quiz_version_id, g.user_id, g.attempt_id AS old,
               (SELECT t.id FROM attempts t
                 WHERE t.assignment_id = g.assignment_id AND t.user_id = g.user_id
                   AND t.quiz_version_id = g.quiz_version_id AND t.finished_at IS NOT NULL
                 ORDER BY CASE a.grading_method WHEN 'highest' THEN -t.score
                                                WHEN 'latest' THEN -t.number
                                                ELSE t.number END,
                          t.number
                 LIMIT 1) AS new
          FROM (SELECT DISTINCT t.assignment_id, t.quiz_version_id, t.user_id
                  FROM unnest(v_attempts) AS p(id) JOIN attempts t ON t.id = p.id) l
          JOIN item_graded g
            ON (g.assignment_id, g.quiz_version_id, g.user_id) = (l.assignment_id, l.quiz_version_id, l.user_id)
          JOIN assignments a ON a.id = g.assignment_id AND a.grading_method <> 'average'
          JOIN item_sums_state s ON s.assignment_id = a.id AND s.grading_method = a.grading_method
    ), changed AS (
        UPDATE item_graded g SET attempt_id = l.new
          FROM learners l
         WHERE g.assignment_id = l.assignment_id AND g.quiz_version_id = l.quiz_version_id
           AND g.user_id = l.user_id AND l.old IS DISTINCT FROM l.new
        RETURNING l.old, l.new
    )
    SELECT array_agg(old) FILTER (WHERE old IS NOT NULL),
           array_agg(new) FILTER (WHERE new IS NOT NULL)
      INTO v_old, v_new
      FROM changed;
    PERFORM item_sums_apply(v_old, true, -1);
    PERFORM item_sums_apply(v_new, true, 1);
END $$;

-- Rebuilds one assignment's tables from its finished attempts: for attempts finished before
-- this migration, and after a change of grading method. Idempotent. Race-free: it first
-- takes the assignment's `analytics_generations` row, which a finishing transaction holds
-- from its bump until it commits, so finishes in flight are waited for (and then seen: each
-- statement below takes a new snapshot) and new ones wait until this commits.
CREATE FUNCTION item_sums_rebuild(p_assignment uuid)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO analytics_generations (assignment_id, generation) VALUES (p_assignment, 1)
    ON CONFLICT (assignment_id) DO UPDATE SET generation = analytics_generations.generation + 1;
    DELETE FROM item_totals WHERE assignment_id = p_assignment;
    DELETE FROM item_cells WHERE assignment_id = p_assignment;
    DELETE FROM item_options WHERE assignment_id = p_assignment;
    DELETE FROM item_seconds WHERE assignment_id = p_assignment;
    DELETE FROM item_graded WHERE assignment_id = p_assignment;
    INSERT INTO item_sums_state (assignment_id, grading_method)
    SELECT id, grading_method FROM assignments WHERE id = p_assignment
    ON CONFLICT (assignment_id) DO UPDATE SET grading_method = excluded.grading_method;
    PERFORM item_sums_finish(ARRAY(SELECT id FROM attempts
                                    WHERE assignment_id = p_assignment
                                      AND finished_at IS NOT NULL));
END $$;
