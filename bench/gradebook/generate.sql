-- 2,000 learners × 50 assignments in one course; 0 to 3 attempts per cell (about 1.5 on
-- average, ~150k attempts), the last one in progress for 2% of cells, 1% of finished overridden.
BEGIN;
INSERT INTO users (id, display_name, role) VALUES ('00000000-0000-0000-0000-000000000001', 'Teacher', 'instructor');
INSERT INTO courses (id, title, created_by) VALUES ('00000000-0000-0000-0000-0000000000c0', 'Bench', '00000000-0000-0000-0000-000000000001');
INSERT INTO enrollments (course_id, user_id, role) VALUES ('00000000-0000-0000-0000-0000000000c0', '00000000-0000-0000-0000-000000000001', 'instructor');
INSERT INTO users (id, display_name, email)
SELECT ('10000000-0000-0000-0000-' || lpad(to_hex(i), 12, '0'))::uuid, 'Learner ' || md5(i::text), 'l' || i || '@example.org'
  FROM generate_series(1, 2000) i;
INSERT INTO enrollments (course_id, user_id, role)
SELECT '00000000-0000-0000-0000-0000000000c0', ('10000000-0000-0000-0000-' || lpad(to_hex(i), 12, '0'))::uuid, 'learner'
  FROM generate_series(1, 2000) i;
INSERT INTO assignments (id, course_id, quiz_id, quiz_version_id, title, feedback, grading_method,
                         shuffle_questions, shuffle_options, created_at)
SELECT ('20000000-0000-0000-0000-' || lpad(to_hex(j), 12, '0'))::uuid, '00000000-0000-0000-0000-0000000000c0',
       q.id, q.current_version_id, 'Week ' || j, 'on_finish',
       (ARRAY['highest','latest','first','average'])[1 + j % 4], false, false, now() + j * interval '1 second'
  FROM generate_series(1, 50) j, quizzes q WHERE q.slug = 'data-parallelism';
INSERT INTO attempts (id, assignment_id, user_id, quiz_version_id, number, locale, seed, started_at,
                      finished_at, finish_reason, score, max_score, shuffle_questions,
                      shuffle_options, navigation, override_points)
SELECT gen_random_uuid(), a.id, u.id, a.quiz_version_id, n, 'en', sha256(u.id::text::bytea || a.id::text::bytea || n::text::bytea),
       now() - interval '1 day',
       CASE WHEN open THEN NULL ELSE now() - interval '23 hours' END,
       CASE WHEN open THEN NULL ELSE 'submitted' END,
       CASE WHEN open THEN NULL ELSE floor(random() * 9) END,
       8, false, false, 'free',
       CASE WHEN NOT open AND random() < 0.01 THEN 8 END
  FROM users u
  JOIN enrollments e ON e.user_id = u.id AND e.role = 'learner'
  CROSS JOIN assignments a
  CROSS JOIN LATERAL (SELECT floor(random() * 4)::int AS k) k
  CROSS JOIN LATERAL generate_series(1, k.k) n
  CROSS JOIN LATERAL (SELECT n = k.k AND random() < 0.02 AS open) o
 WHERE a.course_id = '00000000-0000-0000-0000-0000000000c0';
COMMIT;
ANALYZE;
SELECT count(*) AS attempts FROM attempts;
