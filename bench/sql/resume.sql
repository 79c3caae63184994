-- pgbench yardstick for (b) GET /v1/attempts/{id} (resume, as the attempt's learner).
-- The two statements quizd runs for it, copied from src/ (bench/run checks they have not drifted:
-- `python3 bench/lib/quizbench.py check-sql --root .`). Run with -M prepared, one statement per
-- implicit transaction, as quizd (sqlx) runs them.
--
-- Targets: the same attempts quizd resumes (4 of 8 questions answered), listed in bench_targets
-- (kind 'b', n = 1..nb). pgbench cannot make a uuid out of a number, so it looks the attempt id
-- up with one extra primary-key SELECT; to keep the yardstick the same SQL, it does so once per
-- 8 transactions (then resumes that attempt 8 times): 1 extra statement per 16 of quizd's.
-- Variables (-D): k=8 r=0 clients=<-c> nb=<number of targets>.
\if :k >= 8
\set n 1 + (:client_id + :clients * :r) % :nb
SELECT attempt_id FROM bench_targets WHERE kind = 'b' AND n = :n \gset
\set r :r + 1
\set k 0
\endif
\set k :k + 1
-- quizd: attempts::store::by_id $1=:attempt_id
SELECT t.id, t.assignment_id, t.user_id, t.quiz_version_id, t.number, t.locale,
        t.seed, t.started_at, t.deadline, t.finished_at, t.finish_reason, t.score, t.max_score,
        a.course_id, a.feedback, a.grading_method, a.shuffle_questions, a.shuffle_options, a.closes_at
   FROM attempts t JOIN assignments a ON a.id = t.assignment_id WHERE t.id = :attempt_id;
-- quizd: attempts::store::responses $1=:attempt_id
SELECT question_key, answer, points, max_points, correct, answered_at
           FROM responses WHERE attempt_id = :attempt_id;
