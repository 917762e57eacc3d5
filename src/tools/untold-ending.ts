/** An ending queued for the model and not delivered yet: what the task digest lists as "not yet told". */
export interface UntoldEnding {
  readonly taskId: string;
  readonly label: string;
}
