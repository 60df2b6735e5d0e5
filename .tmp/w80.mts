import { runCli } from '../test/helpers/cli.js';
for (const preset of ['tech-decision', 'tension-map', 'code-review', 'tournament', 'decompose', 'cluster-vote', 'thinking']) {
  const r = await runCli(['demo', '--preset', preset, '--db', `/tmp/w80-${preset}.db`, '--token-ms', '0', '--constraint', 'Keep the downtime of any migration step under thirty minutes at all times'], '/tmp', 80);
  const long = [...r.stderr.split('\n'), ...r.stdout.split('\n')].map((l) => l.replace(/\x1b\[[0-9;]*m/g, '')).filter((l) => [...l].length > 80);
  console.log(preset, r.code, long.length);
  for (const l of long.slice(0, 6)) console.log('   ', [...l].length, l.slice(0, 100));
}
