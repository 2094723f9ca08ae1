// Statements are compiled once per database and SQL text, and each database keeps its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { prepared } from '../../../store/prepared.js';

test('a statement is prepared once per database and SQL, and each database has its own', () => {
  const a = new Database(':memory:');
  const b = new Database(':memory:');
  try {
    for (const db of [a, b]) db.exec('CREATE TABLE t (v INTEGER)');
    const insert = 'INSERT INTO t (v) VALUES (?)';
    const first = prepared<[number]>(a, insert);
    assert.equal(prepared<[number]>(a, insert), first, 'the same statement again');
    assert.notEqual(prepared<[number]>(b, insert), first, 'another database prepares its own');
    first.run(1);
    prepared<[number]>(a, insert).run(2);
    prepared<[number]>(b, insert).run(3);
    const count = (db: Database.Database): number =>
      prepared<[], { n: number }>(db, 'SELECT COUNT(*) AS n FROM t').get()?.n ?? -1;
    assert.equal(count(a), 2);
    assert.equal(count(b), 1);
  } finally {
    a.close();
    b.close();
  }
});
