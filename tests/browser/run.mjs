// The browser suite: an Apache Royale application (royale/App.mxml, compiled to JavaScript
// here with Royale's mxmlc, on Java) served from one origin by a static server, calling amfgate
// on another origin with CORS configured, in headless Chromium driven by puppeteer-core.
//   node run.mjs AMFGATE [BUILD_DIR]
// The page echoes every value through each of Royale's AMF APIs and publishes its verdict;
// this script prints it and fails on any mismatch, or if the browser did not preflight.
// For the page's last step, a Consumer across a restart, a second daemon keeps messaging in a
// Redis of the run's own (Debian's redis-server); the script restarts it, with another
// instance on the same Redis publishing while it is away.
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, startDaemon, stopDaemon } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const [amfgate, buildArg] = process.argv.slice(2);
if (!amfgate) {
  console.error('usage: node run.mjs AMFGATE [BUILD_DIR]');
  process.exit(2);
}
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'amfgate-royale-'));
const build = buildArg || path.join(work, 'app');
const royale = path.join(here, 'node_modules/@apache-royale/royale-js/royale-asjs');

// 1. The application, compiled once per build folder and source (Java and mxmlc take about
//    20 s on two cores): the build keeps a hash of the sources it was made from.
function compile() {
  const release = path.join(build, 'bin/js-release');
  // ROYALE_DEBUG=1 serves the debug build (unminified, one file per class) to read errors.
  const out = process.env.ROYALE_DEBUG ? path.join(build, 'bin/js-debug') : release;
  const sources = fs.readdirSync(path.join(here, 'royale')).sort();
  const hash = crypto.createHash('sha256');
  for (const f of sources) hash.update(f).update(fs.readFileSync(path.join(here, 'royale', f)));
  const digest = hash.digest('hex');
  const stamp = path.join(build, 'sources.sha256');
  if (fs.existsSync(path.join(release, 'App.js')) && fs.existsSync(stamp) &&
      fs.readFileSync(stamp, 'utf8') === digest) {
    return out;
  }
  fs.rmSync(build, { recursive: true, force: true });
  fs.mkdirSync(path.join(build, 'src'), { recursive: true });
  for (const f of sources) {
    fs.copyFileSync(path.join(here, 'royale', f), path.join(build, 'src', f));
  }
  const libs = path.join(royale, 'frameworks/js/libs');
  const r = spawnSync(path.join(here, 'node_modules/.bin/mxmlc'), [
    '-targets=JSRoyale',
    // mx.rpc.remoting.RemoteObject and its channels
    `-js-library-path+=${libs}/MXRoyaleBaseJS.swc`, `-js-library-path+=${libs}/MXRoyaleJS.swc`,
    path.join(build, 'src/App.mxml'),
  ], { cwd: build, encoding: 'utf8' });
  if (r.status !== 0 || !fs.existsSync(path.join(release, 'App.js'))) {
    throw new Error(`mxmlc failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
  fs.writeFileSync(stamp, digest);
  return out;
}

// 2. A static server for the compiled page (the page's origin).
function serve(dir) {
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };
  const server = http.createServer((req, res) => {
    const file = path.join(dir, path.normalize(new URL(req.url, 'http://x').pathname));
    if (!file.startsWith(dir) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': types[path.extname(file)] || 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// 3. The test daemon (amfgate with the documentation's example services, the Ticker among
//    them) on config/example.json's users, access rules and messaging, a Ticker publishing
//    to its "ticks", a port of its own (or `port`), CORS for the page's origin, messaging in
//    the Redis on `redisPort` if given; and the bridge to the backend of the bridge's tests
//    (tests/bridge/backend.py), which publishes to "news".
const publishToken = crypto.randomBytes(24).toString('hex');
function startGateway(origin, backendPort, { redisPort, port = 0, name = 'daemon' } = {}) {
  const example = JSON.parse(fs.readFileSync(path.join(here, '../../config/example.json'), 'utf8'));
  return startDaemon(amfgate, {
    listen: { address: '127.0.0.1', port },
    introspection: true,
    log: { level: 'debug', access: true, sinks: [{ type: 'stdout' }] },
    users: example.users,
    access: example.access,
    messaging: { ...example.messaging,
                 store: redisPort ? 'redis' : 'memory',
                 destinations: { ...example.messaging.destinations, news: {},
                                 brief: { subscription_timeout_ms: 1500 }, relay: {} } },
    ...(redisPort ? { sessions: { redis: { host: '127.0.0.1', port: redisPort } } } : {}),
    services: { Ticker: { destination: 'ticks', interval_ms: 1000 } },
    cors: { allow_origins: [origin] },
    upstreams: { backend: { url: `http://127.0.0.1:${backendPort}/amf/` } },
    bridge: { Bridged: 'backend' },
    publish: { enabled: true, tokens: [publishToken] },
  }, work, name);
}

// Debian's redis-server on a port of its own, keeping nothing on disk; resolves once it
// accepts connections.
async function startRedis(port) {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1',
                                       '--save', '', '--appendonly', 'no'],
                      { stdio: 'ignore' });
  for (let i = 0; i < 200; i++) {
    const up = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => { s.end(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (up) return child;
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error('redis-server did not start');
}

// POST /publish/relay on `daemon`: `body` to the page's Consumer.
async function publish(daemon, body) {
  const res = await fetch(`${daemon.base}/publish/relay`, {
    method: 'POST', body: JSON.stringify({ body }),
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${publishToken}` },
  });
  if (res.status !== 202) throw new Error(`publishing ${body}: HTTP ${res.status}`);
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// The backend, once the daemon it publishes through is up; resolves when it listens.
function startBackend(port, gatewayBase) {
  const child = spawn('/usr/bin/python3', [path.join(here, '../bridge/backend.py'),
                      '--port', String(port), '--publish', gatewayBase, publishToken],
                      { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout.once('data', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`the backend exited (${code})`)));
  });
}

let gateway, relay, first, other, redis, server, browser, backend, status = 1;
try {
  const started = Date.now();
  const page_dir = compile();
  console.log(`the Royale app, compiled or reused, in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  server = await serve(page_dir);
  const origin = `http://127.0.0.1:${server.address().port}`;
  const backendPort = await freePort();
  const redisPort = await freePort();
  redis = await startRedis(redisPort);
  gateway = await startGateway(origin, backendPort);
  relay = await startGateway(origin, backendPort, { redisPort, name: 'relay' });
  backend = await startBackend(backendPort, gateway.base);
  browser = await launchChromium(work);
  const page = await browser.newPage();
  const console_lines = [];
  page.on('console', (m) => console_lines.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => console_lines.push(`page error: ${e.message}`));
  await page.goto(`${origin}/index.html?gateway=${encodeURIComponent(`${gateway.base}/gateway`)}` +
                  `&relay=${encodeURIComponent(`${relay.base}/gateway`)}`);
  const waited = (what, seconds) => page.waitForFunction(what, { timeout: seconds * 1000 })
    .catch(() => {
      throw new Error(`no ${what} from the page in ${seconds} s; its console:\n` +
                      console_lines.join('\n'));
    });
  // The page's last step: its Consumer across a restart of the daemon (App.mxml says how).
  await waited('window.amfgateRelayReady', 60);
  await publish(relay, 'r1');
  await publish(relay, 'r2');
  await waited('window.amfgateRelay.length >= 2', 20);
  first = relay;
  await stopDaemon(first);
  other = await startGateway(origin, backendPort, { redisPort, name: 'other' });
  await publish(other, 'r3');
  await publish(other, 'r4');
  relay = await startGateway(origin, backendPort,
                             { redisPort, port: Number(new URL(first.base).port), name: 'restarted' });
  await publish(relay, 'r5');
  await publish(relay, 'r6');
  await waited('window.amfgateVerdict', 60);
  const verdict = JSON.parse(await page.evaluate('window.amfgateVerdict'));
  // What a person would see: the page's verdict in its title and body.
  await page.screenshot({ path: path.join(build, 'page.png') });
  for (const r of verdict.results) {
    console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.api}: ${r.name}` +
                (r.ok ? '' : `\n       got      ${r.got}\n       expected ${r.expected}`));
  }
  // The calls were cross-origin: the browser asked first, and amfgate let it. (The access
  // log is complete once the daemon has exited: lines are written in batches.)
  await stopDaemon(gateway);
  await stopDaemon(relay);
  await stopDaemon(other);
  const preflights = (gateway.log().match(/"OPTIONS \/gateway[^"]*" 204/g) || []).length;
  // And each stopped cleanly (under ASan, a use after free on the way out aborts the exit).
  const exits = [gateway, first, other, relay].map((d) => d.child.exitCode);
  const exit = exits.find((e) => e !== 0) ?? 0;
  console.log(`${verdict.passed} passed, ${verdict.failed} failed in the page; ` +
              `${preflights} CORS preflights answered 204; the daemons exited with ${exits}`);
  status = verdict.failed === 0 && verdict.passed > 0 && preflights > 0 && exit === 0 ? 0 : 1;
  if (status !== 0) console.log(`page console:\n${console_lines.join('\n')}`);
} catch (e) {
  console.error(e.message);
} finally {
  if (browser) await browser.close();
  if (server) server.close();
  if (backend) backend.kill('SIGKILL');
  await stopDaemon(gateway);
  await stopDaemon(relay);
  await stopDaemon(other);
  if (redis) redis.kill('SIGKILL');
  if (status === 0) fs.rmSync(work, { recursive: true, force: true });
  else console.log(`kept ${work} (daemon.log); the page: ${path.join(build, 'page.png')}`);
}
process.exit(status);
