// Several coupons on one order and budgets in a real browser.
//
// 1. Support: an order of three lines over two shops with a platform
//    coupon and two shop coupons, paid. The order page lists the three
//    coupons by code with what each takes off and its lock state, each
//    line's shares by code, never a cpn_ id; it fits 1366 px and a 390 px
//    phone.
// 2. An operator: the create form's budget and "cannot be combined" box; a
//    mistyped budget comes back with the input kept and the message at the
//    field; the created template's page says the rule and, after two
//    orders use it all, the budget used (100%), as do its report and the
//    home page's warning.
// 3. Support, on a 390 px phone: "try a cart" with two lines typed in the
//    lines box; the answer names the best combination by code, with each
//    line's shares; a mistyped row comes back at the lines box, as typed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  PHONE,
  SCREENSHOTS,
  WIDE,
  addStaff,
  apiClient,
  binaryPath,
  checkPage,
  expectOk,
  launchBrowser,
  runCli,
  signIn as signInAs,
  startServer,
  submit,
} from './harness.mjs';

const SUPPORT = { name: 'xiaozhou', password: 'e2e-support-password-stack' };
const OPERATOR = { name: 'laozhao', password: 'e2e-operator-password-stack' };

let server;
let browser;

before(async () => {
  const help = await runCli(['--help'], process.env);
  assert.ok(/\bstaff\b/.test(help.stdout), `${binaryPath()} is not this checkout's build: run cargo build`);
  server = await startServer({ COUPONKEEPER_JOBS: 'off' }, [], {
    beforeStart: (cli) => addStaff(cli, [[SUPPORT, 'support'], [OPERATOR, 'operator']]),
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function api(method, path, body, status) {
  const r = await apiClient(server.base)(method, path, body);
  if (status !== undefined) assert.equal(r.status, status, `${method} ${path}: ${JSON.stringify(r.body)}`);
  return r.body;
}

const UNREADABLE = [
  /\b(cpn|tpl|cmp)_[0-9a-z]{6,}/,
  /\b(pending_payment|final_paid|stackable|budget_exhausted|coupons_not_combinable)\b/,
  /\b(checkout_lock|release_coupon)\b/,
  /\b(staff|job|demo):[a-z]/,
];

function check(page, where) {
  return checkPage(page, where, UNREADABLE, { chinese: true });
}

async function signIn(who, options = {}) {
  return signInAs(browser, server.base, who, { viewport: WIDE, ...options });
}

/** A template of `body` and one coupon of it for `user`. */
async function couponOf(user, body) {
  const tpl = await api('POST', '/templates', {
    kind: 'fixed', valid_seconds: 10 * 86400, total_stock: 100, categories: [], ...body,
  }, 201);
  return api('POST', `/users/${user}/coupons`, { template_id: tpl.id }, 201);
}

test('support reads an order with a platform coupon and two shop coupons: each by code, its share and its state', async () => {
  const platform = await couponOf('stack-u1', { name: '平台满300减30', value_cents: 3000, min_order_cents: 30000 });
  const shopA = await couponOf('stack-u1', { name: 'A店满150减20', value_cents: 2000, min_order_cents: 15000, shop_id: 'A' });
  const shopB = await couponOf('stack-u1', { name: 'B店满100减10', value_cents: 1000, min_order_cents: 10000, shop_id: 'B' });
  const order = await api('POST', '/orders', {
    order_no: 'STACK-0001', user_id: 'stack-u1', kind: 'normal',
    coupon_ids: [shopA.id, platform.id, shopB.id],
    lines: [
      { line_id: 'a', sku: null, category: 'beauty', shop_id: 'A', quantity: 2, unit_price_cents: 10000 },
      { line_id: 'b', sku: null, category: 'beauty', shop_id: 'B', quantity: 1, unit_price_cents: 15000 },
      { line_id: 'c', sku: null, category: 'food', shop_id: 'B', quantity: 1, unit_price_cents: 5000 },
    ],
  }, 201);
  assert.equal(order.coupon_discount_cents, 6000, JSON.stringify(order));
  assert.equal(order.coupon_id, platform.id, 'the order row names the platform coupon');
  await api('POST', '/orders/STACK-0001/pay', {}, 200);

  const { context, page } = await signIn(SUPPORT);
  await page.goto(`${server.base}/console/orders/STACK-0001`);
  await check(page, 'order with three coupons');
  assert.equal(await page.locator('h2#order-coupons').innerText(), '本单用券');
  const rows = page.locator('[data-testid=order-coupons] [data-testid=order-coupon]');
  assert.equal(await rows.count(), 3, 'three coupons');
  const want = [[platform.code, '¥30.00'], [shopA.code, '¥20.00'], [shopB.code, '¥10.00']];
  for (const [i, [code, money]] of want.entries()) {
    const text = await rows.nth(i).innerText();
    assert.ok(text.includes(code), `row ${i} names ${code}: ${text}`);
    assert.equal(await rows.nth(i).getByTestId('order-coupon-discount').innerText(), money);
    assert.equal(await rows.nth(i).getByTestId('order-coupon-lock').innerText(), '已使用');
  }
  // Line a carries shop A's 20.00 and the platform's 14.60, each by code.
  const lineA = page.locator('[data-testid=order-lines] [data-testid=order-line]').first();
  const aText = await lineA.innerText();
  assert.match(aText, new RegExp(`${shopA.code}\\s*¥20\\.00`), aText);
  assert.match(aText, new RegExp(`${platform.code}\\s*¥14\\.60`), aText);
  assert.equal((await lineA.getByTestId('line-payable').innerText()).trim(), '¥165.40');
  await page.locator('#order-coupons').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SCREENSHOTS, 'order-coupons.png'), fullPage: true });

  const phone = await signIn(SUPPORT, { viewport: PHONE, isMobile: true, hasTouch: true });
  await phone.page.goto(`${server.base}/console/orders/STACK-0001`);
  const width = await phone.page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= PHONE.width, `the order page is ${width} px wide on a ${PHONE.width} px phone`);
  await check(phone.page, 'order with three coupons on a phone');
  await phone.context.close();
  await context.close();
});

test('an operator sets a budget and a lone coupon on the form, and sees the budget used up', async () => {
  const { context, page } = await signIn(OPERATOR);
  await page.goto(`${server.base}/console/templates/new`);
  await page.fill('#name', '预算满300减50');
  await page.selectOption('#kind', 'fixed');
  await page.fill('#value', '50');
  await page.fill('#min_order', '300');
  await page.fill('#valid_days', '7');
  await page.fill('#total_stock', '100');
  await page.check('#alone');
  await page.fill('#budget', '一百');
  await submit(page, 'preview');
  const preview = await page.getByTestId('template-preview').innerText();
  assert.match(preview, /不可与其他券叠加/, `the preview says it goes alone: ${preview}`);
  await submit(page, 'create');
  assert.match(page.url(), /\/console\/templates\/new$/, 'the refused form stays');
  assert.equal(await page.inputValue('#budget'), '一百', 'the refused budget is kept');
  assert.ok(await page.isChecked('#alone'), 'the box stays ticked');
  const error = page.locator('[data-field-error=budget]');
  assert.equal(await error.count(), 1, 'a message at the budget field');
  assert.equal(await page.getAttribute('#budget', 'aria-invalid'), 'true');
  await check(page, 'refused budget');

  await page.fill('#budget', '100');
  await submit(page, 'create');
  assert.doesNotMatch(page.url(), /\/new/, 'lands on the template page');
  await expectOk(page, 'create template with a budget');
  const templateUrl = page.url().split('?')[0];
  const id = decodeURIComponent(new URL(templateUrl).pathname.split('/').pop());
  assert.match(await page.getByTestId('template-budget').innerText(), /¥100\.00，已用 ¥0\.00（0%）/);
  assert.match(await page.getByTestId('template-rule').innerText(), /不可与其他券叠加/);

  // Two orders of ¥50 use it all; a third is refused.
  for (const n of [1, 2, 3]) {
    const c = await api('POST', `/users/budget-u${n}/coupons`, { template_id: id }, 201);
    const r = await apiClient(server.base)('POST', '/orders', {
      order_no: `BUDGET-000${n}`, user_id: `budget-u${n}`, kind: 'normal', category: 'phones',
      total_cents: 40000, coupon_id: c.id,
    });
    assert.equal(r.status, n < 3 ? 201 : 409, JSON.stringify(r.body));
    if (n === 3) assert.equal(r.body.error.code, 'budget_exhausted');
  }
  await page.goto(templateUrl);
  assert.match(await page.getByTestId('template-budget').innerText(), /¥100\.00，已用 ¥100\.00（100%）/);
  await check(page, 'template with its budget used');
  await page.goto(`${templateUrl}/report`);
  assert.match(await page.getByTestId('report-budget').innerText(), /已用 ¥100\.00（100%）/);
  await check(page, 'report with the budget');
  await page.goto(`${server.base}/console`);
  const warning = page.getByTestId('queue-budget');
  assert.equal(await warning.count(), 1, 'the home page warns');
  assert.match(await warning.innerText(), /预算满300减50 的预算已用 ¥100\.00 \/ ¥100\.00（100%）/);
  await check(page, 'home with a budget warning');
  await context.close();
});

test('support tries a cart of lines on a phone and reads the best combination by code', async () => {
  const platform = await couponOf('stack-u3', { name: '平台满300减30', value_cents: 3000, min_order_cents: 30000 });
  const shopA = await couponOf('stack-u3', { name: 'A店满150减20', value_cents: 2000, min_order_cents: 15000, shop_id: 'A' });
  const { context, page } = await signIn(SUPPORT, { viewport: PHONE, isMobile: true, hasTouch: true });
  await page.goto(`${server.base}/console/users/stack-u3`);
  await page.fill('#cart-lines', 'A beauty 2 100\n- food 1 150.50\nA beauty two 1');
  await Promise.all([page.waitForLoadState('load'), page.getByTestId('try-cart-submit').click()]);
  assert.equal(await page.locator('[data-field-error=lines]').count(), 1, 'a message at the lines box');
  assert.match(await page.locator('[data-field-error=lines]').innerText(), /第 3 行/);
  assert.equal(await page.inputValue('#cart-lines'), 'A beauty 2 100\n- food 1 150.50\nA beauty two 1', 'the rows as typed');
  await check(page, 'try a cart: a mistyped row');

  await page.fill('#cart-lines', 'A beauty 2 100\n- food 1 150.50');
  await Promise.all([page.waitForLoadState('load'), page.getByTestId('try-cart-submit').click()]);
  const named = await page.getByTestId('try-cart-combination').innerText();
  assert.ok(named.includes(`${platform.code} + ${shopA.code}`), named);
  assert.match(named, /共减 ¥50\.00/);
  const first = page.locator('[data-testid=try-cart-answer] [data-testid=order-line]').first();
  assert.equal((await first.getByTestId('line-payable').innerText()).trim(), '¥163.66');
  await check(page, 'try a cart of lines on a phone');
  await page.screenshot({ path: join(SCREENSHOTS, 'try-cart-combination-phone.png'), fullPage: true });
  await context.close();
});
