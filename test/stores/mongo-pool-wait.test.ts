/**
 * A write under a rule's lease must end (or fail) within the longest write the lease leaves
 * it (src/rule-lock.ts), and that includes waiting for a connection from the pool: with
 * every connection busy, a write whose deadline check passed must not queue without end and
 * land after the lease ran out. A stand-in server, speaking just enough of the MongoDB wire
 * protocol, never answers one command, so the pool's only connection stays busy.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { BSON, type Document } from 'bson';
import { createRuleLock } from '../../src/rule-lock.ts';
import { connectMongo, isMongoOutage } from '../../src/stores/mongo/connect.ts';
import { MongoLeaseStore } from '../../src/stores/mongo/leases.ts';

const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_MSG = 2013;

/**
 * A server that answers every command with success, except an insert into `stalled`. A find
 * answers the newest document inserted into its collection (all the lease store asks for).
 */
function standInServer() {
  const inserted = new Map<string, Document[]>();
  const sockets = new Set<Socket>();
  let stalledSeen: () => void = () => {};
  const stalled = new Promise<void>((resolve) => {
    stalledSeen = resolve;
  });
  let requestId = 1;
  const hello = (): Document => ({
    helloOk: true,
    isWritablePrimary: true,
    ismaster: true,
    maxBsonObjectSize: 16 * 1024 * 1024,
    maxMessageSizeBytes: 48_000_000,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId: requestId,
    minWireVersion: 0,
    maxWireVersion: 21,
    ok: 1,
  });
  const answer = (command: Document): Document | undefined => {
    const name = Object.keys(command)[0]?.toLowerCase() ?? '';
    if (name === 'hello' || name === 'ismaster') return hello();
    if (name === 'insert' && command.insert === 'stalled') {
      stalledSeen();
      return undefined;
    }
    const collection = String(command[Object.keys(command)[0] ?? '']);
    if (name === 'insert') {
      const documents = (command.documents as Document[] | undefined) ?? [];
      inserted.set(collection, [...(inserted.get(collection) ?? []), ...documents]);
      return { n: documents.length, ok: 1 };
    }
    if (name === 'find' || name === 'aggregate' || name === 'listindexes') {
      const newest = name === 'find' ? inserted.get(collection)?.at(-1) : undefined;
      const firstBatch = newest ? [newest] : [];
      return { cursor: { id: 0n, ns: `${command.$db}.${collection}`, firstBatch }, ok: 1 };
    }
    return { n: 1, nModified: 0, ok: 1 };
  };
  const reply = (socket: Socket, responseTo: number, opCode: number, document: Document) => {
    const body = BSON.serialize(document);
    const prefix =
      opCode === OP_MSG
        ? Buffer.alloc(5) // flag bits 0, section kind 0
        : Buffer.alloc(20); // response flags, cursor id, starting from, number returned
    if (opCode === OP_REPLY) prefix.writeInt32LE(1, 16);
    const header = Buffer.alloc(16);
    header.writeInt32LE(16 + prefix.length + body.length, 0);
    header.writeInt32LE(requestId++, 4);
    header.writeInt32LE(responseTo, 8);
    header.writeInt32LE(opCode, 12);
    socket.write(Buffer.concat([header, prefix, body]));
  };
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const message = pending.subarray(0, pending.readInt32LE(0));
        pending = pending.subarray(message.length);
        const id = message.readInt32LE(4);
        const opCode = message.readInt32LE(12);
        let command: Document;
        if (opCode === OP_QUERY) {
          const nameEnd = message.indexOf(0, 20);
          command = BSON.deserialize(message.subarray(nameEnd + 1 + 8), { useBigInt64: true });
        } else if (opCode === OP_MSG) {
          // Flag bits (4 bytes), the kind-0 section holding the command, then any document
          // sequences (kind 1: size, identifier, documents) that belong to it.
          let at = 21;
          command = BSON.deserialize(message.subarray(at, at + message.readInt32LE(at)), {
            useBigInt64: true,
          });
          at += message.readInt32LE(at);
          while (at < message.length && message[at] === 1) {
            const end = at + 1 + message.readInt32LE(at + 1);
            const nameEnd = message.indexOf(0, at + 5);
            const field = message.toString('utf8', at + 5, nameEnd);
            const documents: Document[] = [];
            for (let doc = nameEnd + 1; doc < end; doc += message.readInt32LE(doc))
              documents.push(BSON.deserialize(message.subarray(doc, doc + message.readInt32LE(doc))));
            command[field] = documents;
            at = end;
          }
        } else {
          continue;
        }
        const answered = answer(command);
        if (answered) reply(socket, id, opCode === OP_QUERY ? OP_REPLY : OP_MSG, answered);
      }
    });
  });
  return {
    server,
    stalled,
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

describe('MongoDB: waiting for a connection from the pool', () => {
  const standIn = standInServer();
  let url = '';
  before(async () => {
    standIn.server.listen(0, '127.0.0.1');
    await once(standIn.server, 'listening');
    const address = standIn.server.address();
    assert.ok(address && typeof address === 'object');
    url = `mongodb://127.0.0.1:${address.port}/pool_wait?maxPoolSize=1&directConnection=true`;
  });
  after(() => standIn.close());

  test('a guarded write that finds every connection busy fails as an outage (503), rather than waiting without end', async () => {
    const { client, close } = await connectMongo(url, { deadline: Date.now() + 10_000, log: () => {} });
    try {
      const db = client.db();
      const lock = createRuleLock(new MongoLeaseStore(db.collection('leases')));
      const outcome = await lock
        .inTurn(
          'rule',
          async () => undefined,
          async () => {
            // Another request takes the only connection, and its reply never comes.
            const busy = db
              .collection('stalled')
              .insertOne({ n: 1 })
              .catch(() => undefined);
            await standIn.stalled;
            await db.collection('admins').insertOne({ n: 2 });
            await busy;
            return 'written';
          },
        )
        .catch((error: unknown) => error);
      assert.ok(outcome instanceof Error, `the write ended as ${String(outcome)}`);
      assert.match(outcome.name, /WaitQueueTimeoutError/);
      assert.ok(isMongoOutage(outcome));
    } finally {
      await close().catch(() => undefined);
    }
  });
});
