// A small Node tool: read JSON, compute, write a report; B also spawns a child and
// uses a worker thread, a timer and zlib, as bigger scripts do.
const fs = require('fs');
const path = require('path');
const mode = process.argv[2];
const data = JSON.parse(fs.readFileSync(path.join(__dirname, mode === 'A' ? 'a.json' : 'b.json')));
const total = data.values.reduce((s, v) => s + v, 0);
console.log(`${data.name}: ${data.values.length} values, total ${total}`);
if (mode === 'B') {
  const zlib = require('zlib');
  const packed = zlib.gzipSync(JSON.stringify(data));
  console.log('round trip', JSON.parse(zlib.gunzipSync(packed)).name === data.name);
  fs.mkdirSync('out', { recursive: true });
  fs.writeFileSync('out/report.txt', data.values.map(String).join('\n'));
  console.log('report lines', fs.readFileSync('out/report.txt', 'utf8').split('\n').length);
  const { execFileSync } = require('child_process');
  console.log('child', execFileSync(process.execPath, ['-e', 'console.log(6 * 7)']).toString().trim());
  const { Worker } = require('worker_threads');
  const w = new Worker('const { parentPort } = require("worker_threads"); parentPort.postMessage(21 * 2);', { eval: true });
  w.on('message', (m) => { console.log('worker', m); setTimeout(() => console.log('done'), 10); });
}
