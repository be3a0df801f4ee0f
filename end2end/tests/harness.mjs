// Shared set-up for the browser tests: starts the real couponkeeper binary on
// a fresh SQLite database and a free port, and launches Debian's Chromium
// through playwright-core (no browser download).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const SCREENSHOTS = join(ROOT, 'end2end', 'screenshots');

/** The binary built by `cargo build` (honours CARGO_TARGET_DIR). */
export function binaryPath() {
  if (process.env.COUPONKEEPER_BIN) return process.env.COUPONKEEPER_BIN;
  const target = process.env.CARGO_TARGET_DIR || join(ROOT, 'target');
  return join(target, 'debug', 'couponkeeper');
}

function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

/**
 * Runs a one-shot `couponkeeper` command (`staff add`, `demo-data`, ...)
 * with `env`; resolves with its exit code and output (at most 60 s).
 */
export function runCli(args, env) {
  return new Promise((ok, fail) => {
    const child = spawn(binaryPath(), args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      fail(new Error(`cannot run ${binaryPath()} ${args.join(' ')}: ${e.message}`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      ok({ code, stdout, stderr });
    });
  });
}

/**
 * Starts the service (`couponkeeper serve ...args`); resolves once /healthz
 * answers (at most 30 s). `options.beforeStart(cli)` runs first, against
 * the same fresh database (e.g. `cli(['staff', 'add', ...])`). The result's
 * `cli(args, extraEnv)` runs further commands against that database.
 */
export async function startServer(extraEnv = {}, args = [], options = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'ck-e2e-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    DATABASE_URL: `sqlite://${join(dir, 'e2e.db')}`,
    COUPONKEEPER_ADDR: `127.0.0.1:${port}`,
    COUPONKEEPER_API_TOKEN: 'e2e-token',
    RUST_LOG: 'warn',
    ...extraEnv,
  };
  const cli = (cliArgs, more = {}) => runCli(cliArgs, { ...env, ...more });
  if (options.beforeStart) await options.beforeStart(cli);
  const child = spawn(binaryPath(), ['serve', ...args], {
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  let spawnError = null;
  child.on('error', (e) => {
    spawnError = e;
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (spawnError) throw new Error(`cannot start ${binaryPath()}: ${spawnError.message} (run cargo build first)`);
    if (child.exitCode !== null) throw new Error(`couponkeeper exited with ${child.exitCode}`);
    try {
      const r = await fetch(`${base}/healthz`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGTERM');
      throw new Error('couponkeeper did not answer /healthz within 30 s');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    cli,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Content-Security-Policy violations Chromium reported on any page of any
 * context of a browser from `launchBrowser` (console messages, and the
 * `securitypolicyviolation` event where JavaScript runs).
 */
export const cspViolations = [];

function watchCsp(context) {
  context
    .addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        console.error(`Content Security Policy violation: ${e.violatedDirective} blocked ${e.blockedURI || 'inline'} on ${location.pathname}`);
      });
    })
    .catch(() => {});
  const onPage = (page) => {
    page.on('console', (msg) => {
      const text = msg.text();
      if (/Content Security Policy/i.test(text)) cspViolations.push(`${page.url()}: ${text}`);
    });
  };
  context.on('page', onPage);
  for (const p of context.pages()) onPage(p);
}

/**
 * Headless Chromium from /usr/bin/chromium, with the flags this machine
 * needs. Every context it makes is watched for CSP violations, and
 * `close()` fails the test file when any was seen: a page that needs an
 * inline script or style, or loads from elsewhere, is a failure.
 */
export async function launchBrowser() {
  const browser = await launchChromium();
  const newContext = browser.newContext.bind(browser);
  browser.newContext = async (options) => {
    const context = await newContext(options);
    watchCsp(context);
    return context;
  };
  const newPage = browser.newPage.bind(browser);
  browser.newPage = async (options) => {
    const page = await newPage(options);
    watchCsp(page.context());
    return page;
  };
  const close = browser.close.bind(browser);
  browser.close = async (...args) => {
    await close(...args);
    if (cspViolations.length > 0) {
      const seen = cspViolations.splice(0);
      throw new Error(`Content Security Policy violations:\n${seen.join('\n')}`);
    }
  };
  return browser;
}

async function launchChromium() {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** The two widths every console page must fit. */
export const WIDE = { width: 1366, height: 900 };
export const PHONE = { width: 390, height: 844 };

/**
 * Asserts what every console page of a walk must be: no wider than its
 * window, and none of the `unreadable` patterns (stored words, raw ids) in
 * its visible text. The technical-ids drawer (`details.ids`) and whatever
 * `skip` selects are left out of the text; `chinese` also asserts Chinese.
 */
export async function checkPage(page, where, unreadable, { skip = [], chinese = false } = {}) {
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  const viewport = page.viewportSize().width;
  assert.ok(width <= viewport, `${where}: ${page.url()} is ${width} px wide in a ${viewport} px window`);
  const text = await page.evaluate((selectors) => {
    const clone = document.body.cloneNode(true);
    for (const sel of ['details.ids', ...selectors]) {
      for (const d of clone.querySelectorAll(sel)) d.remove();
    }
    return clone.innerText;
  }, skip);
  for (const re of unreadable) {
    const m = text.match(re);
    assert.equal(m, null, `${where}: ${page.url()} shows "${m?.[0]}"`);
  }
  if (chinese) assert.match(text, /[\u4e00-\u9fff]/, `${where}: the page is in Chinese`);
}

/**
 * A new browser context signed in as `who` through the real form (zh-CN,
 * 1366 px unless `options` say otherwise); resolves with it and its page.
 */
export async function signIn(browser, base, who, options = {}) {
  const context = await browser.newContext({ viewport: WIDE, locale: 'zh-CN', ...options });
  const page = await context.newPage();
  await page.goto(`${base}/login`);
  await page.fill('#login-name', who.name);
  await page.fill('#login-password', who.password);
  await Promise.all([page.waitForURL(/\/console$/), page.click('button.primary')]);
  return { context, page };
}

/** Clicks the button `testid` and waits for the page it lands on. */
export async function submit(page, testid) {
  await Promise.all([page.waitForEvent('load'), page.getByTestId(testid).click()]);
}

/** Asserts the page shows a success flash; else says what the page says. */
export async function expectOk(page, where) {
  const flash = page.getByTestId('flash');
  if ((await flash.count()) === 1 && /flash-ok/.test((await flash.getAttribute('class')) ?? '')) return;
  const errors = await page.locator('.field-error, [data-testid=flash]').allInnerTexts();
  assert.fail(`${where}: no success at ${page.url()}: ${JSON.stringify(errors)}`);
}

/**
 * Adds each `[who, role]` staff member through the CLI (`staff add`, the
 * password from the environment): the `beforeStart` step of a walk.
 */
export async function addStaff(cli, members) {
  for (const [who, role] of members) {
    const r = await cli(['staff', 'add', who.name, '--role', role, '--password-env', 'E2E_STAFF_PW'], {
      E2E_STAFF_PW: who.password,
    });
    assert.equal(r.code, 0, `staff add ${who.name}: ${r.stderr}`);
  }
}

/**
 * A JSON caller of the API under `base` with the harness's token; every
 * call carries a fresh Idempotency-Key, as API.md asks of callers.
 * Resolves with `{status, body}` (`body` null when it is not JSON).
 */
export function apiClient(base, token = 'e2e-token') {
  return async (method, path, body) => {
    const r = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'idempotency-key': `e2e-${Math.random().toString(36).slice(2)}-${Date.now()}`,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: await r.json().catch(() => null) };
  };
}

/**
 * Copies screenshots this run took into the documentation's folder
 * (`docs/src/screenshots`, the book's images), each under the name the
 * book uses: `names` maps a file in `end2end/screenshots` to its name there
 * (the same name when a string is given). A screenshot the run did not
 * take is left out.
 */
export function publishScreenshots(names) {
  const docs = join(ROOT, 'docs', 'src', 'screenshots');
  mkdirSync(docs, { recursive: true });
  for (const entry of names) {
    const [from, to] = Array.isArray(entry) ? entry : [entry, entry];
    const source = join(SCREENSHOTS, from);
    if (existsSync(source)) copyFileSync(source, join(docs, to));
  }
}
