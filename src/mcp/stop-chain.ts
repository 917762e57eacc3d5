/**
 * The run of end-of-turn blocks a client hook made in a row, for one session: how many, and the last
 * block's hand-over while it is not known to have reached the model. A client may discard a block
 * (Claude Code overrides a Stop hook past `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP` and throws that block
 * away), so a block's reservation is held here instead of being committed; the client's next hook says
 * what happened to it:
 *
 * - an end-of-turn hook with `stopHookActive`, or a tool hook: the model continued with the block — it is
 *   committed (recorded delivered, its running tasks counted as told);
 * - a prompt hook (unless the client sends a block's reason as the next prompt, as Gemini CLI does: then
 *   the prompt is the continuation), or an end-of-turn hook without `stopHookActive`: the turn ended without it — it is
 *   released to the head of the queue for this very hook to hand over, and the run starts again at 0.
 *
 * Blocks are counted here too, so a hook never asks for one past the client's cap.
 */
import type { HookMoment } from '../hooks/index.js';
import type { NotificationReservation } from '../session/index.js';

/** A block printed, waiting for the client's next hook to show whether it reached the model. */
export interface TentativeBlock {
  readonly reservation: NotificationReservation | undefined;
  /** Running tasks the block told of. */
  readonly told: readonly string[];
}

export interface StopChainEvidence {
  readonly moment: HookMoment;
  readonly stopHookActive: boolean;
  /** The client sends a block's reason as the next prompt: a prompt hook after a block continues it. */
  readonly promptContinues: boolean;
}

export interface StopChainPorts {
  /** Records the block's tasks as told (they stop holding the turn). */
  readonly told: (taskIds: readonly string[]) => void;
  /** A commit that failed (the store): the notifications go back; the model may see them twice. */
  readonly commitFailed: (error: unknown) => void;
}

export class StopChain {
  #blocks = 0;
  #tentative: TentativeBlock | undefined;
  readonly #ports: StopChainPorts;

  constructor(ports: StopChainPorts) {
    this.#ports = ports;
  }

  /** Blocks printed in a row in the current turn. */
  get blocks(): number {
    return this.#blocks;
  }

  get tentative(): TentativeBlock | undefined {
    return this.#tentative;
  }

  /**
   * How many blocks in a row a client with `cap` allows Errand: one short of the cap, so the client's own
   * override (and its discarded block) is never reached. 0 means no cap.
   */
  static allowedBlocks(cap: number): number {
    return cap <= 0 ? Number.POSITIVE_INFINITY : Math.max(1, cap - 1);
  }

  /** Reads what the client's hook at `evidence` says about the previous block. Call first, at every take. */
  observe(evidence: StopChainEvidence): void {
    const continuedByPrompt =
      evidence.moment === 'prompt' && evidence.promptContinues && this.#tentative !== undefined;
    const continued =
      evidence.moment === 'tool' ||
      (evidence.moment === 'stop' && evidence.stopHookActive) ||
      continuedByPrompt;
    const endedWithout =
      (evidence.moment === 'prompt' && !continuedByPrompt) ||
      (evidence.moment === 'stop' && !evidence.stopHookActive);
    if (continued) this.#confirm();
    else if (endedWithout) {
      this.#abandon();
      this.#blocks = 0;
    }
  }

  /** A block was printed: held until the client's next hook. */
  printed(block: TentativeBlock): void {
    // A block is only printed after `observe` settled the one before; a leftover is confirmed by it.
    this.#confirm();
    this.#blocks += 1;
    this.#tentative = block;
  }

  /** The session's endpoint closes: what was never confirmed goes back to the queue. */
  close(): void {
    this.#abandon();
  }

  #confirm(): void {
    const block = this.#tentative;
    this.#tentative = undefined;
    if (block === undefined) return;
    this.#ports.told(block.told);
    if (block.reservation === undefined) return;
    try {
      block.reservation.commit();
    } catch (error) {
      block.reservation.release();
      this.#ports.commitFailed(error);
    }
  }

  #abandon(): void {
    const block = this.#tentative;
    this.#tentative = undefined;
    block?.reservation?.release();
  }
}
