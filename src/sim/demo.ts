import type { Preset } from '../config/preset-schema.js';
import { synthesizerCandidates } from '../config/synthesizer.js';
import { arithmeticReply } from './demo-arithmetic.js';
import { demoClaims, demoClashes, demoClashUpdates, demoMap, demoTargeted, demoTensionSynthesis, lastRoundAdvocates } from './demo-tensions.js';
import { demoArtifact, demoFindings, demoObservations } from './demo-pipeline.js';
import { demoReassembly, demoSplit, demoSubAnswer, demoVerdict } from './demo-protocols.js';
import { demoDelphi, demoDelphiSynthesis } from './demo-delphi.js';
import { CLUSTER_ARCHETYPES, demoRefine, demoVote } from './demo-vote.js';
import { demoOxfordAnswer, demoOxfordOpening, demoOxfordSynthesis, demoOxfordVerdict } from './demo-oxford.js';
import type { Responder, SimModel, SimRequest } from './server.js';

/**
 * A scripted panel for the no-GPU demo and for trying presets against the simulator:
 * agents start apart (stay / migrate / conditional), move toward a conditional answer,
 * the judge's scores rise round by round, and the synthesizer keeps the dissent.
 * It recognises each stage by the fields of the requested JSON schema, and derives every
 * reply from the request (stage, round, agent), so the same debate gets the same answers
 * however many debates the server has seen. Arithmetic bench items are answered by the
 * panel in demo-arithmetic.ts. A request no script covers gets JSON generated from its
 * schema, as Ollama would constrain any model to.
 */

interface Archetype {
  opening: { position: string; reasoning: string; confidence: number };
  updates: string[];
  confidence: number[];
  /** What it agrees with a peer on, in round 1 and in round 2. */
  agrees: [string, string];
  /** Its one disagreement in round 1: each archetype has its own point against another part of the panel. */
  disagrees: { on: string; reason: string };
}

const ARCHETYPES: Archetype[] = [
  {
    opening: {
      position: 'Stay on SQLite. At this size the operational simplicity of one file beats scaling headroom the tool does not need.',
      reasoning: 'The tool has a handful of writers; SQLite in WAL mode handles well over a hundred writes per second. Postgres adds a server to run, back up and patch.',
      confidence: 72,
    },
    updates: [
      'Stay on SQLite for now, and add a thin typed data-access layer so a later move is cheap. I accept the point that the move should be planned, not rushed.',
      'Stay on SQLite with a typed data-access layer; migrate once sustained concurrent writers pass about 50 per second or a second service needs the data.',
    ],
    confidence: [78, 84],
    agrees: ['planning the migration rather than rushing it', 'a migration trigger near 50 sustained writers per second'],
    disagrees: {
      on: 'how much abstraction to build now',
      reason: 'a full repository layer with portable SQL is work the tool may never need; a thin typed data-access layer keeps a later move cheap at a fraction of the cost',
    },
  },
  {
    opening: {
      position: 'Migrate to Postgres now, while the data is small and the migration is cheap.',
      reasoning: 'Migrations get harder as data and features grow; a rushed migration under load is the expensive case. Postgres also gives roles, replication and richer types.',
      confidence: 66,
    },
    updates: [
      'Migrate when concurrent writers exceed about 50 per second, not today; but set the trigger now and rehearse the migration once so it is not rushed.',
      'Stay on SQLite until a clear trigger (about 50 sustained writers per second, or a second service reading the data), with a rehearsed migration path ready.',
    ],
    confidence: [70, 80],
    agrees: ['managing the cost of a later move now', 'a written trigger for migrating, with the move rehearsed beforehand'],
    disagrees: {
      on: 'whether to prepare the migration now',
      reason: 'staying is right for today, but a trigger set only once the load arrives means migrating in a rush; set it now and rehearse the move once',
    },
  },
  {
    opening: {
      position: 'Stay on SQLite but put an abstraction layer in front of it now, so that a move to Postgres later is a configuration change rather than a rewrite.',
      reasoning: 'The deciding factor is the cost of a future migration, not today\'s load. A repository layer and portable SQL keep both options open.',
      confidence: 75,
    },
    updates: [
      'Stay on SQLite with a repository layer and portable SQL; define the triggers for migrating in writing.',
      'Stay on SQLite with a repository layer; revisit when writers exceed about 50 per second or Postgres-only features are needed.',
    ],
    confidence: [80, 86],
    agrees: ['staying on SQLite for now', 'staying on SQLite until a measured trigger'],
    disagrees: {
      on: 'migrating now while the data is small',
      reason: 'what a later migration costs depends on how tightly the code is tied to SQLite, not on the size of the data; a repository layer removes the urgency',
    },
  },
];

/** What the cluster-vote panel agrees and disagrees on in its critiques. */
const CLUSTER_TALK: Pick<Archetype, 'agrees' | 'disagrees'> = {
  agrees: ['SQLite comfortably handles the current write load', 'SQLite comfortably handles the current write load'],
  disagrees: { on: 'how soon to migrate', reason: 'the migration cost grows with data, but so does the cost of running Postgres; the trigger should be measured load' },
};

const JUDGE_SCORES = [
  { rationale: 'Three different recommendations: stay, migrate now, stay behind an abstraction. They share the facts about write load.', recommendation: 35, facts: 50, caveats: 38 },
  { rationale: 'All now lean to staying on SQLite for the moment; they still differ on when to migrate and how to prepare.', recommendation: 75, facts: 78, caveats: 69 },
  { rationale: 'All recommend staying on SQLite with a migration trigger near 50 concurrent writers per second.', recommendation: 92, facts: 88, caveats: 87 },
];

function schemaKeys(format: unknown): Set<string> {
  const props = (format as { properties?: Record<string, unknown> } | null)?.properties;
  return new Set(props ? Object.keys(props) : []);
}

function peerIds(req: SimRequest): string[] {
  const text = req.messages.at(-1)?.content ?? '';
  const match = /Peer ids: ([^\n]*?)\.?$/m.exec(text);
  return match?.[1] ? match[1].split(',').map((s) => s.trim()).filter(Boolean) : [];
}

function judgedRound(req: SimRequest): number {
  const match = /Positions after round (\d+)/.exec(req.messages.at(-1)?.content ?? '');
  return match ? Number(match[1]) : 0;
}

/** The ids of the positions the judge is shown, in order. */
function judgedIds(req: SimRequest): string[] {
  return [...(req.messages.at(-1)?.content ?? '').matchAll(/^\[([^\]\s]+)\]/gm)].map((m) => m[1]!);
}

/**
 * A panel that conforms: at round 0 the "stay" agents form the majority and the "migrate now"
 * agent stands apart; from round 1 it joins them, as the positions scripted above do.
 */
function demoStances(round: number, ids: string[], place: (id: string) => number): { id: string; summary: string; agents: string[] }[] {
  const migrators = round === 0 ? ids.filter((id) => place(id) === 1) : [];
  const stayers = ids.filter((id) => !migrators.includes(id));
  return [
    ...(stayers.length ? [{ id: 'S1', summary: round === 0 ? 'Stay on SQLite for now.' : 'Stay on SQLite, with a measured trigger for migrating.', agents: stayers }] : []),
    ...(migrators.length ? [{ id: 'S2', summary: 'Migrate to Postgres now, while it is cheap.', agents: migrators }] : []),
  ];
}

/** How the panel answers last round's devil's advocate: heard, and not persuaded. */
const ANSWER_TO_ADVOCATE = 'the cost of waiting is real, but a data-access layer keeps it small, and a trigger on measured load is still better grounded than a date picked today';

/** The advocate's case against the majority, by critique round: each round's advocate attacks the majority it was shown. */
const ADVOCACY = [
  {
    reason: 'every month on SQLite adds data and SQLite-specific code to port, so "for now" quietly makes the move dearer',
    position:
      'Migrate to Postgres now. "For now" has no end date: each month adds data and SQLite-specific queries to port, and the move will be forced at the worst moment, once the load has already arrived.',
  },
  {
    reason: 'a trigger on measured load fires only once the load is there, and a migration takes weeks',
    position:
      'A trigger on measured load fires too late. A migration takes weeks, so a move that starts when sustained writers reach about 50 per second runs at the limit, under load, with the most data the tool has ever held. Set a date for the move instead, and rehearse it before then.',
  },
];

/**
 * The round's devil's advocate (docs/protocol-advocate.md): it argues against the majority its
 * brief names, disagrees with the peers who hold that majority and agrees with those who do not,
 * and maintains every clash it is shown, since it argues a brief rather than its own view.
 */
function demoAdvocate(req: SimRequest, round: number, withClashes: boolean): string {
  const text = req.messages.at(-1)?.content ?? '';
  const majority = /^The majority of the panel holds: (.*)$/m.exec(text)?.[1]?.trim() ?? 'the position most of the panel leans towards';
  const peers = peerIds(req);
  const holders = peers.filter((p) => shownPosition(req, p).startsWith('Stay on SQLite'));
  const against = holders.length ? holders : peers;
  const case_ = ADVOCACY[(Math.max(1, round) - 1) % ADVOCACY.length]!;
  return JSON.stringify({
    agreements: peers.filter((p) => !against.includes(p)).map((p) => ({ with: p, on: 'the cost of waiting: a later move is made with more data and under more pressure' })),
    disagreements: against.map((p) => ({ with: p, on: `the majority's position, "${majority.replace(/\.$/, '')}"`, reason: case_.reason })),
    updatedPosition: case_.position,
    confidence: 55,
    ...(withClashes ? { clashUpdates: demoClashUpdates(req, round, false) } : {}),
  });
}

/** A peer's position as the critique prompt shows it: the line after its `[id]` header. */
function shownPosition(req: SimRequest, id: string): string {
  const lines = (req.messages.at(-1)?.content ?? '').split('\n');
  const at = lines.findIndex((l) => l.startsWith(`[${id}]`));
  return at < 0 ? '' : (lines[at + 1] ?? '');
}

/** Whether a position shown is a devil's advocate's case from the round before, which the panel answers as such. */
function isAdvocacy(position: string): boolean {
  return ADVOCACY.some((a) => a.position === position);
}

function roundOf(req: SimRequest): number {
  const match = /critique round (\d+)/.exec(req.messages.at(-1)?.content ?? '');
  return match ? Number(match[1]) : 0;
}

/** A responder that plays the panel of `preset` (agents are told apart by their persona text). */
export function demoResponder(presets: Preset | Preset[]): Responder {
  const all = Array.isArray(presets) ? presets : [presets];
  const preset = all[0]!;
  const personaIndex = new Map<string, number>();
  // Agents with a cluster play the cluster-vote panel (src/sim/demo-vote.ts).
  const clustered = new Set<string>();
  // A pipeline reviewer's place among its preset's reviewers picks its script (src/sim/demo-pipeline.ts).
  const reviewerIndex = new Map<string, number>();
  for (const p of all) {
    p.agents
      .filter((a) => a.persona && (a.role ?? 'reviewer') === 'reviewer' && p.protocol.kind === 'pipeline')
      .forEach((a, i) => {
        if (!reviewerIndex.has(a.persona!.trim())) reviewerIndex.set(a.persona!.trim(), i);
      });
  }
  for (const p of all) {
    p.agents.forEach((a, i) => {
      if (a.persona && !personaIndex.has(a.persona.trim())) personaIndex.set(a.persona.trim(), i);
      if (a.persona && a.cluster) clustered.add(a.persona.trim());
    });
  }
  return (req) => {
    const keys = schemaKeys(req.format);
    const arithmetic = arithmeticReply(req, keys);
    if (arithmetic !== null) return arithmetic;
    const system = req.messages.find((m) => m.role === 'system')?.content.trim() ?? '';
    const index = personaIndex.get(system) ?? 0;
    const inCluster = clustered.has(system);
    const arch = inCluster ? CLUSTER_ARCHETYPES[index % CLUSTER_ARCHETYPES.length]! : ARCHETYPES[index % ARCHETYPES.length]!;
    if (keys.has('observations')) return demoObservations(req, reviewerIndex.get(system) ?? 0) ?? {};
    if (keys.has('findings')) return demoFindings(req);
    if (keys.has('document') && keys.has('title')) return demoArtifact();
    if (keys.has('vote')) return demoVote(req, index, inCluster);
    if (keys.has('refinedPosition')) return demoRefine(req, index, inCluster);
    // The tension map's stages (src/sim/demo-tensions.ts), told apart by their schema fields.
    if (keys.has('claims')) {
      // The panel whose agent is named, so `conclave sim` (every built-in preset) plays each one's own claims.
      const named = /^Panelist: (\S+)$/m.exec(req.messages.at(-1)?.content ?? '')?.[1] ?? '';
      const owner = all.find((p) => p.agents.some((a) => a.id === named)) ?? preset;
      return demoClaims(req, owner.agents.map((a) => a.id));
    }
    if (keys.has('clashes')) return demoClashes(req);
    if (keys.has('stance') && keys.has('revisedClaim')) return demoTargeted(req, index);
    if (keys.has('majorFindings')) return demoMap(req);
    // An Oxford debate's speeches, verdict and synthesis (src/sim/demo-oxford.ts).
    if (keys.has('strongestFor')) return demoOxfordVerdict(req);
    // Sides alternate in panel order, so an agent's place within its side is half its place in the panel.
    const oxford = keys.has('position') ? demoOxfordOpening(req, index >> 1) : keys.has('updatedPosition') ? demoOxfordAnswer(req, index >> 1) : null;
    if (oxford) return oxford;
    // The tournament's verdicts and the decomposition's split and parts (src/sim/demo-protocols.ts).
    if (keys.has('winner') && keys.has('reasons')) {
      const rank = (id: string): number => [2, 0, 1].indexOf(preset.agents.findIndex((a) => a.id === id) % ARCHETYPES.length);
      return demoVerdict(req, rank);
    }
    if (keys.has('subQuestions')) return demoSplit();
    // A Delphi panel's anonymous rounds (src/sim/demo-delphi.ts).
    if (keys.has('answer') && keys.has('reason')) return demoDelphi(req, index, keys.has('estimate'));
    if (keys.has('position')) return demoSubAnswer(req) ?? JSON.stringify(arch.opening);
    if (keys.has('updatedPosition')) {
      const round = roundOf(req);
      // The debate's devil's advocate of this round (docs/protocol-advocate.md) argues against the majority.
      if ((req.messages.at(-1)?.content ?? '').includes("the panel's devil's advocate")) return demoAdvocate(req, round, keys.has('clashUpdates'));
      const peers = peerIds(req);
      const step = Math.min(round, arch.updates.length) - 1;
      // A peer who was the devil's advocate last round is answered on its case, not agreed with.
      const advocates = peers.filter((p) => isAdvocacy(shownPosition(req, p)));
      const agreeWith = peers.filter((p, i) => (i + index) % 2 === 0 && !advocates.includes(p));
      const disagreeWith = round === 1 ? peers.filter((p) => !agreeWith.includes(p) && !advocates.includes(p)).slice(0, 1) : [];
      // The cluster-vote panel's archetypes (src/sim/demo-vote.ts) share one way of putting it.
      const talk = 'agrees' in arch ? arch : CLUSTER_TALK;
      return JSON.stringify({
        agreements: agreeWith.map((p) => ({ with: p, on: talk.agrees[round >= 2 ? 1 : 0] })),
        disagreements: [
          ...disagreeWith.map((p) => ({ with: p, ...talk.disagrees })),
          ...advocates.map((p) => ({ with: p, on: "the devil's advocate's case against the majority", reason: ANSWER_TO_ADVOCATE })),
        ],
        updatedPosition: arch.updates[Math.max(0, step)],
        confidence: arch.confidence[Math.max(0, step)],
        ...(keys.has('clashUpdates') ? { clashUpdates: demoClashUpdates(req, round) } : {}),
      });
    }
    if (keys.has('facts') && keys.has('caveats')) {
      const score = JUDGE_SCORES[Math.min(judgedRound(req), JUDGE_SCORES.length - 1)]!;
      if (!keys.has('stances')) return JSON.stringify(score);
      const place = (id: string): number => {
        const owner = all.find((p) => p.agents.some((a) => a.id === id)) ?? preset;
        return owner.agents.findIndex((a) => a.id === id) % ARCHETYPES.length;
      };
      return JSON.stringify({ ...score, stances: demoStances(judgedRound(req), judgedIds(req), place) });
    }
    if (keys.has('triggersToRevisit')) {
      const reassembly = demoReassembly(req);
      if (reassembly) return reassembly;
      const listed = /Panelists: ([^\n]*)/.exec(req.messages.at(-1)?.content ?? '')?.[1];
      const ids = listed ? listed.split(',').map((s) => s.trim()) : preset.agents.map((a) => a.id);
      const oxfordSynthesis = demoOxfordSynthesis(req, ids);
      if (oxfordSynthesis) return oxfordSynthesis;
      const delphi = demoDelphiSynthesis(req, ids);
      if (delphi) return delphi;
      const withTensions = demoTensionSynthesis(req, ids);
      if (withTensions) return withTensions;
      const migrator = preset.agents.find((_, i) => i % ARCHETYPES.length === 1)?.id;
      return JSON.stringify({
        recommendation: 'Stay on SQLite for now. Put a typed data-access layer in front of it so a later move to Postgres is cheap.',
        triggersToRevisit: [
          'Sustained concurrent writers above about 50 per second',
          'A second service needs to read or write the same data',
          'A feature needs Postgres-only types or extensions',
        ],
        confidence: { level: 'high', converged: ids.length },
        // Not an advocate whose last turn argued by assignment.
        restsOn: ids.filter((id) => !lastRoundAdvocates(req).has(id)),
        // Credited to the agent that argued it: the one playing the "migrate now" part, when it is among those synthesised.
        minorityPositions: migrator && ids.includes(migrator)
          ? [
              {
                agent: migrator,
                round: 0,
                argument: 'Migrate immediately, while the data is small, to avoid a rushed migration later.',
                whyItMatters: 'If the triggers are crossed quietly, the team ends up migrating under load, which is the costly case this argument warned about.',
              },
            ]
          : [],
        failedAgents: [],
      });
    }
    // No script covers it: an empty reply object makes the server generate JSON from the schema sent.
    if (req.format) return {};
    return 'This is the Conclave simulator.';
  };
}

/** Simulated models for every model a preset names, with plausible sizes. */
export function simModelsFor(presets: Preset[]): SimModel[] {
  const names = new Set<string>();
  for (const p of presets) {
    for (const a of p.agents) names.add(a.model);
    names.add(p.judge.model);
    for (const m of synthesizerCandidates(p)) names.add(m);
    if (p.tensions?.model) names.add(p.tensions.model);
  }
  return [...names].map((name) => ({ name, sizeBytes: guessSize(name), contextLength: 32768, ...(thinksByName(name) ? { capabilities: ['completion', 'thinking'], thinkingTokens: DEMO_THINKING_TOKENS } : {}) }));
}

/** Model families that think first in Ollama (the `thinking` capability); the simulator gives them the same. */
const THINKING_FAMILIES = /^(qwen3|deepseek-r1|gpt-oss|magistral|phi4-reasoning|qwq|cogito)(?![\w.-]*-instruct)/i;

/** Thinking tokens a demo model streams before each answer: far fewer than real models, so the demo stays short. */
const DEMO_THINKING_TOKENS = 300;

export function thinksByName(name: string): boolean {
  return THINKING_FAMILIES.test(name);
}

function guessSize(name: string): number {
  const b = /(\d+(?:\.\d+)?)b\b/i.exec(name);
  const params = b ? Number(b[1]) : 7;
  // Q4 quantisation: a little over half a byte per parameter.
  return Math.round(params * 0.6e9 + 0.3e9);
}
