-- pgbench yardstick for (c) PUT /v1/attempts/{id}/responses/{question_id} (graded, durable).
-- The one statement quizd runs for it (quizd keeps what never changes about an attempt in
-- memory), copied from src/ (bench/run checks it has not drifted:
-- `python3 bench/lib/quizbench.py check-sql --root .`): the one-statement write
-- (attempts::store::record_response, free navigation: under immediate feedback, read from the
-- assignment in the statement, the first answer stands).
-- Run with -M prepared, each statement its own transaction with synchronous_commit on, as quizd
-- runs it. Every transaction writes a fresh (attempt, question).
--
-- Targets: attempts started through quizd's API, reserved for pgbench, in bench_targets (kind 'p',
-- n = 1..). pgbench cannot make a uuid out of a number, so it looks the attempt up with one
-- extra primary-key SELECT, once per attempt: then it answers its 8 questions in 8 transactions
-- (1 extra statement per 8 of quizd's). The 8 question keys and the answers, points and
-- correctness are -D variables taken from a response quizd recorded (q0..q7, a0..a7, p0..p7,
-- m0..m7, c0..c7): the branches below differ only in which of them they pass. `now` is fixed
-- (the grading time quizd would pass).
-- pgbench sends a variable used twice as two parameters (quizd sends $1 once and uses it four
-- times); where such a copy has no type from its context (in jsonb_build_object), it is
-- declared `::uuid`, the type quizd binds. That declares the parameter's type, no cast runs.
-- Variables (-D): k=8 r=0 clients=<-c> base=<targets used already> now=<timestamp>, the above.
\if :k >= 8
\set n :base + 1 + :client_id + :clients * :r
SELECT b.attempt_id, b.user_id, t.quiz_version_id AS version_id
  FROM bench_targets b JOIN attempts t ON t.id = b.attempt_id WHERE b.kind = 'p' AND b.n = :n \gset
\set r :r + 1
\set k 0
\endif
\if :k = 0
-- quizd: attempts::store::record_response $1=:attempt_id $2=:user_id $3=:q0 $4=:a0 $5=:p0 $6=:m0 $7=:now $8=:c0 $9=:version_id
WITH t AS (
            SELECT t.id, t.started_at, a.feedback = 'immediate' AS immediate,
                   t.quiz_version_id = :version_id AS current, a.question_rules -> :q0 AS rule
              FROM attempts t JOIN assignments a ON a.id = t.assignment_id
             WHERE t.id = :attempt_id AND t.user_id = :user_id AND t.finished_at IS NULL
               AND (t.deadline IS NULL OR t.deadline > :now)
               AND (a.course_id IS NULL OR EXISTS (SELECT 1 FROM enrollments e
                                                    WHERE e.course_id = a.course_id AND e.user_id = :user_id))
               FOR SHARE OF t
         ), previous AS (
            SELECT max(answered_at) AS at FROM responses WHERE attempt_id = :attempt_id
         ), ins AS (
            INSERT INTO responses (attempt_id, question_key, answer, points, max_points, correct,
                                   answered_at, seconds)
            SELECT t.id, :q0, :a0, :p0, :m0, :c0, :now,
                   greatest(0, extract(epoch FROM :now - coalesce(previous.at, t.started_at)))
              FROM t, previous WHERE t.current
            ON CONFLICT (attempt_id, question_key) DO UPDATE SET answer = EXCLUDED.answer, points = EXCLUDED.points,
                       max_points = EXCLUDED.max_points, correct = EXCLUDED.correct,
                       answered_at = EXCLUDED.answered_at, seconds = EXCLUDED.seconds,
                       revision = responses.revision + 1
             WHERE NOT (SELECT immediate FROM t)
            RETURNING question_key, answer, points, max_points, correct, answered_at, revision
         ), event AS (
            INSERT INTO outbox (topic, aggregate_id, payload)
            SELECT 'response.recorded', :attempt_id,
                   jsonb_build_object('attempt_id', :attempt_id::uuid, 'user_id', :user_id::uuid, 'question_key', question_key,
                                      'points', points, 'max_points', max_points, 'correct', correct,
                                      'revision', revision, 'answered_at', answered_at)
              FROM ins WHERE EXISTS (SELECT 1 FROM event_consumers WHERE topic = 'response.recorded')
         )
         SELECT EXISTS (SELECT 1 FROM t) AS open,
                EXISTS (SELECT 1 FROM t WHERE NOT t.current) AS moved,
                coalesce((SELECT immediate FROM t), false) AS immediate, true AS in_turn,
                (SELECT rule FROM t) AS rule, ins.question_key, ins.answer, ins.points, ins.max_points, ins.correct,
                ins.answered_at
           FROM (SELECT 1) AS one LEFT JOIN ins ON true;
\elif :k = 1
-- quizd: attempts::store::record_response $1=:attempt_id $2=:user_id $3=:q1 $4=:a1 $5=:p1 $6=:m1 $7=:now $8=:c1 $9=:version_id
WITH t AS (
            SELECT t.id, t.started_at, a.feedback = 'immediate' AS immediate,
                   t.quiz_version_id = :version_id AS current, a.question_rules -> :q1 AS rule
              FROM attempts t JOIN assignments a ON a.id = t.assignment_id
             WHERE t.id = :attempt_id AND t.user_id = :user_id AND t.finished_at IS NULL
               AND (t.deadline IS NULL OR t.deadline > :now)
               AND (a.course_id IS NULL OR EXISTS (SELECT 1 FROM enrollments e
                                                    WHERE e.course_id = a.course_id AND e.user_id = :user_id))
               FOR SHARE OF t
         ), previous AS (
            SELECT max(answered_at) AS at FROM responses WHERE attempt_id = :attempt_id
         ), ins AS (
            INSERT INTO responses (attempt_id, question_key, answer, points, max_points, correct,
                                   answered_at, seconds)
            SELECT t.id, :q1, :a1, :p1, :m1, :c1, :now,
                   greatest(0, extract(epoch FROM :now - coalesce(previous.at, t.started_at)))
              FROM t, previous WHERE t.current
            ON CONFLICT (attempt_id, question_key) DO UPDATE SET answer = EXCLUDED.answer, points = EXCLUDED.points,
                       max_points = EXCLUDED.max_points, correct = EXCLUDED.correct,
                       answered_at = EXCLUDED.answered_at, seconds = EXCLUDED.seconds,
                       revision = responses.revision + 1
             WHERE NOT (SELECT immediate FROM t)
            RETURNING question_key, answer, points, max_points, correct, answered_at, revision
         ), event AS (
            INSERT INTO outbox (topic, aggregate_id, payload)
            SELECT 'response.recorded', :attempt_id,
                   jsonb_build_object('attempt_id', :attempt_id::uuid, 'user_id', :user_id::uuid, 'question_key', question_key,
                                      'points', points, 'max_points', max_points, 'correct', correct,
                                      'revision', revision, 'answered_at', answered_at)
              FROM ins WHERE EXISTS (SELECT 1 FROM event_consumers WHERE topic = 'response.recorded')
         )
         SELECT EXISTS (SELECT 1 FROM t) AS open,
                EXISTS (SELECT 1 FROM t WHERE NOT t.current) AS moved,
                coalesce((SELECT immediate FROM t), false) AS immediate, true AS in_turn,
                (SELECT rule FROM t) AS rule, ins.question_key, ins.answer, ins.points, ins.max_points, ins.correct,
                ins.answered_at
           FROM (SELECT 1) AS one LEFT JOIN ins ON true;
\elif :k = 2
-- quizd: attempts::store::record_response $1=:attempt_id $2=:user_id $3=:q2 $4=:a2 $5=:p2 $6=:m2 $7=:now $8=:c2 $9=:version_id
WITH t AS (
            SELECT t.id, t.started_at, a.feedback = 'immediate' AS immediate,
                   t.quiz_version_id = :version_id AS current, a.question_rules -> :q2 AS rule
              FROM attempts t JOIN assignments a ON a.id = t.assignment_id
             WHERE t.id = :attempt_id AND t.user_id = :user_id AND t.finished_at IS NULL
               AND (t.deadline IS NULL OR t.deadline > :now)
               AND (a.course_id IS NULL OR EXISTS (SELECT 1 FROM enrollments e
                                                    WHERE e.course_id = a.course_id AND e.user_id = :user_id))
               FOR SHARE OF t
         ), previous AS (
            SELECT max(answered_at) AS at FROM responses WHERE attempt_id = :attempt_id
         ), ins AS (
            INSERT INTO responses (attempt_id, question_key, answer, points, max_points, correct,
                                   answered_at, seconds)
            SELECT t.id, :q2, :a2, :p2, :m2, :c2, :now,
                   greatest(0, extract(epoch FROM :now - coalesce(previous.at, t.started_at)))
              FROM t, previous WHERE t.current
            ON CONFLICT (attempt_id, question_key) DO UPDATE SET answer = EXCLUDED.answer, points = EXCLUDED.points,
                       max_points = EXCLUDED.max_points, correct = EXCLUDED.correct,
                       answered_at = EXCLUDED.answered_at, seconds = EXCLUDED.seconds,
                       revision = responses.revision + 1
             WHERE NOT (SELECT immediate FROM t)
            RETURNING question_key, answer, points, max_points, correct, answered_at, revision
         ), event AS (
            INSERT INTO outbox (topic, aggregate_id, payload)
            SELECT 'response.recorded', :attempt_id,
                   jsonb_build_object('attempt_id', :attempt_id::uuid, 'user_id', :user_id::uuid, 'question_key', question_key,
                                      'points', points, 'max_points', max_points, 'correct', correct,
                                      'revision', revision, 'answered_at', answered_at)
              FROM ins WHERE EXISTS (SELECT 1 FROM event_consumers WHERE topic = 'response.recorded')
         )
         SELECT EXISTS (SELECT 1 FROM t) AS open,
                EXISTS (SELECT 1 FROM t WHERE NOT t.current) AS moved,
                coalesce((SELECT immediate FROM t), false) AS immediate, true AS in_turn,
                (SELECT rule FROM t) AS rule, ins.question_key, ins.answer, ins.points, ins.max_points, ins.correct,
                ins.answered_at
           FROM (SELECT 1) AS one LEFT JOIN ins ON true;
\elif :k = 3
-- quizd: attempts::store::record_response $1=:attempt_id $2=:user_id $3=:q3 $4=:a3 $5=:p3 $6=:m3 $7=:now $8=:c3 $9=:version_id
WITH t AS (
            SELECT t.id, t.started_at, a.feedback = 'immediate' AS immediate,
                   t.quiz_version_id = :version_id AS current, a.question_rules -> :q3 AS rule
              FROM attempts t JOIN assignments a ON a.id = t.assignment_id
             WHERE t.id = :attempt_id AND t.user_id = :user_id AND t.finished_at IS NULL
               AND (t.deadline IS NULL OR t.deadline > :now)
               AND (a.course_id IS NULL OR EXISTS (SELECT 1 FROM enrollments e
                                                    WHERE e.course_id = a.course_id AND e.user_id = :user_id))
               FOR SHARE OF t
         ), previous AS (
            SELECT max(answered_at) AS at FROM responses WHERE attempt_id = :attempt_id
         ), ins AS (
            INSERT INTO responses (attempt_id, question_key, answer, points, max_points, correct,
                                   answered_at, seconds)
            SELECT t.id, :q3, :a3, :p3, :m3, :c3, :now,
                   greatest(0, extract(epoch FROM :now - coalesce(previous.at, t.started_at)))
              FROM t, previous WHERE t.current
            ON CONFLICT (attempt_id, question_key) DO UPDATE SET answer = EXCLUDED.answer, points = EXCLUDED.points,
                       max_points = EXCLUDED.max_points, correct = EXCLUDED.correct,
                       answered_at = EXCLUDED.answered_at, seconds = EXCLUDED.seconds,
                       revision = responses.revision + 1
             WHERE NOT (SELECT immediate FROM t)
            RETURNING question_key, answer, points, max_points, correct, answered_at, revision
         ), event AS (
            INSERT INTO outbox (topic, aggregate_id, payload)
            SELECT 'response.recorded', :attempt_id,
                   jsonb_build_object('attempt_id', :attempt_id::uuid, 'user_id', :user_id::uuid, 'question_key', question_key,
                                      'points', points, 'max_points', max_points, 'correct', correct,
                                      'revision', revision, 'answered_at', answered_at)
              FROM ins WHERE EXISTS (SELECT 1 FROM event_consumers WHERE topic = 'response.recorded')
         )
         SELECT EXISTS (SELECT 1 FROM t) AS open,
                EXISTS (SELECT 1 FROM t WHERE NOT t.current) AS moved,
                coalesce((SELECT immediate FROM t), false) AS immediate, true AS in_turn,
                (SELECT rule FROM t) AS rule, ins.question_key, ins.answer, ins.points, ins.max_points, ins.correct,
                ins.answered_at
           FROM (SELECT 1) AS one LEFT JOIN ins ON true;
\elif :k = 4
-- quizd: attempts::store::record_response $1=:attempt_id $2=:user_id $3=:q4 $4=:a4 $5=:p4 $6=:m4 $7=:now $8=:c4 $9=:version_id
WITH t AS (
            SELECT t.id, t.started_at, a.feedback = 'immediate' AS immediate,
                   t.quiz_version_id = :version_id AS current, a.question_rules -> :q4 AS rule
              FROM attempts t JOIN assignments a ON a.id = t.assignment_id
             WHERE t.id = :attempt_id AND t.user_id = :user_id AND t.finished_at IS NULL
               AND (t.deadline IS NULL OR t.deadline > :now)
               AND (a.course_id IS NULL OR EXISTS (SELECT 1 FROM enrollments e
                                                    WHERE e.course_id = a.course_id AND e.user_id = :user_id))
               FOR SHARE OF t
         ), previous AS (
            SELECT max(answered_at) AS at FROM responses WHERE attempt_id = :attempt_id
         ), ins AS (
            INSERT INTO responses (attempt_id, question_key, answer, points, max_points, correct,
                                   answered_at, seconds)
            SELECT t.id, :q4, :a4, :p4, :m4, :c4, :now,
                   greatest(0, extract(epoch FROM :now - coalesce(previous.at, t.started_at)))
              FROM t, previous WHERE t.current
            ON CONFLICT (attempt_id, question_key) DO UPDATE SET answer = EXCLUDED.answer, points = EXCLUDED.points,
                       max_points = EXCLUDED.max_points, correct = EXCLUDED.correct,
                       answered_at = EXCLUDED.answered_at, seconds = EXCLUDED.seconds,
                       revision = responses.revision + 1
             WHERE NOT (SELECT immediate FROM t)
            RETURNING question_key, answer, points, max_points, correct, answered_at, revision
         ), event AS (
            INSERT INTO outbox (topic, aggregate_id, payload)
            SELECT 'response.recorded', :attempt_id,
                   jsonb_build_object('attempt_id', :attempt_id::uuid, 'user_id', :user_id::uuid, 'question_key', question_key,
                                      'points', points, 'max_points', max_points, 'correct', correct,
                                      'revision', revision, 'answered_at', answered_at)
              FROM ins WHERE EXISTS (SELECT 1 FROM event_consumers WHERE topic = 'response.recorded')
         )
         SELECT EXISTS (SELECT 1 FROM t) AS open,
                EXISTS (SELECT 1 FROM t WHERE NOT t.current) AS moved,
                coalesce((SELECT immediate FROM t), false) AS immediate, true AS in_turn,
                (SELECT rule FROM t) AS rule, ins.question_key, ins.answer, ins.points, ins.max_points, ins.correct,
                ins.answered_at
           FROM (SELECT 1) AS one LEFT JOIN ins ON true;
\elif :k = 5
-- quizd: attempts::store::record_response $1=:attempt_id $2=:user_id $3=:q5 $4=:a5 $5=:p5 $6=:m5 $7=:now $8=:c5 $9=:version_id
WITH t AS (
            SELECT t.id, t.started_at, a.feedback = 'immediate' AS immediate,
                   t.quiz_version_id = :version_id AS current, a.question_rules -> :q5 AS rule
              FROM attempts t JOIN assignments a ON a.id = t.assignment_id
             WHERE t.id = :attempt_id AND t.user_id = :user_id AND t.finished_at IS NULL
               AND (t.deadline IS NULL OR t.deadline > :now)
               AND (a.course_id IS NULL OR EXISTS (SELECT 1 FROM enrollments e
                                                    WHERE e.course_id = a.course_id AND e.user_id = :user_id))
               FOR SHARE OF t
         ), previous AS (
            SELECT max(answered_at) AS at FROM responses WHERE attempt_id = :attempt_id
         ), ins AS (
            INSERT INTO responses (attempt_id, question_key, answer, points, max_points, correct,
                                   answered_at, seconds)
            SELECT t.id, :q5, :a5, :p5, :m5, :c5, :now,
                   greatest(0, extract(epoch FROM :now - coalesce(previous.at, t.started_at)))
              FROM t, previous WHERE t.current
            ON CONFLICT (attempt_id, question_key) DO UPDATE SET answer = EXCLUDED.answer, points = EXCLUDED.points,
                       max_points = EXCLUDED.max_points, correct = EXCLUDED.correct,
                       answered_at = EXCLUDED.answered_at, seconds = EXCLUDED.seconds,
                       revision = responses.revision + 1
             WHERE NOT (SELECT immediate FROM t)
            RETURNING question_key, answer, points, max_points, correct, answered_at, revision
         ), event AS (
            INSERT INTO outbox (topic, aggregate_id, payload)
            SELECT 'response.recorded', :attempt_id,
                   jsonb_build_object('attempt_id', :attempt_id::uuid, 'user_id', :user_id::uuid, 'question_key', question_key,
                                      'points', points, 'max_points', max_points, 'correct', correct,
                                      'revision', revision, 'answered_at', answered_at)
              FROM ins WHERE EXISTS (SELECT 1 FROM event_consumers WHERE topic = 'response.recorded')
         )
         SELECT EXISTS (SELECT 1 FROM t) AS open,
                EXISTS (SELECT 1 FROM t WHERE NOT t.current) AS moved,
                coalesce((SELECT immediate FROM t), false) AS immediate, true AS in_turn,
                (SELECT rule FROM t) AS rule, ins.question_key, ins.answer, ins.points, ins.max_points, ins.correct,
                ins.answered_at
           FROM (SELECT 1) AS one LEFT JOIN ins ON true;
\elif :k = 6
-- quizd: attempts::store::record_response $1=:attempt_id $2=:user_id $3=:q6 $4=:a6 $5=:p6 $6=:m6 $7=:now $8=:c6 $9=:version_id
WITH t AS (
            SELECT t.id, t.started_at, a.feedback = 'immediate' AS immediate,
                   t.quiz_version_id = :version_id AS current, a.question_rules -> :q6 AS rule
              FROM attempts t JOIN assignments a ON a.id = t.assignment_id
             WHERE t.id = :attempt_id AND t.user_id = :user_id AND t.finished_at IS NULL
               AND (t.deadline IS NULL OR t.deadline > :now)
               AND (a.course_id IS NULL OR EXISTS (SELECT 1 FROM enrollments e
                                                    WHERE e.course_id = a.course_id AND e.user_id = :user_id))
               FOR SHARE OF t
         ), previous AS (
            SELECT max(answered_at) AS at FROM responses WHERE attempt_id = :attempt_id
         ), ins AS (
            INSERT INTO responses (attempt_id, question_key, answer, points, max_points, correct,
                                   answered_at, seconds)
            SELECT t.id, :q6, :a6, :p6, :m6, :c6, :now,
                   greatest(0, extract(epoch FROM :now - coalesce(previous.at, t.started_at)))
              FROM t, previous WHERE t.current
            ON CONFLICT (attempt_id, question_key) DO UPDATE SET answer = EXCLUDED.answer, points = EXCLUDED.points,
                       max_points = EXCLUDED.max_points, correct = EXCLUDED.correct,
                       answered_at = EXCLUDED.answered_at, seconds = EXCLUDED.seconds,
                       revision = responses.revision + 1
             WHERE NOT (SELECT immediate FROM t)
            RETURNING question_key, answer, points, max_points, correct, answered_at, revision
         ), event AS (
            INSERT INTO outbox (topic, aggregate_id, payload)
            SELECT 'response.recorded', :attempt_id,
                   jsonb_build_object('attempt_id', :attempt_id::uuid, 'user_id', :user_id::uuid, 'question_key', question_key,
                                      'points', points, 'max_points', max_points, 'correct', correct,
                                      'revision', revision, 'answered_at', answered_at)
              FROM ins WHERE EXISTS (SELECT 1 FROM event_consumers WHERE topic = 'response.recorded')
         )
         SELECT EXISTS (SELECT 1 FROM t) AS open,
                EXISTS (SELECT 1 FROM t WHERE NOT t.current) AS moved,
                coalesce((SELECT immediate FROM t), false) AS immediate, true AS in_turn,
                (SELECT rule FROM t) AS rule, ins.question_key, ins.answer, ins.points, ins.max_points, ins.correct,
                ins.answered_at
           FROM (SELECT 1) AS one LEFT JOIN ins ON true;
\elif :k = 7
-- quizd: attempts::store::record_response $1=:attempt_id $2=:user_id $3=:q7 $4=:a7 $5=:p7 $6=:m7 $7=:now $8=:c7 $9=:version_id
WITH t AS (
            SELECT t.id, t.started_at, a.feedback = 'immediate' AS immediate,
                   t.quiz_version_id = :version_id AS current, a.question_rules -> :q7 AS rule
              FROM attempts t JOIN assignments a ON a.id = t.assignment_id
             WHERE t.id = :attempt_id AND t.user_id = :user_id AND t.finished_at IS NULL
               AND (t.deadline IS NULL OR t.deadline > :now)
               AND (a.course_id IS NULL OR EXISTS (SELECT 1 FROM enrollments e
                                                    WHERE e.course_id = a.course_id AND e.user_id = :user_id))
               FOR SHARE OF t
         ), previous AS (
            SELECT max(answered_at) AS at FROM responses WHERE attempt_id = :attempt_id
         ), ins AS (
            INSERT INTO responses (attempt_id, question_key, answer, points, max_points, correct,
                                   answered_at, seconds)
            SELECT t.id, :q7, :a7, :p7, :m7, :c7, :now,
                   greatest(0, extract(epoch FROM :now - coalesce(previous.at, t.started_at)))
              FROM t, previous WHERE t.current
            ON CONFLICT (attempt_id, question_key) DO UPDATE SET answer = EXCLUDED.answer, points = EXCLUDED.points,
                       max_points = EXCLUDED.max_points, correct = EXCLUDED.correct,
                       answered_at = EXCLUDED.answered_at, seconds = EXCLUDED.seconds,
                       revision = responses.revision + 1
             WHERE NOT (SELECT immediate FROM t)
            RETURNING question_key, answer, points, max_points, correct, answered_at, revision
         ), event AS (
            INSERT INTO outbox (topic, aggregate_id, payload)
            SELECT 'response.recorded', :attempt_id,
                   jsonb_build_object('attempt_id', :attempt_id::uuid, 'user_id', :user_id::uuid, 'question_key', question_key,
                                      'points', points, 'max_points', max_points, 'correct', correct,
                                      'revision', revision, 'answered_at', answered_at)
              FROM ins WHERE EXISTS (SELECT 1 FROM event_consumers WHERE topic = 'response.recorded')
         )
         SELECT EXISTS (SELECT 1 FROM t) AS open,
                EXISTS (SELECT 1 FROM t WHERE NOT t.current) AS moved,
                coalesce((SELECT immediate FROM t), false) AS immediate, true AS in_turn,
                (SELECT rule FROM t) AS rule, ins.question_key, ins.answer, ins.points, ins.max_points, ins.correct,
                ins.answered_at
           FROM (SELECT 1) AS one LEFT JOIN ins ON true;
\endif
\set k :k + 1
