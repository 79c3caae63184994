// @ts-check
// Learner pages: sign in, sign up, the catalogue, taking a quiz, the result and review.

import { api, signIn, register } from './api.js';
import { h, loc, announce, focus, newId } from './dom.js';
import { local as localStore, session as tabStore } from './storage.js';
import { t, num, pct, dateTime, nativeName, langName, setUiLang, UI_LANGS } from './i18n.js';

/** @typedef {import('./api.js').Schemas} Schemas */
/** @typedef {import('./api.js').ApiError} ApiError */

/* ---------------------------------------------------------------- sign in / sign up */

function field(name, label, attrs = {}, hint = null) {
  const id = `f-${name}`;
  const hintId = hint ? `${id}-hint` : undefined;
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    hint ? h('p', { class: 'hint', id: hintId }, hint) : null,
    h('input', { id, name, 'aria-describedby': hintId, ...attrs }),
  );
}

function languageSelect(ctx, id, label) {
  const langs = [...new Set([...UI_LANGS, ...ctx.locales])];
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    h('select', { id, name: 'locale' }, langs.map((l) => h('option', { value: l, lang: l, selected: l === ctx.lang }, nativeName(l)))),
  );
}

async function afterSignIn(ctx, form) {
  await ctx.refreshMe();
  if (ctx.me.locale && ctx.me.locale !== ctx.lang) {
    ctx.lang = ctx.me.locale;
    setUiLang(ctx.lang);
    localStore.setItem('quizd.lang', ctx.lang);
    await ctx.refreshMe();
  }
  form.reset();
  const after = tabStore.getItem('quizd.after');
  tabStore.removeItem('quizd.after');
  ctx.navigate(after || '#/quizzes');
}

function authForm(ctx, { fields, submitLabel, action }) {
  const error = h('div', { class: 'form-error', role: 'alert' });
  const button = h('button', { type: 'submit', class: 'primary' }, submitLabel);
  const form = h('form', { class: 'card form' }, fields, error, h('div', { class: 'actions' }, button));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.replaceChildren();
    button.disabled = true;
    try {
      await action(new FormData(form));
      await afterSignIn(ctx, form);
    } catch (err) {
      error.replaceChildren(h('p', {}, h('span', { class: 'icon', 'aria-hidden': 'true' }, '⚠ '), ctx.errorText(err)));
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

export async function signInPage(view, ctx) {
  const notice = tabStore.getItem('quizd.notice');
  tabStore.removeItem('quizd.notice');
  // (Native append would write a missing notice as the text "null".)
  view.append(
    h('h1', {}, t('sign_in')),
    ...[notice ? h('p', { class: 'notice' }, t(notice)) : null].filter(Boolean),
    authForm(ctx, {
      fields: [
        field('email', t('email'), { type: 'email', autocomplete: 'username', required: true }),
        field('password', t('password'), { type: 'password', autocomplete: 'current-password', required: true }),
      ],
      submitLabel: t('sign_in'),
      action: (f) => signIn(f.get('email'), f.get('password')),
    }),
    h('p', {}, t('no_account'), ' ', h('a', { href: '#/signup' }, t('create_account'))),
  );
}

export async function signUpPage(view, ctx) {
  view.append(
    h('h1', {}, t('create_account')),
    authForm(ctx, {
      fields: [
        field('display_name', t('display_name'), { type: 'text', autocomplete: 'name', required: true, maxlength: 200 }),
        field('email', t('email'), { type: 'email', autocomplete: 'email', required: true }),
        field('password', t('password'), { type: 'password', autocomplete: 'new-password', required: true, minlength: 8 }, t('password_hint')),
        languageSelect(ctx, 'f-locale', t('quiz_language')),
      ],
      submitLabel: t('sign_up'),
      action: async (f) => {
        const locale = f.get('locale');
        await register({ display_name: f.get('display_name'), email: f.get('email'), password: f.get('password'), locale });
        ctx.lang = locale;
        localStore.setItem('quizd.lang', locale);
        setUiLang(locale);
      },
    }),
    h('p', {}, t('have_account'), ' ', h('a', { href: '#/signin' }, t('sign_in'))),
  );
}

/* ---------------------------------------------------------------- the catalogue */

function policyLine(policy) {
  const parts = [t(`feedback_${policy.feedback || 'immediate'}`)];
  if (policy.time_limit_minutes) parts.push(t('time_limit_n', { n: policy.time_limit_minutes }));
  return parts.join(' · ');
}

function coverageList(ctx, locales) {
  return h(
    'ul',
    { class: 'coverage' },
    locales.map((l) => {
      const share = l.total ? (100 * l.translated) / l.total : 0;
      const bar = h('span', { class: 'coverage-fill' });
      bar.style.width = `${share}%`; // CSSOM, not a style attribute: allowed by the CSP
      return h(
        'li',
        { class: l.locale === ctx.lang ? 'current' : null },
        h('span', { lang: l.locale, class: 'coverage-name' }, nativeName(l.locale)),
        h('span', { class: 'coverage-bar', 'aria-hidden': 'true' }, bar),
        h('span', { class: 'coverage-pct' }, t('coverage', { pct: pct(share) })),
      );
    }),
  );
}

/// An address not confirmed yet: course invitations to it wait until it is (an email enrolls
/// only an account that confirmed it), and the link mailed at sign-up lasts 48 hours: a new
/// one on request.
function verifyNotice(ctx) {
  const status = h('p', { role: 'status' });
  const error = h('div', { class: 'form-error', role: 'alert' });
  const button = h('button', { type: 'button' }, t('verify_send'));
  button.addEventListener('click', async () => {
    error.replaceChildren();
    button.disabled = true;
    try {
      const sent = await api.post('/v1/me/email-verification', {});
      status.replaceChildren(t('verify_sent', { email: sent?.email }));
    } catch (err) {
      error.replaceChildren(h('p', {}, h('span', { 'aria-hidden': 'true' }, '⚠ '), ctx.errorText(err)));
    } finally {
      button.disabled = false;
    }
  });
  return h(
    'section',
    { class: 'notice verify-notice', 'aria-labelledby': 'verify-h' },
    h('h2', { id: 'verify-h' }, t('verify_title')),
    h('p', {}, t('verify_notice', { email: ctx.me.email })),
    h('div', { class: 'actions' }, button),
    status,
    error,
  );
}

/// A Start (or Resume) button that opens the attempt; errors shown next to it. A timed
/// attempt (`timeLimit` minutes) asks first: its clock starts with it and does not stop.
// `label`: the button's words when there is nothing to resume (Start).
function startButton(ctx, { inProgress, start, describedBy, timeLimit, label = t('start') }) {
  const error = h('p', { class: 'inline-error', role: 'alert' });
  const button = h('button', { type: 'button', class: 'primary', 'aria-describedby': describedBy }, inProgress ? t('resume') : label);
  const begin = async (trigger) => {
    trigger.disabled = true;
    try {
      const attempt = await start();
      ctx.navigate(`#/attempt/${attempt.id}`);
    } catch (err) {
      error.replaceChildren(ctx.errorText(err));
      trigger.disabled = false;
    }
  };
  // Made when asked for, so that a page has one Start button per attempt until then.
  const place = h('span', { class: 'start' }, button);
  const ask = () => {
    const confirmId = newId('timed');
    const go = h('button', { type: 'button', class: 'primary' }, t('timed_start'));
    const back = h('button', { type: 'button' }, t('not_now'));
    const confirm = h('div', { class: 'timed-confirm', role: 'group', 'aria-labelledby': confirmId },
      h('p', { id: confirmId }, t('timed_confirm', { n: timeLimit })),
      h('div', { class: 'actions' }, go, back));
    go.addEventListener('click', () => begin(go));
    back.addEventListener('click', () => {
      place.replaceChildren(button);
      button.focus();
    });
    place.replaceChildren(confirm);
    go.focus();
  };
  button.addEventListener('click', () => {
    if (inProgress) return ctx.navigate(`#/attempt/${inProgress.id}`);
    if (timeLimit) return ask();
    return begin(button);
  });
  return [place, error];
}

export async function cataloguePage(view, ctx) {
  const [catalogue, mine, courses] = await Promise.all([
    api.list('/v1/quizzes', { lang: ctx.lang }),
    api.list('/v1/me/attempts'),
    api.list('/v1/courses'),
  ]);
  const open = new Map(mine.items.filter((a) => a.state === 'in_progress').map((a) => [a.assignment_id, a]));
  const titles = new Map(catalogue.items.map((q) => [q.slug, q.title]));
  // The catalogue does not say how a practice assignment behaves; its assignment does.
  const practice = await Promise.all(
    catalogue.items.map((q) => (q.practice_assignment_id ? api.get('/v1/assignments/{id}', { id: q.practice_assignment_id }).catch(() => null) : null)),
  );
  const learning = courses.items.filter((c) => c.my_role === 'learner');
  const courseAssignments = await Promise.all(learning.map((c) => api.list('/v1/courses/{id}/assignments', { id: c.id })));

  view.append(h('h1', {}, t('quizzes_title')), h('p', { class: 'lede' }, t('quizzes_intro')));
  if (ctx.me?.email && !ctx.me.email_verified_at) view.append(verifyNotice(ctx));

  const cards = catalogue.items.map((q, i) => {
    const titleId = newId('quiz');
    const policy = practice[i]?.policy;
    return h(
      'li',
      { class: 'card quiz-card', dataset: { slug: q.slug } },
      loc('h2', q.title, { id: titleId, class: 'quiz-title' }),
      q.intro ? loc('p', q.intro, { class: 'quiz-intro' }) : null,
      h('p', { class: 'meta' }, t('questions_n', { n: q.question_count }), policy ? ` · ${policyLine(policy)}` : ''),
      q.locale !== ctx.lang ? h('p', { class: 'fallback-note' }, t('shown_in_fallback'), ' ', h('span', { lang: q.locale }, nativeName(q.locale))) : null,
      h('div', { class: 'langs' }, h('p', { class: 'langs-label' }, t('available_in')), coverageList(ctx, q.locales)),
      q.practice_assignment_id
        ? h(
            'div',
            { class: 'actions' },
            startButton(ctx, {
              inProgress: open.get(q.practice_assignment_id),
              describedBy: titleId,
              timeLimit: practice[i]?.policy?.time_limit_minutes,
              start: () => api.post('/v1/quizzes/{slug}/attempts', { slug: q.slug }, { locale: ctx.lang }),
            }),
          )
        : null,
    );
  });
  view.append(h('ul', { class: 'cards', 'aria-label': t('quizzes_title') }, cards));

  if (learning.length) {
    view.append(
      h(
        'section',
        { class: 'courses', 'aria-labelledby': 'my-courses' },
        h('h2', { id: 'my-courses' }, t('my_courses')),
        learning.map((c, i) =>
          h(
            'div',
            { class: 'card course-card' },
            h('h3', {}, h('bdi', {}, c.title), c.code ? h('span', { class: 'code' }, ` ${c.code}`) : null),
            courseAssignments[i].items.length
              ? h(
                  'ul',
                  { class: 'assignment-list' },
                  courseAssignments[i].items.map((a) => {
                    const titleId = newId('asg');
                    const quizTitle = titles.get(a.quiz);
                    return h(
                      'li',
                      { class: 'assignment', dataset: { assignment: a.id } },
                      h(
                        'div',
                        {},
                        h('p', { class: 'assignment-title', id: titleId }, h('bdi', {}, a.title)),
                        h('p', { class: 'meta' }, quizTitle ? [loc('span', quizTitle), ' · '] : null, policyLine(a.policy)),
                      ),
                      h(
                        'div',
                        { class: 'actions' },
                        startButton(ctx, {
                          inProgress: open.get(a.id),
                          describedBy: titleId,
                          timeLimit: a.policy.time_limit_minutes,
                          start: () => api.post('/v1/assignments/{id}/attempts', { id: a.id }, { locale: ctx.lang }),
                        }),
                      ),
                    );
                  }),
                )
              : h('p', {}, t('no_assignments')),
          ),
        ),
      ),
    );
  }

  view.append(
    h(
      'section',
      { class: 'attempts', 'aria-labelledby': 'my-attempts' },
      h('h2', { id: 'my-attempts' }, t('my_attempts')),
      mine.items.length ? attemptsTable(mine.items, titles) : h('p', {}, t('no_attempts')),
    ),
  );
}

function attemptsTable(items, titles) {
  const sorted = [...items].sort((a, b) => b.started_at.localeCompare(a.started_at));
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'data' },
      h('thead', {}, h('tr', {}, [t('quiz'), t('started_at'), t('state'), t('score'), ''].map((c) => h('th', { scope: 'col' }, c)))),
      h(
        'tbody',
        {},
        sorted.map((a) =>
          h(
            'tr',
            {},
            h('td', {}, titles.get(a.quiz) ? loc('span', titles.get(a.quiz)) : a.quiz, h('span', { class: 'meta' }, ` · ${t('attempt_n', { n: a.number })}`)),
            h('td', {}, dateTime(a.started_at)),
            h('td', {}, t(`state_${a.state}`)),
            h('td', { class: 'num' }, a.percentage == null ? t('nothing') : pct(a.percentage, 1)),
            h('td', {}, h('a', { href: `#/attempt/${a.id}` }, a.state === 'in_progress' ? t('resume') : t('review'))),
          ),
        ),
      ),
    ),
  );
}

/* ---------------------------------------------------------------- taking a quiz */

const CHOICE = new Set(['single', 'multiple', 'true_false']);

/// Bengali (and other) digits typed into a number field, as ASCII.
function asciiDigits(s) {
  return s.replace(/[\u09E6-\u09EF]/g, (d) => String(d.charCodeAt(0) - 0x09e6)).replace(/[\u0966-\u096F]/g, (d) => String(d.charCodeAt(0) - 0x0966));
}

function answerBody(q, form) {
  if (CHOICE.has(q.kind)) {
    const selected = [...form.querySelectorAll('input[name="answer"]:checked')].map((i) => i.value);
    return selected.length ? { selected } : null;
  }
  const value = form.querySelector('input[name="answer"]').value.trim();
  if (!value) return null;
  if (q.kind === 'numeric') {
    const n = Number(asciiDigits(value).replace(',', '.'));
    return Number.isFinite(n) ? { number: n } : null;
  }
  return { text: value };
}

function verdict(result) {
  if (result.correct) return { cls: 'is-correct', icon: '✓', word: t('correct') };
  if (result.points > 0) return { cls: 'is-partial', icon: '◐', word: t('partly_correct') };
  return { cls: 'is-incorrect', icon: '✗', word: t('incorrect') };
}

function optionTexts(q, ids) {
  const parts = [];
  for (const o of q.options.filter((x) => ids.includes(x.id))) {
    if (parts.length) parts.push(', ');
    parts.push(loc('span', o));
  }
  return parts;
}

/// Whether it was right, the right answer, the feedback and the explanation.
function feedbackPanel(q) {
  const r = q.result;
  const v = verdict(r);
  let right = null;
  if (CHOICE.has(q.kind) && !r.correct) right = [t('right_answer'), ': ', optionTexts(q, r.correct_options)];
  if (q.kind === 'numeric' && r.correct_number != null && !r.correct) right = [t('right_answer'), ': ', num(r.correct_number, 6)];
  if (q.kind === 'short_text' && r.accepted_answers?.length) right = [t('accepted_answers'), ': ', h('span', { lang: q.lang }, r.accepted_answers.join(', '))];
  return h(
    'div',
    { class: ['feedback', v.cls] },
    h(
      'p',
      { class: 'verdict' },
      h('span', { class: 'icon', 'aria-hidden': 'true' }, v.icon),
      h('strong', {}, v.word),
      h('span', { class: 'points' }, t('points_of', { p: r.points, m: r.max_points })),
    ),
    right ? h('p', { class: 'right-answer' }, right) : null,
    r.feedback ? h('div', { class: 'about' }, h('h3', {}, t('about_your_answer')), loc('p', r.feedback)) : null,
    h('div', { class: 'explanation' }, h('h3', {}, t('explanation')), loc('p', r.explanation, { class: 'explanation-text' })),
  );
}

function announceResult(q) {
  const r = q.result;
  const v = verdict(r);
  announce(
    `${v.word}.`,
    t('points_of', { p: r.points, m: r.max_points }) + '.',
    r.feedback ? h('span', { lang: r.feedback.lang }, r.feedback.text, ' ') : null,
    `${t('explanation')}:`,
    h('span', { lang: r.explanation.lang }, r.explanation.text),
  );
}

/// `answer`: what to show as chosen (an answer not sent yet), else the server's.
function choiceInputs(q, locked, answer) {
  const type = q.kind === 'multiple' ? 'checkbox' : 'radio';
  const chosen = (answer ?? q.response)?.selected || [];
  const right = q.result?.correct_options || [];
  return h(
    'div',
    { class: 'options' },
    q.options.map((o) => {
      const id = `opt-${q.id}-${o.id}`;
      const isChosen = chosen.includes(o.id);
      const isRight = right.includes(o.id);
      const tags = [];
      if (q.result && isRight) tags.push(h('span', { class: 'tag tag-right' }, h('span', { 'aria-hidden': 'true' }, '✓ '), t('right_answer')));
      if (q.result && isChosen && !isRight) tags.push(h('span', { class: 'tag tag-wrong' }, h('span', { 'aria-hidden': 'true' }, '✗ '), t('your_answer')));
      if (q.result && isChosen && isRight) tags.push(h('span', { class: 'tag tag-mine' }, t('your_answer')));
      return h(
        'div',
        { class: ['option', q.result && isRight && 'is-right', q.result && isChosen && !isRight && 'is-wrong'] },
        h('input', { type, id, name: 'answer', value: o.id, checked: isChosen, disabled: locked }),
        h('label', { for: id }, loc('span', o, { class: 'option-text' }), tags.length ? h('span', { class: 'tags' }, tags) : null),
      );
    }),
  );
}

function valueInput(q, locked, answer) {
  const id = `ans-${q.id}`;
  const r = answer ?? q.response;
  const value = q.kind === 'numeric' ? (r?.number ?? '') : (r?.text ?? '');
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, q.kind === 'numeric' ? t('your_number') : t('your_text')),
    h('input', {
      id,
      name: 'answer',
      type: 'text',
      inputmode: q.kind === 'numeric' ? 'decimal' : null,
      autocomplete: 'off',
      value: String(value),
      disabled: locked,
      class: q.kind === 'numeric' ? 'narrow' : null,
    }),
  );
}

/// The images of the questions on screen: each `<img>` gets its file through the API (with the
/// token) as an object URL; `release()` revokes them all when the question leaves the screen,
/// so a long attempt does not keep every image it showed in memory.
export function questionImages() {
  /** @type {string[]} */
  let urls = [];
  let generation = 0;
  return {
    /**
     * The image as a figure: its alt text with the language it is in (a fallback may differ
     * from the page's and the prompt's), its size reserved from the API's width and height.
     * @param {Schemas['QuestionImage'] | null | undefined} image
     */
    render(image) {
      if (!image) return null;
      const img = h('img', {
        alt: image.alt.text,
        lang: image.alt.lang,
        width: image.width ?? null,
        height: image.height ?? null,
        class: 'question-image loading',
      });
      const mine = generation;
      api
        .objectUrl(image.url)
        .then((url) => {
          // Released meanwhile (the learner moved on): this one is not shown.
          if (mine !== generation) return URL.revokeObjectURL(url);
          urls.push(url);
          img.setAttribute('src', url);
          img.classList.remove('loading');
        })
        .catch(() => img.classList.add('failed'));
      return h('figure', { class: 'question-figure' }, img);
    },
    release() {
      generation += 1;
      for (const url of urls) URL.revokeObjectURL(url);
      urls = [];
    },
  };
}

/// "Shown in English: not yet translated." where a question came in a fallback language: one
/// other than the attempt's, or than the one the learner reads in (a quiz with no Bengali at
/// all is served in English, the attempt's locale then being `en`).
/** @param {string} lang the text's @param {string[]} wanted the attempt's locale and the learner's language */
function untranslatedNote(lang, wanted) {
  const base = (/** @type {string} */ l) => l.split('-')[0];
  if (wanted.every((w) => base(w) === base(lang))) return null;
  return h('p', { class: 'untranslated-note' }, h('span', { 'aria-hidden': 'true' }, 'ⓘ '), t('untranslated_note', { lang: langName(lang) }));
}

/// "12 min 5 s", from two instants.
/** @param {string} from @param {string} to */
function duration(from, to) {
  const total = Math.max(0, Math.round((Date.parse(to) - Date.parse(from)) / 1000));
  const [hrs, min, sec] = [Math.floor(total / 3600), Math.floor((total % 3600) / 60), total % 60];
  return hrs ? t('duration_hms', { h: hrs, m: min, s: sec }) : t('duration_ms', { m: min, s: sec });
}

function formatClock(seconds) {
  const two = (n) => new Intl.NumberFormat(document.documentElement.lang, { minimumIntegerDigits: 2 }).format(n);
  const hrs = Math.floor(seconds / 3600);
  const min = Math.floor((seconds % 3600) / 60);
  const sec = seconds % 60;
  return hrs ? `${num(hrs)}:${two(min)}:${two(sec)}` : `${two(min)}:${two(sec)}`;
}

const THRESHOLDS = [300, 60, 30];
function thresholdText(s) {
  if (s >= 120) return t('minutes_left', { n: s / 60 });
  if (s === 60) return t('minute_left');
  return t('seconds_left', { n: s });
}

export async function attemptPage(view, ctx, id) {
  let attempt = await api.get('/v1/attempts/{id}', { id });
  const questions = () => attempt.questions;
  // Under sequential navigation the API serves the questions answered and the current one: an
  // answer is final, the next question comes with the attempt read again, and the page offers
  // no way back (no Previous, no list of questions to jump to).
  const sequential = () => attempt.navigation === 'sequential' && attempt.state === 'in_progress';
  const total = () => (sequential() ? attempt.question_count : questions().length);
  /// Reads the attempt again for the questions it serves now (the next one, after an answer).
  async function served() {
    const fresh = await api.get('/v1/attempts/{id}', { id: attempt.id });
    attempt.questions = fresh.questions;
    attempt.question_count = fresh.question_count;
  }
  const firstOpen = () => {
    const i = questions().findIndex((q) => !q.response);
    return i === -1 ? questions().length : i;
  };
  let index = firstOpen();
  let timeUp = false;
  /// "Flag for later": the API keeps no flags, so they live in this tab's storage, per attempt
  /// (storage.js: in memory where storage is denied), as question ids.
  const flagKey = `quizd.flags.${attempt.id}`;
  const flags = new Set(readFlags());
  function readFlags() {
    try {
      const stored = JSON.parse(tabStore.getItem(flagKey) || '[]');
      return Array.isArray(stored) ? stored.filter((x) => typeof x === 'string') : [];
    } catch {
      return [];
    }
  }
  /** @param {string} qid */
  function toggleFlag(qid) {
    if (!flags.delete(qid)) flags.add(qid);
    tabStore.setItem(flagKey, JSON.stringify([...flags]));
  }
  /// Answers given while quizd could not be reached: question id → the body to send. Shown as
  /// chosen, marked "not sent yet", and sent again when the connection returns.
  const unsent = new Map();
  const unreachable = (err) => err?.status === 0 || err?.status === 502 || err?.status === 503 || err?.status === 504;

  const images = questionImages();
  ctx.onLeave(() => images.release());
  const heading = loc('h1', attempt.title, { class: 'attempt-title' });
  const meta = h('p', { class: 'meta' });
  const timerBox = h('p', { class: 'timer', hidden: true });
  const stage = h('div', { class: 'stage' });
  const navBox = h('nav', { class: 'qnav', 'aria-label': t('questions_nav') });
  view.append(heading, meta, timerBox, stage, navBox);
  // A double click (or double tap) is two clicks, and the first one already moved on: the
  // second would land on whatever now sits under the pointer (the next question's Next, its
  // Previous, one of its options). Only the first click of a burst counts on this page.
  view.addEventListener(
    'click',
    (e) => {
      if (e.detail > 1 && e.target.closest('button, label, input, a')) {
        e.preventDefault();
        e.stopPropagation();
      }
    },
    true,
  );

  function renderMeta() {
    meta.replaceChildren(
      t('attempt_n', { n: attempt.number }),
      ' · ',
      t(`feedback_${attempt.feedback_timing}`),
      // (Native replaceChildren would write a null or an array as text.)
      ...(sequential() ? [' · ', h('span', { class: 'seq-note' }, t('seq_note'))] : []),
    );
  }

  function renderNav() {
    if (attempt.state !== 'in_progress') {
      navBox.hidden = true;
      return;
    }
    navBox.hidden = false;
    if (sequential()) {
      // No question to go back to: where the learner is, and the way to finish early.
      const answered = questions().filter((q) => q.response).length;
      navBox.replaceChildren(
        h('h2', { class: 'qnav-title' }, t('questions_nav')),
        h('p', { class: 'seq-progress' }, t('answered_x_of_n', { x: answered, n: total() })),
        h(
          'ol',
          {},
          h('li', {}, h('button', { type: 'button', class: 'qnav-item qnav-finish', 'aria-current': index === questions().length ? 'step' : null, onclick: () => go(questions().length) }, t('to_finish'))),
        ),
      );
      return;
    }
    navBox.replaceChildren(
      h('h2', { class: 'qnav-title' }, t('questions_nav')),
      h(
        'ol',
        {},
        questions().map((q, i) => {
          let status = q.response ? 'answered' : 'unanswered';
          let icon = q.response ? '●' : '○';
          if (q.result) [status, icon] = q.result.correct ? ['correct', '✓'] : ['incorrect', '✗'];
          else if (unsent.has(q.id)) [status, icon] = ['unsent', '↻'];
          return h(
            'li',
            {},
            h(
              'button',
              {
                type: 'button',
                class: ['qnav-item', `q-${status}`],
                'aria-current': i === index ? 'step' : null,
                onclick: () => go(i),
              },
              h('span', { class: 'visually-hidden' }, `${t('question')} `),
              num(i + 1),
              h('span', { class: 'qnav-icon', 'aria-hidden': 'true' }, icon),
              flags.has(q.id) ? h('span', { class: 'qnav-flag', 'aria-hidden': 'true' }, '⚑') : null,
              h('span', { class: 'visually-hidden' }, `: ${t(`q_status_${status}`)}`, flags.has(q.id) ? `, ${t('q_status_flagged')}` : ''),
            ),
          );
        }),
        h(
          'li',
          {},
          h('button', { type: 'button', class: 'qnav-item qnav-finish', 'aria-current': index === questions().length ? 'step' : null, onclick: () => go(questions().length) }, t('to_finish')),
        ),
      ),
    );
  }

  function go(i) {
    index = i;
    renderNav();
    renderStage();
    focus(stage.querySelector('h2'));
  }

  function renderStage() {
    images.release();
    if (attempt.state !== 'in_progress') return renderResult();
    if (index >= questions().length) return renderFinish();
    const q = questions()[index];
    // Under sequential navigation an answer is final even before it is judged.
    const locked = q.result != null || (sequential() && q.response != null);
    const hintId = `hint-${q.id}`;
    const message = h('p', { class: 'inline-error', role: 'alert' }, unsent.has(q.id) ? t('answer_unsent') : null);
    const submit = locked
      ? null
      : h('button', { type: 'submit', class: 'primary' }, attempt.feedback_timing === 'immediate' ? t('submit_answer') : t('save_answer'));
    const isLast = index === total() - 1;
    // Sequential: no skipping ahead (the next question is served once this one is answered)
    // and no way back.
    const next =
      sequential() && !q.response
        ? null
        : h('button', { type: 'button', class: locked ? 'primary next' : 'next', onclick: () => go(index + 1) }, isLast ? t('to_finish') : t('next'));
    const prev = index > 0 && !sequential() ? h('button', { type: 'button', class: 'prev', onclick: () => go(index - 1) }, t('previous')) : null;
    // Flagged in place (a re-render would lose a choice not saved yet).
    const flag = sequential()
      ? null
      : h(
          'button',
          {
            type: 'button',
            class: 'flag',
            'aria-pressed': String(flags.has(q.id)),
            onclick: () => {
              toggleFlag(q.id);
              flag?.setAttribute('aria-pressed', String(flags.has(q.id)));
              renderNav();
            },
          },
          h('span', { class: 'flag-icon', 'aria-hidden': 'true' }, '⚑ '),
          t('flag_for_later'),
        );
    // "Clear my choice": where an answer may still change (not judged, not sequential), the
    // question becomes unanswered again, on the server and here.
    const clear =
      !locked && !sequential() && (q.response || unsent.has(q.id))
        ? h(
            'button',
            {
              type: 'button',
              class: 'clear-choice',
              onclick: async () => {
                clear.disabled = true;
                unsent.delete(q.id);
                if (q.response) {
                  try {
                    await api.del('/v1/attempts/{id}/responses/{question_id}', { id: attempt.id, question_id: q.id });
                  } catch (thrown) {
                    const err = /** @type {Partial<ApiError>} */ (thrown);
                    if (err.code === 'deadline_passed' || err.code === 'attempt_finished' || err.code === 'closed') return expire();
                    message.replaceChildren(ctx.errorText(err));
                    clear.disabled = false;
                    return;
                  }
                }
                q.response = null;
                renderNav();
                renderStage();
                announce(t('choice_cleared'));
                focus(stage.querySelector('fieldset input, fieldset textarea'));
              },
            },
            t('clear_choice'),
          )
        : null;
    // Under deferred feedback a saved answer says so on screen, not only in the list's dot.
    const saved =
      q.response && !q.result && !unsent.has(q.id)
        ? h('p', { class: 'saved-note' }, h('span', { 'aria-hidden': 'true' }, '✓ '), t(sequential() ? 'seq_saved' : 'answer_saved'))
        : null;
    const form = h(
      'form',
      { class: 'question card', dataset: { question: q.id, kind: q.kind }, 'aria-labelledby': `qh-${q.id}` },
      h('h2', { id: `qh-${q.id}`, class: 'question-count' }, t('question_x_of_n', { x: index + 1, n: total() })),
      h(
        'fieldset',
        { 'aria-describedby': CHOICE.has(q.kind) ? hintId : null },
        loc('legend', { text: q.prompt, lang: q.lang }, { class: 'prompt' }),
        images.render(q.image),
        untranslatedNote(q.lang, [attempt.locale, ctx.lang]),
        CHOICE.has(q.kind) ? h('p', { class: 'hint', id: hintId }, q.kind === 'multiple' ? t('choose_any') : t('choose_one')) : null,
        CHOICE.has(q.kind) ? choiceInputs(q, locked, unsent.get(q.id)) : valueInput(q, locked, unsent.get(q.id)),
      ),
      message,
      saved,
      q.result ? feedbackPanel(q) : null,
      h('div', { class: 'actions' }, submit, clear, flag),
      // Reading order: back, then on.
      prev || next ? h('div', { class: 'actions step-nav' }, prev, next) : null,
    );
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const body = answerBody(q, form);
      if (!body) {
        message.replaceChildren(t('pick_first'));
        return;
      }
      submit.disabled = true;
      let note = null;
      try {
        const out = await api.put('/v1/attempts/{id}/responses/{question_id}', { id: attempt.id, question_id: q.id }, body);
        q.response = out.response;
        q.result = out.result ?? null;
        unsent.delete(q.id);
      } catch (thrown) {
        const err = /** @type {Partial<ApiError>} */ (thrown);
        if (err.code === 'answer_final' && err.problem?.recorded) {
          q.response = err.problem.recorded.response;
          q.result = err.problem.recorded.result ?? null;
          note = t('answer_final');
        } else if (err.code === 'deadline_passed' || err.code === 'attempt_finished' || err.code === 'closed') {
          return expire();
        } else if (unreachable(err)) {
          // Kept, not lost: shown as chosen wherever the learner goes, sent on reconnect.
          unsent.set(q.id, body);
          scheduleResend();
          renderNav();
          renderStage();
          announce(t('answer_unsent'));
          focus(stage.querySelector('button.next'));
          return;
        } else {
          message.replaceChildren(ctx.errorText(err));
          submit.disabled = false;
          return;
        }
      }
      if (sequential()) {
        // The next question comes with the attempt read again; this one keeps what the answer said.
        await served().catch(() => {});
        const fresh = questions().find((x) => x.id === q.id);
        if (fresh && fresh !== q) Object.assign(fresh, { response: q.response, result: q.result });
      }
      renderNav();
      renderStage();
      if (note) stage.querySelector('.inline-error').replaceChildren(note);
      if (q.result) announceResult(q);
      else announce(t(sequential() ? 'seq_saved' : 'answer_saved'));
      focus(stage.querySelector('button.next'));
    });
    stage.replaceChildren(form);
  }

  function renderFinish() {
    const open = questions().flatMap((q, i) => (q.response ? [] : [/** @type {const} */ ([q, i])]));
    const answered = questions().length - open.length;
    const flagged = questions().flatMap((q, i) => (flags.has(q.id) ? [i] : []));
    /** Buttons to questions by their numbers. @param {string} cls @param {number[]} indexes */
    const jumpList = (cls, indexes) =>
      h(
        'ul',
        { class: ['jump-list', cls] },
        indexes.map((i) => h('li', {}, h('button', { type: 'button', class: 'link-button', onclick: () => go(i) }, t('question_x_of_n', { x: i + 1, n: total() })))),
      );
    const error = h('p', { class: 'inline-error', role: 'alert' });
    const finishButton = h('button', { type: 'button', class: 'primary', onclick: doFinish }, t('finish'));
    async function doFinish() {
      finishButton.disabled = true;
      if (unsent.size) await resend();
      if (unsent.size) {
        error.replaceChildren(t('answer_unsent'));
        finishButton.disabled = false;
        return;
      }
      try {
        attempt = await api.post('/v1/attempts/{id}/finish', { id: attempt.id });
      } catch (thrown) {
        const err = /** @type {Partial<ApiError>} */ (thrown);
        if (err.code === 'attempt_finished' || err.code === 'deadline_passed') return expire();
        error.replaceChildren(ctx.errorText(err));
        finishButton.disabled = false;
        return;
      }
      stopTimer();
      renderNav();
      renderStage();
      const r = attempt.result;
      if (r) {
        const band = attempt.score_feedback ? loc('span', attempt.score_feedback) : null;
        announce(t('your_score'), `${t('score_line', { s: r.points ?? r.score, m: r.max_score })}, ${pct(r.percentage, 1)}`, band);
      }
      focus(stage.querySelector('h2'));
    }
    stage.replaceChildren(
      h(
        'section',
        { class: 'card finish' },
        h('h2', {}, t('finish_title')),
        h('p', {}, t('answered_x_of_n', { x: answered, n: total() })),
        answered < total()
          ? [h('h3', {}, t('unanswered_title')), h('p', {}, t('unanswered_score_zero')), jumpList('unanswered', open.map(([, i]) => i))]
          : null,
        flagged.length ? [h('h3', {}, t('flagged_title')), jumpList('flagged', flagged), h('p', { class: 'hint' }, t('flags_here_only'))] : null,
        error,
        h('div', { class: 'actions' }, finishButton, h('button', { type: 'button', onclick: () => go(Math.max(0, firstOpen() === questions().length ? 0 : firstOpen())) }, t('back_to_questions'))),
      ),
    );
  }

  function renderResult() {
    timerBox.hidden = true;
    const another = h('div', { class: 'another-attempt' });
    anotherAttempt(another).catch(() => {}); // without it, the result is still the result
    const r = attempt.result;
    const scoreBar = h('span', { class: 'score-fill' });
    if (r) scoreBar.style.width = `${r.percentage}%`;
    const reviewNote =
      attempt.questions.every((q) => !q.result) && attempt.feedback_timing === 'after_close'
        ? h('p', { class: 'notice' }, t('results_after_close'))
        : attempt.questions.every((q) => !q.result) && attempt.feedback_timing === 'never'
          ? h('p', { class: 'notice' }, t('results_never'))
          : null;
    stage.replaceChildren(
      h(
        'section',
        { class: 'card result', 'aria-labelledby': 'score-heading' },
        h('h2', { id: 'score-heading' }, t('your_score')),
        timeUp || attempt.finish_reason === 'deadline' ? h('p', { class: 'notice' }, t('time_up')) : null,
        attempt.regraded_at ? h('p', { class: 'notice' }, t('regraded_note')) : null,
        r
          ? [
              h('p', { class: 'score-big' }, pct(r.percentage, 1)),
              h('p', { class: 'score-line' }, t('score_line', { s: r.points ?? r.score, m: r.max_score })),
              h('span', { class: 'score-bar', 'aria-hidden': 'true' }, scoreBar),
              // The quiz's feedback for this score's band, in its own language; the API sends
              // it only beside the score.
              attempt.score_feedback ? loc('p', attempt.score_feedback, { class: 'score-feedback' }) : null,
            ]
          : null,
        attempt.finished_at ? h('p', { class: 'time-taken' }, t('time_taken', { d: duration(attempt.started_at, attempt.finished_at) })) : null,
        another,
      ),
      h(
        'section',
        { class: 'review', 'aria-labelledby': 'review-heading' },
        h('h2', { id: 'review-heading' }, t('review')),
        reviewNote,
        h('ol', { class: 'review-list' }, attempt.questions.map((q, i) => reviewItem(q, i))),
      ),
      h('p', {}, h('a', { href: '#/quizzes', class: 'button' }, t('back_to_quizzes'))),
    );
  }

  /// "Start another attempt" (or Resume, one being open), exactly where the server would start
  /// one: the learner's own rules (`your_attempts`: the policy with their overrides and course
  /// accommodation, so an override's extra attempts count) against their attempts of it, inside
  /// their window.
  /** @param {HTMLElement} place */
  async function anotherAttempt(place) {
    const [assignment, mine] = await Promise.all([
      api.get('/v1/assignments/{id}', { id: attempt.assignment_id }),
      api.list('/v1/me/attempts'),
    ]);
    const own = mine.items.filter((a) => a.assignment_id === attempt.assignment_id);
    if (!own.some((a) => a.id === attempt.id)) return; // staff reading a learner's attempt
    const p = assignment.policy;
    const yours = assignment.your_attempts ?? { allowed: p.attempts_allowed, used: own.length, remaining: null, opens_at: p.opens_at, closes_at: p.closes_at };
    const now = Date.now();
    const inDates = (!yours.opens_at || Date.parse(yours.opens_at) <= now) && (!yours.closes_at || Date.parse(yours.closes_at) > now);
    const inProgress = own.find((a) => a.state === 'in_progress');
    const left = yours.allowed == null || (yours.remaining ?? yours.allowed - yours.used) > 0;
    place.replaceChildren(
      yours.allowed != null ? h('p', { class: 'attempts-used' }, t('attempts_used', { n: yours.used, m: yours.allowed })) : '',
      ...(inProgress || (left && inDates)
        ? startButton(ctx, {
            inProgress,
            describedBy: 'score-heading',
            timeLimit: p.time_limit_minutes,
            label: t('start_another'),
            start: () => api.post('/v1/assignments/{id}/attempts', { id: attempt.assignment_id }, { locale: attempt.locale }),
          })
        : []),
    );
  }

  function reviewItem(q, i) {
    let answer;
    if (!q.response) answer = t('not_answered');
    else if (CHOICE.has(q.kind)) answer = optionTexts(q, q.response.selected || []);
    else if (q.kind === 'numeric') answer = num(q.response.number, 6);
    else answer = h('bdi', {}, q.response.text);
    const v = q.result ? verdict(q.result) : null;
    return h(
      'li',
      { class: ['card', 'review-item', v?.cls], dataset: { question: q.id } },
      h(
        'h3',
        {},
        t('question_x_of_n', { x: i + 1, n: attempt.questions.length }),
        v ? h('span', { class: 'verdict-tag' }, h('span', { 'aria-hidden': 'true' }, ` ${v.icon} `), h('span', { class: 'visually-hidden' }, ': '), v.word) : null,
      ),
      loc('p', { text: q.prompt, lang: q.lang }, { class: 'prompt' }),
      images.render(q.image),
      untranslatedNote(q.lang, [attempt.locale, ctx.lang]),
      h('p', { class: 'your-answer' }, h('strong', {}, t('your_answer')), ': ', answer),
      q.scoring === 'full_marks' ? h('p', { class: 'notice' }, t('scoring_full_marks')) : null,
      q.scoring === 'dropped' ? h('p', { class: 'notice' }, t('scoring_dropped')) : null,
      q.result ? feedbackPanel(q) : null,
    );
  }

  /* answers not sent yet: tried again every few seconds, and at once when the browser is online */
  let resendTimer = null;
  let resending = null;
  function scheduleResend() {
    if (!resendTimer) resendTimer = setTimeout(resend, 5000);
  }
  function resend() {
    clearTimeout(resendTimer);
    resendTimer = null;
    resending ??= sendUnsent().finally(() => {
      resending = null;
    });
    return resending;
  }
  async function sendUnsent() {
    for (const [qid, body] of [...unsent]) {
      const q = questions().find((x) => x.id === qid);
      if (!q) continue;
      try {
        const out = await api.put('/v1/attempts/{id}/responses/{question_id}', { id: attempt.id, question_id: qid }, body);
        q.response = out.response;
        q.result = out.result ?? null;
      } catch (thrown) {
        const err = /** @type {Partial<ApiError>} */ (thrown);
        if (unreachable(err)) return scheduleResend();
        if (err.code === 'answer_final' && err.problem?.recorded) {
          q.response = err.problem.recorded.response;
          q.result = err.problem.recorded.result ?? null;
        } else if (err.code === 'deadline_passed' || err.code === 'attempt_finished' || err.code === 'closed') {
          unsent.clear();
          return expire();
        }
      }
      if (unsent.get(qid) === body) unsent.delete(qid); // unless answered anew meanwhile
      if (attempt.state !== 'in_progress') continue;
      if (sequential()) await served().catch(() => {});
      renderNav();
      if (questions()[index]?.id === qid) {
        const hadFocus = stage.contains(document.activeElement);
        renderStage();
        if (hadFocus) focus(stage.querySelector('button.next'));
        if (q.result) announceResult(q);
        else announce(t('answer_saved'));
      }
    }
  }
  const online = () => {
    if (unsent.size) resend();
  };
  window.addEventListener('online', online);
  ctx.onLeave(() => {
    window.removeEventListener('online', online);
    clearTimeout(resendTimer);
  });

  /* the countdown: visible every second, announced only at thresholds */
  let timer = null;
  function stopTimer() {
    if (timer) clearInterval(timer);
    timer = null;
  }
  function startTimer() {
    stopTimer();
    if (attempt.state !== 'in_progress' || attempt.time_left_seconds == null) return;
    const endsAt = Date.now() + attempt.time_left_seconds * 1000;
    const clock = h('span', { class: 'timer-value', role: 'timer', 'aria-live': 'off' });
    timerBox.replaceChildren(h('span', { class: 'icon', 'aria-hidden': 'true' }, '⏱ '), `${t('time_left')}: `, clock);
    timerBox.hidden = false;
    let last = attempt.time_left_seconds;
    const tick = () => {
      const left = Math.max(0, Math.ceil((endsAt - Date.now()) / 1000));
      clock.textContent = formatClock(left);
      timerBox.classList.toggle('urgent', left <= 60);
      const crossed = THRESHOLDS.filter((s) => last > s && left <= s);
      if (crossed.length && left > 0) announce(thresholdText(Math.min(...crossed)));
      last = left;
      if (left <= 0) {
        stopTimer();
        expire();
      }
    };
    tick();
    timer = setInterval(tick, 1000);
  }
  ctx.onLeave(stopTimer);

  /// The deadline passed (by our clock or the server's): show what the server has.
  let expiring = false;
  async function expire(retries = 3) {
    if (expiring) return;
    expiring = true;
    let fresh;
    try {
      fresh = await api.get('/v1/attempts/{id}', { id: attempt.id });
    } finally {
      expiring = false;
    }
    if (fresh.state === 'in_progress') {
      // Our clock ran ahead of the server's: follow the server's (the page keeps its questions).
      attempt.time_left_seconds = fresh.time_left_seconds;
      attempt.deadline = fresh.deadline;
      if ((fresh.time_left_seconds ?? 0) > 0 || retries === 0) return startTimer();
      return setTimeout(() => expire(retries - 1), 1000);
    }
    attempt = fresh;
    timeUp = attempt.finish_reason === 'deadline';
    renderNav();
    renderStage();
    if (timeUp) announce(t('time_up'));
    focus(stage.querySelector('h2'));
  }

  renderMeta();
  renderNav();
  renderStage();
  startTimer();
  // Focus the question (or the score) rather than the page title: that is where the work is.
  stage.querySelector('h2')?.setAttribute('data-autofocus', '');
}
