// @ts-check
// The Deep Linking content picker: a teacher's "Select content" launch from an LMS lands here
// (#/lti/deep-link/<id>). The quizzes they may place (public ones and their own), each with
// its languages, points and a preview of its questions as a learner sees them (no key); one
// chosen, or several where the platform accepts several; then the signed response goes back to
// the platform as a real form post. Cancel sends an empty response.

import { api } from './api.js';
import { h, loc, focus, newId, announce } from './dom.js';
import { t, num, nativeName } from './i18n.js';

/** @typedef {import('./api.js').Schemas} Schemas */
/** @typedef {import('./app.js').Ctx} Ctx */

/**
 * Goes back to the platform with a signed response: a form posted to quizd's return page
 * (the front-end's policy lets its forms post to quizd alone), which posts it on to the
 * platform's `deep_link_return_url` as the field `JWT`.
 * @param {string} id @param {string} jwt
 */
function returnToPlatform(id, jwt) {
  const form = h(
    'form',
    { method: 'post', action: `/v1/lti/deep-link/${encodeURIComponent(id)}/return`, hidden: true },
    h('input', { type: 'hidden', name: 'JWT', value: jwt }),
  );
  document.body.append(form);
  form.submit();
}

/**
 * A quiz's questions as a learner would read them before starting (the key is not in them).
 * @param {Ctx} ctx @param {Schemas['QuizSummary']} q @param {HTMLElement} place
 */
async function preview(ctx, q, place) {
  place.replaceChildren(h('p', { role: 'status' }, t('loading')));
  let view;
  try {
    view = await api.get('/v1/quizzes/{slug}', { slug: q.slug, lang: ctx.lang });
  } catch (err) {
    place.replaceChildren(h('p', { role: 'alert' }, ctx.errorText(err)));
    return;
  }
  place.replaceChildren(
    h('p', { class: 'hint' }, t('pick_preview_note')),
    h(
      'ol',
      { class: 'preview-list' },
      view.questions.map((question) =>
        h(
          'li',
          { class: 'preview-item', dataset: { key: question.key } },
          loc('p', { text: question.prompt, lang: question.lang }, { class: 'prompt' }),
          question.options.length ? h('ul', { class: 'preview-options' }, question.options.map((o) => loc('li', { text: o.text, lang: o.lang }))) : null,
          h('p', { class: 'meta' }, t('points_n', { n: question.points })),
        ),
      ),
    ),
    // (Native replaceChildren would write a null as the text "null".)
    ...(view.questions.length < q.question_count ? [h('p', { class: 'hint' }, t('pick_preview_banks', { n: q.question_count - view.questions.length }))] : []),
  );
}

/**
 * @param {HTMLElement} view @param {Ctx} ctx @param {string} id the Deep Linking request
 */
export async function deepLinkPage(view, ctx, id) {
  const [request, catalogue] = await Promise.all([api.get('/v1/lti/deep-link/{id}', { id }), api.list('/v1/quizzes', { lang: ctx.lang })]);
  view.append(h('h1', {}, t('pick_title')));
  if (request.answered || Date.parse(request.expires_at) <= Date.now()) {
    view.append(h('p', { class: 'notice' }, t('pick_closed')));
    return;
  }
  const multiple = request.accept_multiple;
  view.append(h('p', { class: 'lede' }, t(multiple ? 'pick_intro_multiple' : 'pick_intro_one')));
  // Public quizzes and the caller's own: the catalogue lists exactly those for a signed-in
  // instructor, and the API refuses any other.
  const quizzes = catalogue.items;
  const error = h('p', { class: 'inline-error', role: 'alert' });
  const legendId = newId('pick');
  const cards = quizzes.map((q) => {
    const inputId = newId('pick-quiz');
    const titleId = newId('pick-title');
    const previewBox = h('div', { class: 'preview', id: newId('preview'), hidden: true });
    const toggle = h(
      'button',
      {
        type: 'button',
        class: 'link-button preview-toggle',
        'aria-expanded': 'false',
        'aria-controls': previewBox.id,
        'aria-describedby': titleId,
        onclick: async () => {
          const open = toggle.getAttribute('aria-expanded') !== 'true';
          toggle.setAttribute('aria-expanded', String(open));
          toggle.textContent = t(open ? 'pick_hide_preview' : 'pick_preview');
          previewBox.hidden = !open;
          if (open && !previewBox.childElementCount) await preview(ctx, q, previewBox);
        },
      },
      t('pick_preview'),
    );
    return h(
      'li',
      { class: 'card quiz-card pick-card', dataset: { slug: q.slug } },
      h(
        'div',
        { class: 'pick-choice' },
        h('input', { type: multiple ? 'checkbox' : 'radio', name: 'quiz', value: q.slug, id: inputId, 'aria-describedby': titleId }),
        h('label', { for: inputId }, loc('span', q.title, { class: 'quiz-title', id: titleId })),
      ),
      q.visibility === 'private' ? h('p', { class: 'meta' }, t('pick_private')) : null,
      h('p', { class: 'meta pick-points' }, t('questions_n', { n: q.question_count }), ' · ', t('points_n', { n: q.max_points })),
      h(
        'p',
        { class: 'meta pick-langs' },
        `${t('available_in')} `,
        q.locales.map((l, i) => [i ? ', ' : '', h('span', { lang: l.locale }, nativeName(l.locale))]),
      ),
      toggle,
      previewBox,
    );
  });
  const place = h('button', { type: 'submit', class: 'primary' }, t(multiple ? 'pick_place_multiple' : 'pick_place_one'));
  const cancel = h('button', { type: 'button', class: 'pick-cancel' }, t('pick_cancel'));
  /** @param {string[]} slugs */
  async function answer(slugs) {
    place.disabled = true;
    cancel.disabled = true;
    error.replaceChildren();
    try {
      const out = await api.post('/v1/lti/deep-link', {}, { deep_link_id: id, items: slugs.map((quiz) => ({ quiz })) });
      announce(t('pick_returning'));
      returnToPlatform(id, out.jwt);
    } catch (err) {
      error.replaceChildren(ctx.errorText(err));
      place.disabled = false;
      cancel.disabled = false;
      focus(error);
    }
  }
  cancel.addEventListener('click', () => answer([]));
  const form = h(
    'form',
    { class: 'pick-form' },
    h(
      'fieldset',
      {},
      h('legend', { id: legendId, class: 'visually-hidden' }, t('pick_title')),
      quizzes.length ? h('ul', { class: 'cards' }, cards) : h('p', {}, t('pick_none')),
    ),
    error,
    h('div', { class: 'actions' }, place, cancel),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const chosen = [.../** @type {NodeListOf<HTMLInputElement>} */ (form.querySelectorAll('input[name=quiz]:checked'))].map((i) => i.value);
    if (!chosen.length) {
      error.replaceChildren(t('pick_choose_first'));
      focus(error);
      return;
    }
    answer(chosen);
  });
  view.append(form);
}
