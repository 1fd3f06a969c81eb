// Overview (the original's window A): tiers, threads, disk and quota, the 14-day histogram,
// the memories closest to eviction, the embedder, journal and repairs, recent removals, paths.
// One coral_report call (and the storage section of the config for the quota's marks).

import { call } from './api.js';
import { t } from './i18n.js';
import { h, clear, card, wideCard, stat, fmtNum, fmtBytes, fmtTime, barChart, meter, errorBox } from './ui.js';

function list(items, empty) {
  if (!items || !items.length) return h('p', { class: 'muted', text: empty });
  return h('ul', { class: 'plain' }, items.map((x) => h('li', { text: x })));
}

function kv(rows) {
  return h('dl', { class: 'kv' }, rows.filter(Boolean).map(([k, v, f]) => [
    h('dt', { text: k }), h('dd', { 'data-field': f, text: v }),
  ]));
}

async function render(root) {
  let report;
  let storage = {};
  try {
    [report, storage] = await Promise.all([
      call('coral_report'),
      call('coral_config_get', { path: 'storage' }).then((r) => r.config).catch(() => ({})),
    ]);
  } catch (e) {
    clear(root).append(errorBox(e));
    return;
  }
  const st = report.stats;
  const du = report.disk_usage;
  const tiers = card(t('ov.memory'),
    h('div', { class: 'stats' },
      stat(t('tier.hot'), fmtNum(st.hot), 'stats.hot'),
      stat(t('tier.warm'), fmtNum(st.warm), 'stats.warm'),
      stat(t('tier.cold'), fmtNum(st.cold), 'stats.cold'),
      stat(t('ov.total'), fmtNum(st.total), 'stats.total'),
      stat(t('ov.threads'), fmtNum(st.threads), 'stats.threads'),
      stat(t('ov.disk'), fmtBytes(du.total_bytes), 'disk_usage.total_bytes'),
      stat(t('ov.capacity'), fmtNum(st.capacity_threshold), 'stats.capacity_threshold')),
    du.max_bytes
      ? h('div', { class: 'quota' },
        h('div', { class: 'muted', 'data-field': 'disk_usage.ratio',
          text: t('ov.quota_used', { used: fmtBytes(du.quota_bytes), max: fmtBytes(du.max_bytes),
            pct: Math.round((du.ratio || 0) * 100) }) }),
        meter(du.ratio || 0, [storage.warn_ratio, storage.hard_ratio].filter((x) => typeof x === 'number')))
      : h('p', { class: 'muted', 'data-field': 'disk_usage.max_bytes', text: t('ov.no_quota') }));

  const days = Object.entries(report.day_histogram.last_14_days || {}).map(([date, value]) => ({
    label: date.slice(5), value, date,
  }));
  const histogram = card(t('ov.days'),
    barChart(days, { title: t('ov.days') }),
    h('ol', { class: 'sr-only', 'data-field': 'day_histogram' },
      days.map((d) => h('li', { 'data-date': d.date, 'data-count': d.value, text: `${d.date}: ${d.value}` }))),
    h('p', { class: 'muted', text: t('ov.earlier', { n: fmtNum(report.day_histogram.earlier) }) }));

  const eviction = wideCard(t('ov.eviction'),
    report.eviction_preview.length
      ? h('div', { class: 'scroll' }, h('table', { class: 'table', 'data-field': 'eviction_preview' },
        h('thead', {}, h('tr', {}, [t('content'), t('heat'), t('tier'), t('importance'), t('accesses'), t('days_old')]
          .map((x) => h('th', { scope: 'col', text: x })))),
        h('tbody', {}, report.eviction_preview.map((c) => h('tr', { 'data-id': c.id },
          h('td', { class: 'content', text: c.content }),
          h('td', { text: c.heat.toFixed(4) }),
          h('td', {}, h('span', { class: `tier ${c.location}`, text: t(`tier.${c.location}`) })),
          h('td', { text: c.importance }),
          h('td', { text: c.access_count }),
          h('td', { text: c.days_old }))))))
      : h('p', { class: 'muted', text: t('ov.nothing') }));

  const embedder = card(t('ov.embedder'), kv([
    [t('ov.embedder_name'), `${st.embedder} (${st.dim})`, 'stats.embedder'],
    [t('ov.vectors'), `${fmtNum(st.vectors)} / ${fmtNum(st.total)}`, 'stats.vectors'],
    st.embedder_note && [t('ov.note'), st.embedder_note],
    st.vectors_disabled && [t('ov.vectors_disabled'), st.vectors_disabled],
  ]));

  const health = card(t('ov.journal'), kv([
    [t('ov.journal_bytes'), fmtBytes(st.journal_bytes), 'stats.journal_bytes'],
    [t('ov.generation'), fmtNum(st.generation), 'stats.generation'],
    [t('ov.skipped'), fmtNum(st.skipped_lines), 'stats.skipped_lines'],
    st.read_only && [t('ov.read_only'), st.read_only],
    st.checkpoint_error && [t('ov.checkpoint_error'), st.checkpoint_error],
    st.config_error && [t('ov.config_error'), st.config_error],
    st.restart_needed.length && [t('ov.restart_needed'), st.restart_needed.join(', ')],
    st.temp_files_removed && [t('ov.temp_removed'), `${st.temp_files_removed} (${fmtBytes(st.temp_bytes_removed)})`],
  ]), h('h3', { text: t('ov.repairs') }), list(st.repairs, t('ov.no_repairs')));

  const g = st.governance;
  const removed = card(t('ov.removed'),
    report.removed.length
      ? h('div', { class: 'scroll' }, h('table', { class: 'table', 'data-field': 'removed' },
        h('thead', {}, h('tr', {}, [t('when'), t('ov.reason'), t('count'), t('ov.tiers')]
          .map((x) => h('th', { scope: 'col', text: x })))),
        h('tbody', {}, report.removed.slice().reverse().map((r) => h('tr', {},
          h('td', { text: fmtTime(r.at) }),
          h('td', { text: t(`removal.${r.reason}`) }),
          h('td', { text: fmtNum(r.count) }),
          h('td', { text: Object.entries(r.tiers).map(([k, v]) => `${t(`tier.${k}`)} ${v}`).join(', ') }))))))
      : h('p', { class: 'muted', text: t('ov.nothing_removed') }),
    kv([
      [t('ov.distilled'), t('ov.distilled_value', { c: g.distilled_clusters, m: g.distilled_members })],
      [t('ov.quota_removed'), fmtNum(g.quota_removed)],
      g.last_distill_error && [t('ov.distill_error'), g.last_distill_error],
      g.disk_warning && [t('ov.disk_warning'), g.disk_warning],
      g.last_error && [t('ov.gov_error'), g.last_error],
    ]),
    report.held_change
      ? h('div', { class: 'problem', 'data-field': 'held_change',
        text: t('ov.held', { n: report.held_change.preview.would_remove, how: report.held_change.confirm }) })
      : null);

  const paths = wideCard(t('ov.paths'), kv(Object.entries(report.paths)
    .map(([k, v]) => [k, v || '—', `paths.${k}`])));

  clear(root).append(h('div', { class: 'grid overview' },
    tiers, histogram, eviction, embedder, health, removed, paths));
}

export default { render };
