import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventRing } from './event-ring.js';

describe('EventRing', () => {
  it('replays exactly the events after any id it still holds, and resets otherwise', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.nat(30),
        fc.integer({ min: -2, max: 35 }),
        (capacity, count, lastId) => {
          const ring = new EventRing<{ id: number }>(capacity);
          for (let id = 1; id <= count; id += 1) ring.push({ id });
          const result = ring.since(lastId);
          if (lastId < 0 || lastId > count) {
            expect(result).toEqual({ kind: 'reset', reason: 'unknown_id' });
          } else if (count - lastId > capacity) {
            expect(result).toEqual({ kind: 'reset', reason: 'too_far_behind' });
          } else {
            const expected = [];
            for (let id = lastId + 1; id <= count; id += 1) expected.push({ id });
            expect(result).toEqual({ kind: 'events', events: expected });
          }
          expect(ring.size).toBe(Math.min(count, capacity));
          expect(ring.latestId).toBe(count);
        },
      ),
    );
  });
});
