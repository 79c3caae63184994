// @ts-check
// An assignment's analytics, drawn as inline SVG: the score histogram, facility and
// discrimination per question, the options chosen, and the comparison between languages.
// Every chart is a <figure> with a caption and its numbers in a table (charts are aria-hidden
// pictures of the numbers beside them, or have a role="img" summary and a data table).

import { api } from './api.js';
import { regradeSection } from './teach.js';
import { h, s, loc, newId } from './dom.js';
import { t, num, pct, nativeName } from './i18n.js';

/// Colours with at least 4.5:1 contrast on white (text) and 3:1 (bars).
const LOCALE_COLOURS = ['#1d4ed8', '#b45309', '#047857', '#7c3aed', '#be123c', '#0e7490'];
const BAR = '#1d4ed8';
const RIGHT = '#047857';
const OTHER = '#475569';
const INK = '#1f2937';
const GRID = '#d1d5db';

function niceMax(n) {
  if (n <= 5) return Math.max(1, n);
  const step = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * step >= n) return m * step;
  return 10 * step;
}

function ticks(max) {
  const steps = max <= 5 ? max : 5;
  return Array.from({ length: steps + 1 }, (_, i) => (max * i) / steps);
}

/**
 * A chart with its caption and description, and the same numbers as a table where given.
 * @param {{ title: string, desc: string, chart: Element, table?: Element | null, cls: string }} parts
 */
function figure({ title, desc, chart, table, cls }) {
  const capId = newId('cap');
  const descId = newId('desc');
  if (chart instanceof SVGElement) {
    chart.setAttribute('role', 'img');
    chart.setAttribute('aria-labelledby', capId);
    chart.setAttribute('aria-describedby', descId);
  }
  return h(
    'figure',
    { class: ['chart', cls] },
    h('figcaption', { id: capId }, h('h2', {}, title)),
    h('p', { class: 'chart-desc', id: descId }, desc),
    chart,
    table ? h('details', { class: 'chart-data' }, h('summary', {}, t('show_table')), table) : null,
  );
}

function dataTable(head, rows) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'data' },
      h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c, i) => (i === 0 ? h('th', { scope: 'row' }, c) : h('td', { class: 'num' }, c)))))),
    ),
  );
}

const fmt = (v, d = 1) => (v == null ? t('nothing') : num(v, d));
const fmtPct = (v) => (v == null ? t('nothing') : pct(v, 1));

/* ------------------------------------------------------------------ histogram */

export function histogram(test) {
  const W = 640;
  const H = 270;
  // The top margin holds the mean's label above every bar and count (a full bar's count sits
  // just above the plot), so that the label never covers one.
  const m = { l: 48, r: 12, t: 40, b: 48 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const counts = test.histogram.map((b) => b.count);
  const max = niceMax(Math.max(...counts, 1));
  const y = (v) => m.t + ph - (v / max) * ph;
  const bw = pw / counts.length;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'svg-chart histogram' });
  for (const v of ticks(max)) {
    svg.append(
      s('line', { x1: m.l, x2: W - m.r, y1: y(v), y2: y(v), stroke: GRID, 'stroke-width': 1 }),
      s('text', { x: m.l - 8, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, num(v, 1)),
    );
  }
  test.histogram.forEach((b, i) => {
    const x = m.l + i * bw + 4;
    if (b.count > 0) {
      svg.append(
        s('rect', { x, y: y(b.count), width: bw - 8, height: m.t + ph - y(b.count), fill: BAR, rx: 2 }),
        s('text', { x: x + (bw - 8) / 2, y: y(b.count) - 6, 'text-anchor': 'middle', class: 'value' }, num(b.count)),
      );
    }
  });
  for (let i = 0; i <= counts.length; i += 1) {
    svg.append(s('text', { x: m.l + i * bw, y: m.t + ph + 18, 'text-anchor': 'middle', class: 'tick' }, num(i * 10)));
  }
  svg.append(
    s('line', { x1: m.l, x2: W - m.r, y1: m.t + ph, y2: m.t + ph, stroke: INK, 'stroke-width': 1.5 }),
    s('text', { x: m.l + pw / 2, y: H - 6, 'text-anchor': 'middle', class: 'axis-title' }, t('score_band')),
    s('text', { x: 14, y: m.t + ph / 2, 'text-anchor': 'middle', class: 'axis-title', transform: `rotate(-90 14 ${m.t + ph / 2})` }, t('attempts_axis')),
  );
  if (test.mean != null) {
    const x = m.l + (test.mean / 100) * pw;
    svg.append(
      s('line', { x1: x, x2: x, y1: 6, y2: m.t + ph, stroke: '#b45309', 'stroke-width': 2, 'stroke-dasharray': '6 4' }),
      s('text', { x: Math.min(x + 6, W - m.r - 4), y: 16, 'text-anchor': x > W - 120 ? 'end' : 'start', class: 'marker' }, t('mean_marker', { v: pct(test.mean, 0) })),
    );
  }
  const table = dataTable(
    [t('score_band'), t('attempts_axis')],
    test.histogram.map((b) => [`${num(b.from)}–${num(b.to)}`, num(b.count)]),
  );
  return figure({ title: t('histogram_title'), desc: t('histogram_desc'), chart: svg, table, cls: 'fig-histogram' });
}

/* ------------------------------------------------------- facility and discrimination */

/// A horizontal bar on a 0..100 scale (or −100..100 when `diverging`), purely visual.
/**
 * @param {number | null | undefined} value
 * @param {{ colour?: string, diverging?: boolean, guide?: number | null }} [style]
 */
function bar(value, { colour = BAR, diverging = false, guide = null } = {}) {
  const W = 200;
  const H = 20;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'bar', 'aria-hidden': 'true', focusable: 'false' });
  svg.append(s('rect', { x: 0, y: 4, width: W, height: H - 8, fill: '#f1f5f9', rx: 2 }));
  if (value != null) {
    if (diverging) {
      const zero = W / 2;
      const w = (Math.max(-100, Math.min(100, value)) / 100) * (W / 2);
      svg.append(s('rect', { x: w < 0 ? zero + w : zero, y: 4, width: Math.abs(w), height: H - 8, fill: colour }));
    } else {
      svg.append(s('rect', { x: 0, y: 4, width: (Math.max(0, Math.min(100, value)) / 100) * W, height: H - 8, fill: colour, rx: 2 }));
    }
  }
  if (diverging) svg.append(s('line', { x1: W / 2, x2: W / 2, y1: 0, y2: H, stroke: INK, 'stroke-width': 1.5 }));
  if (guide != null) {
    const gx = diverging ? W / 2 + (guide / 100) * (W / 2) : (guide / 100) * W;
    svg.append(s('line', { x1: gx, x2: gx, y1: 0, y2: H, stroke: INK, 'stroke-width': 1, 'stroke-dasharray': '3 2' }));
  }
  return svg;
}

function discBand(d) {
  if (d == null) return { word: t('nothing'), colour: OTHER };
  if (d >= 30) return { word: t('disc_good'), colour: '#047857' };
  if (d >= 15) return { word: t('disc_fair'), colour: '#b45309' };
  if (d >= 0) return { word: t('disc_poor'), colour: '#4b5563' };
  return { word: t('disc_negative'), colour: '#b91c1c' };
}

function questionLabel(q) {
  return [h('span', { class: 'qnum' }, num(q.position)), ' ', loc('span', q.prompt, { class: 'qprompt' })];
}

export function facilityDiscrimination(questions) {
  const table = h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'chart-table fd' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, t('question')), h('th', { scope: 'col' }, t('facility')), h('th', { scope: 'col' }, t('discrimination')))),
      h(
        'tbody',
        {},
        questions.map((q) => {
          const band = discBand(q.discrimination_index);
          return h(
            'tr',
            {},
            h('th', { scope: 'row' }, h('div', { class: 'qlabel-cell' }, questionLabel(q))),
            h('td', {}, h('div', { class: 'barcell' }, bar(q.facility), h('span', { class: 'val' }, fmtPct(q.facility)))),
            h(
              'td',
              {},
              h(
                'div',
                { class: 'barcell' },
                bar(q.discrimination_index, { colour: band.colour, diverging: true, guide: 30 }),
                h('span', { class: 'val' }, fmt(q.discrimination_index, 0), q.discrimination_index != null ? h('span', { class: 'band' }, ` ${band.word}`) : null),
              ),
            ),
          );
        }),
      ),
    ),
  );
  return figure({ title: t('fd_title'), desc: t('fd_desc'), chart: table, cls: 'fig-fd' });
}

/* ------------------------------------------------------------------ distractors */

export function distractors(questions) {
  const choice = questions.filter((q) => q.options.length);
  const grid = h(
    'div',
    { class: 'distractor-grid' },
    choice.map((q) => {
      const total = Math.max(1, q.responses, ...q.options.map((o) => o.count));
      return h(
        'div',
        { class: 'card mini', dataset: { key: q.key } },
        h('p', { class: 'mini-title' }, questionLabel(q)),
        h(
          'table',
          { class: 'chart-table options' },
          h('thead', { class: 'visually-hidden' }, h('tr', {}, h('th', { scope: 'col' }, t('option')), h('th', { scope: 'col' }, t('chosen')))),
          h(
            'tbody',
            {},
            q.options.map((o) =>
              h(
                'tr',
                { class: o.correct ? 'is-right' : null },
                h(
                  'th',
                  { scope: 'row' },
                  o.correct ? [h('span', { class: 'right-mark', 'aria-hidden': 'true' }, '✓ '), h('span', { class: 'visually-hidden' }, `${t('right_option')}: `)] : null,
                  loc('span', o.text),
                ),
                h(
                  'td',
                  {},
                  h(
                    'div',
                    { class: 'barcell' },
                    bar((100 * o.count) / total, { colour: o.correct ? RIGHT : OTHER }),
                    h('span', { class: 'val' }, num(o.count), o.mean_total != null ? h('span', { class: 'sub' }, ` · ${t('mean_total_of_choosers', { v: pct(o.mean_total, 0) })}`) : null),
                  ),
                ),
              ),
            ),
          ),
        ),
      );
    }),
  );
  return figure({ title: t('distractors_title'), desc: t('distractors_desc'), chart: grid, cls: 'fig-distractors' });
}

/* ------------------------------------------------------------------ per language */

export function perLanguage(version) {
  const locales = version.locales.filter((l) => l.attempts > 0);
  const colour = new Map(locales.map((l, i) => [l.locale, LOCALE_COLOURS[i % LOCALE_COLOURS.length]]));
  const facility = new Map(locales.map((l) => [l.locale, new Map(l.questions.map((q) => [q.key, q.facility]))]));
  const diffs = new Map(version.locale_differences.map((d) => [d.key, d]));
  const qs = version.questions;

  const W = 720;
  const H = 290;
  const m = { l: 48, r: 8, t: 30, b: 58 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const gw = pw / Math.max(1, qs.length);
  const bw = Math.min(24, (gw - 10) / Math.max(1, locales.length));
  const y = (v) => m.t + ph - (v / 100) * ph;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'svg-chart per-language' });
  for (const v of [0, 25, 50, 75, 100]) {
    svg.append(
      s('line', { x1: m.l, x2: W - m.r, y1: y(v), y2: y(v), stroke: GRID, 'stroke-width': 1 }),
      s('text', { x: m.l - 8, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, pct(v)),
    );
  }
  qs.forEach((q, i) => {
    const gx = m.l + i * gw + (gw - bw * locales.length) / 2;
    locales.forEach((l, j) => {
      const f = facility.get(l.locale).get(q.key);
      const x = gx + j * bw;
      if (f != null) {
        svg.append(s('rect', { x: x + 1, y: y(f), width: bw - 2, height: Math.max(1, m.t + ph - y(f)), fill: colour.get(l.locale) }));
      }
      svg.append(s('text', { x: x + bw / 2, y: m.t + ph + 14, 'text-anchor': 'middle', class: 'tick small', lang: l.locale }, l.locale));
    });
    svg.append(s('text', { x: m.l + i * gw + gw / 2, y: m.t + ph + 34, 'text-anchor': 'middle', class: 'qlabel' }, num(q.position)));
    if (diffs.get(q.key)?.flagged) {
      svg.append(s('text', { x: m.l + i * gw + gw / 2, y: m.t - 10, 'text-anchor': 'middle', class: 'flag' }, '⚠'));
    }
  });
  svg.append(
    s('line', { x1: m.l, x2: W - m.r, y1: m.t + ph, y2: m.t + ph, stroke: INK, 'stroke-width': 1.5 }),
    s('text', { x: m.l + pw / 2, y: H - 4, 'text-anchor': 'middle', class: 'axis-title' }, t('question')),
    s('text', { x: 14, y: m.t + ph / 2, 'text-anchor': 'middle', class: 'axis-title', transform: `rotate(-90 14 ${m.t + ph / 2})` }, t('facility')),
  );

  const legend = h(
    'ul',
    { class: 'legend' },
    locales.map((l) => {
      const sw = h('span', { class: 'swatch', 'aria-hidden': 'true' });
      sw.style.background = colour.get(l.locale);
      return h(
        'li',
        {},
        sw,
        h('span', { lang: l.locale }, nativeName(l.locale)),
        ` (${l.locale}): `,
        t('locale_summary', { n: l.attempts, m: fmtPct(l.mean) }),
      );
    }),
  );

  const flagged = qs.filter((q) => diffs.get(q.key)?.flagged);
  const flags = flagged.length
    ? h(
        'ul',
        { class: 'flags' },
        flagged.map((q) =>
          h('li', {}, h('span', { 'aria-hidden': 'true' }, '⚠'), questionLabel(q), h('span', {}, `— ${t('flagged', { p: pValue(diffs.get(q.key).p_value) })}`)),
        ),
      )
    : null;

  const table = dataTable(
    [t('question'), ...locales.map((l) => `${t('facility')} (${l.locale})`), 'χ²', t('dif_column')],
    qs.map((q) => {
      const d = diffs.get(q.key);
      const test = !d ? t('nothing') : d.p_value == null ? h('span', { lang: 'en' }, d.note || t('not_tested')) : `${d.flagged ? '⚠ ' : ''}${pValue(d.p_value)}`;
      const fallback = d?.mantel_haenszel.some((pair) => pair.same_language);
      const label = fallback ? [num(q.position), ' ', h('span', { class: 'fallback-mark' }, t('dif_fallback_question'))] : num(q.position);
      return [label, ...locales.map((l) => fmtPct(facility.get(l.locale).get(q.key))), test, difCell(d)];
    }),
  );
  const fig = figure({ title: t('locales_title'), desc: t('locales_desc'), chart: svg, table, cls: 'fig-locales' });
  fig.querySelector('.chart-desc').after(legend);
  if (flags) svg.after(flags);
  return fig;
}

/// Mantel–Haenszel DIF of one question, a line per pair of languages: the ETS class (A
/// negligible, B moderate, C large) or why there is none, and whether both groups saw the
/// question in the same (fallback) language, when a difference is no translation effect.
function difCell(d) {
  if (!d || !d.mantel_haenszel.length) return t('nothing');
  return h(
    'ul',
    { class: 'dif' },
    d.mantel_haenszel.map((pair) => {
      const cls = pair.ets_class;
      const what = cls ? h('span', { class: `ets ets-${cls}` }, t(`dif_ets_${cls}`)) : h('span', { class: 'meta' }, t('dif_insufficient'));
      return h(
        'li',
        { dataset: { pair: `${pair.reference}-${pair.focal}`, ets: cls || '' } },
        h('span', { lang: pair.reference }, pair.reference),
        '–',
        h('span', { lang: pair.focal }, pair.focal),
        ': ',
        what,
        pair.same_language
          ? h('span', { class: 'same-language' }, ` · ${t('dif_same_language', { lang: [...new Set(pair.reference_languages)].join(', ') })}`)
          : null,
      );
    }),
  );
}

/// "p < 0.001" or "p = 0.012".
function pValue(p) {
  if (p == null) return t('nothing');
  if (p < 0.001) return `p < ${num(0.001, 3)}`;
  return `p = ${num(p, 3)}`;
}

/* ------------------------------------------------------------------ the page */

/// Below this many attempts Cronbach's alpha says too little to print: its 95% interval (Feldt)
/// for a 10-question test at alpha 0.8 is about 0.67–0.89 with 30 attempts and 0.55–0.94 with
/// 10. The same 30 as the per-language comparison's "not enough data".
const ALPHA_MIN_ATTEMPTS = 30;

/// Cronbach's alpha with the number of attempts it comes from, or why it is not shown.
/** @param {number | null | undefined} alpha in percent @param {number} n */
function alphaText(alpha, n) {
  if (n < ALPHA_MIN_ATTEMPTS) return t('alpha_too_few', { n, min: ALPHA_MIN_ATTEMPTS });
  if (alpha == null) return t('nothing');
  return t('alpha_with_n', { v: pct(alpha, 1), n });
}

function stats(v) {
  const c = v.counts;
  const tt = v.test;
  const items = [
    [t('counted_attempts'), num(c.counted)],
    [t('attempts_started'), num(c.started)],
    [t('attempts_finished'), num(c.finished)],
    [t('attempts_in_progress'), num(c.in_progress)],
    [t('attempts_abandoned'), num(c.abandoned)],
    [t('mean_score'), fmtPct(tt.mean)],
    [t('median_score'), fmtPct(tt.median)],
    // Scores are percentages, so their spread is in percentage points.
    [t('standard_deviation'), tt.standard_deviation == null ? t('nothing') : t('sd_points', { v: num(tt.standard_deviation, 1) })],
    [t('cronbach_alpha'), alphaText(tt.cronbach_alpha, c.counted)],
  ];
  return h('dl', { class: 'stats' }, items.map(([k, val]) => h('div', {}, h('dt', {}, k), h('dd', {}, val))));
}

/** @param {import('./app.js').Ctx} ctx @param {() => Promise<Response>} download @param {string} label @param {string} filename */
function downloadButton(ctx, download, label, filename) {
  const error = h('span', { class: 'inline-error', role: 'alert' });
  const button = h('button', { type: 'button' }, label);
  // The exports need the bearer token, so a plain link cannot fetch them: fetch, then save.
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      const res = await download();
      const url = URL.createObjectURL(await res.blob());
      const a = h('a', { href: url, download: filename, hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (err) {
      error.replaceChildren(ctx.errorText(err));
    } finally {
      button.disabled = false;
    }
  });
  return [button, error];
}

export async function analyticsPage(view, ctx, id) {
  const [assignment, report, catalogue] = await Promise.all([
    api.get('/v1/assignments/{id}', { id }),
    api.get('/v1/assignments/{id}/analytics', { id, lang: ctx.lang }),
    api.list('/v1/quizzes', { lang: ctx.lang }),
  ]);
  const quiz = catalogue.items.find((q) => q.slug === assignment.quiz);
  view.classList.add('wide');
  view.append(
    h(
      'p',
      { class: 'breadcrumb' },
      h('a', { href: '#/teach' }, t('teach_title')),
      assignment.course_id ? [' › ', h('a', { href: `#/teach/course/${assignment.course_id}` }, t('back_to_course'))] : null,
    ),
    h('h1', {}, `${t('analytics_of')}: `, h('bdi', {}, assignment.title)),
    h('p', { class: 'meta' }, quiz ? [loc('span', quiz.title), ' · '] : null, t('version_n', { n: assignment.quiz_version })),
    h(
      'p',
      { class: 'actions' },
      downloadButton(ctx, () => api.fetch('/v1/assignments/{id}/analytics/responses.csv', { id }), t('download_responses'), `responses-${id}.csv`),
      downloadButton(ctx, () => api.fetch('/v1/assignments/{id}/analytics/results.csv', { id }), t('download_results'), `results-${id}.csv`),
    ),
  );
  for (const v of report.versions) {
    const section = h('section', { class: 'version', 'aria-label': t('version_n', { n: v.quiz_version }) });
    if (report.versions.length > 1) section.append(h('h2', {}, t('version_n', { n: v.quiz_version })));
    section.append(stats(v));
    if (!v.counts.counted) {
      section.append(h('p', { class: 'notice' }, t('no_data')));
    } else {
      section.append(
        h('div', { class: 'chart-row' }, histogram(v.test)),
        facilityDiscrimination(v.questions),
        distractors(v.questions),
        perLanguage(v),
      );
    }
    view.append(section);
  }
  if (assignment.course_id) {
    const roster = await api.list('/v1/courses/{id}/enrollments', { id: assignment.course_id });
    const assigned = report.versions.find((v) => v.quiz_version === assignment.quiz_version);
    view.append(regradeSection(ctx, assignment, roster.items, {
      latest: quiz?.version,
      questionKeys: (assigned?.questions || []).map((q) => q.key),
    }));
  }
}
