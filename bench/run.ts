// `npm run bench`: every benchmark in turn, each printing a table with its setup.
// `npm run bench -- push-scale consul` runs only the named scenarios (see docs/benchmarks.md).
import { caBench } from './ca.js';
import { churnBench } from './churn.js';
import { agentBench } from './agent.js';
import { agentWorkloadsBench } from './agent-workloads.js';
import { authzBench } from './authz.js';
import { editLatency } from './edit-latency.js';
import { floodBench } from './flood.js';
import { haBench } from './ha.js';
import { dnsBench, probeBench } from './onboard.js';
import { kubernetesBench } from './kubernetes.js';
import { localityViews } from './locality-views.js';
import { pushFanout } from './push-fanout.js';
import { pushScale } from './push-scale.js';
import { proxylessStorm } from './proxyless-storm.js';
import { churnStreams } from './churn-streams.js';
import { storm10k } from './storm-10k.js';
import { startupAtSize } from './startup-at-size.js';
import { diffAtSize } from './diff-at-size.js';
import { warmStart } from './warm-start.js';
import { consulBench } from './consul.js';
import { zookeeperLatency } from './zookeeper.js';
import { registryPublishBench } from './registry-publish.js';
import { ruleEdits } from './rule-edits.js';

const SCENARIOS: Record<string, () => Promise<void>> = {
  'edit-latency': editLatency,
  churn: async () => {
    await churnBench();
  },
  'push-fanout': pushFanout,
  'push-scale': () => pushScale(),
  'warm-start': warmStart,
  'locality-views': localityViews,
  kubernetes: kubernetesBench,
  consul: consulBench,
  zookeeper: zookeeperLatency,
  'registry-publish': () => registryPublishBench(),
  flood: floodBench,
  ca: caBench,
  agent: () => agentBench(),
  'agent-workloads': () => agentWorkloadsBench(),
  authz: authzBench,
  'onboard-probe': () => probeBench(),
  'onboard-dns': dnsBench,
  ha: haBench,
  'proxyless-storm': proxylessStorm,
  'churn-streams': churnStreams,
  'storm-10k': storm10k,
  'startup-at-size': startupAtSize,
  'diff-at-size': diffAtSize,
  'rule-edits': ruleEdits,
};

const chosen = process.argv.slice(2);
for (const name of chosen) {
  if (!SCENARIOS[name]) {
    console.error(`unknown scenario "${name}" (known: ${Object.keys(SCENARIOS).join(', ')})`);
    process.exit(2);
  }
}
console.log(`Portolan benchmarks — node ${process.version}, ${new Date().toISOString()}`);
for (const [name, run] of Object.entries(SCENARIOS))
  if (chosen.length === 0 || chosen.includes(name)) await run();
