-- Questions rescored for a whole assignment without a new version of its quiz: given full
-- marks to everyone, or dropped from scoring (see grading::scoring). A map of question key to
-- {"scoring": "full_marks" | "dropped", "points": the question's points in the assignment's
-- version}; a question with no entry is graded by its key. Changed only by a regrade, which
-- locks the assignment; read with the assignment by every start, finish and view.
ALTER TABLE assignments ADD COLUMN question_rules jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(question_rules) = 'object');
