// Run by the one-shot mongo-init service of docker-compose.ha.yml (mongosh, connected to m1):
// makes m1, m2 and m3 the replica set rs0 unless it exists, then waits until it has a
// primary, so the app starts against a set that accepts writes. Running it again is harmless.
const members = ['m1:27017', 'm2:27017', 'm3:27017'].map((host, _id) => ({ _id, host }));
try {
  rs.status();
  print('Replica set rs0 is already initiated');
} catch (error) {
  if (error.codeName !== 'NotYetInitialized') throw error;
  rs.initiate({ _id: 'rs0', members });
  print('Replica set rs0 initiated');
}
const deadline = Date.now() + 60_000;
while (!db.hello().primary) {
  if (Date.now() > deadline) throw new Error('rs0 elected no primary within 60 s');
  sleep(500);
}
print(`rs0 primary: ${db.hello().primary}`);
