/** Text utilities: UTF-8 budgets and file tails, line helpers, XML escaping, truncation markers. */
export { readFileTail } from './file-tail.js';
export { type FitTailOptions, fitTail } from './fit-tail.js';
export { lastLines, shortenText, stripTerminalEscapes, toSingleLine } from './lines.js';
export {
  BARE_TRUNCATION_MARKER,
  findTruncationMarkers,
  formatTruncationMarker,
  type LocatedTruncationMarker,
  parseTruncationMarker,
  TRUNCATION_MARKER_PATTERN,
  type TruncationMarker,
} from './truncation-marker.js';
export { truncateUtf8Head, truncateUtf8Tail, utf8ByteLength } from './utf8.js';
export {
  completeUtf8Length,
  isContinuationByte,
  leadingContinuationBytes,
  utf8SequenceLength,
} from './utf8-bytes.js';
export { escapeXmlAttribute, escapeXmlText, replaceInvalidXmlChars } from './xml.js';
