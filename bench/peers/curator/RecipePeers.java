// The Curator peer's recipe scenarios, written the way a Curator user
// would write them, each client on its own CuratorFramework (its own
// session), all on one path:
//
//   rwlock:    InterProcessReadWriteLock acquire + release, the client's
//              round-th time the write lock when (client + round) % 5 == 0
//              (1 write per 4 reads), the read lock otherwise.
//   semaphore: InterProcessSemaphoreV2 of 2 leases, acquire + returnLease.
//   trylock:   InterProcessMutex.acquire(0, MILLISECONDS), released at
//              once when won; WON counts the tries won (the result line's
//              holds=, out of total=).
//   queue:     SimpleDistributedQueue (Curator's drop-in for ZooKeeper's
//              DistributedQueue) offer of one item, then take of one item
//              (the head, any client's): every client a producer and a
//              consumer. A take that waits longer than the session timeout
//              is an error.
//   election:  a LeaderLatch started, awaited until it leads, and closed
//              (giving the leadership up): one leadership term.
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;

final class RecipePeers {
    private RecipePeers() {}

    static final int RW_WRITE = 5;
    static final int SEM_LEASES = 2;
    static final byte[] ITEM = "zkbench-item-16b".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    /** Tries won in the trylock scenario, warm-up included. */
    static final AtomicLong WON = new AtomicLong();

    static CuratorPeer.Op op(String scenario, List<CuratorFramework> cfs, String path, int sessionMs) {
        int clients = cfs.size();
        switch (scenario) {
        case "rwlock": {
            InterProcessReadWriteLock[] l = new InterProcessReadWriteLock[clients];
            for (int i = 0; i < clients; i++) l[i] = new InterProcessReadWriteLock(cfs.get(i), path);
            int[] round = new int[clients];
            return c -> {
                boolean write = (c + round[c]++) % RW_WRITE == 0;
                InterProcessMutex m = write ? l[c].writeLock() : l[c].readLock();
                m.acquire();
                m.release();
            };
        }
        case "semaphore": {
            InterProcessSemaphoreV2[] s = new InterProcessSemaphoreV2[clients];
            for (int i = 0; i < clients; i++) s[i] = new InterProcessSemaphoreV2(cfs.get(i), path, SEM_LEASES);
            return c -> {
                Lease lease = s[c].acquire();
                s[c].returnLease(lease);
            };
        }
        case "trylock": {
            InterProcessMutex[] m = new InterProcessMutex[clients];
            for (int i = 0; i < clients; i++) m[i] = new InterProcessMutex(cfs.get(i), path);
            return c -> {
                if (m[c].acquire(0, TimeUnit.MILLISECONDS)) {
                    WON.incrementAndGet();
                    m[c].release();
                }
            };
        }
        case "queue": {
            SimpleDistributedQueue[] q = new SimpleDistributedQueue[clients];
            for (int i = 0; i < clients; i++) q[i] = new SimpleDistributedQueue(cfs.get(i), path);
            return c -> {
                q[c].offer(ITEM);
                byte[] got = q[c].poll(sessionMs, TimeUnit.MILLISECONDS);
                if (got == null) throw new IllegalStateException("no item within " + sessionMs + " ms");
                if (got.length != ITEM.length) throw new IllegalStateException("took " + got.length + " bytes, put " + ITEM.length);
            };
        }
        case "election": {
            // A LeaderLatch cannot be started again: a new one per term.
            return c -> {
                LeaderLatch latch = new LeaderLatch(cfs.get(c), path, "curator-" + c);
                latch.start();
                try {
                    latch.await();
                } finally {
                    latch.close();
                }
            };
        }
        default:
            return null;
        }
    }
}
