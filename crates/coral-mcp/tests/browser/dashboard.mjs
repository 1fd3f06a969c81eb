// The dashboard in a real browser: the system's headless Chromium driven over the DevTools
// protocol (puppeteer-core, which never downloads a browser), against live `coral http`
// servers that crates/coral-mcp/tests/dashboard.rs starts on 127.0.0.1.
//
// Environment: CORAL_BIN, CORAL_CONFIG (the open server's config file), CORAL_URL (that
// server), CORAL_TOKEN_URL and CORAL_TOKEN (a second server that needs a token), CHROMIUM,
// SHOTS (where screenshots go). Prints one line per check; exits 1 at the first failure.

import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import puppeteer from 'puppeteer-core';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set; run this through cargo test --test dashboard`);
  return v;
};
const CORAL = env('CORAL_BIN');
const CONFIG = env('CORAL_CONFIG');
const URL = env('CORAL_URL');
const TOKEN_URL = env('CORAL_TOKEN_URL');
const TOKEN = env('CORAL_TOKEN');
const SHOTS = env('SHOTS');
mkdirSync(SHOTS, { recursive: true });

// The whole run is bounded: a hung browser or server fails the test instead of waiting.
const deadline = setTimeout(() => {
  console.error('FAILED: the browser test did not finish within 240 s');
  process.exit(1);
}, 240_000);

let passed = 0;
async function check(name, body) {
  try {
    await body();
    passed++;
    console.log(`ok ${passed} - ${name}`);
  } catch (e) {
    console.error(`FAILED: ${name}\n${e && e.stack ? e.stack : e}`);
    // What the page showed, for the reader of the failure.
    try {
      await page.screenshot({ path: `${SHOTS}/failure.png` });
      console.error(`screenshot: ${SHOTS}/failure.png\nproblems seen: ${JSON.stringify(problems, null, 1)}`);
    } catch {}
    process.exit(1);
  }
}

function cli(...args) {
  return execFileSync(CORAL, ['--config', CONFIG, '-q', ...args], { encoding: 'utf8' });
}

async function rpc(base, tool, args = {}, token) {
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const r = await fetch(`${base}rpc`, { method: 'POST', headers, body: JSON.stringify({ tool, args }) });
  const body = await r.json();
  if (!body.ok) throw new Error(`${tool}: ${JSON.stringify(body)}`);
  return body.result;
}

/** `coral mcp` on the same data directory: initialize, then one tools/call. */
async function overMcp(tool, args) {
  const child = spawn(CORAL, ['--config', CONFIG, '-q', 'mcp'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const replies = [];
  const waiters = [];
  lines.on('line', (l) => {
    const w = waiters.shift();
    if (w) w(JSON.parse(l));
    else replies.push(JSON.parse(l));
  });
  const next = () => new Promise((resolve) => {
    if (replies.length) resolve(replies.shift());
    else waiters.push(resolve);
  });
  const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'dashboard-test', version: '1' } } });
  await next();
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: tool, arguments: args } });
  const reply = await next();
  child.stdin.end();
  await new Promise((resolve) => child.on('exit', resolve));
  assert.ok(!reply.result.isError, JSON.stringify(reply));
  return reply.result.structuredContent;
}

const browser = await puppeteer.launch({
  executablePath: env('CHROMIUM'),
  headless: true,
  // Root in a container has no user namespace sandbox; evil.test resolves to loopback so a
  // rebinding page can be simulated.
  args: ['--no-sandbox', '--disable-dev-shm-usage', '--host-resolver-rules=MAP evil.test 127.0.0.1',
    '--lang=en-US'],
});

const problems = [];
function watch(page, label) {
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`${label}: console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`${label}: page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`${label}: request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    if (r.status() >= 400) {
      problems.push(`${label}: HTTP ${r.status()} for ${r.url()} ${r.request().postData() || ''}`);
    }
  });
}

const page = await browser.newPage();
await page.setViewport({ width: 1280, height: 800 });
watch(page, 'dashboard');
// Every tool the page calls, reported at the end (each must be one the sidecar serves: an
// unknown one would answer 404 and fail the error-status check).
const called = new Set();
page.on('request', (r) => {
  if (r.url().endsWith('/rpc') && r.postData()) called.add(JSON.parse(r.postData()).tool);
});

async function view(id) {
  await page.evaluate((v) => { location.hash = `#/${v}`; }, id);
  await page.waitForFunction((v) => document.body.dataset.view === v
    && document.getElementById('main').getAttribute('aria-busy') === 'false', {}, id);
}

async function refresh() {
  await page.evaluate(() => { document.body.dataset.view = ''; });
  await page.click('#refresh');
  await page.waitForFunction(() => document.body.dataset.view
    && document.getElementById('main').getAttribute('aria-busy') === 'false');
}

async function shot(name) {
  await page.evaluate(() => { document.getElementById('toast').className = ''; });
  await page.waitForFunction(() => getComputedStyle(document.getElementById('toast')).opacity === '0');
  await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: false });
}

async function confirmDialogWith(action = 'ok') {
  await page.waitForSelector('dialog[open]');
  await page.click(`dialog[open] button[data-action="${action}"]`);
  await page.waitForFunction(() => !document.querySelector('dialog[open]'));
}

const text = (sel) => page.$eval(sel, (e) => e.textContent);

// Data the views show: memories over the sidecar's /rpc (as a host would), a thread, and a
// timeline turn whose long tool result settles into a reload card.
const now = Date.now() / 1000;
for (let i = 0; i < 30; i++) {
  await rpc(URL, 'memory_insert', { content: `seed memory ${i} about subject${i} 样例${i}`, importance: (i % 10) / 10, project: i % 2 ? 'alpha' : undefined });
}
const created = JSON.parse(cli('--json', 'thread', 'create', 'Ship the dashboard', '--summary', 'views, tests, docs', '--by', 'cli'));
const threadId = created.thread.thread_id;
const turn = await rpc(URL, 'timeline_begin_turn', { text: 'what is in the build log?', conversation_id: 'c1' });
const longBody = `BUILD LOG START\n${'compiling crate number 42 of the workspace, all fine\n'.repeat(120)}BUILD LOG END`;
await rpc(URL, 'timeline_record_tool', { turn_id: turn.turn_id, tool_name: 'read_file', call_id: 'call-1', input: { path: 'build.log' }, result: longBody, conversation_id: 'c1' });
await rpc(URL, 'timeline_complete_turn', { turn_id: turn.turn_id, final_text: 'The build log shows a clean build.', conversation_id: 'c1' });

await check('the dashboard loads and the overview matches coral report --json', async () => {
  const report = JSON.parse(cli('--json', 'report'));
  await page.goto(URL, { waitUntil: 'load' });
  await page.waitForFunction(() => document.body.dataset.ready === '1' && document.body.dataset.view === 'overview');
  for (const k of ['hot', 'warm', 'cold', 'total', 'threads', 'capacity_threshold']) {
    const shown = (await text(`[data-field="stats.${k}"]`)).replace(/[^0-9]/g, '');
    assert.equal(Number(shown), report.stats[k], `stats.${k}`);
  }
  const days = await page.$$eval('[data-field="day_histogram"] li', (li) => li.map((x) => [x.dataset.date, Number(x.dataset.count)]));
  assert.deepEqual(days, report.day_histogram.map((d) => [d.date, d.count]));
  const evict = await page.$$eval('[data-field="eviction_preview"] tbody tr', (tr) => tr.map((x) => x.dataset.id));
  assert.deepEqual(evict, report.eviction_preview.map((c) => c.id));
  assert.equal(await text('[data-field="paths.data_dir"]'), report.paths.data_dir);
  assert.equal(await text('[data-field="paths.journal"]'), report.paths.journal);
  assert.ok((await page.$$('svg.bars rect.bar')).length === 14, 'the histogram draws 14 bars');
  await shot('overview');
});

await check('settings: a change confirmed old -> new lands in coral_config.json', async () => {
  await view('settings');
  const before = JSON.parse(readFileSync(CONFIG, 'utf8'));
  const old = (await page.$eval('input[data-key="retrieval.top_k"]', (e) => e.value));
  const next = String(Number(old) + 4);
  await page.click('input[data-key="retrieval.top_k"]', { clickCount: 3 });
  await page.keyboard.type(next);
  await page.click('button[data-action="save"]');
  await page.waitForSelector('dialog[open] tr[data-change="retrieval.top_k"]');
  const row = await page.$eval('dialog[open] tr[data-change="retrieval.top_k"]', (tr) => [tr.querySelector('.old').textContent, tr.querySelector('.new').textContent]);
  assert.deepEqual(row, [old, `→ ${next}`]);
  await shot('settings-confirm');
  await page.evaluate(() => { document.getElementById('toast').textContent = ''; });
  await confirmDialogWith('ok');
  await page.waitForFunction(() => /saved/.test(document.getElementById('toast').textContent));
  assert.equal(await page.$eval('input[data-key="retrieval.top_k"]', (e) => e.value), next);
  const after = JSON.parse(readFileSync(CONFIG, 'utf8'));
  assert.equal(after.retrieval.top_k, Number(next));
  assert.notEqual(before.retrieval?.top_k, Number(next));
  // Protected keys are read-only and say why.
  const locked = await page.$eval('[data-locked="embedding.embedder"]', (e) => e.textContent);
  assert.match(locked, /model files/);
  assert.ok(await page.$eval('input[data-key="embedding.embedder"]', (e) => e.readOnly));
  await shot('settings');
});

await check('settings: bad values are shown inline, from the page and from the server, and nothing is written', async () => {
  const before = readFileSync(CONFIG, 'utf8');
  const field = 'input[data-key="memory.sim_threshold_hot"]';
  const error = '[data-error-for="memory.sim_threshold_hot"]';
  await page.click(field, { clickCount: 3 });
  await page.keyboard.press('Backspace');
  await page.click('button[data-action="save"]');
  await page.waitForFunction((e) => document.querySelector(e)?.textContent.includes('number'), {}, error);
  assert.equal(await page.$('dialog[open]'), null, 'nothing to confirm while a field is wrong');
  // Out of range: the server's validation refuses it, naming the value; the page shows that
  // under the field (the refused call is the one expected 400).
  const seen = problems.length;
  await page.type(field, '3');
  await page.click('button[data-action="save"]');
  await confirmDialogWith('ok');
  await page.waitForFunction((e) => /3/.test(document.querySelector(e)?.textContent || ''), {}, error);
  const message = await text(error);
  assert.match(message, /sim_threshold_hot = 3 must be/);
  const added = problems.splice(seen);
  assert.ok(added.length >= 1 && added.every((p) => /400/.test(p)), added.join('\n'));
  assert.equal(readFileSync(CONFIG, 'utf8'), before);
  await page.click(field, { clickCount: 3 });
  await page.keyboard.type('0.7');
});

await check('settings: restore defaults asks first and leaves the memories', async () => {
  const count = (await rpc(URL, 'coral_stats')).stats.total;
  await page.evaluate(() => { document.getElementById('toast').textContent = ''; });
  await page.click('button[data-action="reset"]');
  await confirmDialogWith('ok');
  await page.waitForFunction(() => /Defaults restored/.test(document.getElementById('toast').textContent));
  const config = JSON.parse(readFileSync(CONFIG, 'utf8'));
  const defaults = (await rpc(URL, 'coral_config_get', { path: 'retrieval.top_k' })).config;
  assert.equal(config.retrieval?.top_k ?? defaults, defaults);
  assert.equal((await rpc(URL, 'coral_stats')).stats.total, count);
});

let mcpId;
await check('memories: a search shows a memory inserted over MCP, with its scores and why', async () => {
  const inserted = await overMcp('memory_insert', { content: 'the zebra crossing outside the office is repainted on Fridays 斑马线', importance: 0.4 });
  mcpId = inserted.item_id;
  assert.ok(mcpId);
  await view('memories');
  await page.click('#mem-query');
  await page.keyboard.type('zebra crossing repainted');
  await page.keyboard.press('Enter');
  await page.waitForSelector(`li.hit[data-id="${mcpId}"]`);
  const hit = await page.$eval(`li.hit[data-id="${mcpId}"]`, (li) => ({
    content: li.querySelector('.content').textContent,
    scores: [...li.querySelectorAll('[data-score]')].map((s) => s.dataset.score),
    why: li.querySelector('.why').textContent,
  }));
  assert.match(hit.content, /zebra crossing/);
  assert.deepEqual(hit.scores.slice(0, 3), ['vector', 'jaccard', 'time']);
  // The default mode ranks by relevance first: the hit's evidence is its words' BM25.
  assert.match(hit.why, /^Relevance first: words matched \(BM25 [0-9.]+\)/);
  await shot('memories-search');
});

await check('memories: the browser pages, filters and edits importance', async () => {
  const range = await text('[data-field="range"]');
  assert.match(range, /of 31/);
  await page.select('select[data-filter="project"]', 'alpha');
  await page.waitForFunction(() => /of 15 /.test(document.querySelector('[data-field="range"]')?.textContent || ''));
  await page.select('select[data-filter="project"]', '*');
  await page.waitForFunction(() => /of 31 /.test(document.querySelector('[data-field="range"]')?.textContent || ''));
  const first = await page.$eval('table.memories tbody tr', (tr) => tr.dataset.id);
  const input = `table.memories tr[data-id="${first}"] input[data-action="importance"]`;
  await page.click(input, { clickCount: 3 });
  await page.keyboard.type('0.9');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('toast').textContent.includes('0.9'));
  const listed = await rpc(URL, 'memory_list', { limit: 1 });
  assert.equal(listed.items[0].id, first);
  assert.equal(listed.items[0].importance, 0.9);
  await shot('memories');
});

await check('memories: delete asks for confirmation and removes the memory', async () => {
  await page.click(`li.hit[data-id="${mcpId}"] button[data-action="delete"]`);
  await page.waitForSelector('dialog[open] blockquote');
  assert.match(await text('dialog[open] blockquote'), /zebra crossing/);
  await confirmDialogWith('ok');
  await page.waitForFunction((id) => !document.querySelector(`[data-id="${id}"]`), {}, mcpId);
  const left = await rpc(URL, 'memory_list', { contains: 'zebra crossing' });
  assert.equal(left.matched, 0);
});

await check('threads: a thread advanced from the CLI appears on the board with its done mark', async () => {
  await view('threads');
  cli('thread', 'advance', threadId, 'views drawn and tested', '--done', '--by', 'cli-agent');
  await refresh();
  const card = `article.thread[data-id="${threadId}"]`;
  await page.waitForSelector(card);
  const steps = await page.$$eval(`${card} ol.steps li`, (li) => li.map((x) => [x.querySelector('.text').textContent, x.classList.contains('done')]));
  assert.deepEqual(steps.at(-1), ['views drawn and tested', true]);
  const column = await page.$eval(card, (a) => a.closest('[data-column]').dataset.column);
  assert.equal(column, 'active');
  // The board's own operations are the thread tools'.
  await page.click(`${card} button[data-action="advance"]`);
  await page.waitForSelector('dialog[open] #th-note');
  await page.type('#th-note', 'docs written from the board');
  await page.select('#th-done', 'yes');
  await confirmDialogWith('ok');
  await page.waitForFunction((c) => [...document.querySelectorAll(`${c} ol.steps li .text`)].some((x) => x.textContent === 'docs written from the board'), {}, card);
  const status = await rpc(URL, 'thread_status', { thread_id: threadId });
  const last = status.thread.steps.at(-1);
  assert.deepEqual([last.text, last.done, last.by], ['docs written from the board', true, 'dashboard']);
  await page.click(`${card} button[data-action="interrupt"]`);
  await page.waitForSelector('dialog[open] #th-reason');
  await confirmDialogWith('ok');
  await page.waitForFunction((id) => document.querySelector(`[data-column="interrupted"] [data-id="${id}"]`), {}, threadId);
  await page.click(`${card} button[data-action="resume"]`);
  await page.waitForFunction((id) => document.querySelector(`[data-column="active"] [data-id="${id}"]`), {}, threadId);
  await shot('threads');
});

await check('timeline: a reload card expands to its stored body', async () => {
  await view('timeline');
  // The latest conversation opens by itself.
  await page.waitForSelector('button[data-conversation="c1"][aria-pressed="true"]');
  await page.waitForSelector('li.entry.folded button[data-action="expand"]');
  const card = await page.$eval('li.entry.folded .text', (e) => e.textContent);
  assert.ok(card.length < longBody.length, 'the card is shorter than the body');
  await page.click('li.entry.folded button[data-action="expand"]');
  await page.waitForSelector('li.entry.folded .body pre.body-text');
  assert.equal(await text('li.entry.folded .body pre.body-text'), longBody);
  const saved = Number((await text('[data-field="metrics.saved_tokens"]')).replace(/[^0-9]/g, ''));
  assert.ok(saved > 0, 'tokens folded are shown');
  assert.match(await text('[data-field="context"]'), /clean build/);
  await shot('timeline');
});

await check('the language switch shows every view in Chinese, and no word is missing', async () => {
  const missing = await page.evaluate(async () => (await import('/assets/i18n.js')).missing());
  assert.deepEqual(missing, { zh: [], en: [] });
  await page.click('#lang');
  await page.waitForFunction(() => document.getElementById('tab-overview').textContent === '概览');
  for (const v of ['overview', 'settings', 'memories', 'threads', 'timeline']) {
    await view(v);
    await shot(`${v}-zh`);
  }
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN');
  await page.click('#lang');
  await page.waitForFunction(() => document.getElementById('tab-overview').textContent === 'Overview');
});

await check('keyboard: number keys and arrow keys move between views', async () => {
  await view('overview');
  await page.focus('#tab-overview');
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => document.body.dataset.view === 'settings');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'tab-settings');
  await page.focus('body');
  await page.keyboard.press('3');
  await page.waitForFunction(() => document.body.dataset.view === 'memories');
  await page.keyboard.press('/');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'mem-query');
});

await check('live: a memory another client inserts appears without a reload', async () => {
  await view('overview');
  const before = Number((await text('[data-field="stats.total"]')).replace(/[^0-9]/g, ''));
  await rpc(URL, 'memory_insert', { content: 'written by another client while the page is open' });
  await page.waitForFunction((n) => Number(document.querySelector('[data-field="stats.total"]')?.textContent.replace(/[^0-9]/g, '')) === n,
    { timeout: 20_000 }, before + 1);
});

await check('a phone-width screen shows every view without sideways scrolling', async () => {
  await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
  for (const v of ['overview', 'settings', 'memories', 'threads', 'timeline']) {
    await view(v);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `${v} is ${overflow}px wider than the screen`);
    await shot(`${v}-phone`);
  }
  await page.setViewport({ width: 1280, height: 800 });
});

await check('no console error, failed request or error status in any view', async () => {
  assert.deepEqual(problems, []);
  console.log(`# tools the page called: ${[...called].sort().join(', ')}`);
});

await check('a page from another origin cannot change anything', async () => {
  const before = { config: readFileSync(CONFIG, 'utf8'), list: await rpc(URL, 'memory_list', { limit: 200 }), threads: await rpc(URL, 'thread_status', { include_archived: true }) };
  const victim = before.list.items[0].id;
  const attack = `<!doctype html><body><form id="f" method="POST" action="${URL}rpc" enctype="text/plain" target="sink">
<input name='{"tool":"memory_delete","args":{"item_id":"${victim}"},"x":"' value='"}'></form>
<iframe name="sink"></iframe><iframe id="framed" src="${URL}"></iframe><script>
const results = {};
const body = JSON.stringify({ tool: 'memory_delete', args: { item_id: '${victim}' } });
const set = JSON.stringify({ tool: 'coral_config_set', args: { key_path: 'memory.capacity_threshold', value: 1 } });
async function attempt(name, f) { try { const r = await f(); results[name] = r.type + ':' + r.status; } catch (e) { results[name] = 'blocked'; } }
(async () => {
  await attempt('no-cors text', () => fetch('${URL}rpc', { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body }));
  await attempt('no-cors config', () => fetch('${URL}rpc', { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body: set }));
  await attempt('cors json', () => fetch('${URL}rpc', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body }));
  await attempt('read', () => fetch('${URL}health'));
  document.getElementById('f').submit();
  setTimeout(() => { window.done = results; }, 1500);
})();
</script></body>`;
  const evil = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(attack);
  });
  await new Promise((resolve) => evil.listen(0, '127.0.0.1', resolve));
  const other = await browser.newPage();
  await other.goto(`http://127.0.0.1:${evil.address().port}/`);
  await other.waitForFunction(() => window.done, { timeout: 20_000 });
  const results = await other.evaluate(() => window.done);
  // A CORS request is refused before any body is sent; a no-cors one gets an opaque answer.
  assert.equal(results['cors json'], 'blocked');
  assert.equal(results.read, 'blocked');
  // The framed dashboard is refused (frame-ancestors 'none'): its frame holds no dashboard.
  const framed = other.frames().find((f) => f.url().startsWith(URL));
  if (framed) {
    const tabs = await framed.$('#tabs').catch(() => null);
    assert.equal(tabs, null, 'the dashboard must not render inside a foreign frame');
  }
  // DNS rebinding: a name that resolves to loopback is not this server's.
  const rebound = await other.goto(URL.replace('127.0.0.1', 'evil.test'));
  assert.equal(rebound.status(), 403);
  await other.close();
  evil.close();
  assert.equal(readFileSync(CONFIG, 'utf8'), before.config);
  const after = await rpc(URL, 'memory_list', { limit: 200 });
  assert.deepEqual(after.items.map((m) => m.id), before.list.items.map((m) => m.id));
  assert.deepEqual(await rpc(URL, 'thread_status', { include_archived: true }), before.threads);
});

await check('with a token: asked once per browser session, kept out of addresses and local storage', async () => {
  const context = await browser.createBrowserContext();
  const tp = await context.newPage();
  await tp.goto(TOKEN_URL);
  await tp.waitForSelector('dialog[open] #token-input');
  await tp.type('#token-input', TOKEN);
  await tp.click('dialog[open] button[data-action="ok"]');
  await tp.waitForFunction(() => document.body.dataset.view === 'overview' && document.querySelector('[data-field="stats.total"]'));
  assert.equal(await tp.evaluate(() => sessionStorage.getItem('coral.token')), TOKEN);
  assert.equal(await tp.evaluate(() => JSON.stringify(localStorage).includes('coral.token')), false);
  assert.ok(!tp.url().includes(TOKEN));
  // A reload in the same tab is not asked again.
  const errors = [];
  tp.on('response', (r) => { if (r.status() === 401) errors.push(r.url()); });
  await tp.reload();
  await tp.waitForFunction(() => document.body.dataset.view === 'overview' && document.querySelector('[data-field="stats.total"]'));
  assert.equal(await tp.$('dialog[open]'), null);
  assert.deepEqual(errors, []);
  await tp.screenshot({ path: `${SHOTS}/token.png` });
  await context.close();
});

console.log(`${passed} passed, 0 failed`);
clearTimeout(deadline);
await browser.close();
