"""``python3 sdk-py/bench/latency.py STORE [SUBSCRIBERS] [COMMITS]`` (run by hand,
scripts/sdk_bench.sh): the commit-to-event latency through the Python SDK. SUBSCRIBERS entity
subscriptions (a ``stardust lsp`` connection each) follow while one client makes COMMITS
commits one after the other; for each commit and subscriber, the time from sending the
confirm to the subscriber's event. Needs sdk-py on PYTHONPATH and a running core."""

import asyncio
import sys
import time

from stardust_sdk import ConnectOptions, Subscription, connect


async def main(store: str, subs: int, commits: int) -> None:
    client = await connect(store, ConnectOptions(name="latency-py"))
    created = await (await client.patch({"ops": [{"create": {"id": "?x", "type": "probe", "name": "py latency probe"}}]})).confirm()
    entity = created.resolved["?x"]
    subscriptions = [client.subscribe_entities() for _ in range(subs)]
    opened = time.perf_counter()
    await asyncio.gather(*(s.open() for s in subscriptions))
    print(f"{subs} subscriptions opened in {time.perf_counter() - opened:.2f} s")
    arrivals: list[dict[int, float]] = [{} for _ in subscriptions]
    changed = asyncio.Event()

    async def follow(i: int, s: Subscription) -> None:
        async for event in s:
            arrivals[i][event.seq] = time.perf_counter()
            changed.set()

    tasks = [asyncio.ensure_future(follow(i, s)) for i, s in enumerate(subscriptions)]
    samples: list[float] = []
    for n in range(commits):
        preview = await client.patch({"ops": [{"set": {"id": entity, "n": n}}]})
        sent = time.perf_counter()
        seq = (await preview.confirm()).seq

        def at(a: dict[int, float]) -> float | None:
            # Events coalesce: the first at or past `seq` accounts for this commit.
            return next((t for s, t in a.items() if s >= seq), None)

        while any(at(a) is None for a in arrivals):
            changed.clear()
            await changed.wait()
        for a in arrivals:
            t = at(a)
            assert t is not None
            samples.append((t - sent) * 1e3)
            a.clear()
    samples.sort()
    q = lambda p: samples[round((len(samples) - 1) * p)]  # noqa: E731
    print(f"py confirm sent -> event ({subs} subscribers): n={len(samples)} p50={q(0.5):.3f}ms "
          f"p90={q(0.9):.3f}ms p99={q(0.99):.3f}ms max={q(1):.3f}ms")
    for t in tasks:
        t.cancel()
    for s in subscriptions:
        await s.close()
    await client.close()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: latency.py STORE [SUBSCRIBERS] [COMMITS]")
    asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1,
                     int(sys.argv[3]) if len(sys.argv) > 3 else 200))
