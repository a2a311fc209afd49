// A node tool: reads data, writes reports; each mode uses other parts of node.
const fs = require('fs'), path = require('path'), zlib = require('zlib');
const { execFileSync } = require('child_process');
const items = JSON.parse(fs.readFileSync('data/items.json', 'utf8'));
const mode = process.argv[2];
if (mode === 'A') {
  console.log('total', require('./lib/sum').total(items));
} else if (mode === 'B') {
  fs.mkdirSync('out/gz', { recursive: true });
  fs.writeFileSync('out/gz/items.json.gz', zlib.gzipSync(JSON.stringify(items)));
  console.log('gz', zlib.gunzipSync(fs.readFileSync('out/gz/items.json.gz')).length);
  console.log(execFileSync('wc', ['-c', 'data/items.json']).toString().trim());
} else if (mode === 'C') {
  const { Worker } = require('worker_threads');
  const w = new Worker('const { parentPort } = require("worker_threads"); parentPort.postMessage(6 * 7);', { eval: true });
  w.on('message', (m) => { console.log('worker', m); w.terminate(); });
} else if (mode === 'D') {
  const crypto = require('crypto');
  console.log('sha256', crypto.createHash('sha256').update(JSON.stringify(items)).digest('hex').slice(0, 16));
  fs.mkdirSync(path.join('build', 'meta'), { recursive: true });
  fs.writeFileSync('build/meta/names.txt', items.map((x) => x.n).join('\n') + '\n');
  console.log(execFileSync('sort', ['-r', 'build/meta/names.txt']).toString().trim().split('\n').join(','));
}
