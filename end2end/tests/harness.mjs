// Shared set-up for the browser tests: starts the real couponkeeper binary on
// a fresh SQLite database and a free port, and launches Debian's Chromium
// through playwright-core (no browser download).
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const SCREENSHOTS = join(ROOT, 'end2end', 'screenshots');

/** The binary built by `cargo build` (honours CARGO_TARGET_DIR). */
export function binaryPath() {
  if (process.env.COUPONKEEPER_BIN) return process.env.COUPONKEEPER_BIN;
  const target = process.env.CARGO_TARGET_DIR || join(ROOT, 'target');
  return join(target, 'debug', 'couponkeeper');
}

function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

/** Starts the service; resolves once /healthz answers (at most 30 s). */
export async function startServer(extraEnv = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'ck-e2e-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(binaryPath(), ['serve'], {
    env: {
      ...process.env,
      DATABASE_URL: `sqlite://${join(dir, 'e2e.db')}`,
      COUPONKEEPER_ADDR: `127.0.0.1:${port}`,
      COUPONKEEPER_API_TOKEN: 'e2e-token',
      RUST_LOG: 'warn',
      ...extraEnv,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  let spawnError = null;
  child.on('error', (e) => {
    spawnError = e;
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (spawnError) throw new Error(`cannot start ${binaryPath()}: ${spawnError.message} (run cargo build first)`);
    if (child.exitCode !== null) throw new Error(`couponkeeper exited with ${child.exitCode}`);
    try {
      const r = await fetch(`${base}/healthz`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGTERM');
      throw new Error('couponkeeper did not answer /healthz within 30 s');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

/** Headless Chromium from /usr/bin/chromium, with the flags this machine needs. */
export async function launchBrowser() {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
