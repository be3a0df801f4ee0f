// A reminder step sent as a pop-up, in a real browser. The server's only
// reminder step is one hour before a coupon's end, by pop-up
// (COUPONKEEPER_REMINDER_CHANNELS), with no quiet hours, and its own jobs
// on: the reminder planner runs every second. A customer claims a coupon
// that ends in an hour and five seconds; once the planner made the pop-up
// pending, the shop's picker lists it, and the customer's self-check page,
// opened at 390 px without JavaScript, shows it first, fits the screen,
// and "got it" clears it from the page and from the picker.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SCREENSHOTS, apiClient, launchBrowser, publishScreenshots, startServer } from './harness.mjs';

const SECRET = 'e2e pop-up secret, at least 32 bytes long!';
const USER = 'popup-u1';

let server;
let browser;

before(async () => {
  server = await startServer({
    COUPONKEEPER_SELF_CHECK_SECRET: SECRET,
    COUPONKEEPER_REMINDER_OFFSETS: '1h',
    COUPONKEEPER_REMINDER_CHANNELS: '1h=popup',
    COUPONKEEPER_QUIET_HOURS: '',
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

/** The picker's pending pop-ups for a ¥399 phone cart. */
async function popups() {
  const body = await api('POST', `/users/${USER}/coupon-options`, { kind: 'normal', category: 'phones', total_cents: 39900 }, 200);
  return body.reminder_popups;
}

test('a pop-up step shows first on the self-check page at 390 px without JavaScript until the customer has seen it', async () => {
  const tpl = await api('POST', '/templates', {
    name: '弹窗提醒测试券', kind: 'fixed', value_cents: 1000, min_order_cents: 0, valid_seconds: 3605, total_stock: 10,
  }, 201);
  await api('POST', `/users/${USER}/coupons`, { template_id: tpl.id }, 201);

  // The step is five seconds after the claim; the planner runs every second.
  let pending = [];
  for (let i = 0; i < 60 && pending.length === 0; i += 1) {
    await new Promise((r) => setTimeout(r, 500));
    pending = await popups();
  }
  assert.equal(pending.length, 1, 'the planner made the pop-up pending within 30 s');
  assert.equal(pending[0].count, 1);
  assert.equal(pending[0].total_value_cents, 1000);

  const link = (await api('POST', `/users/${USER}/self-check-link`, {}, 200)).url;
  const context = await browser.newContext({
    viewport: { width: 390, height: 844 },
    isMobile: true,
    hasTouch: true,
    locale: 'zh-CN',
    javaScriptEnabled: false,
  });
  const page = await context.newPage();
  await page.goto(link);
  const section = page.getByTestId('sc-popups');
  assert.equal(await section.count(), 1, 'the pending pop-up is on the page');
  const first = await page.evaluate(() => document.querySelector('main > section')?.getAttribute('data-testid'));
  assert.equal(first, 'sc-popups', 'it comes first');
  assert.match(await section.innerText(), /1 张优惠券/);
  assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 390);
  await page.screenshot({ path: join(SCREENSHOTS, 'self-check-popup.png'), fullPage: false });

  await Promise.all([page.waitForEvent('load'), page.getByTestId('sc-popups-seen').click()]);
  assert.equal(await page.getByTestId('sc-popups').count(), 0, 'seen: gone from the page');
  assert.deepEqual(await popups(), [], 'and from the picker');
  await context.close();
  publishScreenshots(['self-check-popup.png']);
});
