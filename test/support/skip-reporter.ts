/**
 * A node:test reporter that writes one JSON line per skipped suite or test (its file, name
 * and reason), for test/support/run-all.ts to name them once the run is over.
 */
import type { TestEvent } from 'node:test/reporters';

export interface Skipped {
  file: string | undefined;
  name: string;
  reason: string;
  suite: boolean;
}

export default async function* skipReporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  // The test file running now: a suite may be defined in a helper (the store contracts), and
  // the file that ran it is the one to name. Files run one at a time (--test-concurrency=1).
  let running: string | undefined;
  for await (const event of source) {
    if (event.type === 'test:dequeue' && event.data.file?.endsWith(event.data.name))
      running = event.data.file;
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { skip, name, file, details } = event.data;
    if (skip === undefined) continue;
    const skipped: Skipped = {
      file: running ?? file,
      name,
      reason: typeof skip === 'string' ? skip : 'no reason given',
      suite: details.type === 'suite',
    };
    yield `${JSON.stringify(skipped)}\n`;
  }
}
