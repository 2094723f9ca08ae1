// Change triggers merge as changes do: the union of registries and files, bounded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_TRIGGER_NAMES, mergeChanges, mergeTriggers, type ChangeTrigger } from '../../../model/change.js';

test('merged changes keep the union of their triggers', () => {
  const merged = mergeChanges(
    {
      hostnames: new Set(['a']),
      endpointsOnly: true,
      trigger: { registries: ['config'], files: ['a.yaml'] },
    },
    {
      hostnames: new Set(['b']),
      endpointsOnly: true,
      trigger: { registries: ['mock', 'config'], files: [] },
    },
  );
  assert.deepEqual(merged.trigger, { registries: ['config', 'mock'], files: ['a.yaml'] });
  const untriggered = mergeChanges(
    { hostnames: new Set(), endpointsOnly: false },
    { hostnames: new Set(), endpointsOnly: false },
  );
  assert.equal(untriggered.trigger, undefined);
});

test('a storm of edits does not grow a trigger past its bound', () => {
  let trigger: ChangeTrigger = { registries: ['config'], files: ['f0.yaml'] };
  for (let i = 1; i < 100; i++)
    trigger = mergeTriggers(trigger, { registries: ['config'], files: [`f${i}.yaml`] }) ?? trigger;
  assert.equal(trigger.files.length, MAX_TRIGGER_NAMES);
  assert.equal(trigger.files[0], 'f0.yaml');
});
