// The Curator peer's "seminterop" scenario: each client acquires a lease of
// an InterProcessSemaphoreV2 of --leases leases on --path, --ops times.
// While holding the lease it creates an ephemeral sequential marker
// "c-<seq>" under --marker (a directory), lists the directory three times
// (each listing a check) and deletes
// its marker before it returns the lease. A marker exists only while its
// creator holds a lease, so more than --leases markers at once would be
// more holders than leases, across every client that follows the same
// rule (the library's recipes/semaphore creates "z-" markers): printed as
// "OVERLAP ..." on stderr and exit status 3.
import java.util.List;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

final class SemInterop {
    private SemInterop() {}

    static CuratorPeer.Op op(List<CuratorFramework> cfs, String path, String markers, int leases) throws Exception {
        if (markers == null || leases < 1) {
            System.err.println("curator: seminterop needs --marker and --leases >= 1");
            System.exit(2);
        }
        try {
            cfs.get(0).create().creatingParentsIfNeeded().forPath(markers);
        } catch (KeeperException.NodeExistsException e) {
            // made by the other side
        }
        InterProcessSemaphoreV2[] s = new InterProcessSemaphoreV2[cfs.size()];
        for (int i = 0; i < s.length; i++) s[i] = new InterProcessSemaphoreV2(cfs.get(i), path, leases);
        return c -> {
            CuratorFramework cf = cfs.get(c);
            Lease lease = s[c].acquire();
            try {
                String m = cf.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(markers + "/c-");
                for (int k = 0; k < 3; k++) { // the hold lasts three listings, each a check
                    int n = cf.getChildren().forPath(markers).size();
                    if (n > leases) {
                        System.err.println("OVERLAP client " + c + ": " + n + " markers under " + markers + " with " + leases + " leases at " + path);
                        System.err.flush();
                        System.exit(3);
                    }
                }
                cf.delete().forPath(m);
            } finally {
                s[c].returnLease(lease);
            }
        };
    }
}
