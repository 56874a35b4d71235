// ZkQueuePeer drives ZooKeeper's own DistributedQueue recipe
// (org.apache.zookeeper.recipes.queue, Debian's libzookeeper-java) for the
// interop test of recipes/queue.
//
//   java ZkQueuePeer <connect> <dir> offer <n> <tag>   offers n items "<tag>-<i>"
//   java ZkQueuePeer <connect> <dir> take <n>          takes n items, one per line
//
// It prints "READY" once connected, "ITEM <data>" for each item taken, and
// "DONE <n>" at the end; any error exits with status 2.
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.recipes.queue.DistributedQueue;

public class ZkQueuePeer {
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: ZkQueuePeer <connect> <dir> offer|take <n> [tag]");
            System.exit(2);
        }
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(args[0], 10000, ev -> {
            if (ev.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        try {
            if (!connected.await(30, TimeUnit.SECONDS)) {
                System.err.println("not connected");
                System.exit(2);
            }
            System.out.println("READY");
            System.out.flush();
            DistributedQueue q = new DistributedQueue(zk, args[1], null);
            int n = Integer.parseInt(args[3]);
            if (args[2].equals("offer")) {
                for (int i = 0; i < n; i++) {
                    q.offer((args[4] + "-" + i).getBytes(StandardCharsets.UTF_8));
                }
            } else if (args[2].equals("take")) {
                for (int i = 0; i < n; i++) {
                    byte[] b = q.take();
                    System.out.println("ITEM " + new String(b, StandardCharsets.UTF_8));
                    System.out.flush();
                }
            } else {
                System.err.println("unknown mode " + args[2]);
                System.exit(2);
            }
            System.out.println("DONE " + n);
            System.out.flush();
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(2);
        } finally {
            zk.close();
        }
    }
}
