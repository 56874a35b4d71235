// The benchmark harness's Apache Curator 5.4 peer: the same scenarios as
// the library's, written the way a Curator user would write them.
//
//   lock:    InterProcessMutex acquire + release, each client on its own
//            CuratorFramework (its own session), all on one path.
//   cas:     DistributedAtomicLong.increment() (an optimistic
//            compare-and-set, retried on conflict with no sleep).
//   latchinterop: LeaderLatch on --path, --ops times per client, with the
//            same marker check (LatchInterop.java).
//   interop: each client acquires InterProcessMutex on --path --ops times;
//            while holding it, creates --marker as an ephemeral node and
//            deletes it, so a second holder at the same time (a Curator
//            client or any lock that excludes it, such as the library's)
//            fails with NodeExists: printed as "OVERLAP ..." on stderr and
//            exit status 3.
//   rwinterop: the same for InterProcessReadWriteLock, readers and
//            writers (RWInterop.java).
//   seminterop: InterProcessSemaphoreV2 leases on --path (SemInterop.java).
//   rwlock, semaphore, trylock, queue: the recipe scenarios (RecipePeers.java).
//   discovery: ServiceProvider.getInstance() over a ServiceCache of 8
//            instances (DiscoveryPeer.java).
//
// Flags as internal/peers.Params.Args writes them. Prints one result line
// (internal/peers.Format): latencies in microseconds, nearest-rank
// quantiles.
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

public final class CuratorPeer {
    static final double[] QUANTILES = {0, 10, 25, 50, 75, 90, 99, 99.9, 100};
    static final String[] KEYS = {"min", "p10", "p25", "p50", "p75", "p90", "p99", "p999", "max"};

    interface Op {
        void run(int client) throws Exception;
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            if (!argv[i].startsWith("--")) {
                System.err.println("curator: bad flag " + argv[i]);
                System.exit(2);
            }
            a.put(argv[i].substring(2), argv[i + 1]);
        }
        String server = a.get("server");
        String scenario = a.get("scenario");
        String path = a.get("path");
        int clients = Integer.parseInt(a.getOrDefault("clients", "1"));
        long durationMs = Long.parseLong(a.getOrDefault("duration-ms", "0"));
        long warmupMs = Long.parseLong(a.getOrDefault("warmup-ms", "0"));
        int ops = Integer.parseInt(a.getOrDefault("ops", "0"));
        int sessionMs = Integer.parseInt(a.getOrDefault("session-timeout-ms", "10000"));
        String marker = a.get("marker");
        if (server == null || scenario == null || path == null || clients < 1 || (durationMs <= 0 && ops <= 0)) {
            System.err.println("curator: need --server, --scenario, --path, --clients >= 1 and --duration-ms or --ops");
            System.exit(2);
        }

        List<CuratorFramework> cfs = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            // The connection retry policy only sleeps after a connection
            // loss, never on the fast path.
            CuratorFramework cf = CuratorFrameworkFactory.builder().connectString(server)
                .sessionTimeoutMs(sessionMs).connectionTimeoutMs(sessionMs)
                .retryPolicy(new ExponentialBackoffRetry(10, 5)).build();
            cf.start();
            if (!cf.blockUntilConnected(sessionMs, java.util.concurrent.TimeUnit.MILLISECONDS)) {
                System.err.println("curator: no session with " + server);
                System.exit(1);
            }
            cfs.add(cf);
        }
        Op op;
        switch (scenario) {
        case "lock": {
            InterProcessMutex[] m = new InterProcessMutex[clients];
            for (int i = 0; i < clients; i++) m[i] = new InterProcessMutex(cfs.get(i), path);
            op = c -> {
                m[c].acquire();
                m[c].release();
            };
            break;
        }
        case "cas": {
            DistributedAtomicLong[] n = new DistributedAtomicLong[clients];
            // Conflicts are retried at once: RetryNTimes with no sleep.
            for (int i = 0; i < clients; i++) n[i] = new DistributedAtomicLong(cfs.get(i), path, new RetryNTimes(Integer.MAX_VALUE, 0));
            op = c -> {
                AtomicValue<Long> v = n[c].increment();
                if (!v.succeeded()) throw new IllegalStateException("increment did not succeed");
            };
            break;
        }
        case "interop": {
            if (marker == null || ops <= 0) {
                System.err.println("curator: interop needs --marker and --ops");
                System.exit(2);
            }
            InterProcessMutex[] m = new InterProcessMutex[clients];
            for (int i = 0; i < clients; i++) m[i] = new InterProcessMutex(cfs.get(i), path);
            op = c -> {
                m[c].acquire();
                try {
                    try {
                        cfs.get(c).create().withMode(CreateMode.EPHEMERAL).forPath(marker);
                    } catch (KeeperException.NodeExistsException e) {
                        System.err.println("OVERLAP client " + c + ": " + marker + " exists while holding the lock at " + path);
                        System.err.flush();
                        System.exit(3);
                    }
                    cfs.get(c).delete().forPath(marker);
                } finally {
                    m[c].release();
                }
            };
            break;
        }
        case "latchinterop":
            if (marker == null || ops <= 0) {
                System.err.println("curator: latchinterop needs --marker and --ops");
                System.exit(2);
            }
            op = LatchInterop.op(cfs, path, marker);
            break;
        case "rwinterop":
            op = RWInterop.op(cfs, path, marker, ops);
            break;
        case "discovery": // DiscoveryPeer.java
            op = DiscoveryPeer.op(cfs, path, sessionMs);
            break;
        case "rwlock": case "semaphore": case "trylock": case "queue": case "election": // RecipePeers.java
            op = RecipePeers.op(scenario, cfs, path, sessionMs);
            break;
        case "seminterop":
            op = SemInterop.op(cfs, path, marker, Integer.parseInt(a.getOrDefault("leases", "0")));
            break;
        default:
            System.err.println("curator: unknown scenario " + scenario);
            System.exit(2);
            return;
        }

        long start = System.nanoTime();
        long t0 = start + warmupMs * 1_000_000L;
        long end = durationMs > 0 ? t0 + durationMs * 1_000_000L : Long.MAX_VALUE;
        AtomicLong errors = new AtomicLong();
        AtomicLong everyOp = new AtomicLong();
        long[][] lat = new long[clients][];
        int[] count = new int[clients];
        Thread[] threads = new Thread[clients];
        Throwable[] failed = new Throwable[clients];
        for (int i = 0; i < clients; i++) {
            final int c = i;
            lat[c] = new long[1024];
            threads[c] = new Thread(() -> {
                int fails = 0;
                while (true) {
                    long s = System.nanoTime();
                    if (s >= end) return;
                    try {
                        op.run(c);
                    } catch (Exception e) {
                        errors.incrementAndGet();
                        if (++fails >= 100) {
                            failed[c] = e;
                            return;
                        }
                        continue;
                    }
                    fails = 0;
                    everyOp.incrementAndGet();
                    long e = System.nanoTime();
                    if (s < t0) continue;
                    if (count[c] == lat[c].length) lat[c] = Arrays.copyOf(lat[c], 2 * count[c]);
                    lat[c][count[c]++] = e - s;
                    if (ops > 0 && count[c] >= ops) return;
                }
            });
            threads[c].start();
        }
        // CPU over the measuring window: the process's (every thread's,
        // the JIT's and the garbage collector's included) from the end of
        // the warm-up until the last client stopped (CpuWindow).
        long wait = t0 - System.nanoTime();
        if (wait > 0) Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
        CpuWindow window = new CpuWindow();
        for (Thread t : threads) t.join();
        long stop = System.nanoTime();
        long cpu = window.nanos();
        for (int i = 0; i < clients; i++) {
            if (failed[i] != null) {
                System.err.println("curator: client " + i + ": operations keep failing: " + failed[i]);
                System.exit(1);
            }
        }
        for (CuratorFramework cf : cfs) cf.close();

        int total = 0;
        for (int c : count) total += c;
        long[] all = new long[total];
        int k = 0;
        for (int i = 0; i < clients; i++) {
            System.arraycopy(lat[i], 0, all, k, count[i]);
            k += count[i];
        }
        Arrays.sort(all);
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "ZKBENCH impl=curator scenario=%s clients=%d ops=%d errors=%d secs=%.6f",
            scenario, clients, total, errors.get(), Math.max(0, stop - t0) / 1e9));
        b.append(" total=").append(everyOp.get());
        if (cpu > 0) b.append(String.format(Locale.ROOT, " cpu=%.1f", cpu / 1e3));
        if (scenario.endsWith("interop")) b.append(" holds=").append(total);
        if (scenario.equals("trylock")) b.append(" holds=").append(RecipePeers.WON.get());
        if (total > 0) {
            for (int i = 0; i < QUANTILES.length; i++) {
                int r = (int) Math.ceil(QUANTILES[i] * total / 100 - 1e-9) - 1;
                r = Math.min(Math.max(r, 0), total - 1);
                b.append(String.format(Locale.ROOT, " %s=%.1f", KEYS[i], all[r] / 1e3));
            }
        }
        System.out.println(b);
        System.out.flush();
        System.exit(0);
    }
}
