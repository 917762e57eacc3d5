import { describe, expect, it } from 'vitest';
import { nextCronTime, parseCron } from './cron.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

describe('parseCron', () => {
  it('parses numbers, ranges, steps, lists and shorthands', () => {
    const cron = parseCron('*/15 9-17 * * 1-5');
    expect([...cron.minutes]).toEqual([0, 15, 30, 45]);
    expect([...cron.hours]).toEqual([9, 10, 11, 12, 13, 14, 15, 16, 17]);
    expect([...cron.weekdays]).toEqual([1, 2, 3, 4, 5]);
    expect([...parseCron('0 0 * * 7').weekdays]).toEqual([0]);
    expect([...parseCron('5,10-12/2 * * * *').minutes]).toEqual([5, 10, 12]);
    expect([...parseCron('@daily').hours]).toEqual([0]);
  });

  it('refuses malformed expressions and unknown zones, naming the field', () => {
    expect(() => parseCron('* * * *')).toThrow(/INVALID_CRON|4 fields/);
    expect(() => parseCron('60 * * * *')).toThrow(/minute field/);
    expect(() => parseCron('*/0 * * * *')).toThrow(/zero step/);
    expect(() => parseCron('a * * * *')).toThrow(/minute field has "a"/);
    expect(() => parseCron('* * * * *', 'Mars/Olympus')).toThrow(/time_zone/);
    try {
      parseCron('* * * 13 *');
    } catch (error) {
      expect((error as { code: string }).code).toBe('INVALID_CRON');
    }
  });
});

describe('nextCronTime', () => {
  it('finds the next matching minute strictly after a time', () => {
    const cron = parseCron('*/15 * * * *');
    expect(iso(nextCronTime(cron, at('2026-12-04T10:07:30Z')))).toBe('2026-12-04T10:15:00.000Z');
    expect(iso(nextCronTime(cron, at('2026-12-04T10:15:00Z')))).toBe('2026-12-04T10:30:00.000Z');
  });

  it('evaluates in the time zone, across days, months and DST', () => {
    // 07:00 every morning in Berlin: 06:00 UTC in winter, 05:00 UTC in summer.
    const morning = parseCron('0 7 * * *', 'Europe/Berlin');
    expect(iso(nextCronTime(morning, at('2026-12-04T10:00:00Z')))).toBe('2026-12-05T06:00:00.000Z');
    expect(iso(nextCronTime(morning, at('2026-07-01T10:00:00Z')))).toBe('2026-07-02T05:00:00.000Z');
    // Weekdays only: Friday evening → Monday.
    const weekdays = parseCron('30 9 * * 1-5', 'America/New_York');
    expect(iso(nextCronTime(weekdays, at('2026-12-04T20:00:00Z')))).toBe('2026-12-07T14:30:00.000Z');
    // The 1st of a month.
    expect(iso(nextCronTime(parseCron('0 0 1 * *'), at('2026-12-04T00:00:00Z')))).toBe(
      '2027-01-01T00:00:00.000Z',
    );
    // 02:30 does not exist in Berlin on 2027-03-28 (clocks jump 02:00 → 03:00): the next day's.
    const skipped = parseCron('30 2 * * *', 'Europe/Berlin');
    expect(iso(nextCronTime(skipped, at('2027-03-27T12:00:00Z')))).toBe('2027-03-29T00:30:00.000Z');
  });

  it('uses either day field when both are restricted, and answers undefined for a date that never comes', () => {
    // The 13th, or any Friday.
    const cron = parseCron('0 12 13 * 5');
    expect(iso(nextCronTime(cron, at('2026-12-05T00:00:00Z')))).toBe('2026-12-11T12:00:00.000Z');
    expect(nextCronTime(parseCron('0 0 30 2 *'), at('2026-01-01T00:00:00Z'))).toBeUndefined();
  });
});
