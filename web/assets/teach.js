// @ts-check
// Instructor pages: courses, a course's people and assignments. Analytics are in charts.js.

import { api } from './api.js';
import { h, loc, announce, focus, newId } from './dom.js';
import { t, num, pct, dateTime, nativeName } from './i18n.js';

/** @typedef {import('./api.js').Schemas} Schemas */

function input(id, label, attrs = {}) {
  return h('div', { class: 'field' }, h('label', { for: id }, label), h('input', { id, name: id, type: 'text', ...attrs }));
}

function select(id, label, options) {
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    h('select', { id, name: id }, options.map(([value, text, lang]) => h('option', { value, lang }, text))),
  );
}

function checkbox(id, label) {
  return h('div', { class: 'field check' }, h('input', { type: 'checkbox', id, name: id }), h('label', { for: id }, label));
}

/// A form that calls `action(FormData)`, shows errors beside it, and reports success.
function actionForm(ctx, { title, fields, submitLabel, action, done }) {
  const error = h('div', { class: 'form-error', role: 'alert' });
  const button = h('button', { type: 'submit', class: 'primary' }, submitLabel);
  // (Not from the title: a title in Bengali has no \w, and two forms would share an id.)
  const headingId = newId('form-h');
  const form = h(
    'form',
    { class: 'card form', 'aria-labelledby': headingId },
    h('h2', { id: headingId }, title),
    fields,
    error,
    h('div', { class: 'actions' }, button),
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.replaceChildren();
    button.disabled = true;
    try {
      const out = await action(new FormData(form));
      form.reset();
      await done(out);
    } catch (err) {
      error.replaceChildren(h('p', {}, h('span', { 'aria-hidden': 'true' }, '⚠ '), ctx.errorText(err)));
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

function staffOnly(view, ctx) {
  if (ctx.isStaff()) return false;
  view.append(h('h1', {}, t('teach_title')), h('p', { role: 'alert' }, t('err_not_found')));
  return true;
}

export async function coursesPage(view, ctx) {
  if (staffOnly(view, ctx)) return;
  const courses = (await api.list('/v1/courses')).items.filter((c) => c.my_role === 'instructor' || ctx.me.role === 'admin');
  view.append(
    h('h1', {}, t('teach_title')),
    h(
      'section',
      { 'aria-labelledby': 'courses-h' },
      h('h2', { id: 'courses-h' }, t('your_courses')),
      h('p', {}, h('a', { href: '#/teach/translations', class: 'button' }, t('translations_link'))),
      courses.length
        ? h(
            'ul',
            { class: 'link-list' },
            courses.map((c) =>
              h('li', {}, h('a', { href: `#/teach/course/${c.id}` }, h('bdi', {}, c.title)), c.code ? h('span', { class: 'meta' }, ` · ${c.code}`) : null),
            ),
          )
        : h('p', {}, t('no_courses')),
    ),
    actionForm(ctx, {
      title: t('new_course'),
      fields: [input('course-title', t('title'), { required: true, maxlength: 200 }), input('course-code', t('course_code'), { maxlength: 50 })],
      submitLabel: t('create'),
      action: (f) => api.post('/v1/courses', {}, { title: f.get('course-title'), code: f.get('course-code') || null }),
      done: (course) => {
        announce(t('course_created'));
        ctx.navigate(`#/teach/course/${course.id}`);
      },
    }),
  );
}

function policyText(p) {
  const parts = [t(`feedback_${p.feedback || 'immediate'}`)];
  if (p.time_limit_minutes) parts.push(t('time_limit_n', { n: p.time_limit_minutes }));
  return parts.join(' · ');
}

export async function coursePage(view, ctx, id) {
  if (staffOnly(view, ctx)) return;
  const [course, roster, assignments, catalogue, invitations, accommodations] = await Promise.all([
    api.get('/v1/courses/{id}', { id }),
    api.list('/v1/courses/{id}/enrollments', { id }),
    api.list('/v1/courses/{id}/assignments', { id }),
    api.list('/v1/quizzes', { lang: ctx.lang }),
    api.list('/v1/courses/{id}/invitations', { id }),
    api.get('/v1/courses/{id}/accommodations', { id }),
  ]);
  const titles = new Map(catalogue.items.map((q) => [q.slug, q.title]));
  // A quiz with open practice: a learner sitting the assignment loses its practice meanwhile
  // (the API refuses it, `practice_during_exam`); the form says so beside the choice.
  const practised = new Set(catalogue.items.filter((q) => q.practice_assignment_id).map((q) => q.slug));
  const quizField = select(
    'asg-quiz',
    t('quiz'),
    catalogue.items.map((q) => [q.slug, q.title.text, q.title.lang]),
  );
  const quizSelect = /** @type {HTMLSelectElement} */ (quizField.querySelector('select'));
  const practiceHint = h('p', { class: 'hint', id: 'asg-quiz-hint' }, t('asg_practice_hint'));
  quizSelect.setAttribute('aria-describedby', 'asg-quiz-hint');
  const showPracticeHint = () => {
    practiceHint.hidden = !practised.has(quizSelect.value);
  };
  quizSelect.addEventListener('change', showPracticeHint);
  showPracticeHint();
  view.classList.add('wide');
  const reload = async (message, focusSelector) => {
    await ctx.render({ keepFocus: true });
    announce(message);
    focus(document.querySelector(focusSelector));
  };

  view.append(
    h('p', { class: 'breadcrumb' }, h('a', { href: '#/teach' }, t('teach_title'))),
    h('h1', {}, h('bdi', {}, course.title), course.code ? h('span', { class: 'code' }, ` ${course.code}`) : null),
    h('p', { class: 'actions' }, h('a', { href: `#/teach/course/${id}/gradebook`, class: 'button' }, t('gb_title'))),
    h(
      'section',
      { 'aria-labelledby': 'asg-h', class: 'assignments' },
      h('h2', { id: 'asg-h' }, t('assignments')),
      assignments.items.length
        ? h(
            'ul',
            { class: 'cards compact' },
            assignments.items.map((a) =>
              h(
                'li',
                { class: 'card', dataset: { assignment: a.id } },
                h('h3', {}, h('bdi', {}, a.title)),
                h('p', { class: 'meta' }, titles.get(a.quiz) ? [loc('span', titles.get(a.quiz)), ' · '] : null, policyText(a.policy)),
                h(
                  'p',
                  { class: 'card-actions' },
                  h('a', { href: `#/teach/assignment/${a.id}`, class: 'button' }, t('analytics'), h('span', { class: 'visually-hidden' }, `: ${a.title}`)),
                  ' ',
                  h('a', { href: `#/teach/assignment/${a.id}/exam`, class: 'button', dataset: { exam: a.id } }, t('exam_title'), h('span', { class: 'visually-hidden' }, `: ${a.title}`)),
                  ' ',
                  h('a', { href: `#/teach/assignment/${a.id}/live`, class: 'button', dataset: { live: a.id } }, t('live_run'), h('span', { class: 'visually-hidden' }, `: ${a.title}`)),
                ),
              ),
            ),
          )
        : h('p', {}, t('no_assignments')),
    ),
    h(
      'section',
      { 'aria-labelledby': 'people-h', class: 'people' },
      h('h2', { id: 'people-h' }, t('people')),
      roster.items.length
        ? h(
            'div',
            { class: 'table-wrap' },
            h(
              'table',
              { class: 'data' },
              h('thead', {}, h('tr', {}, [t('name'), t('email'), t('role')].map((c) => h('th', { scope: 'col' }, c)))),
              h(
                'tbody',
                {},
                roster.items.map((p) =>
                  h('tr', {}, h('td', {}, h('bdi', {}, p.display_name)), h('td', {}, p.email || t('nothing')), h('td', {}, t(`role_${p.role}`))),
                ),
              ),
            ),
          )
        : h('p', {}, t('nobody_enrolled')),
    ),
    h(
      'div',
      { class: 'form-grid' },
      actionForm(ctx, {
        title: t('enroll_someone'),
        fields: [
          input('enroll-email', t('email'), { type: 'email', required: true, autocomplete: 'off' }),
          select('enroll-role', t('role'), [
            ['learner', t('role_learner')],
            ['instructor', t('role_instructor')],
          ]),
        ],
        submitLabel: t('enroll'),
        action: (f) => api.post('/v1/courses/{id}/enrollments', { id }, { email: f.get('enroll-email'), role: f.get('enroll-role') }),
        // An email without an account is invited (202, an invitation) rather than enrolled.
        done: (e) =>
          reload(e.display_name ? t('enrolled', { who: e.display_name }) : t('invited', { who: e.email }), '#enroll-email'),
      }),
      actionForm(ctx, {
        title: t('new_assignment'),
        fields: [
          quizField,
          practiceHint,
          input('asg-title', t('title_optional'), { maxlength: 200 }),
          select(
            'asg-feedback',
            t('feedback_timing'),
            ['immediate', 'on_finish', 'after_close', 'never'].map((f) => [f, t(`feedback_${f}`)]),
          ),
          h('p', { class: 'hint', id: 'asg-feedback-hint' }, t('after_close_hint')),
          input('asg-opens', t('asg_opens'), { type: 'datetime-local' }),
          input('asg-closes', t('asg_closes'), { type: 'datetime-local' }),
          input('asg-time', t('time_limit'), { type: 'number', min: 1, step: 1, inputmode: 'numeric', class: 'narrow' }),
          input('asg-attempts', t('attempts_allowed'), { type: 'number', min: 1, step: 1, inputmode: 'numeric', class: 'narrow' }),
          select('asg-grading', t('asg_grading'), ['highest', 'latest', 'first', 'average'].map((g) => [g, t(`grading_${g}`)])),
          select('asg-navigation', t('asg_navigation'), ['free', 'sequential'].map((n) => [n, t(`navigation_${n}`)])),
          checkbox('asg-shuffle-q', t('shuffle_questions')),
          checkbox('asg-shuffle-o', t('shuffle_options')),
        ],
        submitLabel: t('create'),
        action: (f) => {
          /** @param {string} name */
          const value = (name) => String(f.get(name) ?? '');
          // datetime-local is the browser's local time; the API takes an instant.
          /** @param {string} name */
          const instant = (name) => (value(name) ? new Date(value(name)).toISOString() : null);
          /** @type {Schemas['Policy']} */
          const policy = {
            feedback: /** @type {Schemas['FeedbackTiming']} */ (value('asg-feedback')),
            grading_method: /** @type {Schemas['GradingMethod']} */ (value('asg-grading')),
            navigation: /** @type {Schemas['Navigation']} */ (value('asg-navigation')),
            shuffle_questions: value('asg-shuffle-q') === 'on',
            shuffle_options: value('asg-shuffle-o') === 'on',
            opens_at: instant('asg-opens'),
            closes_at: instant('asg-closes'),
            time_limit_minutes: value('asg-time') ? Number(value('asg-time')) : null,
            attempts_allowed: value('asg-attempts') ? Number(value('asg-attempts')) : null,
          };
          return api.post('/v1/courses/{id}/assignments', { id }, { quiz: value('asg-quiz'), title: value('asg-title') || null, policy });
        },
        done: () => reload(t('assignment_created'), '#asg-h'),
      }),
    ),
    ...courseExamSections(ctx, id, { roster: roster.items, invitations: invitations.items, accommodations: accommodations.items, reload }),
  );
}

/// Regrading an assignment to a corrected version of its quiz: a preview (the API's dry run)
/// as tables, then the same change applied on confirmation.
/**
 * @param {import('./app.js').Ctx} ctx @param {Schemas['Assignment']} assignment @param {Schemas['Enrollment'][]} roster
 * @param {{ latest?: number, questionKeys?: string[] }} versions `latest`: the quiz's current
 *   version, when known; `questionKeys`: the assigned version's.
 */
export function regradeSection(ctx, assignment, roster, { latest, questionKeys = [] }) {
  const names = new Map(roster.map((p) => [p.user_id, p.display_name]));
  const result = h('div', { class: 'regrade-result', 'aria-live': 'polite' });
  const error = h('div', { class: 'form-error', role: 'alert' });
  // The corrected version offered: the quiz's newer one; none when the assigned one is the
  // latest (a question can still be rescored).
  const offered = latest === undefined ? assignment.quiz_version + 1 : latest > assignment.quiz_version ? latest : null;
  const version = input('regrade-version', t('regrade_to_version'), {
    type: 'number', min: 1, step: 1, inputmode: 'numeric', class: 'narrow',
    value: offered === null ? '' : String(offered),
  });
  const reason = input('regrade-reason', t('regrade_reason'), { maxlength: 1000 });
  // A question rescored for everyone: then the version moves only if it was changed.
  const rescore = questionKeys.length
    ? h('fieldset', { class: 'rescore' },
        h('legend', {}, t('regrade_rescore')),
        select('regrade-question', t('regrade_question'), [['', t('regrade_no_question')], ...questionKeys.map((k) => [k, k])]),
        select('regrade-scoring', t('regrade_scoring'), [
          ['full_marks', t('regrade_full_marks')],
          ['dropped', t('regrade_dropped')],
          ['graded', t('regrade_graded')],
        ]))
    : null;
  const preview = h('button', { type: 'submit' }, t('regrade_preview'));
  const apply = h('button', { type: 'button', class: 'primary', hidden: true }, t('regrade_apply'));
  const form = h('form', { class: 'card form', 'aria-labelledby': 'regrade-h' },
    h('h2', { id: 'regrade-h' }, t('regrade')),
    h('p', {}, t('regrade_intro')),
    version, rescore, reason, error,
    h('div', { class: 'actions' }, preview, apply),
    result);
  const body = (dryRun) => {
    const f = new FormData(form);
    /** @type {Schemas['RegradeRequest']} */
    const out = { dry_run: dryRun };
    const question = /** @type {string | null} */ (f.get('regrade-question'));
    const to = Number(f.get('regrade-version'));
    if (question) out.questions = { [question]: /** @type {Schemas['Scoring']} */ (f.get('regrade-scoring')) };
    if (f.get('regrade-version') && !(question && to === assignment.quiz_version)) out.to_version = to;
    if (f.get('regrade-reason')) out.reason = String(f.get('regrade-reason'));
    return out;
  };
  const run = async (dryRun) => {
    error.replaceChildren();
    preview.disabled = apply.disabled = true;
    try {
      const report = await api.post('/v1/assignments/{id}/regrade', { id: assignment.id }, body(dryRun));
      result.replaceChildren(...regradeReport(report, names));
      apply.hidden = !dryRun;
      if (!dryRun) {
        announce(t('regrade_done', { v: report.to_version, n: report.grades_changed }));
        await ctx.render({ keepFocus: true });
      }
    } catch (err) {
      apply.hidden = true;
      error.replaceChildren(h('p', {}, h('span', { 'aria-hidden': 'true' }, '⚠ '), ctx.errorText(err)));
    } finally {
      preview.disabled = apply.disabled = false;
    }
  };
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    run(true);
  });
  // A changed version or reason needs a new preview before it can be applied.
  form.addEventListener('input', () => {
    apply.hidden = true;
  });
  apply.addEventListener('click', () => run(false));
  return form;
}

function regradeReport(report, names) {
  const points = (p) => (p === null || p === undefined ? t('nothing') : num(p, 2));
  const questions = report.questions.length
    ? h('ul', {}, report.questions.map((q) => {
        const what = [];
        if (q.removed) what.push(t('regrade_removed'));
        if (q.added) what.push(t('regrade_added'));
        if (q.key_changed) what.push(t('regrade_key_changed'));
        if (!q.removed && !q.added && q.to_points !== q.from_points) what.push(t('regrade_points', { from: num(q.from_points, 2), to: num(q.to_points, 2) }));
        if (q.from_scoring !== q.to_scoring) what.push(t('regrade_scoring_change', { from: t(`regrade_${q.from_scoring}`), to: t(`regrade_${q.to_scoring}`) }));
        return h('li', {}, h('code', {}, q.question_key), `: ${what.join(', ')}`);
      }))
    : h('p', {}, t('regrade_nothing'));
  const attempts = report.attempts.length
    ? h('div', { class: 'table-wrap' }, h('table', { class: 'data' },
        h('thead', {}, h('tr', {}, [t('name'), t('regrade_attempt'), t('regrade_before'), t('regrade_after')].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, report.attempts.map((a) => h('tr', {},
          h('td', {}, h('bdi', {}, names.get(a.user_id) || a.user_id)),
          h('td', {}, a.finished ? String(a.number) : [String(a.number), ' · ', t('state_in_progress')]),
          h('td', {}, `${points(a.from_points)} / ${num(a.from_max, 2)}`),
          h('td', {}, `${points(a.to_points)} / ${num(a.to_max, 2)}`, a.overridden ? h('span', { class: 'meta' }, ` (${t('regrade_overridden')})`) : null),
        )))))
    : h('p', {}, t('regrade_nothing'));
  return [
    h('h3', {}, t('regrade_questions')),
    questions,
    h('h3', {}, t('regrade_attempts', { n: report.attempts.length, total: report.attempts_total })),
    attempts,
  ];
}

/* ------------------------------------------------------------------ translations */

const TRANSLATION_FORMATS = [
  ['xlf', 'XLIFF', 'application/xliff+xml'],
  ['po', 'PO', 'text/x-gettext-translation'],
];

/// Fetches a translation file with the session's token and hands it to the browser as a
/// download (a plain link would carry no token).
async function downloadTranslation(slug, version, locale, ext) {
  const params = { slug, version, locale };
  const res = await (ext === 'po'
    ? api.fetch('/v1/quizzes/{slug}/versions/{version}/translations/{locale}.po', params)
    : api.fetch('/v1/quizzes/{slug}/versions/{version}/translations/{locale}.xlf', params));
  const url = URL.createObjectURL(await res.blob());
  const a = h('a', { href: url, download: `${slug}-v${version}-${locale}.${ext}`, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/// One quiz's translation status per language, its downloads, and the upload of a
/// translator's file (a new version of the quiz, or nothing when it is refused).
function quizTranslations(ctx, quiz, status) {
  const slug = status.quiz;
  const hid = `tr-${slug}`;
  const error = h('div', { class: 'form-error', role: 'alert' });
  // `locale`: a tag, or a function that reads one when the button is pressed.
  const downloadButton = (locale, ext, label, key = `${locale}.${ext}`) => {
    const hidden = typeof locale === 'string' ? h('span', { class: 'visually-hidden' }, ` (${locale})`) : null;
    const b = h('button', { type: 'button', class: 'small', dataset: { download: key } }, label, hidden);
    b.addEventListener('click', async () => {
      error.replaceChildren();
      try {
        await downloadTranslation(slug, status.version, typeof locale === 'string' ? locale : locale(), ext);
      } catch (err) {
        error.replaceChildren(h('p', {}, h('span', { 'aria-hidden': 'true' }, '⚠ '), ctx.errorText(err)));
      }
    });
    return b;
  };
  const table = status.locales.length
    ? h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          { class: 'data translation-status' },
          h('caption', {}, t('translations_of', { n: status.texts, v: status.version })),
          h('thead', {}, h('tr', {}, [t('language'), t('tr_translated'), t('tr_stale'), t('tr_missing'), t('tr_download')].map((c) => h('th', { scope: 'col' }, c)))),
          h(
            'tbody',
            {},
            status.locales.map((l) =>
              h(
                'tr',
                { dataset: { locale: l.locale } },
                h('th', { scope: 'row' }, h('span', { lang: l.locale }, nativeName(l.locale)), ` (${l.locale})`),
                h('td', { class: 'num' }, num(l.translated, 0)),
                h('td', { class: ['num', l.stale ? 'warn' : null] }, l.stale ? ['⚠ ', num(l.stale, 0)] : num(0, 0)),
                h('td', { class: 'num' }, num(l.missing, 0)),
                h('td', {}, TRANSLATION_FORMATS.map(([ext, label]) => downloadButton(l.locale, ext, label))),
              ),
            ),
          ),
        ),
      )
    : h('p', {}, t('tr_no_translations'));

  const localeField = input(`${hid}-locale`, t('tr_upload_language'), {
    required: true, maxlength: 35, autocomplete: 'off', class: 'narrow',
    value: status.locales[0]?.locale || '', pattern: '[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*',
  });
  const file = h('div', { class: 'field' },
    h('label', { for: `${hid}-file` }, t('tr_upload_file')),
    h('input', { id: `${hid}-file`, name: 'file', type: 'file', accept: '.xlf,.xliff,.po', required: true }));
  const button = h('button', { type: 'submit', class: 'primary' }, t('tr_upload'));
  // A language with no translation yet starts from a download for the tag typed here.
  const typed = () => localeField.querySelector('input').value.trim();
  const fresh = h('p', { class: 'download-for' }, t('tr_download_for'), ' ',
    TRANSLATION_FORMATS.map(([ext, label]) => downloadButton(typed, ext, label, `typed.${ext}`)));
  const form = h('form', { class: 'form upload-translation', 'aria-labelledby': `${hid}-up` },
    h('h3', { id: `${hid}-up` }, t('tr_upload_title')),
    h('p', { class: 'meta' }, t('tr_upload_intro')),
    localeField, fresh, file, error, h('div', { class: 'actions' }, button));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.replaceChildren();
    const chosen = form.querySelector('input[type=file]').files[0];
    const locale = new FormData(form).get(`${hid}-locale`);
    const po = /\.po$/i.test(chosen.name);
    const [ext, , type] = TRANSLATION_FORMATS[po ? 1 : 0];
    button.disabled = true;
    try {
      const params = { slug, version: status.version, locale: String(locale) };
      const text = await chosen.text();
      const saved = await (ext === 'po'
        ? api.putFile('/v1/quizzes/{slug}/versions/{version}/translations/{locale}.po', params, text, type)
        : api.putFile('/v1/quizzes/{slug}/versions/{version}/translations/{locale}.xlf', params, text, type));
      await ctx.render({ keepFocus: true });
      announce(saved.status === 'unchanged' ? t('tr_unchanged') : t('tr_saved', { v: saved.version }));
      focus(document.getElementById(hid));
    } catch (err) {
      error.replaceChildren(h('p', { class: 'pre-line' }, h('span', { 'aria-hidden': 'true' }, '⚠ '), ctx.errorText(err)));
    } finally {
      button.disabled = false;
    }
  });

  return h(
    'section',
    { class: 'card quiz-translations', 'aria-labelledby': hid, dataset: { quiz: slug } },
    h('h2', { id: hid, tabindex: '-1' }, loc('span', quiz.title)),
    h('p', { class: 'meta' }, t('tr_source', { v: status.version }), h('span', { lang: status.source_locale }, nativeName(status.source_locale))),
    table,
    form,
  );
}

/// The quizzes you author: how far each is translated, per language (translated, stale:
/// made from a source text that changed since, missing), with XLIFF and PO downloads and
/// uploads for translators' tools.
export async function translationsPage(view, ctx) {
  if (staffOnly(view, ctx)) return;
  const catalogue = await api.list('/v1/quizzes', { lang: ctx.lang });
  // Only a quiz's authors (and admins) read its translations: the catalogue says which.
  const authored = await Promise.all(
    catalogue.items
      .filter((q) => q.editable)
      .map(async (q) => [q, await api.get('/v1/quizzes/{slug}/translations', { slug: q.slug })]),
  );
  view.classList.add('wide');
  view.append(
    h('p', { class: 'breadcrumb' }, h('a', { href: '#/teach' }, t('teach_title'))),
    h('h1', {}, t('translations_title')),
    h('p', {}, t('translations_intro')),
    ...(authored.length ? authored.map(([q, status]) => quizTranslations(ctx, q, status)) : [h('p', {}, t('tr_no_quizzes'))]),
  );
}

/* ------------------------------------------------------------------ exam operations (#14) */

/// A `datetime-local` value (the browser's local time) for an instant, or ''.
function localInput(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function problemText(ctx, err) {
  return h('p', {}, h('span', { 'aria-hidden': 'true' }, '⚠ '), ctx.errorText(err));
}

const points = (p) => (p === null || p === undefined ? t('nothing') : num(p, 2));

/// The parts of an override or accommodation, each optional; ids start with `p`.
function adjustmentFields(p) {
  return h(
    'fieldset',
    { class: 'adjustment' },
    h('legend', {}, t('adj_legend')),
    input(`${p}-multiplier`, t('adj_multiplier'), {
      type: 'number', min: 0.01, max: 10, step: 0.01, inputmode: 'decimal', class: 'narrow', 'aria-describedby': `${p}-multiplier-hint`,
    }),
    h('p', { class: 'hint', id: `${p}-multiplier-hint` }, t('adj_multiplier_hint')),
    input(`${p}-minutes`, t('adj_extra_minutes'), { type: 'number', min: 0, max: 10080, step: 1, inputmode: 'numeric', class: 'narrow' }),
    input(`${p}-attempts`, t('adj_extra_attempts'), { type: 'number', min: 0, max: 1000, step: 1, inputmode: 'numeric', class: 'narrow' }),
    input(`${p}-opens`, t('adj_opens'), { type: 'datetime-local' }),
    input(`${p}-closes`, t('adj_closes'), { type: 'datetime-local' }),
  );
}

/// The API's `AdjustmentRequest` from the fields of [`adjustmentFields`]: only what was given.
function adjustmentBody(f, p) {
  const out = {};
  const n = (k) => (f.get(`${p}-${k}`) ? Number(f.get(`${p}-${k}`)) : null);
  if (n('multiplier') !== null) out.time_multiplier = n('multiplier');
  if (n('minutes') !== null) out.extra_minutes = n('minutes');
  if (n('attempts') !== null) out.extra_attempts = n('attempts');
  // datetime-local is the browser's local time; the API takes an instant.
  if (f.get(`${p}-opens`)) out.opens_at = new Date(f.get(`${p}-opens`)).toISOString();
  if (f.get(`${p}-closes`)) out.closes_at = new Date(f.get(`${p}-closes`)).toISOString();
  return out;
}

/// "The most generous applicable rule wins", in words.
function ruleInWords() {
  return h(
    'div',
    { class: 'rule' },
    h('p', {}, h('strong', {}, t('adj_rule_title')), ' ', t('adj_rule')),
    h('ul', {}, h('li', {}, t('adj_rule_time')), h('li', {}, t('adj_rule_attempts')), h('li', {}, t('adj_rule_window'))),
    h('p', {}, t('adj_rule_now')),
  );
}

/// Overrides or accommodations as a table, each with a Remove button.
function adjustmentTable(items, { caption, onRemove }) {
  const cell = (v, f) => h('td', { class: 'num' }, v === null || v === undefined ? t('nothing') : f(v));
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'data adjustments' },
      h('caption', {}, caption),
      h(
        'thead',
        {},
        h('tr', {}, [t('name'), t('adj_multiplier'), t('adj_extra_minutes'), t('adj_extra_attempts'), t('adj_opens'), t('adj_closes'), t('actions')].map((c) => h('th', { scope: 'col' }, c))),
      ),
      h(
        'tbody',
        {},
        items.map((o) =>
          h(
            'tr',
            { dataset: { user: o.user_id } },
            h('th', { scope: 'row' }, h('bdi', {}, o.display_name)),
            cell(o.time_multiplier, (v) => `× ${num(v, 2)}`),
            cell(o.extra_minutes, (v) => num(v, 0)),
            cell(o.extra_attempts, (v) => num(v, 0)),
            cell(o.opens_at, dateTime),
            cell(o.closes_at, dateTime),
            h(
              'td',
              {},
              h('button', { type: 'button', class: 'small', onclick: () => onRemove(o) }, t('remove'), h('span', { class: 'visually-hidden' }, `: ${o.display_name}`)),
            ),
          ),
        ),
      ),
    ),
  );
}

/// A section with the adjustments, their removal, and a form that sets one learner's.
// `del` and `put`: one learner's removed and set (an override, or an accommodation).
function adjustmentSection(ctx, { hid, title, intro, items, learners, del, put, prefix, reload }) {
  const error = h('div', { class: 'form-error', role: 'alert' });
  const remove = async (o) => {
    error.replaceChildren();
    try {
      await del(o.user_id);
      await reload(t('adj_removed', { who: o.display_name }), `#${hid}`);
    } catch (err) {
      error.replaceChildren(problemText(ctx, err));
    }
  };
  const names = new Map(learners.map((p) => [p.user_id, p.display_name]));
  return h(
    'section',
    { 'aria-labelledby': hid, class: 'adjustments-section' },
    h('h2', { id: hid }, title),
    h('p', {}, intro),
    items.length ? adjustmentTable(items, { caption: title, onRemove: remove }) : h('p', {}, t('adj_none')),
    error,
    learners.length
      ? actionForm(ctx, {
          title: t('adj_set_title', { what: title }),
          fields: [
            select(`${prefix}-learner`, t('role_learner'), learners.map((p) => [p.user_id, p.display_name])),
            adjustmentFields(prefix),
          ],
          submitLabel: t('save'),
          action: (f) => {
            const who = f.get(`${prefix}-learner`);
            return put(who, adjustmentBody(f, prefix)).then(() => who);
          },
          done: (who) => reload(t('adj_saved', { who: names.get(who) || '' }), `#${hid}`),
        })
      : h('p', {}, t('adj_no_learners')),
  );
}

/* ---------------------------------------------------- the course page: people and rosters */

/// The result of the last CSV upload, shown once on the course page it was made on.
let csvReport = null;

function csvReportSection(report) {
  const s = report.summary;
  return h(
    'section',
    { class: 'card csv-report', 'aria-labelledby': 'csv-report-h' },
    h('h3', { id: 'csv-report-h', tabindex: '-1' }, t('csv_report')),
    h('p', {}, t('csv_summary', { enrolled: s.enrolled, invited: s.invited, already: s.already_enrolled + s.already_invited, invalid: s.invalid })),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'data' },
        h('thead', {}, h('tr', {}, [t('csv_line'), t('email'), t('role'), t('csv_result'), t('csv_reason')].map((c) => h('th', { scope: 'col' }, c)))),
        h(
          'tbody',
          {},
          report.rows.map((r) =>
            h(
              'tr',
              { class: r.result === 'invalid' ? 'refused' : null, dataset: { result: r.result } },
              h('td', { class: 'num' }, num(r.line, 0)),
              h('td', {}, r.email ? h('bdi', {}, r.email) : t('nothing')),
              h('td', {}, r.role ? t(`role_${r.role}`) : t('nothing')),
              h('td', {}, r.result === 'invalid' ? [h('span', { 'aria-hidden': 'true' }, '⚠ '), t('csv_invalid')] : t(`csv_${r.result}`)),
              // The API's reason, in English.
              h('td', {}, r.reason ? h('span', { lang: 'en' }, r.reason) : t('nothing')),
            ),
          ),
        ),
      ),
    ),
  );
}

function csvForm(ctx, id, reload) {
  const error = h('div', { class: 'form-error', role: 'alert' });
  const button = h('button', { type: 'submit', class: 'primary' }, t('csv_upload'));
  const form = h(
    'form',
    { class: 'card form csv-upload', 'aria-labelledby': 'csv-h' },
    h('h2', { id: 'csv-h' }, t('csv_title')),
    h('p', { class: 'hint', id: 'csv-hint' }, t('csv_hint')),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'csv-file' }, t('csv_file')),
      h('input', { id: 'csv-file', name: 'csv-file', type: 'file', accept: '.csv,text/csv', required: true, 'aria-describedby': 'csv-hint' }),
    ),
    error,
    h('div', { class: 'actions' }, button),
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.replaceChildren();
    const chosen = form.querySelector('input[type=file]').files[0];
    button.disabled = true;
    try {
      const report = await api.postFile('/v1/courses/{id}/enrollments/csv', { id }, await chosen.text(), 'text/csv');
      csvReport = { course: id, report };
      const s = report.summary;
      await reload(t('csv_summary', { enrolled: s.enrolled, invited: s.invited, already: s.already_enrolled + s.already_invited, invalid: s.invalid }), '#csv-report-h');
    } catch (err) {
      error.replaceChildren(problemText(ctx, err));
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

function invitationsSection(ctx, id, invitations, reload) {
  const error = h('div', { class: 'form-error', role: 'alert' });
  const act = async (fn, done) => {
    error.replaceChildren();
    try {
      await fn();
      await done();
    } catch (err) {
      error.replaceChildren(problemText(ctx, err));
    }
  };
  return h(
    'section',
    { 'aria-labelledby': 'inv-h', class: 'invitations' },
    h('h2', { id: 'inv-h' }, t('inv_title')),
    h('p', {}, t('inv_intro')),
    invitations.length
      ? h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { class: 'data' },
            h('thead', {}, h('tr', {}, [t('email'), t('role'), t('inv_sent'), t('actions')].map((c) => h('th', { scope: 'col' }, c)))),
            h(
              'tbody',
              {},
              invitations.map((inv) =>
                h(
                  'tr',
                  { dataset: { invitation: inv.id } },
                  h('td', {}, h('bdi', {}, inv.email)),
                  h('td', {}, t(`role_${inv.role}`)),
                  h('td', {}, dateTime(inv.last_sent_at || inv.created_at)),
                  h(
                    'td',
                    { class: 'row-actions' },
                    h(
                      'button',
                      {
                        type: 'button',
                        class: 'small',
                        onclick: () =>
                          act(
                            () => api.post('/v1/courses/{id}/invitations/{invitation_id}/resend', { id, invitation_id: inv.id }),
                            () => announce(t('inv_resent', { who: inv.email })),
                          ),
                      },
                      t('inv_resend'),
                      h('span', { class: 'visually-hidden' }, `: ${inv.email}`),
                    ),
                    h(
                      'button',
                      {
                        type: 'button',
                        class: 'small',
                        onclick: () =>
                          act(
                            () => api.del('/v1/courses/{id}/invitations/{invitation_id}', { id, invitation_id: inv.id }),
                            () => reload(t('inv_revoked', { who: inv.email }), '#inv-h'),
                          ),
                      },
                      t('inv_revoke'),
                      h('span', { class: 'visually-hidden' }, `: ${inv.email}`),
                    ),
                  ),
                ),
              ),
            ),
          ),
        )
      : h('p', {}, t('inv_none')),
    error,
  );
}

/// The course page's exam sections: invitations, the CSV roster, course-wide accommodations.
export function courseExamSections(ctx, id, { roster, invitations, accommodations, reload }) {
  const learners = roster.filter((p) => p.role === 'learner');
  const shown = csvReport?.course === id ? csvReport.report : null;
  csvReport = null;
  return [
    invitationsSection(ctx, id, invitations, reload),
    h('div', { class: 'csv-area' }, csvForm(ctx, id, reload), shown ? csvReportSection(shown) : null),
    adjustmentSection(ctx, {
      hid: 'acc-h',
      title: t('acc_title'),
      intro: t('acc_intro'),
      items: accommodations,
      learners,
      /** @param {string} user_id */
      del: (user_id) => api.del('/v1/courses/{id}/accommodations/{user_id}', { id, user_id }),
      /** @param {string} user_id @param {Schemas['AdjustmentRequest']} body */
      put: (user_id, body) => api.put('/v1/courses/{id}/accommodations/{user_id}', { id, user_id }, body),
      prefix: 'acc',
      reload,
    }),
    h('details', { class: 'rule-details' }, h('summary', {}, t('adj_rule_title')), ruleInWords()),
  ];
}

/* ------------------------------------------------------------------ the gradebook */

/// Fetches every page of the gradebook as CSV (following `Link: rel="next"`) and hands the
/// whole file to the browser as a download: the header once, then each page's rows.
async function downloadGradebook(id) {
  /** @type {string | undefined} */
  let cursor;
  const parts = [];
  for (let i = 0; i < 50; i += 1) {
    const res = await api.fetch('/v1/courses/{id}/gradebook', { id, format: 'csv', limit: 200, cursor });
    const text = await res.text();
    parts.push(i === 0 ? text : text.slice(text.indexOf('\n') + 1));
    const next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') || '');
    cursor = next ? new URL(next[1], location.href).searchParams.get('cursor') ?? undefined : undefined;
    if (!cursor) break;
  }
  const url = URL.createObjectURL(new Blob(parts, { type: 'text/csv' }));
  const a = h('a', { href: url, download: `gradebook-${id}.csv`, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function gradebookCell(cell, assignment, learner) {
  const grade =
    cell.points === null || cell.points === undefined
      ? t('nothing')
      : [`${num(cell.points, 2)} / ${num(cell.max_points, 2)}`, cell.percentage === null || cell.percentage === undefined ? null : h('span', { class: 'meta' }, ` (${pct(cell.percentage, 1)})`)];
  return h(
    'td',
    { class: ['grade-cell', `state-${cell.state}`], dataset: { assignment: cell.assignment_id, state: cell.state } },
    h('span', { class: 'grade' }, grade),
    h('span', { class: 'meta' }, t(`cell_${cell.state}`), ' · ', t('gb_attempts', { n: cell.attempts_used })),
    cell.attempts_used
      ? h(
          'a',
          { href: `#/teach/assignment/${assignment.id}/exam/${learner.user_id}`, class: 'cell-link' },
          t('gb_open'),
          h('span', { class: 'visually-hidden' }, `: ${learner.display_name}, ${assignment.title}`),
        )
      : null,
  );
}

export async function gradebookPage(view, ctx, id) {
  if (staffOnly(view, ctx)) return;
  const [course, book] = await Promise.all([api.get('/v1/courses/{id}', { id }), api.list('/v1/courses/{id}/gradebook', { id })]);
  view.classList.add('wide');
  const error = h('div', { class: 'form-error', role: 'alert' });
  const download = h('button', { type: 'button' }, t('gb_download'));
  download.addEventListener('click', async () => {
    error.replaceChildren();
    download.disabled = true;
    try {
      await downloadGradebook(id);
    } catch (err) {
      error.replaceChildren(problemText(ctx, err));
    } finally {
      download.disabled = false;
    }
  });
  const assignments = book.assignments || [];
  view.append(
    h('p', { class: 'breadcrumb' }, h('a', { href: '#/teach' }, t('teach_title')), ' › ', h('a', { href: `#/teach/course/${id}` }, h('bdi', {}, course.title))),
    h('h1', {}, t('gb_title'), ': ', h('bdi', {}, course.title)),
    h('p', {}, t('gb_intro')),
    h('p', { class: 'actions' }, download),
    error,
    book.learners.length && assignments.length
      ? h(
          'div',
          { class: 'table-wrap gradebook-wrap', role: 'region', 'aria-labelledby': 'gb-caption', tabindex: '0' },
          h(
            'table',
            { class: 'data gradebook' },
            h('caption', { id: 'gb-caption' }, t('gb_caption', { n: book.learners.length, m: assignments.length })),
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                h('th', { scope: 'col' }, t('name')),
                assignments.map((a) =>
                  h(
                    'th',
                    { scope: 'col', dataset: { assignment: a.id } },
                    h('bdi', {}, a.title),
                    h('span', { class: 'meta col-meta' }, t('gb_method', { m: t(`grading_${a.grading_method}`) })),
                  ),
                ),
              ),
            ),
            h(
              'tbody',
              {},
              book.learners.map((l) =>
                h(
                  'tr',
                  { dataset: { user: l.user_id } },
                  h(
                    'th',
                    { scope: 'row' },
                    h('bdi', {}, l.display_name),
                    l.email ? h('span', { class: 'meta col-meta' }, h('bdi', {}, l.email)) : null,
                    l.enrolled === false ? h('span', { class: 'meta col-meta not-enrolled' }, t('gb_not_enrolled')) : null,
                  ),
                  l.cells.map((c, i) => gradebookCell(c, assignments[i], l)),
                ),
              ),
            ),
          ),
        )
      : h('p', {}, book.learners.length ? t('no_assignments') : t('gb_no_learners')),
  );
}

/* ------------------------------------------------------ an assignment: overrides and grades */

/// The attempt whose grade panel stays open across a re-render (after a grade is saved).
let openAttempt = null;

const FINISH_REASONS = new Set(['submitted', 'deadline', 'closed']);

async function gradeHistory(ctx, attempt, names) {
  const history = await api.get('/v1/attempts/{id}/grade-history', { id: attempt.id });
  const who = (e) => (e.actor_id ? names.get(e.actor_id) || t('grade_by_staff') : 'quizd');
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'data grade-history' },
      h('caption', { id: `hist-h-${attempt.id}`, tabindex: '-1' }, t('grade_history_of', { who: attempt.display_name, n: attempt.number })),
      h('thead', {}, h('tr', {}, [t('gh_when'), t('gh_what'), t('gh_who'), t('gh_from'), t('gh_to'), t('gh_why')].map((c) => h('th', { scope: 'col' }, c)))),
      h(
        'tbody',
        {},
        history.events.map((e) =>
          h(
            'tr',
            { dataset: { kind: e.kind } },
            h('td', {}, dateTime(e.at)),
            h('td', {}, t(`gk_${e.kind}`)),
            h('td', {}, h('bdi', {}, who(e))),
            h('td', { class: 'num' }, points(e.from_points)),
            h('td', { class: 'num' }, `${points(e.to_points)} / ${num(e.max_points, 2)}`),
            h('td', { class: 'reason' }, e.kind === 'finished' && FINISH_REASONS.has(e.reason) ? t(`finish_${e.reason}`) : h('bdi', {}, e.reason)),
          ),
        ),
      ),
    ),
  );
}

/// The panel under an attempt's row: the grade form (finished attempts) and the history.
function gradePanel(ctx, attempt, names) {
  const panel = h('div', { class: 'grade-panel' });
  const historyBox = h('div', { class: 'history-box', 'aria-live': 'polite' }, h('p', { role: 'status' }, t('loading')));
  const load = async () => {
    try {
      historyBox.replaceChildren(await gradeHistory(ctx, attempt, names));
    } catch (err) {
      historyBox.replaceChildren(problemText(ctx, err));
    }
  };
  if (attempt.state === 'finished') {
    const p = `grade-${attempt.id}`;
    const error = h('div', { class: 'form-error', role: 'alert' });
    const button = h('button', { type: 'submit', class: 'primary' }, t('grade_save'));
    const current = attempt.override_points ?? attempt.score;
    const form = h(
      'form',
      { class: 'form grade-form', 'aria-labelledby': `${p}-h` },
      h('h3', { id: `${p}-h` }, t('grade_set_title', { who: attempt.display_name, n: attempt.number })),
      h('p', { class: 'meta' }, t('grade_now', { p: points(current), m: num(attempt.max_score, 2) })),
      input(`${p}-points`, t('grade_points', { m: num(attempt.max_score, 2) }), {
        type: 'number', step: 'any', inputmode: 'decimal', required: true, class: 'narrow', value: current === null || current === undefined ? '' : String(current),
      }),
      input(`${p}-reason`, t('grade_reason'), { required: true, maxlength: 1000, autocomplete: 'off', 'aria-describedby': `${p}-reason-hint` }),
      h('p', { class: 'hint', id: `${p}-reason-hint` }, t('grade_reason_hint')),
      error,
      h('div', { class: 'actions' }, button),
    );
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      error.replaceChildren();
      const f = new FormData(form);
      button.disabled = true;
      try {
        await api.put('/v1/attempts/{id}/grade', { id: attempt.id }, { points: Number(f.get(`${p}-points`)), reason: String(f.get(`${p}-reason`) ?? '') });
        openAttempt = attempt.id;
        await ctx.render({ keepFocus: true });
        announce(t('grade_saved', { who: attempt.display_name }));
        const caption = `#hist-h-${attempt.id}`;
        for (let i = 0; i < 50 && !document.querySelector(caption); i += 1) await new Promise((r) => setTimeout(r, 50));
        focus(document.querySelector(caption));
      } catch (err) {
        // The API's own words: the grade's bounds, the reason's, the attempt's state.
        error.replaceChildren(problemText(ctx, err));
        button.disabled = false;
      }
    });
    panel.append(form);
  }
  panel.append(h('h3', {}, t('grade_history')), historyBox);
  load();
  return panel;
}

function attemptsSection(ctx, assignment, attempts, names, only) {
  const rows = [];
  for (const a of attempts) {
    const detailId = `attempt-detail-${a.id}`;
    const detail = h('tr', { id: detailId, class: 'detail', hidden: true }, h('td', { colspan: 6 }));
    const toggle = h(
      'button',
      { type: 'button', class: 'small', 'aria-expanded': 'false', 'aria-controls': detailId },
      a.state === 'finished' ? t('grade_open') : t('grade_history'),
      h('span', { class: 'visually-hidden' }, `: ${a.display_name}, ${t('attempt_n', { n: a.number })}`),
    );
    const open = (yes) => {
      toggle.setAttribute('aria-expanded', String(yes));
      detail.hidden = !yes;
      if (yes && !detail.firstChild.firstChild) detail.firstChild.append(gradePanel(ctx, a, names));
    };
    toggle.addEventListener('click', () => open(detail.hidden));
    if (openAttempt === a.id) open(true);
    const counts = a.override_points ?? a.score;
    rows.push(
      h(
        'tr',
        { dataset: { attempt: a.id } },
        h('th', { scope: 'row' }, h('bdi', {}, a.display_name)),
        h('td', { class: 'num' }, num(a.number, 0)),
        h('td', {}, a.state === 'finished' ? t('state_finished') : t('state_in_progress')),
        h('td', { class: 'num' }, `${points(a.score)} / ${num(a.max_score, 2)}`),
        h(
          'td',
          { class: 'num' },
          a.state === 'finished' ? `${points(counts)} / ${num(a.max_score, 2)}` : t('nothing'),
          a.override_points === null || a.override_points === undefined ? null : h('span', { class: 'meta' }, ` (${t('cell_overridden')})`),
        ),
        h('td', {}, toggle),
      ),
      detail,
    );
  }
  openAttempt = null;
  return h(
    'section',
    { 'aria-labelledby': 'attempts-h', class: 'attempts-section' },
    h('h2', { id: 'attempts-h' }, only ? t('attempts_of', { who: names.get(only) || '' }) : t('attempts_title')),
    only ? h('p', {}, h('a', { href: `#/teach/assignment/${assignment.id}/exam` }, t('attempts_everyone'))) : null,
    attempts.length
      ? h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { class: 'data attempts-table' },
            h('thead', {}, h('tr', {}, [t('name'), t('regrade_attempt'), t('gh_state'), t('grade_computed'), t('grade_counts'), t('actions')].map((c) => h('th', { scope: 'col' }, c)))),
            h('tbody', {}, rows),
          ),
        )
      : h('p', {}, t('attempts_none')),
  );
}

function bulkOverrideForm(ctx, assignment, learners, reload) {
  const boxes = h(
    'fieldset',
    { class: 'learner-picks' },
    h('legend', {}, t('bulk_learners')),
    learners.map((p) => checkbox(`bulk-${p.user_id}`, p.display_name)),
  );
  return actionForm(ctx, {
    title: t('bulk_title'),
    fields: [h('p', { class: 'hint' }, t('bulk_intro')), boxes, adjustmentFields('bulk')],
    submitLabel: t('bulk_save'),
    action: (f) => {
      const ids = learners.filter((p) => f.get(`bulk-${p.user_id}`) === 'on').map((p) => p.user_id);
      return api.post('/v1/assignments/{id}/overrides', { id: assignment.id }, { user_ids: ids, override: adjustmentBody(f, 'bulk') }).then(() => ids.length);
    },
    done: (n) => reload(t('bulk_saved', { n }), '#ovr-h'),
  });
}

function policySummary(policy) {
  const parts = [];
  parts.push(policy.opens_at ? t('asg_opens_at', { at: dateTime(policy.opens_at) }) : t('asg_open_now'));
  if (policy.closes_at) parts.push(t('asg_closes_at', { at: dateTime(policy.closes_at) }));
  if (policy.time_limit_minutes) parts.push(t('time_limit_n', { n: policy.time_limit_minutes }));
  parts.push(policy.attempts_allowed ? t('asg_attempts_n', { n: policy.attempts_allowed }) : t('asg_attempts_any'));
  parts.push(t(`navigation_${policy.navigation || 'free'}`));
  return parts.join(' · ');
}

/// One assignment's exam operations: overrides (one learner, or many at once) with the rule
/// in words, and its attempts with their grades, grade changes and grade history. `only`: a
/// learner's id, to show only their attempts (from the gradebook).
export async function examPage(view, ctx, id, only) {
  if (staffOnly(view, ctx)) return;
  const assignment = await api.get('/v1/assignments/{id}', { id });
  const courseId = assignment.course_id;
  if (!courseId) {
    view.append(h('h1', {}, h('bdi', {}, assignment.title)), h('p', { role: 'alert' }, t('exam_practice')));
    return;
  }
  const [course, overrides, roster, attempts] = await Promise.all([
    api.get('/v1/courses/{id}', { id: courseId }),
    api.get('/v1/assignments/{id}/overrides', { id }),
    api.list('/v1/courses/{id}/enrollments', { id: courseId }),
    api.list('/v1/assignments/{id}/attempts', { id }),
  ]);
  const names = new Map(roster.items.map((p) => [p.user_id, p.display_name]));
  for (const a of attempts.items) if (!names.has(a.user_id)) names.set(a.user_id, a.display_name);
  const learners = roster.items.filter((p) => p.role === 'learner');
  view.classList.add('wide');
  const reload = async (message, focusSelector) => {
    await ctx.render({ keepFocus: true });
    announce(message);
    focus(document.querySelector(focusSelector));
  };
  const shown = only ? attempts.items.filter((a) => a.user_id === only) : attempts.items;
  view.append(
    h(
      'p',
      { class: 'breadcrumb' },
      h('a', { href: '#/teach' }, t('teach_title')),
      ' › ',
      h('a', { href: `#/teach/course/${courseId}` }, h('bdi', {}, course.title)),
      ' › ',
      h('a', { href: `#/teach/course/${courseId}/gradebook` }, t('gb_title')),
    ),
    h('h1', {}, t('exam_title'), ': ', h('bdi', {}, assignment.title)),
    h('p', { class: 'meta policy-summary' }, policySummary(assignment.policy)),
    attemptsSection(ctx, assignment, shown, names, only),
    adjustmentSection(ctx, {
      hid: 'ovr-h',
      title: t('ovr_title'),
      intro: t('ovr_intro'),
      items: overrides.items,
      learners,
      /** @param {string} user_id */
      del: (user_id) => api.del('/v1/assignments/{id}/overrides/{user_id}', { id, user_id }),
      /** @param {string} user_id @param {Schemas['AdjustmentRequest']} body */
      put: (user_id, body) => api.put('/v1/assignments/{id}/overrides/{user_id}', { id, user_id }, body),
      prefix: 'ovr',
      reload,
    }),
    ruleInWords(),
  );
  if (learners.length) view.append(bulkOverrideForm(ctx, assignment, learners, reload));
}
