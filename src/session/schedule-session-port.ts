/**
 * A session as a schedule sees it: its run state, and automated turns whose tools the schedule restricts
 * (through the `AutomatedTurns` gate the session's tools are wrapped in). An automated turn is a turn of
 * the session like any other — its messages are in the conversation, its ending is the firing's outcome.
 */
import type { ScheduleSessionPort } from '../producers/schedule/index.js';
import type { AutomatedTurns } from '../tools/index.js';
import type { Session } from './session.js';

export function scheduleSessionPort(session: Session, automated: AutomatedTurns): ScheduleSessionPort {
  return {
    state: () => session.state,
    onState(listener) {
      return session.on((event) => {
        if (event.type === 'state') listener(event.state);
      });
    },
    async runAutomatedTurn({ scheduleId, prompt, allowed }) {
      const end = automated.begin(session.id, { schedule: scheduleId, allowed });
      try {
        const outcome = await session.send(prompt);
        const text = outcome.text.replace(/\s+/g, ' ').trim();
        return outcome.error === undefined
          ? `turn ${outcome.reason}${text === '' ? '' : `: ${text.slice(0, 300)}`}`
          : `turn ${outcome.reason}: ${outcome.error}`;
      } finally {
        end();
      }
    },
  };
}
