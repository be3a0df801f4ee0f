// Passwords in a real browser: a staff member changes their own
// password from the header link; a weak one comes back with the reason
// beside the field (and never the typed password), on a phone without
// sideways scrolling; the new password signs in, the old one does not. An
// admin's reset form asks for the admin's own password.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SCREENSHOTS, binaryPath, launchBrowser, runCli, startServer } from './harness.mjs';

const ADMIN = { name: 'boss', password: 'e2e-root-plum-harbor-2' };
const SUPPORT = { name: 'xiaozhao', password: 'e2e-support-password-3' };
const NEW_PASSWORD = 'lanterns over the quiet river';

let server;
let browser;

before(async () => {
  const help = await runCli(['--help'], process.env);
  assert.ok(/\bstaff\b/.test(help.stdout), `${binaryPath()} is not this checkout's build: run cargo build`);
  server = await startServer({ COUPONKEEPER_JOBS: 'off' }, [], {
    async beforeStart(cli) {
      for (const [who, role] of [[ADMIN, 'admin'], [SUPPORT, 'support']]) {
        const r = await cli(['staff', 'add', who.name, '--role', role, '--password-env', 'E2E_STAFF_PW'], {
          E2E_STAFF_PW: who.password,
        });
        assert.equal(r.code, 0, `staff add ${who.name}: ${r.stderr}`);
      }
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function signIn(who, password, options = {}) {
  const context = await browser.newContext({ locale: 'zh-CN', ...options });
  const page = await context.newPage();
  await page.goto(`${server.base}/login`);
  await page.fill('#login-name', who.name);
  await page.fill('#login-password', password);
  await page.click('button.primary');
  return { context, page };
}

test('the CLI refuses a guessable password with the reason', async () => {
  const r = await runCli(['staff', 'add', 'weakling', '--role', 'support', '--password-env', 'E2E_STAFF_PW'], {
    ...process.env,
    DATABASE_URL: 'sqlite::memory:',
    E2E_STAFF_PW: 'password1234',
  });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr + r.stdout, /common password/);
});

test('a support account changes its own password on a phone, a weak one refused beside the field', async () => {
  const { context, page } = await signIn(SUPPORT, SUPPORT.password, {
    viewport: { width: 390, height: 844 },
    isMobile: true,
    hasTouch: true,
  });
  await page.waitForURL(/\/console$/);
  await page.getByTestId('nav-password').click();
  await page.waitForURL(/\/console\/password$/);
  await page.fill('#current-password', SUPPORT.password);
  await page.fill('#new-password', 'aaaaaaaaaaaa');
  await page.fill('#new-password-again', 'aaaaaaaaaaaa');
  await page.click('[data-testid=password-form] button.primary');
  const message = page.locator('[data-field-error=password]');
  assert.match(await message.innerText(), /重复的字符/);
  assert.equal(await page.getAttribute('#new-password', 'aria-describedby'), 'new-password-error');
  assert.equal(await page.inputValue('#new-password'), '', 'the typed password is not sent back');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
  assert.equal(overflow, false, 'no sideways scrolling at 390 px');
  await page.screenshot({ path: join(SCREENSHOTS, 'password-refused-phone.png'), fullPage: true });

  await page.fill('#current-password', SUPPORT.password);
  await page.fill('#new-password', NEW_PASSWORD);
  await page.fill('#new-password-again', NEW_PASSWORD);
  await page.click('[data-testid=password-form] button.primary');
  await page.waitForURL(/\/console\/password$/);
  assert.match(await page.getByTestId('flash').innerText(), /密码已修改/);
  await context.close();

  const old = await signIn(SUPPORT, SUPPORT.password);
  assert.match(old.page.url(), /\/login/, 'the old password no longer signs in');
  await old.context.close();
  const fresh = await signIn(SUPPORT, NEW_PASSWORD);
  await fresh.page.waitForURL(/\/console$/);
  await fresh.context.close();
});

test('an admin resetting a password must type their own, and the refusal stays in the row', async () => {
  const { context, page } = await signIn(ADMIN, ADMIN.password, { viewport: { width: 1366, height: 900 } });
  await page.waitForURL(/\/console$/);
  await page.goto(`${server.base}/console/staff`);
  const row = page.locator('tr[data-staff=xiaozhao]');
  await row.locator('summary').click();
  await row.locator('#pw-xiaozhao').fill('a whole new set of words');
  await row.locator('#pw2-xiaozhao').fill('a whole new set of words');
  await row.locator('#own-xiaozhao').fill('this is not my password');
  await row.locator('button[type=submit]', { hasText: '重置密码' }).click();
  const refused = page.locator('tr[data-staff=xiaozhao] [data-field-error=own_password]');
  assert.match(await refused.innerText(), /你自己的密码不正确/);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
  assert.equal(overflow, false, 'no sideways scrolling at 1366 px');
  await page.screenshot({ path: join(SCREENSHOTS, 'staff-reset-refused.png'), fullPage: true });
  await context.close();
});
