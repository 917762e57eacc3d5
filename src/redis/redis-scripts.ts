/**
 * The Lua scripts that decide a remote command's fate. Redis runs each atomically, so whichever of the
 * worker's completion, a cancel before pickup, or the lost-worker check comes first settles the job, and
 * every later attempt finds it settled and changes nothing: one terminal state per job, decided once.
 *
 * A job's `state` is `queued`, `running`, or terminal (`ended`: the worker reported exit facts;
 * `killed`: cancelled before any worker took it; `lost`: its worker or its runtime is gone).
 *
 * A durable job (`durable` = `1` on its record) outlives its runtime: its runtime's heartbeat is never
 * checked for it, and a runtime that resumes its session re-attaches it with the adopt script, which
 * points the record's `events` field at the new runtime's events stream. Every script publishes a job's
 * events to that field's stream when the record has one, so no end is reported to a runtime that is gone.
 *
 * A `settled` event carries the record's outcome as the settling script left it (state, facts, output
 * end, retained start, worker, spill file): the runtime settles the task from the event alone.
 */

/** The events stream keeps about this many entries (a runtime reads it continuously). */
export const EVENTS_MAX_LENGTH = 10_000;

const SETTLE_BODY = `
local function eventsOf(job, events)
  local current = redis.call('HGET', job, 'events')
  if current and current ~= '' then return current end
  return events
end
-- An events stream this adds to, of a runtime that is gone, with no expiry (its expired stream made anew
-- by this event) expires keepMs later; a live runtime's beat sets its own stream's expiry. The stream is
-- <prefix>:rt:<runtime>:events, its heartbeat <prefix>:rt:<runtime>:alive.
local function expireIfGone(stream, keepMs)
  if redis.call('PTTL', stream) ~= -1 then return end
  if redis.call('EXISTS', string.sub(stream, 1, #stream - 6) .. 'alive') == 1 then return end
  redis.call('PEXPIRE', stream, keepMs)
end
-- Settles a job whose record fields the caller already read or decides: known holds end, retainedFrom,
-- worker and file (false when unknown) and stream is the events stream. One HSET, the expiries, the event;
-- tail (or nil) is the output's last bytes, carried in the event so the runtime need not read them back.
local function settleKnown(job, stream, state, facts, by, keepMs, jobId, known, tail)
  redis.call('HSET', job, 'state', state, 'facts', facts, 'settledBy', by,
    'end', known[1] or '0', 'retainedFrom', known[2] or '0', 'worker', known[3] or '', 'file', known[4] or '')
  redis.call('PEXPIRE', job, keepMs)
  -- The output stream goes with the record (its runtime deletes both once it has read them; one that is
  -- gone never does). It is <prefix>:out:<job>, beside <prefix>:job:<job>.
  redis.call('PEXPIRE', string.sub(job, 1, #job - #jobId - 4) .. 'out:' .. jobId, keepMs)
  -- The event carries what the runtime settles the task from, so it need not read the record back.
  local event = {'t', 'settled', 'job', jobId, 'state', state, 'facts', facts, 'end', known[1] or '0',
    'retainedFrom', known[2] or '0', 'worker', known[3] or '', 'file', known[4] or ''}
  if tail and tail ~= '' then
    event[#event + 1] = 'tail'
    event[#event + 1] = tail
  end
  redis.call('XADD', stream, 'MAXLEN', '~', '${EVENTS_MAX_LENGTH}', '*', unpack(event))
  expireIfGone(stream, keepMs)
end
local function settle(job, events, state, facts, by, keepMs, jobId)
  local record = redis.call('HMGET', job, 'end', 'retainedFrom', 'worker', 'file', 'events')
  local stream = events
  if record[5] and record[5] ~= '' then stream = record[5] end
  settleKnown(job, stream, state, facts, by, keepMs, jobId, record)
end
local function live(state)
  return state == 'queued' or state == 'running'
end
`;

/**
 * The runtime dispatches a job: its record and its entry on the label's queue stream, in one step (so no
 * worker ever reads an entry without a record, and no record is left without an entry). KEYS: job, queue.
 * ARGV: task id, runtime id, the command as shown (at most 4 KiB), `1` for a durable job (else ''), job
 * id, the job's data (JSON: what the worker runs). Returns 1.
 */
export const DISPATCH_SCRIPT = `
redis.call('HSET', KEYS[1], 'state', 'queued', 'task', ARGV[1], 'runtime', ARGV[2], 'command', ARGV[3],
  'end', '0', 'retainedFrom', '0')
-- The claim script runs a durable job whose runtime is already gone (it is re-attached on resume).
if ARGV[4] == '1' then redis.call('HSET', KEYS[1], 'durable', '1') end
redis.call('XADD', KEYS[2], '*', 'job', ARGV[5], 'data', ARGV[6])
return 1
`;

/**
 * The worker takes a job it read from its label's queue stream. KEYS: job, events, runtime heartbeat,
 * queue. ARGV: worker name, worker instance, job id, facts for a job cancelled before pickup, facts for a
 * job whose runtime is gone, keepMs, the queue entry's id, the queue's group. Acknowledges the entry
 * whatever the answer (it never runs twice: a second claim finds the job running, or settled). Returns
 * `run`, `cancelled` (settled killed now), `orphaned` (settled lost now) or `gone`.
 */
export const CLAIM_SCRIPT = `${SETTLE_BODY}
redis.call('XACK', KEYS[4], ARGV[8], ARGV[7])
local record = redis.call('HMGET', KEYS[1], 'state', 'workerInstance', 'cancel', 'durable', 'events')
local state = record[1]
-- The same instance asking again (its first call was resent after a reconnect) gets the same answer.
if state == 'running' and record[2] == ARGV[2] then return 'run' end
if state ~= 'queued' then return 'gone' end
if record[3] and record[3] ~= '' then
  settle(KEYS[1], KEYS[2], 'killed', ARGV[4], ARGV[1], ARGV[6], ARGV[3])
  return 'cancelled'
end
-- A live runtime's beat keeps its events stream's expiry: known alive here, the stream needs no check.
local alive = false
if record[4] ~= '1' then
  if redis.call('EXISTS', KEYS[3]) == 0 then
    settle(KEYS[1], KEYS[2], 'lost', ARGV[5], ARGV[1], ARGV[6], ARGV[3])
    return 'orphaned'
  end
  alive = true
end
redis.call('HSET', KEYS[1], 'state', 'running', 'worker', ARGV[1], 'workerInstance', ARGV[2])
local stream = KEYS[2]
if record[5] and record[5] ~= '' then
  stream = record[5]
  alive = false
end
redis.call('XADD', stream, 'MAXLEN', '~', '${EVENTS_MAX_LENGTH}', '*', 't', 'started', 'job', ARGV[3], 'worker', ARGV[1])
if not alive then expireIfGone(stream, ARGV[6]) end
return 'run'
`;

/**
 * Trims a queue stream of the entries every worker is done with: those before both the group's oldest
 * pending entry (read, not yet claimed) and the first entry it has not handed out. A worker runs it once
 * a heartbeat while it takes jobs, so no entry costs a delete of its own. KEYS: queue. ARGV: the group.
 * Returns the id trimmed below, or false when there was nothing to trim.
 */
export const TRIM_QUEUE_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local last = nil
for _, group in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local fields = {}
  for index = 1, #group, 2 do fields[group[index]] = group[index + 1] end
  if fields['name'] == ARGV[1] then last = fields['last-delivered-id'] end
end
if not last then return false end
local dash = string.find(last, '-', 1, true)
local below = string.sub(last, 1, dash) .. (tonumber(string.sub(last, dash + 1)) + 1)
local pending = redis.call('XPENDING', KEYS[1], ARGV[1])
if pending[1] > 0 then below = pending[2] end
redis.call('XTRIM', KEYS[1], 'MINID', below)
return below
`;

/**
 * A resumed runtime re-attaches a durable job. KEYS: job, the new runtime's events stream. ARGV: the new
 * runtime's id. A live job's events go to the new stream from now on (its worker also learns the new
 * runtime at its next heartbeat). Returns `[state, worker, end, retainedFrom]`; `state` is false (nil)
 * when Redis no longer holds the record.
 */
export const ADOPT_SCRIPT = `
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {false, false, false, false} end
if state == 'queued' or state == 'running' then
  redis.call('HSET', KEYS[1], 'events', KEYS[2], 'runtime', ARGV[1])
end
return redis.call('HMGET', KEYS[1], 'state', 'worker', 'end', 'retainedFrom')
`;

/**
 * The worker reports the end. KEYS: job, events. ARGV: facts, worker name, keepMs, job id, output end,
 * the spill file's path (or ''), the output not streamed yet (or '': it ends at the output end), the
 * offset the stream retains from once that is added, and `1` when that output (small, UTF-8) also goes
 * in the settled event. The rest of the output goes into the stream in the same step as the end, so the
 * runtime reads both at once (from the event alone when it carries them). Returns 1 when this settled the
 * job, 0 when something else had.
 */
export const FINISH_SCRIPT = `${SETTLE_BODY}
local record = redis.call('HMGET', KEYS[1], 'state', 'worker', 'events', 'file')
if record[1] ~= 'running' then return 0 end
if record[2] ~= ARGV[2] then return 0 end
if ARGV[7] ~= '' then
  local output = string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[4] - 4) .. 'out:' .. ARGV[4]
  redis.call('XADD', output, '0-' .. ARGV[5], 'd', ARGV[7])
  if tonumber(ARGV[8]) > 0 then redis.call('XTRIM', output, 'MINID', '0-' .. (tonumber(ARGV[8]) + 1)) end
end
local stream = KEYS[2]
if record[3] and record[3] ~= '' then stream = record[3] end
local file = ARGV[6]
if file == '' then file = record[4] end
local tail = nil
if ARGV[9] == '1' then tail = ARGV[7] end
settleKnown(KEYS[1], stream, 'ended', ARGV[1], ARGV[2], ARGV[3], ARGV[4], {ARGV[5], ARGV[8], ARGV[2], file}, tail)
return 1
`;

/**
 * A cancel. KEYS: job, events. ARGV: reason, facts for a job no worker took yet, keepMs, job id, cancel
 * channel. Persists the request on the job (a worker that takes it later, or reconnects, still sees it),
 * publishes it, and settles a queued job at once. Returns `settled` (now), `requested`, `ended` or `gone`.
 */
export const CANCEL_SCRIPT = `${SETTLE_BODY}
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return 'gone' end
if not live(state) then return 'ended' end
redis.call('HSET', KEYS[1], 'cancel', ARGV[1])
if state == 'queued' then
  settle(KEYS[1], KEYS[2], 'killed', ARGV[2], 'cancel', ARGV[3], ARGV[4])
  return 'settled'
end
redis.call('PUBLISH', ARGV[5], ARGV[4])
return 'requested'
`;

/**
 * The lost-worker check. KEYS: job, events, the worker's heartbeat. ARGV: facts, keepMs, job id.
 * Settles a running job as lost only while its worker's heartbeat is gone or names another instance
 * (a worker that restarted under the same name does not run the old instance's jobs). Returns 1 or 0.
 */
export const LOST_SCRIPT = `${SETTLE_BODY}
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'running' then return 0 end
local instance = redis.call('GET', KEYS[3])
if instance and instance == redis.call('HGET', KEYS[1], 'workerInstance') then return 0 end
settle(KEYS[1], KEYS[2], 'lost', ARGV[1], 'lost-check', ARGV[2], ARGV[3])
return 1
`;

/**
 * Reserves a block of ids. KEYS: the kind's counter. ARGV: block size, floor (the last id this runtime's
 * store already used). Returns the block's last number.
 */
export const RESERVE_IDS_SCRIPT = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local floor = tonumber(ARGV[2])
if current < floor then current = floor end
current = current + tonumber(ARGV[1])
redis.call('SET', KEYS[1], current)
return current
`;
