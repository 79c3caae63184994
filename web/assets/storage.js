// @ts-check
// Web storage that may be denied. In an LMS's iframe on another site, a browser that blocks
// third-party storage throws on the first touch of `localStorage` or `sessionStorage`
// ("Access is denied"). Every page goes through here instead: where a store is denied (or a
// write fails), its values live in memory for this tab only, and `storageDenied()` says so,
// so the page can tell the person once what a reload will lose (the sign-in, the language).

const denied = new Set();

/** @param {'localStorage' | 'sessionStorage'} name */
function open(name) {
  try {
    const store = window[name];
    const probe = 'quizd.probe';
    store.setItem(probe, '1');
    store.removeItem(probe);
    return store;
  } catch {
    denied.add(name);
    return null;
  }
}

/** @param {'localStorage' | 'sessionStorage'} name */
function area(name) {
  const real = open(name);
  const memory = new Map();
  return {
    getItem(key) {
      if (memory.has(key)) return memory.get(key);
      if (!real) return null;
      try {
        return real.getItem(key);
      } catch {
        denied.add(name);
        return null;
      }
    },
    setItem(key, value) {
      const text = String(value);
      if (real) {
        try {
          real.setItem(key, text);
          memory.delete(key);
          return;
        } catch {
          denied.add(name); // full, or withdrawn meanwhile: keep it for this tab
        }
      }
      memory.set(key, text);
    },
    removeItem(key) {
      memory.delete(key);
      if (!real) return;
      try {
        real.removeItem(key);
      } catch {
        denied.add(name);
      }
    },
  };
}

/// Kept across reloads and tabs where allowed (the interface language).
export const local = area('localStorage');
/// Kept for this tab across reloads where allowed (the session's tokens, where to return).
export const session = area('sessionStorage');

/// Whether something that should survive a reload lives only in this page's memory.
export function storageDenied() {
  return denied.size > 0;
}
