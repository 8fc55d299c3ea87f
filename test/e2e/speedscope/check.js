// Loads extrospect's speedscope file and collapsed stacks into the real speedscope web app (npm "speedscope", its
// dist/release) and its SVG flame graph, both in headless Chromium through playwright-core, and
// asserts what a user would see. Usage: node check.js PROFILE.json PROFILE.svg PROFILE.txt OUTDIR
// Exit 0 pass, 1 fail, 77 skip (reason printed). Does not own: producing the files (the C code
// writes them; test/c/test_report.c keeps the checked-in fixtures current).
'use strict';
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');

const [jsonPath, svgPath, foldedPath, outDir, tracePath] = process.argv.slice(2);
const CHROMIUM = process.env.XP_CHROMIUM || '/usr/bin/chromium';
const TITLE = 'extrospect e2e';
let failed = 0;

function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${ok || detail === undefined ? '' : ': ' + detail}`);
  if (!ok) failed++;
}
function checkEq(name, expected, got) {
  const e = JSON.stringify(expected), g = JSON.stringify(got);
  check(name, e === g, `expected ${e} got ${g}`);
}

// The file parsed back, exactly: frames by id, then each profile's stacks and weights.
function checkJson() {
  const doc = JSON.parse(fs.readFileSync(jsonPath, 'utf8'));
  const names = doc.shared.frames.map((f) => f.name);
  checkEq('json: $schema', 'https://www.speedscope.app/file-format-schema.json', doc.$schema);
  checkEq('json: exporter', 'extrospect', doc.exporter);
  checkEq('json: frames', ['rabbit_channel:handle_cast/2', 'lists:foldl/3', "mod:'odd name'/2",
    'memcpy', "a;b & <c> \"q\" 'x' 50% \\ \u0001 \u00e9 \ufffd", "'-fun/1-lc$^0/1-0-'",
    'beam_jit_call_bif', '[sleep]', 'memcpy', '<0.123.0> rabbit_channel', 'scheduler idle'],
  names);
  checkEq('json: profile names', ['all processes', '<0.123.0> rabbit_channel', 'scheduler idle'],
    doc.profiles.map((p) => p.name));
  const stacks = (p) => p.samples.map((s, i) => s.map((f) => names[f]).join(';') + ' ' + p.weights[i]);
  checkEq('json: group profile stacks', ['[sleep] 4', 'memcpy 1', 'memcpy 1'], stacks(doc.profiles[2]));
  checkEq('json: merged stack', '<0.123.0> rabbit_channel;rabbit_channel:handle_cast/2;lists:foldl/3 3',
    stacks(doc.profiles[0])[2]);
  checkEq('json: end values', [14, 8, 6], doc.profiles.map((p) => p.endValue));
  for (const p of doc.profiles) {
    checkEq(`json: ${p.name}: weights sum to endValue`, p.endValue, p.weights.reduce((a, b) => a + b, 0));
  }
}

// Serves the speedscope app at / and the profiles under /data/, on 127.0.0.1 only.
function serve(appDir) {
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css',
    '.json': 'application/json', '.svg': 'image/svg+xml', '.wasm': 'application/wasm',
    '.png': 'image/png', '.woff2': 'font/woff2', '.txt': 'text/plain' };
  const files = { '/data/profile.speedscope.json': jsonPath, '/data/profile.svg': svgPath,
    '/data/profile.collapsed.txt': foldedPath, '/data/profile.trace.json': tracePath };
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent(req.url.split(/[?#]/)[0]);
    if (url === '/favicon.ico') {
      res.writeHead(204).end(); // asked for by the SVG page; not an error
      return;
    }
    let file = files[url] || path.join(appDir, path.normalize(url === '/' ? '/index.html' : url));
    if (!files[url] && !file.startsWith(appDir + path.sep)) file = null;
    fs.readFile(file || '', (err, body) => {
      if (err) {
        res.writeHead(404).end('not found');
        return;
      }
      res.writeHead(200, { 'Content-Type': types[path.extname(file)] || 'application/octet-stream' });
      res.end(body);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function watch(page, problems) {
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    d.dismiss().catch(() => {});
  });
}

function bodyHas(page, text) {
  return page.waitForFunction((t) => document.body.innerText.includes(t), text, { timeout: 10000 })
    .catch(() => {});
}

// Without a title in the URL speedscope shows the file's "name" and each profile's own name.
async function checkSpeedscope(page, base) {
  const problems = [];
  const profileURL = encodeURIComponent(`${base}/data/profile.speedscope.json`);
  watch(page, problems);
  await page.goto(`${base}/index.html#profileURL=${profileURL}`);
  await page.waitForFunction((t) => document.title === `${t} - speedscope`, TITLE, { timeout: 30000 })
    .catch(() => {});
  checkEq('speedscope: document title is the file name', `${TITLE} - speedscope`, await page.title());
  await bodyHas(page, '(1/3)');
  let text = await page.evaluate(() => document.body.innerText);
  check('speedscope: toolbar shows profile 1 of 3', text.includes('all processes (1/3)'), text);
  check('speedscope: no error page', !text.includes('Something went wrong'), text);
  check('speedscope: a flame chart canvas', (await page.locator('canvas').count()) > 0);

  // The profile selector lists our profiles with their total weights.
  await page.getByText('(1/3)').first().click();
  await bodyHas(page, 'scheduler idle');
  text = await page.evaluate(() => document.body.innerText);
  for (const row of ['1\tall processes\t14', '2\t<0.123.0> rabbit_channel\t8', '3\tscheduler idle\t6']) {
    check(`speedscope: profile selector row ${JSON.stringify(row)}`, text.includes(row), text);
  }
  await page.waitForTimeout(500); // let the WebGL flame chart paint before the screenshot
  await page.screenshot({ path: path.join(outDir, 'speedscope.png') });
  await page.getByText('scheduler idle', { exact: true }).first().click();
  await bodyHas(page, 'scheduler idle (3/3)');
  text = await page.evaluate(() => document.body.innerText);
  check('speedscope: third profile selected', text.includes('scheduler idle (3/3)'), text);
  checkEq('speedscope: no import error, page error or dialog', [], problems);
}

// A title in the URL renames the file and, in speedscope, every profile.
async function checkTitle(page, base) {
  const problems = [];
  const profileURL = encodeURIComponent(`${base}/data/profile.speedscope.json`);
  watch(page, problems);
  await page.goto(`${base}/index.html#profileURL=${profileURL}&title=other%20title`);
  await page.waitForFunction(() => document.title === 'other title - speedscope', null,
    { timeout: 30000 }).catch(() => {});
  checkEq('speedscope &title=: document title', 'other title - speedscope', await page.title());
  await bodyHas(page, 'other title (1/3)');
  const text = await page.evaluate(() => document.body.innerText);
  check('speedscope &title=: toolbar', text.includes('other title (1/3)'), text);
  checkEq('speedscope &title=: no import error, page error or dialog', [], problems);
}

// The sandwich view lists every frame in a DOM table with its total weight.
async function checkSandwich(page, base) {
  const problems = [];
  const profileURL = encodeURIComponent(`${base}/data/profile.speedscope.json`);
  watch(page, problems);
  await page.goto(`${base}/index.html#profileURL=${profileURL}&view=sandwich`);
  await page.waitForFunction(() => document.body.innerText.includes('lists:foldl/3'), null,
    { timeout: 30000 }).catch(() => {});
  const text = await page.evaluate(() => document.body.innerText);
  check('sandwich: toolbar names the merged profile', text.includes('all processes (1/3)'), text);
  for (const name of ['lists:foldl/3', "mod:'odd name'/2", 'beam_jit_call_bif', '[sleep]',
    "'-fun/1-lc$^0/1-0-'", "a;b & <c> \"q\" 'x' 50% \\", '\u00e9 \ufffd']) {
    check(`sandwich: lists ${name}`, text.includes(name), text);
  }
  // Rows read "total (share) self (share) name".
  for (const [total, self, name] of [['6 \\(43%\\)', '0 \\(<0\\.01%\\)', 'rabbit_channel:handle_cast/2'],
    ['4 \\(29%\\)', '3 \\(21%\\)', 'lists:foldl/3'], ['8 \\(57%\\)', '0 \\(<0\\.01%\\)', '<0.123.0> rabbit_channel']]) {
    const re = new RegExp(`^${total}\\s+${self}\\s+${name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`, 'm');
    check(`sandwich: weights of ${name}`, re.test(text), text);
  }
  await page.screenshot({ path: path.join(outDir, 'speedscope-sandwich.png') });
  checkEq('sandwich: no page error or dialog', [], problems);
}

// speedscope's own importer reads the collapsed text: groups become root frames, ';' stays escaped.
async function checkCollapsed(page, base) {
  const problems = [];
  const profileURL = encodeURIComponent(`${base}/data/profile.collapsed.txt`);
  watch(page, problems);
  await page.goto(`${base}/index.html#profileURL=${profileURL}&view=sandwich`);
  await bodyHas(page, 'lists:foldl/3');
  const text = await page.evaluate(() => document.body.innerText);
  for (const [total, name] of [['8 \\(57%\\)', '<0\\.123\\.0> rabbit_channel'],
    ['6 \\(43%\\)', 'rabbit_channel:handle_cast/2'], ['3 \\(21%\\)', 'memcpy'],
    ['1 \\(7\\.1%\\)', "a%3Bb & <c> \"q\" 'x' 50%25 \\\\"]]) {
    const re = new RegExp(`^${total}\\s+\\S+ \\([^)]*\\)\\s+${name}`, 'm');
    check(`collapsed: ${name.replace(/\\/g, '')} total`, re.test(text), text);
  }
  checkEq('collapsed: no import error, page error or dialog', [], problems);
}

// speedscope's Chrome trace importer reads the timeline: one profile per scheduler thread, named by
// its thread_name, each run of a process a frame with the sampled functions under it.
async function checkTrace(page, base) {
  const problems = [];
  const profileURL = encodeURIComponent(`${base}/data/profile.trace.json`);
  watch(page, problems);
  await page.goto(`${base}/index.html#profileURL=${profileURL}`);
  await bodyHas(page, 'scheduler');
  let text = await page.evaluate(() => document.body.innerText);
  check('trace: no error page', !text.includes('Something went wrong'), text);
  check('trace: a profile per scheduler thread, named', /scheduler 1/.test(text), text);
  check('trace: a flame chart canvas', (await page.locator('canvas').count()) > 0);
  await page.waitForTimeout(500);
  await page.screenshot({ path: path.join(outDir, 'trace.png') });
  checkEq('trace: no import error, page error or dialog', [], problems);
}

// The sandwich view of the timeline lists the run (speedscope appends its args) and its functions.
async function checkTraceSandwich(page, base) {
  const problems = [];
  const profileURL = encodeURIComponent(`${base}/data/profile.trace.json`);
  watch(page, problems);
  await page.goto(`${base}/index.html#profileURL=${profileURL}&view=sandwich`);
  await bodyHas(page, 'xp_stall:rare_slow_path/1');
  const text = await page.evaluate(() => document.body.innerText);
  for (const name of ['xp_stall_server {"pid":"<0.90.0>","name":"xp_stall_server"}',
    'xp_stall:server/2', 'xp_stall:rare_slow_path/1', 'memcpy']) {
    check(`trace: sandwich lists ${name}`, text.includes(name), text);
  }
  checkEq('trace sandwich: no import error, page error or dialog', [], problems);
}

function svgState(page) {
  return page.evaluate(() => {
    const gs = [...document.querySelectorAll('#frames > g')];
    const byName = (n) => gs.find((g) => g._name === n);
    const rect = (g) => g && g.querySelector('rect');
    return {
      frames: gs.length,
      hidden: gs.filter((g) => g.classList.contains('hide')).length,
      handleWidth: rect(byName('rabbit_channel:handle_cast/2')).getAttribute('width'),
      foldlWidth: rect(byName('lists:foldl/3')).getAttribute('width'),
      foldlText: byName('lists:foldl/3').querySelector('text').textContent,
      details: document.getElementById('details').textContent,
      matched: document.getElementById('matched').textContent,
      unzoomHidden: document.getElementById('unzoom').classList.contains('hide'),
    };
  });
}

async function checkSvg(page, base) {
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('dialog', (d) => d.accept('memcpy'));
  await page.goto(`${base}/data/profile.svg`);
  await page.waitForFunction(() => typeof search === 'function' && document.querySelector('#frames > g')._name,
    null, { timeout: 10000 }).catch(() => {});
  let s = await svgState(page);
  checkEq('svg: 13 frames drawn', 13, s.frames);
  const handle = page.locator('#frames > g', { hasText: 'rabbit_channel:handle_cast/2' }).first();
  await handle.hover();
  s = await svgState(page);
  checkEq('svg: hover shows details', 'Function: rabbit_channel:handle_cast/2 (6 samples, 42.86%)', s.details);
  await handle.click();
  s = await svgState(page);
  checkEq('svg: zoomed frame spans the width', '1180.00', s.handleWidth);
  checkEq('svg: its child scales (337.14 * 1180 / 505.72)', '786.65', s.foldlWidth);
  checkEq('svg: frames outside hidden', 7, s.hidden);
  checkEq('svg: Reset Zoom shown', false, s.unzoomHidden);
  await page.locator('#unzoom').click();
  s = await svgState(page);
  checkEq('svg: reset restores widths', ['505.72', '337.14', 0], [s.handleWidth, s.foldlWidth, s.hidden]);
  await page.locator('#search').click(); // prompt answered "memcpy" by the dialog handler
  s = await svgState(page);
  checkEq('svg: search matches 3 of 14 samples', 'Matched: 21.4%', s.matched);
  await page.screenshot({ path: path.join(outDir, 'flamegraph.png') });
  checkEq('svg: no page error', [], problems);
}

async function main() {
  if (!jsonPath || !svgPath || !foldedPath || !outDir) {
    console.log('usage: node check.js PROFILE.json PROFILE.svg PROFILE.txt OUTDIR');
    return 1;
  }
  let chromium;
  try {
    ({ chromium } = require('playwright-core'));
  } catch (e) {
    console.log(`SKIP: playwright-core not installed: ${e.message}`);
    return 77;
  }
  const appDir = path.dirname(require.resolve('speedscope/dist/release/index.html'));
  checkJson();
  const server = await serve(appDir);
  const base = `http://127.0.0.1:${server.address().port}`;
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'xp-chromium-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 720 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    await checkSpeedscope(await context.newPage(), base);
    await checkTitle(await context.newPage(), base);
    await checkSandwich(await context.newPage(), base);
    await checkCollapsed(await context.newPage(), base);
    await checkSvg(await context.newPage(), base);
    if (tracePath) {
      await checkTrace(await context.newPage(), base);
      await checkTraceSandwich(await context.newPage(), base);
    }
  } finally {
    if (context) await context.close();
    server.close();
    fs.rmSync(profileDir, { recursive: true, force: true });
  }
  console.log(`${failed ? 'FAIL' : 'PASS'}: ${failed} check(s) failed; screenshots in ${outDir}`);
  return failed ? 1 : 0;
}

main().then((rc) => process.exit(rc), (e) => {
  console.log(`FAIL: ${e.stack || e}`);
  process.exit(1);
});
