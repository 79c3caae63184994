// @ts-check
// quizd's web front-end: a single page with hash routes.
//   #/signin  #/signup  #/quizzes  #/attempt/<id>  #/lti/<code>  #/lti/deep-link/<id>
//   #/teach   #/teach/course/<id>  #/teach/course/<id>/gradebook  #/teach/assignment/<id>
//   #/teach/assignment/<id>/exam[/<learner id>]  #/teach/translations
//   #/live  #/teach/assignment/<id>/live

import { api, ApiError, setSession, signedIn, signOut, whenSignedOut } from './api.js';
import { h, focus, announce } from './dom.js';
import { local as localStore, session as tabStore, storageDenied } from './storage.js';
import { t, setUiLang, uiLang, UI_LANGS, nativeName } from './i18n.js';
import * as learner from './learner.js';
import * as teach from './teach.js';
import * as live from './live.js';
import { analyticsPage } from './charts.js';
import { deepLinkPage } from './picker.js';
import { ask } from './platform-storage.js';

const LANG_KEY = 'quizd.lang';

/** @typedef {import('./api.js').Schemas} Schemas */

/** An element the page is built around (index.html has it). @param {string} id */
function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`index.html has no #${id}`);
  return el;
}

/// What every page gets: the person, the language, navigation.
const ctx = {
  /** @type {Schemas['User'] | null} */
  me: null,
  /// The language quizzes are asked for (may be one the interface has no words for).
  lang: 'en',
  /// Locales some quiz exists in, for the language switcher.
  locales: new Set(UI_LANGS),
  /** @param {string} hash */
  navigate(hash) {
    if (location.hash === hash) render();
    else location.hash = hash;
  },
  /** @param {string} locale */
  async setLang(locale) {
    ctx.lang = locale;
    localStore.setItem(LANG_KEY, locale);
    setUiLang(locale);
    if (ctx.me) {
      // The preference follows the person to other devices; the page does not wait for it.
      api.patch('/v1/me', {}, { locale }).catch(() => {});
      ctx.me.locale = locale;
    }
    renderHeader();
    focus(document.getElementById('lang-select'));
    await render({ keepFocus: true });
  },
  /// A message for a failed request, in the interface language where the code is known.
  /** @param {unknown} err */
  errorText(err) {
    if (err instanceof ApiError) {
      const key = `err_${err.code}`;
      if (t(key) !== key) return h('span', {}, t(key));
      if (err.status === 0) return h('span', {}, t('err_network'));
      if (err.problem?.detail) return h('span', { lang: 'en' }, err.problem.detail); // problems are in English
    }
    console.error(err);
    return h('span', {}, t('err_generic'));
  },
  isStaff() {
    return ctx.me !== null && (ctx.me.role === 'instructor' || ctx.me.role === 'admin');
  },
  /** Registers what must stop when the page is left (timers). @param {() => void} fn */
  onLeave(fn) {
    cleanups.push(fn);
  },
  /** Renders the page the address names again. @param {{ keepFocus?: boolean }} [opts] */
  render(opts) {
    return render(opts);
  },
  async refreshMe() {
    ctx.me = signedIn() ? await api.get('/v1/me') : null;
    renderHeader();
  },
};

/// Keys that move a closed select's choice (and fire `change` at once in Chromium and on
/// Windows) without the person having confirmed anything yet.
const BROWSING_KEYS = new Set(['ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight', 'Home', 'End', 'PageUp', 'PageDown']);

/// The language switcher re-renders the whole interface, so it switches only on a confirmed
/// choice: a pick with the mouse or from the opened list, Enter, or leaving the select. Arrow
/// keys only browse (each one would otherwise re-render the page and move the reader's place).
function langSwitcher() {
  const langs = [...ctx.locales].sort((a, b) => (a === 'en' ? -1 : b === 'en' ? 1 : a.localeCompare(b)));
  let browsing = false;
  const confirm = () => {
    browsing = false;
    if (select.value !== ctx.lang) ctx.setLang(select.value);
  };
  const select = h(
    'select',
    {
      id: 'lang-select',
      onkeydown: (e) => {
        if (e.key === 'Enter') {
          e.preventDefault();
          confirm();
        } else if (BROWSING_KEYS.has(e.key) || (e.key.length === 1 && e.key !== ' ')) {
          browsing = true; // typing a letter jumps to a language too
        }
      },
      onchange: () => {
        if (!browsing) confirm();
      },
      onblur: () => {
        if (browsing) confirm();
      },
    },
    langs.map((l) => h('option', { value: l, lang: l, selected: l === ctx.lang }, nativeName(l))),
  );
  return h('div', { class: 'lang-switch' }, h('label', { for: 'lang-select' }, t('language')), select);
}

/// Where storage is denied (an LMS's iframe on another site), said once, until dismissed.
let storageNoticeDismissed = false;
function storageNotice() {
  if (!storageDenied() || storageNoticeDismissed) return null;
  const box = h(
    'div',
    { class: 'storage-notice', role: 'status' },
    h('p', {}, h('span', { class: 'icon', 'aria-hidden': 'true' }, 'ⓘ '), t('storage_denied')),
    h(
      'button',
      {
        type: 'button',
        class: 'link-button',
        onclick: () => {
          storageNoticeDismissed = true;
          box.remove();
          focus(document.getElementById('main'));
        },
      },
      t('dismiss'),
    ),
  );
  return box;
}

function renderHeader() {
  const header = byId('site-header');
  const links = [];
  if (ctx.me) {
    links.push(h('li', {}, h('a', { href: '#/quizzes', dataset: { nav: 'quizzes' } }, t('nav_quizzes'))));
    if (ctx.isStaff()) links.push(h('li', {}, h('a', { href: '#/teach', dataset: { nav: 'teach' } }, t('nav_teach'))));
  } else {
    links.push(h('li', {}, h('a', { href: '#/signin', dataset: { nav: 'signin' } }, t('sign_in'))));
    links.push(h('li', {}, h('a', { href: '#/signup', dataset: { nav: 'signup' } }, t('sign_up'))));
  }
  const who = ctx.me
    ? h(
        'div',
        { class: 'who' },
        h('span', { class: 'who-name' }, whoLabel()),
        h('button', { type: 'button', class: 'link-button', onclick: doSignOut }, t('sign_out')),
      )
    : null;
  header.replaceChildren(
    h(
      'div',
      { class: 'header-inner' },
      h('a', { class: 'brand', href: ctx.me ? '#/quizzes' : '#/signin' }, h('span', { 'aria-hidden': 'true', class: 'brand-mark' }, '?'), 'quizd'),
      h('nav', { 'aria-label': t('main_nav') }, h('ul', {}, links)),
      langSwitcher(),
      who,
    ),
    // (Native replaceChildren would write a null as the text "null".)
    ...[storageNotice()].filter(Boolean),
  );
  const skip = byId('skip-link');
  skip.textContent = t('skip');
  markCurrentNav();
}

/// "Signed in as {name}", the name (typed by its owner, language unknown) kept apart.
function whoLabel() {
  const [before, after] = t('signed_in_as', { name: '\u0000' }).split('\u0000');
  return [before, h('bdi', {}, ctx.me?.display_name), after];
}

function markCurrentNav() {
  const section = (location.hash.split('/')[1] || '').replace(/^attempt$/, 'quizzes');
  for (const a of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll('[data-nav]'))) {
    if (a.dataset.nav === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

async function doSignOut() {
  await signOut();
  ctx.me = null;
  renderHeader();
  ctx.navigate('#/signin');
}

/// An LMS launch lands here with a one-time code: trade it for a session, then go where the
/// launch leads (a learner into the assignment's attempt, an instructor to its analytics or,
/// for Deep Linking, to the content picker).
async function ltiLaunchPage(view, ctx, code, query) {
  // The launch bound the code to this browser with an HttpOnly cookie; this same-origin
  // fetch sends it (fetch's default `credentials: 'same-origin'`). A launch proved through the
  // platform's storage (third-party cookies blocked in its iframe) set no cookie: the secret
  // is read back from the platform's storage frame, which only this browser's LMS page holds.
  const storage = new URLSearchParams(query || '');
  const target = storage.get('lti_storage_target');
  let storageSecret;
  if (target) {
    try {
      storageSecret = await ask(target, storage.get('origin') || '', { subject: 'lti.get_data', key: `state_${storage.get('state') || ''}` });
    } catch {
      view.append(h('h1', {}, t('lti_storage_title')), h('p', { role: 'alert' }, t('lti_storage_failed')), h('p', {}, t('lti_storage_failed_what')));
      return;
    }
  }
  const session = await api.post('/v1/lti/exchange', {}, storageSecret ? { code, storage_secret: storageSecret } : { code });
  setSession(session);
  ctx.me = await api.get('/v1/me');
  if (ctx.me.locale) {
    ctx.lang = ctx.me.locale;
    setUiLang(ctx.lang);
  }
  renderHeader();
  const to = session.destination || {};
  if (to.kind === 'attempt' && to.assignment_id) {
    location.replace(`#/attempt/${await launchedAttempt(to.assignment_id)}`);
  } else if (to.kind === 'analytics' && to.assignment_id) {
    location.replace(`#/teach/assignment/${to.assignment_id}`);
  } else if (to.kind === 'deep_link' && to.deep_link_id) {
    location.replace(`#/lti/deep-link/${to.deep_link_id}`);
  } else {
    location.replace('#/quizzes');
  }
  view.append(h('p', { role: 'status' }, t('loading')));
}

/// Where a learner's launch of an assignment leads: the attempt in progress; else, once one is
/// finished, the last one (its result and review, which offers another attempt only where the
/// policy leaves one); else a new attempt.
/** @param {string} assignmentId */
async function launchedAttempt(assignmentId) {
  const mine = (await api.list('/v1/me/attempts')).items.filter((a) => a.assignment_id === assignmentId);
  const open = mine.find((a) => a.state === 'in_progress');
  if (open) return open.id;
  const last = mine.sort((a, b) => b.started_at.localeCompare(a.started_at))[0];
  if (last) return last.id;
  return (await api.post('/v1/assignments/{id}/attempts', { id: assignmentId })).id;
}

/**
 * A route: its pattern, its page (called with the pattern's groups), and whether it needs a
 * session (`null`: either way; `false`: only signed out).
 * @typedef {[RegExp, (view: HTMLElement, c: typeof ctx, ...groups: string[]) => Promise<void>, boolean | null]} Route
 */
/** @type {Route[]} */
const routes = [
  [/^#\/lti\/([A-Za-z0-9_-]{8,200})(?:\?([^#]{0,2000}))?$/, ltiLaunchPage, null],
  [/^#\/lti\/deep-link\/([0-9a-f-]{36})$/, deepLinkPage, true],
  [/^#\/signin$/, learner.signInPage, false],
  [/^#\/signup$/, learner.signUpPage, false],
  [/^#\/quizzes$/, learner.cataloguePage, true],
  [/^#\/attempt\/([0-9a-f-]{36})$/, learner.attemptPage, true],
  [/^#\/teach$/, teach.coursesPage, true],
  [/^#\/teach\/translations$/, teach.translationsPage, true],
  [/^#\/teach\/course\/([0-9a-f-]{36})$/, teach.coursePage, true],
  [/^#\/teach\/course\/([0-9a-f-]{36})\/gradebook$/, teach.gradebookPage, true],
  [/^#\/teach\/assignment\/([0-9a-f-]{36})$/, analyticsPage, true],
  [/^#\/teach\/assignment\/([0-9a-f-]{36})\/exam(?:\/([0-9a-f-]{36}))?$/, teach.examPage, true],
  [/^#\/live$/, live.joinPage, true],
  [/^#\/teach\/assignment\/([0-9a-f-]{36})\/live$/, live.projectorPage, true],
];

/// Pages register what must stop when they are left (timers).
/** @type {(() => void)[]} */
let cleanups = [];

let generation = 0;
async function render({ keepFocus = false } = {}) {
  for (const fn of cleanups.splice(0)) fn();
  const gen = ++generation;
  const hash = location.hash;
  if (!hash.startsWith('#/')) {
    location.replace(signedIn() ? '#/quizzes' : '#/signin');
    return;
  }
  markCurrentNav();
  const main = byId('main');
  const match = routes.map(([re, page, auth]) => /** @type {const} */ ([hash.match(re), page, auth])).find(([m]) => m);
  if (!match || !match[0]) {
    main.replaceChildren(h('h1', {}, t('err_not_found')), h('p', {}, h('a', { href: '#/quizzes' }, t('back_to_quizzes'))));
    document.title = `${t('err_not_found')} · quizd`;
    if (!keepFocus) focus(main.querySelector('h1'));
    return;
  }
  const [m, page, needsAuth] = match;
  if (needsAuth && !signedIn()) {
    tabStore.setItem('quizd.after', hash);
    location.replace('#/signin');
    return;
  }
  if (needsAuth === false && signedIn() && ctx.me) {
    location.replace('#/quizzes');
    return;
  }
  const view = h('div', { class: 'view' });
  main.setAttribute('aria-busy', 'true');
  try {
    await page(view, ctx, ...m.slice(1));
  } catch (err) {
    view.replaceChildren(h('h1', {}, t('err_generic')), h('p', { role: 'alert' }, ctx.errorText(err)));
  }
  if (gen !== generation) return; // a later navigation won
  main.replaceChildren(view);
  main.removeAttribute('aria-busy');
  const h1 = main.querySelector('h1');
  document.title = h1 ? `${h1.textContent} · quizd` : 'quizd';
  // A new page: move focus to its heading, as a page load would put the reader at the top.
  if (!keepFocus) focus(main.querySelector('[data-autofocus]') || h1);
}

async function start() {
  byId('skip-link').addEventListener('click', (e) => {
    e.preventDefault();
    focus(byId('main'));
  });
  whenSignedOut(() => {
    ctx.me = null;
    renderHeader();
    tabStore.setItem('quizd.notice', 'session_ended');
    // Signing in again comes back here (mid-attempt: to the attempt), as a page that needs a
    // session does when opened signed out.
    if (routes.some(([re, , auth]) => auth && re.test(location.hash))) tabStore.setItem('quizd.after', location.hash);
    location.hash = '#/signin';
  });
  const stored = localStore.getItem(LANG_KEY);
  const browser = (navigator.languages || [navigator.language]).map((l) => l.split('-')[0]).find((l) => UI_LANGS.includes(l));
  ctx.lang = stored || browser || 'en';
  try {
    if (signedIn()) {
      ctx.me = await api.get('/v1/me');
      // Signed in, the person's own preference (it follows them between devices) wins.
      if (ctx.me.locale) ctx.lang = ctx.me.locale;
    }
  } catch {
    ctx.me = null;
  }
  setUiLang(ctx.lang);
  try {
    const catalogue = await api.list('/v1/quizzes');
    for (const q of catalogue.items) for (const l of q.locales) ctx.locales.add(l.locale);
  } catch {
    /* the switcher keeps the interface languages */
  }
  ctx.locales.add(ctx.lang);
  renderHeader();
  window.addEventListener('hashchange', () => render());
  await render({ keepFocus: true });
}

/** @typedef {typeof ctx} Ctx what every page gets */

export { ctx, announce };
start();
