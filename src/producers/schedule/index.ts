/** Scheduled tasks: one-shot, repeating (interval or cron in a time zone) and idle-time firings as `schedule` tasks. */
export {
  type CronExpression,
  InvalidCronError,
  InvalidTimeZoneError,
  nextCronTime,
  parseCron,
  validateTimeZone,
} from './cron.js';
export {
  interruptedFiringNote,
  type MissedFiringPolicy,
  type PlannedSchedule,
  planSchedule,
  type ScheduleDefinition,
  type ScheduleFacts,
  ScheduleLimitError,
  ScheduleProducer,
  type ScheduleProducerOptions,
  type ScheduleSessionPort,
  type ScheduleStore,
  type ScheduleWhen,
  type StartScheduleOptions,
  scheduleProducerOptions,
} from './schedule-producer.js';
export { createScheduleTool, SCHEDULE_TOOL_NAME, type ScheduleToolInput } from './schedule-tool.js';
