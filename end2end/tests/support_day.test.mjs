// A support agent's day in a real browser, on the demo data,
// once in Chinese and once in English: the home work queue → a
// reconciliation finding → its order → the one-click health check → the
// fix → compensation from the order page with a mistyped amount above the
// cap (refused, the input kept, the message at the field) → corrected →
// back on the order with the check re-run and a flash saying what changed.
//
// Every page on the way is checked: its width fits the 1366 px viewport
// (no sideways scroll), it shows no raw cpn_/tpl_/cmp_ id and no stored
// status or action word outside the folded "IDs" line, and nothing under
// /console/ answers JSON (an unknown console address is the console's own
// 404 page).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, SCREENSHOTS, binaryPath, checkPage, launchBrowser, runCli, startServer } from './harness.mjs';

const SUPPORT = { name: 'xiaoyu', password: 'e2e-support-password-9' };
const OPERATOR = { name: 'laozhou', password: 'e2e-operator-password-9' };
const WIDE = { width: 1366, height: 900 };

let server;
let browser;
/** kind -> { kind, order_no, coupon_id, code, user_id } */
const anomaly = {};

before(async () => {
  const help = await runCli(['--help'], process.env);
  assert.ok(/\bdemo-data\b/.test(help.stdout), `${binaryPath()} is not this checkout's build: run cargo build`);
  server = await startServer({ COUPONKEEPER_JOBS: 'off' }, ['--demo-data'], {
    async beforeStart(cli) {
      for (const [who, role] of [[SUPPORT, 'support'], [OPERATOR, 'operator']]) {
        const r = await cli(['staff', 'add', who.name, '--role', role, '--password-env', 'E2E_STAFF_PW'], {
          E2E_STAFF_PW: who.password,
        });
        assert.equal(r.code, 0, `staff add ${who.name}: ${r.stderr}`);
      }
    },
  });
  const r = await server.cli(['demo-data', '--json']);
  assert.equal(r.code, 0, `demo-data --json: ${r.stderr}`);
  for (const a of JSON.parse(r.stdout).anomalies) anomaly[a.kind] ??= a;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Stored words a person should never have to read on a console page. */
const UNREADABLE = [
  /\b(cpn|tpl|cmp)_[0-9a-z]{6,}/,
  /\b(pending_deposit|deposit_paid|pending_payment|final_paid)\b/,
  /\b(staff_release|force_release|checkout_lock|deposit_payment|release_coupon|mark_coupon_used)\b/,
  /\b(staff|job|demo):[a-z]/,
];

/** The checks every page of the walk must pass (the audit filter's hint
 * spells out the stored actor format, so the filter form is left out). */
function check(page, where) {
  return checkPage(page, where, UNREADABLE, { skip: ['form.filters'] });
}

/** Opens `path`, asserts an HTML answer, and checks the page. */
async function visit(page, path, where) {
  const r = await page.goto(`${server.base}${path}`);
  assert.match(r.headers()['content-type'] ?? '', /text\/html/, `${path} answers HTML`);
  await check(page, where);
  return r;
}

async function signIn(lang) {
  const options = lang === 'en'
    ? { locale: 'en-US', extraHTTPHeaders: { 'Accept-Language': 'en' } }
    : { locale: 'zh-CN' };
  const context = await browser.newContext({ viewport: WIDE, ...options });
  const page = await context.newPage();
  await page.goto(`${server.base}/login`);
  await page.fill('#login-name', SUPPORT.name);
  await page.fill('#login-password', SUPPORT.password);
  await Promise.all([page.waitForURL(/\/console$/), page.click('button.primary')]);
  return { context, page };
}

/** Makes sure a reconciliation run exists (an operator runs one). */
async function ensureRun() {
  const context = await browser.newContext({ viewport: WIDE, locale: 'zh-CN' });
  const page = await context.newPage();
  await page.goto(`${server.base}/login`);
  await page.fill('#login-name', OPERATOR.name);
  await page.fill('#login-password', OPERATOR.password);
  await Promise.all([page.waitForURL(/\/console$/), page.click('button.primary')]);
  await page.goto(`${server.base}/console/reconciliation`);
  if ((await page.getByTestId('no-run').count()) > 0) {
    await Promise.all([page.waitForEvent('load'), page.getByTestId('run-now').click()]);
  }
  await context.close();
}

/**
 * The walk for one planted anomaly `kind`, in `lang`; `words` are what the
 * page says in that language.
 */
async function walk(lang, kind, words) {
  const a = anomaly[kind];
  assert.ok(a, `the demo plants a ${kind} anomaly`);
  const { context, page } = await signIn(lang);
  await check(page, 'home');

  // 1. The home queue names the finding; its line leads to it.
  const line = page.locator(`[data-testid=queue-findings] a[href$="#kind-${kind}"]`);
  assert.equal(await line.count(), 1, `the queue lists ${kind}`);
  assert.match(await line.innerText(), words.findingLine);
  await page.screenshot({ path: join(SCREENSHOTS, `home-queue-${lang}.png`), fullPage: true });
  await Promise.all([page.waitForURL(/\/console\/reconciliation/), line.click()]);
  await check(page, 'reconciliation');

  // 2. The finding's order.
  const section = page.locator(`[data-testid=kind-${kind}]`);
  const orderLink = section.locator(`a[href="/console/orders/${a.order_no}"]`).first();
  await Promise.all([page.waitForURL(new RegExp(`/console/orders/${a.order_no}`)), orderLink.click()]);
  await check(page, 'order');

  // 3. The health check, and its fix.
  await Promise.all([page.waitForEvent('load'), page.getByTestId('run-health-check').click()]);
  await page.getByTestId('overall').waitFor();
  assert.notEqual(await page.getByTestId('overall').getAttribute('data-result'), 'ok');
  await check(page, 'order with the health check');
  const fix = page.locator('ul[data-testid=checks] li a[data-fix]').first();
  assert.equal(await fix.count(), 1, 'a fix is offered');
  await Promise.all([page.waitForEvent('load'), fix.click()]);
  await check(page, 'fix confirmation');
  await page.fill('#reason', `e2e ${lang}: ${kind}`);
  await Promise.all([page.waitForEvent('load'), page.getByTestId('confirm').click()]);
  // Back where it started, the check re-run, a flash saying what changed.
  assert.match(page.url(), new RegExp(`/console/orders/${a.order_no}\\?check=1`), 'the fix lands on the order with the check');
  assert.match(await page.getByTestId('flash').getAttribute('class'), /flash-ok/);
  await page.getByTestId('overall').waitFor();
  await check(page, 'order after the fix');

  // 4. Compensation from the order page: above the cap, then corrected.
  const start = page.locator('main a[href*="/compensation"]').first();
  await Promise.all([page.waitForURL(/\/compensation/), start.click()]);
  await check(page, 'compensation form');
  assert.equal(await page.inputValue('#order_no'), a.order_no, 'prefilled with the order');
  await page.fill('#amount', '999');
  await page.fill('#reason', `e2e ${lang}: sorry`);
  await Promise.all([page.waitForEvent('load'), page.getByTestId('confirm').click()]);
  assert.equal(await page.inputValue('#amount'), '999', 'the refused amount is kept');
  assert.equal(await page.inputValue('#reason'), `e2e ${lang}: sorry`, 'the reason is kept');
  const error = page.locator('.field-error').first();
  assert.match(await error.innerText(), words.capError);
  await check(page, 'refused compensation');
  await page.screenshot({ path: join(SCREENSHOTS, `compensation-refused-${lang}.png`), fullPage: true });
  await page.fill('#amount', '20');
  await Promise.all([page.waitForEvent('load'), page.getByTestId('confirm').click()]);
  assert.match(page.url(), new RegExp(`/console/orders/${a.order_no}\\?check=1`), 'compensation lands on the order with the check');
  assert.match(await page.getByTestId('flash').innerText(), words.compensated);
  await page.getByTestId('overall').waitFor();
  await check(page, 'order after compensation');

  // 5. An unknown console address is the console's own page.
  const r = await visit(page, '/console/no-such-page', 'unknown console page');
  assert.equal(r.status(), 404);
  assert.equal(await page.getByTestId('staff-name').count(), 1, 'the 404 keeps the header');
  await context.close();
}

test('a support agent works a finding from the home queue to compensation, in Chinese', async () => {
  await ensureRun();
  await walk('zh', 'locked_coupon_order_closed', {
    findingLine: /券仍锁定/,
    capError: /补偿|额度|上限/,
    compensated: /补偿券/,
  });
});

test('the home queue fits a 390 px phone; the book shows it at both widths', async () => {
  await ensureRun();
  mkdirSync(join(ROOT, 'docs', 'src', 'screenshots'), { recursive: true });
  copyFileSync(join(SCREENSHOTS, 'home-queue-zh.png'), join(ROOT, 'docs', 'src', 'screenshots', 'console-home.png'));
  const context = await browser.newContext({
    viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, locale: 'zh-CN',
  });
  const page = await context.newPage();
  await page.goto(`${server.base}/login`);
  await page.fill('#login-name', SUPPORT.name);
  await page.fill('#login-password', SUPPORT.password);
  await Promise.all([page.waitForURL(/\/console$/), page.click('button.primary')]);
  await check(page, 'home on a phone');
  for (const path of ['/console/audit', '/console/queue/at-risk', `/console/orders/${anomaly.coupon_order_mismatch.order_no}?check=1`]) {
    const r = await page.goto(`${server.base}${path}`);
    assert.ok(r.status() < 500, path);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 390, `${path} is ${width} px wide on a 390 px phone`);
  }
  await page.goto(`${server.base}/console`);
  await page.screenshot({ path: join(ROOT, 'docs', 'src', 'screenshots', 'console-home-phone.png'), fullPage: true });
  await context.close();
});

test('the same day in English, on another finding', async () => {
  await ensureRun();
  await walk('en', 'coupon_order_mismatch', {
    findingLine: /[A-Za-z]/,
    capError: /limit|cap|at most/i,
    compensated: /compensation/i,
  });
});
