import { openStore } from '../src/store/index.js';
import { rmSync } from 'node:fs';
rmSync('.scratch/bench.db', { force: true }); rmSync('.scratch/bench.db-wal', { force: true }); rmSync('.scratch/bench.db-shm', { force: true });
const s = openStore('.scratch/bench.db');
const preset = { name: 'p', agents: [{id:'a',model:'m'},{id:'b',model:'m'}], judge:{model:'j'}, synthesizer:{model:'s'}, protocol:{maxRounds:2,convergenceThreshold:0.8,callTimeoutSeconds:60,maxAnswerTokens:100} } as any;
const ag = (id: string, role: any) => ({id, model:'m', persona:null, cluster:null, role, digest:null});
let t = Date.now();
for (let i=0;i<10000;i++) {
  const id = 'deb' + String(i).padStart(6,'0');
  s.createDebate({ id, question: 'q'+i, preset, engineVersion:'0', host:'h', agents:[ag('a','debater'),ag('b','debater'),ag('c','debater'),ag('judge','judge'),ag('synthesizer','synthesizer')], createdAt: i});
  for (let c=0;c<12;c++) s.recordCall({ debateId: id, stage:'opening', round: c%4, agentId:'a', attempt:0, host:'h', model:'m', messages:[{role:'user',content:'x'.repeat(200)}], options:{}, format:null, raw:'r'.repeat(300), parsed:null, status:'ok', validationError:null, error:null, truncation:null, metrics:{promptTokens:1,completionTokens:1,totalDurationNs:1,loadDurationNs:1,promptEvalDurationNs:1,evalDurationNs:1,doneReason:'stop'}, startedAt:0, finishedAt:1});
  if (i % 2) s.finishDebate(id, { status:'completed', exitReason:'converged', error:null, roundsCompleted:2, finalConvergence:0.9, finishedAt: i+1 });
}
console.log('fill ms', Date.now()-t);
for (const o of [{limit:50},{limit:50,offset:9000},{},{status:'completed' as const, limit:50}]) {
  t = performance.now(); const r = s.listDebates(o); console.log(JSON.stringify(o), r.length, (performance.now()-t).toFixed(1),'ms', r[0]?.callCount, r[0]?.agentCount);
}
t = performance.now(); console.log(s.resolveId('deb00999'), (performance.now()-t).toFixed(1));
t = performance.now(); console.log(s.getDebate('deb000999').calls.length, (performance.now()-t).toFixed(1));
s.close();
