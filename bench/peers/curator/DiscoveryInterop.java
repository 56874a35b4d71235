// The Curator peer's discovery interop mode (main class DiscoveryInterop):
// one CuratorFramework session with a ServiceDiscovery on --base (Curator
// 5.4's curator-x-discovery, JsonInstanceSerializer<Object> as
// ServiceDiscoveryBuilder makes it), driven by commands on stdin, one per
// line; each answers one line on stdout, "ok ..." or "err ...".
//
//   register NAME ID ADDRESS PORT VAL  registers a DYNAMIC instance whose
//        payload is a HashMap {"val": VAL} and uriSpec
//        "{scheme}://{address}:{port}"; answers with the node's data.
//   unregister NAME ID                 unregisters it.
//   query NAME                         queryForInstances: the instances.
//   cache NAME                         starts a ServiceCache and a
//        ServiceProvider (round-robin) over it.
//   cached NAME                        the cache's instances.
//   get NAME                           provider.getInstance(): its id, or
//        "none".
//   await NAME IDS                     waits (up to 60s) until the cache's
//        instance ids, sorted and joined by commas ("-" for none), are IDS.
//   halt                               exits at once without closing
//        anything: the session lives until the server expires it.
//   close                              closes discovery and client, exits.
//
// Instances are answered as a JSON array of objects with the fields id,
// name, address, port, sslPort, enabled, serviceType and payload (the
// payload as Jackson reads it back, without its type).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.UriSpec;

public final class DiscoveryInterop {
    private DiscoveryInterop() {}

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) a.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        String server = a.get("server"), base = a.get("base");
        int sessionMs = Integer.parseInt(a.getOrDefault("session-timeout-ms", "10000"));
        if (server == null || base == null) {
            System.err.println("discovery: need --server and --base");
            System.exit(2);
        }
        CuratorFramework cf = CuratorFrameworkFactory.builder().connectString(server)
            .sessionTimeoutMs(sessionMs).connectionTimeoutMs(sessionMs)
            .retryPolicy(new ExponentialBackoffRetry(10, 5)).build();
        cf.start();
        if (!cf.blockUntilConnected(sessionMs, TimeUnit.MILLISECONDS)) {
            System.err.println("discovery: no session with " + server);
            System.exit(1);
        }
        ServiceDiscovery<Object> sd = ServiceDiscoveryBuilder.builder(Object.class).client(cf).basePath(base).build();
        sd.start();
        Map<String, ServiceCache<Object>> caches = new HashMap<>();
        Map<String, ServiceProvider<Object>> providers = new HashMap<>();
        Map<String, ServiceInstance<Object>> mine = new HashMap<>();
        ObjectMapper json = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("ready");
        System.out.flush();
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.trim().split(" ");
            String out;
            try {
                switch (f[0]) {
                case "register": {
                    Map<String, String> payload = new HashMap<>();
                    payload.put("val", f[5]);
                    ServiceInstance<Object> si = ServiceInstance.builder().name(f[1]).id(f[2]).address(f[3])
                        .port(Integer.parseInt(f[4])).payload(payload)
                        .uriSpec(new UriSpec("{scheme}://{address}:{port}")).build();
                    sd.registerService(si);
                    mine.put(f[1] + "/" + f[2], si);
                    byte[] data = cf.getData().forPath(base + "/" + f[1] + "/" + f[2]);
                    out = "ok " + new String(data, StandardCharsets.UTF_8);
                    break;
                }
                case "unregister": {
                    ServiceInstance<Object> si = mine.remove(f[1] + "/" + f[2]);
                    if (si == null) throw new IllegalArgumentException("not registered here: " + f[1] + "/" + f[2]);
                    sd.unregisterService(si);
                    out = "ok";
                    break;
                }
                case "query":
                    out = "ok " + json.writeValueAsString(describe(sd.queryForInstances(f[1])));
                    break;
                case "cache": {
                    ServiceCache<Object> c = sd.serviceCacheBuilder().name(f[1]).build();
                    c.start();
                    caches.put(f[1], c);
                    ServiceProvider<Object> p = sd.serviceProviderBuilder().serviceName(f[1]).build();
                    p.start();
                    providers.put(f[1], p);
                    out = "ok";
                    break;
                }
                case "cached":
                    out = "ok " + json.writeValueAsString(describe(caches.get(f[1]).getInstances()));
                    break;
                case "await": {
                    String want = f[2], got = "";
                    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    while (System.nanoTime() < until) {
                        List<String> ids = new ArrayList<>();
                        for (ServiceInstance<Object> si : caches.get(f[1]).getInstances()) ids.add(si.getId());
                        java.util.Collections.sort(ids);
                        got = ids.isEmpty() ? "-" : String.join(",", ids);
                        if (got.equals(want)) break;
                        Thread.sleep(5);
                    }
                    out = got.equals(want) ? "ok" : "err cache has " + got + ", want " + want;
                    break;
                }
                case "get": {
                    ServiceInstance<Object> si = providers.get(f[1]).getInstance();
                    out = "ok " + (si == null ? "none" : si.getId());
                    break;
                }
                case "halt":
                    Runtime.getRuntime().halt(0);
                    return;
                case "close":
                    for (ServiceProvider<Object> p : providers.values()) p.close();
                    for (ServiceCache<Object> c : caches.values()) c.close();
                    sd.close();
                    cf.close();
                    System.out.println("ok");
                    System.out.flush();
                    return;
                default:
                    out = "err unknown command " + f[0];
                }
            } catch (Exception e) {
                out = "err " + e.toString().replace('\n', ' ');
            }
            System.out.println(out);
            System.out.flush();
        }
    }

    static List<Map<String, Object>> describe(Collection<ServiceInstance<Object>> sis) {
        List<Map<String, Object>> l = new ArrayList<>();
        for (ServiceInstance<Object> si : sis) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", si.getId());
            m.put("name", si.getName());
            m.put("address", si.getAddress());
            m.put("port", si.getPort());
            m.put("sslPort", si.getSslPort());
            m.put("enabled", si.isEnabled());
            m.put("serviceType", si.getServiceType().name());
            m.put("payload", si.getPayload());
            m.put("payloadType", si.getPayload() == null ? null : si.getPayload().getClass().getName());
            m.put("uri", si.getUriSpec() == null ? null : si.buildUriSpec());
            l.add(m);
        }
        return l;
    }
}
