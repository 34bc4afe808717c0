#!/usr/bin/env node
// Reads the AMF0 answers that `echotest --save-amf0 DIR` saved with the npm package `amf`
// 0.1.0 (an AMF0 reader written apart from amfgate) and compares what it reads with what the
// case sent, spelled as peer.hpp describes. For a captured request the comparison is with the
// package's own reading of Flash Player's request bytes.
//
//   node check.js DIR
//
// One line per answer: PASS, FAIL with what differed, or PEER when the value holds what the
// package cannot read (references, long strings, XMLDocument) and the sender expected that.
'use strict';
const fs = require('fs');
const path = require('path');
const amf = require('amf');

function hex64(d) {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(d);
  return b.toString('hex');
}

function render(v) {
  if (v === undefined) return 'undefined';
  if (v === null) return 'null';
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'number') return Number.isNaN(v) ? 'NaN' : 'n' + hex64(v);
  if (typeof v === 'string') return 's' + Buffer.from(v, 'utf8').toString('hex');
  if (v instanceof Date) return 'd' + hex64(v.getTime());
  if (Array.isArray(v)) {
    const items = [];
    for (let i = 0; i < v.length; i++) items.push(render(v[i]));
    const named = Object.keys(v)
      .filter((k) => !/^(0|[1-9][0-9]*)$/.test(k))
      .map((k) => k + '=' + render(v[k]));
    return '[' + items.join(',') + (named.length ? ';' + named.join(',') : '') + ']';
  }
  const keys = Object.keys(v).filter((k) => k !== '__className__');
  return (v.__className__ || '') + '{' + keys.map((k) => k + '=' + render(v[k])).join(',') + '}';
}

// The first body's value of a remoting packet, read with the package (it has no packet
// reader; the framing is read here).
function firstBodyValue(buf) {
  let at = 2;
  const u16 = () => {
    const v = buf.readUInt16BE(at);
    at += 2;
    return v;
  };
  const headers = u16();
  const skip = (n) => {
    at += n;
  };
  for (let h = 0; h < headers; h++) {
    skip(u16() + 1 + 4); // name, must-understand, length
    const info = { offset: at };
    amf.read(buf, info);
    at = info.offset;
  }
  if (u16() < 1) throw new Error('no body');
  skip(u16()); // target
  skip(u16()); // response
  skip(4); // length
  return amf.read(buf, { offset: at });
}

// A request body's value is the argument array; the echo's argument is its first element.
function firstArgument(buf) {
  const args = firstBodyValue(buf);
  if (!Array.isArray(args) || args.length !== 1) throw new Error('not one argument');
  return args[0];
}

function main() {
  const dir = process.argv[2];
  if (!dir) {
    console.error('usage: node check.js DIR');
    process.exit(2);
  }
  let passed = 0;
  let failed = 0;
  let unreadable = 0;
  const stems = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.expect'))
    .map((f) => f.slice(0, -'.expect'.length))
    .sort();
  for (const stem of stems) {
    const [name, sent] = fs.readFileSync(path.join(dir, stem + '.expect'), 'utf8').split('\n');
    let expected = sent;
    if (sent === '=request') {
      try {
        expected = render(firstArgument(fs.readFileSync(path.join(dir, stem + '.request'))));
      } catch (e) {
        expected = 'unreadable: what the request holds (' + e.message + ')';
      }
    }
    let got;
    try {
      got = render(firstBodyValue(fs.readFileSync(path.join(dir, stem + '.amf'))));
    } catch (e) {
      if (expected.startsWith('unreadable')) {
        console.log(`PEER amf0  ${name}: not readable by the peer (${e.message}); it holds ` +
                    expected.slice('unreadable: '.length));
        unreadable++;
      } else {
        console.log(`FAIL amf0  ${name}: the peer cannot read the answer: ${e.message}`);
        failed++;
      }
      continue;
    }
    if (got === expected) {
      console.log(`PASS amf0  ${name}`);
      passed++;
    } else {
      const cut = (s) => (s.length > 160 ? s.slice(0, 160) + '...' : s);
      console.log(`FAIL amf0  ${name}: the peer read ${cut(got)}, expected ${cut(expected)}`);
      failed++;
    }
  }
  console.log(`peer (npm amf 0.1.0): ${passed} passed, ${failed} failed, ` +
              `${unreadable} not readable by the peer`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

main();
