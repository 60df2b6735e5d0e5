import { main } from './main.js';

// A reader that closes the pipe early (`npx conclave show ID --json | head -1`) has what it wanted:
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

process.exitCode = await main(process.argv.slice(2));
