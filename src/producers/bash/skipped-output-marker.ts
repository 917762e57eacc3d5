/**
 * The line that stands where output was skipped: how many bytes, and where the full output is.
 * Same shape as Errand's truncation marker, so the task tools' output limit recognises and absorbs it:
 *
 *     [... 1048576 bytes skipped; full output: /tmp/errand-bash-Xy12/AbC.log ...]
 */

export function formatSkippedOutputMarker(skippedBytes: number, outputFile?: string | null): string {
  const unit = skippedBytes === 1 ? 'byte' : 'bytes';
  const file = outputFile?.replace(/[\r\n]+/g, ' ').trim();
  return file
    ? `[... ${skippedBytes} ${unit} skipped; full output: ${file} ...]`
    : `[... ${skippedBytes} ${unit} skipped ...]`;
}

/** `text` preceded by a marker line when bytes were skipped before it. */
export function withSkippedOutputMarker(
  text: string,
  skippedBytes: number,
  outputFile?: string | null,
): string {
  if (skippedBytes <= 0) return text;
  return `${formatSkippedOutputMarker(skippedBytes, outputFile)}\n${text}`;
}
