-- A finished attempt keeps its per-question scores, times and choices as arrays, written in
-- the transaction that finishes it (its responses can no longer change then). Analytics read
-- one row per attempt instead of joining and aggregating every response.
ALTER TABLE attempts
    ADD COLUMN question_keys    text[],
    ADD COLUMN question_points  double precision[],
    ADD COLUMN question_seconds double precision[],
    -- "question_key:option_key" for every option chosen
    ADD COLUMN choices          text[];

UPDATE attempts t
   SET question_keys = s.keys, question_points = s.points, question_seconds = s.seconds,
       choices = s.choices
  FROM (SELECT r.attempt_id,
               array_agg(r.question_key ORDER BY r.question_key) AS keys,
               array_agg(r.points ORDER BY r.question_key) AS points,
               array_agg(r.seconds ORDER BY r.question_key) AS seconds,
               coalesce((SELECT array_agg(r2.question_key || ':' || o.key)
                           FROM responses r2,
                                jsonb_array_elements_text(CASE WHEN r2.answer ? 'selected'
                                                               THEN r2.answer -> 'selected'
                                                               ELSE '[]' END) AS o(key)
                          WHERE r2.attempt_id = r.attempt_id), '{}') AS choices
          FROM responses r GROUP BY r.attempt_id) s
 WHERE t.id = s.attempt_id AND t.finished_at IS NOT NULL;

UPDATE attempts
   SET question_keys = '{}', question_points = '{}', question_seconds = '{}', choices = '{}'
 WHERE finished_at IS NOT NULL AND question_keys IS NULL;
