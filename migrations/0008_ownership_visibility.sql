-- Course exams that stay secret: who may change a quiz and read its key, who may see it at all.

-- `public`: in the catalogue, readable anonymously, may have a practice assignment.
-- `private`: exists for learners only through assignments. The current version's content
-- decides (the importer keeps this column in step with it).
ALTER TABLE quizzes ADD COLUMN visibility text NOT NULL DEFAULT 'private'
    CHECK (visibility IN ('public', 'private'));
-- Until now every quiz was in the catalogue with a practice assignment. Quizzes from content
-- files stay public as they were (their files now say so, or become private on the next
-- import); quizzes written over the API become private, the new default for them.
UPDATE quizzes SET visibility = 'public' WHERE owner_id IS NULL;

-- Co-authors: besides the owner (quizzes.owner_id), the people who may change a quiz and read
-- every version's key. Added and removed by the owner or an admin.
CREATE TABLE quiz_coauthors (
    quiz_id    uuid NOT NULL REFERENCES quizzes (id) ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    added_by   uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (quiz_id, user_id)
);
CREATE INDEX quiz_coauthors_user ON quiz_coauthors (user_id);

-- The practice twin of a private quiz leaked its key through immediate feedback: remove the
-- ones nobody has used (the code refuses the others: a practice assignment of a quiz that is
-- not public does not exist for anyone).
DELETE FROM assignments a
 USING quizzes q
 WHERE q.id = a.quiz_id AND a.course_id IS NULL AND q.visibility = 'private'
   AND NOT EXISTS (SELECT 1 FROM attempts t WHERE t.assignment_id = a.id);

-- The site role `instructor` now means only "may create courses and quizzes"; teaching is a
-- role in a course. LMS launches used to raise people to it: nobody is demoted here (an
-- operator may review `SELECT … WHERE role = 'instructor' AND ext_issuer IS NOT NULL`).
