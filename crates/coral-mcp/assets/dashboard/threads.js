// Threads board: active / interrupted / archived columns, parent-child links, steps with who,
// when and done marks, and the thread tools' own operations (advance, interrupt, archive,
// resume).

import { call } from './api.js';
import { t } from './i18n.js';
import { h, clear, dialog, toast, fmtTime, field, errorBox } from './ui.js';

const COLUMNS = ['active', 'interrupted', 'archived'];

async function act(ctx, tool, args, message) {
  try {
    await call(tool, args);
    toast(message);
  } catch (e) {
    toast(e.message, 'bad');
  }
  await ctx.refresh();
}

async function advance(ctx, thread) {
  const note = h('textarea', { rows: 3, maxlength: 500 });
  const done = h('select', {},
    h('option', { value: 'auto', text: t('th.done_auto') }),
    h('option', { value: 'yes', text: t('th.done_yes') }),
    h('option', { value: 'no', text: t('th.done_no') }));
  const v = await dialog({
    title: t('th.advance_title', { title: thread.title }),
    body: [field(t('th.note'), note, t('th.note_help'), 'th-note'), field(t('th.done'), done, null, 'th-done')],
    buttons: [{ label: t('cancel'), value: null }, { label: t('th.advance'), value: 'ok', kind: 'primary' }],
    check: () => (note.value.trim() ? null : t('th.note_empty')),
    initialFocus: '#th-note',
  });
  if (v !== 'ok') return;
  const args = { thread_id: thread.thread_id, note: note.value.trim(), by: 'dashboard' };
  if (done.value !== 'auto') args.done = done.value === 'yes';
  await act(ctx, 'thread_advance', args, t('th.advanced'));
}

async function interrupt(ctx, thread) {
  const reason = h('input', { type: 'text' });
  const v = await dialog({
    title: t('th.interrupt_title', { title: thread.title }),
    body: [field(t('th.reason'), reason, null, 'th-reason')],
    buttons: [{ label: t('cancel'), value: null }, { label: t('th.interrupt'), value: 'ok', kind: 'primary' }],
    initialFocus: '#th-reason',
  });
  if (v !== 'ok') return;
  const args = { thread_id: thread.thread_id };
  if (reason.value.trim()) args.reason = reason.value.trim();
  await act(ctx, 'thread_interrupt', args, t('th.interrupted'));
}

function threadCard(ctx, thread, byId) {
  const parent = thread.parent_thread_id && byId.get(thread.parent_thread_id);
  const jump = (id) => () => {
    const target = document.getElementById(`thread-${id}`);
    if (target) {
      target.scrollIntoView({ block: 'center' });
      target.focus();
    }
  };
  const steps = thread.steps.slice(-8);
  const buttons = [];
  if (thread.status !== 'archived') {
    buttons.push(h('button', { type: 'button', class: 'ghost small', 'data-action': 'advance', text: t('th.advance'), onclick: () => advance(ctx, thread) }));
  }
  if (thread.status === 'active') {
    buttons.push(h('button', { type: 'button', class: 'ghost small', 'data-action': 'interrupt', text: t('th.interrupt'), onclick: () => interrupt(ctx, thread) }));
  }
  if (thread.status !== 'active') {
    buttons.push(h('button', { type: 'button', class: 'ghost small', 'data-action': 'resume', text: t('th.resume'),
      onclick: () => act(ctx, 'thread_resume', { thread_id: thread.thread_id }, t('th.resumed')) }));
  }
  if (thread.status !== 'archived') {
    buttons.push(h('button', { type: 'button', class: 'ghost small', 'data-action': 'archive', text: t('th.archive'),
      onclick: () => act(ctx, 'thread_archive', { thread_id: thread.thread_id }, t('th.archived')) }));
  }
  return h('article', { class: 'thread', id: `thread-${thread.thread_id}`, tabindex: '-1', 'data-id': thread.thread_id },
    h('h3', { text: thread.title }),
    thread.summary ? h('p', { class: 'summary', text: thread.summary }) : null,
    h('div', { class: 'muted small', text: t('th.meta', { n: thread.step_count, when: fmtTime(thread.updated_at), by: thread.last_advance_by || '—' }) }),
    parent ? h('div', { class: 'links' }, `${t('th.parent')}: `, h('button', { type: 'button', class: 'link', text: parent.title, onclick: jump(parent.thread_id) })) : null,
    thread.children && thread.children.length ? h('div', { class: 'links' }, `${t('th.children')}: `,
      thread.children.map((c) => (byId.has(c) ? h('button', { type: 'button', class: 'link', text: byId.get(c).title, onclick: jump(c) }) : h('code', { text: c })))) : null,
    steps.length ? h('ol', { class: 'steps', start: steps[0].seq },
      steps.map((st) => h('li', { class: st.done ? 'done' : '', 'data-step': st.step_id },
        h('span', { class: 'mark', 'aria-label': st.done ? t('th.step_done') : t('th.step_open'), text: st.done ? '✓' : '○' }),
        h('span', { class: 'text', text: st.text }),
        h('span', { class: 'muted small', text: ` — ${st.by || '—'}, ${fmtTime(st.at)}` })))) : null,
    thread.step_count > steps.length ? h('div', { class: 'muted small', text: t('th.more', { n: thread.step_count - steps.length }) }) : null,
    h('div', { class: 'buttons' }, buttons));
}

async function render(root, ctx) {
  let report;
  try {
    report = await call('thread_status', { include_archived: true });
  } catch (e) {
    clear(root).append(errorBox(e));
    return;
  }
  const threads = report.threads || [];
  const byId = new Map(threads.map((x) => [x.thread_id, x]));
  const board = h('div', { class: 'board' }, COLUMNS.map((status) => {
    const items = threads.filter((x) => x.status === status);
    return h('section', { class: 'column', 'data-column': status, 'aria-label': t(`col.${status}`) },
      h('h2', {}, t(`col.${status}`), h('span', { class: 'count', text: ` ${items.length}` })),
      items.length ? items.map((x) => threadCard(ctx, x, byId)) : h('p', { class: 'muted', text: t('th.empty') }));
  }));
  clear(root);
  if (!threads.length) root.append(h('div', { class: 'card' }, h('p', { class: 'muted', text: t('th.none') })));
  root.append(board);
}

export default { render };
