// What support, operators and customers read is true, in a real browser
// on the demo data:
// 1. support opens the presale order whose coupon expired before its final
//    payment under the strict policy (DEMO-P-0004): the health check warns
//    and offers compensation with the lost discount already filled in; the
//    customer's self-check, on a 390 px phone, says the same in plain words;
// 2. the search box finds that order by any four characters of its number;
// 3. an operator names a category code, and the coupon pages show the name;
//    edits every term of a fresh template before its first claim and
//    duplicates it into a new one; the staff log says all of it in words;
// 4. an English page shows English status badges, no Chinese beside them.
// Every console page fits its window and shows no raw id or stored word.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  PHONE,
  ROOT,
  SCREENSHOTS,
  addStaff,
  apiClient,
  binaryPath,
  checkPage,
  expectOk,
  launchBrowser,
  runCli,
  signIn,
  startServer,
  submit,
} from './harness.mjs';

const SUPPORT = { name: 'xiaoli', password: 'e2e-support-password-9' };
const OPERATOR = { name: 'laowang', password: 'e2e-operator-password-9' };
const SECRET = 'e2e self-check secret, at least 32 bytes long';
const STRICT_ORDER = 'DEMO-P-0004';

let server;
let browser;
let api;

before(async () => {
  const help = await runCli(['--help'], process.env);
  assert.ok(/\bdemo-data\b/.test(help.stdout), `${binaryPath()} is not this checkout's build: run cargo build`);
  server = await startServer(
    { COUPONKEEPER_JOBS: 'off', COUPONKEEPER_SELF_CHECK_SECRET: SECRET },
    ['--demo-data'],
    {
      async beforeStart(cli) {
        await addStaff(cli, [[SUPPORT, 'support'], [OPERATOR, 'operator']]);
      },
    },
  );
  api = apiClient(server.base);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Stored words and ids a person should never have to read. */
const UNREADABLE = [
  /\b(cpn|tpl|cmp|cbt|wkr)_[0-9a-z]{6,}/,
  /\b(pending_deposit|deposit_paid|pending_payment|final_paid|no_discount_expired)\b/,
  /\b(staff_release|force_release|release_coupon|mark_coupon_used|issue_compensation)\b/,
  /\b(support_max_cents|template_id|value_cents)\b/,
];

function check(page, where) {
  return checkPage(page, where, UNREADABLE, { skip: ['form.filters', 'input', 'select'] });
}

function keep(name) {
  mkdirSync(join(ROOT, 'docs', 'src', 'screenshots'), { recursive: true });
  copyFileSync(join(SCREENSHOTS, name), join(ROOT, 'docs', 'src', 'screenshots', name));
}

async function shot(page, name) {
  await page.screenshot({ path: join(SCREENSHOTS, name), fullPage: true });
  keep(name);
}

test('support reads the strict-expired presale order as a warning with compensation filled in', async () => {
  const { context, page } = await signIn(browser, server.base, SUPPORT);
  await page.goto(`${server.base}/console/orders/${STRICT_ORDER}?check=1`);
  await page.getByTestId('overall').waitFor();
  await check(page, 'strict-expired order');
  assert.equal(await page.getByTestId('overall').getAttribute('data-result'), 'warning');
  const checks = await page.getByTestId('checks').innerText();
  assert.match(checks, /严格规则/, checks);
  assert.match(checks, /尾款/, checks);
  assert.match(checks, /¥|元/, checks);
  await shot(page, 'strict-expired-health.png');

  const fix = page.locator('ul[data-testid=checks] li a[data-fix]').first();
  assert.equal(await fix.count(), 1, 'compensation is offered');
  await Promise.all([page.waitForURL(/\/compensation/), fix.click()]);
  await check(page, 'compensation form');
  assert.equal(await page.inputValue('#order_no'), STRICT_ORDER);
  const amount = await page.inputValue('#amount');
  assert.match(amount, /^[1-9][0-9]*(\.[0-9]{1,2})?$/, `the lost discount is filled in: "${amount}"`);
  await context.close();
});

test("the customer's self-check says the same on a 390 px phone", async () => {
  const order = await api('GET', `/orders/${STRICT_ORDER}`);
  assert.equal(order.status, 200, JSON.stringify(order.body));
  const user = order.body.user_id;
  const link = await api('POST', `/users/${encodeURIComponent(user)}/self-check-link`, {});
  assert.equal(link.status, 200, JSON.stringify(link.body));
  const context = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true, locale: 'zh-CN' });
  const page = await context.newPage();
  await page.goto(link.body.url);
  await page.getByTestId('sc-run-check').tap();
  await page.getByTestId('sc-overall').waitFor();
  assert.notEqual(await page.getByTestId('sc-overall').getAttribute('data-result'), 'ok', 'not "all normal"');
  const card = page.locator(`[data-testid=sc-order][data-order-no="${STRICT_ORDER}"]`);
  assert.equal(await card.count(), 1, 'the order is listed');
  // The check's part for the order says it: the coupon ended before the
  // final payment opened, the discount lost, and that support can make it
  // good.
  const part = page.locator('[data-testid=sc-order-check]').filter({ hasText: STRICT_ORDER });
  assert.equal(await part.count(), 1, 'the check speaks of the order');
  assert.notEqual(await part.getAttribute('data-result'), 'ok');
  const said = await part.innerText();
  assert.match(said, /严格规则/, said);
  assert.match(said, /尾款/, said);
  assert.match(said, /客服可以为您补偿/, said);
  const html = await page.content();
  for (const internal of ['cpn_', 'tpl_', 'staff:', 'strict)']) {
    assert.ok(!html.includes(internal), `${internal} must not appear`);
  }
  assert.ok(
    (await page.locator('time[datetime$="Z"]').count()) > 0,
    'times carry their UTC instant',
  );
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= PHONE.width, `the page is ${width} px wide`);
  await part.scrollIntoViewIfNeeded();
  await shot(page, 'self-check-strict-expired.png');
  await context.close();
});

test('the search box finds the order by four characters of its number and keeps them', async () => {
  const { context, page } = await signIn(browser, server.base, SUPPORT);
  await page.fill('#search-q', 'P-0004');
  await Promise.all([page.waitForEvent('load'), page.press('#search-q', 'Enter')]);
  assert.match(page.url(), new RegExp(`/console/orders/${STRICT_ORDER}$`), 'one match opens its page');
  await page.fill('#search-q', '0004');
  await Promise.all([page.waitForEvent('load'), page.press('#search-q', 'Enter')]);
  await check(page, 'search results');
  if (/\/console\/search/.test(page.url())) {
    assert.equal(await page.inputValue('#search-q'), '0004', 'the box keeps what was typed');
    const hits = await page.getByTestId('hits').innerText();
    assert.match(hits, new RegExp(STRICT_ORDER), hits);
  } else {
    assert.match(page.url(), new RegExp(`/console/orders/${STRICT_ORDER}$`));
  }
  await context.close();
});

test('an operator names a category, edits a fresh template in full, duplicates it, and the log says so in words', async () => {
  const { context, page } = await signIn(browser, server.base, OPERATOR);

  // Categories: the demo named its codes; a new one is named here.
  await page.goto(`${server.base}/console/categories`);
  await check(page, 'categories');
  assert.match(await page.getByTestId('categories').innerText(), /手机/);
  await page.fill('#code', 'toys');
  await page.fill('#name_zh', '玩具');
  await page.fill('#name_en', 'Toys');
  await submit(page, 'save-category');
  await expectOk(page, 'name a category');
  assert.match(await page.getByTestId('categories').innerText(), /玩具/);
  await shot(page, 'operator-categories.png');

  // A fresh template, scoped to the new category.
  await page.goto(`${server.base}/console/templates/new`);
  await page.fill('#name', '玩具满200减20');
  await page.selectOption('#kind', 'fixed');
  await page.fill('#value', '20');
  await page.fill('#min_order', '200');
  await page.fill('#valid_days', '7');
  await page.fill('#total_stock', '500');
  await page.fill('#categories', 'toys');
  await submit(page, 'create');
  await expectOk(page, 'create template');
  const templatePage = page.url();
  await check(page, 'template page');
  assert.match(await page.locator('main').innerText(), /玩具/, 'the category by its name');

  // Every term can change before the first claim.
  assert.equal(await page.getByTestId('terms-locked').count(), 0, 'nothing locked yet');
  await page.fill('#edit-value', '30');
  await page.fill('#edit-min-order', '250');
  await submit(page, 'save');
  await expectOk(page, 'full edit');
  assert.equal(page.url().split('#')[0], templatePage.split('#')[0], 'lands where it started');
  const history = await page.getByTestId('template-history').innerText();
  assert.match(history, /¥250\.00/, history);
  assert.match(history, /¥30\.00/, history);
  await check(page, 'template after the edit');
  await shot(page, 'operator-template-edit.png');

  // Duplicated into a new draft with the same terms.
  await Promise.all([page.waitForURL(/\/console\/templates\/new\?from=/), page.getByTestId('duplicate-template').click()]);
  assert.match(await page.inputValue('#name'), /副本/);
  assert.equal(await page.inputValue('#value'), '30');
  assert.equal(await page.inputValue('#min_order'), '250');
  await submit(page, 'create');
  await expectOk(page, 'create the copy');
  assert.notEqual(page.url().split('#')[0], templatePage.split('#')[0], 'a new template');

  // The staff log, in words.
  await page.goto(`${server.base}/console/audit?log=staff&actor=${OPERATOR.name}`);
  await check(page, 'staff log');
  const log = await page.getByTestId('audit-table').innerText();
  assert.match(log, /命名品类/, log);
  assert.match(log, /玩具 \/ Toys/, log);
  assert.match(log, /券的条款/, log);
  await shot(page, 'audit-staff-words.png');
  await context.close();
});

test('an English page shows English status badges and English words only', async () => {
  const { context, page } = await signIn(browser, server.base, SUPPORT, {
    locale: 'en-US',
    extraHTTPHeaders: { 'Accept-Language': 'en' },
  });
  await page.goto(`${server.base}/console/orders/${STRICT_ORDER}?check=1`);
  await page.getByTestId('overall').waitFor();
  await check(page, 'English order');
  const badges = await page.locator('main .badge').allInnerTexts();
  assert.ok(badges.length > 0, 'badges are shown');
  for (const b of badges) {
    assert.doesNotMatch(b, /[\u4e00-\u9fff]/, `an English badge: "${b}"`);
    assert.doesNotMatch(b, /^(ok|problem|warning)$/, `a badge in words, not a code: "${b}"`);
  }
  await context.close();
});
