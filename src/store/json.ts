/**
 * JSON columns: strict validation before a value is written (so what is read back equals what was
 * written), size-checked serialization, and defensive parsing that names the row a corrupt value is in.
 */
import { InvalidArgumentError } from '../tasks/index.js';
import { StoreRecordCorruptError, StoreRecordTooLargeError } from './errors.js';

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | readonly JsonValue[] | JsonObject;
export interface JsonObject {
  readonly [key: string]: JsonValue | undefined;
}

const MAX_JSON_DEPTH = 64;

function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** A JSON copy of `value` (what `JSON.stringify` keeps), or undefined when it cannot be serialized. */
export function jsonCopy(value: unknown): JsonValue | undefined {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : (JSON.parse(text) as JsonValue);
  } catch {
    return undefined;
  }
}

/** Throws `INVALID_ARGUMENT` naming the path of the first value JSON cannot represent exactly. */
export function validateJson(field: string, value: unknown, depth = 0): asserts value is JsonValue {
  if (depth > MAX_JSON_DEPTH) {
    throw new InvalidArgumentError(field, `JSON nested at most ${MAX_JSON_DEPTH} levels deep`, value);
  }
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new InvalidArgumentError(field, 'a finite number', value);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      validateJson(`${field}[${index}]`, item, depth + 1);
    });
    return;
  }
  if (typeof value === 'object' && isPlainObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      // An absent optional property: JSON drops it, and so does the store.
      if (item === undefined) continue;
      validateJson(`${field}.${key}`, item, depth + 1);
    }
    return;
  }
  throw new InvalidArgumentError(
    field,
    'a JSON value (null, boolean, finite number, string, array, plain object)',
    value,
  );
}

/** UTF-8 size of a text field, checked against the store's limit. */
export function checkTextSize(field: string, text: string, maxBytes: number): void {
  // A UTF-8 character takes at most 3 bytes per UTF-16 code unit, so short texts skip the count.
  if (text.length * 3 <= maxBytes) return;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) throw new StoreRecordTooLargeError(field, bytes, maxBytes);
}

/** Validates and serializes a JSON value, enforcing the size limit on the serialized text. */
export function serializeJson(field: string, value: unknown, maxBytes: number): string {
  validateJson(field, value);
  const text = JSON.stringify(value);
  checkTextSize(field, text, maxBytes);
  return text;
}

/** `serializeJson` for a value that must be a plain JSON object (one walk for both checks). */
export function serializeJsonObject(field: string, value: unknown, maxBytes: number): string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(field, 'a plain JSON object', value);
  }
  return serializeJson(field, value, maxBytes);
}

export interface ColumnLocation {
  readonly table: string;
  readonly key: string;
  readonly column: string;
}

/** Parses a stored JSON column; a corrupt value throws `STORE_RECORD_CORRUPT` naming the table and key. */
export function parseJsonColumn(location: ColumnLocation, text: unknown): JsonValue {
  if (typeof text !== 'string') {
    throw new StoreRecordCorruptError(location, `expected JSON text, found ${typeof text}`);
  }
  try {
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    throw new StoreRecordCorruptError(location, 'the stored JSON does not parse', error);
  }
}

export function parseJsonObjectColumn(location: ColumnLocation, text: unknown): JsonObject {
  const value = parseJsonColumn(location, text);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new StoreRecordCorruptError(location, 'expected a JSON object');
  }
  return value as JsonObject;
}
