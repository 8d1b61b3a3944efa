// Preloaded (`node -r`) by the npm scripts that run TypeScript, and run first by `npm test`.
// Node.js runs .ts files only from the version package.json's `engines` names; an older one
// stops at the first import with a stack trace (ERR_UNKNOWN_FILE_EXTENSION). `npm install`
// normally fetches that Node.js (the optional `node` package) into node_modules/.bin, which npm
// puts first on PATH for scripts; where it did not, this says so in one line and exits 1.
// Plain CommonJS and ES2015: it has to run on whatever Node.js the machine has.
'use strict';
// biome-ignore lint/style/useNodejsImportProtocol: `node:` specifiers are unknown to Node.js before 14.18.
const fs = require('fs');
const pkg = require('../package.json');

const minimum = /^>=\s*(\d+(?:\.\d+){0,2})$/.exec(pkg.engines.node);
if (!minimum) throw new Error(`engines.node must read ">=X[.Y[.Z]]", not ${pkg.engines.node}`);

if (olderThan(process.versions.node, minimum[1])) {
  const advice = fs.existsSync(`${__dirname}/../node_modules`)
    ? `npm install did not fetch it for ${process.platform}-${process.arch}, so install it on this machine`
    : 'run npm install to fetch it';
  console.error(`${pkg.name} needs Node.js ${minimum[1]} or newer (found ${process.version}); ${advice}`);
  process.exit(1);
}

function olderThan(version, wanted) {
  const have = version.split('.').map(Number);
  const need = wanted.split('.').map(Number);
  for (let i = 0; i < need.length; i++) {
    if (have[i] !== need[i]) return have[i] < need[i];
  }
  return false;
}
