export { generateFromSchema } from './generate.js';
export { loadSimScript } from './script.js';
export {
  startSimulator,
  type Responder,
  type SimCounters,
  type SimHandle,
  type SimModel,
  type SimModelCounters,
  type SimOptions,
  type SimReply,
  type SimRequest,
} from './server.js';
