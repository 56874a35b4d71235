// The Curator peer's discovery scenario: client 0 registers
// DiscoveryPeer.INSTANCES instances of the service "bench" under --path
// (a ServiceDiscovery each client has, JsonInstanceSerializer<Object>),
// every client starts a ServiceProvider (round-robin, over a
// ServiceCache) and waits until it sees them all; an operation is one
// provider.getInstance().
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;

final class DiscoveryPeer {
    static final int INSTANCES = 8;

    private DiscoveryPeer() {}

    static CuratorPeer.Op op(List<CuratorFramework> cfs, String path, int sessionMs) throws Exception {
        int clients = cfs.size();
        @SuppressWarnings("unchecked")
        ServiceProvider<Object>[] p = new ServiceProvider[clients];
        for (int i = 0; i < clients; i++) {
            ServiceDiscovery<Object> sd = ServiceDiscoveryBuilder.builder(Object.class).client(cfs.get(i)).basePath(path).build();
            sd.start();
            if (i == 0) {
                for (int k = 0; k < INSTANCES; k++) {
                    sd.registerService(ServiceInstance.builder().name("bench").id("i" + k).address("10.0.0." + k).port(8080).build());
                }
            }
            p[i] = sd.serviceProviderBuilder().serviceName("bench").build();
            p[i].start();
        }
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(sessionMs);
        for (ServiceProvider<Object> sp : p) {
            while (sp.getAllInstances().size() < INSTANCES) {
                if (System.nanoTime() > until) throw new IllegalStateException("the providers did not see every instance");
                Thread.sleep(1);
            }
        }
        return c -> {
            ServiceInstance<Object> si = p[c].getInstance();
            if (si == null) throw new IllegalStateException("no instance");
        };
    }
}
