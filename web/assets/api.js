// The quizd API: JSON over fetch, bearer tokens kept in sessionStorage (this tab only; in
// memory where storage is denied, see storage.js), a rotated refresh on 401, problems
// (RFC 9457) raised as ApiError with their stable `code`.

import { session as tabStore } from './storage.js';

const STORE = 'quizd.session';

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || `HTTP ${status}`);
    this.status = status;
    this.code = problem?.code || (status === 0 ? 'network' : 'http_error');
    this.problem = problem || null;
  }
}

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

export function setSession(tokens) {
  session = { access: tokens.access_token, refresh: tokens.refresh_token };
  tabStore.setItem(STORE, JSON.stringify(session));
}

export function clearSession() {
  session = null;
  tabStore.removeItem(STORE);
}

/// Called when the session ends on its own (the refresh token was refused).
export function whenSignedOut(callback) {
  onSignedOut = callback;
}

// One refresh at a time: refresh tokens are single use, and reusing a spent one signs out
// every session of the sign-in.
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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// `mediaType`: the media type of a body sent as it is (a file); without it the body is JSON.
async function request(method, path, body, raw, mediaType) {
  for (let tries = 0; ; tries += 1) {
    const headers = { accept: raw ? '*/*' : 'application/json' };
    if (body !== undefined) headers['content-type'] = mediaType || 'application/json';
    const used = session?.access;
    if (used) headers.authorization = `Bearer ${used}`;
    let res;
    try {
      res = await fetch(path, { method, headers, body: body === undefined || mediaType ? body : JSON.stringify(body) });
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
    if (!res.ok) throw new ApiError(res.status, typeof data === 'object' ? data : null);
    return data;
  }
}

export const api = {
  get: (path) => request('GET', path),
  post: (path, body = {}) => request('POST', path, body),
  put: (path, body) => request('PUT', path, body),
  patch: (path, body) => request('PATCH', path, body),
  del: (path) => request('DELETE', path),
  /// The raw response (for downloads).
  fetch: (path) => request('GET', path, undefined, true),
  /// `PUT` of a file's text as it is, with its media type (translation uploads).
  putFile: (path, text, mediaType) => request('PUT', path, text, false, mediaType),
  /// `POST` of a file's text as it is (a CSV roster).
  postFile: (path, text, mediaType) => request('POST', path, text, false, mediaType),
  /// Every page of a list (`items`, `grades` and a gradebook's `learners` where a list has
  /// them; other fields from the first page), following `next`: 200 a request, at most 50
  /// requests.
  list: async (path) => {
    let all = null;
    let cursor = null;
    for (let i = 0; i < 50; i++) {
      const sep = path.includes('?') ? '&' : '?';
      const page = await request('GET', `${path}${sep}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
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

export async function signIn(email, password) {
  setSession(await request('POST', '/v1/auth/login', { email, password }));
}

export async function register(fields) {
  setSession(await request('POST', '/v1/auth/register', fields));
}

export async function signOut() {
  const token = session?.refresh;
  clearSession();
  if (token) await request('POST', '/v1/auth/logout', { refresh_token: token }).catch(() => {});
}
