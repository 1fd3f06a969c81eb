// Memories: search with each hit's component scores and why it ranked; a browser over
// memory_list, filtered by tier / project / date / text and paged (never loading them all);
// importance edits, deletion with confirmation, and export as JSON Lines.

import { call } from './api.js';
import { t } from './i18n.js';
import { h, clear, card, confirmDialog, toast, fmtNum, fmtTime, fmtScore, errorBox } from './ui.js';

const state = {
  query: '', results: null, searchError: null,
  filter: { tier: '', project: '*', from: '', to: '', contains: '', order: 'newest' },
  offset: 0, limit: 50,
};
let retrieval = null;
let meta = null;

function listArgs(extra = {}) {
  const f = state.filter;
  const args = { order: f.order, offset: state.offset, limit: state.limit, ...extra };
  if (f.tier) args.tier = f.tier;
  if (f.project !== '*') args.project = f.project;
  if (f.contains.trim()) args.contains = f.contains.trim();
  if (f.from) args.from = new Date(`${f.from}T00:00:00`).getTime() / 1000;
  if (f.to) args.to = new Date(`${f.to}T00:00:00`).getTime() / 1000 + 86400;
  return args;
}

/** Why a hit ranked: each component times its weight, the largest named. */
function why(hit) {
  const sc = hit.scores || {};
  const mode = retrieval?.mode || 'hybrid';
  if (mode === 'hybrid') {
    // Relevance first (docs/ranking.md): the evidence is BM25's word match and the cosine;
    // recency only breaks near-ties as a prior.
    const parts = [];
    if (sc.bm25) parts.push(t('mem.why_words', { v: fmtScore(sc.bm25) }));
    if (sc.vector) parts.push(t('mem.why_meaning', { v: fmtScore(sc.vector) }));
    return `${t('mem.why_hybrid')}: ${parts.length ? parts.join(' + ') : t('mem.why_time_only')} · ${t('score.time')} ${fmtScore(sc.time)} (${t('mem.prior')})`;
  }
  if (mode !== 'weighted') {
    return t('mem.why_rrf', { mode });
  }
  const w = retrieval?.weights || { vector: 0.6, jaccard: 0.2, time: 0.2 };
  const parts = ['vector', 'jaccard', 'time']
    .map((k) => ({ k, c: (w[k] || 0) * (sc[k] || 0), w: w[k] || 0, v: sc[k] || 0 }));
  const sum = parts.reduce((a, p) => a + p.c, 0);
  const top = parts.slice().sort((a, b) => b.c - a.c)[0];
  const extra = hit.score - sum;
  const detail = parts.map((p) => `${t(`score.${p.k}`)} ${p.w}×${fmtScore(p.v)} = ${fmtScore(p.c)}`).join(' + ');
  return `${t(`mem.mostly.${top.k}`)} · ${detail}${Math.abs(extra) > 0.0005 ? ` ${extra > 0 ? '+' : '−'} ${fmtScore(Math.abs(extra))} ${t('mem.boost')}` : ''}`;
}

function scoreBars(hit) {
  const sc = hit.scores || {};
  return h('div', { class: 'scores' }, Object.entries(sc).map(([k, v]) => h('div', { class: 'score', 'data-score': k },
    h('span', { class: 'label', text: t(`score.${k}`) }),
    h('span', { class: 'track' }, h('span', { class: `fill s-${k}`, 'data-w': v })),
    h('span', { class: 'num', text: fmtScore(v) }))));
}

async function search(ctx) {
  if (!state.query.trim()) return;
  try {
    const r = await call('memory_search', { query: state.query, top_k: 10 });
    state.results = r.hits;
    state.searchError = null;
  } catch (e) {
    state.results = null;
    state.searchError = e;
  }
  await ctx.refresh();
}

async function remove(ctx, item) {
  const ok = await confirmDialog(t('mem.delete_title'), [
    h('p', { text: t('mem.delete_body') }),
    h('blockquote', { text: item.content }),
    h('p', { class: 'muted' }, h('code', { text: item.id })),
  ], t('delete'), true);
  if (!ok) return;
  try {
    await call('memory_delete', { item_id: item.id });
    toast(t('mem.deleted'));
    if (state.results) state.results = state.results.filter((x) => x.id !== item.id);
  } catch (e) {
    toast(e.message, 'bad');
  }
  await ctx.refresh();
}

async function setImportance(input, item) {
  const v = Number(input.value);
  const slot = input.parentElement.querySelector('.error');
  if (input.value.trim() === '' || !(v >= 0 && v <= 1)) {
    slot.textContent = t('mem.importance_range');
    return;
  }
  try {
    const r = await call('memory_mark_important', { item_id: item.id, importance: v });
    slot.textContent = '';
    item.importance = r.importance;
    toast(t('mem.importance_set', { v: r.importance }));
  } catch (e) {
    slot.textContent = e.message;
  }
}

async function expand(cell, item, index) {
  if (cell.dataset.full === '1') return;
  try {
    const r = await call('memory_list', listArgs({ offset: state.offset + index, limit: 1, full: true }));
    const got = r.items[0];
    if (got && got.id === item.id) {
      cell.textContent = got.content;
      cell.dataset.full = '1';
    } else toast(t('mem.changed'), 'bad');
  } catch (e) {
    toast(e.message, 'bad');
  }
}

async function exportAll(button) {
  const lines = [];
  let offset = 0;
  const label = button.textContent;
  try {
    for (;;) {
      const r = await call('memory_list', listArgs({ offset, limit: meta.list_limit, full: true }));
      for (const m of r.items) lines.push(JSON.stringify(m));
      button.textContent = `${t('mem.exporting')} ${fmtNum(lines.length)} / ${fmtNum(r.matched)}`;
      if (r.next_offset === null || r.next_offset === undefined) break;
      offset = r.next_offset;
    }
  } catch (e) {
    toast(e.message, 'bad');
    button.textContent = label;
    return;
  }
  button.textContent = label;
  const blob = new Blob([lines.join('\n') + (lines.length ? '\n' : '')], { type: 'application/x-ndjson' });
  const a = h('a', { href: URL.createObjectURL(blob), download: `coral-memories-${new Date().toISOString().slice(0, 10)}.jsonl` });
  document.body.append(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  toast(t('mem.exported', { n: fmtNum(lines.length) }));
}

function searchCard(ctx) {
  const input = h('input', { type: 'search', id: 'mem-query', value: state.query, placeholder: t('mem.search_ph'),
    'aria-label': t('mem.search'), oninput: (e) => { state.query = e.target.value; },
    onkeydown: (e) => { if (e.key === 'Enter') search(ctx); } });
  const results = [];
  if (state.searchError) results.push(errorBox(state.searchError));
  else if (state.results && !state.results.length) results.push(h('p', { class: 'muted', text: t('mem.no_hits') }));
  else if (state.results) {
    results.push(h('ol', { class: 'hits', 'data-field': 'hits' }, state.results.map((hit) => h('li', { class: 'hit', 'data-id': hit.id },
      h('div', { class: 'hit-head' },
        h('span', { class: 'total', title: t('mem.score'), text: fmtScore(hit.score) }),
        h('span', { class: 'content', text: hit.content }),
        hit.project ? h('span', { class: 'tag', text: hit.project }) : null,
        h('button', { type: 'button', class: 'ghost small', 'data-action': 'delete', text: t('delete'),
          onclick: () => remove(ctx, hit) })),
      scoreBars(hit),
      h('div', { class: 'why', text: why(hit) })))));
  }
  return card(t('mem.search'),
    h('div', { class: 'row' }, input,
      h('button', { type: 'button', class: 'primary', 'data-action': 'search', text: t('mem.search_go'), onclick: () => search(ctx) })),
    h('p', { class: 'muted small', text: t('mem.search_note') }),
    results);
}

function filterBar(ctx, page) {
  const f = state.filter;
  const set = (k) => (e) => { f[k] = e.target.value; state.offset = 0; ctx.refresh(); };
  const projects = Object.entries(page?.projects || {});
  return h('div', { class: 'filters', role: 'group', 'aria-label': t('mem.filters') },
    h('label', {}, t('tier'), h('select', { 'data-filter': 'tier', onchange: set('tier') },
      ['', 'hot', 'warm', 'cold'].map((v) => h('option', { value: v, selected: f.tier === v, text: v ? t(`tier.${v}`) : t('all') })))),
    h('label', {}, t('project'), h('select', { 'data-filter': 'project', onchange: set('project') },
      h('option', { value: '*', selected: f.project === '*', text: t('all') }),
      projects.map(([p, n]) => h('option', { value: p, selected: f.project === p, text: `${p || t('mem.no_project')} (${fmtNum(n)})` })))),
    h('label', {}, t('mem.from'), h('input', { type: 'date', value: f.from, 'data-filter': 'from', onchange: set('from') })),
    h('label', {}, t('mem.to'), h('input', { type: 'date', value: f.to, 'data-filter': 'to', onchange: set('to') })),
    h('label', {}, t('mem.contains'), h('input', { type: 'text', value: f.contains, 'data-filter': 'contains',
      onkeydown: (e) => { if (e.key === 'Enter') set('contains')(e); }, onchange: set('contains') })),
    h('label', {}, t('mem.order'), h('select', { 'data-filter': 'order', onchange: set('order') },
      ['newest', 'oldest', 'importance', 'accessed'].map((v) => h('option', { value: v, selected: f.order === v, text: t(`order.${v}`) })))));
}

function pager(ctx, page) {
  const last = Math.max(0, Math.floor((page.matched - 1) / state.limit) * state.limit);
  const go = (o) => () => { state.offset = Math.max(0, Math.min(o, last)); ctx.refresh(); };
  const from = page.matched ? page.offset + 1 : 0;
  return h('div', { class: 'pager' },
    h('button', { type: 'button', class: 'ghost', 'data-action': 'first', disabled: page.offset === 0, text: '«', 'aria-label': t('page.first'), onclick: go(0) }),
    h('button', { type: 'button', class: 'ghost', 'data-action': 'prev', disabled: page.offset === 0, text: '‹', 'aria-label': t('page.prev'), onclick: go(page.offset - state.limit) }),
    h('span', { class: 'range', 'data-field': 'range', text: t('page.range', { from: fmtNum(from), to: fmtNum(page.offset + page.count), matched: fmtNum(page.matched), total: fmtNum(page.total) }) }),
    h('button', { type: 'button', class: 'ghost', 'data-action': 'next', disabled: page.next_offset == null, text: '›', 'aria-label': t('page.next'), onclick: go(page.offset + state.limit) }),
    h('button', { type: 'button', class: 'ghost', 'data-action': 'last', disabled: page.next_offset == null, text: '»', 'aria-label': t('page.last'), onclick: go(last) }));
}

function browser(ctx, page) {
  const table = h('table', { class: 'table memories', 'data-field': 'memories' },
    h('thead', {}, h('tr', {}, [t('created'), t('tier'), t('project'), t('importance'), t('accesses'), t('content'), '']
      .map((x) => h('th', { scope: 'col', text: x })))),
    h('tbody', {}, page.items.map((m, i) => {
      const imp = h('input', { type: 'number', min: 0, max: 1, step: 0.05, value: m.importance, 'aria-label': t('importance'),
        'data-action': 'importance', onkeydown: (e) => { if (e.key === 'Enter') setImportance(e.target, m); } });
      const content = h('td', { class: 'content' }, h('button', { type: 'button', class: 'link', text: m.content,
        title: m.truncated ? t('mem.expand') : '', onclick: (e) => m.truncated && expand(e.target.parentElement, m, i) }));
      return h('tr', { 'data-id': m.id },
        h('td', { class: 'nowrap', text: fmtTime(m.timestamp) }),
        h('td', {}, h('span', { class: `tier ${m.tier}`, text: t(`tier.${m.tier}`) })),
        h('td', { text: m.project || '—' }),
        h('td', { class: 'imp' }, imp, h('button', { type: 'button', class: 'ghost small', 'data-action': 'set-importance',
          text: t('set'), onclick: () => setImportance(imp, m) }), h('div', { class: 'error', role: 'alert' })),
        h('td', { text: fmtNum(m.access_count) }),
        content,
        h('td', {}, h('button', { type: 'button', class: 'ghost small', 'data-action': 'delete', text: t('delete'),
          onclick: () => remove(ctx, m) })));
    })));
  const exportButton = h('button', { type: 'button', class: 'ghost', 'data-action': 'export', text: t('mem.export') });
  exportButton.addEventListener('click', () => exportAll(exportButton));
  return card(t('mem.browse'), filterBar(ctx, page),
    h('div', { class: 'row between' }, pager(ctx, page), exportButton),
    page.items.length ? h('div', { class: 'scroll' }, table) : h('p', { class: 'muted', text: t('mem.none') }),
    page.items.length > 10 ? pager(ctx, page) : null);
}

async function render(root, ctx) {
  meta = ctx.meta;
  let page;
  try {
    const [p, r] = await Promise.all([
      call('memory_list', listArgs()),
      retrieval ? Promise.resolve({ config: retrieval }) : call('coral_config_get', { path: 'retrieval' }),
    ]);
    page = p;
    retrieval = r.config;
  } catch (e) {
    clear(root).append(errorBox(e));
    return;
  }
  clear(root).append(h('div', { class: 'memories-view' }, searchCard(ctx), browser(ctx, page)));
}

export default { render };
