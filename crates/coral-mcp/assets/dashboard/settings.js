// Settings (the original's window B): the basic fields with their explanations, then every
// other key by section. Keys a tool may not change are shown read-only with the reason. Saving
// lists old -> new and asks first; a change that would remove many memories asks again with
// its preview. "Restore defaults" resets the tunable sections and never touches data.

import { call, ApiError } from './api.js';
import { t, has } from './i18n.js';
import { h, clear, card, dialog, confirmDialog, toast, errorBox } from './ui.js';

const BASIC = [
  'memory.capacity_threshold', 'retrieval.top_k', 'retrieval.min_score',
  'memory.sim_threshold_hot', 'storage.max_bytes', 'memory.hot_ttl_hours', 'retrieval.tau_days',
];

const draft = new Map();
// Sections the person opened stay open across refreshes.
const opened = new Set();
let meta = null;
let config = null;

function settable(key) {
  return meta.tool_settable.some((p) => (p.endsWith('.') ? key.startsWith(p) || key === p.slice(0, -1) : key === p));
}

function reason(key) {
  if (key.startsWith('llm.')) return t('reason.llm');
  if (key.startsWith('embedding.')) return t('reason.embedding');
  if (meta.protected.some((p) => key.startsWith(p))) return t('reason.paths');
  if (key.startsWith('storage.')) return t('reason.storage');
  return t('reason.user');
}

function leaves(value, prefix = '', out = []) {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) leaves(v, prefix ? `${prefix}.${k}` : k, out);
  } else out.push([prefix, value]);
  return out;
}

function valueAt(key) {
  return key.split('.').reduce((node, part) => (node == null ? undefined : node[part]), config);
}

function show(v) {
  if (v === '' || v === null || v === undefined) return '∅';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

function idOf(key) {
  return `cfg-${key.replace(/[^a-z0-9_]/gi, '-')}`;
}

/** The value the draft holds for `key`, parsed; `{error}` when it cannot be. */
function parsed(key) {
  const old = valueAt(key);
  const text = draft.get(key);
  if (typeof old === 'boolean') return { value: text };
  if (typeof old === 'number') {
    if (String(text).trim() === '') return { error: t('set.empty') };
    if (!Number.isFinite(Number(text))) return { error: t('set.not_number', { v: text }) };
    return { value: Number(text) };
  }
  return { value: text };
}

function label(key) {
  return has(`label.${key}`) ? t(`label.${key}`) : key.split('.').slice(1).join('.');
}

function control(key, value) {
  const id = idOf(key);
  const editable = settable(key) && (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string');
  const error = h('div', { class: 'error', 'data-error-for': key, role: 'alert' });
  let input;
  if (typeof value === 'boolean') {
    input = h('input', { type: 'checkbox', id, checked: draft.has(key) ? draft.get(key) : value,
      disabled: !editable, 'data-key': key,
      onchange: (e) => { draft.set(key, e.target.checked); error.textContent = ''; } });
  } else {
    input = h('input', {
      type: typeof value === 'number' ? 'number' : 'text', step: 'any', id, 'data-key': key,
      value: draft.has(key) ? String(draft.get(key)) : show(value === '' ? '' : value).replace(/^∅$/, ''),
      readonly: !editable, 'aria-readonly': !editable ? 'true' : null, inputmode: typeof value === 'number' ? 'decimal' : null,
      oninput: (e) => {
        draft.set(key, e.target.value);
        const p = parsed(key);
        error.textContent = p.error || '';
      },
    });
    if (key.endsWith('api_key')) input.type = 'password';
  }
  const help = has(`help.${key}`) ? t(`help.${key}`) : null;
  return h('div', { class: `field${editable ? '' : ' locked'}`, 'data-field-key': key },
    h('label', { for: id }, h('span', { text: label(key) }), h('code', { class: 'key', text: key })),
    input,
    help ? h('div', { class: 'help', text: help }) : null,
    editable ? null : h('div', { class: 'lock', 'data-locked': key },
      h('span', { 'aria-hidden': 'true', text: '🔒 ' }), t('set.read_only'), ': ', reason(key)),
    error);
}

function changes() {
  const out = [];
  for (const key of draft.keys()) {
    const p = parsed(key);
    if (p.error) return { error: [key, p.error] };
    const old = valueAt(key);
    if (p.value !== old && !(old === '' && p.value === '')) out.push({ key, old, value: p.value });
  }
  return { list: out };
}

function showError(key, message) {
  const slot = document.querySelector(`[data-error-for="${CSS.escape(key)}"]`);
  if (slot) {
    slot.textContent = message;
    slot.closest('details')?.setAttribute('open', '');
    slot.parentElement.querySelector('input')?.focus();
  } else toast(message, 'bad');
}

/** Run a config tool; when it needs confirmation, show the preview and repeat with confirm. */
async function guarded(tool, args) {
  let result = await call(tool, args);
  if (result.ok === false && result.needs_confirmation) {
    const yes = await confirmDialog(t('set.bulk_title'), [
      h('p', { text: t('set.bulk', { n: result.would_remove, of: result.memories, limit: result.limit }) }),
      h('p', { class: 'muted', text: result.error }),
    ], t('set.bulk_ok'), true);
    if (!yes) return null;
    result = await call(tool, { ...args, confirm: true });
  }
  return result;
}

async function save(ctx) {
  const c = changes();
  if (c.error) {
    showError(c.error[0], c.error[1]);
    return;
  }
  if (!c.list.length) {
    toast(t('set.no_changes'));
    return;
  }
  const ok = await confirmDialog(t('set.confirm_title'), [
    h('p', { text: t('set.confirm_body') }),
    h('table', { class: 'table changes' },
      h('thead', {}, h('tr', {}, [t('set.key'), t('set.old'), t('set.new')].map((x) => h('th', { scope: 'col', text: x })))),
      h('tbody', {}, c.list.map((x) => h('tr', { 'data-change': x.key },
        h('td', {}, h('code', { text: x.key })), h('td', { class: 'old', text: show(x.old) }),
        h('td', { class: 'new', text: `→ ${show(x.value)}` }))))),
  ], t('save'));
  if (!ok) return;
  let done = 0;
  for (const x of c.list) {
    try {
      const r = await guarded('coral_config_set', { key_path: x.key, value: x.value });
      if (!r) break;
      draft.delete(x.key);
      done++;
    } catch (e) {
      await ctx.refresh();
      showError(x.key, e instanceof ApiError ? e.message : String(e));
      if (done) toast(t('set.saved', { n: done }));
      return;
    }
  }
  await ctx.refresh();
  if (done) toast(t('set.saved', { n: done }));
}

async function reset(ctx) {
  const ok = await confirmDialog(t('set.reset_title'), [
    h('p', { text: t('set.reset_body', { sections: meta.tunable.join(', ') }) }),
    h('p', { class: 'muted', text: t('set.reset_kept') }),
  ], t('set.reset'), true);
  if (!ok) return;
  try {
    const r = await guarded('coral_config_reset', {});
    if (!r) return;
    draft.clear();
    await ctx.refresh();
    toast(t('set.reset_done', { n: Object.keys(r.changed || {}).length }));
  } catch (e) {
    toast(e.message, 'bad');
  }
}

async function render(root, ctx) {
  meta = ctx.meta;
  try {
    config = (await call('coral_config_get')).config;
  } catch (e) {
    clear(root).append(errorBox(e));
    return;
  }
  const all = leaves(config);
  const sections = new Map();
  for (const [key, value] of all) {
    if (BASIC.includes(key)) continue;
    const section = key.split('.')[0];
    if (!sections.has(section)) sections.set(section, []);
    sections.get(section).push([key, value]);
  }
  const actions = h('div', { class: 'buttons sticky' },
    h('button', { type: 'button', class: 'danger-ghost', 'data-action': 'reset', text: t('set.reset'), onclick: () => reset(ctx) }),
    h('button', { type: 'button', class: 'primary', 'data-action': 'save', text: t('save'), onclick: () => save(ctx) }));
  const basic = card(t('set.basic'),
    h('p', { class: 'muted', text: t('set.basic_help') }),
    h('div', { class: 'fields' }, BASIC.filter((k) => valueAt(k) !== undefined).map((k) => control(k, valueAt(k)))),
    actions);
  const rest = [...sections.entries()].map(([section, keys]) => h('details', {
    class: 'card section', 'data-section': section, open: opened.has(section),
    ontoggle: (e) => { if (e.target.open) opened.add(section); else opened.delete(section); } },
    h('summary', {}, h('span', { text: has(`section.${section}`) ? t(`section.${section}`) : section }),
      h('span', { class: 'muted', text: ` · ${keys.length}` })),
    h('div', { class: 'fields' }, keys.map(([k, v]) => control(k, v)))));
  clear(root).append(h('div', { class: 'settings' }, basic, ...rest));
}

export default { render, busy: () => draft.size > 0 };
