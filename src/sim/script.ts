import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { InputError } from '../errors.js';
import { canonicalName, type Responder, type SimOptions, type SimReply } from './server.js';

const GIB = 1024 ** 3;

const modelSchema = z.strictObject({
  name: z.string().min(1),
  sizeBytes: z.number().positive().optional(),
  contextLength: z.number().int().positive().optional(),
  family: z.string().min(1).optional(),
  parameterSize: z.string().optional(),
  quantization: z.string().optional(),
  capabilities: z.array(z.string()).optional(),
  thinkingTokens: z.number().int().nonnegative().optional(),
  digest: z.string().optional(),
});

const replySchema = z.union([
  z.string(),
  z.strictObject({
    content: z.string().optional(),
    error: z.string().optional(),
    status: z.union([z.literal(200), z.number().int().min(400).max(599)]).optional(),
    retryAfter: z.number().int().nonnegative().optional(),
    failAfterTokens: z.number().int().nonnegative().optional(),
    silentStop: z.boolean().optional(),
    dropAfterTokens: z.number().int().nonnegative().optional(),
    crashAfterTokens: z.number().int().nonnegative().optional(),
    stallAfterTokens: z.number().int().nonnegative().optional(),
    powerOff: z.boolean().optional(),
    ignoresStream: z.boolean().optional(),
    delayMs: z.number().nonnegative().optional(),
    doneReason: z.string().optional(),
    thinking: z.string().optional(),
    answerInThinking: z.boolean().optional(),
  }),
]);

const scriptSchema = z.strictObject({
  models: z.array(z.union([z.string().min(1), modelSchema])).min(1),
  vramGiB: z.number().positive().optional(),
  numParallel: z.number().int().positive().optional(),
  maxLoadedModels: z.number().int().nonnegative().optional(),
  maxQueue: z.number().int().nonnegative().optional(),
  loadMs: z.number().nonnegative().optional(),
  tokenMs: z.number().nonnegative().optional(),
  promptMsPerToken: z.number().nonnegative().optional(),
  replies: z.record(z.string(), z.array(replySchema).min(1)).optional(),
});

type PathSegment = PropertyKey;

function formatPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(String(segment))) out += out === '' ? String(segment) : `.${String(segment)}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out === '' ? '(root)' : out;
}

/**
 * Reads a simulator script (YAML or JSON) into SimOptions. Scripted replies
 * for a model are served in order and start over when used up; models without
 * replies get the default responder. Throws an InputError naming the file and
 * the offending field.
 */
export async function loadSimScript(path: string): Promise<SimOptions> {
  const fail = (message: string, cause?: unknown) =>
    new InputError('SIM_SCRIPT_INVALID', `Sim script ${path}: ${message}`, {
      hint: 'Fix the script; see loadSimScript in src/sim/script.ts for the fields it accepts.',
      cause,
    });
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new InputError('SIM_SCRIPT_UNREADABLE', `Cannot read sim script ${path}: ${(error as Error).message}`, {
      hint: 'Check the path.',
      cause: error,
    });
  }
  let raw: unknown;
  try {
    // JSON is a subset of YAML 1.2, so one parser reads both.
    raw = parseYaml(text);
  } catch (error) {
    throw fail(`not valid YAML or JSON: ${(error as Error).message}`, error);
  }
  const result = scriptSchema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    if (issue.code === 'unrecognized_keys') {
      const fields = issue.keys.map((key) => formatPath([...issue.path, key]));
      throw fail(`unknown field${fields.length > 1 ? 's' : ''} ${fields.join(', ')}`);
    }
    throw fail(`${formatPath(issue.path)}: ${issue.message}`);
  }
  const script = result.data;
  const models = script.models.map((model) => (typeof model === 'string' ? { name: model } : model));
  const names = new Set(models.map((model) => model.name));
  for (const name of Object.keys(script.replies ?? {})) {
    if (!names.has(name)) throw fail(`${formatPath(['replies', name])}: no model named ${JSON.stringify(name)} in models`);
  }

  const options: SimOptions = { models };
  if (script.vramGiB !== undefined) options.vramBytes = script.vramGiB * GIB;
  if (script.numParallel !== undefined) options.numParallel = script.numParallel;
  if (script.maxLoadedModels !== undefined) options.maxLoadedModels = script.maxLoadedModels;
  if (script.maxQueue !== undefined) options.maxQueue = script.maxQueue;
  if (script.loadMs !== undefined) options.loadMs = script.loadMs;
  if (script.tokenMs !== undefined) options.tokenMs = script.tokenMs;
  if (script.promptMsPerToken !== undefined) options.promptMsPerToken = script.promptMsPerToken;
  if (script.replies) options.respond = scriptedResponder(script.replies);
  return options;
}

function scriptedResponder(replies: Record<string, SimReply[]>): Responder {
  const byModel = new Map(Object.entries(replies));
  return (req) => {
    const list = byModel.get(req.model) ?? findByCanonical(byModel, req.model);
    // An empty object means "no scripted reply": the default content applies.
    if (!list) return {};
    return list[req.modelIndex % list.length]!;
  };
}

function findByCanonical(byModel: Map<string, SimReply[]>, requested: string): SimReply[] | undefined {
  const wanted = canonicalName(requested);
  for (const [name, list] of byModel) if (canonicalName(name) === wanted) return list;
  return undefined;
}
