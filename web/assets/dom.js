// @ts-check
// Small DOM helpers. No innerHTML anywhere: every text is a text node.

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

/// `h('p', {class: 'x'}, 'text', child)`: an HTML element.
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/// Replaces `el`'s children as `h` builds them: null, undefined and false are skipped and arrays
/// flattened (native `replaceChildren` would write a null as the text "null").
export function setChildren(el, ...children) {
  el.replaceChildren();
  return build(el, null, children);
}

/// An SVG element (attributes, never a style attribute: the CSP allows no inline style).
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/// A text the API returned, `{text, lang}`, in an element that says which language it is in.
export function loc(tag, localized, attrs = {}) {
  return h(tag, { ...attrs, lang: localized.lang }, localized.text);
}

/// Tells screen readers, through the page's polite live region. `parts` are strings (in the
/// interface language) or nodes (e.g. an explanation with its own `lang`).
export function announce(...parts) {
  const region = document.getElementById('announcer');
  if (!region) return;
  region.replaceChildren();
  // A fresh node in a later task: the same words twice in a row are still announced.
  setTimeout(() => {
    region.replaceChildren(...parts.flat().filter(Boolean).map((p) => (p instanceof Node ? p : h('span', {}, p, ' '))));
  }, 50);
}

let uid = 0;
export function newId(prefix = 'id') {
  uid += 1;
  return `${prefix}-${uid}`;
}

/// Moves keyboard and screen-reader focus to `el` (made focusable if it is not).
export function focus(el) {
  if (!el) return;
  if (!el.hasAttribute('tabindex') && !/^(A|BUTTON|INPUT|SELECT|TEXTAREA)$/.test(el.tagName)) {
    el.setAttribute('tabindex', '-1');
  }
  el.focus({ preventScroll: false });
}
