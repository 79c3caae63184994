// @ts-check
// Live mode (#21, item 13): learners join at #/live with the code on the projector and answer
// each question against its timer; the instructor runs the session from
// #/teach/assignment/<id>/live. Both follow the session's Server-Sent Events. Every text from
// the API, display names included, goes in as text (dom.js builds text nodes, never markup).

import { api, ApiError, fill, stream } from './api.js';
import { h, loc, setChildren, focus, announce } from './dom.js';
import { t, num } from './i18n.js';
import { questionImages } from './learner.js';

/** @typedef {import('./app.js').Ctx} Ctx */

/**
 * Follows a session's events until the page is left: reconnects after a dropped stream (the
 * server starts each stream with where the session stands), stops when it ends.
 * @param {Ctx} ctx @param {string} session @param {(name: string, data: any) => void} onEvent
 * @param {(err: unknown) => void} onError
 */
function follow(ctx, session, onEvent, onError) {
  const abort = new AbortController();
  ctx.onLeave(() => abort.abort());
  let ended = false;
  (async () => {
    for (let delay = 1000; !abort.signal.aborted && !ended; delay = Math.min(delay * 2, 15000)) {
      try {
        await stream(
          fill('/v1/live/sessions/{id}/events', { id: session }),
          (name, data) => {
            if (name === 'ended') ended = true;
            delay = 1000;
            onEvent(name, data);
          },
          abort.signal,
        );
      } catch (err) {
        if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) {
          onError(err);
          return;
        }
      }
      if (!ended) await new Promise((r) => setTimeout(r, delay));
    }
  })();
}

/** A countdown to `seconds` from now, in `el`, until the page is left. @param {Ctx} ctx */
function countdown(ctx, el, seconds) {
  const until = Date.now() + seconds * 1000;
  const tick = () => {
    const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
    el.textContent = t('live_seconds_left', { n: left });
    if (left === 0) clearInterval(timer);
  };
  const timer = setInterval(tick, 250);
  ctx.onLeave(() => clearInterval(timer));
  tick();
  return () => clearInterval(timer);
}

/** Bars of a distribution: each row a label, a <progress> and the count. */
function bars(rows, total) {
  return h(
    'ul',
    { class: 'live-bars' },
    rows.map((r) =>
      h(
        'li',
        { class: ['live-bar', r.correct && 'is-right'] },
        h('span', { class: 'live-bar-label' }, r.label, r.correct ? h('span', { class: 'tag tag-right' }, ' ✓ ', t('right_answer')) : null),
        h('progress', { max: Math.max(total, 1), value: r.answers, 'aria-label': r.text }),
        h('span', { class: 'live-bar-count' }, num(r.answers)),
      ),
    ),
  );
}

/* ------------------------------------------------------------------ the learner's phone */

/** #/live: the code, then the session. @param {HTMLElement} view @param {Ctx} ctx */
export async function joinPage(view, ctx) {
  const error = h('p', { role: 'alert', class: 'error' });
  const input = h('input', {
    id: 'live-code',
    name: 'code',
    autocomplete: 'off',
    autocapitalize: 'characters',
    spellcheck: 'false',
    maxlength: 12,
    required: true,
    class: 'live-code-input',
    'aria-describedby': 'live-code-hint',
  });
  const form = h(
    'form',
    {
      class: 'form',
      onsubmit: async (e) => {
        e.preventDefault();
        error.replaceChildren();
        try {
          const joined = await api.post('/v1/live/join', {}, { code: input.value });
          phone(view, ctx, joined);
        } catch (err) {
          error.replaceChildren(ctx.errorText(err));
          focus(input);
        }
      },
    },
    h('div', { class: 'field' }, h('label', { for: 'live-code' }, t('live_code')), input, h('p', { id: 'live-code-hint', class: 'hint' }, t('live_code_hint'))),
    h('button', { type: 'submit' }, t('live_join')),
    error,
  );
  view.append(h('h1', {}, t('live_join_title')), form);
  input.setAttribute('data-autofocus', '');
}

/** The session on a phone. @param {HTMLElement} view @param {Ctx} ctx */
function phone(view, ctx, joined) {
  const status = h('p', { role: 'status', class: 'live-status' }, t('live_waiting'));
  const stage = h('div', { class: 'live-stage' });
  view.replaceChildren(h('h1', {}, t('live_title')), status, stage);
  focus(view.querySelector('h1'));
  /** The question shown, for the distribution's labels. */
  let shown = null;
  let stopTimer = () => {};
  // The open question's image, fetched with the token; released when the question goes.
  const images = questionImages();
  ctx.onLeave(() => images.release());
  follow(
    ctx,
    joined.session_id,
    (name, data) => {
      if (name === 'question') {
        shown = data.question;
        stopTimer();
        images.release();
        setChildren(stage, question(ctx, joined, data, status, (stop) => (stopTimer = stop), images));
        status.textContent = t('live_question_n', { n: data.index + 1, m: data.question_count });
      } else if (name === 'closed') {
        stopTimer();
        images.release();
        const labels = new Map((shown?.options || []).map((o) => [o.id, o.text]));
        const right = new Set(data.result?.correct_options || []);
        const rows = data.options.map((o) => ({ label: labels.get(o.id) ?? '?', text: labels.get(o.id) ?? '?', answers: o.answers, correct: right.has(o.id) }));
        const verdict = data.result ? h('p', { class: ['verdict', data.result.correct ? 'right' : 'wrong'] }, data.result.correct ? t('correct') : t('incorrect')) : null;
        const explanation = data.result ? h('p', {}, `${t('explanation')}: `, loc('span', data.result.explanation)) : null;
        setChildren(stage, 
          h('h2', {}, t('live_distribution')),
          data.answered ? null : h('p', {}, t('live_not_answered')),
          verdict,
          explanation,
          bars(rows, data.total),
          h('p', { class: 'meta' }, t('live_answers_n', { n: data.total })),
        );
        status.textContent = t('live_closed');
        announce(t('live_closed'), verdict ? verdict.textContent || '' : '');
      } else if (name === 'ended') {
        stopTimer();
        images.release();
        setChildren(stage, h('p', {}, h('a', { href: `#/attempt/${joined.attempt_id}` }, t('live_see_result'))));
        status.textContent = t('live_ended');
      }
    },
    (err) => setChildren(stage, h('p', { role: 'alert' }, ctx.errorText(err))),
  );
}

/**
 * The open question on a phone, with its image, its countdown and the answer form.
 * @param {ReturnType<typeof questionImages>} images
 */
function question(ctx, joined, data, status, setStop, images) {
  const q = data.question;
  const timer = h('p', { class: 'timer live-timer', 'aria-live': 'off' });
  setStop(countdown(ctx, timer, data.seconds_left));
  const error = h('p', { role: 'alert', class: 'error' });
  const received = () => {
    form.replaceChildren(h('p', { class: 'saved-note' }, t('live_received')));
    status.textContent = t('live_received');
  };
  const choice = q.kind === 'single' || q.kind === 'multiple' || q.kind === 'true_false';
  const type = q.kind === 'multiple' ? 'checkbox' : 'radio';
  const fields = choice
    ? h(
        'div',
        { class: 'options' },
        q.options.map((o) =>
          h(
            'div',
            { class: 'option' },
            h('input', { type, id: `live-${o.id}`, name: 'answer', value: o.id }),
            h('label', { for: `live-${o.id}` }, loc('span', o, { class: 'option-text' })),
          ),
        ),
      )
    : h('div', { class: 'field' }, h('label', { for: 'live-value' }, t('your_answer')), h('input', { id: 'live-value', name: 'value', type: q.kind === 'numeric' ? 'number' : 'text', step: 'any' }));
  const form = h(
    'form',
    {
      onsubmit: async (e) => {
        e.preventDefault();
        error.replaceChildren();
        /** @type {any} */
        let body;
        if (choice) {
          const selected = [...form.querySelectorAll('input[name="answer"]:checked')].map((i) => /** @type {HTMLInputElement} */ (i).value);
          if (!selected.length) return;
          body = { selected };
        } else {
          const value = /** @type {HTMLInputElement} */ (form.querySelector('#live-value')).value;
          body = q.kind === 'numeric' ? { number: Number(value) } : { text: value };
        }
        try {
          await api.put('/v1/live/sessions/{id}/responses/{question_id}', { id: joined.session_id, question_id: q.id }, body);
          received();
        } catch (err) {
          error.replaceChildren(ctx.errorText(err));
        }
      },
    },
    h('fieldset', {}, loc('legend', { text: q.prompt, lang: q.lang }, { class: 'prompt' }), images.render(q.image), fields),
    h('p', { class: 'actions' }, h('button', { type: 'submit' }, t('live_send'))),
  );
  if (data.answered) received();
  return h('div', {}, timer, form, error);
}

/* ------------------------------------------------------------------ the projector */

/** #/teach/assignment/<id>/live. @param {HTMLElement} view @param {Ctx} ctx @param {string} id */
export async function projectorPage(view, ctx, id) {
  const assignment = await api.get('/v1/assignments/{id}', { id });
  const leaderboard = h('input', { type: 'checkbox', id: 'live-leaderboard' });
  const error = h('p', { role: 'alert', class: 'error' });
  const start = h(
    'form',
    {
      class: 'form',
      onsubmit: async (e) => {
        e.preventDefault();
        error.replaceChildren();
        try {
          const session = await api.post('/v1/assignments/{id}/live', { id }, { leaderboard: leaderboard.checked });
          projector(view, ctx, assignment, session);
        } catch (err) {
          error.replaceChildren(ctx.errorText(err));
        }
      },
    },
    h('div', { class: 'option-row' }, leaderboard, ' ', h('label', { for: 'live-leaderboard' }, t('live_leaderboard'))),
    h('p', { class: 'actions' }, h('button', { type: 'submit' }, t('live_start'))),
    error,
  );
  view.append(
    h('p', { class: 'breadcrumb' }, h('a', { href: '#/teach' }, t('nav_teach'))),
    h('h1', {}, t('live_title'), ': ', h('bdi', {}, assignment.title)),
    h('p', { class: 'lede' }, t('live_intro')),
    start,
  );
}

/** The running session on the projector. */
function projector(view, ctx, assignment, session) {
  const joinedCount = h('p', { class: 'live-joined', 'aria-live': 'polite' }, t('live_joined_n', { n: 0 }));
  const recent = h('ul', { class: 'live-names', 'aria-label': t('live_recent') });
  const answered = h('p', { class: 'live-answered' });
  const stage = h('div', { class: 'live-stage' }, h('p', {}, t('live_waiting_start')));
  const timer = h('p', { class: 'timer live-timer', 'aria-live': 'off' });
  const error = h('p', { role: 'alert', class: 'error' });
  const seconds = h(
    'select',
    { id: 'live-seconds' },
    [10, 20, 30, 60, 120].map((n) => h('option', { value: n, selected: n === 30 }, t('live_seconds_n', { n }))),
  );
  let stopTimer = () => {};
  // The open question's image, fetched with the staff's token; released when it goes.
  const images = questionImages();
  ctx.onLeave(() => images.release());
  /** @param {'next' | 'close' | 'end'} what */
  const act = async (what) => {
    error.replaceChildren();
    try {
      const params = { id: session.id };
      if (what === 'next') await api.post('/v1/live/sessions/{id}/next', params, { seconds: Number(seconds.value) });
      else if (what === 'close') await api.post('/v1/live/sessions/{id}/close', params);
      else await api.post('/v1/live/sessions/{id}/end', params);
    } catch (err) {
      error.replaceChildren(ctx.errorText(err));
    }
  };
  const controls = h(
    'div',
    { class: 'actions' },
    h('label', { for: 'live-seconds' }, t('live_timer')),
    seconds,
    h('button', { type: 'button', onclick: () => act('next') }, t('live_next')),
    h('button', { type: 'button', class: 'secondary', onclick: () => act('close') }, t('live_close')),
    h('button', { type: 'button', class: 'secondary', onclick: () => act('end') }, t('live_end')),
  );
  const origin = `${location.origin}${location.pathname}#/live`;
  view.replaceChildren(
    h('h1', {}, t('live_title'), ': ', h('bdi', {}, assignment.title)),
    h('p', { class: 'live-join-at' }, t('live_join_at', { url: origin })),
    h('p', { class: 'live-code', 'aria-label': t('live_code_is', { code: session.code.split('').join(' ') }) }, session.code),
    joinedCount,
    recent,
    controls,
    error,
    timer,
    answered,
    stage,
  );
  focus(view.querySelector('h1'));
  follow(
    ctx,
    session.id,
    (name, data) => {
      if (name === 'tally') {
        joinedCount.textContent = t('live_joined_n', { n: data.joined });
        recent.replaceChildren(...data.recent.map((n) => h('li', {}, h('bdi', {}, n))));
        answered.textContent = data.index === null ? '' : t('live_answers_n', { n: data.answers });
      } else if (name === 'question') {
        stopTimer = countdown(ctx, timer, Math.max(0, (Date.parse(data.closes_at) - Date.now()) / 1000));
        images.release();
        setChildren(stage, 
          h('p', { class: 'question-count' }, t('live_question_n', { n: data.index + 1, m: data.question_count })),
          h('h2', { lang: data.lang, class: 'live-prompt' }, data.prompt),
          images.render(data.image),
          h('ol', { class: 'live-options' }, data.options.map((o) => h('li', { lang: data.lang }, o.text))),
        );
      } else if (name === 'closed') {
        stopTimer();
        timer.textContent = t('live_closed');
        // The room sees the projector: the right answer is marked only where the assignment's
        // feedback would show it to a learner now (the API gives its staff the key regardless).
        images.release();
        const reveal = assignment.policy.feedback === 'immediate';
        const rows = data.options.map((o) => ({ label: o.text, text: o.text, answers: o.answers, correct: reveal && o.correct }));
        setChildren(stage, 
          h('h2', {}, t('live_distribution')),
          rows.length ? bars(rows, data.total) : h('p', {}, t('live_right_wrong', { r: data.correct, w: data.wrong })),
          h('p', { class: 'meta' }, t('live_answers_n', { n: data.total })),
          data.leaders
            ? h('section', {}, h('h3', {}, t('live_leaders')), h('ol', { class: 'live-leaders' }, data.leaders.map((l) => h('li', {}, h('bdi', {}, l.display_name), ` · ${num(l.points)}`))))
            : null,
        );
      } else if (name === 'ended') {
        stopTimer();
        images.release();
        timer.textContent = '';
        controls.replaceChildren(h('a', { href: `#/teach/assignment/${assignment.id}`, class: 'button' }, t('analytics')));
        setChildren(stage, h('p', { role: 'status' }, t('live_ended')));
      }
    },
    (err) => error.replaceChildren(ctx.errorText(err)),
  );
}
