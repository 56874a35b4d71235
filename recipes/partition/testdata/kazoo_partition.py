#!/usr/bin/env python3
"""kazoo's SetPartitioner as a member of a set shared with Go members
(recipes/partition's interop test, kazoo_test.go).

Each identifier of --ids is a member on a session of its own, running
kazoo's documented loop (failed / release / acquired / allocating). A
member logs its holds into --log/<item>/ as persistent sequential nodes
named kazoo-<identifier>-enter- when it has acquired its partition and
kazoo-<identifier>-exit- before it releases it (release_set or finish),
so the log of an item shows every hold as an enter and an exit.

It prints "acquired <identifier> <items>" each time a member acquires,
and stops (exits, finish() on every member) when its standard input
closes. Exit status 0; 4 if a member's partitioner failed.
"""
import argparse
import sys
import threading
import time

from kazoo.client import KazooClient


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--path", required=True)
    ap.add_argument("--items", required=True)
    ap.add_argument("--ids", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--time-boundary", type=float, default=1.0)
    ap.add_argument("--reaction", type=float, default=0.5)
    ap.add_argument("--linger", type=float, default=0.0,
                    help="seconds a member keeps its items once told to release them")
    a = ap.parse_args()
    items = a.items.split(",")
    stop = threading.Event()
    failed = []

    def member(ident):
        zk = KazooClient(hosts=a.server, timeout=10)
        zk.start()

        def log(item, kind):
            zk.create("%s/%s/kazoo-%s-%s-" % (a.log, item, ident, kind),
                      sequence=True, makepath=True)

        qp = zk.SetPartitioner(path=a.path, set=items, identifier=ident,
                               time_boundary=a.time_boundary,
                               max_reaction_time=a.reaction)
        held = []
        try:
            while not stop.is_set():
                if qp.failed:
                    failed.append(ident)
                    print("failed %s" % ident, flush=True)
                    return
                elif qp.release:
                    if held:
                        time.sleep(a.linger)
                    for item in held:
                        log(item, "exit")
                    held = []
                    qp.release_set()
                elif qp.acquired:
                    if not held and list(qp):
                        held = list(qp)
                        for item in held:
                            log(item, "enter")
                        print("acquired %s %s" % (ident, ",".join(held)),
                              flush=True)
                    time.sleep(0.02)
                elif qp.allocating:
                    qp.wait_for_acquire(0.2)
            for item in held:
                log(item, "exit")
            qp.finish()
        finally:
            zk.stop()
            zk.close()

    threads = [threading.Thread(target=member, args=(i,))
               for i in a.ids.split(",")]
    for t in threads:
        t.start()
    sys.stdin.read()  # until the test closes it
    stop.set()
    for t in threads:
        t.join()
    sys.exit(4 if failed else 0)


if __name__ == "__main__":
    main()
