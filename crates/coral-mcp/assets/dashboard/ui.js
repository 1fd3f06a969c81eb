// Small DOM helpers: elements built from data (text is always set as text, never parsed as
// HTML), dialogs on <dialog>, inline SVG charts, formatting.

import { t, lang } from './i18n.js';

const SVG = 'http://www.w3.org/2000/svg';

/** h('div', {class: 'x', onclick: f}, child, 'text', [more]) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

export function card(title, ...children) {
  return h('section', { class: 'card' }, title ? h('h2', { text: title }) : null, ...children);
}

/** A card two grid columns wide (tables, paths) where the screen has room. */
export function wideCard(title, ...children) {
  const c = card(title, ...children);
  c.classList.add('wide');
  return c;
}

export function stat(label, value, field) {
  return h('div', { class: 'stat' },
    h('div', { class: 'label', text: label }),
    h('div', { class: 'value', 'data-field': field, text: value }));
}

export function fmtNum(n) {
  if (n === null || n === undefined) return '—';
  return Number(n).toLocaleString(lang() === 'zh' ? 'zh-CN' : 'en-US');
}

export function fmtBytes(n) {
  if (!n) return '0 B';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(i ? 2 : 0)} ${units[i]}`;
}

export function fmtTime(ts) {
  if (!ts) return '—';
  const d = new Date(ts * 1000);
  return d.toLocaleString(lang() === 'zh' ? 'zh-CN' : 'en-GB', {
    year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
  });
}

export function fmtScore(x) {
  return x === null || x === undefined ? '—' : Number(x).toFixed(3);
}

/** Horizontal bars: rows of {label, value}, drawn as inline SVG like the original's window A. */
export function barChart(rows, { title } = {}) {
  const max = Math.max(1, ...rows.map((r) => r.value));
  const rowH = 20;
  const labelW = 52;
  const width = 480;
  const chart = s('svg', {
    viewBox: `0 0 ${width} ${rows.length * rowH}`, class: 'bars', role: 'img',
    'aria-label': title || '', preserveAspectRatio: 'xMinYMin meet',
  });
  rows.forEach((r, i) => {
    const y = i * rowH;
    const w = ((width - labelW - 50) * r.value) / max;
    chart.append(
      s('text', { x: 0, y: y + 14, class: 'bar-label', text: r.label }),
      s('rect', { x: labelW, y: y + 4, width: Math.max(w, r.value ? 2 : 0), height: 12, rx: 6, class: 'bar' }),
      s('text', { x: labelW + w + 6, y: y + 14, class: 'bar-value', text: String(r.value) }),
    );
  });
  return chart;
}

/** A meter bar (0..1) with optional marks (warn / hard ratios). */
export function meter(ratio, marks = []) {
  const w = 400;
  const clamped = Math.max(0, Math.min(1, ratio || 0));
  const level = marks.length && clamped >= marks[marks.length - 1] ? 'hard'
    : marks.length && clamped >= marks[0] ? 'warn' : 'ok';
  const svg = s('svg', { viewBox: `0 0 ${w} 16`, class: `meter ${level}`, role: 'img', preserveAspectRatio: 'none',
    'aria-label': `${Math.round(clamped * 100)}%` });
  svg.append(s('rect', { x: 0, y: 2, width: w, height: 12, rx: 6, class: 'meter-bg' }));
  svg.append(s('rect', { x: 0, y: 2, width: w * clamped, height: 12, rx: 6, class: 'meter-fill' }));
  for (const m of marks) svg.append(s('line', { x1: w * m, x2: w * m, y1: 0, y2: 16, class: 'meter-mark' }));
  return svg;
}

let toastTimer = null;
export function toast(message, kind = 'ok') {
  const el = document.getElementById('toast');
  el.textContent = message;
  el.className = `show ${kind}`;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.className = ''; }, 4000);
}

/** Whether a dialog is open (live refreshes wait for it to close). */
export function dialogOpen() {
  return !!document.querySelector('dialog[open]');
}

/**
 * A modal dialog: resolves to the value of the button pressed (or null on Escape). `fields`
 * are inputs inside the body; `check()` may return an error text to keep the dialog open.
 */
export function dialog({ title, body = [], buttons, check, initialFocus }) {
  return new Promise((resolve) => {
    const error = h('p', { class: 'error', role: 'alert' });
    const row = h('div', { class: 'buttons' });
    const dlg = h('dialog', { 'aria-labelledby': 'dlg-title' },
      h('h2', { id: 'dlg-title', text: title }), h('div', { class: 'dlg-body' }, body), error, row);
    let done = false;
    const finish = (value) => {
      if (done) return;
      done = true;
      dlg.close();
      dlg.remove();
      resolve(value);
    };
    for (const b of buttons) {
      row.append(h('button', {
        type: 'button', class: b.kind || '', 'data-action': b.value ?? 'cancel', text: b.label,
        onclick: () => {
          if (b.value !== null && check) {
            const problem = check(b.value);
            if (problem) {
              error.textContent = problem;
              return;
            }
          }
          finish(b.value);
        },
      }));
    }
    dlg.addEventListener('cancel', (e) => { e.preventDefault(); finish(null); });
    document.body.append(dlg);
    dlg.showModal();
    const first = initialFocus ? dlg.querySelector(initialFocus) : null;
    (first || row.lastChild).focus();
  });
}

/** Yes/no: resolves true when confirmed. */
export async function confirmDialog(title, body, okLabel, danger = false) {
  const v = await dialog({
    title, body,
    buttons: [
      { label: t('cancel'), value: null },
      { label: okLabel || t('confirm'), value: 'ok', kind: danger ? 'danger' : 'primary' },
    ],
  });
  return v === 'ok';
}

/** A labelled field: label, control, a one-line explanation and an inline error slot. */
export function field(label, control, help, id) {
  control.id = id;
  return h('div', { class: 'field' },
    h('label', { for: id, text: label }), control,
    help ? h('div', { class: 'help', text: help }) : null,
    h('div', { class: 'error', 'data-error-for': id, role: 'alert' }));
}

export function errorBox(e) {
  return h('div', { class: 'problem', role: 'alert', text: `${t('error')}: ${e.message || e}` });
}
