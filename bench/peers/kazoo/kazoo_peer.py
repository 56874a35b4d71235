"""The benchmark harness's kazoo peer: the same scenarios as the library's,
written the way a kazoo user would write them.

  lock: kazoo's Lock acquire + release, each client its own KazooClient
        (its own session), all on one path.
  cas:  kazoo's Counter (counter += 1: get, then set with the version,
        retried on conflict by the client's retry policy, with no sleep).
  semaphore, trylock, queue, election: the recipe scenarios (RECIPES below);
  rebalance: SetPartitioner, a member joining and leaving (rebalance_op). No
        rwlock: kazoo 2.8's ReadLock waits for a WriteLock queued after it
        while that one waits for it (python-zk/kazoo#649; fixed after 2.8).

Each client runs on a thread of its own (kazoo's threading handler). Flags
as internal/peers.Params.Args writes them. Prints one result line
(internal/peers.Format): latencies in microseconds, nearest-rank quantiles.
"""
import argparse
import atexit
import math
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

QUANTILES = [0, 10, 25, 50, 75, 90, 99, 99.9, 100]
KEYS = ["min", "p10", "p25", "p50", "p75", "p90", "p99", "p999", "max"]


SEM_LEASES = 2
ITEM = b"zkbench-item-16b"
WON = [0]  # tries won in trylock, warm-up included (holds= out of total=)


def semaphore_op(clients, path, _timeout):
    """Semaphore of 2 leases: acquire + release."""
    sems = [c.Semaphore(path, max_leases=SEM_LEASES) for c in clients]

    def op(i):
        sems[i].acquire()
        sems[i].release()
    return op


def trylock_op(clients, path, _timeout):
    """Lock.acquire(blocking=False), released at once when won."""
    locks = [c.Lock(path) for c in clients]
    won_lock = threading.Lock()

    def op(i):
        if locks[i].acquire(blocking=False):
            with won_lock:
                WON[0] += 1
            locks[i].release()
    return op


def queue_op(clients, path, timeout):
    """Queue put of one item, then a get of one item (any client's).
    kazoo's Queue.get does not wait (None when empty), so an empty queue
    is waited for with a children watch, as a kazoo user would."""
    queues = [c.Queue(path) for c in clients]

    def op(i):
        queues[i].put(ITEM)
        while True:
            got = queues[i].get()
            if got is not None:
                if len(got) != len(ITEM):
                    raise ValueError("took %d bytes, put %d" % (len(got), len(ITEM)))
                return
            ev = threading.Event()
            if clients[i].get_children(path, watch=lambda _e: ev.set()):
                continue
            if not ev.wait(timeout):
                raise TimeoutError("no item within %.1fs" % timeout)
    return op


def election_op(clients, path, _timeout):
    """Election.run: wait until elected, run nothing, give it up."""
    elections = [c.Election(path, "kazoo-%d" % i) for i, c in enumerate(clients)]

    def op(i):
        elections[i].run(lambda: None)
    return op


REBALANCE_ITEMS = ["item-%02d" % i for i in range(12)]
REBALANCE_TB = 0.1  # time_boundary, seconds (the library's Stable)


def _drive(qp):
    """One turn of kazoo's documented SetPartitioner loop."""
    if qp.failed:
        raise RuntimeError("partitioner failed")
    if qp.release:
        qp.release_set()
    elif qp.allocating:
        qp.wait_for_acquire(0.01)
    else:
        time.sleep(0.001)


def _share(ident, members):
    members = sorted(members)
    return sorted(REBALANCE_ITEMS)[members.index(ident)::len(members)]


def _divided(qps):
    """Every partitioner of qps (identifier -> SetPartitioner) acquired with
    its share among them."""
    ids = list(qps)
    return all(qp.acquired and sorted(qp) == _share(i, ids) for i, qp in qps.items())


def rebalance_op(clients, path, _timeout):
    """kazoo's SetPartitioner: the client's member m0 joins (a new
    SetPartitioner) and leaves (finish); after each, wait until every
    member holds its share. Two members (m1, m2) stay, on sessions of
    their own, each driven by a thread running kazoo's loop."""
    if len(clients) != 1:
        raise ValueError("rebalance runs with one client (the member that joins and leaves)")
    hosts = ",".join("%s:%d" % hp for hp in clients[0].hosts)
    stop = threading.Event()
    staying = {}
    for ident in ("m1", "m2"):
        c = KazooClient(hosts=hosts)
        c.start()
        staying[ident] = c.SetPartitioner(path, set=REBALANCE_ITEMS, identifier=ident,
                                          time_boundary=REBALANCE_TB, max_reaction_time=0.05)

    def loop(qp):
        while not stop.is_set():
            _drive(qp)
    threads = [threading.Thread(target=loop, args=(qp,), daemon=True) for qp in staying.values()]
    for t in threads:
        t.start()

    def close():  # at exit: the staying members' sessions end with the run
        stop.set()
        for t in threads:
            t.join()
        for qp in staying.values():
            qp._client.stop()
            qp._client.close()
    atexit.register(close)
    while not _divided(staying):
        time.sleep(0.001)

    def op(_i):
        qp = clients[0].SetPartitioner(path, set=REBALANCE_ITEMS, identifier="m0",
                                       time_boundary=REBALANCE_TB, max_reaction_time=0.05)
        everyone = dict(staying, m0=qp)
        while not _divided(everyone):
            _drive(qp)
        qp.finish()
        while not _divided(staying):
            time.sleep(0.001)
    return op


RECIPES = {"election": election_op, "semaphore": semaphore_op, "trylock": trylock_op, "queue": queue_op,
           "rebalance": rebalance_op}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--duration-ms", type=int, default=0)
    ap.add_argument("--warmup-ms", type=int, default=0)
    ap.add_argument("--ops", type=int, default=0)
    ap.add_argument("--path", required=True)
    ap.add_argument("--marker", default="")
    ap.add_argument("--outstanding", type=int, default=64)
    ap.add_argument("--session-timeout-ms", type=int, default=10000)
    a = ap.parse_args()
    if a.clients < 1 or (a.duration_ms <= 0 and a.ops <= 0):
        print("kazoo: need --clients >= 1 and --duration-ms or --ops", file=sys.stderr)
        sys.exit(2)

    # Conflicts and connection losses are retried at once: no sleep.
    no_sleep = dict(max_tries=-1, delay=0.0, backoff=1, max_jitter=0.0)
    clients = []
    for _ in range(a.clients):
        c = KazooClient(hosts=a.server, timeout=a.session_timeout_ms / 1000.0,
                        command_retry=no_sleep, connection_retry=dict(max_tries=-1, delay=0.01, backoff=2))
        c.start(timeout=a.session_timeout_ms / 1000.0)
        clients.append(c)

    if a.scenario == "lock":
        locks = [c.Lock(a.path) for c in clients]

        def op(i):
            locks[i].acquire()
            locks[i].release()
    elif a.scenario == "cas":
        counters = [c.Counter(a.path) for c in clients]

        def op(i):
            counters[i].__add__(1)
    elif a.scenario in RECIPES:
        op = RECIPES[a.scenario](clients, a.path, a.session_timeout_ms / 1000.0)
    else:
        print("kazoo: unknown scenario " + a.scenario, file=sys.stderr)
        sys.exit(2)

    start = time.perf_counter()
    t0 = start + a.warmup_ms / 1000.0
    end = t0 + a.duration_ms / 1000.0 if a.duration_ms > 0 else math.inf
    lat = [[] for _ in clients]
    errors = [0] * len(clients)
    every_op = [0] * len(clients)
    failed = [None] * len(clients)

    def worker(i):
        fails = 0
        while True:
            s = time.perf_counter()
            if s >= end:
                return
            try:
                op(i)
            except Exception as e:  # counted, and fatal after 100 in a row
                errors[i] += 1
                fails += 1
                if fails >= 100:
                    failed[i] = e
                    return
                continue
            fails = 0
            every_op[i] += 1
            e = time.perf_counter()
            if s < t0:
                continue
            lat[i].append(e - s)
            if a.ops > 0 and len(lat[i]) >= a.ops:
                return

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    # CPU over the measuring window: the process's (every thread's) from
    # the end of the warm-up until the last client stopped.
    wait = t0 - time.perf_counter()
    if wait > 0:
        time.sleep(wait)
    cpu0 = time.process_time()
    for t in threads:
        t.join()
    stop = time.perf_counter()
    cpu = time.process_time() - cpu0
    for i, f in enumerate(failed):
        if f is not None:
            print("kazoo: client %d: operations keep failing: %r" % (i, f), file=sys.stderr)
            sys.exit(1)
    for c in clients:
        c.stop()
        c.close()
    everything = sorted(x for l in lat for x in l)
    n = len(everything)
    line = "ZKBENCH impl=kazoo scenario=%s clients=%d ops=%d errors=%d secs=%.6f" % (
        a.scenario, a.clients, n, sum(errors), max(0.0, stop - t0))
    line += " total=%d" % sum(every_op)
    if cpu > 0:
        line += " cpu=%.1f" % (cpu * 1e6)
    if a.scenario == "trylock":
        line += " holds=%d" % WON[0]
    if n:
        for q, k in zip(QUANTILES, KEYS):
            r = min(max(int(math.ceil(q * n / 100.0 - 1e-9)) - 1, 0), n - 1)
            line += " %s=%.1f" % (k, everything[r] * 1e6)
    print(line, flush=True)


if __name__ == "__main__":
    main()
