/**
 * A monitor's line pattern: a JavaScript regular expression, checked before anything watches with it.
 * Its length is bounded, it must compile, and the constructions whose backtracking can grow
 * exponentially with a line's length are refused — a repeated group that itself repeats or alternates
 * (`(a+)+`, `(a|ab)*`) and backreferences. What is left can still be slow on a long line (polynomially), so
 * the monitor also bounds the characters of a line it matches and stops a pattern that takes too long.
 */
import { ErrandError } from '../tasks/index.js';

export class InvalidMonitorPatternError extends ErrandError {
  constructor(pattern: string, reason: string) {
    super(
      'INVALID_MONITOR_PATTERN',
      'caller',
      `Expected \`pattern\` to be a regular expression a monitor can match safely: ${reason} (got ${JSON.stringify(pattern.length > 80 ? `${pattern.slice(0, 77)}...` : pattern)})`,
      { context: { field: 'pattern', value: pattern, reason } },
    );
  }
}

interface Group {
  repeats: boolean;
  alternates: boolean;
}

/** Compiles `pattern` after the safety checks; throws `INVALID_MONITOR_PATTERN` naming what is wrong. */
export function compileMonitorPattern(pattern: string, ignoreCase: boolean, maxChars: number): RegExp {
  if (typeof pattern !== 'string' || pattern === '') {
    throw new InvalidMonitorPatternError(String(pattern), 'it is empty');
  }
  if (pattern.length > maxChars) {
    throw new InvalidMonitorPatternError(pattern, `it is longer than ${maxChars} characters`);
  }
  let compiled: RegExp;
  try {
    compiled = new RegExp(pattern, ignoreCase ? 'i' : '');
  } catch (error) {
    throw new InvalidMonitorPatternError(
      pattern,
      `it does not compile (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  const problem = backtrackingHazard(pattern);
  if (problem !== undefined) throw new InvalidMonitorPatternError(pattern, problem);
  return compiled;
}

/** Why the pattern's backtracking may explode, or undefined when it has none of the known shapes. */
function backtrackingHazard(pattern: string): string | undefined {
  const stack: Group[] = [{ repeats: false, alternates: false }];
  /** The atom a quantifier right here would apply to: a group (with what it held), or a plain atom. */
  let last: Group | 'atom' | undefined;
  let index = 0;
  while (index < pattern.length) {
    const char = pattern[index]!;
    if (char === '\\') {
      const next = pattern[index + 1] ?? '';
      if (/[1-9]/.test(next) || (next === 'k' && pattern[index + 2] === '<')) {
        return 'backreferences are not supported';
      }
      index += 2;
      last = 'atom';
      continue;
    }
    if (char === '[') {
      index = endOfClass(pattern, index);
      last = 'atom';
      continue;
    }
    if (char === '(') {
      stack.push({ repeats: false, alternates: false });
      index += 1;
      // Skip a group's prefix: (?: (?= (?! (?<= (?<! (?<name>
      if (pattern[index] === '?') {
        const prefix = /^\?(?::|=|!|<=|<!|<[A-Za-z_$][\w$]*>)/.exec(pattern.slice(index));
        index += prefix?.[0].length ?? 1;
      }
      last = undefined;
      continue;
    }
    if (char === ')') {
      const group = stack.length > 1 ? stack.pop()! : { repeats: false, alternates: false };
      const parent = stack[stack.length - 1]!;
      parent.repeats ||= group.repeats;
      parent.alternates ||= group.alternates;
      last = group;
      index += 1;
      continue;
    }
    if (char === '|') {
      stack[stack.length - 1]!.alternates = true;
      last = undefined;
      index += 1;
      continue;
    }
    const quantifier = quantifierAt(pattern, index);
    if (quantifier !== undefined) {
      if (quantifier.repeats) {
        if (typeof last === 'object' && (last.repeats || last.alternates)) {
          return 'a repeated group may not itself repeat or alternate (as in (a+)+ or (a|b)*)';
        }
        stack[stack.length - 1]!.repeats = true;
      }
      index += quantifier.length;
      // A lazy or possessive marker belongs to the quantifier.
      if (pattern[index] === '?') index += 1;
      last = undefined;
      continue;
    }
    last = 'atom';
    index += 1;
  }
  return undefined;
}

function endOfClass(pattern: string, start: number): number {
  let index = start + 1;
  if (pattern[index] === '^') index += 1;
  if (pattern[index] === ']') index += 1;
  while (index < pattern.length && pattern[index] !== ']') index += pattern[index] === '\\' ? 2 : 1;
  return index + 1;
}

/** The quantifier at `index`: how long it is and whether it can repeat its atom more than once. */
function quantifierAt(pattern: string, index: number): { length: number; repeats: boolean } | undefined {
  const char = pattern[index];
  if (char === '*' || char === '+') return { length: 1, repeats: true };
  if (char === '?') return { length: 1, repeats: false };
  if (char !== '{') return undefined;
  const braces = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(index));
  if (braces === null) return undefined;
  const low = Number(braces[1]);
  const high =
    braces[2] === undefined ? low : braces[3] === '' ? Number.POSITIVE_INFINITY : Number(braces[3]);
  return { length: braces[0].length, repeats: high > 1 };
}
