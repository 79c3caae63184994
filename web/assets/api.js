// @ts-check
// The quizd API: JSON over fetch, bearer tokens kept in sessionStorage (this tab only; in
// memory where storage is denied, see storage.js), a rotated refresh on 401, problems
// (RFC 9457) raised as ApiError with their stable `code`.
//
// Typed against the API (`clients/typescript/schema.d.ts`, generated from the OpenAPI
// document): a call names the path as the document spells it (`/v1/attempts/{id}`) and gives
// its parameters, so tsc checks the path and method exist, and types the body sent and the JSON
// returned. The imports below are JSDoc types only: nothing is fetched at run time.

import { session as tabStore } from './storage.js';

/** @typedef {import('../../clients/typescript/schema').paths} Paths */
/** @typedef {import('../../clients/typescript/schema').components['schemas']} Schemas */
/** @typedef {'get' | 'put' | 'post' | 'patch' | 'delete'} Method */
/**
 * The paths that have method `M`.
 * @template {Method} M
 * @typedef {{ [P in keyof Paths]: Paths[P] extends Record<M, object> ? P : never }[keyof Paths]} PathWith
 */
/**
 * The JSON of an operation's 200, 201 or 202, or null (204).
 * @template O
 * @typedef {O extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B
 *   : O extends { responses: { 201: { content: { 'application/json': infer B } } } } ? B
 *   : O extends { responses: { 202: { content: { 'application/json': infer B } } } } ? B : null} Ok
 */
/**
 * The JSON body an operation takes.
 * @template O
 * @typedef {O extends { requestBody: { content: { 'application/json': infer B } } } ? B
 *   : O extends { requestBody?: { content: { 'application/json': infer B } } } ? B | undefined : undefined} Body
 */
/**
 * An operation's path and query parameters, in one object: those named in the path fill it,
 * the others make the query string.
 * @template O
 * @typedef {(O extends { parameters: { path: infer A } } ? A : {}) &
 *   (O extends { parameters: { query?: infer Q } } ? ([NonNullable<Q>] extends [never] ? {} : Partial<NonNullable<Q>>) : {})} Params
 */
/**
 * @template {Method} M
 * @template {PathWith<M>} P
 * @typedef {Paths[P][M]} Op
 */
/** @typedef {{ access: string, refresh: string }} Tokens */

const STORE = 'quizd.session';

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {Schemas['Problem'] & Record<string, any> | null} problem the problem, with its extension members
   */
  constructor(status, problem) {
    super(problem?.detail || `HTTP ${status}`);
    this.status = status;
    this.code = problem?.code || (status === 0 ? 'network' : 'http_error');
    this.problem = problem || null;
  }
}

/** @type {Tokens | null} */
let session = null;
try {
  session = JSON.parse(tabStore.getItem(STORE) || 'null');
} catch {
  session = null;
}
let onSignedOut = () => {};

export function signedIn() {
  return session !== null;
}

/** @param {{ access_token: string, refresh_token: string }} tokens */
export function setSession(tokens) {
  session = { access: tokens.access_token, refresh: tokens.refresh_token };
  tabStore.setItem(STORE, JSON.stringify(session));
}

export function clearSession() {
  session = null;
  tabStore.removeItem(STORE);
}

/// Called when the session ends on its own (the refresh token was refused).
/** @param {() => void} callback */
export function whenSignedOut(callback) {
  onSignedOut = callback;
}

// One refresh at a time: refresh tokens are single use, and reusing a spent one signs out
// every session of the sign-in.
/** @type {Promise<void> | null} */
let refreshing = null;
function refresh() {
  if (!refreshing) {
    const token = session?.refresh;
    refreshing = (async () => {
      const res = await fetch('/v1/auth/refresh', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ refresh_token: token }),
      });
      if (!res.ok) {
        clearSession();
        onSignedOut();
        throw new ApiError(401, await res.json().catch(() => null));
      }
      setSession(await res.json());
    })().finally(() => {
      refreshing = null;
    });
  }
  return refreshing;
}

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * `path` with its `{name}` parameters filled from `params`, the other parameters as its query.
 * @param {string} path
 * @param {Record<string, string | number | boolean | null | undefined>} [params]
 */
export function fill(path, params = {}) {
  const used = new Set();
  const filled = path.replace(/\{(\w+)\}/g, (_, name) => {
    used.add(name);
    const value = params[name];
    if (value === undefined || value === null) throw new Error(`${path}: no ${name}`);
    return encodeURIComponent(String(value));
  });
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (!used.has(k) && v !== undefined && v !== null) query.set(k, String(v));
  const q = query.toString();
  return q ? `${filled}?${q}` : filled;
}

/**
 * `mediaType`: the media type of a body sent as it is (a file); without it the body is JSON.
 * @param {string} method
 * @param {string} path the path, filled
 * @param {unknown} [body]
 * @param {boolean} [raw] the response itself, for a download
 * @param {string} [mediaType]
 * @returns {Promise<any>} typed by its callers, from the operation
 */
async function request(method, path, body, raw, mediaType) {
  for (let tries = 0; ; tries += 1) {
    /** @type {Record<string, string>} */
    const headers = { accept: raw ? '*/*' : 'application/json' };
    if (body !== undefined) headers['content-type'] = mediaType || 'application/json';
    const used = session?.access;
    if (used) headers.authorization = `Bearer ${used}`;
    let res;
    try {
      const sent = body === undefined || mediaType ? /** @type {string | undefined} */ (body) : JSON.stringify(body);
      res = await fetch(path, { method, headers, body: sent });
    } catch {
      throw new ApiError(0, null);
    }
    if (res.status === 401 && used && tries < 2) {
      // Another request may have refreshed meanwhile; otherwise refresh now.
      if (session?.access === used) await refresh();
      continue;
    }
    if (res.status === 503 && tries < 2) {
      await sleep(1000 * Number(res.headers.get('retry-after') || 1));
      continue;
    }
    if (raw && res.ok) return res;
    const type = res.headers.get('content-type') || '';
    const data = res.status === 204 ? null : type.includes('json') ? await res.json() : await res.text();
    if (!res.ok) throw new ApiError(res.status, data !== null && typeof data === 'object' ? data : null);
    return data;
  }
}

export const api = {
  /**
   * @template {PathWith<'get'>} P
   * @param {P} path @param {Params<Op<'get', P>>} [params]
   * @returns {Promise<Ok<Op<'get', P>>>}
   */
  get: (path, params) => request('GET', fill(path, params)),
  /**
   * @template {PathWith<'post'>} P
   * @param {P} path @param {Params<Op<'post', P>>} params @param {Body<Op<'post', P>>} [body]
   * @returns {Promise<Ok<Op<'post', P>>>}
   */
  post: (path, params, body) => request('POST', fill(path, params), body ?? {}),
  /**
   * @template {PathWith<'put'>} P
   * @param {P} path @param {Params<Op<'put', P>>} params @param {Body<Op<'put', P>>} body
   * @returns {Promise<Ok<Op<'put', P>>>}
   */
  put: (path, params, body) => request('PUT', fill(path, params), body),
  /**
   * @template {PathWith<'patch'>} P
   * @param {P} path @param {Params<Op<'patch', P>>} params @param {Body<Op<'patch', P>>} body
   * @returns {Promise<Ok<Op<'patch', P>>>}
   */
  patch: (path, params, body) => request('PATCH', fill(path, params), body),
  /**
   * @template {PathWith<'delete'>} P
   * @param {P} path @param {Params<Op<'delete', P>>} params
   * @returns {Promise<Ok<Op<'delete', P>>>}
   */
  del: (path, params) => request('DELETE', fill(path, params)),
  /**
   * The raw response (for downloads).
   * @template {PathWith<'get'>} P
   * @param {P} path @param {Params<Op<'get', P>>} params
   * @returns {Promise<Response>}
   */
  fetch: (path, params) => request('GET', fill(path, params), undefined, true),
  /**
   * A question's image (`image.url` of a question, a path the API gave) as an object URL,
   * fetched with the bearer token, which an `<img>` cannot send. Revoke it with
   * `URL.revokeObjectURL` once it is off the page.
   * @param {string} url
   * @returns {Promise<string>}
   */
  objectUrl: async (url) => {
    if (!url.startsWith('/v1/')) throw new Error(`not an API path: ${url}`);
    const res = await request('GET', url, undefined, true);
    return URL.createObjectURL(await res.blob());
  },
  /**
   * `PUT` of a file's text as it is, with its media type (translation uploads).
   * @template {PathWith<'put'>} P
   * @param {P} path @param {Params<Op<'put', P>>} params @param {string} text @param {string} mediaType
   * @returns {Promise<Ok<Op<'put', P>>>}
   */
  putFile: (path, params, text, mediaType) => request('PUT', fill(path, params), text, false, mediaType),
  /**
   * `POST` of a file's text as it is (a CSV roster).
   * @template {PathWith<'post'>} P
   * @param {P} path @param {Params<Op<'post', P>>} params @param {string} text @param {string} mediaType
   * @returns {Promise<Ok<Op<'post', P>>>}
   */
  postFile: (path, params, text, mediaType) => request('POST', fill(path, params), text, false, mediaType),
  /**
   * Every page of a list (`items`, `grades` and a gradebook's `learners` where a list has
   * them; other fields from the first page), following `next`: 200 a request, at most 50
   * requests.
   * @template {PathWith<'get'>} P
   * @param {P} path @param {Params<Op<'get', P>>} [params]
   * @returns {Promise<Ok<Op<'get', P>>>}
   */
  list: async (path, params) => {
    /** @type {any} */
    let all = null;
    /** @type {string | null} */
    let cursor = null;
    for (let i = 0; i < 50; i++) {
      const page = await request('GET', fill(path, { ...params, limit: 200, cursor }));
      all ??= { ...page, items: [], grades: [], learners: [] };
      if (page.items) all.items.push(...page.items);
      if (page.grades) all.grades.push(...page.grades);
      if (page.learners) all.learners.push(...page.learners);
      if (!page.next) break;
      cursor = page.next;
    }
    delete all.next;
    delete all.next_after;
    return all;
  },
};

/**
 * Reads a Server-Sent Events stream (`text/event-stream`) sent with the bearer token, which
 * EventSource cannot send: `onEvent(name, data)` for each event, until the server ends the
 * stream (resolves) or `signal` aborts (resolves); a problem rejects as an ApiError.
 * @param {string} path the path, filled
 * @param {(name: string, data: any) => void} onEvent
 * @param {AbortSignal} signal
 */
export async function stream(path, onEvent, signal) {
  for (let tries = 0; ; tries += 1) {
    /** @type {Record<string, string>} */
    const headers = { accept: 'text/event-stream' };
    const used = session?.access;
    if (used) headers.authorization = `Bearer ${used}`;
    let res;
    try {
      res = await fetch(path, { headers, signal });
    } catch {
      if (signal.aborted) return;
      throw new ApiError(0, null);
    }
    if (res.status === 401 && used && tries < 2) {
      if (session?.access === used) await refresh();
      continue;
    }
    if (!res.ok || !res.body) throw new ApiError(res.status, await res.json().catch(() => null));
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        // An event is at most a few kilobytes; a stream that sends something else is cut.
        if (buffer.length > 1_000_000) throw new Error('event too large');
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let name = '';
          let data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) name = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (name) onEvent(name, JSON.parse(data));
        }
      }
    } catch {
      if (signal.aborted) return;
      throw new ApiError(0, null);
    }
  }
}

/** @param {string} email @param {string} password */
export async function signIn(email, password) {
  setSession(await api.post('/v1/auth/login', {}, { email, password }));
}

/** @param {Schemas['RegisterRequest']} fields */
export async function register(fields) {
  setSession(await api.post('/v1/auth/register', {}, fields));
}

export async function signOut() {
  const token = session?.refresh;
  clearSession();
  if (token) await api.post('/v1/auth/logout', {}, { refresh_token: token }).catch(() => {});
}
