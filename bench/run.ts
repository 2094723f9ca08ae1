// `npm run bench`: every benchmark in turn, each printing a table with its setup.
import { editLatency } from './edit-latency.js';
import { kubernetesBench } from './kubernetes.js';
import { pushFanout } from './push-fanout.js';
import { warmStart } from './warm-start.js';
import { consulBench } from './consul.js';
import { zookeeperLatency } from './zookeeper.js';

console.log(`Portolan benchmarks — node ${process.version}, ${new Date().toISOString()}`);
await editLatency();
await pushFanout();
await warmStart();
await kubernetesBench();
await consulBench();
await zookeeperLatency();
