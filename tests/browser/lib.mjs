// What the browser suites share: a daemon on a loopback port of its choosing, and Debian's
// Chromium under puppeteer-core.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

/** Starts `binary --config` on `config` (an object) in `work`, its files named `name`.json
 *  and .log; resolves {child, base, log()}. */
export async function startDaemon(binary, config, work, name = 'daemon') {
  const file = path.join(work, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(config));
  const logFile = path.join(work, `${name}.log`);
  const out = fs.openSync(logFile, 'w');
  // In `work`, where relative paths of the settings land; the binary as named from here.
  const child = spawn(path.resolve(binary), ['--config', file],
                      { stdio: ['ignore', out, out], cwd: work });
  const log = () => fs.readFileSync(logFile, 'utf8');
  for (let i = 0; i < 200; i++) {
    const m = /listening on 127\.0\.0\.1:(\d+)/.exec(log());
    if (m) return { child, base: `http://127.0.0.1:${m[1]}`, log };
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`${binary} did not start:\n${log()}`);
}

/** SIGTERM, and the exit. */
export async function stopDaemon(daemon) {
  if (!daemon || daemon.child.exitCode !== null) return;
  daemon.child.kill('SIGTERM');
  await new Promise((r) => daemon.child.once('exit', r));
}

/** Headless Chromium as root in a container: no sandbox, no background traffic (the
 *  network is closed), a profile of its own in `work`. */
export function launchChromium(work) {
  return puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync',
           `--user-data-dir=${path.join(work, 'chromium')}`],
  });
}
