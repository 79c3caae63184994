// quizd's web front-end in a real browser: Debian's headless Chromium driven by playwright-core.
//
//   cd tests/browser && npm ci && npm test        (after `cargo build` or `cargo test`)
//
// Starts `target/debug/quizd serve` (under $CARGO_TARGET_DIR when set; $QUIZD_BIN wins) on a free loopback port with a private PostgreSQL in a
// temporary directory (or on $DATABASE_URL), makes an instructor with `quizd user create`, and
// drives the pages as a Bengali learner and as an instructor: every answer's explanation shown
// and announced, `lang` on every text, a keyboard-only pass, the countdown's announcements,
// the analytics charts, axe-core on each main page, and no request leaving the machine.
// Screenshots go to target/browser-screenshots/, or to $QUIZD_SCREENSHOTS
// (`npm run screenshots` refreshes docs/screenshots/).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);
const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = process.env.QUIZD_BIN || path.join(process.env.CARGO_TARGET_DIR ? path.resolve(ROOT, process.env.CARGO_TARGET_DIR) : path.join(ROOT, 'target'), 'debug/quizd');
const SHOTS = path.resolve(process.env.QUIZD_SCREENSHOTS || path.join(ROOT, 'target/browser-screenshots'));
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const RUN = Date.now().toString(36);
const PASSWORD = 'correct horse battery staple';
const TEACHER = { email: `teacher-${RUN}@example.org`, name: 'Ada Teacher' };
const OPERATOR = { email: `operator-${RUN}@example.org`, name: 'Ops Admin' };
const LEARNER = { email: `mina-${RUN}@example.org`, name: 'মিনা রহমান' };

// The seed quiz's questions 3, 4, 6, 7 and 8 were never translated into Bengali.
const UNTRANSLATED = new Set([3, 4, 6, 7, 8]);

let tmp;
let server;
let base;
/// The LMS of the LTI test, while it runs: `{ child, url }`.
let lms = null;
/// The LMS's port, chosen before quizd starts: quizd lets the LMS's pages on
/// `http://localhost:<port>` (another site than quizd's 127.0.0.1) frame it.
let LMS_PORT = 0;

/// A port free on loopback now.
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address());
      srv.close(() => resolve(port));
    });
  });
}
/// What quizd wrote to its log (the mail it would have sent, with its links, among it).
let serverLog = '';
let context;
const external = [];
const problems = [];
const failed = [];

/* ------------------------------------------------------------------ the server */

function quizdArgs() {
  return process.env.DATABASE_URL ? [] : ['--data-dir', path.join(tmp, 'data')];
}

function startServer() {
  return new Promise((resolve, reject) => {
    // The set-up signs up some 60 learners from this one address: a large class behind one NAT.
    const child = spawn(BIN, ['serve', '--bind', '127.0.0.1:0', '--content-dir', path.join(ROOT, 'content'), '--workers', '2', '--signup-burst', '100', '--frame-ancestor', `http://localhost:${LMS_PORT}`, ...quizdArgs()], {
      cwd: tmp,
      // Without --smtp-url quizd logs each message's link (at info): the tests follow them.
      env: { ...process.env, RUST_LOG: process.env.RUST_LOG || 'warn,quizd::mail=info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`quizd did not start in 180 s:\n${out}\n${err}`)), 180_000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/quizd listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1] });
      }
    });
    child.stderr.on('data', (d) => {
      err += d;
      if (err.length > 100_000) err = err.slice(-50_000);
      serverLog += d;
      if (serverLog.length > 2_000_000) serverLog = serverLog.slice(-1_000_000);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`quizd exited with ${code}:\n${out}\n${err}`));
    });
  });
}

function stopServer() {
  if (!server || server.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => server.kill('SIGKILL'), 20_000);
    server.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    server.kill('SIGTERM');
  });
}

/// JSON over HTTP, for the set-up the browser does not need to show.
async function call(method, route, body, token) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(base + route, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = res.status === 204 ? null : await res.json();
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(data)}`);
  return data;
}

/// The verification link quizd logged for `email` (it runs without SMTP), waiting for it.
async function loggedVerificationLink(email) {
  const escaped = email.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(`to=${escaped} .*?link=(\\S+/v1/email-verifications/[0-9a-f]{64})`, 'gi');
  for (let i = 0; i < 100; i += 1) {
    const all = [...serverLog.matchAll(re)];
    if (all.length) return all[all.length - 1][1];
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no verification link for ${email} in quizd's log`);
}

/// Confirms `email` as its owner would: the mailed link's page, then its button (a POST).
async function verifyAddress(email) {
  const link = await loggedVerificationLink(email);
  const page = await fetch(link);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /Confirm my address/);
  const res = await fetch(link, { method: 'POST', headers: { accept: 'application/json' } });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return JSON.parse(text);
}

/* ------------------------------------------------------------------ the browser */

async function newPage() {
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400) failed.push(`${r.status()} ${r.request().method()} ${r.url().replace(base, '')}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  return page;
}

async function shot(page, name, options = {}) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), ...options });
}

/// axe-core on the page as it is: no serious or critical violation.
async function checkA11y(page, where) {
  // The page's CSP refuses injected <script> tags (addScriptTag); axe comes in as an init script.
  assert.ok(await page.evaluate(() => 'axe' in window), 'axe-core is loaded');
  const results = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  const report = bad.map((v) => `${v.id} (${v.impact}): ${v.help}\n${v.nodes.map((n) => `   ${n.target.join(' ')}: ${n.failureSummary}`).join('\n')}`);
  assert.deepEqual(report, [], `axe on ${where}`);
  return results.violations.length;
}

/// Presses Tab until `predicate(document.activeElement)` holds (keyboard only).
async function tabTo(page, predicate, what, limit = 60) {
  for (let i = 0; i < limit; i += 1) {
    await page.keyboard.press('Tab');
    if (await page.evaluate(predicate)) return;
  }
  assert.fail(`Tab never reached ${what}`);
}

const announcer = (page) => page.locator('#announcer');

async function waitAnnounced(page, text) {
  await page.waitForFunction((t) => document.getElementById('announcer').textContent.includes(t), text, { timeout: 5000 });
}

async function signIn(page, email) {
  await page.goto(`${base}/#/signin`);
  await page.locator('#f-email').fill(email);
  await page.locator('#f-password').fill(PASSWORD);
  await page.locator('form button[type=submit]').click();
  await page.waitForURL(/#\/quizzes$/);
}

/// No literal `null`, `undefined` or `[object Object]` reached the page's text.
const JUNK = /\bnull\b|\bundefined\b|\[object Object\]/;
async function assertNoJunkText(page, where) {
  const text = await page.evaluate(() => document.body.innerText);
  const m = text.match(JUNK);
  assert.equal(m, null, `literal ${m?.[0]} on ${where}: …${m ? text.slice(Math.max(0, m.index - 80), m.index + 30) : ''}…`);
}

/// A learner of their own (registered over the API, in English), so a test's attempts are its own.
let learners = 0;
async function newLearner() {
  learners += 1;
  const email = `own-${learners}-${RUN}@example.org`;
  const tokens = await call('POST', '/v1/auth/register', { email, display_name: `Own Learner ${learners}`, password: PASSWORD, locale: 'en' });
  const me = await call('GET', '/v1/me', undefined, tokens.access_token);
  return { email, token: tokens.access_token, id: me.id, name: me.display_name };
}

/// What a browser blocking third-party storage does (an LMS iframe on another site): touching
/// either store throws, so the page keeps its tokens in memory.
async function denyStorage(page) {
  await page.addInitScript(() => {
    for (const name of ['localStorage', 'sessionStorage']) {
      Object.defineProperty(window, name, {
        configurable: true,
        get() {
          throw new DOMException('Access is denied for this document.', 'SecurityError');
        },
      });
    }
  });
}

/// The attempt the page shows, as the API has it.
async function shownAttempt(page, token) {
  const id = page.url().split('/').pop();
  return call('GET', `/v1/attempts/${id}`, undefined, token);
}

/* ------------------------------------------------------------------ the answer key */

let key;
/// The right option ids of a served question, from the quiz content (staff may read it).
function rightOptions(question) {
  const q = key.questions.find((k) => k.prompt[question.lang] === question.prompt);
  assert.ok(q, `no question with prompt ${question.prompt}`);
  return question.options.filter((o) => q.options.some((c) => c.correct && c.text[o.lang] === o.text)).map((o) => o.id);
}

/* ------------------------------------------------------------------ set-up */

before(async () => {
  assert.ok(existsSync(BIN), `${BIN} is missing: run \`cargo build\` first (or set QUIZD_BIN)`);
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium fonts-noto-core (or set CHROMIUM)`);
  tmp = mkdtempSync(path.join(tmpdir(), 'quizd-browser-'));
  chmodSync(tmp, 0o755); // run as root, the private PostgreSQL runs as `postgres` and must reach it
  // An instructor, and an admin who reads the seed quiz's key for the tests (only a quiz's
  // authors, admins and the staff of a course it is assigned in may), made as an operator
  // would (password on standard input).
  for (const [who, role] of [[TEACHER, 'instructor'], [OPERATOR, 'admin']]) {
    const made = spawnSync(BIN, ['user', 'create', '--email', who.email, '--role', role, '--display-name', who.name, ...quizdArgs()], {
      cwd: tmp,
      input: `${PASSWORD}\n`,
      env: { ...process.env, RUST_LOG: 'warn' },
      encoding: 'utf8',
      timeout: 180_000,
    });
    assert.equal(made.status, 0, `quizd user create failed:\n${made.stdout}\n${made.stderr}`);
  }
  LMS_PORT = await freePort();
  const started = await startServer();
  server = started.child;
  base = started.url;
  process.on('exit', () => server?.kill('SIGTERM'));

  context = await chromium.launchPersistentContext(path.join(tmp, 'chromium-profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    viewport: { width: 1280, height: 900 },
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  context.setDefaultTimeout(15_000);
  await context.addInitScript({ path: require.resolve('axe-core') });
  context.on('request', (r) => {
    const url = r.url();
    // (The LMS of the LTI test runs on loopback too.)
    const fromLms = lms && (url.startsWith(lms.url) || url.startsWith(`http://localhost:${LMS_PORT}/`));
    if (!url.startsWith(base) && !fromLms && !url.startsWith('data:') && !url.startsWith('blob:')) external.push(url);
  });

  const operator = await call('POST', '/v1/auth/login', { email: OPERATOR.email, password: PASSWORD });
  const quiz = await call('GET', '/v1/quizzes/data-parallelism');
  key = await call('GET', `/v1/quizzes/data-parallelism/versions/${quiz.version}`, undefined, operator.access_token);
});

after(async () => {
  lms?.child.stdin.end();
  await context?.close().catch(() => {});
  await stopServer();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/* ------------------------------------------------------------------ the tests */

test('the interface has every string in English, Bengali and Indonesian', async () => {
  const { DICTIONARIES } = await import(pathToFileURL(path.join(ROOT, 'web/assets/i18n.js')));
  const keys = Object.keys(DICTIONARIES.en).sort();
  for (const [lang, dict] of Object.entries(DICTIONARIES)) {
    assert.deepEqual(Object.keys(dict).sort(), keys, `${lang} has the same keys as en`);
    for (const [k, v] of Object.entries(dict)) assert.ok(v.trim(), `${lang}.${k} is empty`);
  }
});

test('quizd serves the app with a strict policy and the API keeps its 404s', async () => {
  const res = await fetch(`${base}/`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/html/);
  assert.match(res.headers.get('content-security-policy'), /default-src 'self'; script-src 'self'/);
  const js = await fetch(`${base}/assets/app.js`);
  assert.match(js.headers.get('content-type'), /^text\/javascript/);
  const missing = await fetch(`${base}/assets/nothing.js`);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).code, 'asset_not_found');
  const unknown = await fetch(`${base}/v1/nothing-here`);
  assert.equal((await unknown.json()).code, 'not_found');
});

let learnerPage;

test('a learner switches to Bengali, signs up, and sees the catalogue in Bengali with each language’s coverage', async () => {
  const page = (learnerPage = await newPage());
  await page.goto(`${base}/#/signup`);
  await checkA11y(page, 'the sign-up page');
  await page.selectOption('#lang-select', 'bn');
  await page.waitForFunction(() => document.documentElement.lang === 'bn');
  assert.equal(await page.locator('h1').textContent(), 'অ্যাকাউন্ট তৈরি করুন');
  await page.locator('#f-display_name').fill(LEARNER.name);
  await page.locator('#f-email').fill(LEARNER.email);
  await page.locator('#f-password').fill(PASSWORD);
  assert.equal(await page.locator('#f-locale').inputValue(), 'bn');
  await page.locator('form button[type=submit]').click();
  await page.waitForURL(/#\/quizzes$/);
  await page.locator('.quiz-card').first().waitFor();

  assert.equal(await page.evaluate(() => document.documentElement.lang), 'bn');
  assert.equal(await page.locator('h1').textContent(), 'কুইজ');
  // Her address is not confirmed yet: the page says what waits on it, and sends a new link.
  const verify = page.locator('.verify-notice');
  assert.equal(await verify.locator('h2').textContent(), 'আপনার ইমেইল ঠিকানা নিশ্চিত করুন');
  await verify.locator('button').click();
  await verify.locator('[role=status]', { hasText: LEARNER.email }).waitFor();
  assert.equal((await loggedVerificationLink(LEARNER.email)).length > 0, true);
  const seed = page.locator('.quiz-card[data-slug="data-parallelism"]');
  const title = seed.locator('.quiz-title');
  assert.equal(await title.getAttribute('lang'), 'bn');
  assert.equal(await title.textContent(), 'ডেটা সমান্তরাল কুইজ');
  // The sampler has no Bengali: its title says it is English.
  assert.equal(await page.locator('.quiz-card[data-slug="kinds-sampler"] .quiz-title').getAttribute('lang'), 'en');
  // Every language with its coverage, each name in its own language.
  const langs = await seed.locator('.coverage li').evaluateAll((lis) =>
    lis.map((li) => [li.querySelector('.coverage-name').lang, li.querySelector('.coverage-pct').textContent]),
  );
  assert.deepEqual(
    langs.map(([l]) => l),
    ['en', 'bn', 'id'],
  );
  assert.equal(langs[0][1], '১০০% অনূদিত');
  assert.match(langs[1][1], /^[০-৯]+% অনূদিত$/);
  // Bengali text renders with a Bengali font.
  const fontOk = await page.evaluate(() => document.fonts.check('16px "Noto Sans Bengali"', 'ডেটা'));
  assert.ok(fontOk, 'Noto Sans Bengali is available (Debian: fonts-noto-core)');
  await checkA11y(page, 'the catalogue in Bengali');
  await shot(page, 'catalogue-bn');
});

test('the learner takes the seed quiz in Bengali: each answer judged at once with its explanation, shown and announced, each text in its own language', async () => {
  const page = learnerPage;
  await page.locator('.quiz-card[data-slug="data-parallelism"] button.primary').click();
  await page.waitForURL(/#\/attempt\//);
  const id = page.url().split('/').pop();
  const attempt = await page.evaluate(async (aid) => {
    const s = JSON.parse(sessionStorage.getItem('quizd.session'));
    const res = await fetch(`/v1/attempts/${aid}`, { headers: { authorization: `Bearer ${s.access}` } });
    return res.json();
  }, id);
  assert.equal(attempt.locale, 'bn');
  assert.equal(await page.locator('h1').getAttribute('lang'), 'bn');

  for (let i = 0; i < 8; i += 1) {
    const n = i + 1;
    const q = attempt.questions[i];
    const form = page.locator(`form.question[data-question="${q.id}"]`);
    await form.waitFor();
    const expected = UNTRANSLATED.has(n) ? 'en' : 'bn';
    assert.equal(await form.locator('legend').getAttribute('lang'), expected, `question ${n}'s prompt`);
    const optionLangs = await form.locator('.option-text').evaluateAll((els) => els.map((e) => e.lang));
    assert.deepEqual(
      optionLangs,
      q.options.map((o) => o.lang),
      `question ${n}'s options carry the API's lang`,
    );
    if (UNTRANSLATED.has(n)) assert.ok(optionLangs.every((l) => l === 'en'));
    // Right on odd questions, wrong on even ones.
    const right = rightOptions(q);
    const pick = n % 2 === 1 ? right[0] : q.options.find((o) => !right.includes(o.id)).id;
    await form.locator(`label[for="opt-${q.id}-${pick}"]`).click();
    await form.locator('button[type=submit]').click();

    const feedback = form.locator('.feedback');
    await feedback.waitFor();
    const verdict = await feedback.locator('.verdict strong').textContent();
    assert.equal(verdict, n % 2 === 1 ? 'সঠিক' : 'ভুল', `question ${n}'s verdict`);
    assert.equal(await feedback.locator('.verdict .icon').textContent(), n % 2 === 1 ? '✓' : '✗', 'an icon, not colour alone');
    const explanation = feedback.locator('.explanation-text');
    assert.equal(await explanation.getAttribute('lang'), expected, `question ${n}'s explanation`);
    const text = await explanation.textContent();
    assert.ok(text.length > 40);
    // The right option is marked in words, and the explanation is announced.
    assert.equal(await form.locator('.option.is-right .tag-right').count(), 1);
    await waitAnnounced(page, text);
    const said = await announcer(page).textContent();
    assert.ok(said.startsWith(verdict), `announced: ${said}`);
    assert.equal(await announcer(page).locator(`span[lang="${expected}"]`).last().textContent(), text);
    if (n % 2 === 0) {
      assert.equal(await feedback.locator('.about p').getAttribute('lang'), expected);
    }
    if (n === 1) await checkA11y(page, 'a question with its feedback');
    if (n === 2) await shot(page, 'question-feedback-bn', { fullPage: true });
    // Focus went to "next": Enter continues.
    assert.ok(await page.evaluate(() => document.activeElement.classList.contains('next')));
    await page.locator('button.next').click();
  }

  await page.locator('section.finish').waitFor();
  assert.match(await page.locator('section.finish').textContent(), /৮টি প্রশ্নের মধ্যে আপনি ৮টির উত্তর দিয়েছেন/);
  await page.locator('section.finish button.primary').click();
  await page.locator('.result .score-big').waitFor();
  assert.equal(await page.locator('.result .score-big').textContent(), '৫০%');
  assert.equal(await page.locator('.result .score-line').textContent(), '৮ পয়েন্টের মধ্যে ৪');
  assert.equal(await page.locator('.review-item').count(), 8);
  assert.equal(await page.locator('.review-item .explanation-text').count(), 8);
  const reviewLangs = await page.locator('.review-item .prompt').evaluateAll((els) => els.map((e) => e.lang));
  assert.deepEqual(reviewLangs, ['bn', 'bn', 'en', 'en', 'bn', 'en', 'en', 'en']);
  await waitAnnounced(page, '৫০%');
  await checkA11y(page, 'the result and review');
  await shot(page, 'result-bn');
});

test('an unfinished attempt resumes where it stopped; every question kind, answers changeable until the end', async () => {
  const page = learnerPage;
  await page.goto(`${base}/#/quizzes`);
  await page.locator('.quiz-card[data-slug="kinds-sampler"] button.primary').click();
  await page.waitForURL(/#\/attempt\//);
  const single = page.locator('form.question[data-kind="single"]');
  await single.locator('label').first().click();
  await single.locator('button[type=submit]').click();
  await waitAnnounced(page, 'উত্তর সংরক্ষিত হয়েছে');
  assert.equal(await single.locator('.feedback').count(), 0, 'on_finish: nothing judged yet');
  await page.locator('button.next').click();
  const multiple = page.locator('form.question[data-kind="multiple"]');
  await multiple.locator('input[type=checkbox]').first().waitFor();
  assert.match(await multiple.locator('.hint').textContent(), /প্রযোজ্য সবগুলো/);
  await multiple.locator('label').nth(0).click();
  await multiple.locator('label').nth(1).click();
  await multiple.locator('button[type=submit]').click();
  await page.locator('button.next:focus').waitFor();

  // Leave, come back: the catalogue offers to resume, at the first unanswered question.
  await page.goto(`${base}/#/quizzes`);
  const resume = page.locator('.quiz-card[data-slug="kinds-sampler"] button.primary');
  assert.equal(await resume.textContent(), 'চালিয়ে যান');
  await resume.click();
  const tf = page.locator('form.question[data-kind="true_false"]');
  await tf.waitFor();
  assert.equal(await tf.locator('input[type=radio]').count(), 2);
  await tf.locator('label').first().click();
  await tf.locator('button[type=submit]').click();
  await page.locator('button.next:focus').waitFor();
  await page.locator('button.next').click();
  const numeric = page.locator('form.question[data-kind="numeric"]');
  await numeric.locator('input').fill('৬৪'); // Bengali digits
  await numeric.locator('button[type=submit]').click();
  await page.locator('button.next:focus').waitFor();
  await page.locator('button.next').click();
  const short = page.locator('form.question[data-kind="short_text"]');
  await short.locator('input').fill('  All-Reduce ');
  await short.locator('button[type=submit]').click();
  await page.locator('button.next:focus').waitFor();
  // Back to the first question: its saved answer is there and can still change.
  await page.locator('.qnav-item').first().click();
  assert.equal(await page.locator('form.question[data-kind="single"] input:checked').count(), 1);
  await page.locator('.qnav-finish').click();
  await page.locator('section.finish button.primary').click();
  await page.locator('.result').waitFor();
  const verdicts = await page.locator('.review-item').evaluateAll((els) => els.map((e) => e.className.match(/is-(correct|incorrect|partial)/)?.[1]));
  assert.equal(verdicts.length, 5);
  assert.equal(verdicts[3], 'correct', '৬৪ is 64');
  assert.equal(verdicts[4], 'correct', 'short text is normalized by the server');
  assert.equal(await page.locator('.review-item .explanation-text').count(), 5);
});

test('keyboard only: sign in, start, answer every question and finish with Tab, Space and Enter', async () => {
  const page = await newPage(); // a new tab: a new session
  await page.goto(`${base}/#/signin`);
  await page.locator('#f-email').waitFor();
  await tabTo(page, () => document.activeElement.id === 'f-email', 'the email field');
  await page.keyboard.type(LEARNER.email);
  await page.keyboard.press('Tab');
  await page.keyboard.type(PASSWORD);
  await page.keyboard.press('Enter');
  await page.waitForURL(/#\/quizzes$/);
  await page.locator('.quiz-card').first().waitFor();
  await tabTo(
    page,
    () => document.activeElement.closest('.quiz-card')?.dataset.slug === 'data-parallelism' && document.activeElement.tagName === 'BUTTON',
    'the seed quiz’s Start button',
  );
  await page.keyboard.press('Enter');
  await page.waitForURL(/#\/attempt\//);
  for (let n = 1; n <= 8; n += 1) {
    await page.waitForFunction(() => document.activeElement.tagName === 'H2'); // the question's heading
    await tabTo(page, () => document.activeElement.type === 'radio', `an option of question ${n}`);
    await page.keyboard.press('Space');
    assert.ok(await page.evaluate(() => document.activeElement.checked), 'Space chose the option');
    await tabTo(page, () => document.activeElement.type === 'submit', 'the submit button');
    await page.keyboard.press('Enter');
    await page.locator('.feedback').waitFor();
    assert.ok(await page.evaluate(() => document.activeElement.classList.contains('next')), 'focus moved to Next');
    // Focus is visible.
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    assert.equal(outline, 'solid');
    await page.keyboard.press('Enter');
  }
  await page.locator('section.finish').waitFor();
  await tabTo(page, () => document.activeElement.textContent === 'প্রচেষ্টা শেষ করুন', 'the finish button');
  await page.keyboard.press('Enter');
  await page.locator('.result .score-big').waitFor();
  await page.close();
});

test('with storage denied (an LMS iframe on another site) the learner still signs in and answers, and is told once what a reload loses', async () => {
  const own = await newLearner();
  const page = await newPage();
  await denyStorage(page);
  await page.goto(`${base}/#/signin`);
  await page.locator('#f-email').waitFor();
  assert.ok(await page.evaluate(() => {
    try {
      return !window.localStorage;
    } catch {
      return true;
    }
  }), 'localStorage throws in this page');
  const notice = page.locator('.storage-notice');
  assert.match(await notice.textContent(), /reloading it signs you out/);
  await checkA11y(page, 'the sign-in page with storage denied');
  await signIn(page, own.email);
  await page.locator('.quiz-card').first().waitFor();
  assert.equal(await notice.count(), 1, 'still said after signing in');
  await page.locator('.quiz-card[data-slug="data-parallelism"] button.primary').click();
  await page.waitForURL(/#\/attempt\//);
  const attempt = await shownAttempt(page, own.token);
  const q = attempt.questions[0];
  const form = page.locator(`form.question[data-question="${q.id}"]`);
  await form.locator(`label[for="opt-${q.id}-${rightOptions(q)[0]}"]`).click();
  await form.locator('button[type=submit]').click();
  assert.equal(await form.locator('.feedback .verdict strong').textContent(), 'Correct');
  // Dismissed, the notice stays away while the tab lives.
  await notice.locator('button').click();
  assert.equal(await notice.count(), 0);
  await page.locator('button.next').click();
  await page.locator(`form.question[data-question="${attempt.questions[1].id}"]`).waitFor();
  assert.equal(await notice.count(), 0);
  // What the notice said: the tokens lived in this page only.
  await page.reload();
  await page.waitForURL(/#\/signin$/);
  await page.close();
});

test('a question’s image is fetched with the token (storage denied), shown with its alt text in its language, and released when the learner moves on', async () => {
  const own = await newLearner();
  // The attempt in Indonesian: the image's alt text is translated, its prompt is not.
  const started = await call('POST', '/v1/quizzes/kinds-sampler/attempts', { locale: 'id' }, own.token);
  const page = await newPage();
  await denyStorage(page);
  await signIn(page, own.email);
  await page.locator('.quiz-card[data-slug="kinds-sampler"] button.primary').click();
  await page.waitForURL(new RegExp(`#/attempt/${started.id}$`));
  const q = started.questions[0];
  assert.ok(q.image, 'the first question has an image');
  const img = page.locator(`form.question[data-question="${q.id}"] img.question-image`);
  await page.waitForFunction((sel) => {
    const el = document.querySelector(sel);
    return el && el.getAttribute('src')?.startsWith('blob:') && el.complete && el.naturalWidth > 0;
  }, `form.question[data-question="${q.id}"] img.question-image`);
  assert.equal(await img.getAttribute('alt'), q.image.alt.text);
  assert.match(q.image.alt.text, /^Empat GPU/);
  assert.equal(await img.getAttribute('lang'), 'id');
  assert.equal(await page.locator(`form.question[data-question="${q.id}"] legend.prompt`).getAttribute('lang'), 'en');
  assert.deepEqual([await img.getAttribute('width'), await img.getAttribute('height')], ['360', '240']);
  assert.equal(await img.evaluate((el) => /** @type {HTMLImageElement} */ (el).naturalWidth), 360);
  await checkA11y(page, 'a question with an image');
  await shot(page, 'question-image');
  // Moving on revokes the object URL: the page holds no image it no longer shows.
  // (Loaded as an image: the page's policy lets images, not fetch, read blob: URLs.)
  const loads = (u) => new Promise((resolve) => {
    const probe = new Image();
    probe.onload = () => resolve(true);
    probe.onerror = () => resolve(false);
    probe.src = u;
  });
  const src = await img.getAttribute('src');
  assert.equal(await page.evaluate(loads, src), true, 'the object URL loads while its question is shown');
  await page.locator('button.next').click();
  await page.locator(`form.question[data-question="${started.questions[1].id}"]`).waitFor();
  assert.equal(await page.evaluate(loads, src), false, 'the object URL of the question left behind is revoked');
  await page.close();
});

test('a double click on Next moves exactly one question', async () => {
  const own = await newLearner();
  const page = await newPage();
  await signIn(page, own.email);
  await page.locator('.quiz-card[data-slug="data-parallelism"] button.primary').click();
  await page.waitForURL(/#\/attempt\//);
  const attempt = await shownAttempt(page, own.token);
  const shown = () => page.locator('form.question').getAttribute('data-question');
  const settle = () => page.waitForTimeout(400); // time for a second move, were there one
  await page.locator(`form.question[data-question="${attempt.questions[0].id}"]`).waitFor();
  // From an unanswered question (Next, then Previous appears where the pointer was)...
  await page.locator('button.next').dblclick();
  await settle();
  assert.equal(await shown(), attempt.questions[1].id, 'question 1 → 2');
  await page.locator('button.next').dblclick();
  await settle();
  assert.equal(await shown(), attempt.questions[2].id, 'question 2 → 3');
  // ...and from an answered one, where the primary Next sits where Submit was.
  const q = attempt.questions[2];
  await page.locator(`label[for="opt-${q.id}-${q.options[0].id}"]`).click();
  await page.locator('form.question button[type=submit]').click();
  await page.locator('.feedback').waitFor();
  await page.locator('button.next').dblclick();
  await settle();
  assert.equal(await shown(), attempt.questions[3].id, 'question 3 → 4');
  assert.equal(await page.locator('h2.question-count').textContent(), 'Question 4 of 8');
  await page.close();
});

test('no page shows a literal null, undefined or [object Object]', async () => {
  const own = await newLearner();
  const page = await newPage();
  await page.goto(`${base}/#/signin`);
  await page.locator('#f-email').waitFor();
  await assertNoJunkText(page, 'the sign-in page');
  await page.goto(`${base}/#/signup`);
  await page.locator('#f-display_name').waitFor();
  await assertNoJunkText(page, 'the sign-up page');
  await page.goto(`${base}/#/no-such-page`);
  await page.locator('h1').waitFor();
  await assertNoJunkText(page, 'a missing page');
  await signIn(page, own.email);
  await page.locator('.quiz-card').first().waitFor();
  await assertNoJunkText(page, 'the catalogue');
  await page.locator('.quiz-card[data-slug="kinds-sampler"] button.primary').click();
  await page.waitForURL(/#\/attempt\//);
  for (const kind of ['single', 'multiple', 'true_false', 'numeric', 'short_text']) {
    await page.locator(`form.question[data-kind="${kind}"]`).waitFor();
    await assertNoJunkText(page, `a ${kind} question`);
    await page.locator('button.next').click();
  }
  await page.locator('section.finish').waitFor();
  await assertNoJunkText(page, 'the finish page, nothing answered');
  await page.locator('section.finish button.primary').click();
  await page.locator('.result').waitFor();
  await assertNoJunkText(page, 'the result of an empty attempt');
  await page.goto(`${base}/#/quizzes`);
  await page.locator('.attempts table').waitFor();
  await assertNoJunkText(page, 'the catalogue with an attempt');
  await page.close();
});

test('the language select switches the interface only when the choice is confirmed, not on each arrow key', async () => {
  const page = await newPage();
  await page.goto(`${base}/#/signin`);
  await page.locator('#f-email').waitFor();
  await page.selectOption('#lang-select', 'en');
  await page.waitForFunction(() => document.documentElement.lang === 'en');
  // Marks the page as it is: a re-render replaces these nodes.
  await page.evaluate(() => {
    window.shownView = document.querySelector('main .view');
    window.shownHeader = document.querySelector('.header-inner');
  });
  const rerendered = () => page.evaluate(() => document.querySelector('main .view') !== window.shownView || document.querySelector('.header-inner') !== window.shownHeader);
  await page.locator('#lang-select').focus();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  await page.waitForTimeout(300);
  const browsed = await page.locator('#lang-select').inputValue();
  assert.notEqual(browsed, 'en', 'the arrow keys moved the choice');
  assert.equal(await rerendered(), false, 'browsing with the arrow keys re-rendered nothing');
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'en');
  assert.equal(await page.locator('h1').textContent(), 'Sign in');
  await page.keyboard.press('Enter');
  await page.waitForFunction((l) => document.documentElement.lang === l, browsed);
  await page.waitForFunction(() => document.querySelector('main h1').textContent !== 'Sign in');
  assert.equal(await rerendered(), true);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'lang-select', 'focus stays on the select');
  // Leaving the select after browsing confirms too.
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('Tab');
  await page.waitForFunction(() => document.documentElement.lang === 'bn');
  await page.selectOption('#lang-select', 'en');
  await page.waitForFunction(() => document.documentElement.lang === 'en');
  await page.close();
});

test('a choice made while quizd cannot be reached is kept across Next and Previous and sent when the connection returns', async () => {
  const own = await newLearner();
  const page = await newPage();
  await signIn(page, own.email);
  await page.locator('.quiz-card[data-slug="data-parallelism"] button.primary').click();
  await page.waitForURL(/#\/attempt\//);
  const attempt = await shownAttempt(page, own.token);
  const [first, second] = attempt.questions;
  const pick = rightOptions(first)[0];
  await page.locator(`form.question[data-question="${first.id}"]`).waitFor();
  await context.setOffline(true);
  try {
    await page.locator(`label[for="opt-${first.id}-${pick}"]`).click();
    await page.locator('form.question button[type=submit]').click();
    await page.locator('.inline-error', { hasText: 'kept on this page' }).waitFor();
    assert.match(await page.locator('.qnav-item').first().textContent(), /not sent yet/);
    await page.locator('button.next').click();
    await page.locator(`form.question[data-question="${second.id}"]`).waitFor();
    await page.locator('button.prev').click();
    await page.locator(`form.question[data-question="${first.id}"]`).waitFor();
    assert.equal(await page.locator(`#opt-${first.id}-${pick}`).isChecked(), true, 'the unsent choice is still chosen');
    assert.equal((await call('GET', `/v1/attempts/${attempt.id}`, undefined, own.token)).questions[0].response, null, 'nothing reached the server');
  } finally {
    await context.setOffline(false);
  }
  // Back online: sent at once, judged, and shown.
  await page.locator(`form.question[data-question="${first.id}"] .feedback`).waitFor();
  assert.equal(await page.locator('.feedback .verdict strong').textContent(), 'Correct');
  const stored = await call('GET', `/v1/attempts/${attempt.id}`, undefined, own.token);
  assert.deepEqual(stored.questions[0].response.selected, [pick]);
  assert.doesNotMatch(await page.locator('.qnav-item').first().textContent(), /not sent yet/);
  await assertNoJunkText(page, 'a question answered after reconnecting');
  await page.close();
});

let assignmentId;
let teacherPage;

test('an instructor creates a course, enrolls the learner and makes a timed assignment', async () => {
  const page = (teacherPage = await newPage());
  await page.goto(`${base}/#/signin`);
  // The last language chosen in this browser was Bengali; this instructor reads English.
  await page.selectOption('#lang-select', 'en');
  await page.waitForFunction(() => document.documentElement.lang === 'en');
  await signIn(page, TEACHER.email);
  await page.locator('a[data-nav="teach"]').click();
  await page.waitForURL(/#\/teach$/);
  await page.locator('#course-title').fill('Distributed Training');
  await page.locator('#course-code').fill('DT-101');
  await page.locator('#course-title').press('Enter');
  await page.waitForURL(/#\/teach\/course\//);
  // Mina signed up but has not confirmed her address: she is invited, not enrolled, until she
  // follows the link quizd mailed her at sign-up; then the invitation is her enrollment.
  await page.locator('#enroll-email').fill(LEARNER.email);
  await page.locator('#enroll-email').press('Enter');
  const pending = page.locator('.invitations td:first-child', { hasText: LEARNER.email });
  await pending.waitFor();
  await waitAnnounced(page, `${LEARNER.email} was invited by email`);
  assert.equal(await page.locator('.people td', { hasText: LEARNER.email }).count(), 0);
  const verified = await verifyAddress(LEARNER.email);
  assert.equal(verified.enrolled_in.length, 1);
  await page.reload();
  await page.locator('.people td', { hasText: LEARNER.email }).waitFor();
  assert.equal(await page.locator('.invitations td:first-child', { hasText: LEARNER.email }).count(), 0);
  await page.selectOption('#asg-quiz', 'data-parallelism');
  await page.locator('#asg-title').fill('Week 3 check: data parallelism');
  await page.selectOption('#asg-feedback', 'immediate');
  await page.locator('#asg-time').fill('10');
  await page.locator('#asg-shuffle-o').check();
  // A close time three days on (the form takes the browser's local time) and the grade from
  // the latest attempt.
  const pad = (n) => String(n).padStart(2, '0');
  const d = new Date(Date.now() + 3 * 86400e3);
  const local = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
  await page.locator('#asg-closes').fill(local);
  await page.selectOption('#asg-grading', 'latest');
  await page.locator('form:has(#asg-quiz) button[type=submit]').click();
  const card = page.locator('.assignments .card').first();
  await card.waitFor();
  assignmentId = await card.getAttribute('data-assignment');
  assert.match(await card.textContent(), /Time limit: 10 minutes/);
  const teacher = await call('POST', '/v1/auth/login', { email: TEACHER.email, password: PASSWORD });
  const made = await call('GET', `/v1/assignments/${assignmentId}`, undefined, teacher.access_token);
  assert.deepEqual(
    [made.policy.grading_method, made.policy.navigation, Date.parse(made.policy.closes_at), made.policy.opens_at ?? null],
    ['latest', 'free', Date.parse(new Date(local).toISOString()), null],
  );
  await checkA11y(page, 'the course page');
  await assertNoJunkText(page, 'the course page');
  await page.goto(`${base}/#/teach`);
  await page.locator('#course-title').waitFor();
  await assertNoJunkText(page, 'the courses page');
  await page.goBack();
  await page.locator('.assignments .card').first().waitFor();
  await shot(page, 'course');
});

test('the learner takes the timed assignment: the countdown is announced only at its thresholds', async () => {
  const page = learnerPage;
  await page.clock.install();
  await page.goto(`${base}/#/quizzes`);
  await page.reload();
  const row = page.locator(`.assignment[data-assignment="${assignmentId}"]`);
  await row.waitFor();
  // A timed start asks first; "Not now" goes back with nothing started.
  await row.locator('button.primary').click();
  const confirm = row.locator('.timed-confirm');
  await confirm.waitFor();
  assert.match(await confirm.textContent(), /১০ মিনিট/);
  await confirm.getByRole('button', { name: 'এখন নয়' }).click();
  assert.equal(await confirm.count(), 0);
  await row.locator('button.primary').click();
  await confirm.locator('button.primary').click();
  await page.waitForURL(/#\/attempt\//);
  const timer = page.locator('[role=timer]');
  await timer.waitFor();
  assert.match(await timer.textContent(), /^(১০:০০|০৯:৫৯)$/);
  await page.clock.fastForward('03:00');
  assert.match(await timer.textContent(), /^০৬:৫৯|০৭:০০$/);
  assert.equal(await announcer(page).textContent(), '', 'nothing announced between thresholds');
  await page.clock.fastForward('02:01');
  await page.clock.runFor(100);
  await waitAnnounced(page, 'আর ৫ মিনিট বাকি');
  await page.clock.fastForward('03:59');
  await page.clock.runFor(100);
  await waitAnnounced(page, 'আর ১ মিনিট বাকি');
  assert.ok(await page.locator('.timer.urgent').count());
  await checkA11y(page, 'a timed question');
  // Answer with the key, all right but the second; finish before the server's deadline.
  const id = page.url().split('/').pop();
  const attempt = await page.evaluate(async (aid) => {
    const s = JSON.parse(sessionStorage.getItem('quizd.session'));
    return (await fetch(`/v1/attempts/${aid}`, { headers: { authorization: `Bearer ${s.access}` } })).json();
  }, id);
  // (Under the fake clock Playwright's actionability checks crawl; plain DOM clicks do not.)
  const press = (selector) => page.locator(selector).evaluate((el) => el.click());
  for (const [i, q] of attempt.questions.entries()) {
    const right = rightOptions(q);
    const pick = i === 1 ? q.options.find((o) => !right.includes(o.id)).id : right[0];
    await press(`#opt-${q.id}-${pick}`);
    await press(`form[data-question="${q.id}"] button[type=submit]`);
    await page.locator(`form[data-question="${q.id}"] .feedback`).waitFor();
    await press('button.next');
  }
  await press('section.finish button.primary');
  await page.locator('.result .score-big').waitFor();
  assert.equal(await page.locator('.result .score-big').textContent(), '৮৭.৫%');
});

/// More learners take the assignment over the API, in three languages, so the charts have a
/// shape: abilities spread out, and question 2 made much harder in Indonesian.
async function moreLearners(teacherToken, courseId, { from = 0, count = 54 } = {}) {
  let seed = 7 + from;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  for (let i = from; i < from + count; i += 1) {
    const locale = ['en', 'bn', 'id'][i % 3];
    const email = `learner-${i}-${RUN}@example.org`;
    const tokens = await call('POST', '/v1/auth/register', { email, display_name: `Learner ${i}`, password: PASSWORD, locale });
    // By id: their addresses are not confirmed, and an unconfirmed address is only invited.
    const me = await call('GET', '/v1/me', undefined, tokens.access_token);
    await call('POST', `/v1/courses/${courseId}/enrollments`, { user_id: me.id }, teacherToken);
    const attempt = await call('POST', `/v1/assignments/${assignmentId}/attempts`, { locale }, tokens.access_token);
    // A two-parameter logistic model: ability θ, each question's difficulty b and slope a.
    const theta = -2.2 + (4.4 * (i % 54)) / 53 + (random() - 0.5) * 0.6;
    for (const [n, q] of attempt.questions.entries()) {
      const a = [1.6, 1.4, 1.8, 0.35, 1.5, 1.6, 1.3, 1.7][n];
      let b = [-1.2, -0.3, 0.5, 0.3, -0.8, -0.6, -1.0, 0.4][n];
      if (n === 1 && locale === 'id') b += 2.5; // a translation that misleads
      const p = 1 / (1 + Math.exp(-1.7 * a * (theta - b)));
      if (random() < 0.05) continue; // now and then a question is left unanswered
      const right = rightOptions(q);
      const wrong = q.options.filter((o) => !right.includes(o.id));
      // Wrong answers favour one distractor.
      const pick = random() < p ? right[0] : wrong[random() < 0.6 ? 0 : Math.floor(random() * wrong.length)].id;
      await call('PUT', `/v1/attempts/${attempt.id}/responses/${q.id}`, { selected: [pick] }, tokens.access_token);
    }
    await call('POST', `/v1/attempts/${attempt.id}/finish`, {}, tokens.access_token);
  }
}

test('the instructor sees the analytics as charts: histogram, facility and discrimination, options, languages', async () => {
  const teacher = await call('POST', '/v1/auth/login', { email: TEACHER.email, password: PASSWORD });
  const assignment = await call('GET', `/v1/assignments/${assignmentId}`, undefined, teacher.access_token);
  await moreLearners(teacher.access_token, assignment.course_id);

  const page = teacherPage;
  await page.goto(`${base}/#/teach/course/${assignment.course_id}`);
  await page.locator(`.card[data-assignment="${assignmentId}"] a.button[href="#/teach/assignment/${assignmentId}"]`).click();
  await page.waitForURL(/#\/teach\/assignment\//);
  await page.locator('figure.fig-histogram').waitFor();
  assert.equal(await page.locator('h1').textContent(), 'Analytics: Week 3 check: data parallelism');
  const counted = await page.locator('.stats div').first().locator('dd').textContent();
  assert.equal(counted, '55', 'the 54 seeded attempts and the learner’s');

  // The histogram: ten bands, bars for the populated ones, labelled as an image.
  const hist = page.locator('figure.fig-histogram svg');
  assert.equal(await hist.getAttribute('role'), 'img');
  assert.ok((await hist.locator('rect').count()) >= 4);
  // Facility and discrimination for all eight questions, with the prompts in their language.
  const fd = page.locator('figure.fig-fd tbody tr');
  assert.equal(await fd.count(), 8);
  assert.equal(await fd.nth(2).locator('.qprompt').getAttribute('lang'), 'en');
  assert.ok((await page.locator('figure.fig-fd svg.bar').count()) === 16);
  // The options chosen: eight small charts, the right option marked in text.
  assert.equal(await page.locator('figure.fig-distractors .mini').count(), 8);
  assert.equal(await page.locator('figure.fig-distractors tr.is-right').count(), 8);
  // Languages: a bar per language and question, and question 2 flagged.
  const langs = page.locator('figure.fig-locales');
  assert.equal(await langs.locator('.legend li').count(), 3);
  assert.ok((await langs.locator('svg rect').count()) >= 24);
  assert.match(await langs.locator('.flags').textContent(), /Differs between languages/);
  assert.equal(await langs.locator('.flags .qnum').first().textContent(), '2');
  await checkA11y(page, 'the analytics page');
  await assertNoJunkText(page, 'the analytics page');
  await shot(page, 'analytics', { fullPage: true });

  // The same page for a Bengali-reading instructor keeps every question in its language.
  await page.selectOption('#lang-select', 'bn');
  await page.waitForFunction(() => document.querySelector('h1').textContent.startsWith('বিশ্লেষণ'));
  assert.equal(await page.locator('figure.fig-fd tbody tr').first().locator('.qprompt').getAttribute('lang'), 'bn');
  assert.equal(await page.locator('figure.fig-fd tbody tr').nth(2).locator('.qprompt').getAttribute('lang'), 'en');
  await checkA11y(page, 'the analytics page in Bengali');
  await page.selectOption('#lang-select', 'en');
});

test('the analytics labels: the mean’s label covers no bar or count, the standard deviation has its unit, alpha its sample size', async () => {
  const page = teacherPage;
  await page.locator('figure.fig-histogram').waitFor();
  // Every box the histogram draws against the mean's label: none may meet it.
  const overlaps = await page.evaluate(() => {
    const svg = document.querySelector('figure.fig-histogram svg');
    const label = svg.querySelector('text.marker').getBBox();
    const meets = (b) => b.x < label.x + label.width && label.x < b.x + b.width && b.y < label.y + label.height && label.y < b.y + b.height;
    return [...svg.querySelectorAll('rect, text.value')].filter((e) => meets(e.getBBox())).map((e) => e.outerHTML);
  });
  assert.deepEqual(overlaps, []);
  const stat = async (label) => page.locator('.stats div', { has: page.locator('dt', { hasText: label }) }).locator('dd').textContent();
  assert.match(await stat('Standard deviation'), /^\d+(\.\d)? percentage points$/);
  assert.match(await stat('Cronbach'), /^-?\d+(\.\d)?% \(from 55 attempts\)$/);
  await checkA11y(page, 'the analytics page');
});

test('the By language view gives each question its ETS class and marks where both groups saw the fallback language', async () => {
  // Mantel–Haenszel needs 30 attempts in each group: 45 more learners make 33 or more a language.
  const teacher = await call('POST', '/v1/auth/login', { email: TEACHER.email, password: PASSWORD });
  const assignment = await call('GET', `/v1/assignments/${assignmentId}`, undefined, teacher.access_token);
  await moreLearners(teacher.access_token, assignment.course_id, { from: 54, count: 45 });
  const page = teacherPage;
  await page.goto(`${base}/#/teach`);
  await page.locator('#course-title').waitFor();
  await page.goto(`${base}/#/teach/assignment/${assignmentId}`);
  const langs = page.locator('figure.fig-locales');
  await langs.waitFor();
  assert.match(await langs.locator('thead').textContent(), /Mantel–Haenszel DIF \(ETS class\)/);
  const rows = langs.locator('tbody tr');
  assert.equal(await rows.count(), 8);
  // Question 2, made harder in Indonesian: class C between English and Indonesian.
  const q2 = rows.nth(1).locator('li[data-pair="en-id"]');
  assert.equal(await q2.getAttribute('data-ets'), 'C', await rows.nth(1).textContent());
  assert.match(await q2.textContent(), /C \(large: check the translation\)/);
  // Question 3 was never translated: every pair saw it in English, and says so.
  const q3 = rows.nth(2);
  assert.match(await q3.locator('th').textContent(), /fallback language/);
  assert.equal(await q3.locator('li').count(), await q3.locator('li .same-language').count());
  assert.match(await q3.locator('li[data-pair="bn-id"]').textContent(), /both saw it in en: not a translation effect/);
  // A translated question is not marked.
  assert.doesNotMatch(await rows.nth(0).locator('th').textContent(), /fallback/);
  await checkA11y(page, 'the analytics page with DIF');
  await assertNoJunkText(page, 'the analytics page with DIF');
  // In Bengali too.
  await page.selectOption('#lang-select', 'bn');
  await page.waitForFunction(() => document.querySelector('figure.fig-locales thead').textContent.includes('ETS শ্রেণি'));
  assert.match(await page.locator('figure.fig-locales tbody tr').nth(2).locator('th').textContent(), /বিকল্প ভাষায়/);
  await page.selectOption('#lang-select', 'en');
});

test('the Teaching pages show a quiz’s translation status per language, download XLIFF and PO, and take a translated file back', async () => {
  const teacher = await call('POST', '/v1/auth/login', { email: TEACHER.email, password: PASSWORD });
  const slug = `glossary-${RUN}`;
  const quiz = `slug = "${slug}"\ntitle = "Glossary"\n\n[[questions]]\nkey = "q1"\nkind = "single"\nprompt = "Pick the shard"\nexplanation = "A shard is a part."\n\n[[questions.options]]\nkey = "a"\ntext = "Shard"\ncorrect = true\n\n[[questions.options]]\nkey = "b"\ntext = "Whole"\n`;
  const bn = 'title = "শব্দকোষ"\n\n[questions.q1]\nprompt = "খণ্ডটি বাছুন"\n';
  await call('POST', '/v1/quizzes', { quiz, translations: { bn } }, teacher.access_token);

  const page = teacherPage;
  await page.goto(`${base}/#/teach`);
  await page.getByRole('link', { name: 'Translations of your quizzes' }).click();
  await page.waitForURL(/#\/teach\/translations$/);
  const section = page.locator(`section[data-quiz="${slug}"]`);
  await section.waitFor();
  // The seed quiz is not this instructor's: not listed.
  assert.equal(await page.locator('section[data-quiz="data-parallelism"]').count(), 0);
  const bnRow = section.locator('tr[data-locale="bn"]');
  const cells = async () => (await bnRow.locator('td.num').allTextContents()).map((c) => c.trim());
  assert.deepEqual(await cells(), ['2', '0', '3'], 'translated, stale, missing of 5 texts');
  assert.equal(await bnRow.locator('th span').getAttribute('lang'), 'bn');

  // XLIFF and PO downloads, as the API serves them.
  const download = async (ext) => {
    const [file] = await Promise.all([page.waitForEvent('download'), section.locator(`button[data-download="bn.${ext}"]`).click()]);
    assert.equal(file.suggestedFilename(), `${slug}-v1-bn.${ext}`);
    const chunks = [];
    for await (const c of await file.createReadStream()) chunks.push(c);
    return Buffer.concat(chunks).toString('utf8');
  };
  const xliff = await download('xlf');
  assert.match(xliff, /<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.1"/);
  const po = await download('po');
  assert.match(po, /msgctxt "q.q1.o.a.text"\nmsgid "Shard"\nmsgstr ""\n/);

  // A file with an unknown text is refused as a whole, naming it; nothing changes.
  const upload = async (name, text) => {
    await section.locator('input[type=file]').setInputFiles({ name, mimeType: 'text/plain', buffer: Buffer.from(text) });
    await section.locator('form.upload-translation button[type=submit]').click();
  };
  await upload('bn.po', po.replace('msgctxt "q.q1.o.b.text"', 'msgctxt "q.nope.prompt"'));
  await section.locator('.form-error', { hasText: "entry 'q.nope.prompt'" }).waitFor();
  assert.deepEqual(await cells(), ['2', '0', '3']);
  // That refusal was meant: not one of the errors the last test looks for.
  const refused = `422 PUT /v1/quizzes/${slug}/versions/1/translations/bn.po`;
  assert.ok(failed.includes(refused), failed.join('\n'));
  failed.splice(failed.indexOf(refused), 1);

  // The translator's file: one more text translated, a new version.
  await upload('bn.po', po.replace('msgctxt "q.q1.o.a.text"\nmsgid "Shard"\nmsgstr ""', 'msgctxt "q.q1.o.a.text"\nmsgid "Shard"\nmsgstr "খণ্ড"'));
  await page.locator('#announcer', { hasText: 'Saved as version 2.' }).waitFor();
  const refreshed = page.locator(`section[data-quiz="${slug}"] tr[data-locale="bn"]`);
  await page.waitForFunction((s) => document.querySelector(`section[data-quiz="${s}"] tr[data-locale="bn"] td.num`)?.textContent.trim() === '3', slug);
  assert.deepEqual((await refreshed.locator('td.num').allTextContents()).map((c) => c.trim()), ['3', '0', '2']);
  const served = await call('GET', `/v1/quizzes/${slug}?lang=bn`, undefined, teacher.access_token);
  assert.deepEqual(served.questions[0].options[0], { text: 'খণ্ড', lang: 'bn' });
  // A language with no translation yet: the file for the tag typed in the form.
  await page.locator(`#tr-${slug}-locale`).fill('id');
  const [fresh] = await Promise.all([page.waitForEvent('download'), section.locator('button[data-download="typed.po"]').click()]);
  assert.equal(fresh.suggestedFilename(), `${slug}-v2-id.po`);
  const freshText = [];
  for await (const c of await fresh.createReadStream()) freshText.push(c);
  const idPo = Buffer.concat(freshText).toString('utf8');
  assert.match(idPo, /"Language: id\\n"/);
  assert.match(idPo, /msgctxt "title"\nmsgid "Glossary"\nmsgstr ""\n/);
  await checkA11y(page, 'the translations page');
  await assertNoJunkText(page, 'the translations page');
  await shot(page, 'translations', { fullPage: true });
  // The page in Indonesian says the same.
  await page.selectOption('#lang-select', 'id');
  await page.waitForFunction(() => document.querySelector('h1').textContent === 'Terjemahan');
  await page.selectOption('#lang-select', 'en');
});

/// The instructor's exam: one question, right option `right` (A in version 1).
function examToml(right) {
  const option = (k) => `\n[[questions.options]]\nkey = "${k}"\ntext = "${k.toUpperCase()}"\n${k === right ? 'correct = true' : 'feedback = "Not this one."'}\n`;
  return `slug = "exam-${RUN}"\ntitle = "Exam"\n\n[[questions]]\nkey = "q1"\nkind = "single"\nprompt = "Pick B"\nexplanation = "Because."\n${['a', 'b'].map(option).join('')}`;
}

async function sendExam(token, toml, put) {
  const res = await fetch(`${base}/v1/quizzes${put ? `/exam-${RUN}` : ''}`, {
    method: put ? 'PUT' : 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/toml' },
    body: toml,
  });
  assert.ok(res.ok, `${res.status} ${await res.text()}`);
}

/// Opens an assignment's page from another page: a form of the page left behind (the same
/// ids) is gone before the new one is looked at.
async function openAssignment(page, id) {
  await page.goto(`${base}/#/teach`);
  await page.locator('#regrade-version').waitFor({ state: 'detached' });
  await page.goto(`${base}/#/teach/assignment/${id}`);
}

test('the instructor previews a regrade to the corrected exam, applies it, and the learner sees the note', async () => {
  const teacher = await call('POST', '/v1/auth/login', { email: TEACHER.email, password: PASSWORD });
  const mina = await call('POST', '/v1/auth/login', { email: LEARNER.email, password: PASSWORD });
  await sendExam(teacher.access_token, examToml('a'));
  const course = await call('POST', '/v1/courses', { title: 'Exams' }, teacher.access_token);
  await call('POST', `/v1/courses/${course.id}/enrollments`, { email: LEARNER.email }, teacher.access_token);
  const asg = await call('POST', `/v1/courses/${course.id}/assignments`, { quiz: `exam-${RUN}`, policy: { feedback: 'on_finish' } }, teacher.access_token);
  const attempt = await call('POST', `/v1/assignments/${asg.id}/attempts`, {}, mina.access_token);
  const q = attempt.questions[0];
  const b = q.options.find((o) => o.text === 'B');
  await call('PUT', `/v1/attempts/${attempt.id}/responses/${q.id}`, { selected: [b.id] }, mina.access_token);
  await call('POST', `/v1/attempts/${attempt.id}/finish`, {}, mina.access_token);
  // The key was wrong: B is right. Version 2 says so.
  await sendExam(teacher.access_token, examToml('b'), true);

  const page = teacherPage;
  await openAssignment(page, asg.id);
  await page.locator('#regrade-version').waitFor();
  assert.equal(await page.locator('#regrade-version').inputValue(), '2');
  await page.locator('#regrade-reason').fill('The key of question 1 was wrong.');
  await page.getByRole('button', { name: 'Preview the regrade' }).click();
  const row = page.locator('.regrade-result tbody tr');
  await row.waitFor();
  assert.equal(await row.count(), 1);
  const cells = await row.locator('td').allTextContents();
  assert.deepEqual(cells, [LEARNER.name, '1', '0 / 1', '1 / 1']);
  assert.match(await page.locator('.regrade-result ul').textContent(), /q1: answer key changed/);
  // Nothing changed yet.
  assert.equal((await call('GET', `/v1/attempts/${attempt.id}`, undefined, mina.access_token)).result.score, 0);
  await checkA11y(page, 'the regrade preview');
  await assertNoJunkText(page, 'the regrade preview');
  await page.getByRole('button', { name: 'Apply the regrade' }).click();
  await waitAnnounced(page, 'Regraded to version 2: 1 grades changed.');
  const seen = await call('GET', `/v1/attempts/${attempt.id}`, undefined, mina.access_token);
  assert.equal(seen.result.score, 1);

  // Mina reads the note on her attempt, in her interface's language.
  const { DICTIONARIES } = await import(pathToFileURL(path.join(ROOT, 'web/assets/i18n.js')));
  await learnerPage.goto(`${base}/#/attempt/${attempt.id}`);
  const notes = Object.values(DICTIONARIES).map((d) => d.regraded_note);
  const notice = learnerPage.locator('.result .notice').last();
  await notice.waitFor();
  assert.ok(notes.includes(await notice.textContent()), await notice.textContent());
  await checkA11y(learnerPage, 'a regraded attempt');
});

test('the instructor gives everyone full marks for a faulty question without a new version, and the learner reads why', async () => {
  const teacher = await call('POST', '/v1/auth/login', { email: TEACHER.email, password: PASSWORD });
  const mina = await call('POST', '/v1/auth/login', { email: LEARNER.email, password: PASSWORD });
  const toml = examToml('a').replace(`slug = "exam-${RUN}"`, `slug = "rescore-${RUN}"`);
  const res = await fetch(`${base}/v1/quizzes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${teacher.access_token}`, 'content-type': 'application/toml' },
    body: toml,
  });
  assert.ok(res.ok, `${res.status} ${await res.text()}`);
  const course = await call('POST', '/v1/courses', { title: 'Rescored' }, teacher.access_token);
  await call('POST', `/v1/courses/${course.id}/enrollments`, { email: LEARNER.email }, teacher.access_token);
  const asg = await call('POST', `/v1/courses/${course.id}/assignments`, { quiz: `rescore-${RUN}`, policy: { feedback: 'on_finish' } }, teacher.access_token);
  const attempt = await call('POST', `/v1/assignments/${asg.id}/attempts`, {}, mina.access_token);
  await call('POST', `/v1/attempts/${attempt.id}/finish`, {}, mina.access_token);

  const page = teacherPage;
  await openAssignment(page, asg.id);
  await page.locator('#regrade-question').waitFor();
  await page.selectOption('#regrade-question', 'q1');
  await page.selectOption('#regrade-scoring', 'full_marks');
  await page.getByRole('button', { name: 'Preview the regrade' }).click();
  const row = page.locator('.regrade-result tbody tr');
  await row.waitFor();
  assert.deepEqual(await row.locator('td').allTextContents(), [LEARNER.name, '1', '0 / 1', '1 / 1']);
  assert.match(await page.locator('.regrade-result ul').textContent(), /q1: counts: graded by its key → full marks to everyone/);
  await checkA11y(page, 'a rescore preview');
  await page.getByRole('button', { name: 'Apply the regrade' }).click();
  await waitAnnounced(page, 'Regraded to version 1: 1 grades changed.');

  // Mina left the question unanswered; her review says why it counts in full.
  const { DICTIONARIES } = await import(pathToFileURL(path.join(ROOT, 'web/assets/i18n.js')));
  await learnerPage.goto(`${base}/#/attempt/${attempt.id}`);
  const notes = Object.values(DICTIONARIES).map((d) => d.scoring_full_marks);
  const notice = learnerPage.locator('.review-item .notice').first();
  await notice.waitFor();
  assert.ok(notes.includes(await notice.textContent()), await notice.textContent());
  await checkA11y(learnerPage, 'a question given full marks');
  await assertNoJunkText(learnerPage, 'a question given full marks');
});

/* ------------------------------------------------------------ exam operations (#14) */

/// The exam week: a course with Mina and three learners of the tests' own, and a timed
/// assignment of the seed quiz; made over the API.
const exam = {};

test('the instructor gives Mina a course accommodation and an override on the Teaching pages, reads the rule, and her clock shows both', async () => {
  const teacher = await call('POST', '/v1/auth/login', { email: TEACHER.email, password: PASSWORD });
  exam.teacher = teacher.access_token;
  const mina = await call('POST', '/v1/auth/login', { email: LEARNER.email, password: PASSWORD });
  exam.mina = { token: mina.access_token, id: (await call('GET', '/v1/me', undefined, mina.access_token)).id };
  const course = await call('POST', '/v1/courses', { title: 'Exam week' }, exam.teacher);
  exam.course = course.id;
  // Mina confirmed her address: her email enrolls her at once now.
  const enrolled = await call('POST', `/v1/courses/${course.id}/enrollments`, { email: LEARNER.email }, exam.teacher);
  assert.equal(enrolled.user_id, exam.mina.id);
  exam.learners = [];
  for (let i = 0; i < 3; i += 1) {
    const own = await newLearner();
    await call('POST', `/v1/courses/${course.id}/enrollments`, { user_id: own.id }, exam.teacher);
    exam.learners.push(own);
  }
  const asg = await call('POST', `/v1/courses/${course.id}/assignments`, { quiz: 'data-parallelism', title: 'Midterm', policy: { feedback: 'on_finish', time_limit_minutes: 10 } }, exam.teacher);
  exam.assignment = asg.id;

  // A course-wide accommodation: time × 1.5.
  const page = teacherPage;
  await page.goto(`${base}/#/teach/course/${course.id}`);
  await page.locator('#acc-learner').waitFor();
  await page.selectOption('#acc-learner', exam.mina.id);
  await page.locator('#acc-multiplier').fill('1.5');
  await page.locator('form:has(#acc-learner) button[type=submit]').click();
  const accRow = page.locator(`.adjustments tr[data-user="${exam.mina.id}"]`);
  await accRow.waitFor();
  assert.match(await accRow.textContent(), /× 1\.5/);
  await waitAnnounced(page, `Saved for ${LEARNER.name}.`);
  await checkA11y(page, 'the course page with invitations, the CSV form and accommodations');
  await assertNoJunkText(page, 'the course page with accommodations');

  // The assignment's own override: 5 extra minutes for Mina; the rule says both count.
  await page.locator(`a[data-exam="${asg.id}"]`).click();
  await page.waitForURL(/\/exam$/);
  await page.locator('#ovr-learner').waitFor();
  assert.match(await page.locator('.rule').first().textContent(), /The most generous applicable rule wins/);
  assert.match(await page.locator('.rule').first().textContent(), /the time limit × the largest multiplier \+ the most extra minutes/);
  await page.selectOption('#ovr-learner', exam.mina.id);
  await page.locator('#ovr-minutes').fill('5');
  await page.locator('form:has(#ovr-learner) button[type=submit]').click();
  const ovrRow = page.locator(`.adjustments tr[data-user="${exam.mina.id}"]`);
  await ovrRow.waitFor();
  assert.deepEqual((await ovrRow.locator('td').allTextContents()).slice(0, 3), ['—', '5', '—']);

  // The bulk form: two learners in one request; then one of them removed again.
  const [a, b] = exam.learners;
  await page.locator(`#bulk-${a.id}`).check();
  await page.locator(`#bulk-${b.id}`).check();
  await page.locator('#bulk-attempts').fill('2');
  await page.locator('form:has(#bulk-attempts) button[type=submit]').click();
  await waitAnnounced(page, 'Override saved for 2 learners.');
  for (const who of [a, b]) await page.locator(`.adjustments tr[data-user="${who.id}"]`).waitFor();
  await page.locator(`.adjustments tr[data-user="${b.id}"] button`).click();
  await page.locator(`.adjustments tr[data-user="${b.id}"]`).waitFor({ state: 'detached' });
  const overrides = await call('GET', `/v1/assignments/${asg.id}/overrides`, undefined, exam.teacher);
  assert.deepEqual(overrides.items.map((o) => [o.user_id, o.extra_minutes ?? null, o.extra_attempts ?? null]).sort(), [[exam.mina.id, 5, null], [a.id, null, 2]].sort());
  await checkA11y(page, 'the overrides and grades page');
  await assertNoJunkText(page, 'the overrides and grades page');
  await shot(page, 'overrides', { fullPage: true });

  // Mina starts the exam: 10 minutes × 1.5 + 5 = 20 minutes on her clock.
  const learner = learnerPage;
  await learner.goto(`${base}/#/quizzes`);
  const row = learner.locator(`.assignment[data-assignment="${asg.id}"]`);
  await row.waitFor();
  await row.locator('button.primary').evaluate((el) => el.click());
  await row.locator('.timed-confirm button.primary').evaluate((el) => el.click());
  await learner.waitForURL(/#\/attempt\//);
  const timer = learner.locator('[role=timer]');
  await timer.waitFor();
  assert.match(await timer.textContent(), /^(২০:০০|১৯:৫৯)$/);
  const attempt = await call('GET', `/v1/attempts/${learner.url().split('/').pop()}`, undefined, exam.mina.token);
  assert.ok(attempt.time_left_seconds > 19 * 60 && attempt.time_left_seconds <= 20 * 60, String(attempt.time_left_seconds));
  exam.minaAttempt = attempt.id;
});

test('the instructor uploads a CSV roster with a bad row: each row’s result, the invited address among the pending invitations, and a revoke', async () => {
  // One learner with a confirmed address (enrolled), one without (invited), one new address
  // (invited), and a row that is not an address (refused, with why).
  const confirmed = await newLearner();
  await verifyAddress(confirmed.email);
  const unconfirmed = await newLearner();
  const stranger = `stranger-${RUN}@example.org`;
  const csv = `email,role\n${confirmed.email},learner\n${unconfirmed.email},\n${stranger},learner\nnot-an-email,learner\n`;
  const page = teacherPage;
  await page.goto(`${base}/#/teach/course/${exam.course}`);
  await page.locator('#csv-file').setInputFiles({ name: 'roster.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
  await page.locator('form.csv-upload button[type=submit]').click();
  const report = page.locator('section.csv-report');
  await report.waitFor();
  await waitAnnounced(page, '1 enrolled, 2 invited, 0 unchanged, 1 refused.');
  assert.ok(await page.evaluate(() => document.activeElement?.id === 'csv-report-h'), 'focus on the result');
  const rows = report.locator('tbody tr');
  assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.result)), ['enrolled', 'invited', 'invited', 'invalid']);
  const bad = rows.nth(3);
  assert.deepEqual(await bad.locator('td').allTextContents(), ['5', 'not-an-email', '—', '⚠ Refused', 'not an email address']);
  assert.equal(await bad.locator('td span[lang="en"]').textContent(), 'not an email address');
  // Enrolled: on the roster; invited: pending.
  await page.locator('.people td', { hasText: confirmed.email }).waitFor();
  for (const email of [unconfirmed.email, stranger]) await page.locator('.invitations td:first-child', { hasText: email }).waitFor();
  await checkA11y(page, 'the CSV upload result');
  await assertNoJunkText(page, 'the CSV upload result');
  await shot(page, 'csv-roster', { fullPage: true });

  // Revoking the stranger's invitation.
  await page.locator('.invitations tr', { hasText: stranger }).getByRole('button', { name: /Revoke/ }).click();
  await page.locator('.invitations td:first-child', { hasText: stranger }).waitFor({ state: 'detached' });
  await waitAnnounced(page, `The invitation to ${stranger} was revoked.`);
  const pending = await call('GET', `/v1/courses/${exam.course}/invitations`, undefined, exam.teacher);
  assert.deepEqual(pending.items.map((i) => i.email), [unconfirmed.email]);
});

test('the gradebook shows the grades the tests produced, with each learner’s state, and downloads as CSV', async () => {
  // Learner A answers everything right, B nothing; both finish. Mina's attempt is in progress.
  const [a, b, c] = exam.learners;
  for (const [who, right] of [[a, true], [b, false]]) {
    const attempt = await call('POST', `/v1/assignments/${exam.assignment}/attempts`, { locale: 'en' }, who.token);
    if (right) {
      for (const q of attempt.questions) await call('PUT', `/v1/attempts/${attempt.id}/responses/${q.id}`, { selected: [rightOptions(q)[0]] }, who.token);
    }
    await call('POST', `/v1/attempts/${attempt.id}/finish`, {}, who.token);
    who.attempt = attempt.id;
  }
  const page = teacherPage;
  await page.goto(`${base}/#/teach/course/${exam.course}`);
  await page.getByRole('link', { name: 'Gradebook' }).click();
  await page.waitForURL(/\/gradebook$/);
  const cell = (who) => page.locator(`table.gradebook tr[data-user="${who.id}"] td[data-assignment="${exam.assignment}"]`);
  await cell(a).waitFor();
  assert.equal(await cell(a).locator('.grade').textContent(), '8 / 8 (100%)');
  assert.equal(await cell(a).getAttribute('data-state'), 'finished');
  assert.match(await cell(a).textContent(), /Finished · attempts: 1/);
  assert.equal(await cell(b).locator('.grade').textContent(), '0 / 8 (0%)');
  assert.equal(await cell(c).getAttribute('data-state'), 'not_started');
  assert.equal(await cell(c).locator('.grade').textContent(), '—');
  assert.equal(await cell(exam.mina).getAttribute('data-state'), 'in_progress');
  // The same as the API's pages say.
  const book = await call('GET', `/v1/courses/${exam.course}/gradebook`, undefined, exam.teacher);
  assert.equal(await page.locator('table.gradebook tbody tr').count(), book.learners.length);
  await checkA11y(page, 'the gradebook');
  await assertNoJunkText(page, 'the gradebook');
  await shot(page, 'gradebook', { fullPage: true });

  const [file] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download as CSV' }).click()]);
  const chunks = [];
  for await (const c of await file.createReadStream()) chunks.push(c);
  const lines = Buffer.concat(chunks).toString('utf8').trim().split(/\r?\n/);
  assert.match(lines[0], /^user_id,display_name,email,/);
  assert.equal(lines.length, 1 + book.learners.length);
  assert.ok(lines.some((l) => l.startsWith(`${a.id},`) && /,8(\.0*)?$/.test(l)), lines.join('\n'));
  assert.ok(lines.some((l) => l.startsWith(`${c.id},`) && l.endsWith(',')), 'no grade before an attempt finished');
  // In Bengali too.
  await page.selectOption('#lang-select', 'bn');
  await page.waitForFunction(() => document.querySelector('h1').textContent.startsWith('নম্বরের খাতা'));
  assert.match(await cell(b).textContent(), /শেষ/);
  await checkA11y(page, 'the gradebook in Bengali');
  await assertNoJunkText(page, 'the gradebook in Bengali');
  await page.selectOption('#lang-select', 'en');
  await page.waitForFunction(() => document.querySelector('h1').textContent.startsWith('Gradebook'));
});

test('the instructor changes a grade with a reason from the gradebook: a refusal shows the API’s words, the history shows who, when, from, to and why', async () => {
  const [, b] = exam.learners;
  const page = teacherPage;
  await page.locator(`table.gradebook tr[data-user="${b.id}"] td[data-assignment="${exam.assignment}"] a`).click();
  await page.waitForURL(new RegExp(`/exam/${b.id}$`));
  const row = page.locator(`tr[data-attempt="${b.attempt}"]`);
  await row.waitFor();
  assert.equal(await page.locator('table.attempts-table tbody tr[data-attempt]').count(), 1, 'only this learner’s attempts');
  // By keyboard: Tab to the Grade button, Enter opens the panel; Tab, type, Enter submits.
  const toggle = row.locator('button[aria-expanded]');
  await tabTo(page, () => document.activeElement?.getAttribute('aria-expanded') === 'false', 'the Grade button');
  await page.keyboard.press('Enter');
  assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
  const pointsField = page.locator(`#grade-${b.attempt}-points`);
  await tabTo(page, () => document.activeElement?.id?.endsWith('-points'), 'the points field');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('99');
  await page.keyboard.press('Tab');
  await page.keyboard.type('Too many');
  await page.keyboard.press('Enter');
  const error = page.locator('form.grade-form .form-error');
  await error.locator('span[lang="en"]').waitFor();
  assert.match(await error.textContent(), /`points` must be from 0 to 8/);
  const refused = `422 PUT /v1/attempts/${b.attempt}/grade`;
  assert.ok(failed.includes(refused), failed.join('\n'));
  failed.splice(failed.indexOf(refused), 1);

  const reason = 'Question 3 was ambiguous; credit agreed in class.';
  await pointsField.fill('4');
  await page.locator(`#grade-${b.attempt}-reason`).fill(reason);
  await page.locator('form.grade-form button[type=submit]').click();
  await waitAnnounced(page, `Grade saved for ${b.name}.`);
  const history = page.locator('table.grade-history');
  await history.locator('tr[data-kind="override"]').waitFor();
  assert.ok(await page.evaluate((id) => document.activeElement?.id === `hist-h-${id}`, b.attempt), 'focus on the history');
  const kinds = await history.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.kind));
  assert.deepEqual(kinds, ['finished', 'override']);
  const [, when, what, who, from, to, why] = ['', ...(await history.locator('tr[data-kind="override"] td').allTextContents())];
  assert.ok(when.length > 5, when);
  assert.deepEqual([what, who, from, to, why], ['Set by hand', TEACHER.name, '0', '4 / 8', reason]);
  assert.deepEqual(await history.locator('tr[data-kind="finished"] td').nth(5).textContent(), 'submitted by the learner');
  // The learner reads the same history; the gradebook shows the grade as set by hand.
  const theirs = await call('GET', `/v1/attempts/${b.attempt}/grade-history`, undefined, b.token);
  assert.equal(theirs.events.at(-1).reason, reason);
  assert.equal(theirs.grade.points, 4);
  await checkA11y(page, 'a grade override with its history');
  await assertNoJunkText(page, 'a grade override with its history');
  await shot(page, 'grade-history', { fullPage: true });
  await page.goto(`${base}/#/teach/course/${exam.course}/gradebook`);
  const cell = page.locator(`table.gradebook tr[data-user="${b.id}"] td[data-assignment="${exam.assignment}"]`);
  await cell.waitFor();
  assert.equal(await cell.getAttribute('data-state'), 'overridden');
  assert.equal(await cell.locator('.grade').textContent(), '4 / 8 (50%)');
});

test('under sequential navigation the learner meets one question at a time, with no way back', async () => {
  const [, , c] = exam.learners;
  const asg = await call('POST', `/v1/courses/${exam.course}/assignments`, { quiz: 'data-parallelism', title: 'In order', policy: { feedback: 'on_finish', navigation: 'sequential' } }, exam.teacher);
  const page = await newPage();
  await page.goto(`${base}/#/signin`);
  await page.selectOption('#lang-select', 'en');
  await page.waitForFunction(() => document.documentElement.lang === 'en');
  await signIn(page, c.email);
  const row = page.locator(`.assignment[data-assignment="${asg.id}"]`);
  await row.waitFor();
  await row.locator('button.primary').click();
  await page.waitForURL(/#\/attempt\//);
  const form = page.locator('form.question');
  await form.waitFor();
  assert.equal(await form.locator('h2').textContent(), 'Question 1 of 8');
  assert.match(await page.locator('.seq-note').textContent(), /no going back/);
  // No question list to jump to, no Previous, no Next before an answer.
  assert.equal(await page.locator('.qnav-item:not(.qnav-finish)').count(), 0);
  assert.equal(await page.locator('button.prev').count(), 0);
  assert.equal(await page.locator('button.next').count(), 0);
  await checkA11y(page, 'a sequential question');
  await form.locator('label').first().click();
  await form.locator('button[type=submit]').click();
  await waitAnnounced(page, 'Answer saved. It is final');
  // Answered: final (locked), and Next leads to the question the API serves now.
  assert.equal(await form.locator('input[name=answer]:not([disabled])').count(), 0);
  await page.locator('button.next').click();
  await page.locator('form.question h2', { hasText: 'Question 2 of 8' }).waitFor();
  assert.equal(await page.locator('button.prev').count(), 0);
  assert.equal(await page.locator('.qnav-item:not(.qnav-finish)').count(), 0);
  assert.match(await page.locator('.seq-progress').textContent(), /1 of 8/);
  const served = await call('GET', `/v1/attempts/${page.url().split('/').pop()}`, undefined, c.token);
  assert.equal(served.questions.length, 2);
  assert.equal(served.question_count, 8);
  await assertNoJunkText(page, 'a sequential question');
  await page.close();

  // Mina's exam attempt ends here (submitted with nothing answered), so later pages list only
  // finished attempts of hers; the teacher's page goes back to the analytics it came from.
  await call('POST', `/v1/attempts/${exam.minaAttempt}/finish`, {}, exam.mina.token);
  await openAssignment(teacherPage, assignmentId);
  await teacherPage.locator('figure.fig-locales').waitFor();
});

/* ------------------------------------------------------------------ what learners expect (#21) */

/// Signs `who` in on a page of its own, in the interface language `lang`.
async function signedInPage(who, lang = 'en', viewport = null) {
  const page = await newPage();
  if (viewport) await page.setViewportSize(viewport);
  await page.goto(`${base}/#/signin`);
  await page.selectOption('#lang-select', lang);
  await page.waitForFunction((l) => document.documentElement.lang === l, lang);
  await signIn(page, who.email);
  await page.locator('h1').waitFor();
  return page;
}

test('when the session really ends mid-attempt, signing in again returns to the attempt, not the catalogue', async () => {
  const own = await newLearner();
  const page = await signedInPage(own);
  await page.locator('.quiz-card[data-slug="kinds-sampler"] button.primary').click();
  await page.waitForURL(/#\/attempt\//);
  const attempt = page.url();
  await page.locator('form.question').waitFor();
  // In English, an English quiz: no "not yet translated" note.
  assert.equal(await page.locator('.untranslated-note').count(), 0);
  // The session ends for real: its refresh token is revoked (signed out on another device)
  // and its access token is no longer accepted; the next request meets a 401, the refresh is
  // refused, and the page asks to sign in again.
  const tokens = await page.evaluate(() => JSON.parse(sessionStorage.getItem('quizd.session')));
  await call('POST', '/v1/auth/logout', { refresh_token: tokens.refresh });
  await page.evaluate((t) => sessionStorage.setItem('quizd.session', JSON.stringify({ ...t, access: 'no-longer-valid' })), tokens);
  await page.reload();
  await page.waitForURL(/#\/signin$/);
  assert.equal(await page.locator('p.notice').textContent(), 'Your session has ended. Please sign in again.');
  for (const refused of ['401 GET /v1/me', '401 POST /v1/auth/refresh']) {
    assert.ok(failed.includes(refused), failed.join('\n'));
    failed.splice(failed.indexOf(refused), 1);
  }
  await page.locator('#f-email').fill(own.email);
  await page.locator('#f-password').fill(PASSWORD);
  await page.locator('form button[type=submit]').click();
  await page.waitForURL(attempt);
  await page.locator('form.question h2', { hasText: 'Question 1 of 5' }).waitFor();
  await page.close();
});

test('a learner flags questions for later, reviews the unanswered and flagged ones by number before finishing, and sees saved answers, untranslated questions and the time taken', async () => {
  const own = await newLearner();
  await call('PATCH', '/v1/me', { locale: 'bn' }, own.token);
  const page = await signedInPage(own, 'bn');
  // The quiz's intro line, in the learner's language, before starting.
  const listed = (await call('GET', '/v1/quizzes?lang=bn', undefined, own.token)).items.find((q) => q.slug === 'data-parallelism');
  assert.ok(listed.intro, 'the seed quiz has an intro');
  const intro = page.locator('.quiz-card[data-slug="data-parallelism"] .quiz-intro');
  assert.equal(await intro.textContent(), listed.intro.text);
  assert.equal(await intro.getAttribute('lang'), listed.intro.lang);
  // The sampler has no Bengali: every question says it is shown in English.
  await page.locator('.quiz-card[data-slug="kinds-sampler"] button.primary').click();
  await page.waitForURL(/#\/attempt\//);
  const form = page.locator('form.question');
  await form.waitFor();
  assert.equal(await form.locator('.untranslated-note').textContent(), 'ⓘ ইংরেজি ভাষায় দেখানো হচ্ছে: এখনও অনূদিত হয়নি।');
  assert.equal(await form.locator('legend').getAttribute('lang'), 'en');
  // Under deferred feedback a saved answer says so on the page, not only by a dot.
  assert.equal(await form.locator('.saved-note').count(), 0);
  await form.locator('label').first().click();
  await form.locator('button[type=submit]').click();
  await page.locator('.saved-note').waitFor();
  assert.match(await page.locator('.saved-note').textContent(), /উত্তর সংরক্ষিত হয়েছে/);
  // Previous comes before Next in reading order.
  await page.locator('button.next').click();
  await page.locator('form.question[data-kind="multiple"]').waitFor();
  assert.ok(await page.evaluate(() => document.querySelector('button.prev').compareDocumentPosition(document.querySelector('button.next')) & Node.DOCUMENT_POSITION_FOLLOWING));
  // Question 2 flagged, unanswered; question 4 answered and flagged.
  const flag = page.locator('button.flag');
  assert.equal(await flag.getAttribute('aria-pressed'), 'false');
  await flag.click();
  assert.equal(await flag.getAttribute('aria-pressed'), 'true');
  assert.match(await page.locator('.qnav-item').nth(1).textContent(), /পরে দেখার জন্য চিহ্নিত/);
  await checkA11y(page, 'a flagged question');
  await page.locator('.qnav-item').nth(3).click();
  await page.locator('form.question[data-kind="numeric"] input').fill('64');
  await page.locator('form.question[data-kind="numeric"] button[type=submit]').click();
  await page.locator('.saved-note').waitFor();
  await page.locator('button.flag').click();
  // The flags are this tab's (the API keeps none): they survive a reload.
  await page.reload();
  await page.locator('.qnav-item').nth(1).click();
  assert.equal(await page.locator('button.flag').getAttribute('aria-pressed'), 'true');
  // Before finishing: the unanswered questions and the flagged ones, by number.
  await page.locator('.qnav-finish').click();
  const finish = page.locator('section.finish');
  await finish.waitFor();
  assert.deepEqual(await finish.locator('.unanswered button').allTextContents(), ['প্রশ্ন ২ / ৫', 'প্রশ্ন ৩ / ৫', 'প্রশ্ন ৫ / ৫']);
  assert.deepEqual(await finish.locator('.flagged button').allTextContents(), ['প্রশ্ন ২ / ৫', 'প্রশ্ন ৪ / ৫']);
  await checkA11y(page, 'the review before finishing');
  await assertNoJunkText(page, 'the review before finishing');
  // A flagged question is one click away; unflagged, it leaves the list.
  await finish.locator('.flagged button').first().click();
  await page.locator('form.question[data-kind="multiple"]').waitFor();
  await page.locator('button.flag').click();
  await page.locator('.qnav-finish').click();
  assert.deepEqual(await page.locator('section.finish .flagged button').allTextContents(), ['প্রশ্ন ৪ / ৫']);
  await page.locator('section.finish button.primary').click();
  await page.locator('.result').waitFor();
  // The result: the time taken, and (practice: no limit) another attempt.
  assert.match(await page.locator('.time-taken').textContent(), /^সময় লেগেছে: [০-৯]+ মিনিট [০-৯]+ সেকেন্ড$/);
  assert.equal(await page.locator('.review-item .untranslated-note').count(), 5);
  const another = page.locator('.another-attempt button.primary');
  assert.equal(await another.textContent(), 'আরেকটি প্রচেষ্টা শুরু করুন');
  assert.equal(await page.locator('.attempts-used').count(), 0);
  await checkA11y(page, 'the result');
  const finished = page.url();
  await another.click();
  await page.waitForURL((u) => /#\/attempt\//.test(u.href) && u.href !== finished);
  await page.locator('form.question h2', { hasText: 'প্রশ্ন ১ / ৫' }).waitFor();
  await page.close();
});

test('"Start another attempt" is offered only while the assignment’s attempts last', async () => {
  const own = await newLearner();
  await call('POST', `/v1/courses/${exam.course}/enrollments`, { user_id: own.id }, exam.teacher);
  const asg = await call('POST', `/v1/courses/${exam.course}/assignments`, { quiz: 'kinds-sampler', title: 'Twice at most', policy: { feedback: 'on_finish', attempts_allowed: 2 } }, exam.teacher);
  const page = await signedInPage(own);
  const row = page.locator(`.assignment[data-assignment="${asg.id}"]`);
  await row.locator('button.primary').click();
  await page.waitForURL(/#\/attempt\//);
  for (const [used, offered] of [[1, true], [2, false]]) {
    await page.locator('.qnav-finish').click();
    await page.locator('section.finish button.primary').click();
    await page.locator('.result').waitFor();
    await page.locator('.attempts-used').waitFor();
    assert.equal(await page.locator('.attempts-used').textContent(), `Attempts used: ${used} of 2`);
    assert.match(await page.locator('.time-taken').textContent(), /^Time taken: \d+ min \d+ s$/);
    assert.equal(await page.locator('.another-attempt button').count(), offered ? 1 : 0);
    if (offered) {
      const finished = page.url();
      await page.locator('.another-attempt button.primary', { hasText: 'Start another attempt' }).click();
      await page.waitForURL((u) => u.href !== finished);
      await page.locator('form.question').waitFor();
    }
  }
  await assertNoJunkText(page, 'a result with no attempt left');
  await page.close();
  // Two attempts: too few for Cronbach's alpha, and the analytics page says so.
  await teacherPage.goto(`${base}/#/teach/assignment/${asg.id}`);
  await teacherPage.locator('h1', { hasText: 'Twice at most' }).waitFor();
  const alpha = teacherPage.locator('.stats div', { has: teacherPage.locator('dt', { hasText: 'Cronbach' }) }).locator('dd');
  assert.match(await alpha.textContent(), /^not enough attempts \(\d; at least 30 needed\)$/);
  await openAssignment(teacherPage, assignmentId);
  await teacherPage.locator('figure.fig-locales').waitFor();
});

test('"Clear my choice" leaves a saved question unanswered, and an override’s extra attempt is offered to the learner', async () => {
  const teacher = (await call('POST', '/v1/auth/login', { email: TEACHER.email, password: PASSWORD })).access_token;
  const course = await call('POST', '/v1/courses', { title: `Second chances ${RUN}` }, teacher);
  const own = await newLearner();
  await call('POST', `/v1/courses/${course.id}/enrollments`, { user_id: own.id }, teacher);
  const asg = await call('POST', `/v1/courses/${course.id}/assignments`, { quiz: 'kinds-sampler', title: 'Once only', policy: { feedback: 'on_finish', attempts_allowed: 1 } }, teacher);
  const page = await signedInPage(own);
  await page.locator(`.assignment[data-assignment="${asg.id}"] button.primary`).click();
  await page.waitForURL(/#\/attempt\//);
  const form = page.locator('form.question');
  await form.waitFor();
  // No choice yet: nothing to clear.
  assert.equal(await page.locator('.clear-choice').count(), 0);
  const choice = form.locator('input[type=radio], input[type=checkbox]');
  if (await choice.count()) await form.locator('.option label').first().click();
  else await form.locator('input, textarea').first().fill('1');
  await form.locator('button[type=submit]').click();
  await page.locator('.saved-note').waitFor();
  await checkA11y(page, 'a saved answer with Clear my choice');
  await page.locator('.clear-choice', { hasText: 'Clear my choice' }).click();
  await waitAnnounced(page, 'Choice cleared');
  assert.equal(await page.locator('.saved-note').count(), 0);
  assert.equal(await page.locator('form.question input:checked').count(), 0);
  const attempt = await shownAttempt(page, own.token);
  assert.equal(attempt.questions[0].response, null, 'the server has no answer for it');
  // Finished: the one attempt is used, and none is offered.
  await page.locator('.qnav-finish').click();
  await page.locator('section.finish button.primary').click();
  await page.locator('.attempts-used').waitFor();
  assert.equal(await page.locator('.attempts-used').textContent(), 'Attempts used: 1 of 1');
  assert.equal(await page.locator('.another-attempt button').count(), 0);
  // The teacher grants one more: the learner's result offers it, and it starts.
  await call('PUT', `/v1/assignments/${asg.id}/overrides/${own.id}`, { extra_attempts: 1 }, teacher);
  await page.reload();
  await page.locator('.attempts-used', { hasText: '1 of 2' }).waitFor();
  const finished = page.url();
  await page.locator('.another-attempt button.primary', { hasText: 'Start another attempt' }).click();
  await page.waitForURL((u) => u.href !== finished);
  await page.locator('form.question').waitFor();
  await page.close();
});

test('on a 390 px phone the header fits one row, signed out and signed in, in English and Bengali', async () => {
  const own = await newLearner();
  const oneRow = (page) =>
    page.evaluate(() => {
      const inner = document.querySelector('.header-inner');
      const tops = [...inner.children].map((e) => Math.round(e.getBoundingClientRect().top));
      const bottoms = [...inner.children].map((e) => e.getBoundingClientRect().bottom);
      // One row: every item starts above the lowest item's bottom, and nothing sticks out.
      return Math.max(...tops) < Math.min(...bottoms) && inner.scrollWidth <= inner.clientWidth ? true : { tops, width: inner.scrollWidth };
    });
  for (const lang of ['en', 'bn']) {
    const page = await newPage();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/#/signin`);
    await page.selectOption('#lang-select', lang);
    await page.waitForFunction((l) => document.documentElement.lang === l, lang);
    assert.equal(await oneRow(page), true, `signed out, ${lang}`);
    await call('PATCH', '/v1/me', { locale: lang }, own.token);
    await signIn(page, own.email);
    await page.locator('.quiz-card').first().waitFor();
    assert.equal(await oneRow(page), true, `signed in, ${lang}`);
    // The name and the label are still there for screen readers.
    assert.match(await page.locator('.who-name').textContent(), /Own Learner/);
    await checkA11y(page, `the catalogue on a phone (${lang})`);
    await page.close();
  }
});

/* ------------------------------------------------------------------ an LMS launch (LTI 1.3) */

/// The LMS: tests/lti/lti_platform.py (the PyPI package lti1p3platform, pinned in
/// tests/lti/requirements.txt) in target/lti-venv, made when missing as tests/api/lti/ does.
async function startLms() {
  const venv = path.join(ROOT, 'target/lti-venv');
  const python = path.join(venv, 'bin/python');
  const run = (cmd, args) => {
    const out = spawnSync(cmd, args, { encoding: 'utf8', timeout: 600_000 });
    assert.equal(out.status, 0, `${cmd} ${args.join(' ')}:\n${out.stderr}`);
  };
  if (!existsSync(python)) run('python3', ['-m', 'venv', venv]);
  run(path.join(venv, 'bin/pip'), ['install', '-q', '--disable-pip-version-check', '-r', path.join(ROOT, 'tests/lti/requirements.txt')]);
  const child = spawn(python, [path.join(ROOT, 'tests/lti/lti_platform.py'), '--tool', base, '--port', String(LMS_PORT)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/READY (\d+)/);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`the LMS exited with ${code}: ${out}`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

/// A launch as the LMS makes it: its login initiation, quizd's login, the LMS's signed
/// launch form (posted by its own script), quizd's launch, the front-end with the code.
async function launchFromLms(page, scenario) {
  const made = await fetch(`${lms.url}/scenarios`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(scenario) });
  assert.equal(made.status, 201);
  const { hint } = await made.json();
  await page.goto(`${lms.url}/initiate?hint=${encodeURIComponent(hint)}`);
  await page.waitForURL(/#\/attempt\/[0-9a-f-]{36}$/);
  return page.url().split('/').pop();
}

test('re-opening an LTI activity after finishing lands on the last attempt’s result and review, offering another attempt only where the policy allows', async () => {
  lms = await startLms();
  const operator = await call('POST', '/v1/auth/login', { email: OPERATOR.email, password: PASSWORD });
  const rec = await (await fetch(`${lms.url}/recorded`)).json();
  await call('POST', '/v1/lti/registrations', {
    title: 'Browser-test LMS',
    issuer: rec.issuer,
    client_id: rec.client_id,
    deployment_ids: [rec.deployment_id],
    auth_endpoint: `${rec.issuer}/auth`,
    token_endpoint: `${rec.issuer}/token`,
    jwks_url: `${rec.issuer}/.well-known/jwks.json`,
  }, operator.access_token);
  const scenario = {
    user: { sub: `lti-${RUN}`, name: 'Launched Learner' },
    roles: ['http://purl.imsglobal.org/vocab/lis/v2/membership#Learner'],
    context: { id: `ctx-${RUN}`, title: 'Parallel Programming', label: 'CS-451' },
    resource_link: { id: `rl-${RUN}`, title: 'Week 1 quiz' },
    custom: { quiz: 'kinds-sampler' },
  };
  const page = await newPage();
  await page.goto(`${base}/#/signin`);
  await page.selectOption('#lang-select', 'en');
  await page.waitForFunction(() => document.documentElement.lang === 'en');
  // The first launch starts an attempt; the learner finishes it.
  const first = await launchFromLms(page, scenario);
  await page.locator('form.question').waitFor();
  await page.locator('.qnav-finish').click();
  await page.locator('section.finish button.primary').click();
  await page.locator('.result').waitFor();
  // Opened again from the LMS: the same attempt, its result and review, and another attempt
  // (the LMS's assignment sets no limit).
  assert.equal(await launchFromLms(page, scenario), first);
  await page.locator('.result').waitFor();
  await page.locator('.review-list .review-item').first().waitFor();
  await page.locator('.another-attempt button.primary', { hasText: 'Start another attempt' }).waitFor();
  await checkA11y(page, 'a result reopened from the LMS');
  // With one attempt allowed, the same launch shows the result with no way to start another.
  const { token } = { token: await page.evaluate(() => JSON.parse(sessionStorage.getItem('quizd.session')).access) };
  const attempt = await call('GET', `/v1/attempts/${first}`, undefined, token);
  await call('PATCH', `/v1/assignments/${attempt.assignment_id}`, { attempts_allowed: 1 }, operator.access_token);
  assert.equal(await launchFromLms(page, scenario), first);
  await page.locator('.attempts-used').waitFor();
  assert.equal(await page.locator('.attempts-used').textContent(), 'Attempts used: 1 of 1');
  assert.equal(await page.locator('.another-attempt button').count(), 0);
  await assertNoJunkText(page, 'a result reopened from the LMS');
  await page.close();
});

/// A teacher's Deep Linking launch ("Select content"), ending on the content picker.
async function deepLinkFromLms(page, extra = {}) {
  const scenario = {
    user: { sub: `lti-teacher-${RUN}`, name: 'Launched Teacher' },
    roles: ['http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor'],
    context: { id: `ctx-${RUN}`, title: 'Parallel Programming', label: 'CS-451' },
    message_type: 'deep_linking',
    ...extra,
  };
  const made = await fetch(`${lms.url}/scenarios`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(scenario) });
  const { hint } = await made.json();
  await page.goto(`${lms.url}/initiate?hint=${encodeURIComponent(hint)}`);
  await page.waitForURL(/#\/lti\/deep-link\/[0-9a-f-]{36}$/);
  await page.locator('h1', { hasText: 'Choose a quiz to place' }).waitFor();
}

const recordedPlacements = async () => (await (await fetch(`${lms.url}/recorded`)).json()).deep_link_responses;

test('a teacher’s Deep Linking launch picks quizzes with their languages, points and a preview, and the platform receives them', async () => {
  assert.ok(lms, 'the LMS of the LTI test runs');
  const page = await newPage();
  await deepLinkFromLms(page, { dl_data: `picked-${RUN}` });
  // The platform accepts several: checkboxes, each quiz with its points and languages.
  const card = page.locator('.pick-card[data-slug="data-parallelism"]');
  assert.equal(await card.locator('input[type=checkbox]').count(), 1);
  const catalogue = await call('GET', '/v1/quizzes');
  const dp = catalogue.items.find((q) => q.slug === 'data-parallelism');
  assert.match(await card.locator('.pick-points').textContent(), new RegExp(`${dp.question_count} questions · Points: ${dp.max_points}`));
  assert.match(await card.locator('.pick-langs').textContent(), /English.*বাংলা/);
  // The preview: the questions as a learner reads them, and nothing of the key.
  await card.locator('.preview-toggle').click();
  assert.equal(await card.locator('.preview-toggle').getAttribute('aria-expanded'), 'true');
  await card.locator('.preview-item').first().waitFor();
  const view = await call('GET', '/v1/quizzes/data-parallelism');
  assert.equal(await card.locator('.preview-item').count(), view.questions.length);
  const previewText = await card.locator('.preview').textContent();
  for (const q of key.questions) {
    const explanation = q.explanation && typeof q.explanation === 'object' ? Object.values(q.explanation)[0] : null;
    if (typeof explanation === 'string' && explanation) assert.ok(!previewText.includes(explanation), 'no explanation in the preview');
  }
  await checkA11y(page, 'the Deep Linking content picker');
  await assertNoJunkText(page, 'the Deep Linking content picker');
  await shot(page, 'deep-link-picker', { fullPage: true });
  // Nothing chosen: said, not sent.
  await page.locator('.pick-form button[type=submit]').click();
  assert.equal(await page.locator('.pick-form .inline-error').textContent(), 'Choose a quiz first.');
  assert.equal((await recordedPlacements()).length, 0);
  await card.locator('label').click();
  await page.locator('.pick-card[data-slug="kinds-sampler"] label').click();
  await page.locator('.pick-form button[type=submit]').click();
  // A real form post lands on the platform's return URL; the platform verified and kept it.
  await page.waitForURL(`${lms.url}/deep_link_return`);
  const placed = (await recordedPlacements()).at(-1);
  assert.equal(placed.data, `picked-${RUN}`);
  assert.deepEqual(placed.items.map((i) => i.custom.quiz).sort(), ['data-parallelism', 'kinds-sampler']);
  assert.equal(placed.items.find((i) => i.custom.quiz === 'data-parallelism').lineItem.scoreMaximum, dp.max_points);
  await page.close();
});

test('where the platform takes one item the picker offers one choice, and Cancel sends an empty response', async () => {
  const page = await newPage();
  const before = (await recordedPlacements()).length;
  await deepLinkFromLms(page, { dl_accept_multiple: false });
  assert.equal(await page.locator('.pick-card input[type=checkbox]').count(), 0);
  assert.ok((await page.locator('.pick-card input[type=radio]').count()) >= 2);
  await page.locator('.pick-cancel').click();
  await page.waitForURL(`${lms.url}/deep_link_return`);
  const all = await recordedPlacements();
  assert.equal(all.length, before + 1);
  assert.deepEqual(all.at(-1).items, []);
  await page.close();
});

test('in an LMS iframe on another site, with no cookie reaching quizd, a launch completes through the platform’s storage', async () => {
  assert.ok(lms, 'the LMS of the LTI test runs');
  // No cookie of quizd's left over from the launches above: what follows must do without.
  await context.clearCookies();
  const scenario = {
    user: { sub: `lti-framed-${RUN}`, name: 'Framed Learner' },
    roles: ['http://purl.imsglobal.org/vocab/lis/v2/membership#Learner'],
    context: { id: `ctx-${RUN}`, title: 'Parallel Programming', label: 'CS-451' },
    resource_link: { id: `rl-framed-${RUN}`, title: 'Framed quiz' },
    custom: { quiz: 'kinds-sampler' },
    storage_target: 'lti_storage',
  };
  const made = await fetch(`${lms.url}/scenarios`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(scenario) });
  const { hint } = await made.json();
  const page = await newPage();
  // The LMS's page is on localhost, quizd on 127.0.0.1: another site, where quizd's cookies
  // (SameSite=Lax over plain HTTP) are neither set nor sent inside the iframe.
  await page.goto(`http://localhost:${LMS_PORT}/course?hint=${encodeURIComponent(hint)}`);
  const tool = page.frameLocator('#tool');
  await tool.locator('form.question').waitFor({ timeout: 30_000 });
  const frame = page.frame({ name: 'tool' });
  assert.match(frame.url(), /#\/attempt\/[0-9a-f-]{36}$/);
  assert.deepEqual((await context.cookies(base)).map((c) => c.name).filter((n) => n.startsWith('quizd_lti')), []);
  const log = (await (await fetch(`${lms.url}/recorded`)).json()).storage_log;
  const ops = log.map((e) => `${e.op} ${e.key.split('_')[0]}${e.found === false ? ' missing' : ''}`);
  // The login's two puts, then the launch page's and the front-end's reads, each found.
  assert.deepEqual(ops.sort(), ['get state', 'get state', 'put nonce', 'put state'], JSON.stringify(log));
  assert.ok(log.every((e) => e.origin === base), 'only quizd’s origin used the storage');
  await page.close();
});

test('in an LMS iframe without cookies or the platform’s storage, the launch page says what to do instead of loading forever', async () => {
  // A login that asks for storage from a frame the page does not have.
  const scenario = {
    user: { sub: `lti-nostorage-${RUN}`, name: 'Framed Learner' },
    roles: ['http://purl.imsglobal.org/vocab/lis/v2/membership#Learner'],
    context: { id: `ctx-${RUN}`, title: 'Parallel Programming', label: 'CS-451' },
    resource_link: { id: `rl-nostorage-${RUN}`, title: 'Framed quiz' },
    custom: { quiz: 'kinds-sampler' },
    storage_target: 'no_such_frame',
  };
  const made = await fetch(`${lms.url}/scenarios`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(scenario) });
  const { hint } = await made.json();
  const page = await newPage();
  await page.goto(`http://localhost:${LMS_PORT}/course?hint=${encodeURIComponent(hint)}`);
  const tool = page.frameLocator('#tool');
  await tool.locator('#lti-failed').waitFor({ timeout: 15_000 });
  assert.match(await tool.locator('#lti-failed').textContent(), /Open the activity in a new window/);
  assert.equal(await tool.locator('#lti-status').textContent(), '');
  await page.close();
});

test('in an LMS iframe that drops quizd’s cookie, the refused launch is a page that says why and opens the activity in a new window, where it launches', async () => {
  assert.ok(lms, 'the LMS of the LTI test runs');
  await context.clearCookies();
  // No platform storage (as Moodle 5.1): the cookie flow alone.
  const scenario = {
    user: { sub: `lti-dropped-${RUN}`, name: 'Framed Learner' },
    roles: ['http://purl.imsglobal.org/vocab/lis/v2/membership#Learner'],
    context: { id: `ctx-${RUN}`, title: 'Parallel Programming', label: 'CS-451' },
    resource_link: { id: `rl-dropped-${RUN}`, title: 'Framed quiz' },
    custom: { quiz: 'kinds-sampler' },
  };
  const made = await fetch(`${lms.url}/scenarios`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(scenario) });
  const { hint } = await made.json();
  const page = await newPage();
  // The LMS's page is on localhost, quizd on 127.0.0.1: another site, where quizd's state
  // cookie (SameSite=Lax over plain HTTP) is neither set nor sent inside the iframe.
  await page.goto(`http://localhost:${LMS_PORT}/course?hint=${encodeURIComponent(hint)}`);
  const tool = page.frameLocator('#tool');
  const link = tool.locator('a[target="_blank"]', { hasText: 'Open in a new window' });
  await link.waitFor({ timeout: 15_000 });
  const frame = page.frame({ name: 'tool' });
  assert.equal(frame.url(), `${base}/v1/lti/launch`);
  assert.equal(await tool.locator('h1').textContent(), 'quizd cannot sign you in inside this page');
  assert.match(await tool.locator('main').textContent(), /lti_state_mismatch/);
  assert.equal(await frame.evaluate(() => document.documentElement.lang), 'en');
  assert.match(await link.getAttribute('href'), /^\/v1\/lti\/login\?iss=/);
  assert.deepEqual((await context.cookies(base)).map((c) => c.name).filter((n) => n.startsWith('quizd_lti')), []);
  await checkA11y(frame, 'a launch refused in the LMS’s frame');
  await assertNoJunkText(frame, 'a launch refused in the LMS’s frame');
  await shot(page, 'lti-refused-in-frame');
  const refused = '401 POST /v1/lti/launch';
  assert.ok(failed.includes(refused), failed.join('\n'));
  failed.splice(failed.indexOf(refused), 1);
  // The new window is a top-level page of its own, where quizd's cookie is kept: the login
  // starts again, the platform posts a new launch, and the learner lands on the attempt.
  const [popup] = await Promise.all([context.waitForEvent('page'), link.click()]);
  popup.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`);
  });
  await popup.waitForURL(/#\/attempt\/[0-9a-f-]{36}$/, { timeout: 30_000 });
  await popup.locator('form.question').waitFor();
  await popup.close();
  await page.close();
});

test('on a narrow screen long Bengali and Indonesian texts wrap: no page scrolls sideways', async () => {
  // A learner with a finished practice attempt in Bengali, who sits no exam of the seed quiz
  // (Mina sits the Midterm, so its practice is closed to her: 409 practice_during_exam).
  const own = await newLearner();
  const practice = await call('POST', '/v1/quizzes/data-parallelism/attempts', { locale: 'bn' }, own.token);
  await call('POST', `/v1/attempts/${practice.id}/finish`, {}, own.token);
  const page = await newPage();
  await page.setViewportSize({ width: 360, height: 740 });
  await signIn(page, own.email);
  await page.selectOption('#lang-select', 'bn');
  await page.waitForFunction(() => document.documentElement.lang === 'bn');
  // The elements that stick out on the right (none when nothing overflows).
  const overflowing = (p) =>
    p.evaluate(() =>
      [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.table-wrap, .visually-hidden'))
        .slice(0, 5)
        .map((e) => `${e.tagName.toLowerCase()}.${e.className}`),
    );
  const fits = async (p = page) => {
    const out = await overflowing(p);
    return out.length === 0 && (await p.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)) ? true : out;
  };
  await page.goto(`${base}/#/quizzes`);
  await page.locator('.quiz-card').first().waitFor();
  assert.equal(await fits(), true, 'the catalogue in Bengali');
  await page.goto(`${base}/#/attempt/${practice.id}`);
  await page.locator('.review-item').first().waitFor();
  assert.equal(await fits(), true, 'a review in Bengali');
  await page.selectOption('#lang-select', 'id');
  await page.waitForFunction(() => document.documentElement.lang === 'id');
  await page.goto(`${base}/#/quizzes`);
  await page.locator('.quiz-card').first().waitFor();
  assert.equal(await page.locator('.quiz-card[data-slug="data-parallelism"] .quiz-title').getAttribute('lang'), 'id');
  assert.equal(await fits(), true, 'the catalogue in Indonesian');
  await page.locator('.quiz-card[data-slug="data-parallelism"] button.primary').click();
  await page.locator('form.question').waitFor();
  assert.equal(await fits(), true, 'a question in Indonesian');
  await checkA11y(page, 'a question in Indonesian on a narrow screen');
  await teacherPage.setViewportSize({ width: 360, height: 740 });
  await teacherPage.reload();
  await teacherPage.locator('figure.fig-locales').waitFor();
  assert.equal(await fits(teacherPage), true, 'the analytics');
});

/** In English, whatever an earlier test left as this browser's (or the operator's) language. */
async function inEnglish(page) {
  if ((await page.evaluate(() => document.documentElement.lang)) !== 'en') {
    await page.selectOption('#lang-select', 'en');
    await page.waitForFunction(() => document.documentElement.lang === 'en');
  }
}

test('live mode: the projector shows the code, two phones join and answer against the timer, the class sees the distribution; names stay text', async () => {
  // The seed quiz's practice assignment, run by an admin (its authors and admins run it).
  const quiz = await call('GET', '/v1/quizzes/data-parallelism');
  const assignment = quiz.practice_assignment_id;
  assert.ok(assignment, 'the seed quiz offers practice');
  const phones = [];
  for (const name of ['Phone One', '<img src=x onerror="window.pwned=1"><b>Bold</b>']) {
    const email = `live-${phones.length}-${RUN}@example.org`;
    await call('POST', '/v1/auth/register', { email, display_name: name, password: PASSWORD, locale: 'en' });
    phones.push({ email, name });
  }

  const projector = await newPage();
  await signIn(projector, OPERATOR.email);
  await inEnglish(projector);
  await projector.goto(`${base}/#/teach/assignment/${assignment}/live`);
  await projector.locator('#live-leaderboard').waitFor();
  assert.equal(await projector.locator('#live-leaderboard').isChecked(), false, 'the leaderboard is off by default');
  await checkA11y(projector, 'the live projector page, before the start');
  await projector.locator('form button[type=submit]').click();
  const code = (await projector.locator('.live-code').textContent()).trim();
  assert.match(code, /^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{6}$/);

  const pages = [];
  for (const phone of phones) {
    const page = await newPage();
    await page.setViewportSize({ width: 390, height: 844 });
    await signIn(page, phone.email);
    await inEnglish(page);
    await page.goto(`${base}/#/live`);
    await page.locator('#live-code').waitFor();
    if (!pages.length) await checkA11y(page, 'the live join page');
    await page.locator('#live-code').fill(code.toLowerCase());
    await page.locator('form button[type=submit]').click();
    await page.locator('.live-status', { hasText: 'Joined' }).waitFor();
    pages.push(page);
  }
  await projector.locator('.live-joined', { hasText: '2 joined' }).waitFor();
  // A name that is markup is shown as the text it is: no element made of it, nothing run.
  await projector.locator('.live-names li', { hasText: '<img src=x onerror="window.pwned=1"><b>Bold</b>' }).waitFor();
  assert.equal(await projector.locator('.live-names img, .live-names b').count(), 0);
  assert.equal(await projector.evaluate(() => 'pwned' in window), false);

  await projector.locator('button', { hasText: 'Next question' }).click();
  await projector.locator('.live-prompt').waitFor();
  assert.equal(await projector.locator('.live-bar').count(), 0, 'no distribution while the question is open');
  await assertNoJunkText(projector, 'an open question without an image on the projector');
  for (const [i, page] of pages.entries()) {
    await page.locator('legend.prompt').waitFor();
    assert.match(await page.locator('.live-timer').textContent(), /\d+ s left/);
    if (i === 0) await checkA11y(page, 'a live question on a phone');
    await page.locator('.option label').nth(i).click();
    await page.locator('form button[type=submit]').click();
    await page.locator('.saved-note', { hasText: 'Answer received.' }).waitFor();
  }
  await projector.locator('.live-answered', { hasText: '2 answers' }).waitFor();
  await projector.locator('button', { hasText: 'Close now' }).click();
  await projector.locator('.live-bars').waitFor();
  assert.equal(await projector.locator('.live-bar').count(), 4);
  assert.equal(await projector.locator('.live-bar.is-right').count(), 1);
  const counts = await projector.locator('.live-bar progress').evaluateAll((ps) => ps.map((p) => Number(p.getAttribute('value'))));
  assert.equal(counts.reduce((a, b) => a + b, 0), 2);
  await checkA11y(projector, 'the live projector page with a distribution');
  await assertNoJunkText(projector, 'the distribution on the projector, with no leaderboard');
  for (const page of pages) {
    await page.locator('h2', { hasText: 'How the class answered' }).waitFor();
    await page.locator('.verdict').waitFor(); // the practice quiz's feedback is immediate
    await checkA11y(page, 'the distribution on a phone');
    await assertNoJunkText(page, 'the distribution on a phone');
  }
  await shot(projector, 'live-projector');
  await shot(pages[0], 'live-phone');

  await projector.locator('button', { hasText: 'End the live quiz' }).click();
  for (const page of pages) {
    await page.locator('a', { hasText: 'See your result' }).click();
    await page.waitForURL(/#\/attempt\//);
    await page.locator('h1').waitFor();
  }
  await assertNoJunkText(projector, 'the ended live projector page');
});

test('live mode: the open question\'s image reaches the phones and the projector, with its alt text', async () => {
  // The sampler's first question carries an image (content/kinds-sampler/media/ring.png).
  const quiz = await call('GET', '/v1/quizzes/kinds-sampler');
  const email = `live-image-${RUN}@example.org`;
  await call('POST', '/v1/auth/register', { email, display_name: 'Phone', password: PASSWORD, locale: 'en' });
  const projector = await newPage();
  await signIn(projector, OPERATOR.email);
  await inEnglish(projector);
  await projector.goto(`${base}/#/teach/assignment/${quiz.practice_assignment_id}/live`);
  await projector.locator('#live-leaderboard').waitFor();
  await projector.locator('form button[type=submit]').click();
  const code = (await projector.locator('.live-code').textContent()).trim();
  const phone = await newPage();
  await phone.setViewportSize({ width: 390, height: 844 });
  await signIn(phone, email);
  await inEnglish(phone);
  await phone.goto(`${base}/#/live`);
  await phone.locator('#live-code').fill(code);
  await phone.locator('form button[type=submit]').click();
  await phone.locator('.live-status', { hasText: 'Joined' }).waitFor();
  await projector.locator('.live-joined', { hasText: '1 joined' }).waitFor();
  await projector.locator('button', { hasText: 'Next question' }).click();
  const img = phone.locator('fieldset img.question-image');
  await img.waitFor();
  await phone.waitForFunction(() => document.querySelector('fieldset img.question-image')?.getAttribute('src')?.startsWith('blob:'));
  assert.match(await img.getAttribute('alt'), /^Four GPUs, labelled GPU 0 to GPU 3, joined in a ring/);
  assert.ok(await img.evaluate((i) => i.naturalWidth > 0), 'the image decoded');
  await checkA11y(phone, 'a live question with an image on a phone');
  // The projector shows it too, from the session's own media path.
  await projector.waitForFunction(() => document.querySelector('.live-stage img.question-image')?.getAttribute('src')?.startsWith('blob:'));
  assert.match(await projector.locator('.live-stage img.question-image').getAttribute('alt'), /^Four GPUs/);
  await checkA11y(projector, 'a live question with an image on the projector');
  await projector.locator('button', { hasText: 'End the live quiz' }).click();
  await phone.locator('a', { hasText: 'See your result' }).waitFor();
});

test('nothing left the machine, and no page logged an error', () => {
  assert.deepEqual(external, [], 'requests to other origins');
  assert.deepEqual(problems, [], 'console errors (a CSP violation would be one)');
  assert.deepEqual(failed, [], 'HTTP errors the pages met');
});
