// Carts in a real browser: an order carried as lines, a coupon's discount
// split over them to the cent, and a refund by line.
//
// 1. Support: an order of three lines (two beauty lines, one food line)
//    with a 满300减50 beauty coupon, paid, one lipstick of two refunded
//    through the API. The order page lists the three lines, each coupon
//    share beside the coupon's code (never its cpn_ id), what is payable
//    and what was refunded, and the refund with its money and what it did
//    to the coupon (kept for the units not refunded); its timeline says the
//    partial refund in words. The page fits 1366 px and a 390 px phone (its
//    wide tables scroll inside their .table-wrap, as elsewhere).
// 2. An operator: the create form's "lines it covers" fieldset. Spaces
//    separate SKUs (the hint says so); a shop, an excluded SKU and the
//    clawback rule are said in words by the preview; a SKU the service
//    refuses (too long) comes back with the input kept and the message at
//    the SKUs field; the created template's rule names the shop and the
//    excluded SKU.
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

const SUPPORT = { name: 'xiaolin', password: 'e2e-support-password-cart' };
const OPERATOR = { name: 'laoqian', password: 'e2e-operator-password-cart' };

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

/** Calls the API; asserts the status it should answer. */
async function api(method, path, body, status) {
  const r = await apiClient(server.base)(method, path, body);
  if (status !== undefined) assert.equal(r.status, status, `${method} ${path}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Stored words and raw ids a person should never have to read. */
const UNREADABLE = [
  /\b(cpn|tpl|cmp)_[0-9a-z]{6,}/,
  /\b(pending_payment|final_paid|partially_refunded|proportional|clawback)\b/,
  /\b(partial_refund|release_coupon|mark_coupon_used|checkout_lock)\b/,
  /\b(staff|job|demo):[a-z]/,
];

function check(page, where) {
  return checkPage(page, where, UNREADABLE, { chinese: true });
}

async function signIn(who, options = {}) {
  return signInAs(browser, server.base, who, { viewport: WIDE, ...options });
}

/** The texts of `testid` cells in a table row. */
async function cell(row, testid) {
  const c = row.getByTestId(testid);
  return (await c.count()) === 0 ? '' : (await c.innerText()).trim();
}

test('support reads an order by line: each share by coupon code, what is payable, one unit refunded', async () => {
  // 满300减50 on beauty, refunded proportionally.
  const tpl = await api('POST', '/templates', {
    name: '美妆满300减50', kind: 'fixed', value_cents: 5000, min_order_cents: 30000, valid_seconds: 10 * 86400,
    total_stock: 100, categories: ['beauty'], partial_refund_rule: 'proportional',
  }, 201);
  const coupon = await api('POST', '/users/cart-u1/coupons', { template_id: tpl.id }, 201);
  assert.match(coupon.id, /^cpn_/);
  assert.ok(coupon.code && coupon.code !== coupon.id, `the coupon has a code of its own: ${JSON.stringify(coupon)}`);

  const order = await api('POST', '/orders', {
    order_no: 'CART-0001', user_id: 'cart-u1', kind: 'normal', coupon_id: coupon.id,
    lines: [
      { line_id: 'a', sku: 'LIP', category: 'beauty', shop_id: null, quantity: 2, unit_price_cents: 10000 },
      { line_id: 'b', sku: 'EYE', category: 'beauty', shop_id: null, quantity: 1, unit_price_cents: 15000 },
      { line_id: 'c', sku: 'TEA', category: 'food', shop_id: null, quantity: 1, unit_price_cents: 8000 },
    ],
  }, 201);
  assert.equal(order.coupon_discount_cents, 5000);
  const byId = Object.fromEntries(order.lines.map((l) => [l.line_id, l]));
  assert.equal(byId.a.payable_cents, 17143, JSON.stringify(order.lines));
  assert.equal(byId.b.payable_cents, 12857, JSON.stringify(order.lines));
  assert.equal(byId.c.payable_cents, 8000, JSON.stringify(order.lines));

  await api('POST', '/orders/CART-0001/pay', {}, 200);
  const refund = await api('POST', '/orders/CART-0001/refunds', {
    refund_id: 'r1', lines: [{ line_id: 'a', quantity: 1 }], reason: '退货',
  }, 201);
  assert.equal(refund.refund_cents, 8571, JSON.stringify(refund));
  assert.equal(refund.coupons[0].outcome, 'kept', JSON.stringify(refund));

  const { context, page } = await signIn(SUPPORT);
  await page.goto(`${server.base}/console/orders/CART-0001`);
  await check(page, 'order with lines');

  // The section and its three lines.
  assert.equal(await page.locator('h2#order-lines').innerText(), '商品明细');
  const rows = page.locator('[data-testid=order-lines] [data-testid=order-line]');
  assert.equal(await rows.count(), 3, 'three lines');
  const lineA = rows.filter({ has: page.locator('td:first-child', { hasText: /^a$/ }) });
  assert.equal(await lineA.count(), 1, 'line a is listed');
  const aText = await lineA.innerText();
  assert.match(aText, new RegExp(`${coupon.code}\\s*¥28\\.57`), `line a shows the coupon's code and its share: ${aText}`);
  assert.equal(await cell(lineA, 'line-payable'), '¥171.43');
  assert.match(await cell(lineA, 'line-refunded'), /已退 1 件/);
  assert.match(await cell(lineA, 'line-refunded'), /¥85\.71/);
  const lineC = rows.filter({ has: page.locator('td:first-child', { hasText: /^c$/ }) });
  assert.equal(await cell(lineC, 'line-payable'), '¥80.00', 'the food line gets no share');
  assert.doesNotMatch(await lineC.innerText(), new RegExp(coupon.code), 'the food line names no coupon');
  assert.equal(await lineC.getByTestId('line-refunded').count(), 0, 'nothing refunded on line c');

  // The refund.
  assert.equal(await page.locator('h2#order-refunds').innerText(), '退款记录');
  const refunds = page.locator('[data-testid=refunds] [data-testid=refund]');
  assert.equal(await refunds.count(), 1, 'one refund');
  assert.equal(await cell(refunds.first(), 'refund-amount'), '¥85.71');
  const rText = await refunds.first().innerText();
  assert.match(rText, /券仍用于未退商品/, `the refund says the coupon was kept: ${rText}`);
  assert.match(rText, new RegExp(coupon.code), 'the coupon by its code');

  // The coupon is named by code, its id is nowhere to read.
  const shown = await page.evaluate(() => {
    const clone = document.body.cloneNode(true);
    for (const d of clone.querySelectorAll('details.ids')) d.remove();
    return clone.innerText;
  });
  assert.ok(!shown.includes(coupon.id), `the page shows the coupon's id ${coupon.id}`);
  for (const table of ['order-lines', 'refunds']) {
    const text = await page.getByTestId(table).innerText();
    assert.ok(!text.includes(coupon.id), `the ${table} table shows the coupon's id`);
  }
  await page.locator('#order-lines').scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SCREENSHOTS, 'order-lines.png'), fullPage: true });

  // In English, the same words.
  const en = await signIn(SUPPORT, { locale: 'en-US', extraHTTPHeaders: { 'Accept-Language': 'en' } });
  await en.page.goto(`${server.base}/console/orders/CART-0001`);
  assert.equal(await en.page.locator('h2#order-lines').innerText(), 'Lines');
  assert.equal(await en.page.locator('h2#order-refunds').innerText(), 'Refunds');
  assert.match(await en.page.getByTestId('refund').first().innerText(), /kept for the units not refunded/);
  await checkPage(en.page, 'order with lines in English', UNREADABLE);
  await en.context.close();

  // A 390 px phone: nothing scrolls sideways.
  const phone = await signIn(SUPPORT, { viewport: PHONE, isMobile: true, hasTouch: true });
  await phone.page.goto(`${server.base}/console/orders/CART-0001`);
  const width = await phone.page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= PHONE.width, `the order page is ${width} px wide on a ${PHONE.width} px phone`);
  await check(phone.page, 'order with lines on a phone');
  await phone.page.screenshot({ path: join(SCREENSHOTS, 'order-lines-phone.png'), fullPage: true });
  await phone.context.close();
  await context.close();
});

test('an operator makes a shop coupon that excludes a SKU and claws back, previewed in words', async () => {
  const { context, page } = await signIn(OPERATOR);
  await page.goto(`${server.base}/console/templates/new`);
  await check(page, 'new template');
  const fieldset = page.locator('fieldset', { has: page.locator('#shop_id') });
  for (const sel of ['input[name=shop_id]', 'input[name=skus]', 'input[name=exclude_skus]', 'select[name=partial_refund_rule]']) {
    assert.equal(await fieldset.locator(sel).count(), 1, `${sel} is in the fieldset`);
  }
  const options = await page.$$eval('select[name=partial_refund_rule] option', (os) => os.map((o) => o.value));
  assert.deepEqual(options.sort(), ['clawback', 'proportional']);

  await page.fill('#name', '店铺立减10元');
  await page.selectOption('#kind', 'fixed');
  await page.fill('#value', '10');
  await page.fill('#valid_days', '7');
  await page.fill('#total_stock', '100');
  await page.fill('#shop_id', 'shop-a');
  // Spaces separate SKUs, as the hint says.
  await page.fill('#skus', 'a b');
  await page.fill('#exclude_skus', 'X');
  await page.selectOption('#partial_refund_rule', 'clawback');
  await submit(page, 'preview');
  let preview = await page.getByTestId('template-preview').innerText();
  assert.match(preview, /仅限店铺 shop-a/, `the preview names the shop: ${preview}`);
  assert.match(preview, /仅限 SKU a, b/, `spaces separate SKUs: ${preview}`);
  assert.match(preview, /不含 SKU X/, `the preview names the excluded SKU: ${preview}`);
  assert.match(preview, /部分退款后不满门槛时扣回优惠/, `the preview says the clawback rule: ${preview}`);
  assert.equal(await page.inputValue('#shop_id'), 'shop-a', 'the preview keeps the input');
  assert.equal(await page.inputValue('#partial_refund_rule'), 'clawback', 'the preview keeps the choice');
  await check(page, 'template preview');

  // A SKU of 129 characters: refused, the input kept, the message at the field.
  const tooLong = 'S'.repeat(129);
  await page.fill('#skus', tooLong);
  await submit(page, 'create');
  assert.match(page.url(), /\/console\/templates\/new$/, 'the refused form stays');
  assert.equal(await page.inputValue('#skus'), tooLong, 'the refused SKUs are kept');
  assert.equal(await page.inputValue('#shop_id'), 'shop-a', 'the other fields are kept');
  assert.equal(await page.inputValue('#exclude_skus'), 'X');
  assert.equal(await page.inputValue('#partial_refund_rule'), 'clawback');
  const error = page.locator('[data-field-error=skus]');
  assert.equal(await error.count(), 1, 'a message at the SKUs field');
  assert.match(await error.innerText(), /SKU/);
  assert.equal(await page.getAttribute('#skus', 'aria-invalid'), 'true');
  assert.equal(await page.getAttribute('#skus', 'aria-describedby'), await error.getAttribute('id'));
  await check(page, 'refused SKU');
  await page.screenshot({ path: join(SCREENSHOTS, 'template-lines-refused.png'), fullPage: true });

  // Corrected: no SKU list, only the exclusion.
  await page.fill('#skus', '');
  await submit(page, 'preview');
  preview = await page.getByTestId('template-preview').innerText();
  assert.doesNotMatch(preview, /仅限 SKU/, `no SKU list any more: ${preview}`);
  assert.match(preview, /不含 SKU X/, preview);
  await submit(page, 'create');
  assert.match(page.url(), /\/console\/templates\/[^/?]+/, 'lands on the template page');
  assert.doesNotMatch(page.url(), /\/new/, 'lands on the template page');
  await expectOk(page, 'create template');
  const rule = await page.getByTestId('template-rule').innerText();
  assert.match(rule, /仅限店铺 shop-a/, `the rule names the shop: ${rule}`);
  assert.match(rule, /不含 SKU X/, `the rule names the excluded SKU: ${rule}`);
  assert.match(rule, /部分退款后不满门槛时扣回优惠/, `the rule says the clawback rule: ${rule}`);
  await check(page, 'template page');
  const templateUrl = page.url().split('?')[0];

  // Through the API, the same terms.
  const id = decodeURIComponent(new URL(templateUrl).pathname.split('/').pop());
  const t = await api('GET', `/templates/${id}`, undefined, 200);
  assert.equal(t.shop_id, 'shop-a');
  assert.deepEqual(t.exclude_skus, ['X']);
  assert.deepEqual(t.skus, []);
  assert.equal(t.partial_refund_rule, 'clawback');

  // The form and the template page fit a phone.
  const phone = await context.newPage();
  await phone.setViewportSize(PHONE);
  for (const url of [`${server.base}/console/templates/new`, templateUrl]) {
    await phone.goto(url);
    await check(phone, `phone ${url}`);
  }
  await context.close();
});
