"""The live-class store in Redis: for replicas that span machines (Debian's ``redis-server``,
reached with the ``redis`` package).

Keys, all under one prefix (``tfviz:``):

- ``class:{code}``: the session as JSON (teacher key, state, status, last teacher action);
- ``live``: a sorted set of live codes scored by the teacher's last action (counting and
  evicting sessions, closing idle ones);
- ``answers:{code}``: a list of answer rows (JSON, no names), ``slips:{code}`` and
  ``slipkinds:{code}``: which slips each box has counted, to bound them;
- ``budget:{kind}:{client}``: a sorted set of the times a client spent a rate-limited try.

Atomicity: a teacher's read-modify-write runs under ``WATCH`` and is retried if another process
changed the session meanwhile; an answer is added by one Lua script, which Redis runs alone, so
the checks (session live, not full) and the write cannot be split by another replica.
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

from tfviz.classroom.guard import BadStoreURL, SessionGone, StoreDown

PREFIX = "tfviz:"
TIMEOUT_S = 2.0  # a Redis that does not answer within this is reported as down
KEEP_GONE_S = 25 * 3600  # a closed session's record is deleted by Redis after this (real time)

# KEYS: class, answers, slips, slipkinds. ARGV: alive_since, max_answers, max_slip_kinds,
# slip member ("" for none), slip-kind field, row with the slip, row without it.
ADD_ANSWER = """
local rec = redis.call('GET', KEYS[1])
if not rec then return 'gone' end
rec = cjson.decode(rec)
if rec.status ~= 'live' or rec.last_teacher <= tonumber(ARGV[1]) then return 'gone' end
if redis.call('LLEN', KEYS[2]) >= tonumber(ARGV[2]) then return 'full' end
local row = ARGV[7]
if ARGV[4] ~= '' then
  if redis.call('SISMEMBER', KEYS[3], ARGV[4]) == 1 then
    row = ARGV[6]
  elseif tonumber(redis.call('HGET', KEYS[4], ARGV[5]) or '0') < tonumber(ARGV[3]) then
    redis.call('SADD', KEYS[3], ARGV[4])
    redis.call('HINCRBY', KEYS[4], ARGV[5], 1)
    row = ARGV[6]
  end
end
redis.call('RPUSH', KEYS[2], row)
return 'ok'
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
        self._add = self.r.register_script(ADD_ANSWER)

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

    # -- sessions --
    @_down
    def get(self, code: str) -> dict | None:
        data = self.r.get(self._k("class", code))
        return json.loads(data) if data else None

    @_down
    def create(self, rec: dict) -> bool:
        code = rec["code"]
        if not self.r.set(self._k("class", code), json.dumps(rec), nx=True):
            return False
        self.r.zadd(self._k("live"), {code: rec["last_teacher"]})
        return True

    @_down
    def change(self, code: str, fn) -> dict:
        key = self._k("class", code)

        def step(pipe):
            data = pipe.get(key)
            if not data:
                raise SessionGone("This live session has closed. Ask your teacher for a new code.")
            rec = fn(json.loads(data))
            pipe.multi()
            pipe.set(key, json.dumps(rec))
            if rec["status"] == "live":
                pipe.zadd(self._k("live"), {code: rec["last_teacher"]})
            else:
                pipe.zrem(self._k("live"), code)
                pipe.expire(key, KEEP_GONE_S)
            return rec

        return self.r.transaction(step, key, value_from_callable=True)

    @_down
    def live_count(self, since: float) -> tuple[int, tuple[str, float] | None]:
        live = self._k("live")
        count = self.r.zcount(live, f"({since}", "+inf")
        oldest = self.r.zrangebyscore(live, f"({since}", "+inf", start=0, num=1, withscores=True)
        return count, (tuple(oldest[0]) if oldest else None)

    @_down
    def sweep(self, now: float, idle_s: float, remember_s: float, budget_s: float) -> None:
        """Close idle sessions and drop their answers; Redis forgets old codes (a key's expiry)
        and old tries (each budget key expires after its window)."""
        for code, last in self.r.zrangebyscore(self._k("live"), "-inf", now - idle_s,
                                               withscores=True):
            try:
                self.change(code, lambda rec, last=last: {**rec, "status": "expired",
                                                          "gone_at": last + idle_s})
            except SessionGone:
                self.r.zrem(self._k("live"), code)
            self.drop_answers(code)

    # -- answers --
    @_down
    def add_answer(self, code: str, row: dict, *, alive_since: float, max_answers: int,
                   max_slip_kinds: int) -> str:
        slip = row["slip"] or ""
        member = f"{row['exercise']}|{row['box']}|{slip}" if slip else ""
        keys = [self._k("class", code), self._k("answers", code), self._k("slips", code),
                self._k("slipkinds", code)]
        args = [repr(alive_since), max_answers, max_slip_kinds, member,
                f"{row['exercise']}|{row['box']}", json.dumps(row), json.dumps({**row, "slip": None})]
        return self._add(keys=keys, args=args)

    @_down
    def answers(self, code: str) -> list[dict]:
        return [json.loads(r) for r in self.r.lrange(self._k("answers", code), 0, -1)]

    @_down
    def drop_answers(self, code: str) -> None:
        self.r.delete(self._k("answers", code), self._k("slips", code),
                      self._k("slipkinds", code))

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

    def flush(self) -> None:
        """Delete every key under this store's prefix (tests)."""
        for key in self.r.scan_iter(self.p + "*"):
            self.r.delete(key)
