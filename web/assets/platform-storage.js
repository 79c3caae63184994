// @ts-check
// LTI client-side postMessage storage (1EdTech "LTI Client Side postMessages"): the platform's
// storage frame keeps small values for a tool whose cookies the browser blocks inside the
// platform's iframe. `lti.put_data` and `lti.get_data` are sent to the frame the platform named
// (`_parent`, or a frame of the parent window), to the platform's origin alone, and only its
// answers, matched by `message_id`, are read.

/** How long the platform has to answer one message. */
const ANSWER_MS = 3000;

/**
 * The platform's storage frame: the parent window, or the frame of that name in it.
 * @param {string} target
 * @returns {Window | null}
 */
function storageFrame(target) {
  if (window.parent === window) return null; // not framed: no platform around
  if (target === '_parent') return window.parent;
  try {
    return /** @type {Window | null} */ (/** @type {any} */ (window.parent.frames)[target] ?? null);
  } catch {
    return null;
  }
}

/**
 * Sends one message to the platform's storage frame and resolves with its answer (`value`), or
 * rejects: no frame, an error answer, or no answer in time.
 * @param {string} target @param {string} origin
 * @param {{ subject: 'lti.put_data' | 'lti.get_data', key: string, value?: string }} message
 * @returns {Promise<string>}
 */
export function ask(target, origin, message) {
  const frame = storageFrame(target);
  if (!frame) return Promise.reject(new Error('no platform storage frame'));
  const id = `quizd-${Math.random().toString(36).slice(2)}-${Date.now().toString(36)}`;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      window.removeEventListener('message', listen);
      reject(new Error('the platform did not answer'));
    }, ANSWER_MS);
    /** @param {MessageEvent} e */
    function listen(e) {
      const data = e.data;
      if (e.origin !== origin || !data || typeof data !== 'object' || data.message_id !== id) return;
      if (data.subject !== `${message.subject}.response`) return;
      clearTimeout(timer);
      window.removeEventListener('message', listen);
      if (data.error) reject(new Error(`the platform refused: ${data.error.code || 'error'}`));
      else resolve(String(data.value ?? ''));
    }
    window.addEventListener('message', listen);
    frame.postMessage({ ...message, message_id: id }, origin);
  });
}
