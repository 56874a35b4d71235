// The Curator peer's rwinterop scenario: Apache Curator 5.4's
// InterProcessReadWriteLock against any lock that names its nodes the same
// way (the library's recipes/rwlock), on one path.
//
// Each client (a session of its own) takes the lock --ops times: the write
// lock when (client + round) % 3 == 0, the read lock otherwise. --marker
// is a directory of marker nodes. While holding:
//
//   a writer creates <marker>/w (ephemeral), lists <marker> and finds no
//   other child there, and deletes <marker>/w;
//   a reader creates <marker>/r- (ephemeral sequential), finds no
//   <marker>/w, and deletes its node.
//
// Whoever of two overlapping holders checks last sees the other's marker
// (each creates before it checks), so a writer that holds together with
// any other holder, on either side, is caught: printed as "OVERLAP ..." on
// stderr and exit status 3.
import java.util.List;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

final class RWInterop {
    private RWInterop() {}

    static CuratorPeer.Op op(List<CuratorFramework> cfs, String path, String marker, int ops) throws Exception {
        if (marker == null || ops <= 0) {
            System.err.println("curator: rwinterop needs --marker and --ops");
            System.exit(2);
        }
        int clients = cfs.size();
        try {
            cfs.get(0).create().creatingParentsIfNeeded().forPath(marker);
        } catch (KeeperException.NodeExistsException e) {
            // made by the other side
        }
        InterProcessReadWriteLock[] locks = new InterProcessReadWriteLock[clients];
        for (int i = 0; i < clients; i++) locks[i] = new InterProcessReadWriteLock(cfs.get(i), path);
        int[] round = new int[clients];
        String w = marker + "/w";
        return c -> {
            boolean write = (c + round[c]++) % 3 == 0;
            CuratorFramework cf = cfs.get(c);
            InterProcessMutex m = write ? locks[c].writeLock() : locks[c].readLock();
            m.acquire();
            try {
                if (write) {
                    try {
                        cf.create().withMode(CreateMode.EPHEMERAL).forPath(w);
                    } catch (KeeperException.NodeExistsException e) {
                        overlap(c, w + " exists while holding the write lock at " + path);
                    }
                    List<String> kids = cf.getChildren().forPath(marker);
                    if (kids.size() != 1) overlap(c, "markers " + kids + " while holding the write lock at " + path);
                    cf.delete().forPath(w);
                } else {
                    String mine = cf.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(marker + "/r-");
                    if (cf.checkExists().forPath(w) != null) overlap(c, w + " exists while holding the read lock at " + path);
                    cf.delete().forPath(mine);
                }
            } finally {
                m.release();
            }
        };
    }

    private static void overlap(int c, String what) {
        System.err.println("OVERLAP client " + c + ": " + what);
        System.err.flush();
        System.exit(3);
    }
}
