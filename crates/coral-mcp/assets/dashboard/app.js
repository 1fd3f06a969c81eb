// The dashboard's shell: views as tabs (#/overview ...), the language switch, the token
// question, and live refresh (on focus, and when /health counts other memories).

import { health, onTokenNeeded } from './api.js';
import { t, lang, setLang } from './i18n.js';
import { h, dialog, dialogOpen, field, errorBox } from './ui.js';
import overview from './overview.js';

performance.mark('coral-script');
export const meta = JSON.parse(document.getElementById('coral-meta').textContent);

// Only the first view is loaded up front; the others when first opened.
const VIEWS = [
  { id: 'overview', load: async () => overview },
  { id: 'settings', load: async () => (await import('./settings.js')).default },
  { id: 'memories', load: async () => (await import('./memories.js')).default },
  { id: 'threads', load: async () => (await import('./threads.js')).default },
  { id: 'timeline', load: async () => (await import('./timeline.js')).default },
];

const main = document.getElementById('main');
const tabs = document.getElementById('tabs');
let current = null;
let rendering = null;
let generation = 0;
// What the last /health poll found: null (not asked yet), 'live' or 'offline'.
let liveState = null;
let lastCount = null;

function viewFromHash() {
  const id = location.hash.replace(/^#\/?/, '');
  return VIEWS.find((v) => v.id === id) || VIEWS[0];
}

function drawLive() {
  const live = document.getElementById('live');
  live.textContent = liveState === null ? '' : `${liveState === 'live' ? '●' : '○'} ${t(liveState)}`;
  live.title = t('live_help');
}

function drawChrome() {
  document.documentElement.lang = lang() === 'zh' ? 'zh-CN' : 'en';
  document.title = `${t('brand')} · ${t(`view.${viewFromHash().id}`)}`;
  document.getElementById('brand-name').textContent = t('brand');
  const langButton = document.getElementById('lang');
  langButton.textContent = lang() === 'zh' ? 'English' : '中文';
  langButton.setAttribute('lang', lang() === 'zh' ? 'en' : 'zh');
  langButton.setAttribute('aria-label', t('switch_language'));
  const refresh = document.getElementById('refresh');
  refresh.textContent = t('refresh');
  refresh.title = `${t('refresh')} (R)`;
  drawLive();
  // Built once and updated in place, so a focused tab keeps the focus.
  if (!tabs.firstChild) {
    for (const v of VIEWS) tabs.append(h('a', { href: `#/${v.id}`, role: 'tab', id: `tab-${v.id}`, 'aria-controls': 'main' }));
  }
  const active = viewFromHash();
  VIEWS.forEach((v, i) => {
    const a = document.getElementById(`tab-${v.id}`);
    a.textContent = t(`view.${v.id}`);
    a.title = `${t(`view.${v.id}`)} (${i + 1})`;
    a.setAttribute('aria-selected', v === active ? 'true' : 'false');
    a.tabIndex = v === active ? 0 : -1;
    a.className = v === active ? 'active' : '';
  });
  // On a narrow screen the tab strip scrolls: keep the current tab in sight. In the next frame,
  // so that the layout this needs never delays the view's first request.
  requestAnimationFrame(() => {
    document.getElementById(`tab-${active.id}`).scrollIntoView({ block: 'nearest', inline: 'nearest' });
  });
}

/**
 * Draw the view of the address; `keep` keeps its state (a refresh, not a new visit). Each view
 * renders into a detached stage that replaces the page only if no later call started meanwhile,
 * so a slow answer never paints over a newer view.
 */
async function show(keep = false) {
  const v = viewFromHash();
  const mine = ++generation;
  drawChrome();
  main.setAttribute('aria-busy', 'true');
  const focused = main.contains(document.activeElement) ? document.activeElement.id : null;
  const stage = document.createElement('div');
  const run = (async () => {
    try {
      const view = await v.load();
      await view.render(stage, { meta, refresh: () => show(true) });
      if (mine !== generation) return;
      current = view;
      main.replaceChildren(...stage.childNodes);
      // A new view starts at the top (not on the first one: nothing is scrolled yet, and
      // scrolling would force a layout before the view counts as drawn).
      if (!keep && document.body.dataset.ready) window.scrollTo(0, 0);
      if (keep && focused) document.getElementById(focused)?.focus();
      for (const el of main.querySelectorAll('[data-w]')) {
        // Widths through the CSSOM: the CSP allows no inline style attributes.
        el.style.width = `${Math.max(0, Math.min(1, Number(el.dataset.w))) * 100}%`;
      }
      document.body.dataset.view = v.id;
    } catch (e) {
      if (mine !== generation) return;
      main.replaceChildren(errorBox(e));
      console.warn(e);
    } finally {
      if (mine === generation) {
        main.setAttribute('aria-busy', 'false');
        main.setAttribute('aria-labelledby', `tab-${v.id}`);
      }
    }
  })();
  rendering = run;
  await run;
  // What the page just drew is current: only a later change by someone else refreshes it.
  if (mine === generation) {
    health().then((a) => { lastCount = a.memories; }).catch(() => {});
  }
  if (mine === generation && !document.body.dataset.ready) {
    document.body.dataset.ready = '1';
    performance.mark('coral-first-view');
  }
}

function liveRefresh() {
  if (document.hidden || dialogOpen() || rendering === null) return;
  if (current && current.busy && current.busy()) return;
  // Someone typing keeps their text and focus.
  const active = document.activeElement;
  if (active && main.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)) return;
  show(true);
}

async function poll() {
  if (document.hidden || dialogOpen()) return;
  try {
    const answer = await health();
    const count = answer.memories;
    liveState = 'live';
    if (lastCount !== null && count !== lastCount) liveRefresh();
    lastCount = count;
  } catch {
    liveState = 'offline';
  }
  drawLive();
}

onTokenNeeded(async (reason) => {
  const input = h('input', { type: 'password', autocomplete: 'current-password', spellcheck: 'false' });
  const answer = await dialog({
    title: t('token.title'),
    body: [h('p', { text: t('token.why') }), reason ? h('p', { class: 'muted', text: reason }) : null,
      field(t('token.label'), input, t('token.help'), 'token-input')],
    buttons: [{ label: t('cancel'), value: null }, { label: t('token.use'), value: 'ok', kind: 'primary' }],
    check: () => (input.value.trim().length < 16 ? t('token.short') : null),
    initialFocus: '#token-input',
  });
  return answer === 'ok' ? input.value.trim() : null;
});

tabs.addEventListener('keydown', (e) => {
  const i = VIEWS.indexOf(viewFromHash());
  let next = null;
  if (e.key === 'ArrowRight') next = VIEWS[(i + 1) % VIEWS.length];
  if (e.key === 'ArrowLeft') next = VIEWS[(i + VIEWS.length - 1) % VIEWS.length];
  if (e.key === 'Home') next = VIEWS[0];
  if (e.key === 'End') next = VIEWS[VIEWS.length - 1];
  if (next) {
    e.preventDefault();
    location.hash = `#/${next.id}`;
    document.getElementById(`tab-${next.id}`).focus();
  }
});

document.addEventListener('keydown', (e) => {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName) || e.target.isContentEditable;
  if (typing || e.ctrlKey || e.metaKey || e.altKey || dialogOpen()) return;
  const n = Number(e.key);
  if (n >= 1 && n <= VIEWS.length) location.hash = `#/${VIEWS[n - 1].id}`;
  else if (e.key === 'r' || e.key === 'R') show(true);
  else if (e.key === '/') {
    const search = main.querySelector('input[type=search]');
    if (search) {
      e.preventDefault();
      search.focus();
    }
  }
});

document.getElementById('lang').addEventListener('click', () => {
  setLang(lang() === 'zh' ? 'en' : 'zh');
  show(true);
});
document.getElementById('refresh').addEventListener('click', () => show(true));
window.addEventListener('hashchange', () => {
  if (location.hash.startsWith('#/') || location.hash === '') show(false);
});
window.addEventListener('focus', liveRefresh);
document.addEventListener('visibilitychange', () => { if (!document.hidden) liveRefresh(); });
setInterval(poll, 5000);

show(false).then(poll);
