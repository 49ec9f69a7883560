"""The live-class store in Redis: for replicas that span machines (Debian's ``redis-server``,
reached with the ``redis`` package).

Keys, all under one prefix (``tfviz:``):

- ``class:{code}``: the session as JSON (teacher key, state, status, last teacher action);
- ``live``: a sorted set of live codes scored by the teacher's last action (counting and
  evicting sessions, closing idle ones);
- ``gone``: a sorted set of closed codes scored by when they closed (forgetting them, with
  their answers, a day later);
- ``answers:{code}``: a list of answer rows (JSON, no names, each numbered ``n`` in order);
- ``tally:{code}``: a hash of the class's counts, updated by the same script that adds an
  answer: ``a|EX|BOX`` answered, ``r|EX|BOX`` right, ``s|EX|BOX|SLIP`` each slip, ``k|EX|BOX``
  distinct slips (to bound them), ``seq`` the last row's ``n``, ``dl`` the ``n`` of the last
  row the teacher downloaded, ``fresh`` rows since then;
- ``present:{code}`` and ``lost:{code}``: sorted sets of students' random tokens (nothing else
  about them) scored by when their page last said "here", the second holding only those with
  "I'm lost" on;
- ``budget:{kind}:{client}``: a sorted set of the times a client spent a rate-limited try;
- ``schema``: the layout's version (see ``SCHEMA_VERSION``).

Atomicity: a teacher's read-modify-write runs under ``WATCH`` and is retried if another process
changed the session meanwhile; a class is created, an answer added (with its counts), the
answers exported and a box reset each by one Lua script, which Redis runs alone, so the checks
(session live, not full, not late) and the writes cannot be split by another replica or by a
crash of this one.
Durability is the server's: with ``appendonly yes`` and ``appendfsync always`` (what
``scripts/serve-class.sh --redis`` starts) Redis writes and fsyncs the append-only file before it
replies, so an acknowledged answer survives a crash of Redis and of the machine; with
``appendfsync everysec`` (Redis's default for AOF) a crash of the machine can lose the last
second. ``durability()`` reports which.
"""
from __future__ import annotations

import functools
import json
import secrets

from tfviz.classroom.backend import NoSuchClass, Outcome, Presence, Tally
from tfviz.classroom.guard import BadStoreURL, StoreDown

PREFIX = "tfviz:"
TIMEOUT_S = 2.0  # a Redis that does not answer within this is reported as down
KEEP_GONE_S = 25 * 3600  # a closed class's keys are deleted by Redis after this (real time),
#                          should no replica sweep them first
KEEP_PRESENT_S = 3600  # "here" marks older than this are trimmed whenever a student is seen
SCHEMA_VERSION = 1  # 0: before answers were numbered and counted in a hash

# KEYS: class, live. ARGV: record, code, last teacher action. The record and its place in the
# live set in one step: written apart, a crash between them left a class no count or sweep saw.
CREATE = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
return 1
"""

# KEYS: class, answers, tally. ARGV: alive_since, max_answers, max_slip_kinds, late_after,
# exercise, box, correct ("1"/"0"), slip ("" for none), t, row with the slip and row without it
# (each JSON without its opening brace: the script puts {"n": N, in front).
ADD_ANSWER = """
local rec = redis.call('GET', KEYS[1])
if not rec then return 'gone' end
rec = cjson.decode(rec)
if rec.status ~= 'live' or rec.last_teacher <= tonumber(ARGV[1]) then return 'gone' end
local ex, box = ARGV[5], ARGV[6]
local st, eb = rec.state, ARGV[5] .. '|' .. ARGV[6]
local q = st.question
if type(st.deadline) == 'number' and st.deadline > 0 and type(q) == 'table' and q[1] == ex
    and q[2] == box and tonumber(ARGV[9]) > st.deadline + tonumber(ARGV[4]) then
  return 'late'
end
if redis.call('LLEN', KEYS[2]) >= tonumber(ARGV[2]) then return 'full' end
local kept = ''
if ARGV[8] ~= '' then
  if redis.call('HEXISTS', KEYS[3], 's|' .. eb .. '|' .. ARGV[8]) == 1 then
    kept = ARGV[8]
  elseif tonumber(redis.call('HGET', KEYS[3], 'k|' .. eb) or '0') < tonumber(ARGV[3]) then
    redis.call('HINCRBY', KEYS[3], 'k|' .. eb, 1)
    kept = ARGV[8]
  end
end
local n = redis.call('HINCRBY', KEYS[3], 'seq', 1)
redis.call('HINCRBY', KEYS[3], 'fresh', 1)
redis.call('HINCRBY', KEYS[3], 'a|' .. eb, 1)
if ARGV[7] == '1' then redis.call('HINCRBY', KEYS[3], 'r|' .. eb, 1) end
if kept ~= '' then
  redis.call('HINCRBY', KEYS[3], 's|' .. eb .. '|' .. kept, 1)
  redis.call('RPUSH', KEYS[2], '{"n": ' .. n .. ', ' .. ARGV[10])
else
  redis.call('RPUSH', KEYS[2], '{"n": ' .. n .. ', ' .. ARGV[11])
end
return 'ok'
"""

# KEYS: answers, tally. Every row, and the mark "downloaded up to here", in one step.
EXPORT = """
redis.call('HSET', KEYS[2], 'dl', redis.call('HGET', KEYS[2], 'seq') or '0', 'fresh', '0')
return redis.call('LRANGE', KEYS[1], 0, -1)
"""

# KEYS: answers, tally. ARGV: exercise, box. The rows of one box out, their counts with them.
DROP_BOX = """
local rows = redis.call('LRANGE', KEYS[1], 0, -1)
local dl = tonumber(redis.call('HGET', KEYS[2], 'dl') or '0')
local eb = ARGV[1] .. '|' .. ARGV[2]
local keep, gone, fresh = {}, 0, 0
for _, r in ipairs(rows) do
  local row = cjson.decode(r)
  if row.exercise == ARGV[1] and row.box == ARGV[2] then
    gone = gone + 1
    if (tonumber(row.n) or 0) > dl then fresh = fresh + 1 end
    if type(row.slip) == 'string' then redis.call('HDEL', KEYS[2], 's|' .. eb .. '|' .. row.slip) end
  else
    keep[#keep + 1] = r
  end
end
if gone > 0 then
  redis.call('DEL', KEYS[1])
  for i = 1, #keep, 1000 do
    redis.call('RPUSH', KEYS[1], unpack(keep, i, math.min(i + 999, #keep)))
  end
  redis.call('HDEL', KEYS[2], 'a|' .. eb, 'r|' .. eb, 'k|' .. eb)
  redis.call('HINCRBY', KEYS[2], 'fresh', -fresh)
end
return gone
"""


# KEYS: answers, tally, and schema 0's slips and slipkinds of one class. Schema 0 -> 1: number
# the rows (their JSON kept as it is, "n" put in front) and count them into the hash.
MIGRATE_0 = """
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local rows = redis.call('LRANGE', KEYS[1], 0, -1)
local out = {}
for i, r in ipairs(rows) do
  local row = cjson.decode(r)
  local eb = row.exercise .. '|' .. row.box
  redis.call('HINCRBY', KEYS[2], 'a|' .. eb, 1)
  if row.correct == true then redis.call('HINCRBY', KEYS[2], 'r|' .. eb, 1) end
  if type(row.slip) == 'string' then
    if redis.call('HINCRBY', KEYS[2], 's|' .. eb .. '|' .. row.slip, 1) == 1 then
      redis.call('HINCRBY', KEYS[2], 'k|' .. eb, 1)
    end
  end
  out[i] = '{"n": ' .. i .. ', ' .. string.sub(r, 2)
end
redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
for i = 1, #out, 1000 do
  redis.call('RPUSH', KEYS[1], unpack(out, i, math.min(i + 999, #out)))
end
redis.call('HSET', KEYS[2], 'seq', #out, 'fresh', #out, 'dl', 0)
return #out
"""


def _down(method):
    """Redis refusing, timing out or unreachable is StoreDown."""
    import redis

    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except redis.exceptions.RedisError as err:
            raise StoreDown() from err
    return wrapped


class RedisStore:
    """The store in the Redis at ``url`` (``redis://HOST:PORT/DB``)."""

    def __init__(self, url: str, *, prefix: str = PREFIX):
        import redis

        self.p = prefix
        try:
            self.r = redis.Redis.from_url(url, socket_timeout=TIMEOUT_S,
                                          socket_connect_timeout=TIMEOUT_S,
                                          decode_responses=True)
        except ValueError as err:
            raise BadStoreURL(f"The live-class store {url} is not a Redis URL ({err}); write "
                              "redis://HOST:PORT/DB.") from err
        kw = self.r.connection_pool.connection_kwargs
        self.url = f"redis://{kw.get('host', 'localhost')}:{kw.get('port', 6379)}/{kw.get('db', 0)}"
        try:
            self.r.ping()
        except redis.exceptions.RedisError as err:
            raise BadStoreURL(f"The live-class store {self.url} does not answer: {str(err).rstrip('.')}.") from err
        self._create = self.r.register_script(CREATE)
        self._add = self.r.register_script(ADD_ANSWER)
        self._export = self.r.register_script(EXPORT)
        self._drop_box = self.r.register_script(DROP_BOX)
        try:
            self._upgrade()
        except redis.exceptions.RedisError as err:
            raise BadStoreURL(f"The live-class store {self.url} could not be upgraded: {err}.") from err

    def _upgrade(self) -> None:
        """Bring the layout to SCHEMA_VERSION. Each class is upgraded by one script that does
        nothing to a class already upgraded, so replicas opening an old store at once are
        safe; the version is written last."""
        version = int(self.r.get(self._k("schema")) or 0)
        if version > SCHEMA_VERSION:
            raise BadStoreURL(f"The live-class store {self.url} was written by a newer tfviz "
                              f"(schema {version}; this one knows up to {SCHEMA_VERSION}).")
        if version == SCHEMA_VERSION:
            return
        if version == 0:
            migrate = self.r.register_script(MIGRATE_0)
            for key in self.r.scan_iter(self._k("answers", "*")):
                code = key.removeprefix(self._k("answers", ""))
                migrate(keys=[key, self._k("tally", code), self._k("slips", code),
                              self._k("slipkinds", code)])
        self.r.set(self._k("schema"), SCHEMA_VERSION)

    def durability(self) -> str:
        """What this Redis promises for an acknowledged write, in words."""
        conf = self.r.config_get("append*")
        if conf.get("appendonly") != "yes":
            return "none: appendonly is off, a restart of Redis loses the class"
        return {"always": "fsync before every reply (nothing acknowledged is lost)",
                "everysec": "fsync every second (a crash of the machine can lose the last second)",
                }.get(conf.get("appendfsync"), "left to the operating system")

    def _k(self, *parts: str) -> str:
        return self.p + ":".join(parts)

    def _class_keys(self, code: str) -> list[str]:
        """Every key of one class but its record."""
        return [self._k(kind, code) for kind in ("answers", "tally", "present", "lost")]

    # -- sessions --
    @_down
    def get(self, code: str) -> dict | None:
        data = self.r.get(self._k("class", code))
        return json.loads(data) if data else None

    @_down
    def create(self, rec: dict) -> bool:
        return bool(self._create(keys=[self._k("class", rec["code"]), self._k("live")],
                                 args=[json.dumps(rec), rec["code"], repr(rec["last_teacher"])]))

    @_down
    def change(self, code: str, fn) -> dict:
        key = self._k("class", code)

        def step(pipe):
            data = pipe.get(key)
            if not data:
                raise NoSuchClass(code)
            rec = fn(json.loads(data))
            pipe.multi()
            pipe.set(key, json.dumps(rec))
            if rec["status"] == "live":
                pipe.zadd(self._k("live"), {code: rec["last_teacher"]})
            else:
                pipe.zrem(self._k("live"), code)
                pipe.zadd(self._k("gone"), {code: rec["gone_at"]})
                for k in (key, *self._class_keys(code)):
                    pipe.expire(k, KEEP_GONE_S)
            return rec

        return self.r.transaction(step, key, value_from_callable=True)

    @_down
    def live_count(self, since: float) -> tuple[int, tuple[str, float] | None]:
        live = self._k("live")
        count = self.r.zcount(live, f"({since}", "+inf")
        oldest = self.r.zrangebyscore(live, f"({since}", "+inf", start=0, num=1, withscores=True)
        return count, (tuple(oldest[0]) if oldest else None)

    @_down
    def sweep(self, now: float, idle_s: float, remember_s: float, budget_s: float,
              present_s: float) -> None:
        """Close idle sessions; forget closed ones, with their answers, ``remember_s`` after
        they closed. Old tries expire on their own (each budget key after its window), old
        "here" marks are trimmed as students are seen."""
        for code, last in self.r.zrangebyscore(self._k("live"), "-inf", now - idle_s,
                                               withscores=True):
            try:
                self.change(code, lambda rec, last=last: {**rec, "status": "expired",
                                                          "gone_at": last + idle_s})
            except NoSuchClass:
                self.r.zrem(self._k("live"), code)
        for code in self.r.zrangebyscore(self._k("gone"), "-inf", now - remember_s):
            with self.r.pipeline() as pipe:
                pipe.delete(self._k("class", code), *self._class_keys(code))
                pipe.zrem(self._k("gone"), code)
                pipe.execute()

    # -- answers --
    @_down
    def add_answer(self, code: str, row: dict, *, alive_since: float, max_answers: int,
                   max_slip_kinds: int, late_after: float) -> Outcome:
        keys = [self._k("class", code), self._k("answers", code), self._k("tally", code)]
        args = [repr(alive_since), max_answers, max_slip_kinds, repr(late_after),
                row["exercise"], row["box"], "1" if row["correct"] else "0", row["slip"] or "",
                repr(row["t"]), json.dumps(row)[1:], json.dumps({**row, "slip": None})[1:]]
        return Outcome(self._add(keys=keys, args=args))

    @staticmethod
    def _rows(raw: list[str]) -> list[dict]:
        out = []
        for r in raw:
            row = json.loads(r)
            row.pop("n", None)
            out.append(row)
        return out

    @_down
    def answers(self, code: str) -> list[dict]:
        return self._rows(self.r.lrange(self._k("answers", code), 0, -1))

    @_down
    def export(self, code: str) -> list[dict]:
        return self._rows(self._export(keys=[self._k("answers", code), self._k("tally", code)]))

    @_down
    def tally(self, code: str) -> Tally:
        with self.r.pipeline() as pipe:  # MULTI: both read at one moment
            pipe.hgetall(self._k("tally", code))
            pipe.llen(self._k("answers", code))
            counts, total = pipe.execute()
        boxes: dict[tuple[str, str], list[int]] = {}
        slips: dict[tuple[str, str, str], int] = {}
        for field, value in counts.items():
            kind, _, rest = field.partition("|")
            parts = tuple(rest.split("|"))
            if kind in ("a", "r") and len(parts) == 2:
                boxes.setdefault(parts, [0, 0])[kind == "r"] = int(value)
            elif kind == "s" and len(parts) == 3 and int(value) > 0:
                slips[parts] = int(value)
        return Tally({b: (n, r) for b, (n, r) in boxes.items() if n > 0}, slips, total,
                     int(counts.get("fresh", 0)))

    @_down
    def drop_answers(self, code: str) -> None:
        self.r.delete(self._k("answers", code), self._k("tally", code))

    @_down
    def drop_box(self, code: str, exercise: str, box: str) -> int:
        return int(self._drop_box(keys=[self._k("answers", code), self._k("tally", code)],
                                  args=[exercise, box]))

    # -- the room --
    @_down
    def seen(self, code: str, student: str, now: float, lost: bool | None) -> None:
        present, lost_key = self._k("present", code), self._k("lost", code)
        with self.r.pipeline() as pipe:
            pipe.zadd(present, {student: now})
            if lost is None:
                pipe.zadd(lost_key, {student: now}, xx=True)  # still lost, if they were
            elif lost:
                pipe.zadd(lost_key, {student: now})
            else:
                pipe.zrem(lost_key, student)
            for k in (present, lost_key):
                pipe.zremrangebyscore(k, "-inf", now - KEEP_PRESENT_S)
                pipe.expire(k, 2 * KEEP_PRESENT_S)
            pipe.execute()

    @_down
    def presence(self, code: str, since: float, box: tuple[str, str] | None) -> Presence:
        with self.r.pipeline() as pipe:
            pipe.zcount(self._k("present", code), f"({since}", "+inf")
            pipe.zcount(self._k("lost", code), f"({since}", "+inf")
            pipe.hget(self._k("tally", code), "a|" + "|".join(box) if box else "-")
            present, lost, answered = pipe.execute()
        return Presence(present, lost, int(answered or 0))

    # -- rate limits --
    @_down
    def recent(self, kind: str, client, since: float) -> int:
        return self.r.zcount(self._k("budget", kind, str(client)), f"({since}", "+inf")

    @_down
    def spend(self, kind: str, client, now: float, window: float) -> None:
        key = self._k("budget", kind, str(client))
        with self.r.pipeline() as pipe:
            pipe.zremrangebyscore(key, "-inf", now - window)
            pipe.zadd(key, {f"{now!r}:{secrets.token_hex(4)}": now})
            pipe.expire(key, int(window) + 60)
            pipe.execute()
