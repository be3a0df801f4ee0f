// An operator sets up a promotion from the browser alone, and support works
// with what was set up:
//
// 1. The operator creates a 满300减50 template (preview in words first),
//    pauses it (a claim through the API is refused with template_inactive)
//    and resumes it (the claim succeeds).
// 2. The operator creates a presale campaign (strict policy).
// 3. The operator adds a compensation preset and lowers support's daily cap:
//    a new rules version.
// 4. Support opens an order of that campaign whose coupon ends before the
//    final payment opens, runs the health check, follows its compensation
//    fix (the fitting preset already chosen) and confirms; then tries a
//    second compensation above the lowered daily cap and is refused with the
//    message at the field and the input kept.
// 5. The ledger's CSV (operator) shows the compensation with its preset and
//    the rules version in force.
//
// Every page on the way fits 1366 px (and the operator pages 390 px), shows
// no raw id or stored word, and is Chinese.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  PHONE,
  SCREENSHOTS,
  addStaff,
  apiClient,
  WIDE,
  binaryPath,
  checkPage,
  expectOk,
  launchBrowser,
  runCli,
  signIn as signInAs,
  startServer,
  submit,
  publishScreenshots,
} from './harness.mjs';

const SUPPORT = { name: 'xiaoyu', password: 'e2e-support-password-9' };
const OPERATOR = { name: 'laozhou', password: 'e2e-operator-password-9' };

let server;
let browser;

before(async () => {
  const help = await runCli(['--help'], process.env);
  assert.ok(/\bstaff\b/.test(help.stdout), `${binaryPath()} is not this checkout's build: run cargo build`);
  server = await startServer({ COUPONKEEPER_JOBS: 'off', COUPONKEEPER_BUSINESS_TZ: 'Asia/Shanghai' }, [], {
    beforeStart: (cli) => addStaff(cli, [[SUPPORT, 'support'], [OPERATOR, 'operator']]),
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  publishScreenshots([
    ['templates.png', 'operator-templates.png'],
    ['templates-phone.png', 'operator-templates-phone.png'],
    ['campaign.png', 'operator-campaign.png'],
    ['compensation-rules.png', 'operator-compensation-rules.png'],
    ['compensation-ledger.png', 'operator-compensation-ledger.png'],
    ['compensation-over-cap.png', 'operator-compensation-over-cap.png'],
    ['orders.png', 'operator-orders.png'],
  ]);
});

function api(method, path, body) {
  return apiClient(server.base)(method, path, body);
}

/** Stored words a person should never have to read on a console page. */
const UNREADABLE = [
  /\b(cpn|tpl|cmp|cps)_[0-9a-z]{6,}/,
  /\b(pending_deposit|deposit_paid|pending_payment|final_paid|swap_or_compensate|final_payment_deduction)\b/,
  /\b(template_pause|template_resume|compensation_rules_change|issue_compensation)\b/,
  /\b(staff|job|demo):[a-z]/,
];

function check(page, where) {
  return checkPage(page, where, UNREADABLE);
}

async function signIn(who, viewport = WIDE) {
  return signInAs(browser, server.base, who, { viewport });
}

/** `YYYY-MM-DDTHH:MM` in Asia/Shanghai (UTC+8, no daylight saving). */
function shanghaiLocal(ms) {
  return new Date(ms + 8 * 3600_000).toISOString().slice(0, 16);
}

const state = {};

test('an operator sets up a template, a campaign and the compensation rules from the console', async () => {
  const { context, page } = await signIn(OPERATOR);

  // 1. The template: preview first, then create.
  await page.goto(`${server.base}/console/templates/new`);
  await check(page, 'new template');
  await page.fill('#name', '满300减50');
  await page.selectOption('#kind', 'fixed');
  await page.fill('#value', '50');
  await page.fill('#min_order', '300');
  await page.fill('#valid_days', '7');
  await page.fill('#total_stock', '1000');
  await submit(page, 'preview');
  const preview = await page.getByTestId('template-preview').innerText();
  assert.match(preview, /300/, `the preview names the threshold: ${preview}`);
  assert.match(preview, /50/, `the preview names the amount: ${preview}`);
  assert.match(preview, /7天/, `the preview names the validity: ${preview}`);
  assert.equal(await page.inputValue('#name'), '满300减50', 'the preview keeps the input');
  await submit(page, 'create');
  assert.match(page.url(), /\/console\/templates\/[^/?]+/, 'lands on the template page');
  await expectOk(page, 'create template');
  await check(page, 'template page');
  state.templateId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop());

  // Pause: claims are refused; existing pages say paused.
  await page.fill('#reason', '库存核对中');
  await submit(page, 'pause');
  await expectOk(page, 'pause');
  let claim = await api('POST', '/users/shopper-1/coupons', { template_id: state.templateId });
  assert.equal(claim.status, 409);
  assert.equal(claim.body.error.code, 'template_inactive');
  // Resume: claims work again.
  await page.fill('#reason', '核对完成');
  await submit(page, 'resume');
  claim = await api('POST', '/users/shopper-1/coupons', { template_id: state.templateId });
  assert.equal(claim.status, 201, JSON.stringify(claim.body));
  await page.reload();
  const history = await page.getByTestId('template-history').innerText();
  assert.match(history, /库存核对中/, 'the pause and its reason are in the history');
  assert.match(history, /核对完成/, 'the resume and its reason are in the history');
  await check(page, 'template page after pause and resume');

  // 2. The campaign: final payment opens in two days, strict.
  await page.goto(`${server.base}/console/campaigns/new`);
  await check(page, 'new campaign');
  await page.fill('#name', '年货节预售');
  await page.fill('#starts', shanghaiLocal(Date.now() + 2 * 86_400_000));
  await page.fill('#ends', shanghaiLocal(Date.now() + 3 * 86_400_000));
  await page.selectOption('#policy', 'strict');
  await submit(page, 'create');
  assert.match(page.url(), /\/console\/campaigns\/[^/?]+/, 'lands on the campaign page');
  assert.equal(await page.getByTestId('campaign-name').innerText(), '年货节预售');
  await check(page, 'campaign page');
  state.campaignId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop());

  // 3. The compensation rules: a preset, and a lower daily cap for support.
  await page.goto(`${server.base}/console/compensation/rules`);
  await check(page, 'compensation rules');
  const newRow = page.getByTestId('preset-row').last();
  await newRow.locator('input[id$="-reason"]').fill('预售券过期补偿');
  await newRow.locator('input[id$="-value"]').fill('20');
  await newRow.locator('input[id$="-validity"]').fill('7');
  await page.fill('#support_daily', '30');
  await page.fill('#reason', '本月补偿预算收紧');
  await submit(page, 'save-rules');
  await expectOk(page, 'save rules');
  assert.equal(await page.inputValue('#support_daily'), '30.00');
  const versions = page.getByTestId('rules-version');
  assert.equal(await versions.first().getAttribute('data-version'), '2', 'the change is version 2');
  await check(page, 'compensation rules after the change');
  await page.screenshot({ path: join(SCREENSHOTS, 'compensation-rules.png'), fullPage: true });

  // The operator pages fit a phone too.
  const phone = await context.newPage();
  await phone.setViewportSize(PHONE);
  for (const path of ['/console/templates', `/console/templates/${state.templateId}`, '/console/campaigns',
    `/console/campaigns/${state.campaignId}`, '/console/compensation/rules', '/console/orders']) {
    await phone.goto(`${server.base}${path}`);
    await check(phone, `phone ${path}`);
  }
  await phone.goto(`${server.base}/console/templates`);
  await phone.screenshot({ path: join(SCREENSHOTS, 'templates-phone.png'), fullPage: true });
  await page.goto(`${server.base}/console/templates`);
  await page.screenshot({ path: join(SCREENSHOTS, 'templates.png'), fullPage: true });
  await page.goto(`${server.base}/console/campaigns/${state.campaignId}`);
  await page.screenshot({ path: join(SCREENSHOTS, 'campaign.png'), fullPage: true });
  await context.close();
});

test('support compensates with the preset from the health check, is refused above the cap, and finance sees it', async () => {
  assert.ok(state.campaignId, 'the first test set up the campaign');
  // An order of that campaign whose coupon (20 yuan off, valid one hour)
  // ends before the final payment opens: under strict the customer loses
  // the discount, and the health check suggests compensation.
  const short = await api('POST', '/templates', {
    name: '立减20元', kind: 'fixed', value_cents: 2000, min_order_cents: 0, valid_seconds: 3600,
    total_stock: null, categories: [],
  });
  assert.equal(short.status, 201, JSON.stringify(short.body));
  const coupon = await api('POST', '/users/shopper-2/coupons', { template_id: short.body.id });
  assert.equal(coupon.status, 201);
  const order = await api('POST', '/orders', {
    order_no: 'YS-2026-0001', user_id: 'shopper-2', kind: 'presale', category: 'phones', total_cents: 39900,
    deposit_cents: 10000, coupon_id: coupon.body.id, campaign_id: state.campaignId,
  });
  assert.equal(order.status, 201, JSON.stringify(order.body));
  assert.equal((await api('POST', '/orders/YS-2026-0001/deposit-payment', {})).status, 200);

  const { context, page } = await signIn(SUPPORT);
  // Support finds it in the order list by campaign.
  await page.goto(`${server.base}/console/orders`);
  await page.selectOption('#f-campaign', state.campaignId);
  await Promise.all([page.waitForEvent('load'), page.click('form[data-testid=order-filters] button[type=submit]')]);
  await check(page, 'order list by campaign');
  const links = page.getByTestId('order-link');
  assert.equal(await links.count(), 1);
  await page.screenshot({ path: join(SCREENSHOTS, 'orders.png'), fullPage: true });
  await Promise.all([page.waitForURL(/\/console\/orders\/YS-2026-0001/), links.first().click()]);

  await submit(page, 'run-health-check');
  await check(page, 'order with the health check');
  const fix = page.locator('ul[data-testid=checks] li a[data-fix=issue_compensation]').first();
  assert.equal(await fix.count(), 1, 'compensation is suggested');
  await Promise.all([page.waitForURL(/\/compensation/), fix.click()]);
  await check(page, 'compensation form from the health check');
  const chosen = page.locator('input[data-testid=preset-option]:checked');
  assert.equal(await chosen.count(), 1, 'the fitting preset is chosen');
  assert.equal(await chosen.getAttribute('data-cents'), '2000');
  assert.equal(await page.inputValue('#order_no'), 'YS-2026-0001');
  await page.fill('#reason', '预售券在尾款前过期');
  await submit(page, 'confirm');
  await expectOk(page, 'compensate with the preset');
  assert.match(page.url(), /\/console\/orders\/YS-2026-0001/, 'lands back on the order');

  // A second one, a free 20 yuan: 40 > the daily cap of 30.
  await page.goto(`${server.base}/console/users/shopper-2/compensation?order_no=YS-2026-0001`);
  await page.check('[data-testid=preset-free]');
  await page.fill('#amount', '20');
  await page.fill('#reason', '再补一张');
  await submit(page, 'confirm');
  assert.equal(await page.inputValue('#amount'), '20', 'the refused amount is kept');
  assert.equal(await page.inputValue('#reason'), '再补一张', 'the reason is kept');
  const error = await page.locator('.field-error').first().innerText();
  assert.match(error, /10\.00/, `the message says what is left of the daily cap of 30 after 20: ${error}`);
  await check(page, 'compensation refused above the cap');
  await page.screenshot({ path: join(SCREENSHOTS, 'compensation-over-cap.png'), fullPage: true });
  await context.close();

  // 5. Finance (an operator) reads the ledger and its CSV.
  const op = await signIn(OPERATOR);
  await op.page.goto(`${server.base}/console/compensation`);
  await check(op.page, 'compensation ledger');
  assert.equal(await op.page.getByTestId('comp-row').count(), 1, 'one compensation, the refused one is not in it');
  await op.page.screenshot({ path: join(SCREENSHOTS, 'compensation-ledger.png'), fullPage: true });
  const csv = await op.page.request.get(`${server.base}/console/compensation.csv`);
  assert.equal(csv.status(), 200);
  const lines = (await csv.text()).trim().split(/\r?\n/);
  assert.equal(lines.length, 2, lines.join('\n'));
  const header = lines[0].split(',');
  const row = lines[1].split(',');
  const col = (name) => row[header.findIndex((h) => h.includes(name))];
  assert.match(lines[1], /预售券过期补偿/, 'the preset by its reason');
  assert.equal(col('rules_version'), '2', `the rules version in force: ${lines.join('\n')}`);
  assert.match(lines[1], /YS-2026-0001/);
  assert.match(lines[1], /20\.00/);
  await op.context.close();
});
