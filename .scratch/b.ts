import { openStore } from '../src/store/index.js';
const s = openStore(':memory:');
const preset = { name: 'p', agents: [{id:'a',model:'m'},{id:'b',model:'m'}], judge:{model:'j'}, synthesizer:{model:'s'}, protocol:{maxRounds:2,convergenceThreshold:0.8,callTimeoutSeconds:60,maxAnswerTokens:100} } as any;
for (let i=0;i<3;i++) s.createDebate({ id: 'd'+i, question: 'q', preset, engineVersion:'0', host:'h', agents:[{id:'a',model:'m',persona:null,cluster:null,role:'debater',digest:null},{id:'judge',model:'j',persona:null,cluster:null,role:'judge',digest:null}], createdAt: i});
console.log(s.listDebates({limit:2, offset:1}));
