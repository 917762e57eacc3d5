/**
 * How many commands of this process are ending: their leader's exit was heard and their ending (the
 * pipes read to their end, leftovers stopped, the output file closed) has not settled yet. A hint for
 * whoever batches endings: a session that is told of one ending while others are on their way waits for
 * them, and one told of a lone ending tells it at once (`DrainScheduler`). Counted per process, across
 * runtimes: another runtime's endings only make a session wait as long as it would without the hint.
 */

let underway = 0;

/** Commands whose exit was heard and whose ending has not settled. */
export function endingsUnderway(): number {
  return underway;
}

/** A command's exit was heard: counted until the returned `settled` is called (once; later calls do nothing). */
export function endingBegan(): () => void {
  underway += 1;
  let settled = false;
  return () => {
    if (settled) return;
    settled = true;
    underway -= 1;
  };
}
