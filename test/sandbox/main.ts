// `npm run sandbox`: the whole product on this machine, with live progress and a summary.
import 'reflect-metadata';
import { useTimeScaleForLoad } from '../harness/time-scale';
import { OptionsError, USAGE, parseSandboxOptions } from './options';
import { cleanRun, renderReport } from './report';
import { runRealNodeSandbox } from './real-node';
import { runSandbox } from './sandbox';

async function main(): Promise<number> {
  process.stderr.write(`[sandbox] ${useTimeScaleForLoad()}\n`);
  let options;
  try {
    // --real-node (test/sandbox/real-node.ts): the same workload on a real kubelet and containerd.
    options = parseSandboxOptions(process.argv.slice(2).filter((arg) => arg !== '--real-node'));
  } catch (err) {
    if (err instanceof OptionsError) {
      process.stderr.write(`${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    throw err;
  }
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  // The first Ctrl-C stops the run where it is, cleans up and still prints the summary; a second one
  // gives up on the cleanup (the control plane's exit handler and reaper still kill what it started).
  const interrupt = new AbortController();
  let interrupts = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    interrupts += 1;
    if (interrupts === 1) {
      process.stderr.write(
        `\n${signal}: stopping the sandbox and cleaning up (again to give up on the cleanup)\n`,
      );
      interrupt.abort();
      return;
    }
    process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  const run = process.argv.includes('--real-node') ? runRealNodeSandbox : runSandbox;
  const report = await run(options, {
    out: process.stdout,
    tty: process.stdout.isTTY === true,
    signal: interrupt.signal,
  });
  process.stdout.write(renderReport(report));
  const clean = cleanRun(report);
  // Failures asked for (--fail-share, --exit7-share) are not the product's fault.
  const failuresAsked = options.failShare > 0 || options.exit7Share > 0;
  const cleanBarFailures = cleanRun({ ...report, failed: 0 });
  return report.aborted ? 130 : clean || (failuresAsked && cleanBarFailures) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `sandbox failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
