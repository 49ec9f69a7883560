"""tfviz.classroom.watch: what a following student's page long-polls. One store read per class
per poll however many wait; a move wakes every waiter; a code no student of this process joined
gets the same reply as a code that does not exist; an ended class says so; a store that does
not answer keeps students waiting rather than dropping them."""
from __future__ import annotations

import asyncio

from tfviz.classroom.guard import StoreDown
from tfviz.classroom.store import open_store
from tfviz.classroom.watch import ClassWatch


class CountingStore:
    """The real store, counting the reads the watch makes (and able to stop answering)."""

    def __init__(self, store):
        self.store, self.reads, self.down = store, 0, False

    def state(self, code, client=None):
        self.reads += 1
        if self.down:
            raise StoreDown()
        return self.store.state(code, client)


def test_a_move_wakes_every_waiter_with_one_read_per_poll(store_url):
    store = open_store(store_url)
    code, key = store.start()
    counting = CountingStore(store)
    watch = ClassWatch(counting, poll_s=0.05)
    watch.allow(code)

    async def scenario():
        waiters = [asyncio.create_task(watch.wait(code, after=1, timeout=10)) for _ in range(50)]
        await asyncio.sleep(0.5)
        reads_while_waiting = counting.reads
        await asyncio.to_thread(store.update, code, key, layer=3)
        return await asyncio.gather(*waiters), reads_while_waiting

    replies, reads = asyncio.run(scenario())
    assert [r["version"] for r in replies] == [2] * 50 and replies[0]["layer"] == 3
    # 0.5 s at one read per 0.05 s: about 10 reads for 50 waiters, not 50 per poll.
    assert 3 <= reads <= 15


def test_a_wait_ends_at_its_timeout_with_the_version_then(store_url):
    store = open_store(store_url)
    code, _ = store.start()
    watch = ClassWatch(store, poll_s=0.02)
    watch.allow(code)
    assert asyncio.run(watch.wait(code, after=1, timeout=0.2))["version"] == 1
    assert asyncio.run(watch.wait(code, after=0, timeout=5))["version"] == 1  # at once


def test_codes_no_student_joined_here_all_get_the_same_reply(store_url):
    store = open_store(store_url)
    code, _ = store.start()
    watch = ClassWatch(store, poll_s=0.02)
    for other in (code, "ZZZZ2222", "<script>", "", None, "x" * 10_000):
        assert asyncio.run(watch.wait(other, after=0, timeout=1)) == {"status": "not here"}


def test_an_ended_class_says_so(store_url):
    store = open_store(store_url)
    code, key = store.start()
    watch = ClassWatch(store, poll_s=0.02)
    watch.allow(code)

    async def scenario():
        waiting = asyncio.create_task(watch.wait(code, after=1, timeout=10))
        await asyncio.sleep(0.1)
        await asyncio.to_thread(store.end, code, key)
        return await waiting

    assert asyncio.run(scenario()) == {"status": "Your teacher has ended this live session."}


def test_a_store_that_does_not_answer_keeps_students_waiting(store_url):
    store = open_store(store_url)
    code, key = store.start()
    counting = CountingStore(store)
    counting.down = True
    watch = ClassWatch(counting, poll_s=0.02)
    watch.allow(code)

    async def scenario():
        waiting = asyncio.create_task(watch.wait(code, after=1, timeout=10))
        await asyncio.sleep(0.3)
        assert not waiting.done()  # no reply while the store is away
        await asyncio.to_thread(store.update, code, key, step=2)
        counting.down = False
        return await waiting

    reply = asyncio.run(scenario())
    assert (reply["version"], reply["step"]) == (2, 2)


def test_pacing_reaches_the_long_poll(store_url):
    """A countdown, a reveal and a reset each change what a following page must show, so each
    one is in the long poll's reply (watch.SHOWN), not only in the store: the page's script
    compares those fields to decide whether to rerun at once (tfviz/ui/assets/live_watch.js)."""
    store = open_store(store_url)
    code, key = store.start()
    watch = ClassWatch(store, poll_s=0.02)
    watch.allow(code)
    asked = store.ask(code, key, "bpe-merges", "counts")
    reply = asyncio.run(watch.wait(code, after=asked.version - 1, timeout=5))
    assert reply["question"] == asked.question and reply["revealed"] is False
    counting = store.start_countdown(code, key, 30)
    reply = asyncio.run(watch.wait(code, after=asked.version, timeout=5))
    assert reply["version"] == counting.version and reply["deadline"] == counting.deadline
    shown = store.reveal(code, key)
    assert asyncio.run(watch.wait(code, after=counting.version, timeout=5))["revealed"] is True
    store.reset_question(code, key, "bpe-merges", "counts")
    reply = asyncio.run(watch.wait(code, after=shown.version, timeout=5))
    assert [tuple(r) for r in reply["resets"]] == [("bpe-merges", "counts", 1)]
