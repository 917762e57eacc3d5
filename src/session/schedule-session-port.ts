/**
 * A session as a schedule sees it: its run state, and automated turns whose tools the schedule restricts
 * (through the `AutomatedTurns` gate the session's tools are wrapped in). An automated turn is a turn of
 * the session like any other — its messages are in the conversation, its ending is the firing's outcome.
 */
import type { ScheduleSessionPort } from '../producers/schedule/index.js';
import { escapeXmlText } from '../text/index.js';
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

/**
 * For sessions whose model is outside the runtime (an MCP client): a firing cannot start a turn, so it is
 * delivered like any other notification — with the next tool result, or through the client's hooks — as a
 * `<task-notification>` with status `fired`, once per firing (its idempotency key names the firing). The
 * client's model acts on it in its own turn, with its own tools: the schedule's tool list cannot bind it,
 * and the notification says so.
 */
export function notifyingSchedulePort(session: Session): ScheduleSessionPort {
  return {
    state: () => session.state,
    onState(listener) {
      return session.on((event) => {
        if (event.type === 'state') listener(event.state);
      });
    },
    async runAutomatedTurn({ scheduleId, instruction, firing, note }) {
      const text = [
        '<task-notification>',
        `<task-id>${escapeXmlText(scheduleId)}</task-id>`,
        '<status>fired</status>',
        `<summary>${escapeXmlText(instruction)}</summary>`,
        // Firings missed or interrupted while no runtime ran the schedule: told once, with this firing.
        ...(note === undefined ? [] : [`<note>${escapeXmlText(note)}</note>`]),
        '<collect>A schedule you set fired: do what it asks now. Stop it with task_kill.</collect>',
        '</task-notification>',
      ].join('\n');
      const admission = session.deliverNotification({
        taskId: scheduleId,
        label: `${scheduleId} fired`,
        text,
        // Like the client's other endings: with the next tool result, or at a client hook's moment.
        lane: 'quiet',
        branchGeneration: session.branchGeneration,
        idempotencyKey: `schedule:${scheduleId}:firing:${firing}`,
        ending: false,
      });
      return admission.admitted
        ? 'delivered to the client as a notification'
        : `not delivered (${admission.reason})`;
    },
  };
}
