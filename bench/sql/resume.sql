-- pgbench yardstick for (b) GET /v1/attempts/{id} (resume, as the attempt's learner).
-- The one statement quizd runs for it (quizd keeps what never changes about an attempt in
-- memory: owner, quiz version, seed, layout; what can change — state, deadline, feedback, close
-- time — is read here), copied from src/ (bench/run checks it has not
-- drifted: `python3 bench/lib/quizbench.py check-sql --root .`). Run with -M prepared, as quizd
-- (sqlx) runs it.
--
-- Targets: the same attempts quizd resumes (4 of 8 questions answered), listed in bench_targets
-- (kind 'b', n = 1..nb). pgbench cannot make a uuid out of a number, so it looks the attempt id
-- up with one extra primary-key SELECT; to keep the yardstick the same SQL, it does so once per
-- 8 transactions (then resumes that attempt 8 times): 1 extra statement per 8 of quizd's.
-- Variables (-D): k=8 r=0 clients=<-c> nb=<number of targets>.
\if :k >= 8
\set n 1 + (:client_id + :clients * :r) % :nb
SELECT attempt_id FROM bench_targets WHERE kind = 'b' AND n = :n \gset
\set r :r + 1
\set k 0
\endif
\set k :k + 1
-- quizd: attempts::store::status_and_responses $1=:attempt_id
SELECT t.quiz_version_id, t.regraded_at, t.override_points, t.finished_at,
                t.finish_reason, t.score, t.deadline, a.feedback, a.closes_at, a.question_rules,
                r.question_key, r.answer, r.points, r.max_points, r.correct, r.answered_at
           FROM attempts t JOIN assignments a ON a.id = t.assignment_id
           LEFT JOIN responses r ON r.attempt_id = t.id
          WHERE t.id = :attempt_id;
