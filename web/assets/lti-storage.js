// @ts-check
// The two pages of an LTI login kept in the platform's storage (src/lti/storage.rs): the login
// puts the state's secret and the nonce there and goes on to the platform; the launch (whose
// state cookie did not come back) reads the secret back and posts the launch again with it.
// Where neither the cookie nor the platform's storage works, the page says so plainly (it
// never stays on "Loading…").

import { ask } from './platform-storage.js';
import { t, setUiLang } from './i18n.js';

/** @type {{ step: 'login' | 'launch', target: string, origin: string, state: string, nonce?: string, secret?: string, next?: string }} */
const data = JSON.parse(document.getElementById('lti-storage')?.textContent || '{}');

/** @param {string} id @param {string} text */
function say(id, text) {
  const el = document.getElementById(id);
  if (el) el.textContent = text;
}

function failed() {
  say('lti-status', '');
  const box = document.getElementById('lti-failed');
  if (box) {
    box.replaceChildren(...[t('lti_storage_failed'), t('lti_storage_failed_what')].map((s) => Object.assign(document.createElement('p'), { textContent: s })));
    box.hidden = false;
  }
}

async function run() {
  setUiLang((navigator.languages || [navigator.language])[0] || 'en');
  say('lti-title', t('lti_storage_title'));
  say('lti-status', t('lti_storage_asking'));
  document.title = `${t('lti_storage_title')} · quizd`;
  if (data.step === 'login' && data.secret && data.next && data.nonce) {
    // Kept in the platform's storage where it offers it; on to the platform either way (the
    // state cookie may still come back, e.g. in a window of its own).
    try {
      await ask(data.target, data.origin, { subject: 'lti.put_data', key: `state_${data.state}`, value: data.secret });
      await ask(data.target, data.origin, { subject: 'lti.put_data', key: `nonce_${data.nonce}`, value: data.nonce });
    } catch {
      /* the launch says so if neither works */
    }
    location.replace(data.next);
  } else if (data.step === 'launch') {
    const secret = await ask(data.target, data.origin, { subject: 'lti.get_data', key: `state_${data.state}` });
    const form = /** @type {HTMLFormElement | null} */ (document.getElementById('lti-launch'));
    const field = /** @type {HTMLInputElement | null} */ (form?.elements.namedItem('lti_storage_secret') ?? null);
    if (!form || !field || !secret) throw new Error('no secret');
    field.value = secret;
    form.submit();
  } else {
    throw new Error('nothing to do');
  }
}

run().catch(failed);
