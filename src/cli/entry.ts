import { fastPath } from './fast-path.js';
import { processIO } from './io.js';

// A reader that closes the pipe early (`conclave show ID --json | head -1`) has what it wanted:
// end quietly and successfully rather than with a stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') process.exit(0);
  throw err;
});
// Without anyone reading progress, a command still does its work and writes its results.
process.stderr.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') return;
  throw err;
});

// The everyday reading commands skip loading yargs when their command line is plain.
const argv = process.argv.slice(2);
process.exitCode = (await fastPath(argv, processIO())) ?? (await (await import('./main.js')).main(argv));
