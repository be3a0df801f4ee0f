// The front page in a real browser: it renders without JavaScript, names the
// store, reports the database, links to the API documentation, and works on
// a phone-sized screen.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SCREENSHOTS, cspViolations, launchBrowser, startServer } from './harness.mjs';

let server;
let browser;

before(async () => {
  server = await startServer();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test('the front page renders server-side and reports a reachable database', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  const response = await page.goto(`${server.base}/`);
  assert.equal(response.status(), 200);
  assert.equal(await page.title(), 'couponkeeper');
  assert.match(await page.getByTestId('database-status').innerText(), /数据库正常/);
  assert.equal(await page.getByTestId('store').innerText(), 'sqlite');
  const css = await page.evaluate(() => getComputedStyle(document.querySelector('.site-header')).backgroundColor);
  assert.equal(css, 'rgb(180, 35, 42)', 'the stylesheet is served and applied');
  await page.screenshot({ path: join(SCREENSHOTS, 'front-page-desktop.png'), fullPage: true });
  await context.close();
});

test('the OpenAPI link leads to the generated document', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${server.base}/`);
  await page.getByRole('link', { name: /OpenAPI/ }).click();
  const doc = JSON.parse(await page.locator('body').innerText());
  assert.ok(doc.paths['/api/v1/orders/{order_no}/final-payment'], 'the final-payment route is documented');
  await context.close();
});

test('the front page fits a phone screen', async () => {
  const context = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true });
  const page = await context.newPage();
  await page.goto(`${server.base}/`);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
  assert.equal(overflow, false, 'no horizontal scrolling at 375 px');
  await page.screenshot({ path: join(SCREENSHOTS, 'front-page-phone.png'), fullPage: true });
  await context.close();
});

test('every page carries a CSP that refuses inline script, and the watcher sees a violation', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const response = await page.goto(`${server.base}/`);
  const csp = response.headers()['content-security-policy'] || '';
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline/);
  // An injected inline script (what an XSS would add) must not run.
  const ran = await page.evaluate(() => {
    window.__injected = false;
    const s = document.createElement('script');
    s.textContent = 'window.__injected = true';
    document.body.appendChild(s);
    return new Promise((ok) => setTimeout(() => ok(window.__injected), 200));
  });
  assert.equal(ran, false, 'the inline script was blocked');
  await page.waitForTimeout(100);
  const seen = cspViolations.splice(0);
  assert.ok(seen.length >= 1, 'the harness saw the violation (so a clean run means clean pages)');
  assert.match(seen.join('\n'), /Content Security Policy/);
  await context.close();
});
