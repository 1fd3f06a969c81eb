// Timeline: the conversations of a tenant / user / domain; for one, its turns with their tool
// calls (reload cards expand to the stored body through open_memory), its summaries by layer,
// the rendered context as the model sees it, and what it saves: tokens folded by settlement
// and how often the context's start stayed byte-identical.

import { call } from './api.js';
import { t } from './i18n.js';
import { h, clear, card, stat, toast, fmtNum, fmtTime, errorBox } from './ui.js';

const state = {
  ns: { tenant_id: 'default', user_id: 'default', domain_id: 'default' },
  conversation: null,
  pages: [],
  cursor: null,
  // Pages asked for beyond the first ("more"), read again on every refresh.
  extra: 0,
  // The last context text seen per conversation, and how often a later one began with it.
  seen: new Map(),
};

function ns(extra = {}) {
  return { ...state.ns, ...extra };
}

function conv(extra = {}) {
  return ns({ conversation_id: state.conversation.conversation_id, ...extra });
}

function range(c) {
  const start = new Date(Math.floor(c.first_at || 0) * 1000).toISOString();
  const end = new Date((Math.floor(c.last_at || 0) + 1) * 1000).toISOString();
  return { start_at: start, end_at: end };
}

async function loadTurns(more) {
  const args = conv();
  if (more && state.cursor) args.cursor = state.cursor;
  else args.time_range = range(state.conversation);
  const r = await call('read_timeline', args);
  if (!more) state.pages = [];
  state.pages.push(...(r.units || []));
  state.cursor = r.next_cursor || null;
  return r;
}

async function loadPages() {
  await loadTurns(false);
  for (let i = 0; i < state.extra && state.cursor; i++) await loadTurns(true);
}

async function openBody(button, entry) {
  const slot = button.closest('.entry').querySelector('.body');
  if (slot.dataset.open === '1') {
    slot.hidden = !slot.hidden;
    button.setAttribute('aria-expanded', slot.hidden ? 'false' : 'true');
    return;
  }
  try {
    const r = await call('open_memory', conv({ memory_id: entry.source_id, view: 'content' }));
    const m = r.memory;
    if (!m || m.content === undefined) throw new Error(r.message || r.status);
    clear(slot).append(
      h('div', { class: 'muted small', text: t('tl.body_meta', { chars: fmtNum(m.stored_chars), hash: (m.result_hash || '').slice(0, 16) }) }),
      h('pre', { class: 'body-text', text: m.content }));
    slot.dataset.open = '1';
    slot.hidden = false;
    button.setAttribute('aria-expanded', 'true');
  } catch (e) {
    toast(e.message, 'bad');
  }
}

function entryView(e) {
  const isTool = !!e.tool_name;
  const label = isTool ? `${e.tool_name}${e.turn_role === 'action' ? ' ▸' : ' ◂'}` : t(`origin.${e.origin}`);
  return h('li', { class: `entry ${e.origin} ${e.turn_role}${e.folded ? ' folded' : ''}`, 'data-source': e.source_id },
    h('div', { class: 'entry-head' },
      h('span', { class: 'who', text: label }),
      h('span', { class: 'muted small', text: `${e.time}${e.status && e.status !== 'success' ? ` · ${e.status}` : ''}` }),
      e.folded ? h('span', { class: 'tag', text: t('tl.card') }) : null),
    h('pre', { class: 'text', text: e.text }),
    e.folded ? h('button', { type: 'button', class: 'ghost small', 'data-action': 'expand', 'aria-expanded': 'false',
      text: t('tl.expand'), onclick: (ev) => openBody(ev.target, e) }) : null,
    h('div', { class: 'body', hidden: true }));
}

function turnsCard(ctx) {
  const units = state.pages;
  return card(t('tl.turns'),
    units.length ? h('ol', { class: 'units' }, units.map((u) => h('li', { class: 'unit', 'data-turn': u.turn_id || '' },
      h('div', { class: 'unit-head' },
        h('strong', { text: `${u.date} ${u.started_at}` }),
        h('span', { class: 'muted small', text: ` ${t(`period.${u.time_of_day}`)} · ${fmtNum(u.tokens)} ${t('tokens')}${u.turn_status ? ` · ${t(`turn.${u.turn_status}`)}` : ''}` })),
      h('ol', { class: 'entries' }, u.entries.map(entryView))))) : h('p', { class: 'muted', text: t('tl.no_turns') }),
    state.cursor ? h('button', { type: 'button', class: 'ghost', 'data-action': 'more', text: t('tl.more'),
      onclick: () => { state.extra++; ctx.refresh(); } }) : null);
}

async function openSummary(button, c) {
  const slot = button.parentElement.querySelector('.body');
  if (slot.dataset.open === '1') {
    slot.hidden = !slot.hidden;
    return;
  }
  try {
    const r = await call('open_memory', conv({ memory_id: c.memory_id, view: 'card' }));
    const body = r.summary?.summary?.body ?? r.summary?.rendered ?? r.message;
    clear(slot).append(h('pre', { class: 'body-text', text: body || '' }));
    slot.dataset.open = '1';
    slot.hidden = false;
  } catch (e) {
    toast(e.message, 'bad');
  }
}

function summariesCard(cards) {
  const layers = ['semantic', 'episodic'];
  return card(t('tl.summaries'), layers.map((layer) => {
    const items = cards.filter((c) => c.node_type === layer);
    return h('div', { class: 'layer', 'data-layer': layer },
      h('h3', { text: `${t(`layer.${layer}`)} · ${items.length}` }),
      items.length ? h('ul', { class: 'plain' }, items.map((c) => h('li', { class: 'summary-card' },
        h('button', { type: 'button', class: 'link', text: c.title, onclick: (e) => openSummary(e.target, c) }),
        h('span', { class: 'muted small', text: ` ${c.period_start_at} – ${c.period_end_at} · ${t('tl.sources', { n: c.source_count })}${c.rolled_up ? ` · ${t('tl.rolled_up')}` : ''}` }),
        c.hint ? h('div', { class: 'small', text: c.hint }) : null,
        h('div', { class: 'body', hidden: true })))) : h('p', { class: 'muted', text: t('tl.no_summaries') }));
  }));
}

function savingsCard(c, metrics, context) {
  const m = metrics.metrics || {};
  const changes = (c.compactions || 0) + (c.rollups || 0);
  const boundaries = Math.max(0, (c.completed_turns || 0) + (c.aborted_turns || 0) - 1);
  const stable = boundaries ? Math.max(0, boundaries - changes) / boundaries : null;
  const key = JSON.stringify(conv());
  const seen = state.seen.get(key) || { text: null, checks: 0, kept: 0 };
  if (seen.text !== null && seen.text !== context.text) {
    seen.checks++;
    if (context.text.startsWith(seen.text)) seen.kept++;
  }
  seen.text = context.text;
  state.seen.set(key, seen);
  return card(t('tl.savings'),
    h('div', { class: 'stats' },
      stat(t('tl.full_tokens'), fmtNum(m.full_tokens), 'metrics.full_tokens'),
      stat(t('tl.settled_tokens'), fmtNum(m.settled_tokens), 'metrics.settled_tokens'),
      stat(t('tl.saved_tokens'), fmtNum(m.saved_tokens), 'metrics.saved_tokens'),
      stat(t('tl.folded'), `${fmtNum(m.folded_results)} / ${fmtNum(m.results)}`, 'metrics.folded_results'),
      stat(t('tl.prefix_stable'), stable === null ? '—' : `${Math.round(stable * 100)}%`, 'prefix_stable')),
    h('p', { class: 'muted small', text: t('tl.prefix_help', { changes, boundaries }) }),
    seen.checks ? h('p', { class: 'muted small', 'data-field': 'prefix_observed', text: t('tl.prefix_observed', { kept: seen.kept, n: seen.checks }) }) : null);
}

function contextCard(context) {
  return card(t('tl.context'),
    h('p', { class: 'muted small', text: t('tl.context_meta', {
      tokens: fmtNum(context.tokens), sem: context.semantic.length, epi: context.episodic.length,
      raw: context.raw_units, tz: context.timezone }) }),
    context.compaction_due || context.rollup_due ? h('p', { class: 'problem', text: t('tl.due') }) : null,
    h('pre', { class: 'context', 'data-field': 'context', tabindex: '0', text: context.text }));
}

function nsForm(ctx) {
  const input = (k) => h('label', {}, t(`tl.${k}`), h('input', { type: 'text', value: state.ns[k], 'data-ns': k,
    onchange: (e) => { state.ns[k] = e.target.value.trim() || 'default'; state.conversation = null; state.visited = false; ctx.refresh(); } }));
  return h('div', { class: 'filters' }, input('tenant_id'), input('user_id'), input('domain_id'));
}

async function render(root, ctx) {
  let list;
  try {
    list = await call('timeline_conversations', ns());
  } catch (e) {
    clear(root).append(errorBox(e));
    return;
  }
  const convs = list.conversations || [];
  if (state.conversation) {
    state.conversation = convs.find((c) => c.conversation_id === state.conversation.conversation_id) || null;
  }
  // The first visit opens the most recently active conversation.
  if (!state.conversation && !state.visited && convs.length) state.conversation = convs[0];
  state.visited = true;
  const picker = card(t('tl.conversations'), nsForm(ctx),
    convs.length ? h('ul', { class: 'convs', role: 'list' }, convs.map((c) => h('li', {},
      h('button', { type: 'button', class: `conv${state.conversation?.conversation_id === c.conversation_id ? ' active' : ''}`,
        'data-conversation': c.conversation_id, 'aria-pressed': state.conversation?.conversation_id === c.conversation_id ? 'true' : 'false',
        onclick: async () => { state.conversation = c; state.extra = 0; await ctx.refresh(); } },
      h('strong', { text: c.conversation_id }),
      h('span', { class: 'muted small', text: ` ${t('tl.conv_meta', { turns: c.completed_turns + c.aborted_turns + c.open_turns, entries: c.entries, when: fmtTime(c.last_at) })}` })))))
      : h('p', { class: 'muted', text: t('tl.no_conversations') }));
  if (!state.conversation) {
    clear(root).append(h('div', { class: 'timeline-view' }, picker));
    return;
  }
  const c = state.conversation;
  let metrics;
  let context;
  let browse;
  try {
    [metrics, context, browse] = await Promise.all([
      call('timeline_metrics', conv()),
      call('timeline_context', conv()),
      call('browse_memory', conv({ page_size: 50 })),
      loadPages(),
    ]);
  } catch (e) {
    clear(root).append(h('div', { class: 'timeline-view' }, picker, errorBox(e)));
    return;
  }
  clear(root).append(h('div', { class: 'timeline-view' }, picker,
    h('div', { class: 'grid two' }, savingsCard(c, metrics, context), summariesCard(browse.cards || [])),
    turnsCard(ctx), contextCard(context)));
}

export default { render };
