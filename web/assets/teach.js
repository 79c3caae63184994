// Instructor pages: courses, a course's people and assignments. Analytics are in charts.js.

import { api } from './api.js';
import { h, loc, announce, focus } from './dom.js';
import { t, num, nativeName } from './i18n.js';

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
  const headingId = `h-${title.replace(/\W+/g, '-')}`;
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
      action: (f) => api.post('/v1/courses', { title: f.get('course-title'), code: f.get('course-code') || null }),
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
  const [course, roster, assignments, catalogue] = await Promise.all([
    api.get(`/v1/courses/${id}`),
    api.list(`/v1/courses/${id}/enrollments`),
    api.list(`/v1/courses/${id}/assignments`),
    api.list(`/v1/quizzes?lang=${encodeURIComponent(ctx.lang)}`),
  ]);
  const titles = new Map(catalogue.items.map((q) => [q.slug, q.title]));
  view.classList.add('wide');
  const reload = async (message, focusSelector) => {
    await ctx.render({ keepFocus: true });
    announce(message);
    focus(document.querySelector(focusSelector));
  };

  view.append(
    h('p', { class: 'breadcrumb' }, h('a', { href: '#/teach' }, t('teach_title'))),
    h('h1', {}, h('bdi', {}, course.title), course.code ? h('span', { class: 'code' }, ` ${course.code}`) : null),
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
                h('p', {}, h('a', { href: `#/teach/assignment/${a.id}`, class: 'button' }, t('analytics'), h('span', { class: 'visually-hidden' }, `: ${a.title}`))),
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
        action: (f) => api.post(`/v1/courses/${id}/enrollments`, { email: f.get('enroll-email'), role: f.get('enroll-role') }),
        // An email without an account is invited (202, an invitation) rather than enrolled.
        done: (e) =>
          reload(e.display_name ? t('enrolled', { who: e.display_name }) : t('invited', { who: e.email }), '#enroll-email'),
      }),
      actionForm(ctx, {
        title: t('new_assignment'),
        fields: [
          select(
            'asg-quiz',
            t('quiz'),
            catalogue.items.map((q) => [q.slug, q.title.text, q.title.lang]),
          ),
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
          const policy = {
            feedback: f.get('asg-feedback'),
            grading_method: f.get('asg-grading'),
            navigation: f.get('asg-navigation'),
            shuffle_questions: f.get('asg-shuffle-q') === 'on',
            shuffle_options: f.get('asg-shuffle-o') === 'on',
          };
          // datetime-local is the browser's local time; the API takes an instant.
          if (f.get('asg-opens')) policy.opens_at = new Date(f.get('asg-opens')).toISOString();
          if (f.get('asg-closes')) policy.closes_at = new Date(f.get('asg-closes')).toISOString();
          if (f.get('asg-time')) policy.time_limit_minutes = Number(f.get('asg-time'));
          if (f.get('asg-attempts')) policy.attempts_allowed = Number(f.get('asg-attempts'));
          return api.post(`/v1/courses/${id}/assignments`, { quiz: f.get('asg-quiz'), title: f.get('asg-title') || null, policy });
        },
        done: () => reload(t('assignment_created'), '#asg-h'),
      }),
    ),
  );
}

/// Regrading an assignment to a corrected version of its quiz: a preview (the API's dry run)
/// as tables, then the same change applied on confirmation.
// `latest`: the quiz's current version, when known; `questionKeys`: the assigned version's.
export function regradeSection(ctx, assignment, roster, { latest, questionKeys = [] } = {}) {
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
    const out = { dry_run: dryRun };
    const question = f.get('regrade-question');
    const to = Number(f.get('regrade-version'));
    if (question) out.questions = { [question]: f.get('regrade-scoring') };
    if (f.get('regrade-version') && !(question && to === assignment.quiz_version)) out.to_version = to;
    if (f.get('regrade-reason')) out.reason = f.get('regrade-reason');
    return out;
  };
  const run = async (dryRun) => {
    error.replaceChildren();
    preview.disabled = apply.disabled = true;
    try {
      const report = await api.post(`/v1/assignments/${assignment.id}/regrade`, body(dryRun));
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
  const res = await api.fetch(`/v1/quizzes/${encodeURIComponent(slug)}/versions/${version}/translations/${encodeURIComponent(locale)}.${ext}`);
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
      const saved = await api.putFile(
        `/v1/quizzes/${encodeURIComponent(slug)}/versions/${status.version}/translations/${encodeURIComponent(locale)}.${ext}`,
        await chosen.text(),
        type,
      );
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
  const catalogue = await api.list(`/v1/quizzes?lang=${encodeURIComponent(ctx.lang)}`);
  // Only a quiz's authors (and admins) read its translations: the catalogue says which.
  const authored = await Promise.all(
    catalogue.items
      .filter((q) => q.editable)
      .map(async (q) => [q, await api.get(`/v1/quizzes/${encodeURIComponent(q.slug)}/translations`)]),
  );
  view.classList.add('wide');
  view.append(
    h('p', { class: 'breadcrumb' }, h('a', { href: '#/teach' }, t('teach_title'))),
    h('h1', {}, t('translations_title')),
    h('p', {}, t('translations_intro')),
    ...(authored.length ? authored.map(([q, status]) => quizTranslations(ctx, q, status)) : [h('p', {}, t('tr_no_quizzes'))]),
  );
}
