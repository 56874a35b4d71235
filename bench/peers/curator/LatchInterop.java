// The Curator peer's latchinterop scenario: each client, --ops times,
// starts a LeaderLatch on --path, waits until it leads, creates --marker
// as an ephemeral node and deletes it, then closes the latch (giving the
// leadership up). A second leader at the same time (a Curator client or
// any election that follows LeaderLatch's names, such as the library's)
// would find the marker there: printed as "OVERLAP ..." on stderr and
// exit status 3.
import java.util.List;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

final class LatchInterop {
    private LatchInterop() {}

    static CuratorPeer.Op op(List<CuratorFramework> cfs, String path, String marker) {
        return c -> {
            CuratorFramework cf = cfs.get(c);
            LeaderLatch latch = new LeaderLatch(cf, path, "curator-" + c);
            latch.start();
            try {
                latch.await();
                try {
                    cf.create().withMode(CreateMode.EPHEMERAL).forPath(marker);
                } catch (KeeperException.NodeExistsException e) {
                    System.err.println("OVERLAP client " + c + ": " + marker + " exists while leading " + path);
                    System.err.flush();
                    System.exit(3);
                }
                cf.delete().forPath(marker);
            } finally {
                latch.close();
            }
        };
    }
}
