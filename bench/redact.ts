/**
 * The log scrub's time on a megabyte shaped against each of its rules (anyone who holds a
 * reporting token can send one): each line is one input's time, which stays well under a
 * second while the scan is linear in the text. Timing is measured here, never asserted in a
 * test. Run: `node bench/redact.ts`.
 */
import { performance } from 'node:perf_hooks';
import { scrubText } from '../src/logging/redact.ts';

const megabyte = (unit: string) => unit.repeat(Math.ceil(1_000_000 / unit.length));
const adversarial = [
  megabyte('"password'),
  megabyte('"a":'),
  megabyte('"password":"'),
  megabyte('password:'),
  megabyte('token='),
  megabyte('a-'),
  megabyte('Bearer '),
  `password${' '.repeat(1_000_000)}:x`,
  megabyte(`${'x'.repeat(60)}":`),
  megabyte("'token' : '"),
  megabyte('a://b:'),
  megabyte('://:'),
  megabyte('%70assword='),
  megabyte('%:'),
  megabyte('x%:'),
  megabyte('%E0:'),
  megabyte('://a:@'),
  `://a:${'x'.repeat(1_000_000)}`,
  megabyte('/account/activate/'),
  megabyte('%2Faccount%2F'),
  megabyte('/account/reset-password'),
  `/account/reset-password/${'a'.repeat(1_000_000)}`,
  megabyte('?code='),
  megabyte('&state%3D'),
  megabyte('%3Fcode%3D'),
  megabyte('%3D'),
  megabyte('a%3Fx%3D'),
  megabyte(`?${'%3F'.repeat(20)}code=`),
  'A'.repeat(1_000_000),
  megabyte(`${'A'.repeat(43)}.`),
  megabyte(`${'A'.repeat(43)}%2F`),
  megabyte('%2F'),
  megabyte('%A'),
  megabyte('"hash":"'),
  megabyte('eyJ.'),
  megabyte('eyJ.eyJ'),
  megabyte('eyJ..'),
  megabyte(`eyJ${'a'.repeat(40)}.`),
  megabyte('eyJ.eyJ.eyJ '),
  megabyte('%25'),
  '%'.concat('25'.repeat(500_000)),
  megabyte('%252'),
  megabyte('%2525x'),
  megabyte(`%2525${'A'.repeat(41)}`),
  megabyte('%252Faccount%2525'),
  megabyte('%253D'),
  megabyte('a%253Fb%253D'),
];

for (const text of adversarial) {
  const started = performance.now();
  scrubText(text);
  const elapsed = performance.now() - started;
  console.log(`${Math.round(elapsed).toString().padStart(6)} ms  ${JSON.stringify(text.slice(0, 24))}…`);
}
