// The self-check page tells the truth before the check,
// in a real browser on a 390 px phone, in Chinese and in English:
// 1. a checkout whose lock lapsed says it can no longer be paid and shows
//    no amount to pay and no coupon to come off;
// 2. a presale order closed after its deposit says what became of the
//    deposit (the shop's rules; no refund is invented) and of its coupon;
//    a live presale order shows its final-payment window in local time;
// 3. percent coupons read "9折" / "10% off", and every coupon card, the
//    locked one too, shows its terms, threshold, categories and end.
// The data is made through the API on a fresh server with a 2-second
// checkout lock and jobs off, so the lapsed order stays unswept.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, SCREENSHOTS, launchBrowser, startServer } from './harness.mjs';

const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };
const SECRET = 'e2e self-check secret, at least 32 bytes long';
const USER = 'e2e-truth';
const LOCK_SECONDS = 2;

let server;
let browser;
/** The self-check URL the API returned. */
let link;
/** Coupon codes: { lapsed, plain, closed }. */
const codes = {};

async function api(method, path, body) {
  const res = await fetch(`${server.base}/api/v1${path}`, {
    method,
    headers: { authorization: 'Bearer e2e-token', 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** A template from `overrides` over a 满300减50 one, claimed by USER; the coupon. */
async function couponFrom(overrides) {
  const t = await api('POST', '/templates', {
    name: '满300减50',
    kind: 'fixed',
    value_cents: 5000,
    min_order_cents: 30000,
    valid_seconds: 10 * 24 * 3600,
    total_stock: 100,
    categories: [],
    ...overrides,
  });
  return api('POST', `/users/${USER}/coupons`, { template_id: t.id });
}

async function presaleWithDeposit(orderNo, coupon) {
  const soon = (s) => new Date(Date.now() + s * 1000).toISOString();
  const campaign = await api('POST', '/presale-campaigns', {
    name: '双11预售',
    final_payment_starts_at: soon(3600),
    final_payment_ends_at: soon(7200),
    policy: 'lock',
  });
  await api('POST', '/orders', {
    order_no: orderNo,
    user_id: USER,
    kind: 'presale',
    category: 'phones',
    total_cents: 39900,
    deposit_cents: 10000,
    coupon_id: coupon.id,
    campaign_id: campaign.id,
  });
  await api('POST', `/orders/${orderNo}/deposit-payment`, {});
}

before(async () => {
  server = await startServer({
    COUPONKEEPER_JOBS: 'off',
    COUPONKEEPER_SELF_CHECK_SECRET: SECRET,
    COUPONKEEPER_CHECKOUT_LOCK_SECONDS: String(LOCK_SECONDS),
    COUPONKEEPER_BUSINESS_TZ: '+08:00',
  });
  // A 9折 coupon capped at ¥30 on phones and shoes, locked to a checkout
  // that will lapse; an 8.5折 one with no threshold, free.
  const percent = await couponFrom({
    name: '9折券',
    kind: 'percent',
    value_cents: undefined,
    percent_off: 10,
    max_discount_cents: 3000,
    categories: ['phones', 'shoes'],
  });
  const plain = await couponFrom({ name: '85折券', kind: 'percent', value_cents: undefined, percent_off: 15, min_order_cents: 0 });
  const order = await api('POST', '/orders', {
    order_no: 'N-LAPSE',
    user_id: USER,
    kind: 'normal',
    category: 'phones',
    total_cents: 39900,
    coupon_id: percent.id,
  });
  // A presale order closed after its deposit, and a live one.
  const closed = await couponFrom({});
  await presaleWithDeposit('P-CLOSED', closed);
  await api('POST', '/orders/P-CLOSED/cancel', {});
  await presaleWithDeposit('P-LIVE', await couponFrom({}));
  Object.assign(codes, { lapsed: percent.code, plain: plain.code, closed: closed.code });

  const link_ = await api('POST', `/users/${USER}/self-check-link`, {});
  link = link_.url;
  // Wait the checkout lock out (no sweep runs: jobs are off).
  const lapse = Date.parse(order.checkout_lock_expires_at);
  await new Promise((r) => setTimeout(r, Math.max(0, lapse - Date.now()) + 500));
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function open(locale) {
  const context = await browser.newContext({ ...PHONE, locale });
  const page = await context.newPage();
  const res = await page.goto(link);
  assert.equal(res.status(), 200);
  return { context, page };
}

const order = (page, no) => page.locator(`[data-testid="sc-order"][data-order-no="${no}"]`);
const coupon = (page, code) => page.locator(`[data-testid="sc-coupon"][data-code="${code}"]`);

async function assertFits(page) {
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the page scrolls sideways: scrollWidth ${width}`);
}

/** A card that cannot be paid: no amount to pay, no coupon to come off. */
async function assertNothingToPay(card, words) {
  assert.equal(await card.getAttribute('data-payable'), 'no');
  assert.equal(await card.locator('[data-testid="sc-due"]').count(), 0, 'no amount to pay');
  const text = await card.innerText();
  for (const w of words) assert.ok(!text.includes(w), `"${w}" on a card that cannot be paid: ${text}`);
}

test('in Chinese, a lapsed order, a closed presale order and percent coupons say what is true', async () => {
  const { context, page } = await open('zh-CN');
  await assertFits(page);

  const lapsed = order(page, 'N-LAPSE');
  await assertNothingToPay(lapsed, ['应付金额', '优惠券抵扣', '付款时抵扣']);
  const lapsedText = await lapsed.innerText();
  assert.match(lapsedText, /付款时限已于 .+ \(UTC\+8\) 结束，这笔订单已无法付款/);
  assert.ok(lapsedText.includes(`优惠券 ${codes.lapsed} 不会再为这笔订单抵扣`), lapsedText);

  const closed = order(page, 'P-CLOSED');
  await assertNothingToPay(closed, ['待付尾款', '优惠券抵扣', '已退款']);
  const closedText = await closed.innerText();
  assert.ok(closedText.includes('这笔预售订单在付尾款前已关闭，不能再付款。'), closedText);
  assert.ok(closedText.includes('您已付的定金 ¥100.00 按商城的定金规则处理'), closedText);
  assert.ok(closedText.includes(`优惠券 ${codes.closed} 已退回您的账户`), closedText);

  const live = order(page, 'P-LIVE');
  assert.equal(await live.getAttribute('data-payable'), 'yes');
  assert.match(
    await live.getByTestId('sc-window').innerText(),
    /^尾款支付时间：\d{4}-\d\d-\d\d \d\d:\d\d \(UTC\+8\) 至 \d{4}-\d\d-\d\d \d\d:\d\d \(UTC\+8\)$/,
  );

  // The locked percent coupon still shows what it is worth.
  const locked = coupon(page, codes.lapsed);
  assert.equal(await locked.getByTestId('sc-coupon-terms').innerText(), '满 ¥300.00 可用，9折，最高减 ¥30.00');
  assert.equal(await locked.getByTestId('sc-coupon-threshold').innerText(), '满 ¥300.00 可用');
  assert.equal(await locked.getByTestId('sc-coupon-categories').innerText(), 'phones、shoes');
  assert.match(await locked.getByTestId('sc-coupon-ends').innerText(), /^\d{4}-\d\d-\d\d \d\d:\d\d \(UTC\+8\)$/);
  assert.match(await locked.innerText(), /这笔订单已无法付款，不会再抵扣/);
  const plain = coupon(page, codes.plain);
  assert.equal(await plain.getByTestId('sc-coupon-terms').innerText(), '8.5折');
  assert.equal(await plain.getByTestId('sc-coupon-threshold').innerText(), '无门槛');
  assert.equal(await plain.getByTestId('sc-coupon-categories').innerText(), '全部品类');
  assert.ok(!(await page.content()).includes('% 折扣'));

  await lapsed.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SCREENSHOTS, 'self-check-truth-zh.png'), fullPage: true });
  await context.close();

  // The book shows the page before the check at both widths.
  mkdirSync(join(ROOT, 'docs', 'src', 'screenshots'), { recursive: true });
  copyFileSync(join(SCREENSHOTS, 'self-check-truth-zh.png'), join(ROOT, 'docs', 'src', 'screenshots', 'self-check-phone.png'));
  const wide = await browser.newContext({ viewport: { width: 1366, height: 900 }, locale: 'zh-CN' });
  const wpage = await wide.newPage();
  await wpage.goto(link);
  const width = await wpage.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 1366, `the page scrolls sideways at 1366 px: ${width}`);
  await wpage.screenshot({ path: join(ROOT, 'docs', 'src', 'screenshots', 'self-check-wide.png'), fullPage: true });
  await wide.close();
});

test('in English, the same orders and coupons say the same in English words', async () => {
  const { context, page } = await open('en-US');
  await assertFits(page);

  const lapsed = order(page, 'N-LAPSE');
  await assertNothingToPay(lapsed, ['Amount to pay', 'Coupon discount', 'comes off']);
  assert.match(await lapsed.innerText(), /The time to pay ran out at .+ \(UTC\+8\): this order can no longer be paid/);

  const closed = order(page, 'P-CLOSED');
  await assertNothingToPay(closed, ['Final payment due', 'Coupon discount', 'refunded']);
  const closedText = await closed.innerText();
  assert.ok(closedText.includes('This presale order was closed before the final payment and can no longer be paid.'), closedText);
  assert.ok(closedText.includes("The deposit you paid (¥100.00) is handled under the shop's deposit rules"), closedText);
  assert.ok(closedText.includes(`Coupon ${codes.closed} is back in your account`), closedText);

  assert.match(
    await order(page, 'P-LIVE').getByTestId('sc-window').innerText(),
    /^Final payment: .+ \(UTC\+8\) to .+ \(UTC\+8\)$/,
  );

  const locked = coupon(page, codes.lapsed);
  assert.equal(await locked.getByTestId('sc-coupon-terms').innerText(), 'orders from ¥300.00: 10% off, at most ¥30.00');
  assert.equal(await locked.getByTestId('sc-coupon-categories').innerText(), 'phones, shoes');
  const plain = coupon(page, codes.plain);
  assert.equal(await plain.getByTestId('sc-coupon-terms').innerText(), '15% off');
  assert.equal(await plain.getByTestId('sc-coupon-threshold').innerText(), 'no minimum');
  assert.equal(await plain.getByTestId('sc-coupon-categories').innerText(), 'all categories');
  await page.screenshot({ path: join(SCREENSHOTS, 'self-check-truth-en.png'), fullPage: true });
  await context.close();
});
