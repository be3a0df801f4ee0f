// "Try a cart" on the console's user page in a real browser:
// support types a cart and reads, in Chinese and in English, which of the
// customer's coupons fit, how much each takes off, the best one, and why
// the others do not; a presale cart warns about a coupon that dies before
// the final payment; a mistyped total comes back with the message at the
// field; the section fits a 390 px phone and works without JavaScript.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SCREENSHOTS, binaryPath, launchBrowser, runCli, startServer } from './harness.mjs';

const SUPPORT = { name: 'xiaochen', password: 'e2e-support-password-7' };
const TOKEN = 'e2e-token';

let server;
let browser;
const codes = {};
let campaignId;

async function api(method, path, body) {
  const r = await fetch(`${server.base}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await r.json();
  assert.ok(r.ok, `${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
  return json;
}

async function coupon(user, template) {
  const t = await api('POST', '/templates', {
    kind: 'fixed', valid_seconds: 10 * 86400, total_stock: 10, categories: [], min_order_cents: 0, ...template,
  });
  const c = await api('POST', `/users/${user}/coupons`, { template_id: t.id });
  return c.code;
}

before(async () => {
  const help = await runCli(['--help'], process.env);
  assert.ok(/\bstaff\b/.test(help.stdout), `${binaryPath()} is not this checkout's build: run cargo build`);
  server = await startServer({ COUPONKEEPER_JOBS: 'off' }, [], {
    async beforeStart(cli) {
      const r = await cli(['staff', 'add', SUPPORT.name, '--role', 'support', '--password-env', 'E2E_STAFF_PW'], {
        E2E_STAFF_PW: SUPPORT.password,
      });
      assert.equal(r.code, 0, `staff add: ${r.stderr}`);
    },
  });
  codes.threshold = await coupon('shopper-1', { name: '满300减50', value_cents: 5000, min_order_cents: 30000 });
  codes.small = await coupon('shopper-1', { name: '立减10元', value_cents: 1000 });
  codes.shoes = await coupon('shopper-1', { name: '鞋类券', value_cents: 2000, categories: ['shoes'] });
  codes.dying = await coupon('shopper-1', { name: '半小时券', value_cents: 3000, valid_seconds: 1800 });
  const start = new Date(Date.now() + 3600_000).toISOString();
  const end = new Date(Date.now() + 7200_000).toISOString();
  const cmp = await api('POST', '/presale-campaigns', {
    name: '年货节预售', final_payment_starts_at: start, final_payment_ends_at: end, policy: 'strict',
  });
  campaignId = cmp.id;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function signedIn(options = {}) {
  const context = await browser.newContext({ locale: 'zh-CN', viewport: { width: 1366, height: 900 }, ...options });
  const page = await context.newPage();
  await page.goto(`${server.base}/login`);
  await page.fill('#login-name', SUPPORT.name);
  await page.fill('#login-password', SUPPORT.password);
  await Promise.all([page.waitForURL(/\/console$/), page.click('button.primary')]);
  return { context, page };
}

async function tryCart(page, { kind = 'normal', total, category = '', campaign = '', deposit = '' }) {
  await page.goto(`${server.base}/console/users/shopper-1`);
  await page.selectOption('#cart-kind', kind);
  await page.fill('#cart-total', total);
  await page.fill('#cart-category', category);
  await page.selectOption('#cart-campaign', campaign);
  await page.fill('#cart-deposit', deposit);
  await Promise.all([page.waitForEvent('load'), page.getByTestId('try-cart-submit').click()]);
}

test('support tries a 280-yuan phone cart: the 30-yuan coupon is best, the others say why, in Chinese', async () => {
  const { context, page } = await signedIn();
  await tryCart(page, { total: '280', category: 'phones' });
  const best = await page.getByTestId('try-cart-best').innerText();
  // The 30-yuan coupon takes off more but ends soonest; both fit. The
  // largest discount comes first and is the best (no presale warning).
  assert.match(best, new RegExp(`最优：${codes.dying}`));
  const usable = await page.$$eval('[data-testid=cart-usable]', (rows) => rows.map((r) => r.innerText));
  assert.equal(usable.length, 2);
  assert.match(usable[0], new RegExp(codes.dying));
  assert.match(usable[1], new RegExp(codes.small));
  const why = await page.$$eval('[data-testid=cart-unusable]', (rows) =>
    rows.map((r) => [r.getAttribute('data-reason'), r.innerText]),
  );
  const byReason = Object.fromEntries(why);
  assert.match(byReason.threshold_not_met, /还差 20\.00 元可用/);
  assert.match(byReason.threshold_not_met, new RegExp(codes.threshold));
  assert.match(byReason.coupon_not_applicable, /仅限shoes使用/);
  // What was typed is still in the form.
  assert.equal(await page.inputValue('#cart-total'), '280');
  await page.screenshot({ path: join(SCREENSHOTS, 'try-cart.png'), fullPage: true });
  await context.close();
});

test('in English, a presale cart on a strict campaign warns about the coupon that dies first', async () => {
  const { context, page } = await signedIn({ locale: 'en-US', extraHTTPHeaders: { 'Accept-Language': 'en' } });
  await tryCart(page, { kind: 'presale', total: '399', category: 'phones', campaign: campaignId, deposit: '100' });
  assert.equal(await page.locator('#try-cart').innerText(), 'Try a cart');
  const rows = await page.$$eval('[data-testid=cart-usable]', (rs) => rs.map((r) => r.innerText));
  const dying = rows.find((r) => r.includes(codes.dying));
  assert.ok(dying, `the dying coupon is usable: ${rows}`);
  assert.match(dying, /ends before the final payment opens/);
  assert.match(await page.getByTestId('try-cart-best').innerText(), new RegExp(`^Best: ${codes.threshold}`));
  // The warned coupon is never the best.
  assert.doesNotMatch(await page.getByTestId('try-cart-best').innerText(), new RegExp(codes.dying));
  // The campaign is offered by its name and stays chosen.
  assert.equal(await page.locator('#cart-campaign option:checked').innerText(), '年货节预售');
  await context.close();
});

test('a mistyped total comes back with its message at the field, on a 390 px phone without JavaScript', async () => {
  const { context, page } = await signedIn({
    viewport: { width: 390, height: 844 },
    isMobile: true,
    hasTouch: true,
    javaScriptEnabled: false,
  });
  await page.goto(`${server.base}/console/users/shopper-1?cart=1&kind=normal&total=2%E4%B8%A4&category=phones#try-cart`);
  const error = page.locator('[data-field-error=total]');
  assert.match(await error.innerText(), /请输入大于 0 的订单金额/);
  assert.equal(await page.getAttribute('#cart-total', 'aria-invalid'), 'true');
  assert.equal(await page.inputValue('#cart-total'), '2两');
  assert.equal(await page.getByTestId('try-cart-answer').count(), 0);
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the user page is ${width} px wide`);
  await context.close();
});
